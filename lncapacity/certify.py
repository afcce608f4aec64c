"""The certificate: a proof, by rigorous ball arithmetic, that a net classifies every point.

For each point ``x`` with label ``c`` the exact forward pass of the net is
enclosed in python-flint ``arb`` balls (every operation rounded outwards, so
the true value of each readout score lies in its ball); the point is
*certified* (certainly right) when every difference ``z_c - z_j`` (``j != c``)
is a ball of strictly positive numbers, and its lower end is the certified
margin; it is *certainly wrong* when some difference is strictly negative, and
*undecided* when the precision limit is reached first (a point on, or within
rounding of, a decision boundary: never called right).  Precision starts at 128
bits and doubles until every point is decided or the limit is reached (within a
chunk of points the precision reached carries over); no floating-point comparison
is involved.  For scalar chains (the constructions' nets) every layer but the last
maps exact ends to its exact range (:func:`.interval.scalar_range_balls`), so the balls lose no bits
per layer to dependency and deep nets certify at the starting precision.

Nets that are no scalar chain (trained nets: every layer of full rank) first
go through :func:`interval_pass`, float64 interval arithmetic with every
operation rounded outwards (:mod:`lncapacity.interval`, rigorous by
proofs/interval_rounding.md), vectorised over all points; it decides nearly
every point, and the others are redone in balls.

This module depends on the model only: it shares no code with the
constructions, so :func:`certify` is an independent check of what they built.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from flint import arb, fmpq

from . import interval as iv
from .algebraic import has_radicals, number_ball, precision_cap
from .arith import exact, json_float, lower_bound_float, precision, shown
from .data import PointSet, points_from_arrays
from .errors import InputError
from .interval import default_float_mode
from .model import Affine, Label, LNNet, register_predictor
from .parallel import imap

MAX_PRECISION = 1 << 16


@dataclass(frozen=True)
class PointResult:
    """The verdict on one point."""

    index: int
    label: Label
    certified: bool
    margin: float
    """A lower bound on ``z_label - max_other z`` (rounded down) when certified; ``inf``
    with one class, ``-inf`` when the point is not certified (see ``margin_interval``)."""
    precision: int
    """The bits of the arithmetic that decided (53: the float64 interval pass)."""
    margin_interval: tuple[float, float] = (-math.inf, math.inf)
    """Floats ``lo <= z_label - max_other z <= hi``, for every verdict."""

    @property
    def verdict(self) -> str:
        """``"right"`` (certainly predicts its label), ``"wrong"`` (certainly does not: some
        other score is certainly larger) or ``"undecided"`` (at the precision cap; the
        margin interval contains 0, e.g. a point on the decision boundary)."""
        if self.certified:
            return "right"
        return "wrong" if self.margin_interval[1] < 0 else "undecided"


@dataclass(frozen=True)
class Certificate:
    """Per-point certified margins for one net on one point set."""

    points: tuple[PointResult, ...]
    scores: Any = field(default=None, compare=False, repr=False)
    """``(lo, hi)``: float64 arrays ``(m, len(classes))`` enclosing every exact score
    (rigorous, not always tight), or None."""
    origins: tuple[tuple[int, ...], ...] | None = field(default=None, compare=False, repr=False)
    """The row map: ``origins[k]`` lists the input rows merged into point ``k`` (equal rows
    with equal labels are one point; :class:`~lncapacity.data.PointSet`), or None."""

    @property
    def merged(self) -> int:
        """Input rows merged away as duplicates (so ``len(points) + merged`` rows were given)."""
        return 0 if self.origins is None else sum(len(o) - 1 for o in self.origins)

    @property
    def worst_margin(self) -> tuple[float, float]:
        """An enclosure ``(lo, hi)`` of the smallest margin ``min_k (z_label - max_other z)``
        over the points, whatever the verdicts (``min_margin`` is ``-inf`` as soon as one
        point is not certified; this says by how much it fails): the minimum of the points'
        margin intervals, end by end.  ``(inf, inf)`` with no points or one class."""
        if not self.points:
            return (math.inf, math.inf)
        return (
            min(p.margin_interval[0] for p in self.points),
            min(p.margin_interval[1] for p in self.points),
        )

    @property
    def certified(self) -> int:
        return sum(p.certified for p in self.points)

    @property
    def all_certified(self) -> bool:
        return self.certified == len(self.points)

    @property
    def right(self) -> int:
        """Points certainly classified right (the same as :attr:`certified`)."""
        return self.certified

    @property
    def wrong(self) -> int:
        """Points certainly misclassified."""
        return sum(p.verdict == "wrong" for p in self.points)

    @property
    def undecided(self) -> int:
        """Points undecided at the precision cap (on or within rounding of a boundary)."""
        return sum(p.verdict == "undecided" for p in self.points)

    @property
    def min_margin(self) -> float:
        """The smallest certified margin (a lower bound), ``-inf`` when some point is not
        certified (see :attr:`worst_margin` for its enclosure then)."""
        return min((p.margin for p in self.points), default=math.inf)

    @property
    def precision(self) -> int:
        return max((p.precision for p in self.points), default=0)

    @property
    def failures(self) -> list[PointResult]:
        return [p for p in self.points if not p.certified]

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": "lnnet-certificate/1",
            "arithmetic": "python-flint arb balls or float64 intervals rounded outwards; "
            "margins are lower bounds, rounded down",
            "all_certified": self.all_certified,
            "certified": self.certified,
            "certainly_right": self.right,
            "certainly_wrong": self.wrong,
            "undecided": self.undecided,
            "points": len(self.points),
            "min_margin": json_float(self.min_margin),
            "worst_margin_interval": [json_float(v) for v in self.worst_margin],
            "merged_rows": self.merged,
            "precision_bits": self.precision,
            "results": [
                {
                    "point": p.index,
                    "label": p.label,
                    "certified": p.certified,
                    "verdict": p.verdict,
                    "margin_lower": json_float(p.margin),
                    "margin_interval": [json_float(v) for v in p.margin_interval],
                    "precision_bits": p.precision,
                }
                for p in self.points
            ],
        }


def certify(
    net: LNNet[fmpq],
    X: Any,
    y: Any = None,
    *,
    max_precision: int = MAX_PRECISION,
    workers: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    intervals: bool | None = None,
    scores: bool = False,
) -> Certificate:
    """Decide, point by point, whether ``net`` predicts ``y[k]`` for ``X[k]``.

    ``X`` is a :class:`~lncapacity.data.PointSet` or points with labels ``y``;
    coordinates are read exactly.  Each point is *certainly right* (certified:
    its margin ball is positive), *certainly wrong* (some other score is
    certainly larger) or *undecided* at ``max_precision`` bits (a point on, or
    within rounding of, a decision boundary), with an interval enclosing its
    margin.  Never raises for a wrong net.

    Nets whose layers are all rank one (the constructions') go through
    :func:`scalar_chain` in ``arb`` balls.  Other nets (trained ones) first go
    through one vectorised pass of float64 interval arithmetic rounded outwards
    (:mod:`lncapacity.interval`; rigorous, proofs/interval_rounding.md), which
    decides nearly every point; the rest are redone in ``arb`` balls with rising
    precision.  ``intervals`` forces that pass on (True) or off (False);
    default: on for such nets with layers and more than a few points.  ``workers``:
    processes for the ``arb`` part, and for the interval pass of nets with LN-G layers
    (default: all cores, for large jobs only).
    LayerNorm gains and biases are folded first (:meth:`LNNet.folded`, exact).
    ``scores``: also bound every exact score (:attr:`Certificate.scores`; the
    interval pass always does, ``arb`` points only when asked, as it costs time).
    """
    points = X if isinstance(X, PointSet) else points_from_arrays(X, y)
    _check_compatible(net, points)
    net = net.folded()
    max_precision = precision_cap(net, max_precision)
    labels = [net.classes.index(points.y[k]) for k in range(points.m)]
    k_cls = len(net.classes)
    scores_lo = np.full((points.m, k_cls), -np.inf)
    scores_hi = np.full((points.m, k_cls), np.inf)
    results: list[PointResult] = []
    todo = list(range(points.m))
    chain = None if _algebraic(net) else scalar_chain(net)
    split = None if chain is not None or _algebraic(net) else _rank_one_tail(net)
    if intervals is None:
        intervals = (
            net.depth > 0  # an affine map alone is cheap in balls, and its margins tight
            and not _algebraic(net)  # algebraic weights: balls only
            and points.m * (net.depth + 1) >= INTERVAL_WORK
        )
    if intervals and todo and default_float_mode():
        with np.errstate(all="ignore"):  # overflow and NaN leave points undecided, silently
            if chain is not None:
                mlo, mhi, zlo, zhi = scalar_interval_pass(chain, points.X, labels)
            elif split is not None:  # general layers, then a rank-one tail (circle + runs)
                j, tail = split
                h = interval_layers(net, points.X, net.layers[:j])
                mlo, mhi, zlo, zhi = scalar_interval_pass(tail, points.X, labels, h)
            else:
                spread = net.grouped and points.m * max(net.widths) >= GROUPED_PARALLEL
                iv_workers = workers or ((os.cpu_count() or 1) if spread else 1)
                mlo, mhi, zlo, zhi = interval_pass(net, points.X, labels, iv_workers)
        scores_lo, scores_hi = zlo, zhi
        todo = []
        for k in range(points.m):
            if mlo[k] > 0:
                results.append(
                    PointResult(k, points.y[k], True, float(mlo[k]), 53, (mlo[k], mhi[k]))
                )
            elif mhi[k] < 0:
                results.append(PointResult(k, points.y[k], False, -math.inf, 53, (mlo[k], mhi[k])))
            else:
                todo.append(k)
        if progress:
            progress(len(results), points.m)
    jobs = [(k, points.X[k], labels[k]) for k in todo]
    if workers is None:
        workers = (os.cpu_count() or 1) if len(jobs) * (net.depth + 1) > PARALLEL_WORK else 1
        if _algebraic(net):  # each process would evaluate the weights' programs again
            workers = 1
    chunks = [jobs[i : i + CHUNK] for i in range(0, len(jobs), CHUNK)]
    tasks = ((net, chunk, max_precision, scores) for chunk in chunks)
    with closing(imap(_certify_chunk, tasks, min(workers, max(len(chunks), 1)))) as parts:
        for part in parts:
            for k, ok, margin, prec, interval, zlo, zhi in part:
                results.append(PointResult(k, points.y[k], ok, margin, prec, interval))
                if scores:
                    scores_lo[k], scores_hi[k] = zlo, zhi
            if progress:
                progress(len(results), points.m)
    results.sort(key=lambda p: p.index)
    have_scores = scores or (intervals and not jobs)
    return Certificate(
        tuple(results), (scores_lo, scores_hi) if have_scores else None, points.origins
    )


CHUNK = 32
PARALLEL_WORK = 20_000
"""Points times layers above which certification is spread over processes."""
INTERVAL_WORK = 64
"""Points times layers from which a net without a scalar chain gets the interval pass first."""


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
    for a LayerNorm), applied to the exact weights and then enclosed."""
    out = []
    for i, layer in enumerate(layers):
        n = len(layer.b)
        k = n // net.norm(i).groups
        PW: list[list[fmpq]] = []
        Pb: list[fmpq] = []
        for t in range(0, n, k):  # each group (the whole layer for a LayerNorm)
            block, bias = layer.W[t : t + k], layer.b[t : t + k]
            col_mean = [sum((row[j] for row in block), fmpq(0)) / k for j in range(len(block[0]))]
            b_mean = sum(bias, fmpq(0)) / k
            PW += [[w - mu for w, mu in zip(row, col_mean, strict=True)] for row in block]
            Pb += [v - b_mean for v in bias]
        out.append((iv.enclose(np.array(PW, dtype=object)), iv.enclose(Pb), k))
    return out


def _interval_layer(layer: Layer, h: iv.Interval, eps: iv.Interval) -> iv.Interval:
    """One LayerNorm layer: ``c = (P W) h + P b``, then ``c / sqrt(sum(c^2) / n + eps)``."""
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
    widen the intervals), then ``h = c / sqrt(sum(c^2) / n + eps)``; the margins
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

GROUPED_PARALLEL = 1 << 24
"""Points times features from which :func:`certify` spreads the grouped interval pass over
processes (by default)."""


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


def scalar_interval_pass(
    chain: Any,
    X: Sequence[Sequence[fmpq]],
    labels: Sequence[int],
    h: iv.Interval | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`interval_pass` for a net that is a scalar chain (:func:`scalar_chain`).

    The first scalar ``s_1 = r_1 . x`` is exact (rational), then enclosed; each
    layer maps the interval of ``s`` to an interval containing the range of
    ``(beta + alpha (s - s0)) / sqrt(g (s - s0)^2 + k)`` over it, by
    :func:`lncapacity.interval.scalar_range`: the map evaluated at the two float
    ends with every operation rounded outwards, the hull taken where the map is
    monotone, its extremum added where the interval may contain its one critical
    point (proofs/interval_rounding.md, "Scalar chains").  The width grows by
    ``|f'|`` plus a few ulps a layer, as float64's own error does, not by the
    ``~1.1`` bits a layer of ball arithmetic's dependency problem.  The margins
    ``z_c - z_j`` are the same form with the exact differences of the readout
    rows, so they are enclosed by the same rule (not as a difference of
    intervals).  Same returns as :func:`interval_pass`.  With ``h`` (intervals around the
    chain's inputs, the outputs of the layers before it: ``_rank_one_tail``) the first
    scalar is enclosed from them instead of computed exactly from ``X``.
    """
    first, steps, bias = chain
    if h is None:
        s = iv.enclose([sum((w * v for w, v in zip(first, x, strict=True)), fmpq(0)) for x in X])
    else:
        r = iv.enclose(np.array([list(first)], dtype=object))
        s = tuple(v[:, 0] for v in iv.matvec(r, h))
    for s0, g, k, alphas, betas in steps[:-1]:
        s = iv.scalar_range(s0, g, k, betas[0], alphas[0])(s)
    s0, g, k, alphas, betas = steps[-1]
    m, k_cls = len(X), len(bias)
    zlo, zhi = np.empty((m, k_cls)), np.empty((m, k_cls))
    for c in range(k_cls):
        z = iv.add(iv.scalar_range(s0, g, k, betas[c], alphas[c])(s), iv.enclose([bias[c]]))
        zlo[:, c], zhi[:, c] = z
    mlo, mhi = np.full(m, np.inf), np.full(m, np.inf)
    lab = np.asarray(labels, dtype=np.intp)
    for c in range(k_cls):
        rows = np.nonzero(lab == c)[0]
        sub = (s[0][rows], s[1][rows])
        for j in range(k_cls):
            if j == c or not len(rows):
                continue
            f = iv.scalar_range(s0, g, k, betas[c] - betas[j], alphas[c] - alphas[j])
            d = iv.add(f(sub), iv.enclose([bias[c] - bias[j]]))
            # min over j, NaN-propagating: a NaN anywhere leaves the point undecided
            mlo[rows] = np.minimum(mlo[rows], d[0])
            mhi[rows] = np.minimum(mhi[rows], d[1])
    return mlo, mhi, zlo, zhi


def _certify_chunk(
    task: tuple[LNNet[fmpq], Sequence[tuple[int, Sequence[fmpq], int]], int, bool],
) -> list[tuple[int, bool, float, int, tuple[float, float], list[float], list[float]]]:
    """Per job: (index, certified, margin, precision, margin interval, score lower and upper
    bounds, empty unless asked for); the precision adapts from point to point."""
    net, jobs, max_precision, want_scores = task
    scores = _evaluator(net)
    prec = _start_precision(net)
    out = []
    for k, x, c in jobs:
        while True:
            with precision(prec):
                z = scores(x, prec)
                diffs = [z[c] - zj for j, zj in enumerate(z) if j != c]
                right = all(d > 0 for d in diffs)
                if right or any(d < 0 for d in diffs) or prec >= max_precision:
                    lo = min((lower_bound_float(d) for d in diffs), default=math.inf)
                    hi = min((upper_bound_float(d) for d in diffs), default=math.inf)
                    zlo = [lower_bound_float(v) for v in z] if want_scores else []
                    zhi = [upper_bound_float(v) for v in z] if want_scores else []
                    margin = lo if right else -math.inf
                    out.append((k, right, margin, prec, (lo, hi), zlo, zhi))
                    break
            prec = min(2 * prec, max_precision)
    return out


def exact_scores(
    net: LNNet[fmpq], X: Sequence[Sequence[fmpq]], bits: int = 128
) -> tuple[np.ndarray, np.ndarray]:
    """Float64 bounds ``(lo, hi)`` on every exact score of the rows of ``X``, from ``arb``
    balls at ``bits`` bits: each within about one float64 ulp of the exact score."""
    scores = _evaluator(net.folded())
    lo = np.empty((len(X), len(net.classes)))
    hi = np.empty_like(lo)
    with precision(bits):
        for i, x in enumerate(X):
            z = scores(tuple(exact(v) for v in x), bits)
            lo[i] = [lower_bound_float(v) for v in z]
            hi[i] = [upper_bound_float(v) for v in z]
    return lo, hi


def upper_bound_float(x: arb) -> float:
    """A float that is ``>=`` every point of the ball ``x`` (``inf`` if unbounded)."""
    return -lower_bound_float(-x)


def decide(net: LNNet[fmpq], x: Sequence[object], max_precision: int = MAX_PRECISION) -> int:
    """The index of the class the exact net predicts for ``x``, proven by ball arithmetic.

    Raises :class:`ArithmeticError` when ``x`` is on (or within rounding of) a
    decision boundary at ``max_precision`` bits.
    """
    try:
        row = tuple(exact(v) for v in x)
    except (ValueError, TypeError) as e:
        raise InputError(f"cannot classify {shown(list(x))}: {e}") from None
    if len(row) != net.input_dim:
        raise InputError(f"the net takes {net.input_dim} features, got {len(row)}")
    net = net.folded()
    scores = _evaluator(net)
    max_precision = precision_cap(net, max_precision)
    prec = _start_precision(net)
    while True:
        with precision(prec):
            z = scores(row, prec)
            for c, zc in enumerate(z):
                if all(zc > zj for j, zj in enumerate(z) if j != c):
                    return c
        if prec >= max_precision:
            raise ArithmeticError(f"cannot decide the argmax for {list(x)} at {prec} bits")
        prec *= 2


def _predict(net: LNNet[fmpq], X: Any, backend: str) -> list[int]:
    """``LNNet.predict(X, "exact")``: each row's class index by :func:`decide`."""
    return [decide(net, row) for row in X]


register_predictor("exact", _predict)


def _start_precision(net: LNNet[fmpq]) -> int:
    # float-faithful nets need few bits at any depth; a net that needs more (the
    # paper's construction loses a few bits per layer) finds out on its first point,
    # and the precision reached carries over to the next points
    return 128


Scores = Callable[[Sequence[fmpq], int], list[arb]]


def _evaluator(net: LNNet[fmpq]) -> Scores:
    """``(x, prec) -> readout balls``, to be called inside ``precision(prec)``.

    The scalar form of :func:`scalar_chain` when every layer has rank at most
    one (a few ball operations per layer), else the model's generic forward pass.
    """
    algebraic = _algebraic(net)
    chain = None if algebraic else scalar_chain(net)
    cache: dict[int, Any] = {}
    if chain is None:
        to_ball = number_ball if algebraic else arb

        def generic(x: Sequence[fmpq], prec: int) -> list[arb]:
            if prec not in cache:
                # algebraic weights (lncapacity.algebraic): balls of their radical
                # programs at this precision, tighter as the precision rises
                cache[prec] = net.map(to_ball)
            return cache[prec].forward([arb(v) for v in x], arb.sqrt)

        return generic
    first, steps, bias = chain

    def scalar(x: Sequence[fmpq], prec: int) -> list[arb]:
        if prec not in cache:
            s0, g, k, alpha, beta = steps[-1]
            cache[prec] = (
                [iv.scalar_range_balls(s0, g, k, b[0], a[0]) for s0, g, k, a, b in steps[:-1]],
                (arb(s0), arb(g), arb(k), [arb(a) for a in alpha], [arb(b) for b in beta]),
                [arb(b) for b in bias],
            )
        inner, (s0, g, k, alpha, beta), r = cache[prec]
        s = arb(sum((w * v for w, v in zip(first, x, strict=True)), fmpq(0)))
        lo, hi = s.lower(), s.upper()
        for step in inner:  # exact ends, mapped by each layer's range: no dependency loss
            ends = step(lo, hi)
            if ends is None:  # not finite (cannot happen for k > 0): decides nothing
                return [arb(0, math.inf) for _ in alpha]
            lo, hi = ends
        t = lo.union(hi) - s0
        root = (g * t * t + k).sqrt()
        return [(a * t + b) / root + ri for a, b, ri in zip(alpha, beta, r, strict=True)]

    return scalar


def _algebraic(net: LNNet[Any]) -> bool:
    """Whether some weight is an exact algebraic number (:mod:`lncapacity.algebraic`)."""
    return has_radicals(net)


def rank_one(W: Sequence[Sequence[fmpq]]) -> tuple[list[fmpq], list[fmpq]] | None:
    """``(col, row)`` with ``W = col row^T`` exactly, or None if the rank exceeds one."""
    pivot = next(((i, j) for i, r in enumerate(W) for j, w in enumerate(r) if w != 0), None)
    if pivot is None:
        return [fmpq(0)] * len(W), [fmpq(0)] * len(W[0])
    i0, j0 = pivot
    row = list(W[i0])
    col = [r[j0] / row[j0] for r in W]
    if any(W[i][j] != col[i] * row[j] for i in range(len(W)) for j in range(len(row))):
        return None
    return col, row


def _rank_one_tail(net: LNNet[fmpq]) -> tuple[int, Any] | None:
    """``(j, chain)``: the layers from ``j >= 1`` on, with the readout, as a
    :func:`scalar_chain` (the longest such tail), or None.  Circle layers followed by
    ``runs`` folds (``--method circle`` handing over) are such nets."""
    if net.norms:
        return None
    j = len(net.layers)
    while j > 0 and rank_one(net.layers[j - 1].W) is not None:
        j -= 1
    if j == 0 or j == len(net.layers):
        return None
    d = len(net.layers[j].W[0])
    tail = LNNet(d, net.width, net.eps, net.layers[j:], net.readout, net.classes, {})
    chain = scalar_chain(tail)
    return None if chain is None else (j, chain)


def scalar_chain(net: LNNet[fmpq]) -> Any:
    """The net as a scalar recurrence, when every layer ``W_l`` has rank at most one.

    With ``W_l = c_l r_l^T`` the layer input is ``c_l s_l + b_l`` for the scalar
    ``s_l = r_l . h_{l-1}`` (``s_1 = r_1 . x``).  Centring gives ``A s + B`` with
    ``A = P c_l``, ``B = P b_l`` (``P = I - 1 1^T / n``), whose variance is
    ``g (s - s0)^2 + k - eps`` after completing the square (``g = |A|^2 / n``,
    ``s0 = -(A . B) / |A|^2``, ``k = |B - (A.B/|A|^2) A|^2 / n + eps >= 0``).  So for
    each read ``m`` of ``h_l`` (the next layer's ``r``, or the readout's rows):

        m . h_l = (m.A (s - s0) + m.(A s0 + B)) / sqrt(g (s - s0)^2 + k).

    Returns ``(r_1, steps, readout bias)`` with ``steps`` of ``(s0, g, k, alphas,
    betas)``, all exact; or None (then the generic pass is used) for a net without
    layers, with a layer of rank two or more, or with a layer whose variance plus
    ``eps`` can vanish (``k = 0``).
    """
    if net.norms or _algebraic(net):
        return None
    factors = [rank_one(layer.W) for layer in net.layers]
    if not net.layers or any(f is None for f in factors):
        return None
    reads = [f[1] for f in factors[1:]]  # type: ignore[index]
    steps = []
    for li, (layer, (col, _)) in enumerate(zip(net.layers, factors, strict=True)):  # type: ignore[misc]
        n = len(layer.b)
        mean_c, mean_b = sum(col, fmpq(0)) / n, sum(layer.b, fmpq(0)) / n
        A = [ci - mean_c for ci in col]
        B = [bi - mean_b for bi in layer.b]
        aa = sum((a * a for a in A), fmpq(0))
        ab = sum((a * b for a, b in zip(A, B, strict=True)), fmpq(0))
        ms = [reads[li]] if li < len(reads) else [list(r) for r in net.readout.W]
        if aa == 0:
            s0, g = fmpq(0), fmpq(0)
        else:
            s0, g = -ab / aa, aa / n
        centre = [a * s0 + b for a, b in zip(A, B, strict=True)]
        k = sum((v * v for v in centre), fmpq(0)) / n + net.eps
        if k == 0:
            return None
        alphas = [sum((m * a for m, a in zip(mv, A, strict=True)), fmpq(0)) for mv in ms]
        betas = [sum((m * v for m, v in zip(mv, centre, strict=True)), fmpq(0)) for mv in ms]
        steps.append((s0, g, k, alphas, betas))
    return factors[0][1], steps, list(net.readout.b)  # type: ignore[index]


def _check_compatible(net: LNNet[fmpq], points: PointSet) -> None:
    if points.d != net.input_dim:
        raise InputError(
            f"{points.source}: points have {points.d} features, the net takes {net.input_dim}"
        )
    if unknown := sorted({label for label in points.y if label not in net.classes}, key=str):
        raise InputError(
            f"{points.source}: labels {unknown} are not classes of the net {list(net.classes)}"
        )
