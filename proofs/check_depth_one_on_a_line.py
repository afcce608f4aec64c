"""Executable check of proofs/depth_one_on_a_line.md."""

import random

import sympy as sp
from flint import arb, fmpq

from lncapacity.arith import precision
from lncapacity.construct import runs
from lncapacity.model import Affine, LNNet, layer_norm


def test_the_sign_equation_is_quadratic():
    x = sp.symbols("x", real=True)
    a = sp.symbols("a1:4", real=True)
    b = sp.symbols("b1:4", real=True)
    w = sp.symbols("w1:4", real=True)
    r, eps = sp.symbols("r epsilon", real=True)
    s = sp.symbols("s", positive=True)  # sqrt(var + eps), treated as a symbol
    y = [a[i] * x + b[i] for i in range(3)]
    h = layer_norm(y, eps, lambda _: s)  # LN(y) = centred y / s
    numerator = sp.expand(sum(w[i] * h[i] for i in range(3)) * s)  # alpha x + beta
    q = sp.expand(sum((yi - sum(y) / 3) ** 2 for yi in y) / 3 + eps)  # s^2
    poly = sp.Poly(sp.expand(numerator**2 - r**2 * q), x)
    assert poly.degree() <= 2


def test_random_depth_one_nets_have_at_most_three_runs():
    rng = random.Random(0)

    def q():
        return fmpq(rng.randint(-9, 9), rng.randint(1, 4))

    xs = [fmpq(k, 8) for k in range(-80, 81)]
    most = 0
    for _ in range(60):
        layer = Affine(tuple((q(),) for _ in range(3)), tuple(q() for _ in range(3)))
        readout = Affine(tuple(tuple(q() for _ in range(3)) for _ in range(2)), (q(), q()))
        net = LNNet(1, 3, rng.choice([fmpq(0), fmpq(1, 1000)]), (layer,), readout, (0, 1))
        labels = []
        with precision(200):
            balls = net.map(arb)
            for x in xs:
                z = balls.forward([arb(x)], arb.sqrt)
                d = z[1] - z[0]
                if d > 0:
                    labels.append(1)
                elif d < 0:
                    labels.append(0)
        most = max(most, runs(labels))
        assert runs(labels) <= 3
    assert most == 3  # and three runs do occur
