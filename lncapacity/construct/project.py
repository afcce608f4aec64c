"""Step 1 of the Projection Merge Algorithm: project the points to a line.

Any direction ``w`` with all ``w . x_k`` distinct will do (seed 000; note
math.md section 3): a direction is bad only if it is orthogonal to one of the
finitely many differences ``x_a - x_b``.  Among a few candidates with small
integer entries we keep a valid one with the fewest label runs along the line
(every fold removes at most one run, so fewer runs never cost layers), breaking
ties by the smallest gap between neighbours of different labels, relative to the
spread.  The moment-curve directions ``(1, k, k^2, ...)`` guarantee termination:
for each difference, at most ``d - 1`` values of ``k`` are bad.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator, Sequence

from flint import fmpq

from ..errors import ConstructionError


def runs(labels: Sequence[object]) -> int:
    """The number of maximal blocks of equal consecutive labels."""
    return sum(1 for i in range(len(labels)) if i == 0 or labels[i] != labels[i - 1])


def _candidates(d: int, seed: int, count: int) -> Iterator[tuple[int, ...]]:
    for i in range(d):
        yield tuple(int(i == j) for j in range(d))
    rng = random.Random(seed)
    for _ in range(count):
        w = tuple(rng.randint(-8, 8) for _ in range(d))
        if any(w):
            yield w


def _moment_curve(d: int) -> Iterator[tuple[int, ...]]:
    k = 2
    while True:
        yield tuple(k**j for j in range(d))
        k += 1


def project(
    X: Sequence[Sequence[fmpq]], y: Sequence[int], *, seed: int = 0, candidates: int = 24
) -> tuple[tuple[fmpq, ...], list[fmpq]]:
    """A direction ``w`` (exact) with distinct projections, and the projections ``w . x``."""
    m, d = len(X), len(X[0])
    best: tuple[tuple[int, float], tuple[int, ...], list[fmpq]] | None = None
    for w in _candidates(d, seed, 0 if d == 1 else candidates):
        t = [sum((fmpq(wi) * xi for wi, xi in zip(w, x, strict=True)), fmpq(0)) for x in X]
        score = _score(t, y)
        if score is not None and (best is None or score < best[0]):
            best = (score, w, t)
    if best is None:
        for count, w in enumerate(_moment_curve(d)):
            t = [sum((fmpq(wi) * xi for wi, xi in zip(w, x, strict=True)), fmpq(0)) for x in X]
            if _score(t, y) is not None:
                best = ((0, 0.0), w, t)
                break
            if count > m * m * d:  # cannot happen for distinct points
                raise ConstructionError("no direction separates the points")
    assert best is not None
    return tuple(fmpq(wi) for wi in best[1]), best[2]


def _score(t: Sequence[fmpq], y: Sequence[int]) -> tuple[int, float] | None:
    """(runs, -relative smallest different-label gap), or None if two projections tie."""
    order = sorted(range(len(t)), key=t.__getitem__)
    ts = [t[i] for i in order]
    if any(a == b for a, b in itertools.pairwise(ts)):
        return None
    labels = [y[i] for i in order]
    spread = float(ts[-1] - ts[0]) if len(ts) > 1 else 1.0
    gaps = [
        float(b - a)
        for a, b, la, lb in zip(ts, ts[1:], labels, labels[1:], strict=False)
        if la != lb
    ]
    return runs(labels), -(min(gaps) / spread if gaps else 1.0)
