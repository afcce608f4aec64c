"""LN-G at depth 1 (issue 30, part 2): ``build(..., arch="ln-g")`` and ``certify --arch ln-g``.

Exact mathematics only: every built net is checked point by point in ball arithmetic through
the model's own forward pass (:meth:`LNNet.forward`) against the margin the theorem proves
(proofs/ln_g_steps.md: at least ``(1 - pi^2/128) sqrt 6``), and by the library's certificate,
which decides these nets by the per-point form of the theorem (§7: at least
``(29/32) sqrt 6``).  Float checks use a fixed-order NumPy forward pass
(no BLAS in the sums that decide), so they do not depend on the machine.
"""

from __future__ import annotations

import itertools
import random
import subprocess
import sys

import numpy as np
import pytest
from flint import arb, fmpq

from lncapacity import fileformat
from lncapacity.arith import exact, precision, to_float
from lncapacity.certify import THEOREM_PRECISION, certify
from lncapacity.construct import build
from lncapacity.construct.groups import PI2_8, build_ln_g
from lncapacity.data import points_from_arrays
from lncapacity.errors import InputError
from lncapacity.reproducible import matmul

SEVEN = [[0, 0], [3, 1], [1, 4], [5, 5], [6, 2], [2, 7], [8, 6]]
PROVED = 1 - PI2_8 / 16  # the margin over sqrt 6 the construction guarantees
BY_THEOREM_8 = 29 / 32 * 6**0.5  # what the certificate proves of it (proofs/ln_g_steps.md §7)


def _ball_margins(net, points):
    """Each point's exact margin ``z_label - max_other z``, as a ball (the model's forward)."""
    out = []
    with precision(200):
        ballnet = net.map(arb)
        for x, label in zip(points.X, points.y, strict=True):
            z = ballnet.forward([arb(q) for q in x], lambda a: a.sqrt())
            own = net.classes.index(label)
            others = [zc for c, zc in enumerate(z) if c != own]
            out.append(z[own] - max(others) if others else arb(10))
    return out


def _assert_by_theorem(net, points):
    cert = certify(net, points)
    assert cert.all_certified and cert.min_margin >= BY_THEOREM_8
    if len(net.classes) > 1:  # (one class: every margin is infinite, no theorem needed)
        assert all(p.precision == THEOREM_PRECISION for p in cert.points)


def _assert_proved_margin(net, points):
    _assert_by_theorem(net, points)
    root6 = arb(6).sqrt()
    for margin in _ball_margins(net, points):
        assert margin > root6 * arb(PROVED)


def _numpy_forward(net, X, dtype):
    """The NumPy backend's forward pass for a depth-1 grouped net (product then bias, each
    group's LayerNorm as ``floats.layer_norm`` computes it, the readout), in fixed order."""
    dt = np.dtype(dtype).type
    layer = net.layers[0]
    W = np.array([[to_float(q) for q in row] for row in layer.W]).astype(dt)
    b = np.array([to_float(q) for q in layer.b]).astype(dt)
    R = np.array([[to_float(q) for q in row] for row in net.readout.W]).astype(dt)
    h = np.asarray(X, dtype=np.float64).astype(dt)
    Y = (matmul(h, W.T) + b).reshape(len(h), net.norm(0).groups, -1)
    Y = Y - Y.mean(axis=-1, keepdims=True)
    Y = Y / np.sqrt((Y * Y).mean(axis=-1, keepdims=True) + dt(to_float(net.eps)))
    return matmul(Y.reshape(len(h), -1), R.T)


def _right(z, net, y):
    idx = np.array([net.classes.index(label) for label in y])
    own = z[np.arange(len(y)), idx].astype(np.float64)
    zz = z.astype(np.float64)
    zz[np.arange(len(y)), idx] = -np.inf
    return own - zz.max(axis=1)


# ---------------------------------------------------------------- every labeling, exactly


def test_every_binary_labeling_of_seven_points():
    """All 2^7 labelings of 7 points in the plane: depth 1, every point right with the proved
    margin, exactly (balls) and by the theorem's certificate."""
    for bits in range(2**7):
        y = [(bits >> i) & 1 for i in range(7)]
        points = points_from_arrays(SEVEN, y)
        net = build(points, arch="ln-g", classes=[0, 1])
        assert net.depth == 1 and net.meta["arch"] == "ln-g" and net.meta["method"] == "steps"
        assert net.widths == (3 * net.norm(0).groups,)
        assert net.norm(0).groups == net.meta["boundaries"] + 2
        _assert_proved_margin(net, points)


def test_three_class_labelings_and_eps():
    rng = random.Random(7)
    labelings = [[i % 3 for i in range(7)], [0, 0, 1, 1, 2, 2, 0], [2, 1, 0, 2, 1, 0, 1]]
    labelings += [[rng.randrange(3) for _ in range(7)] for _ in range(12)]
    for y, eps in itertools.product(labelings, ("0", "1e-5", "1/3")):
        points = points_from_arrays(SEVEN, y)
        net = build(points, arch="ln-g", eps=eps)
        assert net.eps == exact(eps)
        _assert_proved_margin(net, points)


def test_absent_classes_and_a_single_class():
    points = points_from_arrays(SEVEN, [1, 1, 2, 2, 1, 2, 1])
    net = build(points, arch="ln-g", classes=[0, 1, 2, 3])
    assert net.readout.W[0] == net.readout.W[3] == tuple(fmpq(0) for _ in net.readout.W[0])
    _assert_proved_margin(net, points)
    one = points_from_arrays(SEVEN, [4] * 7)
    net1 = build(one, arch="ln-g")
    assert net1.norm(0).groups == 2 and net1.meta["boundaries"] == 0
    _assert_proved_margin(net1, one)


def test_the_centres_lie_between_the_labels():
    """Along the projection, each inner centre lies strictly between two neighbours of
    different labels, at least 7/16 of their gap from each, and nothing else is a centre."""
    rng = random.Random(2)
    X = [[rng.randint(-99, 99), rng.randint(-99, 99), rng.randint(-99, 99)] for _ in range(60)]
    y = [rng.randrange(4) for _ in X]
    points = points_from_arrays(X, y)
    net = build(points, arch="ln-g")
    read = [fmpq(r) for r in net.meta["projection"]]
    t = [sum((r * q for r, q in zip(read, x, strict=True)), fmpq(0)) for x in points.X]
    layer = net.layers[0]
    S = layer.W[0][0] / read[0]
    C = sorted((layer.b[3 * j + 1] - layer.b[3 * j]) / (2 * S) for j in range(net.norm(0).groups))
    order = sorted(range(len(t)), key=t.__getitem__)
    inner = []
    for i, j in itertools.pairwise(order):
        if points.y[i] != points.y[j]:
            (c,) = [c for c in C if t[i] < c < t[j]]
            gap = t[j] - t[i]
            assert min(c - t[i], t[j] - c) >= fmpq(7, 16) * gap
            inner.append(c)
        else:
            assert not [c for c in C if t[i] < c < t[j]]
    assert C[1:-1] == inner and C[0] < t[order[0]] and C[-1] > t[order[-1]]


def test_extreme_scales_certified_and_floats_claimed_only_in_range():
    """Coordinates of 10^400 and 10^-400 (beyond every float): exactly certified, and no float
    format is claimed proved; 10^30 and 10^-3 (float32's range): both proved, and right."""
    y = [i % 3 for i in range(12)]
    far = points_from_arrays(
        [[fmpq(10) ** 400 * i, fmpq(i * i % 7, 10**400)] for i in range(12)], y
    )
    net = build(far, arch="ln-g", eps="1e-5")
    _assert_proved_margin(net, far)
    assert not any(v["proved"] for v in net.meta["float"].values())
    near = points_from_arrays([[fmpq(10) ** 30 * i, fmpq(i * i % 7, 1000)] for i in range(12)], y)
    net = build(near, arch="ln-g", eps="1e-5")
    _assert_proved_margin(net, near)
    assert all(v["proved"] for v in net.meta["float"].values())
    for dtype in ("float64", "float32"):
        assert (_right(_numpy_forward(net, near.floats(), dtype), net, y) > 2).all()


# ---------------------------------------------------------------- the projection


def test_structured_data_few_boundaries():
    """Two clusters with a class each (and a few points of the other class inside the first):
    the chosen direction has few boundaries, where a poor one has hundreds."""
    rng = np.random.default_rng(3)
    shift = np.array([6.0, 0.0, 0.0])
    A = rng.standard_normal((300, 3)) + shift
    B = rng.standard_normal((300, 3)) - shift
    X = np.vstack([A, B])
    y = np.r_[np.zeros(300, int), np.ones(300, int)]
    y[:3] = 1
    net = build(X, y, arch="ln-g")
    assert net.meta["boundaries"] <= 6
    _assert_by_theorem(net, points_from_arrays(X, y))
    # the y axis, for contrast: about m / 2 boundaries
    t = X[:, 1]
    ys = y[np.argsort(t)]
    assert int((ys[1:] != ys[:-1]).sum()) > 100


def test_same_seed_same_net_and_ln3_unchanged():
    X, y = SEVEN, [0, 1, 1, 0, 2, 0, 1]
    assert build(X, y, arch="ln-g", seed=3) == build(X, y, arch="ln-g", seed=3)
    ln3 = build(X, y)
    assert fileformat.dumps(fileformat.to_dict(build(X, y, arch="ln3"))) == fileformat.dumps(
        fileformat.to_dict(ln3)
    )
    assert ln3.meta.get("arch") is None and not ln3.norms


# ---------------------------------------------------------------- floats


def test_float32_right_on_2000_points_10_classes():
    """2,000 random points in R^3, 10 classes: float32 (NumPy) right on every point."""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((2000, 3))
    y = rng.integers(0, 10, 2000)
    points = points_from_arrays(X, y)
    net = build(points, arch="ln-g")
    assert net.meta["float"]["float64"]["proved"]
    _assert_by_theorem(net, points)
    for dtype in ("float64", "float32"):
        margins = _right(_numpy_forward(net, X, dtype), net, y)
        assert (margins > 2).all(), dtype  # the exact margin is > 2.26


def test_float32_by_the_library_backend():
    from lncapacity import floats

    rng = np.random.default_rng(1)
    X = rng.standard_normal((2000, 3))
    y = rng.integers(0, 10, 2000)
    points = points_from_arrays(X, y)
    net = build(points, arch="ln-g")
    for backend in floats.available_backends():
        got = floats.check(net, points, backend)
        assert got.all_agree, backend
    # the library's float32 (its own summation order) right with the margin the test's own
    # float32 pass has, up to float32's rounding of scores near sqrt(6)
    z = floats.forward(net, X, "float32")
    assert (_right(z, net, y) > 2).all()
    assert np.abs(z - _numpy_forward(net, X, "float32")).max() < 1e-4


def test_library_certificate_agrees_with_the_theorem():
    from lncapacity import certify

    rng = random.Random(4)
    for _ in range(5):
        y = [rng.randrange(3) for _ in SEVEN]
        points = points_from_arrays(SEVEN, y)
        net = build(points, arch="ln-g")
        cert = certify(net, points)
        assert cert.all_certified
        assert cert.min_margin >= float(PROVED) * 6**0.5


# ---------------------------------------------------------------- bad input


def test_build_refuses_what_ln_g_does_not_build():
    X, y = SEVEN, [0, 1, 1, 0, 2, 0, 1]
    with pytest.raises(InputError, match="beyond the limit"):
        build(X, y, arch="ln-g", depth=10_001)
    with pytest.raises(InputError, match="ln-g nets have depth 1"):
        build(X, y, arch="ln-g", depth=0)
    with pytest.raises(InputError, match="built by steps"):
        build(X, y, arch="ln-g", method="pma")
    with pytest.raises(InputError, match="unknown arch"):
        build(X, y, arch="ln4")
    with pytest.raises(InputError, match="not ln-g"):
        build(X, y, arch="ln-g", exact=True)
    assert build(X, y, arch="ln-g", depth=1).depth == 1
    points = points_from_arrays(X, y)
    with pytest.raises(InputError, match="not among the classes"):
        build_ln_g(points, fmpq(0), classes=[0, 1])


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--method", "pma"], "--method pma builds ln3 nets"),
        (["--depth", "-1"], "a depth is at least 1"),
        (["--depth", "0"], "ln-g nets have depth 1"),
        (["--exact", "--method", "pma"], "--method pma builds ln3 nets"),
        (["--budget", "5"], "--budget limits the circle search of ln3 nets"),
    ],
)
def test_cli_bad_input_is_one_line_exit_2(tmp_path, options, message):
    data = tmp_path / "p.csv"
    data.write_text("x,y,label\n" + "".join(f"{a},{b},{i % 3}\n" for i, (a, b) in enumerate(SEVEN)))
    out = tmp_path / "net.json"
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "lncapacity",
            "certify",
            str(data),
            "--arch",
            "ln-g",
            "--out",
            str(out),
            *options,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 2, p.stderr
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("lncapacity: error: --arch ln-g: "), p.stderr
    assert message in lines[0]
    assert not out.exists()
