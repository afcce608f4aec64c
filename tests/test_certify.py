"""The certificate: rigorous, exact in what it claims, and able to fail."""

from __future__ import annotations

import ast
import importlib
import inspect
import math
import pkgutil
import sys
from dataclasses import replace

import pytest
import sympy
from flint import arb, fmpq

from lncapacity import InputError, build, certify
from lncapacity.arith import precision
from lncapacity.certify import decide
from lncapacity.model import Affine, LNNet

# the package (``import lncapacity.certify as m`` gives the function lncapacity.certify)
certify_module = sys.modules["lncapacity.certify"]

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
    modules = [certify_module] + [
        importlib.import_module(f"lncapacity.certify.{info.name}")
        for info in pkgutil.iter_modules(certify_module.__path__)
    ]
    assert len(modules) > 4  # the package and each of its modules
    for module in modules:
        tree = ast.parse(inspect.getsource(module))
        imported = {
            node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
        } | {
            alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.Import)
            for alias in node.names
        }
        assert not any("construct" in name for name in imported), (module.__name__, imported)


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


def random_net(rng, depth, rank_one=True, eps=0):
    def q():
        return fmpq(int(rng.integers(-9, 10)), int(rng.integers(1, 5)))

    layers, fan_in = [], 2
    for _ in range(depth):
        if rank_one:
            col, row = [q() for _ in range(3)], [q() for _ in range(fan_in)]
            W = tuple(tuple(c * r for r in row) for c in col)
        else:
            W = tuple(tuple(q() for _ in range(fan_in)) for _ in range(3))
        layers.append(Affine(W, tuple(q() for _ in range(3))))
        fan_in = 3
    readout = Affine(tuple(tuple(q() for _ in range(fan_in)) for _ in range(2)), (q(), q()))
    return LNNet(2, 3, fmpq(eps), tuple(layers), readout, (0, 1))


@pytest.mark.parametrize("eps", [fmpq(0), fmpq(1, 7)])
def test_scalar_form_of_rank_one_nets_matches_the_generic_forward(eps):
    import numpy as np

    from lncapacity.certify import _evaluator, scalar_chain

    rng = np.random.default_rng(3)
    compared = 0
    for depth in (1, 2, 5):
        net = random_net(rng, depth, eps=eps)
        assert scalar_chain(net) is not None
        fast = _evaluator(net)
        for _ in range(5):
            x = [fmpq(int(rng.integers(-20, 20)), 3) for _ in range(2)]
            with precision(300):
                generic = net.map(arb).forward([arb(v) for v in x], arb.sqrt)
                scalar = fast(x, 300)
                for a, b in zip(generic, scalar, strict=True):
                    # a NaN ball (0/0 where LN is undefined) agrees with nothing; skip those
                    if a.is_finite() and b.is_finite():
                        assert a.overlaps(b) and (a - b).rad() < 1e-60
                        compared += 1
    assert compared >= 25


def test_full_rank_layers_use_the_generic_forward():
    import numpy as np

    from lncapacity.certify import scalar_chain

    net = random_net(np.random.default_rng(5), 2, rank_one=False)
    assert scalar_chain(net) is None
    X = [[0, 0], [1, 2], [3, -1]]
    labels = list(net.predict(X, backend="exact"))
    assert certify(net, X, labels).all_certified
    assert labels == list(net.predict(X, backend="float64"))


def _grouped_tie(groups: int) -> LNNet:
    """An LN-G net of ``groups`` groups of 3 whose two readout rows are equal: every margin is
    exactly 0 (a zero-margin certificate bomb)."""
    from lncapacity.model import Norm

    one, zero = fmpq(1), fmpq(0)
    W = tuple(r for _ in range(groups) for r in ((one,), (-one,), (zero,)))
    b = tuple(v for j in range(groups) for v in (fmpq(-j), fmpq(j + 1), fmpq(-1, 8)))
    row = tuple(v for _ in range(groups) for v in (one, one, fmpq(-2)))
    layer = Affine(W, b)
    readout = Affine((row, row), (fmpq(2), fmpq(2)))
    return LNNet(1, 3 * groups, fmpq(0), (layer,), readout, (0, 1), norms=(Norm(groups=groups),))


def test_an_exact_tie_is_decided_at_the_starting_precision():
    """Equal readout rows tie at every input: the margin is exactly 0, proved symbolically, so
    no point climbs to 65,536 bits (which cost minutes and gigabytes on wide LN-G nets)."""
    from lncapacity.certify import balls

    net = _grouped_tie(50)
    X, y = [[fmpq(k, 3)] for k in range(40)], [k % 2 for k in range(40)]
    cert = certify(net, X, y, workers=1)
    assert cert.certified == 0
    assert {p.verdict for p in cert.points} == {"undecided"}
    assert {p.margin_interval for p in cert.points} == {(0.0, 0.0)}
    assert max(p.precision for p in cert.points) == 128
    with pytest.raises(ArithmeticError, match="same readout row"):
        decide(net, [fmpq(1, 3)])
    # a third class above the tie is still decided, and certifies its points
    third = Affine((*net.readout.W, net.readout.W[0]), (fmpq(2), fmpq(2), fmpq(3)))
    net3 = LNNet(1, net.width, net.eps, net.layers, third, (0, 1, 2), norms=net.norms)
    assert decide(net3, [fmpq(1, 3)]) == 2
    cert3 = certify(net3, X, [2] * len(X), workers=1)
    assert cert3.all_certified
    # equal rows whose biases differ below the float resolution do not tie
    close = Affine(((fmpq(1),), (fmpq(1),)), (1 + fmpq(1, 2**300), fmpq(1)))
    assert balls.tied_classes(LNNet(1, 3, fmpq(0), (), close, (0, 1))) == {}


def test_the_precision_work_is_bounded_by_the_inputs_size():
    """Ties no row comparison finds (``z_0 = h_1``, ``z_1 = -h_2``, and ``h_2 = -h_1`` at every
    input): each point's margin is exactly 0, and the work above the starting precision is
    bounded per chunk (certify.balls.ESCALATION), not 65,536 bits for every point."""
    from lncapacity.certify import balls

    one, zero = fmpq(1), fmpq(0)
    layer = Affine(((one,), (-one,), (zero,)), (zero, zero, zero))
    readout = Affine(((one, zero, zero), (zero, -one, zero)), (zero, zero))
    net = LNNet(1, 3, fmpq(0), (layer,), readout, (0, 1))
    m = 96
    X, y = [[fmpq(k + 1, 7)] for k in range(m)], [0] * m
    cert = certify(net, X, y, workers=1)
    assert cert.certified == 0 and {p.verdict for p in cert.points} == {"undecided"}
    chunks = -(-m // certify_module.CHUNK)
    work = sum(p.precision for p in cert.points)
    own = 128 + 2 * net.depth  # the starting precision, two bits a layer
    assert work <= m * balls.ESCALATION * own + chunks * 2 * balls.MAX_PRECISION
    assert max(p.precision for p in cert.points) == balls.MAX_PRECISION  # one still climbs


def test_a_wide_net_is_evaluated_at_a_bounded_precision(monkeypatch):
    """The balls of one evaluation hold at most MAX_BALL_BITS: the two widest layers' values
    and the weights that are not dyadic (a dyadic weight's ball is exact), at that precision."""
    from lncapacity.certify import balls

    net = _grouped_tie(50)  # 150 features; every weight dyadic (biases j, -j - 1, -1/8)
    assert balls.precision_limit(net, 1 << 16) == 1 << 16
    monkeypatch.setattr(balls, "MAX_BALL_BITS", 300 * 1000)
    assert balls.precision_limit(net, 1 << 16) == 1000
    third = replace(net.layers[0], b=(fmpq(1, 3), *net.layers[0].b[1:]))  # one weight not dyadic
    assert balls.precision_limit(replace(net, layers=(third,)), 1 << 16) == 300 * 1000 // 301
    monkeypatch.setattr(balls, "MAX_BALL_BITS", 1)
    assert balls.precision_limit(net, 1 << 16) == 128  # never below the starting precision


def test_the_precision_work_grows_with_the_depth(monkeypatch):
    """Balls lose bits layer by layer (about 2.5 a layer here: a depth-400 LN-G net needs
    1,024 bits at every point), so the input's own precision counts two bits a layer: with
    the work per point cut to twice that, every point is still certified (counting only the
    numbers' bits, 128, left most points undecided, and a depth-10,000 LN-G net failed)."""
    from lncapacity.certify import balls

    X, y = [[k] for k in range(32)], [k % 2 for k in range(32)]
    net = build(X, y, arch="ln-g", depth=400)
    monkeypatch.setattr(balls, "ESCALATION", 2)
    cert = certify(net, X, y, workers=1, max_precision=2048)
    assert cert.all_certified and cert.precision == 1024
