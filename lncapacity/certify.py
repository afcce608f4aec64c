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

GROUPED_BLOCK = 1 << 13
"""Points times features of one block of the interval pass for nets with LN-G layers (often
very wide): small arrays, which NumPy computes several times faster than large ones (the
allocator hands large ones back to the system and faults them in again)."""

Layer = tuple[iv.Interval, iv.Interval, int]
"""A layer as the interval pass holds it: ``(P W, P b, k)``, centred exactly in each group of
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


def _dot(W: iv.Interval, h: iv.Interval, pairwise: bool) -> iv.Interval:
    """``h @ W.T``: one column at a time, or (``pairwise``, for maps with more columns than
    rows) row by row, each row's sum taken pairwise (:func:`lncapacity.interval.dot_rows`)."""
    if pairwise and W[0].shape[1] > W[0].shape[0]:
        return iv.dot_rows(W, h)
    return iv.matvec(W, h)


def _interval_layer(
    layer: Layer, h: iv.Interval, eps: iv.Interval, pairwise: bool = False
) -> iv.Interval:
    """One layer: ``c = (P W) h + P b``, then ``c / sqrt(sum(c^2) / k + eps)`` in each group."""
    PW, Pb, k = layer
    c = iv.add(_dot(PW, h, pairwise), (Pb[0][None, :], Pb[1][None, :]))
    m, n = c[0].shape
    if k == n:  # LayerNorm
        var = iv.total(iv.square(c))
        var = iv.down(var[0] / n), iv.up(var[1] / n)
        s = iv.sqrt(iv.add(var, (eps[0][None, :], eps[1][None, :])))
        return iv.div_positive(c, s)
    # LN-G: the same in each group, on an axis of its own
    c3 = c[0].reshape(m, n // k, k), c[1].reshape(m, n // k, k)
    var = iv.total(iv.square(c3))  # (m, groups, 1)
    var = iv.down(var[0] / k), iv.up(var[1] / k)
    s = iv.sqrt(iv.add(var, (eps[0][None, None, :], eps[1][None, None, :])))
    q = iv.div_positive(c3, s)
    return q[0].reshape(m, n), q[1].reshape(m, n)


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
        h = _interval_layer(layer, h, eps, net.grouped)
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
    """:func:`interval_pass` for nets with LN-G layers, in blocks of :data:`GROUPED_BLOCK`.

    A chunk of points goes through the layers; the last one is computed a block of whole
    groups at a time, and each block's products with the readout rows are added, feature by
    feature, to one accumulator per row (each addition outwards), summed pairwise at the end
    (:func:`lncapacity.interval.pairwise_total`).  The margins are the differences of the
    score intervals, ``[lo(z_c) - max hi(z_j), hi(z_c) - max lo(z_j)]`` rounded outwards: a
    little wider than with the exact row differences, and far cheaper with many classes.
    ``workers``: processes, each taking :data:`GROUPED_TASK` points times features at a time.
    """
    maps = _interval_layer_maps(net, net.layers)
    eps = iv.enclose([net.eps])
    R = iv.enclose(np.array([list(row) for row in net.readout.W], dtype=object))
    r = iv.enclose(list(net.readout.b))
    m, k_cls = len(X), len(net.classes)
    zlo, zhi = np.empty((m, k_cls)), np.empty((m, k_cls))
    H = _enclosed_points(X)
    widest = max(max(net.widths), net.input_dim)
    per_task = max(1, GROUPED_TASK // widest)
    starts = range(0, m, per_task)
    tasks = (
        (maps, eps, R, r, (H[0][s : s + per_task], H[1][s : s + per_task]), widest) for s in starts
    )
    with closing(imap(_grouped_scores, tasks, min(workers, len(starts)))) as parts:
        for s, (lo, hi) in zip(starts, parts, strict=True):
            zlo[s : s + per_task], zhi[s : s + per_task] = lo, hi
    mlo, mhi = np.full(m, np.inf), np.full(m, np.inf)
    if k_cls > 1:
        lab = np.asarray(labels, dtype=np.intp)
        own = np.arange(m), lab
        others_hi, others_lo = zhi.copy(), zlo.copy()
        others_hi[own], others_lo[own] = -np.inf, -np.inf
        # NaN-propagating maxima: a NaN score leaves the point undecided
        mlo = iv.down(zlo[own] - np.max(others_hi, axis=1))
        mhi = iv.up(zhi[own] - np.max(others_lo, axis=1))
    return mlo, mhi, zlo, zhi


GROUPED_TASK = 1 << 22
"""Points times features of one task of the grouped interval pass (about half a second)."""

GROUPED_PARALLEL = 1 << 24
"""Points times features from which :func:`certify` spreads the grouped interval pass over
processes (by default)."""


def _grouped_scores(
    task: tuple[list[Layer], iv.Interval, iv.Interval, iv.Interval, iv.Interval, int],
) -> iv.Interval:
    """The score intervals of some points (a task of ``_grouped_interval_pass``)."""
    maps, eps, R, r, H, widest = task
    m, k_cls = H[0].shape[0], R[0].shape[0]
    zlo, zhi = np.empty((m, k_cls)), np.empty((m, k_cls))
    step = max(1, GROUPED_BLOCK // widest)
    *first, (PW, Pb, k) = maps
    n = PW[0].shape[0]
    with np.errstate(all="ignore"):  # overflow and NaN leave points undecided, silently
        for start in range(0, m, step):
            sl = slice(start, min(start + step, m))
            h = H[0][sl], H[1][sl]
            for layer in first:
                h = _blocked_layer(layer, h, eps)
            rows = h[0].shape[0]
            size = max(k, GROUPED_BLOCK // rows // k * k)  # whole groups
            acc: list[iv.Interval] = []
            for b0 in range(0, n, size):
                part = slice(b0, min(b0 + size, n))
                block = ((PW[0][part], PW[1][part]), (Pb[0][part], Pb[1][part]), k)
                hb = _interval_layer(block, h, eps, True)
                for i in range(k_cls):
                    term = iv.mul((R[0][None, i, part], R[1][None, i, part]), hb)
                    if b0 == 0:
                        acc.append(term)
                    else:  # feature j + b0 onto feature j: every addition outwards
                        w = term[0].shape[1]
                        lo, hi = iv.add((acc[i][0][:, :w], acc[i][1][:, :w]), term)
                        acc[i][0][:, :w], acc[i][1][:, :w] = lo, hi
            for i in range(k_cls):
                zlo[sl, i], zhi[sl, i] = iv.add(iv.pairwise_total(acc[i]), (r[0][i], r[1][i]))
    return zlo, zhi


def _blocked_layer(layer: Layer, h: iv.Interval, eps: iv.Interval) -> iv.Interval:
    """``_interval_layer`` a block of whole groups at a time (for the layers of a grouped
    net before its last)."""
    PW, Pb, k = layer
    n = PW[0].shape[0]
    size = max(k, GROUPED_BLOCK // h[0].shape[0] // k * k)
    out = np.empty((h[0].shape[0], n)), np.empty((h[0].shape[0], n))
    for b0 in range(0, n, size):
        part = slice(b0, min(b0 + size, n))
        block = ((PW[0][part], PW[1][part]), (Pb[0][part], Pb[1][part]), k)
        out[0][:, part], out[1][:, part] = _interval_layer(block, h, eps, True)
    return out


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
