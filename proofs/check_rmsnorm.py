"""Executable check of proofs/rmsnorm.md: LayerNorm of width k + 1 is RMSNorm of width k in
Helmert's basis (exactly, every eps, with gains and biases, both ways, in groups), and the
correspondence is irrational."""

import itertools
import math

import pytest
import sympy as sp
from flint import arb, fmpq

from lncapacity.arith import precision
from lncapacity.construct.rms import _down, _up, twin
from lncapacity.model import Affine, LNNet, Norm, layer_norm


def sq(q):
    return sp.sqrt(sp.Rational(int(q.p), int(q.q)))


def rat(q):
    return sp.Rational(int(q.p), int(q.q))


def helmert(k):
    """Helmert's (k + 1) x k basis, column j = (1, .., 1, -j, 0, ..) / sqrt(j (j + 1))."""
    Q = sp.zeros(k + 1, k)
    for j in range(1, k + 1):
        for i in range(j):
            Q[i, j - 1] = 1 / sp.sqrt(j * (j + 1))
        Q[j, j - 1] = -sp.Integer(j) / sp.sqrt(j * (j + 1))
    return Q


def ln(y, eps):
    return sp.Matrix(layer_norm(list(y), eps, sp.sqrt))


def rms(x, eps):
    return sp.Matrix(layer_norm(list(x), eps, sp.sqrt, centre=False))


@pytest.mark.parametrize("k", range(1, 7))
def test_helmert_is_an_isometry_onto_the_hyperplane(k):
    Q = helmert(k)
    one = sp.ones(k + 1, 1)
    assert sp.simplify(Q.T * Q) == sp.eye(k)
    assert sp.simplify(Q.T * one) == sp.zeros(k, 1)
    assert sp.simplify(Q * Q.T) == sp.eye(k + 1) - one * one.T / (k + 1)
    # lncapacity's _down and _up are Q^T and Q
    y = sp.Matrix(sp.symbols(f"y0:{k + 1}"))
    x = sp.Matrix(sp.symbols(f"x0:{k}"))
    assert sp.simplify(sp.Matrix(_down(list(y), k, sq)) - Q.T * y) == sp.zeros(k, 1)
    assert sp.simplify(sp.Matrix(_up(list(x), k, sq)) - Q * x) == sp.zeros(k + 1, 1)


@pytest.mark.parametrize("k", range(1, 7))
def test_theorem_1_the_denominators(k):
    """|P y|^2 / (k + 1) + eps = (k / (k + 1)) (|Q^T y|^2 / k + eps (k + 1) / k), as
    polynomials in y and eps: the whole of Theorem 1 once Q is an isometry."""
    y = sp.Matrix(sp.symbols(f"y0:{k + 1}", real=True))
    eps = sp.symbols("epsilon", nonnegative=True)
    P = sp.eye(k + 1) - sp.ones(k + 1, k + 1) / (k + 1)
    x = helmert(k).T * y
    lhs = (P * y).dot(P * y) / (k + 1) + eps
    rhs = sp.Rational(k, k + 1) * (x.dot(x) / k + eps * sp.Rational(k + 1, k))
    assert sp.expand(lhs - rhs) == 0


@pytest.mark.parametrize("k", [1, 2, 3])
def test_theorem_1_itself(k):
    y = sp.Matrix(sp.symbols(f"y0:{k + 1}", real=True))
    eps = sp.symbols("epsilon", positive=True)
    Q, c = helmert(k), sp.sqrt(sp.Rational(k + 1, k))
    eps_rms = eps * sp.Rational(k + 1, k)
    assert sp.simplify(ln(y, eps) - c * Q * rms(Q.T * y, eps_rms)) == sp.zeros(k + 1, 1)
    x = sp.Matrix(sp.symbols(f"x0:{k}", real=True))
    assert sp.simplify(rms(x, eps_rms) - Q.T * ln(Q * x, eps) / c) == sp.zeros(k, 1)


def _rational_net(rng, d, widths, classes=2, norms=(), eps=0):
    def q():
        return fmpq(rng.randint(-9, 9), rng.randint(1, 5))

    def a(rows, cols):
        return Affine(
            tuple(tuple(q() for _ in range(cols)) for _ in range(rows)),
            tuple(q() for _ in range(rows)),
        )

    layers, fan_in = [], d
    for n in widths:
        layers.append(a(n, fan_in))
        fan_in = n
    width = widths[0] if len(set(widths)) == 1 else None
    return LNNet(
        d, width, fmpq(eps), tuple(layers), a(classes, fan_in), tuple(range(classes)), {}, norms
    )


def _sym(net):
    return net.map(lambda v: v if isinstance(v, sp.Basic) else rat(v))


def _check_layers(rms_net, ln_net, k):
    """The hypotheses of Theorem 1 at every layer, for a symbolic hidden state h of the RMSNorm
    net: the LayerNorm net fed c Q h gives Q^T y' = W h + b; the readouts agree on c Q h."""
    g = rms_net.norm(0).groups
    c = sp.sqrt(sp.Rational(k + 1, k))
    Qg = sp.diag(*[helmert(k)] * g)
    h = sp.Matrix(sp.symbols(f"h0:{rms_net.input_dim}"))
    for i, (a, a2) in enumerate(zip(rms_net.layers, ln_net.layers, strict=True)):
        lift = h if i == 0 else c * Qg * h
        y = sp.Matrix(a2.W) * lift + sp.Matrix(a2.b)
        want = sp.Matrix(a.W) * h + sp.Matrix(a.b)
        assert sp.simplify(Qg.T * y - want) == sp.zeros(len(a.b), 1)
        h = sp.Matrix(sp.symbols(f"h0:{len(a.b)}"))
    z = sp.Matrix(ln_net.readout.W) * (c * Qg * h) + sp.Matrix(ln_net.readout.b)
    want = sp.Matrix(rms_net.readout.W) * h + sp.Matrix(rms_net.readout.b)
    assert sp.simplify(z - want) == sp.zeros(len(want), 1)


def test_corollary_1_an_rms_net_with_gains_and_biases_to_layernorm():
    import random

    rng = random.Random(1)
    gains = [tuple(sp.symbols(f"g{i}_0:2", positive=True)) for i in range(3)]
    biases = [tuple(sp.symbols(f"beta{i}_0:2")) for i in range(3)]
    eps = sp.symbols("epsilon", positive=True)
    base = _sym(_rational_net(rng, 2, [2, 2, 2]))
    net = LNNet(
        2,
        2,
        eps,
        base.layers,
        base.readout,
        base.classes,
        {},
        tuple(Norm(g, b, rms=True) for g, b in zip(gains, biases, strict=True)),
    )
    folded = net.folded()
    x = sp.Matrix(sp.symbols("x0:2"))
    # folding is an identity (one layer, symbolic everything)
    identity = Affine(((1, 0), (0, 1)), (0, 0))
    one = LNNet(2, 2, eps, net.layers[:1], identity, (0, 1), {}, net.norms[:1])
    unfolded = sp.Matrix(one.forward(list(x), sp.sqrt))
    assert sp.simplify(unfolded - sp.Matrix(one.folded().forward(list(x), sp.sqrt))) == sp.zeros(
        2, 1
    )
    back = twin(folded, "ln", sq)
    assert back.widths == (3, 3, 3) and not back.rms and back.eps == eps * sp.Rational(2, 3)
    _check_layers(folded, back, 2)
    assert twin(back, "rms", sq).eps == eps


def test_corollary_1_a_layernorm_net_to_rmsnorm_end_to_end():
    import random

    rng = random.Random(2)
    eps = sp.symbols("epsilon", positive=True)
    net = _rational_net(rng, 2, [3])
    net = LNNet(2, 3, eps, _sym(net).layers, _sym(net).readout, net.classes)
    r = twin(net, "rms", sq)
    assert r.rms and r.widths == (2,) and r.eps == eps * sp.Rational(3, 2)
    x = [sp.Rational(3, 7), sp.Rational(-2, 5)]
    # depth one, symbolic eps: the scores are equal as functions of eps
    diff = sp.Matrix(net.forward(x, sp.sqrt)) - sp.Matrix(r.forward(x, sp.sqrt))
    assert sp.simplify(diff) == sp.zeros(2, 1)


@pytest.mark.parametrize("eps", [fmpq(0), fmpq(1, 100)])
def test_corollary_1_deep_in_balls_and_both_ways_exactly(eps):
    import random

    rng = random.Random(3)
    net = _rational_net(rng, 3, [3, 3, 3], classes=3, eps=eps)
    r = twin(_sym(net), "rms", sq)
    _check_layers(r, _sym(net), 2)
    back = twin(r, "ln", sq)  # back to width 3: P W' P, P b', R' P (centring is redundant)
    P = sp.eye(3) - sp.ones(3, 3) / 3
    maps = zip((*back.layers, back.readout), (*_sym(net).layers, _sym(net).readout), strict=True)
    for i, (a, a2) in enumerate(maps):
        left = P if i < net.depth else sp.eye(len(a.b))
        want = left * sp.Matrix(a2.W) * (P if i else sp.eye(net.input_dim))
        assert sp.simplify(sp.Matrix(a.W) - want) == sp.zeros(*want.shape)
        assert sp.simplify(sp.Matrix(a.b) - left * sp.Matrix(a2.b)) == sp.zeros(len(a.b), 1)
    again = twin(back, "rms", sq)
    for a, a2 in zip((*again.layers, again.readout), (*r.layers, r.readout), strict=True):
        assert sp.simplify(sp.Matrix(a.W) - sp.Matrix(a2.W)) == sp.zeros(*sp.Matrix(a.W).shape)
    with precision(400):  # end to end, depth 3, in balls
        rb = twin(net.map(arb), "rms", lambda q: arb(q).sqrt())
        for x in ([1, 2, -1], [fmpq(1, 3), 0, 5]):
            xb = [arb(v) for v in x]
            z, zr = net.map(arb).forward(xb, arb.sqrt), rb.forward(xb, arb.sqrt)
            assert all(abs(s - t) < arb(2) ** -380 for s, t in zip(z, zr, strict=True))


def test_corollary_3_grouped_ln_is_parallel_layer_scaling():
    import random

    rng = random.Random(4)
    net = _rational_net(rng, 2, [6, 6], norms=(Norm(groups=2), Norm(groups=2)))
    r = twin(_sym(net), "rms", sq)
    assert r.widths == (4, 4) and [n.groups for n in r.norms] == [2, 2] and r.rms
    _check_layers(r, _sym(net), 2)
    # groups of 2 (LN-G) are PLS groups of one feature
    net2 = _rational_net(rng, 2, [4], norms=(Norm(groups=2),))
    r2 = twin(_sym(net2), "rms", sq)
    assert r2.widths == (2,) and r2.norms[0].groups == 2
    _check_layers(r2, _sym(net2), 1)


def test_theorem_2a_a_correspondence_is_a_similarity():
    n2, An2, k, kappa = sp.symbols("n2 An2 k kappa", positive=True)  # |v|^2, |A v|^2
    eps, eps_r, t = sp.symbols("epsilon epsilon_r t", nonnegative=True)
    # |t v|^2/(k+1) + eps = kappa^2 (|t A v|^2 / k + eps'), for every t: both coefficients vanish
    expr = sp.expand(t**2 * n2 / (k + 1) + eps - kappa**2 * (t**2 * An2 / k + eps_r))
    sol = sp.solve([expr.coeff(t, 2), expr.coeff(t, 0)], [An2, eps_r], dict=True)
    assert len(sol) == 1
    assert sp.simplify(sol[0][An2] - k * n2 / ((k + 1) * kappa**2)) == 0
    assert sp.simplify(sol[0][eps_r] - eps / kappa**2) == 0


def test_theorem_2b_c_is_irrational():
    for k in range(1, 10**5 + 1):
        assert math.isqrt(k * (k + 1)) ** 2 != k * (k + 1)


def test_theorem_2c_no_rational_similarity_for_width_two():
    for k in range(1, 9):  # det(I + 1 1^T) = k + 1
        assert (sp.eye(k) + sp.ones(k, k)).det() == k + 1
    assert math.isqrt(3) ** 2 != 3
    # a finite search agrees: no integer 3 x 2 matrix onto H_2 is a similarity
    vs = [v for v in itertools.product(range(-6, 7), repeat=3) if sum(v) == 0 and any(v)]
    for a in vs:
        for b in vs:
            assert not (
                sum(p * q for p, q in zip(a, b, strict=True)) == 0
                and sum(p * p for p in a) == sum(q * q for q in b)
            )


def test_theorem_2c_width_three_has_a_rational_isometry_and_an_irrational_constant():
    Q = sp.Matrix([[1, 1, 1], [1, -1, -1], [-1, 1, -1], [-1, -1, 1]]) / 2
    assert Q.T * Q == sp.eye(3) and Q.T * sp.ones(4, 1) == sp.zeros(3, 1)
    y = sp.Matrix(sp.symbols("y0:4", real=True))
    eps = sp.symbols("epsilon", positive=True)
    c = sp.sqrt(sp.Rational(4, 3))
    assert not c.is_rational
    assert sp.simplify(ln(y, eps) - c * Q * rms(Q.T * y, eps * sp.Rational(4, 3))) == sp.zeros(4, 1)


def test_theorem_2d_groups_of_two_are_rational():
    y1, y2 = sp.symbols("y1 y2", real=True)
    eps = sp.symbols("epsilon", positive=True)
    out = ln([y1, y2], eps) - sp.Matrix([1, -1]) * rms([(y1 - y2) / 2], eps)[0]
    assert sp.simplify(out) == sp.zeros(2, 1)
