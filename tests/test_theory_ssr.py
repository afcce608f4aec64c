"""SSR and LSSR (theory.separability) and their trace through nets (theory.net_trace)."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import numpy as np
import pytest
from flint import arb, fmpq, fmpq_mat, fmpq_poly

import lncapacity
from lncapacity.errors import InputError
from lncapacity.model import Affine, LNNet
from lncapacity.theory import lssr, scatter_matrices, ssr
from lncapacity.theory.net_trace import _hidden, _hidden_rank_one, _scalar_steps, trace
from lncapacity.theory.reals import CertifiedReal, compare
from lncapacity.theory.separability import pencil_bounds

XOR = [[0, 0], [1, 1], [0, 1], [1, 0]]


def test_small_exact_values():
    assert str(ssr(XOR, [0, 0, 1, 1])) == "1" and str(lssr(XOR, [0, 0, 1, 1])) == "1"
    assert str(lssr(XOR, [0, 1, 0, 1])) == "0"  # the second coordinate separates
    assert str(ssr(XOR, [0, 1, 0, 1])) == "1/2"
    assert str(lssr([[0], [1], [5]], ["a", "a", "b"])) == str(ssr([[0], [1], [5]], "aab"))
    assert str(lssr([[1, 2], [3, 4]], [7, 7])) == "1"  # one class: nothing to separate
    assert lssr([[1, 2], [1, 2]], [0, 1]) is None and ssr([[3], [3]], [0, 1]) is None


def test_two_classes_closed_form():
    # with two classes S_b = (m1 m2 / m) delta delta^T (rank one), so the pencil's
    # smallest eigenvalue is 1 - (m1 m2 / m) delta^T S_t^-1 delta, a rational number
    rng = random.Random(5)
    for _ in range(10):
        X = [[fmpq(rng.randint(-9, 9)) for _ in range(3)] for _ in range(9)]
        y = [0] * 4 + [1] * 5
        _, St = scatter_matrices(np.array(X, dtype=object), y)
        mu = [
            sum((x[j] for x in X[:4]), fmpq(0)) / 4 - sum((x[j] for x in X[4:]), fmpq(0)) / 5
            for j in range(3)
        ]
        S = fmpq_mat(3, 3, [fmpq(v) for v in St.flatten()])
        if S.rank() < 3:
            continue
        delta = fmpq_mat(3, 1, mu)
        q = (delta.transpose() * S.solve(delta))[0, 0]
        assert lssr(X, y).rational == 1 - fmpq(20, 9) * q


def test_exact_algebraic_value_is_a_root_and_bounds_contain_it():
    rng = random.Random(16)
    algebraic = 0
    for _ in range(25):
        d, k = rng.choice([2, 3, 4]), rng.choice([2, 3, 4])
        X = [[fmpq(rng.randint(-9, 9), rng.randint(1, 3)) for _ in range(d)] for _ in range(12)]
        y = [rng.randrange(k) for _ in range(12)]
        exact_value = lssr(X, y)
        if exact_value.poly is not None:
            algebraic += 1
            p = fmpq_poly(exact_value.poly)
            assert p(exact_value.lo) * p(exact_value.hi) < 0
            assert exact_value.poly.degree() >= 2
        b = lssr(X, y, method="bounds")
        lo, hi = CertifiedReal(b.lo, b.lo), CertifiedReal(b.hi, b.hi)
        assert compare(lo, exact_value) <= 0 <= compare(hi, exact_value)  # exact containment
        assert b.hi - b.lo < fmpq(1, 2**30)
        assert 0 <= exact_value.lo and exact_value.hi <= 1
        assert compare(lssr(X, y, method="exact"), ssr(X, y)) <= 0  # the identity map is linear
    assert algebraic >= 5  # the test does see irrational values


def test_pencil_bounds_on_balls():
    Sw = np.array([[arb(1), arb(0)], [arb(0), arb(3)]], dtype=object)
    St = np.array([[arb(4), arb(0)], [arb(0), arb(4)]], dtype=object)
    b = pencil_bounds(Sw, St)
    assert b.lo < fmpq(1, 4) <= b.hi and b.hi - b.lo < fmpq(1, 2**30)
    # a singular total scatter: lo falls back to 0, hi is still a certified Rayleigh quotient
    St = np.array([[arb(4), arb(0)], [arb(0), arb(0)]], dtype=object)
    Sw = np.array([[arb(1), arb(0)], [arb(0), arb(0)]], dtype=object)
    b = pencil_bounds(Sw, St)
    assert b.lo <= fmpq(1, 4) <= b.hi


def test_json_forms():
    assert lssr(XOR, [0, 0, 1, 1]).to_json() == "1"
    r = lssr([[0, 0], [2, 1], [1, 3], [4, 4], [3, 0], [1, 1]], [0, 0, 1, 1, 2, 2])
    assert r.poly is not None and r.to_json().startswith("root of ")
    assert CertifiedReal(fmpq(1, 3), fmpq(1, 2)).to_json() == ["0.3333333333", "0.5"]


def test_bad_input():
    with pytest.raises(InputError):
        ssr([[0, 1], [2]], [0, 1])
    with pytest.raises(InputError):
        lssr([[0, "x"]], [0])
    with pytest.raises(ValueError):
        lssr(XOR, [0, 0, 1, 1], method="fast")


def test_trace_xor_nets():
    for method in ("runs", "pma"):
        net = lncapacity.build(XOR, [0, 0, 1, 1], method=method)
        layers = trace(net, XOR, [0, 0, 1, 1])
        assert [s.name for s in layers] == ["input", "LN 1", "readout"]
        assert layers[0].lssr.rational == 1 and layers[0].ssr.rational == 1
        assert layers[1].lssr.hi < 1  # certified drop
        assert layers[1].ssr.hi - layers[1].ssr.lo < fmpq(1, 2**30)
    assert layers[1].lssr.hi < fmpq(1, 10**30)  # pma merges each class to (nearly) one value


def test_trace_rank_one_and_generic_paths_agree():
    P = lncapacity.load_points(Path(__file__).resolve().parents[1] / "examples/spirals.csv")
    net = lncapacity.build(P)
    H = np.array(P.X, dtype=object)
    from lncapacity.arith import precision

    with precision(256):
        fast, _ = _hidden_rank_one(net, _scalar_steps(net), H, list(P.y), None)
        slow, _ = _hidden(net, H, list(P.y), None)
    assert len(fast) == len(slow) == net.depth + 1
    for a, b in zip(fast, slow, strict=True):
        for x, y in ((a.ssr, b.ssr), (a.lssr, b.lssr)):
            assert x.lo <= y.hi and y.lo <= x.hi  # both enclose the same number


def test_trace_generic_net_and_any_labels():
    # a hand-made width-3 net with full-rank layers takes the generic (matrix) path
    q = fmpq
    W1 = ((q(1), q(2)), (q(-1), q(1)), (q(3), q(-2)))
    W2 = ((q(1), q(0), q(2)), (q(0), q(1), q(1)), (q(1), q(1), q(0)))
    net = LNNet(
        2,
        3,
        q(0),
        (Affine(W1, (q(0), q(1), q(2))), Affine(W2, (q(1), q(0), q(0)))),
        Affine(((q(1), q(0), q(0)), (q(0), q(1), q(0)), (q(0), q(0), q(1))), (q(0),) * 3),
        ("a", "b", "c"),
    )
    assert _scalar_steps(net) is None
    X = [[0, 0], [1, 0], [0, 1], [1, 1], [2, 1], [1, 3]]
    layers = trace(net, X, [0, 1, 2, 0, 1, 2])  # three classes, not the net's
    assert len(layers) == 4 and all(s.lssr is not None for s in layers)
    assert all(s.ssr.hi - s.ssr.lo < fmpq(1, 2**30) for s in layers[1:])


def test_trace_depth_zero_and_errors():
    net = lncapacity.build([[0], [1]], [0, 1])
    layers = trace(net, [[0], [1], [3]], [0, 1, 1])
    assert [s.name for s in layers] == ["input", "readout"] and layers[1].lssr.is_exact
    with pytest.raises(InputError):
        trace(net, XOR, [0, 0, 1, 1])


@pytest.mark.slow
def test_trace_1000_points():
    from benchmarks.bench_methods import random_set

    P = random_set(1000, 0)
    net = lncapacity.build(P, method="runs")
    layers = trace(net, P)
    assert layers[-2].lssr.hi < layers[0].lssr.lo


def test_real_roots_skip_complex_roots_and_order_exactly():
    from lncapacity.theory.reals import real_roots

    p = fmpq_poly([1, 0, 1]) * fmpq_poly([-2, 1]) * fmpq_poly([-2, 0, 1])  # (x^2+1)(x-2)(x^2-2)
    roots = real_roots(p)
    assert len(roots) == 3
    assert roots[1].rational is None and roots[2].rational == 2
    for a, b in itertools.pairwise(roots):
        assert compare(a, b) == -1
    sqrt2 = roots[1]
    assert fmpq_poly(sqrt2.poly)(sqrt2.lo) < 0 < fmpq_poly(sqrt2.poly)(sqrt2.hi)
    assert compare(sqrt2, CertifiedReal(fmpq(141, 100), fmpq(141, 100))) == 1
    assert compare(sqrt2, sqrt2.refined().refined()) == 0
    assert compare(CertifiedReal(fmpq(0), fmpq(1)), CertifiedReal(fmpq(1, 2), fmpq(2))) is None
    assert str(sqrt2) == "root of x^2 - 2 in [1, 1.5]"  # isolating: 2 is also a root of p
