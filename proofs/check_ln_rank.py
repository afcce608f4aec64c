"""Executable check of proofs/ln_rank.md: the rank of LayerNorm outputs, LN and LN-G."""

import math
import random

import numpy as np
import sympy as sp
from flint import fmpq, fmpq_mat

from lncapacity.model import Affine, LNNet, Norm
from lncapacity.theory.capacity import (
    counting_bound,
    layer_ranks,
    lemma_bound,
    random_net,
    rank_upper_bounds,
)


def _q(rng, bits=6):
    return fmpq(rng.randint(-(2**bits), 2**bits), rng.randint(1, 2**bits))


def _rank(rows):
    return fmpq_mat(len(rows), len(rows[0]), [v for r in rows for v in r]).rank()


def _scaled_layer(rng, H, n, g, scales, gains):
    """One layer with the normalising square roots replaced by arbitrary positive rationals
    ``scales[i][J]`` (Theorem 1 holds for any positive scales): ``U = D_J^-1 Y_J P_k``."""
    fan_in, k = len(H[0]), n // g
    W = [[_q(rng) for _ in range(fan_in)] for _ in range(n)]
    b = [_q(rng) for _ in range(n)]
    U = []
    for i, h in enumerate(H):
        y = [
            sum((w * v for w, v in zip(row, h, strict=True)), fmpq(0)) + bj
            for row, bj in zip(W, b, strict=True)
        ]
        u = []
        for J in range(g):
            block = y[J * k : (J + 1) * k]
            mean = sum(block, fmpq(0)) / k
            u += [(v - mean) / scales[i][J] for v in block]
        U.append(u)
    if gains:  # H_l = U diag(gamma) + 1 beta^T
        gamma, beta = [_q(rng) for _ in range(n)], [_q(rng) for _ in range(n)]
        return U, [[gm * v + bt for gm, v, bt in zip(gamma, u, beta, strict=True)] for u in U]
    return U, U


# ---------------------------------------------------------------- Theorem 1, steps (a)-(c)


def test_steps_are_matrix_identities():
    m, n, k = 4, 3, 3
    U = sp.Matrix(m, n, lambda i, j: sp.Symbol(f"u{i}{j}"))
    gam = sp.symbols("g0:3")
    bet = sp.Matrix([sp.symbols("c0:3")])
    ones = sp.ones(m, 1)
    H = U * sp.diag(*gam) + ones * bet
    # (a) [H | 1] = [U | 1] [[diag gamma, 0], [beta^T, 1]]
    M = sp.diag(*gam).row_join(sp.zeros(n, 1)).col_join(bet.row_join(sp.Matrix([[1]])))
    assert (H.row_join(ones) - U.row_join(ones) * M).expand() == sp.zeros(m, n + 1)
    # (b) Y = H W^T + 1 b^T = [H | 1] [[W^T], [b^T]]
    W = sp.Matrix(k, n, lambda i, j: sp.Symbol(f"w{i}{j}"))
    b = sp.Matrix([sp.symbols("b0:3")])
    Y = H * W.T + ones * b
    assert (Y - H.row_join(ones) * W.T.col_join(b)).expand() == sp.zeros(m, k)
    # (c) rows divided by positive s_i: D^-1 Y P, and rank P_k = k - 1
    s = sp.symbols("s0:4", positive=True)
    P = sp.eye(k) - sp.ones(k, k) / k
    assert P.rank() == k - 1 and P * P == P
    D = sp.diag(*s)
    assert (D * (D.inv() * Y * P) - Y * P).expand() == sp.zeros(m, k)


def test_theorem_1_for_arbitrary_scales_every_layer():
    """Every layer of nets with any positive scales in place of the square roots: the
    rank is at most g min(rank [U | 1], k - 1), and with random weights it is equal."""
    rng = random.Random(30)
    for d, m, layers, gains in [
        (2, 12, [(5, 1), (5, 1), (6, 1), (6, 1)], True),  # LN: d + l = 3, 4, then n - 1 = 5, 5
        (3, 30, [(8, 1), (8, 1), (8, 1), (8, 1), (8, 1)], False),  # 4, 5, 6, 7, 7
        (2, 40, [(6, 2), (9, 3), (8, 4), (12, 3)], True),  # LN-G: groups multiply
        (1, 20, [(6, 3), (12, 4), (4, 1)], True),
    ]:
        X = [[_q(rng) for _ in range(d)] for _ in range(m)]
        U, H = X, X
        for n, g in layers:
            rho = _rank([[*u, fmpq(1)] for u in U])
            scales = [[fmpq(rng.randint(1, 97), rng.randint(1, 97)) for _ in range(g)] for _ in H]
            U, H = _scaled_layer(rng, H, n, g, scales, gains)
            r = _rank(U)
            assert r <= min(g * min(rho, n // g - 1), m)
            assert r == min(g * min(rho, n // g - 1), m)  # attained: the bound is sharp


def test_one_scale_for_all_groups_adds_at_most_one():
    """What makes groups break the bound is one scale per group: with one scale per point for
    all groups (an affine layer's column space, rescaled rows) the rank is <= rank [U | 1]."""
    rng = random.Random(4)
    X = [[_q(rng) for _ in range(2)] for _ in range(30)]
    rho = _rank([[*x, fmpq(1)] for x in X])
    same = [[fmpq(rng.randint(1, 97), 7)] * 4 for _ in X]
    U, _ = _scaled_layer(rng, X, 12, 4, same, False)
    assert _rank(U) <= rho == 3
    U, _ = _scaled_layer(
        rng, X, 12, 4, [[fmpq(rng.randint(1, 97), 7) for _ in range(4)] for _ in X], False
    )
    assert _rank(U) == 8  # 4 groups of 3: 4 min(3, 2)


# ---------------------------------------------------------------- Corollary 2, real LayerNorm


def test_the_issues_measurement_certified():
    """d = 3, width 64, random net: LN ranks 4, 5, ..., 9 and LN-G (16 groups of 4) 48 at
    every layer, each proved (a certified nonzero minor meets the exact upper bound)."""
    X = np.random.default_rng(0).standard_normal((60, 3))
    for g, want in [(1, [4, 5, 6, 7, 8, 9]), (16, [48] * 6)]:
        ranks = layer_ranks(random_net(3, 64, 6, g), X)
        assert [r.exact for r in ranks] == want
        assert want == lemma_bound(3, [(64, g)] * 6)


def test_width_buys_nothing():
    X = np.random.default_rng(1).standard_normal((60, 2))
    for width in (4, 9, 33):
        ranks = layer_ranks(random_net(2, width, 4), X)
        assert [r.exact for r in ranks] == [min(2 + i, width - 1) for i in range(1, 5)]


def test_constant_coordinate_lowers_the_bound_by_one():
    """Points on an affine plane missing 0 (last coordinate 1): rank [X | 1] = rank X = d, so
    the first layer's rank is <= d, not d + 1; the exact upper bound sees it."""
    rng = np.random.default_rng(2)
    X = np.hstack([rng.standard_normal((50, 2)), np.ones((50, 1))])
    ranks = layer_ranks(random_net(3, 16, 3), X)
    assert [r.upper for r in ranks] == [3, 4, 5]
    assert [r.exact for r in ranks] == [3, 4, 5]


def test_groups_of_gains_and_biases_fold():
    """Gains and biases do not change the LayerNorm outputs' ranks (Theorem 1 (a))."""
    rng = random.Random(5)
    base = random_net(2, 6, 3, 2)
    norms = tuple(
        Norm(tuple(_q(rng) for _ in range(6)), tuple(_q(rng) for _ in range(6)), 2)
        for _ in range(3)
    )
    net = LNNet(2, 6, base.eps, base.layers, base.readout, base.classes, {}, norms)
    X = np.random.default_rng(3).standard_normal((40, 2))
    assert [r.exact for r in layer_ranks(net, X)] == [4, 4, 4]  # 2 groups of 3: 2 min(3, 2)
    assert rank_upper_bounds(net, X) == [4, 4, 4]


def test_few_points_cap_the_rank():
    X = [[fmpq(1), fmpq(2)], [fmpq(-1), fmpq(3)], [fmpq(2), fmpq(-5)]]
    net = LNNet(
        2,
        8,
        fmpq(0),
        (random_net(2, 8, 1).layers[0],),
        Affine(((fmpq(1),) * 8,), (fmpq(0),)),
        (0,),
    )
    assert [r.exact for r in layer_ranks(net, X)] == [3]


# ---------------------------------------------------------------- Proposition 4


def test_counting_bound_exact():
    for m, k, bits in [(1000, 2, 64), (1000, 10, 64), (100, 10, 64), (10000, 10, 32), (7, 3, 5)]:
        want = sp.ceiling(sp.ceiling(m * sp.log(k, 2)) / bits)
        assert counting_bound(m, k, bits) == int(want)
    assert counting_bound(1000, 2) == 16 and counting_bound(1000, 10) == 52
    # 2^(b P) >= k^m exactly at the bound, and not one parameter fewer
    for m, k in [(100, 10), (1000, 3)]:
        p = counting_bound(m, k)
        assert 2 ** (64 * p) >= k**m > 2 ** (64 * (p - 1))
    assert math.ceil(1000 * math.log2(10) / 64) == 52
