"""Executable check of proofs/affine_contrast.md."""

import itertools

import sympy as sp
from flint import fmpq

from lncapacity import build, certify
from lncapacity.affine import affine_separation, is_witness
from lncapacity.model import layer_norm


def test_witness_for_0_1_0():
    lam, s, xs = [fmpq(1, 4), fmpq(1, 2), fmpq(1, 4)], [-1, 1, -1], [0, 1, 2]
    assert sum(lam) == 1 and min(lam) >= 0
    assert sum(la * sk * x for la, sk, x in zip(lam, s, xs, strict=True)) == 0
    assert sum(la * sk for la, sk in zip(lam, s, strict=True)) == 0
    assert is_witness([[0], [1], [2]], [0, 1, 0], lam)


def test_exactly_two_labelings_need_layer_norm_and_one_layer_suffices():
    X = [[0], [1], [2]]
    hard = [y for y in itertools.product((0, 1), repeat=3) if not affine_separation(X, y).separable]
    assert hard == [(0, 1, 0), (1, 0, 1)]
    for y in hard:
        net = build(X, list(y))
        assert net.depth == 1 and certify(net, X, list(y)).all_certified


def test_batch_norm_at_inference_is_affine_layer_norm_is_not():
    x = sp.symbols("x1:4", real=True)
    mu, gamma, beta = sp.symbols("mu1:4", real=True), sp.symbols("g1:4"), sp.symbols("b1:4")
    var = sp.symbols("v1:4", positive=True)
    eps = sp.Rational(1, 100000)
    bn = [gamma[i] * (x[i] - mu[i]) / sp.sqrt(var[i] + eps) + beta[i] for i in range(3)]
    assert all(sp.hessian(f, x) == sp.zeros(3, 3) for f in bn)
    ln = layer_norm(list(x), eps, sp.sqrt)
    H = sp.hessian(ln[0], x).subs({x[0]: 1, x[1]: 2, x[2]: 4})
    assert H != sp.zeros(3, 3)
    assert sp.N(H[0, 0]) != 0
