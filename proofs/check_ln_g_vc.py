"""Executable check of proofs/ln_g_vc.md: the bump, the margins, every labeling of 2g + 1
points certified, and the embedding of a width-3 net in an LN-G net."""

import random

import pytest
import sympy as sp
from flint import arb, fmpq

from lncapacity.arith import precision
from lncapacity.errors import InputError
from lncapacity.model import Affine, LNNet, Norm, layer_norm
from lncapacity.shatter import bump_net, labels_of, random_points, shatter, verify_shatter


def test_lemma_1_the_group_read_along_v_is_a_bump():
    t, c = sp.symbols("t c", real=True)
    S, beta = sp.symbols("S beta", positive=True)
    eps = sp.symbols("epsilon", nonnegative=True)
    u, v = sp.Matrix([1, -1, 0]), sp.Matrix([1, 1, -2])
    y = S * ((t - c) * u + beta * v)
    h = sp.Matrix(layer_norm(list(y), eps, sp.sqrt))
    b2 = 3 * beta**2 + 3 * eps / (2 * S**2)
    bump = 3 * sp.sqrt(6) * beta / sp.sqrt((t - c) ** 2 + b2)
    assert sp.simplify((v.T * h)[0] ** 2 - bump**2) == 0 and sp.simplify((v.T * h)[0]) != 0
    assert ((v.T * h)[0]).subs({t: 0, c: 0, S: 1, beta: 1, eps: 0}) > 0  # the positive root


def test_the_constants():
    own, tails, threshold = 3 * sp.sqrt(6) / 2, 3 * sp.sqrt(6) / 8, 2
    assert sp.Rational(367, 100) < own and tails < sp.Rational(92, 100)
    assert own - threshold > sp.Rational(167, 100)
    assert threshold - tails > sp.Rational(108, 100)
    # b^2 <= 4 beta^2 once 2 S^2 beta^2 >= 3 eps; g bumps at distance >= delta with
    # beta <= delta / (8 g) sum to at most 3 sqrt(6) / 8
    g, delta = sp.symbols("g delta", positive=True)
    assert sp.simplify(g * 3 * sp.sqrt(6) * (delta / (8 * g)) / delta - tails) == 0


@pytest.mark.parametrize("groups", [1, 2, 3])
def test_theorem_1_every_labeling_of_2g_plus_1_points(groups, tmp_path):
    out = tmp_path / "s.jsonl"
    summary = shatter(None, 1, out=out, workers=1, groups=groups)
    assert summary.all_certified and summary.points == 2 * groups + 1
    assert summary.min_margin > 1.08  # the theorem's margin, certified
    again, problems = verify_shatter(out, workers=1)
    assert not problems and again.certified == 2 ** (2 * groups + 1)


def test_theorem_1_with_eps_and_in_the_plane():
    s = shatter(None, 1, eps=fmpq(1, 100), workers=1, groups=2)
    assert s.all_certified and s.min_margin > 1.08
    s = shatter(random_points(5, 2, 3), 1, workers=1, groups=2)
    assert s.all_certified and s.min_margin > 1.08


@pytest.mark.parametrize("eps", [fmpq(0), fmpq(1, 100), fmpq(1)])
def test_theorem_2_padded_to_depth_three(eps, tmp_path):
    out = tmp_path / "s.jsonl"
    s = shatter(None, 3, eps=eps, out=out, workers=1, groups=2)
    # margins > 2 sqrt(3)/2 * ... : at least 2 - (3 sqrt(6)/8)(2/sqrt(3)) > 0.93
    assert s.all_certified and s.min_margin > 0.93
    again, problems = verify_shatter(out, workers=1)
    assert not problems and again.certified == 32


def test_theorem_2_the_scales_stay_in_their_interval():
    """var(h_(l+1)) = v / (v + delta) with delta = eps / S'^2 <= 1/16 and var(h_1) >= 3/4: the
    variances stay in [3/4, 1], so each output is h_1 times mu in [sqrt(3)/2, 2/sqrt(3)]."""
    v, delta = sp.symbols("v delta", positive=True)
    f = v / (v + delta)
    assert sp.simplify(sp.diff(f, v) - delta / (v + delta) ** 2) == 0  # increasing in v
    assert sp.solve(sp.Eq(f, v), v) == [1 - delta]  # the fixed point, in [15/16, 1]
    lo, hi = sp.sqrt(3) / 2, 2 / sp.sqrt(3)
    own, tails = 3 * sp.sqrt(6) / 2, 3 * sp.sqrt(6) / 8
    assert own * lo - 2 > sp.Rational(118, 100) and 2 - tails * hi > sp.Rational(93, 100)
    # var(h_1) = V / (V + eps) >= 3/4 when V = |y|^2 / 3 >= 2 S^2 beta^2 >= 3 eps
    V, eps = sp.symbols("V epsilon", positive=True)
    assert sp.simplify((V / (V + eps)).subs(V, 3 * eps)) == sp.Rational(3, 4)


def test_the_construction_stops_at_2g_plus_1():
    X = [(fmpq(k),) for k in range(6)]
    with pytest.raises(InputError, match="more than 2 points"):
        bump_net(X, labels_of(0b101010, 6), 2, fmpq(0))
    net = bump_net(X[:5], labels_of(0b01010, 5), 2, fmpq(0))
    assert net.groups == (2,) and net.width == 6 and net.meta["bumps"] == 2


def test_lemma_3_a_width_three_net_inside_an_ln_g_net():
    rng = random.Random(0)

    def q():
        return fmpq(rng.randint(-9, 9), rng.randint(1, 4))

    d, L, g = 2, 2, 3
    layers = [Affine(tuple(tuple(q() for _ in range(d)) for _ in range(3)), (q(), q(), q()))]
    layers.append(Affine(tuple(tuple(q() for _ in range(3)) for _ in range(3)), (q(), q(), q())))
    readout = Affine(tuple(tuple(q() for _ in range(3)) for _ in range(2)), (q(), q()))
    for eps in (fmpq(0), fmpq(1, 7)):
        small = LNNet(d, 3, eps, tuple(layers), readout, (0, 1))
        zero, v = fmpq(0), (fmpq(1), fmpq(1), fmpq(-2))
        big = []
        for i, layer in enumerate(layers):
            k = d if i == 0 else 3 * g
            W = [tuple(row) + (zero,) * (k - len(row)) for row in layer.W]
            W += [(zero,) * k] * (3 * (g - 1))
            big.append(Affine(tuple(W), tuple(layer.b) + v * (g - 1)))
        R = Affine(tuple(tuple(row) + (zero,) * (3 * (g - 1)) for row in readout.W), readout.b)
        net = LNNet(d, 3 * g, eps, tuple(big), R, (0, 1), norms=(Norm(groups=g),) * L)
        with precision(200):
            for _ in range(5):
                x = [arb(q()) for _ in range(d)]
                a = small.map(arb).forward(x, arb.sqrt)
                b = net.map(arb).forward(x, arb.sqrt)
                assert all(abs(p - r) < arb("1e-50") for p, r in zip(a, b, strict=True))


# --- section 5: on a line, at most g^L 2^(gL) label changes -------------------------------------


def _ln_g_line_tower(net: LNNet, g: int):
    """``F = Pi_L (z_1 - z_0)`` along the line ``t -> net(t)`` of an LN-G net on ``R`` with ``g``
    groups of 3 per layer, in the net's own form, homogeneous (section 5): the ``rho`` of group
    ``k`` of layer ``l`` is variable ``r{(l-1) g + k}``, ``rho^2 = var + eps Pi_(l-1)^2``."""
    from flint import fmpq_mpoly_ctx

    L = net.depth
    ctx = fmpq_mpoly_ctx.get(("t", *[f"r{j}" for j in range(g * L)]), "lex")
    t, *r = ctx.gens()
    one = ctx.from_dict({(0,) * (g * L + 1): 1})

    def centred(Y):
        out = []
        for k in range(g):
            block = Y[3 * k : 3 * k + 3]
            mean = (block[0] + block[1] + block[2]) * fmpq(1, 3)
            out += [y - mean for y in block]
        return out

    first = net.layers[0]
    Y = [first.W[i][0] * t + first.b[i] for i in range(3 * g)]
    norms, prev = [], one
    for lay in range(L):
        if lay:  # Y_(l+1) Pi_l = W [C_k prod_(j != k) rho_j]_k + b Pi_l
            rho = r[(lay - 1) * g : lay * g]
            C, h = centred(Y), []
            for k in range(g):
                others = one
                for j in range(g):
                    if j != k:
                        others *= rho[j]
                h += [c * others for c in C[3 * k : 3 * k + 3]]
            layer = net.layers[lay]
            prev = one
            for v in rho:
                prev *= v
            Y = [
                sum((layer.W[i][j] * h[j] for j in range(3 * g)), layer.b[i] * prev)
                for i in range(3 * g)
            ]
        C = centred(Y)
        for k in range(g):
            block = C[3 * k : 3 * k + 3]
            norms.append(sum(c * c for c in block) * fmpq(1, 3) + net.eps * prev**2)
    rho = r[(L - 1) * g :]
    C, (R0, R1), (b0, b1) = centred(Y), net.readout.W, net.readout.b
    Pi = one
    for v in rho:
        Pi *= v
    F = (b1 - b0) * Pi
    for k in range(g):
        others = one
        for j in range(g):
            if j != k:
                others *= rho[j]
        F += sum((R1[i] - R0[i]) * C[i] for i in range(3 * k, 3 * k + 3)) * others
    return F, ctx, norms


def _random_ln_g_line_net(rng, g, L, eps):
    def q():
        return fmpq(rng.randint(-6, 6), rng.randint(1, 4))

    n = 3 * g
    layers = [Affine(tuple((q(),) for _ in range(n)), tuple(q() for _ in range(n)))]
    layers += [
        Affine(tuple(tuple(q() for _ in range(n)) for _ in range(n)), tuple(q() for _ in range(n)))
        for _ in range(L - 1)
    ]
    readout = Affine(tuple(tuple(q() for _ in range(n)) for _ in range(2)), (q(), q()))
    return LNNet(1, n, eps, tuple(layers), readout, (0, 1), norms=(Norm(groups=g),) * L)


@pytest.mark.parametrize("g, L, nets, least", [(2, 1, 8, 2), (3, 1, 3, 2), (2, 2, 2, 1)])
def test_theorem_3_on_a_line_the_label_changes_at_most_g_to_the_L_2_to_the_gL(g, L, nets, least):
    from check_circle_maps import _changes, _eliminated, _sign_at, _signs_between_roots

    from lncapacity.theory.vc import line_bound

    rng = random.Random(10 * g + L)
    most = 0
    for _ in range(nets):
        net = _random_ln_g_line_net(rng, g, L, fmpq(1, 10))
        F, ctx, norms = _ln_g_line_tower(net, g)
        with precision(200):  # the tower has the sign of the net's score
            for x in (fmpq(-3), fmpq(1, 3), fmpq(7, 2)):
                z = net.map(arb).forward([arb(x)], arb.sqrt)
                assert (z[1] - z[0] > 0) == (_sign_at(F, norms, x) > 0)
        degree = _eliminated(F, ctx, norms).degree()
        changes = _changes(_signs_between_roots(F, ctx, norms), cyclic=False)
        assert degree <= g**L * 2 ** (g * L) and changes <= degree
        most = max(most, changes)
    assert line_bound(L, g) == g**L * 2 ** (g * L) + 1 and most >= least
