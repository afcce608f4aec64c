"""Executable check of proofs/ln_g_hessian.md: the closed form and the proposition."""

import sympy as sp
from flint import fmpq

from lncapacity.theory.hessian import (
    eps_counterexample,
    hessian_measure_exact,
    hessian_ratio,
    layer_norm_groups,
    ln_hessian,
    ratio_lower_bound,
)

POINT = [fmpq(1), fmpq(2), fmpq(4), fmpq(-3), fmpq(1, 2), fmpq(0)]


def test_closed_form_equals_exact_symbolic_hessians():
    for g in (1, 2, 3):
        for centre in (True, False):
            for eps in (fmpq(0), fmpq(1, 10)):
                e = sp.Rational(int(eps.p), int(eps.q))
                exact = hessian_measure_exact(
                    lambda v, g=g, c=centre, e=e: layer_norm_groups(v, g, e, c), POINT
                )
                closed = ln_hessian(POINT, g, eps, centre)
                assert exact == sp.Rational(int(closed.p), int(closed.q))


def test_eps_zero_closed_form_symbolically_for_d_3():
    x = sp.symbols("x1:4", real=True)
    y = layer_norm_groups(list(x), 1, 0, True)
    H = sum(sum(e**2 for e in sp.hessian(yi, x)) for yi in y)
    rho2 = sum((v - sum(x) / 3) ** 2 for v in x)
    # at a symbolic point the measure is 3 d (d - 2) / rho^4 = 9 / rho^4
    val = {x[0]: sp.Rational(3, 7), x[1]: -2, x[2]: sp.Rational(5, 3)}
    assert sp.simplify(H.subs(val) - (9 / rho2**2).subs(val)) == 0


def test_slope_used_by_the_adversarial_search_is_the_derivative():
    from lncapacity.theory.hessian import _group_term, _group_term_slope

    s, k, n, e = sp.symbols("s k n e", positive=True)
    assert sp.simplify(sp.diff(_group_term(s, k, n, e), s) - _group_term_slope(s, k, n, e)) == 0


def test_affine_maps_have_zero_measure():
    assert hessian_measure_exact(lambda v: [2 * v[0] - v[1] + 3, v[1] + v[2]], [1, 2, 3]) == 0


def test_tensor_norm_identity():
    # a^2 (3n + 6) rho^2 + 6 a b rho^4 + b^2 rho^6 with a = -r^3/k, b = 3 r^5 / k^2
    r, k, n, rho = sp.symbols("r k n rho", positive=True)
    a, b = -(r**3) / k, 3 * r**5 / k**2
    q = r**2 * rho**2 / k
    lhs = a**2 * (3 * n + 6) * rho**2 + 6 * a * b * rho**4 + b**2 * rho**6
    rhs = r**4 / k * ((3 * n + 6) * q - 18 * q**2 + 9 * q**3)
    assert sp.simplify(lhs - rhs) == 0
    # eps = 0 means q = 1 and r^2 = k / rho^2
    at0 = rhs.subs(r, sp.sqrt(k) / rho)
    assert sp.simplify(at0 - k * (3 * n - 3) / rho**4) == 0


def test_within_plus_between_and_convexity_steps():
    # (i) |P x|^2 = sum_G |P_G x_G|^2 + k sum_G (m_G - m)^2, here g = 2, k = 3
    x = sp.symbols("x1:7", real=True)
    m = sum(x) / 6
    groups = [x[:3], x[3:]]
    lhs = sum((v - m) ** 2 for v in x)
    within = sum(sum((v - sum(G) / 3) ** 2 for v in G) for G in groups)
    between = 3 * sum((sum(G) / 3 - m) ** 2 for G in groups)
    assert sp.expand(lhs - within - between) == 0
    # (ii) power mean: (1/a^2 + 1/b^2 + 1/c^2) (a + b + c)^2 >= 27, g = 3
    a, b, c = sp.symbols("a b c", positive=True)
    expr = sp.expand(
        (b**2 * c**2 + a**2 * c**2 + a**2 * b**2) * (a + b + c) ** 2 - 27 * a**2 * b**2 * c**2
    )
    assert sp.expand(expr.subs({a: 1, b: 1, c: 1})) == 0  # equality at equal spreads
    for vals in [(1, 2, 3), (1, 1, 5), (sp.Rational(1, 3), 7, 2)]:
        assert expr.subs(dict(zip((a, b, c), vals, strict=True))) > 0


def test_bound_algebra():
    d, g = sp.symbols("d g", positive=True)
    bound = g * (d - 2 * g) / (d - 2)
    assert sp.simplify(bound - 1 - (g - 1) * (d - 2 * g - 2) / (d - 2)) == 0
    at_quarter = bound.subs(g, d / 4)
    assert sp.simplify(at_quarter - d**2 / (8 * (d - 2))) == 0
    assert sp.simplify(at_quarter - d / 8 - d / (4 * (d - 2))) == 0
    k = sp.Symbol("k", positive=True)  # k (k - 2) g^3 / (d (d - 2)) with k = d / g
    assert sp.simplify((k * (k - 2) * g**3 / (d * (d - 2))).subs(k, d / g) - bound) == 0


def test_bound_is_attained_by_equal_groups():
    for d, g in [(6, 2), (12, 4), (12, 3), (24, 6), (64, 16)]:
        k = d // g
        x = [fmpq(j) for _ in range(g) for j in range(k)]  # same spread, same mean in each group
        assert hessian_ratio(x, g) == ratio_lower_bound(d, g)
        assert ratio_lower_bound(d, g) >= 1
        if 4 * g == d:
            assert ratio_lower_bound(d, g) > fmpq(d, 8)


def test_counterexamples_outside_the_assumptions():
    eps = fmpq(1, 100000)
    for d, g in [(12, 3), (12, 4), (64, 16)]:
        x = eps_counterexample(d, g)
        assert hessian_ratio(x, g, eps) < 1 and hessian_ratio(x, g, 0) >= ratio_lower_bound(d, g)
    block = [fmpq(G) for G in range(3) for _ in range(4)]
    assert ln_hessian(block, 3, eps) == 0 and ln_hessian(block, 1, eps) > 0
    pairs = [fmpq(j * j + 1, 3) for j in range(8)]  # groups of size 2 (g = d/2)
    assert ln_hessian(pairs, 4) == 0 and ln_hessian(pairs, 1) > 0
    near_ones = [1 + fmpq(j, 10**6) for j in range(12)]  # uncentred LN-G against LN
    assert hessian_ratio(near_ones, 4, centre=False) < 1
    # ... while against RMS normalisation over all features it is >= g (d - g) / (d - 1)
    for g in (1, 2, 3, 4, 6):
        r = ln_hessian(near_ones, g, centre=False) / ln_hessian(near_ones, 1, centre=False)
        assert r >= fmpq(g * (12 - g), 11)
