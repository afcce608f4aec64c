"""Points on a line, exactly and fast: projections as integers on one scale, sorted.

The certificates by the margin theorems (:mod:`.steps`, :mod:`.blocks`) compare every point's
projection ``t = r . x`` with the centres of the net's steps, exactly.  Rationals
(:class:`flint.fmpq`) compare and sort slowly (about 30 us an element in a sort); so each list
of rationals is put on one scale, ``v_i = N_i / D`` with integers ``N_i`` and the least common
denominator ``D``, and the integers (Python's, of any size) are sorted by float keys first
(NumPy), the order then checked, and repaired where needed, in exact integer comparisons.
Nothing here is a float decision: a float only proposes an order that integers confirm.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from flint import fmpq

MAX_SCALE_BITS = 4096
"""The largest common denominator (in bits) a list of rationals is put on: beyond it (rationals
with many unrelated denominators) the certificate by the theorem declines and the generic pass
decides."""

KEY_BITS = 1000
"""Integers longer than this are shifted right before their float keys are taken (floats end
near 2^1024); shifting is monotone, so the keys still propose an order."""


def on_one_scale(values: Sequence[fmpq]) -> tuple[np.ndarray, int] | None:
    """``(N, D)`` with ``values[i] = N[i] / D`` exactly (``N`` an object array of Python ints,
    ``D > 0`` the least common denominator), or None when ``D`` has more than
    :data:`MAX_SCALE_BITS` bits."""
    nums = [int(v.p) for v in values]
    dens = [int(v.q) for v in values]
    distinct = set(dens)
    D = math.lcm(*distinct) if distinct else 1
    if D.bit_length() > MAX_SCALE_BITS:
        return None
    factor = {q: D // q for q in distinct}
    out = np.empty(len(nums), dtype=object)
    out[:] = [n * factor[q] for n, q in zip(nums, dens, strict=True)]
    return out, D


def projections(r: Sequence[fmpq], X: Sequence[Sequence[fmpq]]) -> tuple[np.ndarray, int] | None:
    """The projections of the points on ``r`` on one scale, or None when the points'
    coordinates need too long a common denominator (:func:`on_one_scale`).

    ``(N, D)`` with ``r . X[i] = N[i] / D`` exactly for every point (``D > 0``)."""
    columns = []
    D = 1
    for j, rj in enumerate(r):
        if rj == 0:
            continue
        got = on_one_scale([x[j] for x in X])
        if got is None:
            return None
        N, Dj = got
        columns.append((rj, N, Dj))
        D = math.lcm(D, Dj * int(rj.q))
    if D.bit_length() > MAX_SCALE_BITS:
        return None
    total = np.zeros(len(X), dtype=object)
    for rj, N, Dj in columns:
        # rj N / Dj = (p / q) N / Dj = p (D / (q Dj)) N / D
        total = total + (int(rj.p) * (D // (int(rj.q) * Dj))) * N
    return total, D


def exact_order(values: np.ndarray) -> np.ndarray:
    """The indices that sort the integers ``values`` (object array), ascending; ties in their
    original order.

    Float keys (each integer correctly rounded, after a common right shift for long ones: a
    monotone map) are sorted by NumPy; runs of equal keys are then sorted exactly, and the
    whole order is checked in integer comparisons (a full exact sort if it fails, which
    monotone keys cannot make happen)."""
    m = len(values)
    if m < 2:
        return np.arange(m)
    longest = max(int(v).bit_length() for v in (values.max(), values.min()))
    shift = max(0, longest - KEY_BITS)
    keys = (values >> shift if shift else values).astype(np.float64)
    order = np.argsort(keys, kind="stable")
    ks = keys[order]
    same = np.flatnonzero(ks[1:] == ks[:-1])
    if len(same):
        # runs of equal keys: [start, end) in the sorted order
        starts = same[np.r_[True, same[1:] != same[:-1] + 1]]
        ends = same[np.r_[same[1:] != same[:-1] + 1, True]] + 2
        for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
            order[a:b] = sorted(order[a:b].tolist(), key=values.__getitem__)
    s = values[order]
    if not (s[1:] >= s[:-1]).all():  # cannot happen (monotone keys); exact then
        order = np.asarray(sorted(range(m), key=values.__getitem__), dtype=np.intp)
    return order


def below(points: np.ndarray, centres: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For integers ``points`` and sorted integers ``centres`` (object arrays, one scale):
    ``(k, on)``, ``k[i]`` the number of centres strictly below ``points[i]`` and ``on[i]``
    whether ``points[i]`` equals a centre.  By one exact sort of both together."""
    m, g = len(points), len(centres)
    both = np.concatenate([centres, points])
    order = exact_order(both)  # stable: a centre before a point equal to it
    is_centre = order < g
    seen = np.cumsum(is_centre)  # centres at or before each position
    k = np.empty(m, dtype=np.intp)
    pos = np.flatnonzero(~is_centre)
    k[order[pos] - g] = seen[pos]
    on = np.zeros(m, dtype=bool)
    hit = k > 0
    on[hit] = centres[k[hit] - 1] == points[hit]  # a centre equal to the point sorts first
    k[on] -= 1  # that centre is not strictly below
    return k, on


def as_floats(values: np.ndarray, scale: int) -> np.ndarray | None:
    """``values / scale`` (object integers over a positive integer), each correctly rounded to
    float64 (Python's integer true division); None if one is beyond the float range."""
    try:
        return (values / scale).astype(np.float64) if len(values) else np.empty(0)
    except OverflowError:
        return None
