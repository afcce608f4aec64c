"""The certificate: rigorous, exact in what it claims, and able to fail."""

from __future__ import annotations

import ast
import inspect
import math

import pytest
import sympy
from flint import arb, fmpq

import lncapacity.certify as certify_module
from lncapacity import InputError, build, certify
from lncapacity.arith import precision
from lncapacity.certify import decide
from lncapacity.model import Affine, LNNet

XOR = ([[0, 0], [0, 1], [1, 0], [1, 1]], [0, 1, 1, 0])


def exact_scores(net, x):
    """The readout scores as exact SymPy numbers (the model is generic in its number type)."""
    sym = net.map(lambda q: sympy.Rational(int(q.p), int(q.q)))
    return sym.forward([sympy.Rational(v) for v in x], sympy.sqrt)


def test_margins_are_rigorous_lower_bounds_of_the_exact_margins():
    X, y = XOR
    net = build(X, y)
    cert = certify(net, X, y)
    assert cert.all_certified and cert.certified == 4
    for point, x, label in zip(cert.points, X, y, strict=True):
        z = exact_scores(net, x)
        exact_margin = sympy.N(z[label] - z[1 - label], 50)
        assert sympy.Float(point.margin, 50) <= exact_margin  # a lower bound ...
        assert exact_margin - sympy.Float(point.margin, 50) < 4 * math.ulp(
            point.margin
        )  # ... and a tight one
        assert point.precision >= 64


def test_a_wrong_net_fails_its_certificate():
    X, y = XOR
    net = build(X, y)
    flipped = LNNet(
        net.input_dim,
        net.width,
        net.eps,
        net.layers,
        Affine(tuple(reversed(net.readout.W)), tuple(reversed(net.readout.b))),
        net.classes,
    )
    cert = certify(flipped, X, y)
    assert cert.certified == 0 and not cert.all_certified
    assert all(p.margin == -math.inf for p in cert.points)
    assert [p.index for p in cert.failures] == [0, 1, 2, 3]


def test_a_point_on_the_boundary_is_never_certified():
    # z = (x, -x): x = 0 ties, so neither class can be proven
    net = LNNet(1, 3, fmpq(0), (), Affine(((fmpq(1),), (fmpq(-1),)), (fmpq(0), fmpq(0))), (0, 1))
    cert = certify(net, [[0], [1]], [0, 0], max_precision=256)
    assert [p.certified for p in cert.points] == [False, True]
    assert cert.points[0].precision == 256
    assert cert.points[1].margin == 2.0
    with pytest.raises(ArithmeticError, match="cannot decide"):
        decide(net, [0], max_precision=256)
    assert decide(net, [fmpq(1, 10**40)]) == 0


def test_precision_rises_until_decided():
    # z = (x + 1 + 2^-300, x + 1): a margin of 2^-300 on top of 4/3, invisible to
    # float64 and to the starting precision
    one, tiny = fmpq(1), fmpq(1, 2**300)
    net = LNNet(1, 3, fmpq(0), (), Affine(((one,), (one,)), (one + tiny, one)), (0, 1))
    cert = certify(net, [[fmpq(1, 3)]], [0])
    assert cert.all_certified
    assert cert.precision > 300
    assert 0 < cert.min_margin <= 2.0**-299


def test_incompatible_points_are_input_errors():
    X, y = XOR
    net = build(X, y)
    with pytest.raises(InputError, match="points have 1 features, the net takes 2"):
        certify(net, [[0], [1]], [0, 1])
    with pytest.raises(InputError, match="not classes of the net"):
        certify(net, X, [0, 1, 1, 5])


def test_certificate_does_not_import_the_constructions():
    """verify shares no code path with construction other than the model and loaders."""
    tree = ast.parse(inspect.getsource(certify_module))
    imported = {
        node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
    } | {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    assert not any("construct" in name for name in imported), imported


def test_ball_forward_encloses_the_exact_value():
    X, y = XOR
    net = build(X, y, eps=fmpq(1, 100000), depth=3)
    for x in X:
        z = exact_scores(net, x)
        with precision(128):
            balls = net.map(arb).forward([arb(v) for v in x], arb.sqrt)
        for zi, bi in zip(z, balls, strict=True):
            with precision(256):
                approx = arb(str(sympy.N(zi, 70)), 1e-60)  # the exact value is in here
                assert bi.overlaps(approx)
                assert bi.rad() < 1e-30
