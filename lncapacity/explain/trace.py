"""The float64 trace of a net: every point through it layer by layer (for pictures).

:func:`float_trace` keeps, per column, the scalar the next map reads and its amplitude, the
angle of each layer's output on the circle and every point's principal coordinate
(:class:`Trace`); :func:`float_scores` gives the readout's scores on many points (a grid),
:func:`layer_curve` one layer's scalar map, and :func:`as_points` checks labelled points
against a net.  Pictures, not proofs: the certificate (:func:`lncapacity.certify.certify`)
is the proof.  The terms are those of :mod:`lncapacity.explain`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from flint import fmpq

from ..arith import to_float
from ..data import PointSet, points_from_arrays
from ..errors import InputError
from ..fileformat import U, V
from ..floats import affine_arrays, layer_arrays, layer_norm, product, run_layer
from ..model import LNNet
from .scalars import Read, reads

__all__ = [
    "BLOCK_NUMBERS",
    "POWER_STEPS",
    "SVD_FEATURES",
    "U_HAT",
    "V_HAT",
    "Trace",
    "as_points",
    "block_rows",
    "float_scores",
    "float_trace",
    "layer_curve",
]


def _amplitude(row: Sequence[float]) -> float:
    """``sqrt n |P row|``: the largest ``row^T h`` over LayerNorm outputs of width ``n``
    (the sphere of radius ``sqrt n`` in ``1^perp``; ``sqrt 3`` for width 3)."""
    r = np.asarray(row, dtype=np.float64)
    return float(math.sqrt(len(r)) * np.linalg.norm(r - r.mean()))


@dataclass(frozen=True)
class Trace:
    """Every point through the net in float64.

    ``values[c]`` (``c = 0..L``): column ``c``'s scalar per point, or None where the
    map after layer ``c`` has rank above one; ``amplitude[c]`` its scale (see
    :mod:`lncapacity.explain`); ``angles[l - 1]``: the angle of layer ``l``'s output;
    ``radius[l - 1]`` its distance from the centre of the plane; ``scores``: the readout.
    """

    values: list[np.ndarray | None]
    amplitude: list[float]
    angles: np.ndarray
    radius: np.ndarray
    scores: np.ndarray
    principal: list[np.ndarray] | None = None
    """Per column ``c = 0..L`` (the input, then each layer's output), every point's
    coordinate along the first principal axis of that column's points, over the largest
    absolute one: a value per layer for any net (None if not computed)."""

    @property
    def depth(self) -> int:
        return len(self.values) - 1

    @property
    def on_circle(self) -> bool:
        """Whether every layer has width 3 (then ``angles`` has one row per layer)."""
        return len(self.angles) == self.depth

    @property
    def has_values(self) -> bool:
        return all(v is not None for v in self.values)


def _unit(w: Sequence[fmpq]) -> np.ndarray:
    x = np.array([to_float(c) for c in w])
    return x / np.linalg.norm(x)


U_HAT, V_HAT = _unit(U), _unit(V)


def float_trace(net: LNNet[fmpq], X: Any) -> Trace:
    """The float64 forward pass of every row of ``X``, kept layer by layer."""
    h = np.asarray(X.floats() if isinstance(X, PointSet) else X, dtype=np.float64)
    if h.ndim != 2 or h.shape[1] != net.input_dim:
        raise InputError(f"expected points of shape (m, {net.input_dim}), got {h.shape}")
    rd = reads(net)
    eps = to_float(net.eps)
    values: list[np.ndarray | None] = []
    amplitude: list[float] = []
    angles, radius = [], []
    principal = [_principal(h)]
    circle = all(w == 3 for w in net.widths)
    with np.errstate(all="ignore"):
        for j, r in enumerate(rd):  # a read per layer, then the readout's
            if r is None:
                values.append(None)
                amplitude.append(math.nan)
            else:
                row = np.array([to_float(c) for c in r.row])
                s = h @ row
                values.append(s)
                if j == 0:
                    span = float(np.max(s) - np.min(s)) if len(s) else 0.0
                    amplitude.append(span / 2 if span > 0 else 1.0)
                else:  # a zero read (a constant net) has nothing to scale by
                    amplitude.append(_amplitude(row) or 1.0)
            if j == len(net.layers):
                break
            h = run_layer(h, layer_arrays(net, j), eps)
            principal.append(_principal(h))
            if circle:  # angles only when every layer lies on the circle (width 3)
                angles.append(np.arctan2(h @ V_HAT, h @ U_HAT))
                radius.append(np.linalg.norm(h, axis=1))
        R, rb = affine_arrays(net.readout)
        scores = product(h, R) + rb
    m = h.shape[0]
    return Trace(
        values,
        amplitude,
        np.array(angles).reshape(-1, m),
        np.array(radius).reshape(-1, m),
        scores,
        principal,
    )


SVD_FEATURES = 1_000
"""Columns up to this many features get their principal axis from an SVD; wider ones (LN-G
layers) from :data:`POWER_STEPS` steps of the power iteration (an SVD of 10,000 points in
15,000 features would take minutes)."""
POWER_STEPS = 64
"""Steps of the power iteration for the principal axis of a column wider than
:data:`SVD_FEATURES` (from a fixed start: the same axis on every run)."""


def _principal(h: np.ndarray) -> np.ndarray:
    """Each row's coordinate along the first principal axis of the rows, scaled to ``[-1, 1]``
    (zeros when the rows coincide or are not finite)."""
    with np.errstate(all="ignore"):
        c = h - h.mean(axis=0)
        if not np.all(np.isfinite(c)) or not np.any(c):
            return np.zeros(len(h))
        if c.shape[1] > SVD_FEATURES:
            v = np.random.default_rng(0).standard_normal(c.shape[1])
            for _ in range(POWER_STEPS):
                v = c.T @ (c @ v)
                v /= np.linalg.norm(v)
            p = c @ v
        else:
            _, _, vt = np.linalg.svd(c, full_matrices=False)
            p = c @ vt[0]
        top = np.max(np.abs(p))
        return p / top if top > 0 else np.zeros(len(h))


BLOCK_NUMBERS = 2**22
"""Float64 numbers (32 MiB) one block of :func:`float_scores` or :func:`layer_curve` holds in
its widest layer: rows go through a net in blocks of ``BLOCK_NUMBERS // width`` (4,096 at
most), so that a grid of the plane through a layer of a million features stays in bounded
memory."""


def block_rows(net: LNNet[fmpq], most: int = 4096) -> int:
    """Rows per block for passes through ``net`` (at least one): ``BLOCK_NUMBERS`` numbers
    in its widest layer."""
    return max(1, min(most, BLOCK_NUMBERS // max(net.input_dim, *net.widths, 1)))


def float_scores(net: LNNet[fmpq], X: np.ndarray, chunk: int | None = None) -> np.ndarray:
    """The readout scores in float64 for many points (a grid), in blocks of ``chunk`` rows
    (default :func:`block_rows`: bounded memory for any width).

    The operations of the NumPy ``float64`` backend (:func:`lncapacity.floats.forward`),
    with the weights converted once.
    """
    eps = to_float(net.eps)
    layers = [layer_arrays(net, i) for i in range(net.depth)]
    R, rb = affine_arrays(net.readout)
    X = np.asarray(X, dtype=np.float64)
    chunk = block_rows(net) if chunk is None else chunk
    out = np.empty((len(X), len(net.classes)))
    with np.errstate(all="ignore"):
        for i in range(0, len(X), chunk):
            h = X[i : i + chunk]
            for layer in layers:
                h = run_layer(h, layer, eps)
            out[i : i + chunk] = product(h, R) + rb
    return out


def layer_curve(
    net: LNNet[fmpq], layer: int, s: np.ndarray, rd: Sequence[Read | None] | None = None
) -> np.ndarray:
    """Layer ``layer``'s scalar map in float64: the value the next map reads, for inputs ``s``.

    Needs layer ``layer`` and the map after it to have rank one.  ``rd``:
    :func:`~lncapacity.explain.scalars.reads` of the net, if already at hand.
    """
    rd = reads(net) if rd is None else rd
    a, nxt = rd[layer - 1], rd[layer]
    if a is None or nxt is None:
        raise InputError(f"layer {layer} has no scalar map (a map of rank above one)")
    L = net.layers[layer - 1]
    col = np.array([to_float(c) for c in a.col])
    b = np.array([to_float(x) for x in L.b])
    row = np.array([to_float(c) for c in nxt.row])
    eps, norm = to_float(net.eps), net.norm(layer - 1)
    s = np.asarray(s, dtype=np.float64).ravel()
    out = np.empty(len(s))
    step = block_rows(net)  # a wide LN-G layer: the grid in blocks of bounded memory
    with np.errstate(all="ignore"):
        for i in range(0, len(s), step):
            y = np.outer(s[i : i + step], col) + b
            if norm.groups != 1 or norm.rms:  # LN-G, RMSNorm: the layer itself in float64
                h = layer_norm(y, eps, norm.groups, not norm.rms)
            else:
                y = y - y.mean(axis=1, keepdims=True)
                h = y / np.sqrt((y * y).mean(axis=1, keepdims=True) + eps)
            out[i : i + step] = h @ row
    return out


def as_points(net: LNNet[fmpq], X: Any, y: Any = None) -> PointSet:
    """``X`` as a :class:`PointSet` (or ``X, y`` as arrays), checked against ``net``."""
    points = X if isinstance(X, PointSet) else points_from_arrays(X, y)
    if points.d != net.input_dim:
        raise InputError(
            f"{points.source}: points have {points.d} features, the net takes {net.input_dim}"
        )
    if unknown := sorted({c for c in points.y if c not in net.classes}, key=str):
        raise InputError(f"{points.source}: labels {unknown} are not classes {list(net.classes)}")
    return points
