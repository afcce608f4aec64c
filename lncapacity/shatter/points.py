"""The points shattered and their labelings: labeling ``k`` gives point ``i`` the label
``(k >> i) & 1``."""

from __future__ import annotations

import random
from collections.abc import Sequence

from flint import fmpq

from ..data import PointSet
from ..errors import InputError
from .records import MAX_POINTS


def default_points(depth: int) -> list[tuple[fmpq, ...]]:
    """``L + 2`` equally spaced points on a line: ``0, 1, ..., L + 1``."""
    return [(fmpq(k),) for k in range(depth + 2)]


def random_points(n: int, dim: int, seed: int) -> list[tuple[fmpq, ...]]:
    """``n`` distinct random points, coordinates multiples of 1/16 in ``[-5/2, 5/2]``."""
    if n < 1 or dim < 1:
        raise InputError("--random and --dim must be positive")
    if n > MAX_POINTS:
        raise InputError(f"--random {n}: beyond the limit of {MAX_POINTS} points (2^{n} labelings)")
    if dim < 2 and n > 81:  # 81 multiples of 1/16 in [-5/2, 5/2]
        raise InputError(f"--random {n} --dim {dim}: only 81 distinct points exist")
    rng, pts = random.Random(seed), []
    while len(pts) < n:
        p = tuple(fmpq(rng.randint(-40, 40), 16) for _ in range(dim))
        if p not in pts:
            pts.append(p)
    return pts


def labels_of(k: int, m: int) -> list[int]:
    """Labeling number ``k``: point ``i`` has label ``(k >> i) & 1``."""
    return [(k >> i) & 1 for i in range(m)]


def _point_set(X: Sequence[tuple[fmpq, ...]], y: Sequence[int]) -> PointSet:
    return PointSet(tuple(X), tuple(y), tuple((i,) for i in range(len(X))), "row", "points")
