"""Executable check of proofs/circle_maps.md."""

import itertools
import math
import random

import numpy as np
import sympy as sp
from flint import arb, fmpq, fmpq_mpoly_ctx

from lncapacity.arith import precision
from lncapacity.model import Affine, LNNet, layer_norm

SQ2, SQ6 = sp.sqrt(2), sp.sqrt(6)
E = sp.Matrix([[1 / SQ2, 1 / SQ6], [-1 / SQ2, 1 / SQ6], [0, -2 / SQ6]])


def _cross(a, b):
    return a[0] * b[1] - a[1] * b[0]


# --- 1. the circle form of a layer ------------------------------------------------------------


def test_layer_norm_of_width_three_lies_on_the_circle_and_keeps_the_direction():
    y = sp.Matrix(sp.symbols("y1:4", real=True))
    eps = sp.symbols("epsilon", nonnegative=True)
    s = sp.symbols("s", positive=True)
    h = sp.Matrix(layer_norm(list(y), eps, lambda _: s))  # centred y / s
    assert sp.simplify(sum(h)) == 0  # orthogonal to (1, 1, 1)
    P = sp.eye(3) - sp.ones(3, 3) / 3
    g = E.T * y  # plane coordinates of the centred y
    assert sp.simplify(E * g - P * y) == sp.zeros(3, 1)  # E E^T = P
    # |h|^2 = |g|^2 / s^2 with s^2 = |g|^2 / 3 + eps: the radius
    s2 = sp.expand(((P * y).T * (P * y))[0] / 3 + eps)
    assert sp.simplify(s2 - (g.T * g)[0] / 3 - eps) == 0
    gg = (g.T * g)[0]  # |g|^2
    assert sp.simplify(gg / s2 - 3 * gg / (gg + 3 * eps)) == 0  # radius^2 = 3|g|^2/(|g|^2+3eps)
    # the direction E^T h / |E^T h| = g / |g| does not depend on eps


def test_layer_l_is_the_circle_map_of_M_and_q():
    # with W = E M E^T / sqrt(3) and b = -E M q: the centred pre-activation is E M (e - q)
    phi = sp.symbols("phi", real=True)
    M = sp.Matrix(2, 2, sp.symbols("m1:5", real=True))
    q = sp.Matrix(sp.symbols("q1:3", real=True))
    e = sp.Matrix([sp.cos(phi), sp.sin(phi)])
    h = sp.sqrt(3) * E * e  # a layer output (eps = 0)
    W, b = E * M * E.T / sp.sqrt(3), -E * M * q
    y = W * h + b
    assert sp.simplify(E.T * y - M * (e - q)) == sp.zeros(2, 1)
    assert sp.simplify(sum(y)) == 0  # already centred


# --- 2. two monotone pieces --------------------------------------------------------------------


def test_the_derivative_of_the_angle_is_det_plus_a_cosine():
    phi = sp.symbols("phi", real=True)
    A = sp.Matrix(2, 2, sp.symbols("a1:5", real=True))
    c = sp.Matrix(sp.symbols("c1:3", real=True))
    e = sp.Matrix([sp.cos(phi), sp.sin(phi)])
    g = A * e + c
    # d/dphi arg g = (g x g') / |g|^2; the numerator:
    num = sp.expand(_cross(g, g.diff(phi)))
    J = sp.Matrix([[0, -1], [1, 0]])
    ell = (A * J).T * J * c  # c x (A J e) = c^T J^T A J e = ell . e
    assert sp.simplify(num - (A.det() + (ell.T * e)[0])) == 0


def test_through_the_origin_the_angle_is_monotone_off_one_point():
    phi, p0 = sp.symbols("phi phi0", real=True)
    A = sp.Matrix(2, 2, sp.symbols("a1:5", real=True))
    e = sp.Matrix([sp.cos(phi), sp.sin(phi)])
    e0 = sp.Matrix([sp.cos(p0), sp.sin(p0)])
    g = A * (e - e0)  # c = -A e(phi0)
    num = sp.simplify(_cross(g, g.diff(phi)) - A.det() * (1 - sp.cos(phi - p0)))
    assert sp.simplify(sp.expand_trig(num)) == 0


def _pieces(A, c, n=20000):
    """Monotone pieces of phi -> arg(A e + c), from the sign changes of the derivative."""
    phi = np.linspace(0, 2 * math.pi, n, endpoint=False)
    e = np.c_[np.cos(phi), np.sin(phi)]
    g = e @ A.T + c
    gp = np.c_[-np.sin(phi), np.cos(phi)] @ A.T
    d = g[:, 0] * gp[:, 1] - g[:, 1] * gp[:, 0]
    s = np.sign(d[np.abs(d) > 1e-12])
    return max(1, int((s != np.roll(s, 1)).sum()))


def test_random_circle_maps_have_at_most_two_monotone_pieces():
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(300):
        A, c = rng.standard_normal((2, 2)), rng.standard_normal(2) * rng.choice([0.1, 1, 3])
        k = _pieces(A, c)
        assert k <= 2
        seen.add(k)
    assert seen == {1, 2}  # both the homeomorphisms and the folds occur


# --- 3. the fold-count bound -------------------------------------------------------------------


def cyclic_boundaries(labels):
    return sum(labels[i] != labels[i - 1] for i in range(len(labels)))


def _labels_after(theta, y):
    return [y[k] for k in np.argsort(theta, kind="stable")]


def test_one_layer_at_most_halves_boundaries_plus_two():
    rng = np.random.default_rng(1)
    tightest = math.inf
    for _ in range(3000):
        m = int(rng.integers(4, 40))
        phi = np.sort(rng.random(m) * 2 * math.pi)
        y = list(rng.integers(0, 2, m))
        A, c = rng.standard_normal((2, 2)), rng.standard_normal(2) * rng.choice([0.3, 1, 3])
        g = np.c_[np.cos(phi), np.sin(phi)] @ A.T + c
        new = np.arctan2(g[:, 1], g[:, 0])
        before, after = cyclic_boundaries(y), cyclic_boundaries(_labels_after(new, y))
        assert after + 2 >= (before + 2) / 2
        tightest = min(tightest, (after + 2) / (before + 2))
    assert tightest < 0.75  # folds do remove many boundaries


def fold_count_bound(B):
    """The least depth for B cyclic boundaries on a line: ceil(log2(B + 2)) - 1 when B > 2;
    B <= 2 is a threshold, which depth 0 (the readout on x) can do."""
    return 0 if B <= 2 else math.ceil(math.log2(B + 2)) - 1


def test_the_bound_on_a_line_and_the_vc_consequence():
    assert [fold_count_bound(B) for B in (2, 4, 6, 8, 14, 16, 30, 32)] == [0, 2, 2, 3, 3, 4, 4, 5]
    # alternating labels on 2^(L+1) points of a line have B = 2^(L+1): depth > L
    for L in range(1, 6):
        n = 2 ** (L + 1)
        B = cyclic_boundaries([k % 2 for k in range(n)])
        assert fold_count_bound(B) == L + 1
        B = cyclic_boundaries([k % 2 for k in range(n - 1)])
        assert fold_count_bound(B) <= L


def test_depth_one_on_a_line_gives_an_arc_of_an_arc():
    # the first layer on a line is monotone (det-term only): x -> arg(n x + c)
    x = sp.symbols("x", real=True)
    n = sp.Matrix(sp.symbols("n1:3", real=True))
    c = sp.Matrix(sp.symbols("c1:3", real=True))
    g = n * x + c
    assert sp.simplify(_cross(g, g.diff(x)) - _cross(c, n)) == 0  # constant sign


# --- 4. the counting bound ---------------------------------------------------------------------


def _tower(L, x):
    """F = w . G_L + r rho_L with G_1 = N x + c1, G_l = M_l G_(l-1) + c_l rho_(l-1) (d = 1).

    Polynomials over Q in the parameters and rho_1..rho_L (python-flint, exact).
    """
    names = ["n1", "n2", "c1_1", "c1_2"]
    for lay in range(2, L + 1):
        names += [f"m{lay}_{i}" for i in range(1, 5)] + [f"c{lay}_1", f"c{lay}_2"]
    names += ["w1", "w2", "r"]
    params = len(names)
    names += [f"rho{lay}" for lay in range(1, L + 1)]
    ctx = fmpq_mpoly_ctx.get(tuple(names), "lex")
    v = dict(zip(names, ctx.gens(), strict=True))
    G = [v["n1"] * x + v["c1_1"], v["n2"] * x + v["c1_2"]]
    norms = []
    for lay in range(2, L + 1):
        norms.append(G[0] ** 2 + G[1] ** 2)
        m1, m2, m3, m4 = (v[f"m{lay}_{i}"] for i in range(1, 5))
        rho = v[f"rho{lay - 1}"]
        G = [
            m1 * G[0] + m2 * G[1] + v[f"c{lay}_1"] * rho,
            m3 * G[0] + m4 * G[1] + v[f"c{lay}_2"] * rho,
        ]
    norms.append(G[0] ** 2 + G[1] ** 2)
    F = v["w1"] * G[0] + v["w2"] * G[1] + v["r"] * v[f"rho{L}"]
    return F, ctx, params, norms


def _reduce(f, ctx, params, norms):
    """Replace rho_j^2 by |G_j|^2 until f is multilinear in the rhos."""
    while True:
        terms = f.to_dict()
        if all(e <= 1 for mono in terms for e in mono[params:]):
            return f
        out = ctx.from_dict({})
        for mono, coef in terms.items():
            base = list(mono)
            factor = ctx.from_dict({(0,) * len(mono): 1})
            for j in range(len(norms)):
                k = mono[params + j]
                base[params + j] = k % 2
                factor *= norms[j] ** (k // 2)
            out += ctx.from_dict({tuple(base): coef}) * factor
        f = out


def _split(f, ctx, params, level):
    """(a, b) with f = a + b rho_level."""
    a, b = {}, {}
    idx = params + level - 1
    for mono, coef in f.to_dict().items():
        if mono[idx]:
            b[(*mono[:idx], 0, *mono[idx + 1 :])] = coef
        else:
            a[mono] = coef
    return ctx.from_dict(a), ctx.from_dict(b)


def _eliminate(f, level, ctx, params, norms, decide=None):
    """The sign-determining polynomials of f (leaves); with ``decide`` (a map from a leaf to
    its sign) also the sign of f: sign(a + b rho) from sign a, sign b, sign(a^2 - b^2 rho^2)."""
    if level == 0:
        return [f], (decide(f) if decide else None)
    f = _reduce(f, ctx, params, norms)
    a, b = _split(f, ctx, params, level)
    d = _reduce(a * a - b * b * norms[level - 1], ctx, params, norms)
    leaves, signs = [], []
    for part in (a, b, d):
        lv, sg = _eliminate(part, level - 1, ctx, params, norms, decide)
        leaves += lv
        signs.append(sg)
    if decide is None:
        return leaves, None
    sa, sb, sd = signs
    if sb == 0 or sa == sb:
        sign = sa if sa != 0 else sb
    elif sa == 0:
        sign = sb
    else:
        sign = sa * sd  # opposite signs: |a| > |b| rho iff a^2 - b^2 rho^2 > 0
    return leaves, sign


def test_the_elimination_counts_and_degrees():
    x = fmpq(3, 7)
    rng = random.Random(0)
    for L in (1, 2):
        F, ctx, params, norms = _tower(L, x)
        leaves, _ = _eliminate(F, L, ctx, params, norms)
        assert len(leaves) <= 3**L and params == 2 * 1 + 6 * L - 1
        assert max(f.total_degree() for f in leaves if not f.is_zero()) == (L + 1) * 2**L
        # the leaves' signs decide the sign of F, at random rational parameters
        for _ in range(20):
            vals = [fmpq(rng.randint(-9, 9), rng.randint(1, 5)) for _ in range(params)]
            rhos = []
            with precision(300):
                for nrm in norms:  # rho_l = |G_l|, which involves rho_1..rho_(l-1)
                    rhos.append(_eval_ball(nrm, vals, rhos, L).sqrt())
                exact = _eval_ball(F, vals, rhos, L)
                assert not exact.contains(0)

                point = [*vals, *[fmpq(0)] * L]  # the leaves are free of the rhos

                def decide(f, point=point):
                    value = f(*point)
                    return (value > 0) - (value < 0)

                _, sign = _eliminate(F, L, ctx, params, norms, decide)
                assert sign == (1 if exact > 0 else -1)


def _eval_ball(f, vals, rhos, L):
    """f at the parameter values and the rho balls (rhos beyond those given are 0)."""
    rho = list(rhos) + [arb(0)] * (L - len(rhos))
    total = arb(0)
    for mono, coef in f.to_dict().items():
        term = arb(coef)
        for e, val in zip(mono, [*map(arb, vals), *rho], strict=True):
            if e:
                term *= val**e
        total += term
    return total


def counting_bits(m, d, L):
    """log2 of Warren's bound (4 e D K / P)^P on the labelings of m points at depth L."""
    P, K = 2 * d + 6 * L - 1, m * 3**L
    if K < P:
        return K  # at most 2^K sign vectors anyway
    # D = (L + 1) 2^L, K = m 3^L, in logarithms (the numbers overflow floats)
    return P * (math.log2(4 * math.e / P) + math.log2(L + 1) + L + math.log2(m) + L * math.log2(3))


def counting_depth(m, d):
    """The least L for which Warren's bound allows half of the 2^m labelings (eps = 0)."""
    return next(L for L in range(1, 10**6) if counting_bits(m, d, L) >= m - 1)


def test_counting_bound_table():
    got = {m: counting_depth(m, 1) for m in (16, 48, 100, 200, 1000, 10**4, 10**5)}
    assert got == {16: 1, 48: 1, 100: 2, 200: 3, 1000: 7, 10**4: 23, 10**5: 77}
    assert counting_depth(1797, 64) == 2  # digits (64 features): depth 2 is what it asks for
    # it grows like sqrt(m): 6 (1 + log2 3) L^2 ~ m for large m, i.e. L ~ 0.254 sqrt(m)
    for m in (10**6, 10**8):
        assert 0.24 < counting_depth(m, 1) / math.sqrt(m) < 0.26


# --- 5. eps > 0: the same circle map on a disc -------------------------------------------------


def test_with_eps_the_direction_is_exact_and_the_radius_shrinks():
    # a layer of the circle method, evaluated in balls: arg is eps-free, radius sqrt(3)|g|/sqrt(..)
    W = ((fmpq(3), fmpq(-1), fmpq(2)), (fmpq(1), fmpq(1), fmpq(-5)), (fmpq(0), fmpq(2), fmpq(1)))
    b = (fmpq(1, 2), fmpq(-1, 3), fmpq(1, 7))
    h0 = (fmpq(1), fmpq(-2), fmpq(1))
    readout = Affine(((fmpq(1), fmpq(0), fmpq(0)),), (fmpq(0),))
    with precision(200):
        outs = []
        for eps in (fmpq(0), fmpq(1, 100000)):
            net = LNNet(3, 3, eps, (Affine(W, b),), readout, ("a",)).map(arb)
            y = Affine(*[tuple(tuple(arb(w) for w in r) for r in W), tuple(arb(v) for v in b)])
            h = layer_norm(y([arb(v) for v in h0]), arb(eps), arb.sqrt)
            outs.append(h)
            assert net.depth == 1
        h_0, h_e = outs
        ratio = [(p / q) for p, q in zip(h_e, h_0, strict=True)]
        assert all(abs(ratio[0] - r) < arb("1e-50") for r in ratio)  # same direction
        r0 = sum(v * v for v in h_0)
        assert abs(r0 - 3) < arb("1e-50") and ratio[0] < 1


# --- 7. the depth objective: label gaps from balls --------------------------------------------


def test_gaps_read_from_balls_bound_the_true_gaps():
    # random true angles, balls of radius at most R around them (midpoints off by up to R):
    # the midpoint order, with lo = min over label changes of (c_j - c_i - 2R) - 2R (the
    # difference ball's lower end less 2R), separates the true runs by at least lo
    rng = random.Random(7)
    checked = 0
    for _ in range(400):
        m, R = rng.randint(3, 30), fmpq(rng.randint(1, 50), 10**4)
        true = sorted(fmpq(rng.randint(0, 10**6), 10**6) * 6 for _ in range(m))
        labels = [rng.randint(0, 1) for _ in range(m)]
        mids = [t + R * fmpq(rng.randint(-100, 100), 100) for t in true]
        order = sorted(range(m), key=lambda i: mids[i])
        lo = None
        for a in range(m):
            i, j = order[a], order[(a + 1) % m]
            if labels[i] != labels[j]:
                seam = fmpq(0) if a + 1 < m else 2 * fmpq(314159265, 10**8)  # > 2 pi > 6
                d = mids[j] + seam - mids[i] - 2 * R  # the difference ball's lower end
                lo = d - 2 * R if lo is None else min(lo, d - 2 * R)
        if lo is None or lo <= 0:
            continue
        # the true values in midpoint order: every run lies before the next, lo apart
        runs, start = [], 0
        for a in range(1, m + 1):
            if a == m or labels[order[a]] != labels[order[a - 1]]:
                runs.append([true[order[b]] for b in range(start, a)])
                start = a
        for r1, r2 in itertools.pairwise(runs):
            assert min(r2) - max(r1) >= lo
        checked += 1
    assert checked > 100  # most draws resolve their gaps
