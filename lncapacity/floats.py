"""Floating-point backends: what a NumPy user of an exact net actually gets.

The same forward pass as :meth:`lncapacity.model.LNNet.forward`, vectorised in
NumPy at float64 or float32 (weights rounded to the dtype, LayerNorm with the
biased variance as in ``torch.nn.LayerNorm``).  These checks *confirm* a net;
they never certify one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .data import PointSet
from .errors import InputError
from .model import Affine, LNNet

DTYPES = {"float64": np.float64, "float32": np.float32}


def _array(a: Affine[Any], dt: type) -> tuple[np.ndarray, np.ndarray]:
    W = np.array([[float(w) for w in row] for row in a.W], dtype=dt).reshape(a.shape)
    return W, np.array([float(v) for v in a.b], dtype=dt)


def forward(net: LNNet[Any], X: Any, dtype: str = "float64") -> np.ndarray:
    """The readout scores, shape ``(m, len(classes))``, computed in ``dtype``."""
    if dtype not in DTYPES:
        raise InputError(f"unknown float backend {dtype!r} (choose from {', '.join(DTYPES)})")
    dt = DTYPES[dtype]
    h = np.asarray(X.floats() if isinstance(X, PointSet) else X, dtype=np.float64)
    if h.ndim != 2 or h.shape[1] != net.input_dim:
        raise InputError(f"expected an array of shape (m, {net.input_dim}), got {h.shape}")
    h = h.astype(dt)
    eps = dt(float(net.eps))
    for layer in net.layers:
        W, b = _array(layer, dt)
        y = h @ W.T + b
        y = y - y.mean(axis=1, keepdims=True)
        h = y / np.sqrt((y * y).mean(axis=1, keepdims=True) + eps)
    R, r = _array(net.readout, dt)
    return h @ R.T + r


@dataclass(frozen=True)
class FloatCheck:
    """How a float backend fares on labelled points."""

    dtype: str
    agree: int
    total: int
    min_margin: float
    """``min_k (z[label_k] - max_{j != label_k} z[j])`` in the backend; negative if any point is
    wrong, ``inf`` with a single class."""

    @property
    def all_agree(self) -> bool:
        return self.agree == self.total


def check(net: LNNet[Any], points: PointSet, dtype: str = "float64") -> FloatCheck:
    """Run ``net`` on ``points`` in ``dtype`` and compare with their labels."""
    z = forward(net, points, dtype).astype(np.float64)
    target = np.array([net.classes.index(label) for label in points.y])
    rows = np.arange(len(target))
    own = z[rows, target]
    z[rows, target] = -np.inf
    margins = own - z.max(axis=1) if z.shape[1] > 1 else np.full(len(target), np.inf)
    margins = np.where(np.isnan(margins), -np.inf, margins)  # a NaN score decides nothing
    agree = int(np.sum(margins > 0))
    return FloatCheck(dtype, agree, len(target), float(margins.min(initial=np.inf)))
