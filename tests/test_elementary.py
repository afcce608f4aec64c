"""The elementary functions from + - * / and sqrt: accurate, and built from nothing else.

Each function is measured against mpmath at 120 bits on a few thousand arguments (worst
error in ulps of the true value), and run with NumPy's and ``math``'s transcendental
functions made to raise: the same bits on every processor needs that they are never used.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from lncapacity import elementary as el


def _worst_ulps(got: np.ndarray, true: list[mpmath.mpf]) -> float:
    worst = 0.0
    for g, t in zip(got, true, strict=True):
        size = np.spacing(abs(float(t))) or 5e-324
        worst = max(worst, float(abs(mpmath.mpf(float(g)) - t)) / size)
    return worst


rng = np.random.default_rng(0)
ANGLES = np.r_[rng.uniform(-12, 12, 3000), rng.uniform(-1e-3, 1e-3, 100), np.linspace(-7, 7, 301)]
REALS = np.r_[rng.standard_normal(2000) * 10, rng.standard_normal(100) * 1e-8]
POSITIVE = np.r_[10 ** rng.uniform(-300, 300, 2000), rng.uniform(0.5, 2, 1000)]


@pytest.mark.parametrize(
    ("name", "args", "true", "ulps"),
    [
        ("sin", (ANGLES,), lambda x: mpmath.sin(x), 2),
        ("cos", (ANGLES,), lambda x: mpmath.cos(x), 2),
        ("tan", (ANGLES[np.abs(np.cos(ANGLES)) > 1e-3],), lambda x: mpmath.tan(x), 4),
        ("atan", (np.r_[REALS, 10 ** rng.uniform(-300, 300, 300)],), lambda x: mpmath.atan(x), 2),
        ("atan2", (REALS, REALS[::-1] * 1e-3), lambda y, x: mpmath.atan2(y, x), 2),
        ("atan2", (REALS, REALS[::-1]), lambda y, x: mpmath.atan2(y, x), 2),
        ("exp", (rng.uniform(-700, 700, 2000),), lambda x: mpmath.exp(x), 2),
        ("log", (POSITIVE[np.abs(POSITIVE - 1) > 1e-9],), lambda x: mpmath.log(x), 3),
        ("log2", (POSITIVE[np.abs(POSITIVE - 1) > 1e-9],), lambda x: mpmath.log(x, 2), 3),
    ],
)
def test_within_a_few_ulps_of_the_true_value(name, args, true, ulps):
    got = getattr(el, name)(*args)
    with mpmath.workprec(120):
        exact = [true(*(mpmath.mpf(float(a)) for a in row)) for row in zip(*args, strict=True)]
    assert _worst_ulps(got, exact) <= ulps


def test_special_values_as_numpy_gives_them():
    zeros = [0.0, -0.0]
    for y in [*zeros, 1.0, -1.0]:
        for x in [*zeros, 1.0, -1.0]:
            got, want = el.atan2(y, x), float(np.arctan2(y, x))
            assert got == want and math.copysign(1, got) == math.copysign(1, want), (y, x)
    assert math.isnan(el.atan2(math.nan, 1.0))
    assert el.log(0.0) == -math.inf and el.log(math.inf) == math.inf
    assert math.isnan(el.log(-1.0)) and math.isnan(el.log2(math.nan))
    assert el.exp(-1000.0) == 0.0 and el.exp(1000.0) == math.inf and math.isnan(el.exp(math.nan))
    assert [el.log2(2.0**k) for k in range(-1074, 1024, 97)] == list(range(-1074, 1024, 97))
    assert el.exp(0.0) == 1.0 and el.sin(0.0) == 0.0 and el.cos(0.0) == 1.0


def test_numbers_in_floats_out_arrays_in_arrays_out():
    assert type(el.atan2(1.0, 2.0)) is float and type(el.angle_key(1, 2)) is float
    assert el.sin(np.zeros((2, 3))).shape == (2, 3)
    assert el.atan2(np.ones(4), 1.0).shape == (4,)


def test_angle_key_orders_directions_as_arctan2():
    y, x = rng.standard_normal(5000), rng.standard_normal(5000)
    y[:50], x[50:100] = 0.0, 0.0  # on the axes, either side
    key, angle = el.angle_key(y, x), np.arctan2(y, x)
    assert (key >= -2).all() and (key <= 2).all()
    order = np.argsort(key, kind="stable")
    assert (np.diff(angle[order]) >= -1e-15).all()
    # a quarter turn adds 1 (4 a whole turn; the circle search's turns rely on it)
    x, y = rng.standard_normal((2, 100))
    quarter = np.mod(el.angle_key(x, -y) - el.angle_key(y, x), 4)
    assert np.allclose(quarter, 1.0, rtol=0, atol=1e-15)
    assert el.angle_key(0.0, 0.0) == 0.0


def test_geomspace_ends_exactly_and_is_close_between():
    # grid values of the fold searches: exact ends; between, exp(i / 19 log(ratio)) carries
    # log's error times up to 8
    got = el.geomspace(1e-2, 30.0, 20)
    assert got[0] == 1e-2 and got[-1] == 30.0
    assert np.allclose(got, np.geomspace(1e-2, 30.0, 20), rtol=2e-15, atol=0)


def test_no_transcendental_function_of_numpy_or_math_is_called(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a transcendental function was called")

    for name in ("arctan2", "arctan", "tan", "sin", "cos", "exp", "expm1", "log", "log1p", "log2"):
        monkeypatch.setattr(np, name, refuse)
    for name in ("atan2", "atan", "tan", "sin", "cos", "exp", "log", "log2", "pow", "hypot"):
        monkeypatch.setattr(math, name, refuse)
    x = np.linspace(-3, 3, 7)
    for f in (el.sin, el.cos, el.tan, el.atan, el.exp):
        f(x)
    el.log(np.abs(x) + 1)
    el.log2(np.abs(x) + 1)
    el.atan2(x, x[::-1])
    el.angle_key(x, x[::-1])
    el.geomspace(1e-4, 30.0, 22)
