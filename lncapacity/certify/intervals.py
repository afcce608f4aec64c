"""The float64 interval passes of the certificate: every margin and score of many points at
once, enclosed by interval arithmetic rounded outwards (:mod:`lncapacity.interval`), rigorous by
proofs/interval_rounding.md.

:func:`interval_pass` takes any net without gains; a net with LN-G layers goes by the grouped
pass (``_grouped_interval_pass``), in balls (midpoint, radius) whose products are BLAS matrix
products with rigorous rounding bounds (:class:`BallMap`, ``_ball_affine``, ``_ball_norm``).
:func:`interval_layers` is the layer loop alone (the first layers of a net whose tail is a
scalar chain).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass
from typing import Any

import numpy as np
from flint import fmpq

from .. import interval as iv
from ..model import Affine, LNNet
from ..parallel import imap

INTERVAL_CHUNK = 1 << 18
"""Points times features (of the widest layer) the interval pass holds at once: its arrays stay
a few MiB however many points there are (a point's intervals do not depend on the others')."""


GROUPED_BLOCK = 1 << 16
"""Points times features of one block of the interval pass for nets with LN-G layers (often
very wide): its arrays stay small (512 KiB each, in the processor's caches: NumPy computes
small arrays several times faster than large ones) however many points and features."""


Layer = tuple[iv.Interval, iv.Interval, int]
"""A layer as the interval passes take it: ``(P W, P b, k)``, centred exactly in each group of
``k`` features (``k = n``: LayerNorm), enclosed."""


def _interval_layer_maps(net: LNNet[fmpq], layers: Sequence[Affine[fmpq]]) -> list[Layer]:
    """``P W`` and ``P b`` of each layer, ``P`` the centring of each group (``I - 1 1^T / n``
    for a LayerNorm; ``P = I`` for an RMSNorm, which does not centre), applied to the exact
    weights and then enclosed."""
    out = []
    for i, layer in enumerate(layers):
        n = len(layer.b)
        k = n // net.norm(i).groups
        zero = fmpq(0) if net.norm(i).rms else None  # RMSNorm: no mean is subtracted
        PW: list[list[fmpq]] = []
        Pb: list[fmpq] = []
        for t in range(0, n, k):  # each group (the whole layer for a LayerNorm)
            block, bias = layer.W[t : t + k], layer.b[t : t + k]
            col_mean = [
                zero if zero is not None else sum((row[j] for row in block), fmpq(0)) / k
                for j in range(len(block[0]))
            ]
            b_mean = zero if zero is not None else sum(bias, fmpq(0)) / k
            PW += [[w - mu for w, mu in zip(row, col_mean, strict=True)] for row in block]
            Pb += [v - b_mean for v in bias]
        out.append((iv.enclose(np.array(PW, dtype=object)), iv.enclose(Pb), k))
    return out


def _interval_layer(layer: Layer, h: iv.Interval, eps: iv.Interval) -> iv.Interval:
    """One LayerNorm layer: ``c = (P W) h + P b``, then ``c / sqrt(sum(c^2) / n + eps)``
    (RMSNorm: ``P = I``)."""
    PW, Pb, _ = layer
    c = iv.add(iv.matvec(PW, h), (Pb[0][None, :], Pb[1][None, :]))
    var = iv.total(iv.square(c))
    var = iv.down(var[0] / c[0].shape[1]), iv.up(var[1] / c[0].shape[1])
    s = iv.sqrt(iv.add(var, (eps[0][None, :], eps[1][None, :])))
    return iv.div_positive(c, s)


def _enclosed_points(X: Sequence[Sequence[fmpq]]) -> iv.Interval:
    return iv.enclose(np.array([list(row) for row in X], dtype=object).reshape(len(X), -1))


def interval_layers(
    net: LNNet[fmpq], X: Sequence[Sequence[fmpq]], layers: Sequence[Affine[fmpq]]
) -> iv.Interval:
    """Float64 intervals around the outputs of ``layers`` (the first ones of ``net``, without
    gains) for every point of ``X``: the layer loop of :func:`interval_pass`."""
    h = _enclosed_points(X)
    eps = iv.enclose([net.eps])
    for layer in _interval_layer_maps(net, layers):
        h = _interval_layer(layer, h, eps)
    return h


def interval_pass(
    net: LNNet[fmpq], X: Sequence[Sequence[fmpq]], labels: Sequence[int], workers: int = 1
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Float64 intervals around every margin and score, all points at once.

    Returns ``(margin_lo, margin_hi, scores_lo, scores_hi)``: the margin
    ``z_label - max_other z`` of point ``k`` lies in ``[margin_lo[k],
    margin_hi[k]]`` (NaN where the pass lost track, e.g. by overflow), and so on.
    For a net without gains (see :meth:`LNNet.folded`).  Each layer is computed
    as ``c = (P W) h + P b`` with the centring ``P = I - 1 1^T / n`` applied to the
    exact weights first (so the mean is never subtracted in floats, which would
    widen the intervals; an RMSNorm layer has ``P = I``), then
    ``h = c / sqrt(sum(c^2) / n + eps)``; the margins
    use the exact differences ``R_label - R_j`` of the readout rows.  Vectorised over
    points and features, :data:`INTERVAL_CHUNK` entries at a time.

    A net with LN-G layers does the same in each group (``P`` centres each group, the sums
    are over its features) and goes by ``_grouped_interval_pass``: such nets may be very
    wide, and it works in small blocks, over ``workers`` processes.
    """
    if net.grouped:
        return _grouped_interval_pass(net, X, labels, workers)
    maps = _interval_layer_maps(net, net.layers)
    eps = iv.enclose([net.eps])
    R = iv.enclose(np.array([list(row) for row in net.readout.W], dtype=object))
    r = iv.enclose(list(net.readout.b))
    m, k_cls = len(X), len(net.classes)
    mlo, mhi = np.full(m, np.inf), np.full(m, np.inf)
    zlo, zhi = np.empty((m, k_cls)), np.empty((m, k_cls))
    lab = np.asarray(labels, dtype=np.intp)
    diffs: dict[int, tuple[iv.Interval, iv.Interval]] = {}
    for c_idx in sorted(set(lab.tolist())):
        others = [j for j in range(k_cls) if j != c_idx]
        if not others:
            continue
        Rc = net.readout.W[c_idx]
        D = iv.enclose(
            np.array(
                [[a - b for a, b in zip(Rc, net.readout.W[j], strict=True)] for j in others],
                dtype=object,
            ).reshape(len(others), -1)
        )
        d = iv.enclose([net.readout.b[c_idx] - net.readout.b[j] for j in others])
        diffs[c_idx] = D, d
    H = _enclosed_points(X)
    widest = max((len(a.b) for a in net.layers), default=1)
    step = max(1, INTERVAL_CHUNK // max(widest, net.input_dim))
    for start in range(0, m, step):
        sl = slice(start, min(start + step, m))
        h = H[0][sl], H[1][sl]
        for layer in maps:
            h = _interval_layer(layer, h, eps)
        zlo[sl], zhi[sl] = iv.add(iv.matvec(R, h), (r[0][None, :], r[1][None, :]))
        part = lab[sl]
        for c_idx, (D, d) in diffs.items():
            rows = np.nonzero(part == c_idx)[0]
            if not len(rows):
                continue
            hc = h[0][rows], h[1][rows]
            diff = iv.add(iv.matvec(D, hc), (d[0][None, :], d[1][None, :]))
            # min over j, NaN-propagating: a NaN anywhere leaves the point undecided
            mlo[start + rows] = np.min(diff[0], axis=1)
            mhi[start + rows] = np.min(diff[1], axis=1)
    return mlo, mhi, zlo, zhi


def _grouped_interval_pass(
    net: LNNet[fmpq], X: Sequence[Sequence[fmpq]], labels: Sequence[int], workers: int = 1
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`interval_pass` for nets with LN-G layers, in balls (midpoint, radius) whose
    products are BLAS matrix products with rigorous rounding bounds.

    Each affine map is one matrix product of the midpoints; its error (the rounding of that
    product, bounded by :func:`lncapacity.interval.dot_error`, the enclosure radii of the
    weights and the radius of the input) is bounded per group of outputs, summed over the
    group (``R1 >= ||c - c~||_1``).  Each group's normalisation ``c / sqrt(|c|^2 / k + eps)``
    is 1/s-Lipschitz in the 2-norm, so its output is the float quotient ``c~ / s~`` within one
    radius per group (``_ball_norm``).  The margins use the exact differences
    ``R_label - R_j`` of the readout rows (enclosed), as the plain pass does.  Rigorous by
    proofs/interval_rounding.md ("Products by BLAS", "A grouped layer in balls").  Blocks of
    :data:`GROUPED_BLOCK` points times features at a time; ``workers`` processes, each task
    :data:`GROUPED_TASK` points times features.
    """
    maps = _interval_layer_maps(net, net.layers)
    ball_maps, k_in = [], 1
    for PW, Pb, k in maps:
        ball_maps.append(_ball_map(PW, Pb, k, k_in))
        k_in = k
    R = iv.enclose(np.array([list(row) for row in net.readout.W], dtype=object))
    r = iv.enclose(list(net.readout.b))
    readout = _ball_map(R, r, 1, k_in)
    m, k_cls = len(X), len(net.classes)
    lab = np.asarray(labels, dtype=np.intp)
    xm, xr = iv.ball(_enclosed_points(X))
    eps = iv.enclose([net.eps])
    widest = max(max(net.widths), net.input_dim)
    per_task = max(1, GROUPED_TASK // widest)
    starts = range(0, m, per_task)
    tasks = (
        (
            ball_maps,
            readout,
            eps,
            xm[s : s + per_task],
            None if not xr.any() else xr[s : s + per_task],
            lab[s : s + per_task],
        )
        for s in starts
    )
    mlo, mhi = np.full(m, np.inf), np.full(m, np.inf)
    zlo, zhi = np.empty((m, k_cls)), np.empty((m, k_cls))
    with closing(imap(_grouped_ball_task, tasks, min(workers, len(starts)))) as parts:
        for s, part in zip(starts, parts, strict=True):
            sl = slice(s, s + per_task)
            mlo[sl], mhi[sl], zlo[sl], zhi[sl] = part
    return mlo, mhi, zlo, zhi


GROUPED_TASK = 1 << 24
"""Points times features of one task of the grouped interval pass."""


GROUPED_READOUT = 1 << 21
"""Points times features of one block of the readout in the grouped interval pass: enough
points that BLAS reads the readout's matrices once for many of them."""


@dataclass(frozen=True)
class BallMap:
    """An affine map ``x -> M x + b`` (exact) as the grouped pass holds it, its ``p`` outputs
    in groups of ``k`` and its ``d`` inputs in groups of ``k_in``: all floats rounded up but
    ``mid``."""

    mid: np.ndarray
    """``(d + 1, p)``: midpoints of ``[M | b]^T``."""
    err: np.ndarray
    """``(d + 1, p / k)``: over each group of outputs, ``gamma_(d+1) sum |mid| + sum rad``."""
    spread: np.ndarray
    """``(d / k_in, p / k)``: over each group of outputs and of inputs, ``sum (|mid| + rad)``
    (the arrays transposed, contiguous: BLAS multiplies them fastest so)."""
    count_E: float
    """``k 2 (d + 1) eta``: the underflow part of the rounding bounds of a group."""
    k: int


def _group_sums(A: np.ndarray, k: int, k_in: int = 1) -> np.ndarray:
    """Upper bounds on the exact sums of the non-negative floats ``A`` ``(p, c)`` over groups
    of ``k`` rows (and of ``k_in`` columns): ``(p / k, c / k_in)``."""
    if k == k_in == 1:
        return A
    p, c = A.shape
    S = A.reshape(p // k, k, c // k_in, k_in).sum(axis=(1, 3))
    return iv.up(S + iv.dot_error(k * k_in, S))


def _normal(bound: np.ndarray, size: np.ndarray) -> np.ndarray:
    """``bound`` (upper bounds, ``(p / k, c)``), 0 where every entry it bounds is 0 (``size``,
    ``(p, c)``, is 0 there), and at least the smallest normal float elsewhere: the same bounds,
    and BLAS is many times slower with subnormal numbers."""
    zero = size.reshape(bound.shape[0], -1, bound.shape[1], size.shape[1] // bound.shape[1])
    zero = ~(zero != 0).any(axis=(1, 3))
    return np.where(zero, 0.0, np.maximum(bound, _SMALLEST_NORMAL))


_SMALLEST_NORMAL = 2.0**-1022


def feature_order(n: int, k: int) -> np.ndarray:
    """The order in which the grouped pass holds ``n`` features in groups of ``k``: the first
    feature of every group, then the second, ...  (position ``j g + i`` holds feature ``i k + j``
    of group ``i``): each group's sums and quotients are then NumPy operations on long rows."""
    return np.arange(n).reshape(n // k, k).T.ravel()


def _ball_map(M: iv.Interval, b: iv.Interval, k: int, k_in: int) -> BallMap:
    """:class:`BallMap` of the map enclosed by ``M`` ``(p, d)`` and ``b`` ``(p,)``, its outputs
    and inputs in :func:`feature_order` (groups of ``k`` and ``k_in``)."""
    mid, rad = iv.ball((np.hstack([M[0], b[0][:, None]]), np.hstack([M[1], b[1][:, None]])))
    p, d = mid.shape[0], mid.shape[1] - 1
    gamma, _, E, _ = iv.dot_constants(d + 1)
    a = np.abs(mid)
    inputs = np.append(feature_order(d, k_in), d)  # the bias column stays last
    err = _normal(_group_sums(iv.up(iv.up(a * gamma) + rad), k), a + rad)
    spread = _normal(_group_sums(iv.up(a[:, :d] + rad[:, :d]), k, k_in), a[:, :d] + rad[:, :d])
    return BallMap(
        np.ascontiguousarray(mid[feature_order(p, k)][:, inputs].T),
        np.ascontiguousarray(err[:, inputs].T),
        np.ascontiguousarray(spread.T),
        float(iv.up(np.float64(k * E))),
        k,
    )


def _augmented(x: np.ndarray) -> np.ndarray:
    """``[x | 1]``: points with a last coordinate 1 (the bias column of :class:`BallMap`)."""
    xa = np.empty((x.shape[0], x.shape[1] + 1))
    xa[:, :-1] = x
    xa[:, -1] = 1.0
    return xa


def _ball_affine(
    M: BallMap, xa: np.ndarray, ax: np.ndarray, xr: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """``(c~, R1)``: ``c~`` the computed ``M x~ + b`` ``(m, p)`` for ``xa = [x~ | 1]`` (``ax``:
    ``|xa|``), and ``R1`` ``(m, p / k)``: for every ``x`` within ``xr`` of ``x~`` (one radius
    per group of inputs; None: 0), a bound on the sum over each group of outputs of
    ``|M x + b - c~|`` (exact ``M``, ``b``; proofs/interval_rounding.md, "Products by BLAS")."""
    c = xa @ M.mid
    R1 = iv.upper_product(ax, M.err)
    R1 += M.count_E
    iv.up_nonneg(R1)
    if xr is not None:
        R1 += iv.upper_product(xr, M.spread)
        iv.up_nonneg(R1)
    return c, R1


NORMAL_FLOOR = 2.0**-900
"""``|c~|^2`` of a group below this (or not finite) leaves its points undecided: above it the
rounding errors of the normalisation are relative (no underflow), as ``_ball_norm`` assumes."""


@functools.lru_cache(maxsize=64)
def _norm_constants(k: int) -> tuple[float, float]:
    """``(f, C)`` for groups of ``k``: ``f <= 1 / (1 + rho)`` and ``C >= sqrt(k) rho +
    u sqrt(k) (1 + rho) + eta / 2``, ``rho = gamma_k + 8 u`` (proofs/interval_rounding.md,
    "A grouped layer in balls")."""
    u, eta = fmpq(1, 2**53), fmpq(1, 2**1074)
    rho = k * u / (1 - k * u) + 8 * u
    root = fmpq(math.isqrt(k * 4**40) + 1, 2**40)  # >= sqrt(k)
    C = root * rho + u * root * (1 + rho) + eta / 2
    return float(iv.enclose([1 - rho])[0][0]), float(iv.enclose([C])[1][0])


def _ball_norm(
    c: np.ndarray, R1: np.ndarray, k: int, eps: iv.Interval, out: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``([y~ | 1], e)``: ``y~ = c~ / s~`` computed in each group of ``k`` (``s~`` the computed
    ``sqrt(|c~|^2 / k + eps)``) and ``e`` ``(m, groups)`` with ``|y_i - y~_i| <= e`` for
    ``y = c / sqrt(|c|^2 / k + eps)`` of every ``c`` with ``||c - c~||_1 <= R1`` in the group:
    ``e = R1 / s_lo + C`` with ``s_lo = s~ / (1 + rho) - R1`` (proofs/interval_rounding.md,
    "A grouped layer in balls"); NaN (undecided) where ``|c~|^2`` is not in
    ``[NORMAL_FLOOR, inf)`` or ``s_lo <= 0``.  ``out``: an ``(m, n + 1)`` array for ``[y~ | 1]``
    (its rows may be strided)."""
    m, n = c.shape
    c3 = c.reshape(m, k, n // k)  # feature_order: c3[:, j, i] is feature j of group i
    S = c3[:, 0] * c3[:, 0]  # |c~|^2, computed (in some order: any will do)
    for j in range(1, k):
        S += c3[:, j] * c3[:, j]
    s = S / k
    s += eps[1][0]
    np.sqrt(s, out=s)
    out = np.empty((m, n + 1)) if out is None else out
    out[:, n] = 1.0
    y3 = out[:, :n].reshape(m, k, n // k)  # a view (its rows are strided)
    np.divide(c3, s[:, None, :], out=y3)
    f, C = _norm_constants(k)
    s_lo = iv.down(iv.down(s * f) - R1)
    ok = (S >= NORMAL_FLOOR) & (s < np.inf) & (s_lo > 0)
    e = iv.up_nonneg(np.divide(R1, s_lo, out=s_lo))
    e += C
    iv.up_nonneg(e)
    e[~ok] = np.nan
    return out, e


def _grouped_ball_task(task: tuple[Any, ...]) -> tuple[np.ndarray, ...]:
    """``(margin_lo, margin_hi, scores_lo, scores_hi)`` of some points (a task of
    ``_grouped_interval_pass``)."""
    layers, readout, eps, xm, xr, lab = task
    *first, last = layers
    m, k_cls = len(xm), readout.mid.shape[1]
    n, g = last.mid.shape[1], last.err.shape[1]
    width = max(max(layer.mid.shape[1] for layer in layers), xm.shape[1])
    rows, big = max(1, GROUPED_BLOCK // width), max(1, GROUPED_READOUT // width)
    z, zr = np.empty((m, k_cls)), np.empty((m, k_cls))
    lost = np.zeros(m, dtype=bool)  # a radius not finite in some layer: the point decides nothing
    with np.errstate(all="ignore"):  # overflow and NaN leave points undecided, silently
        for start in range(0, m, big):
            stop = min(start + big, m)
            ya, e = np.empty((stop - start, n + 1)), np.empty((stop - start, g))
            for s0 in range(start, stop, rows):  # the layers, in cache-sized blocks
                s1 = min(s0 + rows, stop)
                xa, r = _augmented(xm[s0:s1]), None if xr is None else xr[s0:s1]
                for layer in first:
                    xa, r = _ball_norm(*_ball_affine(layer, xa, np.abs(xa), r), layer.k, eps)
                    lost[s0:s1] |= ~np.isfinite(r).all(axis=1)
                c, R1 = _ball_affine(last, xa, np.abs(xa), r)
                part = slice(s0 - start, s1 - start)
                e[part] = _ball_norm(c, R1, last.k, eps, ya[part])[1]
            lost[start:stop] |= ~np.isfinite(e).all(axis=1)
            z[start:stop], zr[start:stop] = _ball_affine(readout, ya, np.abs(ya), e)
        zr[lost] = np.nan  # whatever BLAS makes of 0 * NaN
        return (*_margins(z, zr, lab), iv.down(z - zr), iv.up(z + zr))


def _margins(z: np.ndarray, zr: np.ndarray, lab: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(lo, hi)`` around ``z_label - max_(j != label) z_j`` for every point, the exact scores
    within ``zr`` of ``z``: ``z~_c - z~_j -+ (r_c + r_j)``, rounded outwards, the minimum over
    ``j`` (NaN-propagating: a NaN anywhere leaves the point undecided); ``inf`` with one
    class."""
    m, k_cls = z.shape
    if k_cls == 1:
        return np.full(m, np.inf), np.full(m, np.inf)
    own = np.arange(m), lab
    d = z[own][:, None] - z  # (m, classes): z~_c - z~_j
    r = iv.up_nonneg(zr[own][:, None] + zr)
    lo, hi = iv.down(iv.down(d) - r), iv.up(iv.up(d) + r)
    lo[own], hi[own] = np.inf, np.inf
    return np.min(lo, axis=1), np.min(hi, axis=1)
