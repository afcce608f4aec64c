"""Moves every elementary function of NumPy and ``math`` by one ulp (a test harness).

Put this directory first on ``PYTHONPATH`` with ``LNCAPACITY_ULP_SHIFT=up`` (toward +inf) or
``down`` (toward -inf): Python imports ``sitecustomize`` at start-up, before any of the
package, so every later lookup, ``np.arctan2``, ``from numpy import arctan2`` or NumPy's own
modules' (``geomspace`` calls ``numpy._core.numeric``'s ``log10``), finds the shifted
function.  That is what another processor's vector library may do to the last bit;
``tests/test_reproducible.py`` requires the nets built under it to be the same bytes.
"""

from __future__ import annotations

import math
import os
import sys
from typing import Any

import numpy as np

NUMPY = (
    "arccos arccosh arcsin arcsinh arctan arctan2 arctanh cbrt cos cosh deg2rad degrees exp "
    "exp2 expm1 float_power hypot log log10 log1p log2 logaddexp logaddexp2 power rad2deg "
    "radians sin sinh tan tanh"
).split()
MATH = (
    "acos acosh asin asinh atan atan2 atanh cbrt cos cosh degrees dist erf erfc exp exp2 expm1 "
    "gamma hypot lgamma log log10 log1p log2 pow radians sin sinh tan tanh"
).split()

direction = os.environ.get("LNCAPACITY_ULP_SHIFT", "")
if direction in ("up", "down"):
    target = math.inf if direction == "up" else -math.inf

    def _numpy(f: Any) -> Any:
        def shifted(*args: Any, **kwargs: Any) -> Any:
            out = f(*args, **kwargs)
            if isinstance(out, tuple):  # none of NUMPY has two outputs; be safe
                return out
            moved = np.nextafter(out, np.asarray(target, dtype=np.result_type(out)))
            if kwargs.get("out") is not None:
                dest = kwargs["out"][0] if isinstance(kwargs["out"], tuple) else kwargs["out"]
                dest[...] = moved
                return dest
            return moved if isinstance(out, np.ndarray) else moved[()]

        shifted.__name__ = f.__name__
        return shifted

    def _math(f: Any) -> Any:
        def shifted(*args: Any) -> Any:
            out = f(*args)
            return math.nextafter(out, target) if isinstance(out, float) else out

        shifted.__name__ = f.__name__
        return shifted

    originals = {id(getattr(np, n)): _numpy(getattr(np, n)) for n in NUMPY if hasattr(np, n)}
    for name, module in list(sys.modules.items()):  # NumPy's own modules hold them too
        if module is not None and (name == "numpy" or name.startswith("numpy.")):
            for attr, value in list(vars(module).items()):
                if id(value) in originals and not attr.startswith("__"):
                    setattr(module, attr, originals[id(value)])
    for name in MATH:
        if hasattr(math, name):
            setattr(math, name, _math(getattr(math, name)))
