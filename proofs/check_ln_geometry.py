"""Executable check of proofs/ln_geometry.md."""

import random

import sympy as sp
from flint import fmpq, fmpq_mat, fmpq_poly

from lncapacity.arith import exact
from lncapacity.model import layer_norm
from lncapacity.theory.geometry import (
    ellipsoid_axes,
    ellipsoid_form,
    hull_witness,
    ln_norm_squared,
    project_and_scale,
    riechers_layer_norm,
    selecting_queries,
    z_score,
)
from lncapacity.theory.hessian import hessian_measure_exact


def _sym(q):
    q = fmpq(q)
    return sp.Rational(int(q.p), int(q.q))


def test_projection_then_scaling_symbolically():
    x = sp.symbols("x1:5", real=True)
    ln = layer_norm(list(x), 0, sp.sqrt)
    m = sum(x) / 4
    px = [v - m for v in x]
    norm = sp.sqrt(sum(v**2 for v in px))
    for a, b in zip(ln, px, strict=True):
        assert sp.simplify(a - 2 * b / norm) == 0  # sqrt(d) = 2
    assert sp.simplify(sum(ln)) == 0


def test_projection_and_scale_exactly_and_eps_inside():
    rng = random.Random(4)
    for _ in range(20):
        d = rng.randint(2, 7)
        x = [fmpq(rng.randint(-20, 20), rng.randint(1, 5)) for _ in range(d)]
        if len(set(x)) == 1:
            continue
        px, factor = project_and_scale(x)
        assert sum(px, fmpq(0)) == 0
        assert factor * sum((v * v for v in px), fmpq(0)) == d  # |LN(x)|^2 = d
        assert ln_norm_squared(x) == d
        for eps in (fmpq(1, 10**5), fmpq(1, 10), fmpq(3)):
            assert ln_norm_squared(x, eps) < d  # strictly inside
        ln = layer_norm([_sym(v) for v in x], 0, sp.sqrt)
        assert sp.simplify(sum(v**2 for v in ln)) == d


def test_riechers_eq6_is_layer_norm_with_gain_and_lies_on_the_ellipsoid():
    a = [sp.Rational(3), sp.Rational(-1, 2), sp.Rational(7, 3)]
    gain, bias = [sp.Rational(1), sp.Rational(2), sp.Rational(3)], [sp.Rational(1, 2), 0, -1]
    for eps in (0, sp.Rational(1, 10)):
        eq1 = [
            gi * v + bi for gi, v, bi in zip(gain, layer_norm(a, eps, sp.sqrt), bias, strict=True)
        ]
        eq6 = riechers_layer_norm(a, gain, bias, eps)
        assert all(sp.simplify(u - v) == 0 for u, v in zip(eq1, eq6, strict=True))
        form, normal = ellipsoid_form(eq6, gain, bias)
        assert sp.simplify(normal) == 0
        if eps == 0:
            assert sp.simplify(form - 3) == 0  # on the surface: y^T G^-2 y = N
        else:
            assert sp.simplify(form - 3) < 0  # strictly inside


def test_ellipsoid_axes_exact():
    ax = ellipsoid_axes([1, 2, 3])
    assert [(r.rational, m) for r, m in ax.eigenvalues] == [(fmpq(1, 7), 1), (fmpq(3, 7), 1)]
    assert [ax.length_squared(i).rational for i in range(2)] == [21, 7]
    assert ellipsoid_axes([1, 1, 1, 1]).eigenvalues[0][0].rational == 1  # a sphere, radius 2
    assert ellipsoid_axes([1, 1, 1, 1]).eigenvalues[0][1] == 3
    ax = ellipsoid_axes([1, 2, 2, 5, 7])
    assert sum(m for _, m in ax.eigenvalues) == 4  # N - 1 axes
    assert str(ax.eigenvalues[0][0].poly) == "7646*x^3 + (-4497)*x^2 + 312*x + (-5)"
    for i, (lam, _) in enumerate(ax.eigenvalues):  # N / lambda, exact: a root of the reversed poly
        sq = ax.length_squared(i)
        if lam.poly is not None:
            q = fmpq_poly(sq.poly)
            assert q(sq.lo) * q(sq.hi) < 0 and sq.lo <= exact(float(ax.lengths[i] ** 2)) <= sq.hi
    # the axis ends are attained: a = G^-1 y is on LN's sphere and maps to y (gain, eps = 0)
    for col, length in zip(ax.directions.T, ax.lengths, strict=True):
        y = col * length
        z = y / [1, 2, 2, 5, 7]
        assert abs(z.sum()) < 1e-9 and abs((z * z).sum() - 5) < 1e-9


def test_riechers_alternative_zeta_is_one_over_lambda_exactly():
    for gain in ([1, 2, 3], [1, 2, 2, 5, 7], [fmpq(1, 2), 3, -2, 1]):
        g = [fmpq(v) for v in gain]
        N = len(g)
        P = [[fmpq(int(i == j)) - fmpq(1, N) for j in range(N)] for i in range(N)]
        PG2P = fmpq_mat(
            N,
            N,
            [
                sum((P[i][k] * g[k] ** 2 * P[k][j] for k in range(N)), fmpq(0))
                for i in range(N)
                for j in range(N)
            ],
        )
        zeta_poly = fmpq_poly(PG2P.charpoly().coeffs()[1:])  # drop the zero eigenvalue (1)
        ax = ellipsoid_axes(g)
        # the polynomial whose roots are 1/lambda: reverse the lambda polynomial
        factors = {}
        for r, m in ax.eigenvalues:  # roots of one factor share it: take each factor once
            f = fmpq_poly(r.poly) if r.poly is not None else fmpq_poly([-r.lo, 1])
            factors[str(f / f.coeffs()[-1])] = f**m
        lam_poly = fmpq_poly([1])
        for f in factors.values():
            lam_poly *= f
        rev = fmpq_poly(list(reversed(lam_poly.coeffs())))
        assert rev / rev.coeffs()[-1] == zeta_poly / zeta_poly.coeffs()[-1]


def test_hull_keys_lose_and_ln_keys_all_win():
    keys = [[0, 0, 0, 3], [4, 0, 0, 0], [0, 4, 0, 1], [0, 1, 5, 0]]
    keys.append([sum(fmpq(k[r]) for k in keys) / 4 for r in range(4)])  # inside their hull
    lam = hull_witness(keys, 4)
    assert lam is not None and sum(lam) == 1 and min(lam) >= 0
    assert all(sum(lam[j] * keys[j][r] for j in range(5)) == keys[4][r] for r in range(4))
    # ... so for any query key 4 never scores strictly highest (spot check, exact)
    rng = random.Random(0)
    for _ in range(200):
        q = [fmpq(rng.randint(-9, 9)) for _ in range(4)]
        scores = [sum(fmpq(k[r]) * q[r] for r in range(4)) for k in keys]
        assert scores[4] <= max(scores[:4])
    assert [hull_witness(keys, i) is None for i in range(4)] == [True] * 4
    assert selecting_queries(keys) == [True] * 5  # after LN every key can win
    # keys with the same LN image tie: (0,0,1) and (0,0,5) centre to parallel vectors
    assert selecting_queries([[0, 0, 1], [0, 0, 5], [3, 0, 0]]) == [False, False, True]


def test_batch_statistics_are_nonlinear_fixed_statistics_are_affine():
    batch = [1, 2, 3, 5, 4, 0]

    def per_batch(v):
        return [a for r in z_score([v[0:2], v[2:4], v[4:6]]) for a in r]

    def fixed(v):
        return [
            a
            for r in z_score([v[0:2], v[2:4], v[4:6]], [1, 2], [3, 4], sp.Rational(1, 10))
            for a in r
        ]

    assert hessian_measure_exact(per_batch, batch) == sp.Rational(16605, 35378)
    assert hessian_measure_exact(fixed, batch) == 0
