"""The circle state and its float-error bound (``--method circle``).

The points after some layers, exactly as float64 computes them (:class:`State`), seen
in the plane orthogonal to ``(1, 1, 1)`` (:data:`E`, :func:`plane`); how a state is
scored (label boundaries around the circle and the smallest label gap, each angle
widened by the float error it may carry: ``_score_angles``; candidates' directions
around a centre or seen from a pole: ``_score_directions``, ``_score_slopes``) and
ranked (``_cost``); the bound on that error, carried layer by layer (``_carry``); and
layers as the exact dyadic rationals their float64 weights are, scaled for ``eps``
(``_affine``, ``_scaled``).  Every decision here comes from ``+ - * /`` and ``sqrt``
(:mod:`lncapacity.elementary`): the same on every processor.  proofs/circle_maps.md §1
and §6.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from flint import fmpq

from ...elementary import TWO_PI, angle_key, atan2, log2
from ...floats import layer_norm
from ...model import Affine
from ...reproducible import matmul, norm

SQRT3 = math.sqrt(3.0)
E = np.array([[1.0, 1.0], [-1.0, 1.0], [0.0, -2.0]]) / np.array([math.sqrt(2), math.sqrt(6)])
"""Orthonormal basis of the plane orthogonal to ``(1, 1, 1)`` (columns ``u/|u|``, ``v/|v|``)."""

GAP_MIN = 2.0**-36
"""Smallest angle (radians) between neighbours of different labels that a layer may leave."""

COMFORT = 2.0**-20
"""Label gaps (radians) at or above this cost nothing in the ranking of states."""
LAMBDA = 1.0
"""Boundaries a state is charged per halving of its smallest label gap below :data:`COMFORT`."""

ROUNDING_FIRST = 2.0**-44
"""Float64 error (radians) assumed at least for the angles after the first layer."""


@dataclass
class State:
    """The points after some layers, exactly as float64 computes them."""

    H: np.ndarray
    """``m x 3`` layer outputs (or ``m x d`` inputs before the first layer)."""
    layers: list[Affine[fmpq]] = field(default_factory=list)
    boundaries: int = 0
    gap: float = 0.0
    finish: float | None = None
    """Cache of :func:`~.handoff.finish`."""
    err: np.ndarray = field(kw_only=True)
    """Bound, per point, on the float64 error of the angles (``_carry``)."""
    exact: Any = field(default=None, kw_only=True)
    """``objective="depth"``: the points in balls (:class:`.precise.Balls`); then ``H`` holds
    their midpoints rounded, ``boundaries`` and ``gap`` are rigorous, and ``err`` is unused."""


def boundaries_cyclic(labels: np.ndarray) -> np.ndarray:
    """Label changes between cyclic neighbours, per row of a ``K x m`` label array."""
    return (labels != np.roll(labels, -1, axis=-1)).sum(axis=-1)


def plane(H: np.ndarray) -> np.ndarray:
    """Plane coordinates ``E^T h`` of layer outputs, scaled to the unit circle (eps = 0)."""
    return matmul(H, E) / SQRT3


def _score_directions(u: np.ndarray, v: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each row of directions ``(u, v)`` (``K x m``, the points as seen from some centre,
    all around it): the label boundaries around the centre and the smallest label gap
    (radians).

    The points are sorted by :func:`~lncapacity.elementary.angle_key` (one division: the
    same order on every processor).  The turn from a point to the next is that of the
    ``dot`` and ``cross`` products of their directions, ordered by angle_key's of
    ``(dot, cross)`` (4 added beyond ``pi``), and only each row's least turn between labels
    is taken to an angle.  A negative cross product is a turn beyond ``pi`` where the keys
    advance by more than a quarter turn (a quarter turn adds 1 to the key), else two points
    the rounded keys order the other way round: a turn just below 0, a gap no float
    resolves.
    """
    K = len(u)
    key = angle_key(v, u)
    b, row, first, second, wrap = _changes(key, y, cyclic=True)
    u, v, key = u.ravel(), v.ravel(), key.ravel()
    u1, v1, u2, v2 = u[first], v[first], u[second], v[second]
    dot, cross = u1 * u2 + v1 * v2, u1 * v2 - v1 * u2
    advance = key[second] - key[first] + np.where(wrap, 4.0, 0.0)
    t = angle_key(cross, dot)
    t = np.where((t < 0) & (advance > 1), t + 4, t)

    def angle(i: np.ndarray) -> np.ndarray:  # in [0, 2 pi), a hair below 0 where misordered
        return atan2(cross[i], dot[i]) + np.where(t[i] > 2, TWO_PI, 0.0)

    return b, _least_turns(K, row, t, angle)


def _score_slopes(c: np.ndarray, s: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each row of directions ``(c, s)`` in a cone ``c > 0`` (``K x m``: the points seen
    from a pole, :func:`.candidates.seen_from`): the label boundaries around the circle (the
    wrap-around counts) and the smallest angle between neighbours of different labels
    within the cone (the wrap-around is no gap to resolve).

    The points are sorted by their slopes ``t = s / c``; the turn between neighbours is
    ``atan2(t2 - t1, 1 + t1 t2)``, ordered by :func:`~lncapacity.elementary.angle_key`.  A
    row with a point on or behind the pole (``c <= 0``: the pole on the circle) folds
    nothing: its gap is NaN.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        t = s / c
    b, row, first, second, _ = _changes(t, y, cyclic=False)
    t1, t2 = t.ravel()[first], t.ravel()[second]
    num, den = t2 - t1, 1 + t1 * t2  # tan of the turn, as a fraction
    gap = _least_turns(len(c), row, angle_key(num, den), lambda i: atan2(num[i], den[i]))
    return b, np.where((c <= 0).any(axis=1), np.nan, gap)


def _changes(
    keys: np.ndarray, y: np.ndarray, cyclic: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The points of each row of ``keys`` (``K x m``) sorted by key: the label boundaries
    (cyclic), and for each label change (from the last point to the first too when
    ``cyclic``) its row, the flat indices of the points before and after it, and whether it
    wraps around."""
    m = keys.shape[1]
    order = np.argsort(keys, axis=1, kind="stable")
    lab = y[order]
    change = np.empty(lab.shape, dtype=bool)
    np.not_equal(lab[:, :-1], lab[:, 1:], out=change[:, :-1])
    np.not_equal(lab[:, -1], lab[:, 0], out=change[:, -1])
    b = change.sum(axis=1)
    if not cyclic:
        change[:, -1] = False
    at = np.flatnonzero(change)  # row-major: each row's label changes together
    row, col = np.divmod(at, m)
    wrap = col == m - 1
    order = order.ravel()
    first = row * m + order[at]
    second = row * m + order[at + np.where(wrap, 1 - m, 1)]
    return b, row, first, second, wrap


def _least_turns(
    K: int, row: np.ndarray, t: np.ndarray, angle: Callable[[np.ndarray], np.ndarray]
) -> np.ndarray:
    """Per row of ``K``, the angle (``angle(i)`` of the changes ``i``) of the first label
    change whose turn key ``t`` is the row's least: ``inf`` in a row without label changes,
    NaN where a turn is NaN."""
    gap = np.full(K, np.inf)
    if not len(row):
        return gap
    starts = np.flatnonzero(np.concatenate(([True], row[1:] != row[:-1])))
    least = np.repeat(np.minimum.reduceat(t, starts), np.diff(np.append(starts, len(t))))
    hit = np.flatnonzero(t == least)  # NaN: no hit, and the row's gap stays NaN
    chosen = hit[np.concatenate(([True], row[hit][1:] != row[hit][:-1]))]
    gap[row[starts]] = np.nan
    gap[row[chosen]] = angle(chosen)
    return gap


def _score_angles(theta: np.ndarray, y: np.ndarray, err: np.ndarray) -> tuple[int, float]:
    """Boundaries of the angles ``theta`` around the circle and their smallest label gap,
    each angle widened by :data:`SAFETY` times the float64 error it may carry (``err``): the
    gap between two neighbouring label runs is what is left between their widened hulls (so
    that float64 and the exact net agree: a point deep inside a run may carry a larger error
    than the gap at its run's end)."""
    order = np.argsort(theta, kind="stable")
    lab = y[order]
    b = int(boundaries_cyclic(lab[None, :])[0])
    return b, _widened_gap(theta[order], SAFETY * err[order], lab, cyclic=True)


def _widened_gap(theta: np.ndarray, width: np.ndarray, lab: np.ndarray, cyclic: bool) -> float:
    """The smallest space between the hulls of ``[theta - width, theta + width]`` over
    neighbouring label runs (sorted angles; ``inf`` with one run).  Negative when a
    widened point reaches its neighbour run, and so when it reaches any other run."""
    if cyclic:  # start at a label change, so that no run is split at the seam
        start = np.flatnonzero(lab != np.roll(lab, 1))
        if not len(start):
            return math.inf
        s = int(start[0])
        theta = np.r_[theta[s:], theta[:s] + 2 * math.pi]
        width, lab = np.roll(width, -s), np.roll(lab, -s)
    starts = np.r_[0, np.flatnonzero(lab[1:] != lab[:-1]) + 1]
    hi = np.maximum.reduceat(theta + width, starts)
    lo = np.minimum.reduceat(theta - width, starts)
    gaps = lo[1:] - hi[:-1]
    if cyclic and len(starts) > 1:
        gaps = np.r_[gaps, lo[0] + 2 * math.pi - hi[-1]]
    return float(gaps.min()) if len(gaps) else math.inf


def _affine(W: np.ndarray, b: np.ndarray, meta: dict[str, Any]) -> Affine[fmpq]:
    return Affine(
        tuple(tuple(fmpq(*float(w).as_integer_ratio()) for w in row) for row in W),
        tuple(fmpq(*float(v).as_integer_ratio()) for v in b),
        meta,
    )


def _scaled(G: np.ndarray, eps: float) -> float:
    """A power of two ``s`` so that ``s |g| >= 2^20 sqrt(eps)`` for every row ``g`` of ``G``
    (with ``eps = 0``: ``1 / s`` the power of two nearest the largest ``|g|``, in the sense of
    ``log2``).  Found from the binary exponents (``frexp``): exact, no logarithm."""
    sizes = np.sqrt((G * G).sum(axis=1))
    r = float(sizes.min())
    if eps == 0 or r == 0:
        m, e = math.frexp(max(float(sizes.max()), 1e-300))  # 2^(e-1) <= |g| < 2^e
        return math.ldexp(1.0, -(e - 1 if m < SQRT_HALF else e))
    m, e = math.frexp(2.0**20 * math.sqrt(eps) / r)
    return math.ldexp(1.0, max(0, e - 1 if m == 0.5 else e))  # 2^ceil(log2 need)


SQRT_HALF = math.sqrt(0.5)
"""Where ``_scaled`` rounds ``log2`` up (``|g| / 2^(e - 1) >= sqrt 2``, nearly)."""


def _cost(boundaries: Any, gap: Any) -> Any:
    """Boundaries, plus :data:`LAMBDA` per halving of the label gap below :data:`COMFORT`
    (numbers or arrays; :func:`~lncapacity.elementary.log2`, the same bits everywhere)."""
    with np.errstate(divide="ignore"):
        halvings = np.maximum(0.0, log2(COMFORT / np.asarray(gap, dtype=float)))
    cost = boundaries + LAMBDA * halvings
    return float(cost) if np.ndim(cost) == 0 else cost


def _rank(st: State) -> float:
    return _cost(st.boundaries, st.gap)


def _floats(a: Affine[fmpq]) -> tuple[np.ndarray, np.ndarray]:
    return (
        np.array([[float(w) for w in r] for r in a.W]),
        np.array([float(v) for v in a.b]),
    )


def _carry(
    H: np.ndarray, W: np.ndarray, b: np.ndarray, eps: float, err: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One layer in float64: its outputs, their angles, and a bound on the angles' float
    error (``err``: the inputs'; None: the inputs are data, exact up to rounding).

    The angle after the layer is that of ``P = E^T (W h + b)`` (LayerNorm keeps it).  An
    input angle off by ``d`` moves ``h`` along its circle by ``t d`` to first order (``t``
    the tangent, ``|t| = |h|``) and by at most ``|h| d^2 / 2`` beyond, so ``P`` moves by
    ``D = E^T W t d`` and at most ``q = ||W|| |h| d^2 / 2`` more, and its angle by at most
    ``(|D_perp| + q) / (|P| - |D| - q)`` while that denominator is positive; otherwise the
    point may be at the pole, and its angle anything (``pi``).  Plus this layer's own
    rounding, :data:`ROUNDING` per unit of ``_condition``.  (The slope used to be
    measured by a finite turn of the inputs: near a pole that saturates at ``pi`` over
    the turn, and NumPy and PyTorch then put points half a circle apart where the bound
    said ``2^-17``.)"""
    Z = matmul(H, W.T) + b
    out = layer_norm(Z, eps)
    p = plane(out)
    theta = atan2(p[:, 1], p[:, 0])
    P = matmul(Z, E)
    size = np.linalg.norm(P, axis=1)  # |z - mean z|: E is an orthonormal basis of the plane
    fresh = ROUNDING * _condition(H, W, b, size)
    if err is None:
        return out, theta, np.minimum(np.maximum(fresh, ROUNDING_FIRST), math.pi)
    c = matmul(H, E)  # the inputs in the plane (radius |h|)
    tangent = matmul(np.c_[-c[:, 1], c[:, 0]], E.T)
    D = matmul(matmul(tangent, W.T), E) * err[:, None]
    # the Frobenius norm bounds the operator norm ||W|| (and needs no LAPACK)
    q = norm(W) * np.linalg.norm(c, axis=1) * err * err / 2
    perp = np.abs(P[:, 0] * D[:, 1] - P[:, 1] * D[:, 0]) / size
    room = size - np.linalg.norm(D, axis=1) - q
    with np.errstate(divide="ignore", invalid="ignore"):
        turn = np.where(room > 0, (perp + q) / room, math.pi)
    return out, theta, np.minimum(turn + fresh, math.pi)


def _condition(H: np.ndarray, W: np.ndarray, b: np.ndarray, centred: np.ndarray) -> np.ndarray:
    """Per point, how much float64 rounding of ``z = W h + b`` can turn its angle, in ulps:
    ``| |W| |h| + |b| | / |z - mean z|`` (``centred``: the denominator; cancellation near a
    pole is what makes it large)."""
    size = matmul(np.abs(H), np.abs(W).T) + np.abs(b)
    return np.linalg.norm(size, axis=1) / centred


ROUNDING = 2.0**-49
"""Float64 error (radians) one layer adds to an angle, per unit of ``_condition``: a few
ulps (measured against 300-bit balls: the estimate stays above the true error, 2^-4 of it at
most on random sets; without the condition it fell short by up to 2^13 near poles)."""
SAFETY = 4.0
"""How many times its float error bound each angle is widened by when label gaps are
measured (``_score_angles``): the bound is carried rigorously to first order, with the
second-order rest bounded (``_carry``), so this covers only :data:`ROUNDING`'s being
measured (on NumPy; PyTorch's LayerNorm rounds differently)."""
