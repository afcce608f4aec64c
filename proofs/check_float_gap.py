"""Executable check of proofs/float_gap.md: how one layer changes a gap, and the PMA's rate."""

import itertools

import pytest
import sympy as sp
from flint import arb, fmpq

from lncapacity.arith import precision
from lncapacity.construct import Chain
from lncapacity.construct.pma import pma

s, s1, s2, t, th1, th2, psi = sp.symbols("s s1 s2 t theta1 theta2 psi", real=True)
A, S, beta, beta_eff = sp.symbols("A S beta beta_eff", positive=True)


def test_gap_is_a_product_of_sines():
    gap = A * sp.cos(th1 - psi) - A * sp.cos(th2 - psi)
    product = 2 * A * sp.sin((th1 + th2) / 2 - psi) * sp.sin((th2 - th1) / 2)
    assert sp.simplify((gap - product).rewrite(sp.exp)) == 0


def test_plain_fold_in_the_distance_to_the_centre():
    """gamma = 0: p' = A sqrt3 beta_eff / sqrt(s^2 + 3 beta_eff^2), A = 3 sqrt2 beta/beta_eff."""
    e = 2 * S**2 * (beta_eff**2 - beta**2)  # beta_eff^2 = beta^2 + eps/(2 S^2)
    read = S * 6 * beta / sp.sqrt(S**2 * (2 * s**2 + 6 * beta**2) / 3 + e)
    amp = 3 * sp.sqrt(2) * beta / beta_eff
    assert sp.simplify(read - amp * sp.sqrt(3) * beta_eff / sp.sqrt(s**2 + 3 * beta_eff**2)) == 0
    # and it is A cos(theta) with tan(theta) = s / (sqrt3 beta_eff)
    assert sp.simplify(read - amp * sp.cos(sp.atan(s / (sp.sqrt(3) * beta_eff)))) == 0


def test_exact_gap_and_the_quadratic_bound():
    b = beta
    q1, q2 = s1**2 + 3 * b**2, s2**2 + 3 * b**2
    f = lambda x: A * sp.sqrt(3) * b / sp.sqrt(x**2 + 3 * b**2)  # noqa: E731
    exact = (
        A
        * sp.sqrt(3)
        * b
        * (s2**2 - s1**2)
        / (sp.sqrt(q1) * sp.sqrt(q2) * (sp.sqrt(q1) + sp.sqrt(q2)))
    )
    assert sp.simplify(f(s1) - f(s2) - exact) == 0
    # q1, q2 >= 3 beta^2: the denominator is >= 2 (3 beta^2)^(3/2),
    # which gives A (s2^2 - s1^2) / (6 beta^2)
    assert (
        sp.simplify(A * sp.sqrt(3) * b / (2 * (3 * b**2) ** sp.Rational(3, 2)) - A / (6 * b**2))
        == 0
    )
    # and the bound is the limit near the centre
    ratio = exact / (A * (s2**2 - s1**2) / (6 * b**2))
    assert sp.limit(sp.limit(ratio, s1, 0), s2, 0) == 1


def test_derivative_and_its_sharp_maximum():
    th = sp.atan(s / (sp.sqrt(3) * beta))
    p = A * sp.cos(th - psi)
    claimed = -(A / (sp.sqrt(3) * beta)) * sp.sin(th - psi) * sp.cos(th) ** 2
    assert sp.simplify(sp.diff(p, s) - claimed) == 0
    # sin(theta) cos(theta)^2 = t / (1 + t^2)^(3/2), t = tan(theta); its square is <= 4/27:
    # 4 (1 + t^2)^3 - 27 t^2 = (2 t^2 - 1)^2 (t^2 + 4), equality at t = 1/sqrt2
    assert sp.expand(4 * (1 + t**2) ** 3 - 27 * t**2 - (2 * t**2 - 1) ** 2 * (t**2 + 4)) == 0
    g = t / (1 + t**2) ** sp.Rational(3, 2)
    assert sp.simplify(g.subs(t, 1 / sp.sqrt(2)) - 2 / (3 * sp.sqrt(3))) == 0
    # so |dp'/ds| <= (A / (sqrt3 beta)) 2/(3 sqrt3) = 2A / (9 beta) when psi = 0
    assert sp.simplify(A / (sp.sqrt(3) * beta) * 2 / (3 * sp.sqrt(3)) - 2 * A / (9 * beta)) == 0


def fold_map(c, b, amp):
    """The plain fold A sqrt3 b / sqrt((p - c)^2 + 3 b^2) on balls (b = beta_eff)."""
    return lambda p: amp * arb(3).sqrt() * b / ((p - c) ** 2 + 3 * b**2).sqrt()


def test_lipschitz_constant_is_attained():
    with precision(200):
        b, amp = arb(1), arb(1)
        f = fold_map(arb(0), b, amp)
        lip = 2 * amp / (9 * b)
        star = fmpq(12247, 10000)  # sqrt(3/2), where tan(theta) = 1/sqrt2
        h = fmpq(1, 10**4)
        quotient = (f(arb(star - h)) - f(arb(star + h))) / (2 * h)
        assert quotient < lip and quotient > lip * (1 - arb(10) ** -6)


def min_gap(vals, y):
    """The smallest gap between values of different labels (certified sort of the balls)."""
    order = sorted(range(len(vals)), key=lambda k: vals[k].mid())
    for i, j in itertools.pairwise(order):
        if y[i] != y[j]:
            assert vals[i] < vals[j]
    return min(vals[j] - vals[i] for i, j in itertools.pairwise(order) if y[i] != y[j])


@pytest.mark.parametrize("eps", [fmpq(0), fmpq(1, 100000)])
def test_pma_layers_respect_both_bounds(eps):
    """Package PMA, alternating m = 12: every pair, every layer, certified in balls."""
    m = 12
    y = [k % 2 for k in range(m)]
    chain = Chain([fmpq(k) for k in range(m)], eps)
    pma(chain, y)
    assert len(chain.steps) == m - 2
    with precision(chain.prec + 64):
        vals = [arb(k) for k in range(m)]
        for step in chain.steps:
            assert step.read == (1, 0)
            S_, b_ = arb(step.scale), arb(step.offset)
            b_eff = (b_**2 + arb(eps) / (2 * S_**2)).sqrt()
            amp = 3 * arb(2).sqrt() * b_ / b_eff
            new = [step.ball_map(eps)(p) for p in vals]
            mine = fold_map(arb(step.centre), b_eff, amp)
            assert all(abs(n - mine(p)) < arb(2) ** -100 for n, p in zip(new, vals, strict=True))
            lip = 2 * amp / (9 * b_eff)
            for i, j in itertools.combinations(range(m), 2):
                si, sj = vals[i] - arb(step.centre), vals[j] - arb(step.centre)
                dn, d = abs(new[i] - new[j]), abs(vals[i] - vals[j])
                if not d > 0:  # merged by an earlier fold: equal values stay equal
                    assert dn < arb(2) ** -100
                    continue
                assert dn <= lip * d
                lo, hi = sorted((abs(si), abs(sj)), key=lambda z: z.mid())
                if lo < hi:
                    assert dn <= amp * (hi**2 - lo**2) / (6 * b_eff**2)
                else:  # a mirror pair about the centre: merged, up to the balls' width
                    assert dn < arb(2) ** -100
            # so in particular the smallest different-label gap
            assert min_gap(new, y) <= lip * min_gap(vals, y)
            vals = new


def exact_pma(m, prec):
    """The paper's PMA on 0..m-1, alternating labels: exact midpoints, offset D/sqrt3."""
    with precision(prec):
        vals = [arb(k) for k in range(m)]  # sorted, alternating
        rel = [min(b - a for a, b in itertools.pairwise(vals)) / (m - 1)]
        amp = 3 * arb(2).sqrt()
        while len(vals) > 2:
            c, half = (vals[0] + vals[2]) / 2, (vals[2] - vals[0]) / 2
            b = half / arb(3).sqrt()
            f = fold_map(c, b, amp)
            new = [f(p) for p in vals]
            lip = 2 * amp / (9 * b)
            # far values reversed, the merged pair, the value between: still alternating
            out = [new[k] for k in range(len(vals) - 1, 2, -1)] + [new[0], new[1]]
            assert all(a < z for a, z in itertools.pairwise(out))
            assert abs(new[0] - new[2]) < arb(2) ** (-prec // 2)  # p_i and p_j merge
            g_before = min(z - a for a, z in itertools.pairwise(vals))
            g_after = min(z - a for a, z in itertools.pairwise(out))
            assert g_after <= lip * g_before
            rel.append(g_after / amp)
            vals = out
        return rel


def log2(x):
    return x.log() / arb(2).log()


def test_pma_bits_lost_per_layer():
    """The numbers quoted in float_gap.md (rounded to 0.01 bit), certified."""
    for m, first, smallest, where in ((12, -6.52, -8.20, 6), (40, -10.46, -18.27, 30)):
        rel = exact_pma(m, 4 * m + 160)
        lg = [log2(g) for g in rel]
        assert len(lg) == m - 1  # m - 2 layers
        assert abs(lg[1] - first) < 0.006
        k = min(range(1, m - 1), key=lambda i: lg[i].mid())
        assert k == where and abs(lg[k] - smallest) < 0.006
        assert all(lg[i] > lg[k] for i in range(len(lg)) if i != k)
        # layer 1 (centre 1, D = 1) squeezes the far end: the smallest gap is that of the
        # two farthest values, about 1/m^2 of the amplitude (the input's is 1/(m - 1))
        with precision(4 * m + 160):
            f = fold_map(arb(1), 1 / arb(3).sqrt(), arb(1))
            assert abs(f(arb(m - 2)) - f(arb(m - 1)) - rel[1]) < arb(2) ** -100
