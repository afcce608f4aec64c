"""Step 1 of the Projection Merge Algorithm: project the points to a line.

Any direction ``w`` with all ``w . x_k`` distinct will do (Ni et al. 2024;
proofs/vc_theorem.md): a direction is bad only if it is orthogonal to one of the
finitely many differences ``x_a - x_b``.  Among a few candidates with small
integer or short dyadic entries we keep a valid one with the fewest label runs
along the line (a fold removes at most one run, so fewer runs never cost layers),
breaking ties by the smallest gap between neighbours of different labels,
relative to the spread; directions where that gap is below :data:`RESOLVABLE`
(float arithmetic could not tell the labels apart) come last, and integer
directions come before dyadic ones that do as well.  The moment-curve
directions ``(1, k, k^2, ...)`` guarantee termination: for each difference, at
most ``d - 1`` values of ``k`` are bad.

Data-driven candidates join them (``_data_directions``): Fisher's
discriminant directions (the leading eigenvectors of ``S_w^-1 S_b``, computed in
float64 on the data) rounded to short dyadic rationals.  They rank *after* the
fixed candidates that have as few runs, so they are taken only when they
strictly lower the number of runs (a separable set: two runs, depth 0).  A
rounded direction that ties some points gets a tie-break: ``w + delta v`` with
``v`` a fixed integer vector and ``delta`` a power of two small enough not to
reorder the values ``w`` already separates (checked exactly afterwards, as for
every candidate).
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator, Sequence

import numpy as np
from flint import fmpq

from ..errors import ConstructionError
from ..reproducible import gram, matmul, norm, solve, top_eigenvectors

DATA_BITS = (4, 10, 24)
"""Dyadic precisions (bits after the point, largest entry scaled to 1) of the data-driven
directions."""
REFINE_BUDGET = 4_000_000
"""Projected values (trials times points) the local search for fewer runs may compute."""
DATA_DIRECTIONS = 3
"""Leading Fisher directions tried (at most ``k - 1`` and ``d``)."""
RESOLVABLE = 2.0**-30
"""Smallest different-label gap, relative to the spread, that a projection should keep."""


def runs(labels: Sequence[object]) -> int:
    """The number of maximal blocks of equal consecutive labels."""
    return sum(1 for i in range(len(labels)) if i == 0 or labels[i] != labels[i - 1])


def _candidates(d: int, seed: int, count: int) -> Iterator[tuple[fmpq, ...]]:
    """The axes, ``count`` small-integer directions, then ``count`` with 10-bit dyadic
    entries (those separate lattice data, where small integers make near-ties)."""
    for i in range(d):
        yield tuple(fmpq(int(i == j)) for j in range(d))
    rng = random.Random(seed)
    for bits in (0, 10):
        for _ in range(count):
            w = tuple(fmpq(rng.randint(-8 << bits, 8 << bits), 1 << bits) for _ in range(d))
            if any(w):
                yield w


def _moment_curve(d: int) -> Iterator[tuple[fmpq, ...]]:
    k = 2
    while True:
        yield tuple(fmpq(k) ** j for j in range(d))
        k += 1


def directions(
    Xf: np.ndarray, y: np.ndarray, *, seed: int = 0, count: int = 24
) -> tuple[list[tuple[fmpq, ...]], int]:
    """The candidate directions :func:`project` ranks, for the points ``Xf`` (float64) with
    labels ``y``, and how many of them come first as fixed ones: the axes, ``count``
    small-integer and ``count`` 10-bit dyadic directions (none of those two kinds on a line),
    then Fisher's directions (``_data_directions``)."""
    d = Xf.shape[1]
    W = list(_candidates(d, seed, 0 if d == 1 else count))
    fixed = len(W)
    if d > 1:
        W += _data_directions(Xf, y)
    return W, fixed


def project(
    X: Sequence[Sequence[fmpq]], y: Sequence[int], *, seed: int = 0, candidates: int = 24
) -> tuple[tuple[fmpq, ...], list[fmpq]]:
    """A direction ``w`` (exact) with distinct projections, and the projections ``w^T x``.

    Candidates are ranked in floating point (a heuristic only), then the best is
    checked exactly; the first with exactly distinct projections is taken.
    """
    m, d = len(X), len(X[0])
    Xf = _floats(X)
    labels = np.asarray(y)
    W, fixed = directions(Xf, labels, seed=seed, count=candidates)
    P = matmul(Xf, _floats(W).T)

    def rank(k: int) -> tuple[bool, int, bool, bool, float]:
        # the fixed candidates first when they do as well (earlier nets unchanged), then
        # short integer weights (readable nets)
        unresolvable, count, gap = _float_score(P[:, k], labels)
        return unresolvable, count, k >= fixed, any(wi.q != 1 for wi in W[k]), gap

    ranked = sorted(range(len(W)), key=rank)
    for k in ranked:
        if _distinct(W[k], X, Xf, P[:, k]):
            return W[k], _dot(W[k], X)
    for w in _moment_curve(d):
        t = _dot(w, X)
        if len(set(t)) == m:
            return w, t
    raise ConstructionError("no direction separates the points")  # pragma: no cover


def _data_directions(Xf: np.ndarray, y: np.ndarray) -> list[tuple[fmpq, ...]]:
    """Fisher's discriminant directions, as short dyadic rationals with ties broken.

    With three or more classes the leading one is also refined by a local search for
    fewer runs (``_fewer_runs``); binary sets get Fisher's directions only.

    In float64 (a heuristic: every candidate is checked exactly by :func:`project`):
    the data are centred and scaled per coordinate, the within-class scatter ``S_w``
    (regularised by ``1e-9`` of its trace) and the between-class scatter
    ``S_b = M M^T`` (``M``: the class means, each times the square root of its count)
    give the generalised eigenvectors of ``S_b w = lambda S_w w``, largest first: the
    ``w = S_w^-1 M a`` for the eigenvectors ``a`` of ``M^T S_w^-1 M`` (BLAS-free, by
    :mod:`lncapacity.reproducible`, so that every machine finds the same directions).
    """
    m, d = Xf.shape
    classes = np.unique(y)
    if len(classes) < 2 or m < 3 or not np.isfinite(Xf).all():
        return []
    mu = Xf.mean(axis=0)
    sd = Xf.std(axis=0)
    sd[sd == 0] = 1.0
    Z = (Xf - mu) / sd
    Sw = np.zeros((d, d))
    M = np.zeros((d, len(classes)))
    for j, c in enumerate(classes):
        Zc = Z[y == c]
        mc = Zc.mean(axis=0)
        Sw += gram(Zc - mc)
        M[:, j] = math.sqrt(len(Zc)) * mc
    Sw += np.eye(d) * (1e-9 * np.trace(Sw) + 1e-300)
    try:
        SiM = solve(Sw, M)
    except np.linalg.LinAlgError:
        return []
    K = matmul(M.T, SiM)
    out: list[tuple[fmpq, ...]] = []
    count = min(DATA_DIRECTIONS, len(classes) - 1, d)
    A = top_eigenvectors((K + K.T) / 2, count)
    directions = [matmul(SiM, A[:, t]) / sd for t in range(count)]
    if len(classes) > 2 and directions and np.isfinite(directions[0]).all():
        directions.append(_fewer_runs(directions[0], Xf, y))
    for u in directions:
        if not np.isfinite(u).all() or not np.abs(u).max() > 0:
            continue
        u = u / np.abs(u).max()
        for bits in DATA_BITS:
            w = np.round(u * 2.0**bits) / 2.0**bits
            if not w.any():
                continue
            out.append(_tie_broken(w, bits, Xf))
    return list(dict.fromkeys(out))


def _fewer_runs(u: np.ndarray, Xf: np.ndarray, y: np.ndarray, seed: int = 0) -> np.ndarray:
    """``u`` improved by a seeded random local search for fewer runs (then a wider gap).

    A heuristic refinement of Fisher's direction (which assumes Gaussian classes): at
    most :data:`REFINE_BUDGET` ``/ m`` trials (and 300), the step halved after 20
    failures in a row.
    """
    m = len(Xf)
    trials = min(300, REFINE_BUDGET // max(m, 1))
    rng = np.random.default_rng(seed)
    scale = Xf.std(axis=0)
    scale[scale == 0] = 1.0
    u = u / norm(u * scale)
    best = _float_score(matmul(Xf, u), y)
    step, fails = 0.3, 0
    for _ in range(trials):
        v = u + step * rng.standard_normal(len(u)) / scale
        v = v / norm(v * scale)
        score = _float_score(matmul(Xf, v), y)
        if score < best:
            u, best, fails = v, score, 0
        else:
            fails += 1
            if fails == 20:
                step, fails = step / 2, 0
    return u


def _tie_broken(w: np.ndarray, bits: int, Xf: np.ndarray) -> tuple[fmpq, ...]:
    """``w`` (dyadic, ``bits`` after the point), plus ``delta v`` if ``w^T x`` has ties.

    ``v = (1, 2, ..., d)`` (any fixed vector not orthogonal to the tied differences
    will do; the exact check in :func:`project` rejects a bad one), and ``delta`` a
    power of two below a quarter of the smallest nonzero gap of ``w^T x`` over the
    spread of ``v . x``: the order ``w`` already makes is kept.
    """
    t = np.sort(matmul(Xf, w), kind="stable")
    gaps = np.diff(t)
    exact = [fmpq(int(x), 1 << bits) for x in np.round(w * 2.0**bits)]
    if gaps.size == 0 or gaps.min() > 0:
        return tuple(exact)
    positive = gaps[gaps > 0]
    v = np.arange(1, len(w) + 1, dtype=float)
    spread = float(np.ptp(matmul(Xf, v))) or 1.0
    if positive.size == 0:
        return tuple(exact)
    e = math.frexp(float(positive.min()) / (4 * spread))[1] - 1  # floor(log2), exactly
    delta = fmpq(2) ** e if e >= 0 else fmpq(1, 2**-e)
    return tuple(wi + delta * int(vi) for wi, vi in zip(exact, v, strict=True))


def _distinct(
    w: Sequence[fmpq], X: Sequence[Sequence[fmpq]], Xf: np.ndarray, tf: np.ndarray
) -> bool:
    """Whether the exact projections ``w^T x`` are pairwise distinct (decided exactly).

    ``Xf`` are the points and ``tf`` the projections in float64.  Each float
    projection is within ``(d + 2) u |w|_1 max |x|`` of the exact value (inputs
    rounded, then ``d`` products and sums; ``u = 2^-53``), so equal exact values
    have floats at most twice that apart: they lie in one cluster of float-sorted
    values with neighbours that close (the bound is doubled again), and only
    clusters are compared exactly.  Non-finite floats compare everything exactly.
    """
    m, d = len(X), len(w)
    if not (np.isfinite(tf).all() and np.isfinite(Xf).all()):
        return len(set(_dot(w, X))) == m
    wf = np.abs(_floats([w])[0])
    tol = 4 * (d + 2) * 2.0**-53 * float(wf.sum()) * float(np.abs(Xf).max()) + 2.0**-1070
    order = np.argsort(tf, kind="stable")
    close = np.r_[False, np.diff(tf[order]) <= tol, False]
    # clusters: maximal stretches order[lo..hi] of close neighbours
    edges = np.flatnonzero(np.diff(close.astype(np.int8)))
    for lo, hi in zip(edges[::2], edges[1::2], strict=True):
        cluster = [X[int(i)] for i in order[lo : hi + 1]]
        if len(set(_dot(w, cluster))) < len(cluster):
            return False
    return True


def _floats(rows: Sequence[Sequence[fmpq]]) -> np.ndarray:
    return np.asarray([[float(v) for v in row] for row in rows])


def _dot(w: Sequence[fmpq], X: Sequence[Sequence[fmpq]]) -> list[fmpq]:
    return [sum((wi * xi for wi, xi in zip(w, x, strict=True)), fmpq(0)) for x in X]


def _float_score(t: np.ndarray, y: np.ndarray) -> tuple[bool, int, float]:
    """(gap unresolvable, runs, -smallest different-label gap relative to the spread)."""
    order = np.argsort(t, kind="stable")
    ts, ls = t[order], y[order]
    change = ls[1:] != ls[:-1]
    spread = float(ts[-1] - ts[0]) or 1.0
    gaps = np.diff(ts)[change]
    gap = float(gaps.min()) / spread if gaps.size else 1.0
    return gap < RESOLVABLE, int(change.sum()) + 1, -gap
