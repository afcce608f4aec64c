"""Executable check of proofs/vc_upper.md: the elimination (groups, any eps), the parameter
count, Warren's bound evaluated exactly, its growth, and the table of the manual."""

import math
import random

from check_circle_maps import _eliminate, _eval_ball  # the ln3 elimination, reused
from flint import arb, fmpq, fmpq_mpoly_ctx

from lncapacity.arith import precision
from lncapacity.model import layer_norm
from lncapacity.theory.vc import (
    eliminated,
    line_bound,
    parameters,
    sandwich,
    warren_holds,
    warren_vc,
)

# --- Lemma 2: the tower, with g groups per layer and any eps -----------------------------------


def _tower(L, g, x, eps):
    """``F * prod(rho)`` as a polynomial in the parameters and the rhos (section 2).

    Group k of layer 1: ``G = N_k x + c_k`` (x in R^d); of layer l > 1:
    ``G_k = sum_i M_ki G_i prod_(j != i) rho_j + c_k prod_j rho_j`` (rhos of layer l - 1);
    ``rho^2 = |G|^2 / 3 + eps (prod of the previous layer's rhos)^2``.
    """
    d = len(x)
    names = []
    for k in range(g):
        names += [f"n{k}_{a}_{i}" for a in range(2) for i in range(d)] + [
            f"c1_{k}_{a}" for a in (0, 1)
        ]
    for lay in range(2, L + 1):
        for k in range(g):
            for i in range(g):
                names += [f"m{lay}_{k}_{i}_{a}" for a in range(4)]
            names += [f"c{lay}_{k}_{a}" for a in (0, 1)]
    for k in range(g):
        names += [f"w{k}_{a}" for a in (0, 1)]
    names.append("r")
    params = len(names)
    names += [f"rho{lay}_{k}" for lay in range(1, L + 1) for k in range(g)]
    ctx = fmpq_mpoly_ctx.get(tuple(names), "lex")
    v = dict(zip(names, ctx.gens(), strict=True))
    one = ctx.from_dict({(0,) * len(names): 1})
    G = [
        [sum((v[f"n{k}_{a}_{i}"] * x[i] for i in range(d)), v[f"c1_{k}_{a}"]) for a in (0, 1)]
        for k in range(g)
    ]
    norms, prev = [], one  # prev: the product of the previous layer's rhos (1 before layer 1)
    for lay in range(1, L + 1):
        rho = [v[f"rho{lay}_{k}"] for k in range(g)]
        norms += [(Gk[0] ** 2 + Gk[1] ** 2) / 3 + eps * prev**2 for Gk in G]
        prod = one
        for r in rho:
            prod *= r
        others = []
        for i in range(g):
            p = one
            for j in range(g):
                if j != i:
                    p *= rho[j]
            others.append(p)
        if lay == L:
            F = v["r"] * prod
            for i in range(g):
                F += (v[f"w{i}_0"] * G[i][0] + v[f"w{i}_1"] * G[i][1]) * others[i]
            return F, ctx, params, norms
        nxt = []
        for k in range(g):
            Gk = []
            for a in (0, 1):
                s = v[f"c{lay + 1}_{k}_{a}"] * prod
                for i in range(g):
                    m = [v[f"m{lay + 1}_{k}_{i}_{b}"] for b in range(4)]
                    s += (m[2 * a] * G[i][0] + m[2 * a + 1] * G[i][1]) * others[i]
                Gk.append(s)
            nxt.append(Gk)
        G, prev = nxt, prod
    raise AssertionError("L >= 1")


CASES = [  # (L, g, d, eps)
    (1, 1, 1, fmpq(0)),
    (1, 1, 2, fmpq(1, 5)),
    (2, 1, 1, fmpq(1, 5)),
    (1, 2, 1, fmpq(0)),
    (1, 2, 1, fmpq(1, 5)),
]


def test_the_elimination_counts_degrees_and_decides_the_sign():
    rng = random.Random(1)
    for L, g, d, eps in CASES:
        x = [fmpq(rng.randint(-9, 9), 7) for _ in range(d)]
        F, ctx, params, norms = _tower(L, g, x, eps)
        n = g * L
        assert params == parameters(L, d, g)  # Lemma 1's count
        assert (len(norms), eliminated(L, g)[0]) == (n, 3**n)
        leaves, _ = _eliminate(F, n, ctx, params, norms)
        K, D = eliminated(L, g)
        assert len(leaves) <= K
        assert max(f.total_degree() for f in leaves if not f.is_zero()) <= D
        if g == 1 and eps == 0:  # the degree bound is attained
            assert max(f.total_degree() for f in leaves if not f.is_zero()) == D
        for _ in range(8):  # the leaves' signs decide sign F at random rational parameters
            vals = [fmpq(rng.randint(-9, 9), rng.randint(1, 5)) for _ in range(params)]
            with precision(400):
                rhos = []
                for nrm in norms:  # each rho from the ones before it
                    rhos.append(_eval_ball(nrm, vals, rhos, n).sqrt())
                exact = _eval_ball(F, vals, rhos, n)
                assert not exact.contains(0)
            point = [*vals, *[fmpq(0)] * n]

            def decide(f, point=point):
                value = f(*point)
                return (value > 0) - (value < 0)

            _, sign = _eliminate(F, n, ctx, params, norms, decide)
            assert sign == (1 if exact > 0 else -1)


# --- Lemma 1: a net acts through P parameters ----------------------------------------------------


def test_a_grouped_net_has_the_sign_of_the_tower_at_its_reduced_parameters():
    """A random LN-G net (g = 2 groups of 3, depth 2, d = 2, gains and biases, eps = 1/7):
    ``z_1 - z_0`` and ``F`` at ``N = E^T W_1``, ``M = E^T W diag(gamma) E``, ... agree in sign
    (and F = (z_1 - z_0) prod(rho), exactly up to the balls' width)."""
    rng = random.Random(2)
    g, d, eps = 2, 2, fmpq(1, 7)  # depth 2

    def q():
        return fmpq(rng.randint(-9, 9), rng.randint(1, 4))

    with precision(300):
        s2, s6 = arb(2).sqrt(), arb(6).sqrt()
        E = [[1 / s2, 1 / s6], [-1 / s2, 1 / s6], [arb(0), -2 / s6]]  # 3 x 2, E^T E = I

        def ET(vec):  # E^T v
            return [sum((E[i][a] * vec[i] for i in range(3)), arb(0)) for a in (0, 1)]

        for _ in range(5):
            W1 = [[q() for _ in range(d)] for _ in range(3 * g)]
            b1 = [q() for _ in range(3 * g)]
            gam1, bet1 = [q() for _ in range(3 * g)], [q() for _ in range(3 * g)]
            W2 = [[q() for _ in range(3 * g)] for _ in range(3 * g)]
            b2 = [q() for _ in range(3 * g)]
            gam2, bet2 = [q() for _ in range(3 * g)], [q() for _ in range(3 * g)]
            R = [[q() for _ in range(3 * g)] for _ in range(2)]
            rb = [q(), q()]
            x = [q() for _ in range(d)]
            # the net, in balls
            y1 = [sum((arb(W1[i][j]) * x[j] for j in range(d)), arb(b1[i])) for i in range(3 * g)]
            h1 = []
            for k in range(g):
                h1 += layer_norm(y1[3 * k : 3 * k + 3], arb(eps), arb.sqrt)
            h1 = [arb(gam1[i]) * h1[i] + bet1[i] for i in range(3 * g)]
            y2 = [sum((W2[i][j] * h1[j] for j in range(3 * g)), arb(b2[i])) for i in range(3 * g)]
            h2 = []
            for k in range(g):
                h2 += layer_norm(y2[3 * k : 3 * k + 3], arb(eps), arb.sqrt)
            h2 = [arb(gam2[i]) * h2[i] + bet2[i] for i in range(3 * g)]
            z = [sum((R[c][j] * h2[j] for j in range(3 * g)), arb(rb[c])) for c in (0, 1)]
            diff = z[1] - z[0]
            # the reduced parameters and the tower (section 1)
            G1 = [ET(y1[3 * k : 3 * k + 3]) for k in range(g)]
            rho1 = [((Gk[0] ** 2 + Gk[1] ** 2) / 3 + eps).sqrt() for Gk in G1]
            G2 = []
            for k in range(g):
                rows = range(3 * k, 3 * k + 3)
                const = ET(
                    [sum((W2[i][j] * bet1[j] for j in range(3 * g)), arb(b2[i])) for i in rows]
                )
                acc = [c * rho1[0] * rho1[1] for c in const]
                for i in range(g):
                    cols = range(3 * i, 3 * i + 3)
                    # M_ki = E^T W2[k rows, i cols] diag(gamma1_i) E, applied to G1_i
                    Eg = [sum((E[j][a] * G1[i][a] for a in (0, 1)), arb(0)) for j in range(3)]
                    v = [
                        sum((W2[r][c] * gam1[c] * Eg[c - 3 * i] for c in cols), arb(0))
                        for r in rows
                    ]
                    other = rho1[1 - i]
                    acc = [acc[a] + ET(v)[a] * other for a in (0, 1)]
                G2.append(acc)
            prev = rho1[0] * rho1[1]
            rho2 = [((Gk[0] ** 2 + Gk[1] ** 2) / 3 + eps * prev**2).sqrt() for Gk in G2]
            dR = [R[1][j] - R[0][j] for j in range(3 * g)]
            r = arb(rb[1] - rb[0]) + sum((dR[j] * bet2[j] for j in range(3 * g)), arb(0))
            F = r * rho2[0] * rho2[1]
            for i in range(g):
                w = ET([dR[j] * gam2[j] for j in range(3 * i, 3 * i + 3)])
                F += (w[0] * G2[i][0] + w[1] * G2[i][1]) * rho2[1 - i]
            assert abs(F - diff * rho2[0] * rho2[1]) < arb("1e-60") * (1 + abs(F))
            assert not diff.contains(0)


# --- section 3: Warren's bound, exactly ---------------------------------------------------------


def test_the_ball_decision_agrees_with_exact_integers():
    """With a rational ``p/q > e`` the test ``2^m (P q)^P <= (4 p D max(mK, P))^P`` in
    integers holds wherever the true one does; at the boundary m_1 both decide alike."""
    p, q = 2718281829, 10**9
    with precision(200):
        assert arb(1).exp() < fmpq(p, q)
    for L, d, g in [(1, 1, 1), (2, 2, 1), (5, 3, 1), (8, 1, 1), (1, 1, 3), (2, 1, 2)]:
        P, (K, D) = parameters(L, d, g), eliminated(L, g)
        m1 = warren_vc(L, d, g)
        for m in (m1, m1 + 1):
            exact = 2**m * (P * q) ** P <= (4 * p * D * max(m * K, P)) ** P
            assert exact == warren_holds(m, P, K, D) == (m == m1)


def test_the_true_set_is_an_interval_from_one():
    for L, d, g in [(1, 1, 1), (1, 3, 1), (2, 1, 1), (1, 1, 2)]:
        P, (K, D) = parameters(L, d, g), eliminated(L, g)
        m1 = warren_vc(L, d, g)
        assert all(warren_holds(m, P, K, D) for m in range(1, m1 + 1))
        assert not any(warren_holds(m, P, K, D) for m in range(m1 + 1, 4 * m1))


def test_warren_vc_agrees_with_the_logarithms():
    for L in range(1, 9):
        for d in (1, 2, 3):
            P, (K, D) = parameters(L, d, 1), eliminated(L, 1)
            m1 = warren_vc(L, d)

            def bits(m, P=P, K=K, D=D):
                return P * math.log2(4 * math.e * D * max(m * K, P) / P)

            assert bits(m1) >= m1 - 1e-6 and bits(m1 + 1) < m1 + 1 + 1e-6


def test_growth_is_quadratic_in_the_depth():
    """Corollary: m_1 <= (P / ln 2)(4 ln(2P / ln 2) + 2 ln(4 e D 3^L / P)) (the lemma
    ``m <= a ln m + b => m <= 4 a ln(2a) + 2b``), and m_1 / (6 log2(6) L^2) -> 1."""
    ratios = []
    for L in (1, 2, 4, 8, 16, 32, 64):
        for d in (1, 2, 3):
            P, D = parameters(L, d, 1), eliminated(L, 1)[1]
            a = P / math.log(2)
            bound = a * (4 * math.log(2 * a) + 2 * math.log(4 * math.e * D * 3**L / P))
            assert warren_vc(L, d) <= bound
        ratios.append(warren_vc(L, 1) / (6 * math.log2(6) * L * L))
    assert ratios == sorted(ratios, reverse=True) and 1 < ratios[-1] < 1.11


TABLE = {  # the manual's table: (best lower, best upper) for d = 1, 2, 3 at L = 1..8 (ln3)
    1: [(3, 3), (5, 93), (5, 114)],
    2: [(5, 5), (7, 210), (7, 238)],
    3: [(7, 9), (9, 363), (9, 398)],
    4: [(9, 17), (11, 552), (11, 593)],
    5: [(11, 33), (13, 775), (13, 822)],
    6: [(13, 65), (15, 1032), (15, 1085)],
    7: [(15, 129), (17, 1323), (17, 1382)],
    8: [(17, 257), (19, 1647), (19, 1712)],
}


def test_the_table_from_the_theorems_alone():
    """The sandwich from theorems only (certificates may raise the lower bounds), with eps > 0,
    where Warren's bound is the one for d >= 2 (with eps = 0 the sector count is smaller:
    proofs/sector_theorem.md)."""
    for L, row in TABLE.items():
        for d, (lo, up) in zip((1, 2, 3), row, strict=True):
            s = sandwich("ln3", L, d, eps="1/10")
            assert max(b.value for b in s.lowers if b.kind == "theorem") == lo
            assert s.upper.value == up
            assert up == (min(warren_vc(L, 1), line_bound(L)) if d == 1 else warren_vc(L, d))
