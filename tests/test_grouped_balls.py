"""The grouped interval pass in balls (nets with LN-G layers; proofs/interval_rounding.md,
"Products by BLAS" and "A grouped layer in balls"), its blocks over points, and the float
backends' chunks: every score and margin encloses the exact one, the verdicts are those of
``arb`` balls, and how the points are cut into blocks changes nothing that matters."""

from __future__ import annotations

import random

import numpy as np
import pytest
import sympy
from dyadic_nets import random_net
from flint import arb, fmpq
from test_groups import step_net

from lncapacity import certify, floats
from lncapacity.arith import precision
from lncapacity.certify import intervals as intervals_module  # where the passes read their sizes
from lncapacity.model import Affine, LNNet, Norm

Q = fmpq


def arb_scores(net: LNNet, X) -> list[list[arb]]:
    """Every point's scores in 300-bit balls (the exact net)."""
    with precision(300):
        balls = net.map(arb)
        return [balls.forward([arb(v) for v in x], arb.sqrt) for x in X]


def exact_margins(net: LNNet, X, y) -> list[arb]:
    with precision(300):
        return [
            min(z[c] - z[j] for j in range(len(z)) if j != c)
            for z, c in zip(arb_scores(net, X), y, strict=True)
        ]


def points(rng: random.Random, m: int, d: int = 2) -> list[list[fmpq]]:
    # denominators 3 and 7: inputs that are no floats (balls with a radius)
    return [
        [Q(rng.randint(-99, 99), rng.choice([1, 3, 7, 64])) for _ in range(d)] for _ in range(m)
    ]


@pytest.mark.parametrize(
    "layers, eps",
    [([(6, 3)], Q(1, 2**10)), ([(6, 2), (8, 4)], Q(1, 3)), ([(12, 4)], Q(0)), ([(4, 1)], Q(1, 7))],
)
def test_the_ball_pass_encloses_the_exact_margins_and_scores(layers, eps):
    rng = random.Random(len(layers) * 10 + layers[0][1])
    net = random_net(rng, layers, k=3, eps=eps)
    net = LNNet(net.input_dim, net.width, eps, net.layers, net.readout, net.classes, {}, net.norms)
    X = points(rng, 12)
    y = [rng.randrange(3) for _ in X]
    mlo, mhi, zlo, zhi = intervals_module.interval_pass(net.folded(), X, y)
    exact = np.array([[(v.lower(), v.upper()) for v in z] for z in arb_scores(net, X)])
    assert (zlo <= exact[..., 0]).all() and (exact[..., 1] <= zhi).all()
    assert (zhi - zlo < 1e-9).all()
    for lo, hi, exact in zip(mlo, mhi, exact_margins(net, X, y), strict=True):
        assert lo <= exact.lower() and exact.upper() <= hi and hi - lo < 1e-9
    # the verdicts are those of balls alone
    by_balls = certify(net, X, y, intervals=False, workers=1)
    by_pass = certify(net, X, y, intervals=True, workers=1)
    assert [p.verdict for p in by_pass.points] == [p.verdict for p in by_balls.points]
    assert by_pass.precision == 53


def test_margins_against_sympy_on_a_tiny_net():
    """Two groups of 3 on R^2, three classes: the margins by SymPy, exactly, to 40 digits."""
    W = [[1, 2], [-3, 1], [2, 2], [1, -1], [0, 3], [2, 1]]
    b = [Q(1, 3), 0, -1, Q(1, 2), 2, -1]
    R = [[1, 0, -1, 2, 0, 1], [0, 1, 1, -1, 1, 0], [-1, 2, 0, 0, -2, 1]]
    layer = Affine(tuple(tuple(Q(w) for w in row) for row in W), tuple(Q(v) for v in b))
    readout = Affine(tuple(tuple(Q(w) for w in row) for row in R), (Q(0), Q(1, 5), Q(-1, 3)))
    eps = Q(1, 10)
    net = LNNet(2, 6, eps, (layer,), readout, (0, 1, 2), {}, (Norm(groups=2),))
    X = [[Q(1, 3), Q(-2)], [Q(5), Q(1, 7)], [Q(-1, 2), Q(3, 2)], [Q(0), Q(0)]]
    y = [0, 1, 2, 1]
    mlo, mhi, _, _ = intervals_module.interval_pass(net, X, y)

    def r(v):
        return sympy.Rational(int(v.p), int(v.q))

    for i, (x, label) in enumerate(zip(X, y, strict=True)):
        c = [
            sum(r(w) * r(v) for w, v in zip(row, x, strict=True)) + r(bb)
            for row, bb in zip(layer.W, layer.b, strict=True)
        ]
        h = []
        for g in (c[:3], c[3:]):
            mu = sum(g) / 3
            var = sum((v - mu) ** 2 for v in g) / 3
            h += [(v - mu) / sympy.sqrt(var + r(eps)) for v in g]
        z = [
            sum(r(w) * v for w, v in zip(row, h, strict=True)) + r(bb)
            for row, bb in zip(readout.W, readout.b, strict=True)
        ]
        exact = float(sympy.N(sympy.Min(*[z[label] - z[j] for j in range(3) if j != label]), 40))
        assert mlo[i] <= exact <= mhi[i] and mhi[i] - mlo[i] < 1e-12


def test_blocks_readout_blocks_and_tasks_change_no_verdict(monkeypatch):
    rng = random.Random(21)
    net = random_net(rng, [(12, 4)], k=3).folded()
    X = points(rng, 23)
    y = [rng.randrange(3) for _ in X]
    exact = exact_margins(net, X, y)
    runs = []
    for block, readout, task in [
        (1, 1, 1),
        (24, 36, 12 * 5),
        (1 << 16, 1 << 21, 1 << 24),
        (7, 1 << 21, 40),
    ]:
        monkeypatch.setattr(intervals_module, "GROUPED_BLOCK", block)
        monkeypatch.setattr(intervals_module, "GROUPED_READOUT", readout)
        monkeypatch.setattr(intervals_module, "GROUPED_TASK", task)
        mlo, mhi, _, _ = intervals_module.interval_pass(net, X, y)
        for lo, hi, e in zip(mlo, mhi, exact, strict=True):
            assert lo <= e.lower() and e.upper() <= hi
        runs.append((mlo, mhi))
    first = runs[0]
    for mlo, mhi in runs[1:]:  # the same margins but for the last bits of BLAS's sums
        assert np.allclose(mlo, first[0], rtol=0, atol=1e-12)
        assert np.array_equal(mlo > 0, first[0] > 0) and np.array_equal(mhi < 0, first[1] < 0)


def test_tiny_groups_are_left_to_balls():
    """``|c|^2`` below ``NORMAL_FLOOR`` (weights ~2^-470, ``eps = 0``): the pass decides
    nothing there (its rounding would no longer be relative) and the balls decide."""
    tiny = Q(1, 2**470)
    base = step_net(eps=Q(0))
    layer = Affine(
        tuple(tuple(w * tiny for w in row) for row in base.layers[0].W),
        tuple(v * tiny for v in base.layers[0].b),
    )
    net = LNNet(1, 4, Q(0), (layer,), base.readout, base.classes, {}, base.norms)
    X = [[Q(1, 2)], [Q(1, 4)], [Q(2)], [Q(-1, 10)]]
    y = [1, 1, 0, 0]
    mlo, mhi, _, _ = intervals_module.interval_pass(net, X, y)
    assert np.isnan(mlo).all() and np.isnan(mhi).all()
    cert = certify(net, X, y, intervals=True, workers=1)
    assert cert.all_certified and cert.precision == 128


def test_float_chunks_give_the_same_floats(monkeypatch):
    rng = random.Random(22)
    net = random_net(rng, [(6, 2), (9, 3)], k=4)  # fan-in <= 128: every sum in a fixed order
    X = np.array([[rng.uniform(-3, 3) for _ in range(2)] for _ in range(29)])
    backends = [b for b in floats.available_backends() if b != "torch-float32"]
    whole = {b: floats.forward(net, X, b) for b in backends}
    for chunk in (1, 7 * 9):
        monkeypatch.setattr(floats, "FLOAT_CHUNK", chunk)
        for b in backends:
            z = floats.forward(net, X, b)
            if b in floats.DTYPES:
                assert np.array_equal(z, whole[b])
            else:  # PyTorch's kernels: the same scores up to their last bits
                assert np.allclose(z, whole[b], rtol=0, atol=1e-12 * np.abs(z).max())
                assert np.array_equal(z.argmax(1), whole[b].argmax(1))
