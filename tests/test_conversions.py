"""Exact numbers and balls to floats: correctly rounded, whichever route the conversion takes.

:func:`lncapacity.arith.to_float` divides the integers of an exact rational (Python's true
division rounds correctly); :func:`~lncapacity.arith.to_floats` does the same a list at a
time, and a ball's midpoint goes through python-flint's own conversion in the normal range.
Each is compared here with the exact rational's division, to the last bit, near ties, at
every magnitude and beyond the float range.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from flint import arb, fmpq

from lncapacity.arith import arb_to_fmpq, precision, to_float, to_floats


def _rationals(seed: int, n: int) -> list[fmpq]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        p = rng.randint(-(10 ** rng.randint(0, 40)), 10 ** rng.randint(0, 40))
        q = rng.randint(1, 10 ** rng.randint(0, 40))
        out.append(fmpq(p, q) * fmpq(2) ** rng.randint(-1200, 1200))
    return out


def _exact(q: fmpq) -> float:
    try:
        return int(q.p) / int(q.q)
    except OverflowError:
        return math.inf if q > 0 else -math.inf


def _bits(values) -> bytes:
    return np.array(values, dtype=np.float64).tobytes()


def test_to_floats_is_to_float_of_each():
    values = [*_rationals(1, 1000), fmpq(10) ** 400, -(fmpq(10) ** 400), fmpq(1, 10**400)]
    assert _bits(to_floats(values)) == _bits([to_float(v) for v in values])
    assert _bits(to_floats(values)) == _bits([_exact(v) for v in values])
    mixed = [fmpq(1, 3), 2, 0.5]
    assert to_floats(mixed) == [to_float(v) for v in mixed]


@pytest.mark.parametrize("bits", [53, 128, 1024])
def test_a_ball_is_its_midpoint_correctly_rounded(bits):
    values = _rationals(2, 1000)
    ties = [fmpq(2**53 + 2 * k + 1) * fmpq(2) ** s for k in range(4) for s in (0, 60, -60, -1070)]
    with precision(bits):
        balls = [arb(v) for v in values + ties]
        balls += [b + arb(0, fmpq(1, 2**bits)) for b in balls[:100]]  # with radii
        expected = [_exact(arb_to_fmpq(b.mid())) for b in balls]
    assert _bits([to_float(b) for b in balls]) == _bits(expected)
    assert to_float(arb(0)) == 0.0 and to_float(arb(0, 1)) == 0.0
