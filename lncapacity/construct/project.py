"""Step 1 of the Projection Merge Algorithm: project the points to a line.

Any direction ``w`` with all ``w . x_k`` distinct will do (seed 000; note
math.md section 3): a direction is bad only if it is orthogonal to one of the
finitely many differences ``x_a - x_b``.  Among a few candidates with small
integer or short dyadic entries we keep a valid one with the fewest label runs
along the line (a fold removes at most one run, so fewer runs never cost layers),
breaking ties by the smallest gap between neighbours of different labels,
relative to the spread; directions where that gap is below :data:`RESOLVABLE`
(float arithmetic could not tell the labels apart) come last, and integer
directions come before dyadic ones that do as well.  The moment-curve
directions ``(1, k, k^2, ...)`` guarantee termination: for each difference, at
most ``d - 1`` values of ``k`` are bad.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator, Sequence

import numpy as np
from flint import fmpq

from ..errors import ConstructionError

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


def project(
    X: Sequence[Sequence[fmpq]], y: Sequence[int], *, seed: int = 0, candidates: int = 24
) -> tuple[tuple[fmpq, ...], list[fmpq]]:
    """A direction ``w`` (exact) with distinct projections, and the projections ``w . x``.

    Candidates are ranked in floating point (a heuristic only), then the best is
    checked exactly; the first with exactly distinct projections is taken.
    """
    m, d = len(X), len(X[0])
    W = list(_candidates(d, seed, 0 if d == 1 else candidates))
    P = _floats(X) @ _floats(W).T
    labels = np.asarray(y)

    def rank(k: int) -> tuple[bool, int, bool, float]:
        # short integer weights first when they do as well (readable nets)
        unresolvable, count, gap = _float_score(P[:, k], labels)
        return unresolvable, count, any(wi.q != 1 for wi in W[k]), gap

    ranked = sorted(range(len(W)), key=rank)
    for w in itertools.chain((W[k] for k in ranked), _moment_curve(d)):
        t = _dot(w, X)
        if len(set(t)) == m:
            return w, t
    raise ConstructionError("no direction separates the points")  # pragma: no cover


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
