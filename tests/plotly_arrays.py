"""Plotly figure arrays as NumPy arrays, for the explorer's tests.

``fig.to_dict()`` writes NumPy arrays as Plotly's typed arrays, ``{"dtype", "bdata"}``
(base64 bytes, and a ``shape`` for 2-D arrays), and lists as lists.
"""

from __future__ import annotations

import base64
from typing import Any

import numpy as np


def array(a: Any) -> np.ndarray:
    """A figure's array (a list or a typed array) as a NumPy array."""
    if isinstance(a, dict) and "bdata" in a:
        out = np.frombuffer(base64.b64decode(a["bdata"]), dtype=np.dtype(a["dtype"]))
        if "shape" in a:
            out = out.reshape([int(n) for n in str(a["shape"]).split(",")])
        return out
    return np.asarray(a)
