"""``objective="depth"``: the circle search in ball arithmetic (issue 33 §2,
:mod:`lncapacity.construct.circle.precise`), certified, float64 reported and not required."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from flint import arb, fmpq

from lncapacity import InputError, build, certify, fileformat, points_from_arrays
from lncapacity.arith import precision
from lncapacity.construct.circle import State, circle_net, precise
from lncapacity.floats import check
from lncapacity.model import Affine, LNNet

LINE = ((fmpq(1),), (fmpq(0),), (fmpq(-1),))
"""One layer ``x -> LN(x, 1, -x)``: its angle in the plane is monotone in ``x`` on ``[-1, 1]``
(the image of a line that misses the origin), with slope of order 1 at 0."""
LAYER = Affine(LINE, (fmpq(0), fmpq(1), fmpq(0)), {"kind": "circle-first"})


def _tracked(X, y):
    tracker = precise.Tracker(X, np.asarray(y), 0)
    return tracker.start(State(np.zeros((len(X), 3)), [LAYER], 0, 0.0, err=np.zeros(len(X))))


@pytest.mark.parametrize("tiny", [40, 60])
def test_label_gaps_of_1e_40_and_1e_60_are_measured_resolved_and_read_out(tiny):
    small = fmpq(1, 10**tiny)
    X, y = [(fmpq(-1),), (fmpq(0),), (small,), (fmpq(1),)], [0, 0, 1, 1]
    st = _tracked(X, y)
    # 1e-40 is about 2^-133, 1e-60 about 2^-199: the 128 bits it starts with do not resolve
    # them (radius at most 2^-24 of the gap), 256 do
    assert st.exact.prec == 256 and st.boundaries == 2
    # the gap between 0 and 1e-40: the angle's slope at 0 is |d/dx arg(x - 1, (3x + 1)/sqrt 3)|
    # = (4 / sqrt 3) / (4 / 3) = sqrt 3, so the gap is sqrt(3) 1e-40 (to about 1e-80)
    assert 0 < st.gap <= 1.7320508075688772 * 10.0**-tiny < st.gap * (1 + 1e-12)
    read = precise.readout(st, np.asarray(y))
    assert read is not None
    points = points_from_arrays(X, y)
    net = LNNet(1, 3, fmpq(0), (LAYER,), read, (0, 1), {})
    cert = certify(net, points)
    assert cert.all_certified and 0 < cert.min_margin < 10.0 ** (1 - tiny)
    # float64 sees 0 and 1e-40 alike after the layer (1 + 1e-40 == 1): one of them is wrong
    assert check(net, points, "float64").agree == 3


def test_labels_closer_than_the_floor_are_not_separated():
    X, y = [(fmpq(-1),), (fmpq(0),), (fmpq(1, 2**300),), (fmpq(1),)], [0, 0, 1, 1]
    assert _tracked(X, y) is None  # below GAP_FLOOR = 2^-240: dropped, not mis-measured


def test_the_measured_gap_is_a_lower_bound_of_the_true_gaps():
    rng = np.random.default_rng(5)
    X = [(fmpq(int(v), 2**20),) for v in rng.integers(-(2**20), 2**20, 40)]
    y = rng.integers(0, 2, 40)
    st = _tracked(X, y)
    with precision(600):  # the true angles, far more exactly
        theta = precise._plane_angles(precise.Tracker(X, y, 0)._replay([LAYER], 600))
        order = sorted(range(40), key=lambda i: float(theta[i]))
        gaps = [
            theta[order[(i + 1) % 40]] - theta[order[i]] + (2 * arb.pi() if i == 39 else 0)
            for i in range(40)
            if y[order[i]] != y[order[(i + 1) % 40]]
        ]
        true = min(gaps, key=float)
    assert (
        st.boundaries == sum(y[order[i]] != y[order[(i + 1) % 40]] for i in range(40))
        and 0 < st.gap < true
    )
    assert float(true) < st.gap * (1 + 1e-9)


def _twins(n=16, seed=1):
    """``0, 1, ..., n - 1`` with random labels, and ``7 + 1e-30`` labelled unlike 7: float64
    cannot tell the two apart (``7 + 1e-30`` rounds to 7), the exact net can."""
    y = list(np.random.default_rng(seed).integers(0, 2, n))
    X = [(fmpq(k),) for k in range(n)] + [(fmpq(7) + fmpq(1, 10**30),)]
    return points_from_arrays(X, [*y, 1 - y[7]])


@pytest.mark.parametrize("eps", [0, "1e-5"])
def test_the_depth_objective_certifies_a_net_float64_cannot_run(eps):
    # eps > 0: the last layer is scaled up so that the radius (which the readout sees and
    # eps moves by up to 2^-40) moves by far less than the gap of 1e-30
    points = _twins()
    net = build(points, method="circle", objective="depth", eps=eps)
    cert = certify(net, points)
    assert net.meta["method"] == "circle" and net.meta["objective"] == "depth"
    assert cert.all_certified and 0 < cert.min_margin < 1e-29
    # the twins are one float64 input: one of them is wrong, and the net says so
    assert check(net, points, "float64").agree == points.m - 1
    assert net.meta["float64"] == f"wrong on 1 of {points.m} points (not required)"
    # 16 labels have at most 16 cyclic boundaries, so 3 layers at least (fold count), and
    # the search finds that many; the faithful search cannot start (its first layer sees
    # the twins as one point) and runs gives way to pma, about m - 2 layers
    assert net.depth == 3
    faithful = build(points, method="circle", eps=eps)
    assert faithful.meta["method"] == "pma" and faithful.depth > 3 * net.depth


def test_a_depth_net_is_certified_by_construction_on_every_labeling_of_six_points():
    # every labeling of 0..5 (both labels present), with the depth objective: certified
    for bits in range(1, 2**6 - 1):
        y = [(bits >> i) & 1 for i in range(6)]
        points = points_from_arrays(np.arange(6).reshape(-1, 1), y)
        net = circle_net(points.floats(), np.asarray(y), 0.0, max_depth=3, objective="depth")
        if net is not None:
            layers, read = net
            lnnet = LNNet(1, 3, fmpq(0), tuple(layers), read, (0, 1), {})
            assert certify(lnnet, points).all_certified


def test_the_default_objective_is_the_faithful_one():
    points = points_from_arrays(np.arange(24).reshape(-1, 1), [(k * 7 // 3) % 2 for k in range(24)])
    default = build(points, method="circle")
    faithful = build(points, method="circle", objective="faithful")
    assert fileformat.dumps(fileformat.to_dict(default)) == fileformat.dumps(
        fileformat.to_dict(faithful)
    )
    assert "objective" not in default.meta and "float64" not in default.meta
    assert check(default, points, "float64").all_agree


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"objective": "speed", "method": "circle"}, "unknown objective 'speed'"),
        ({"objective": "depth"}, "use method 'circle'"),
        ({"objective": "depth", "method": "runs"}, "use method 'circle'"),
    ],
)
def test_bad_objectives_are_refused(options, message):
    points = points_from_arrays(np.arange(6).reshape(-1, 1), [0, 1, 1, 0, 0, 1])
    with pytest.raises(InputError, match=message):
        build(points, **options)


def _cli(tmp_path, *options):
    data = tmp_path / "d.csv"
    data.write_text("x,label\n" + "".join(f"{k},{(k * 7 // 3) % 2}\n" for k in range(24)))
    out = tmp_path / "n.json"
    cmd = [sys.executable, "-m", "lncapacity", "certify", str(data), "--out", str(out)]
    r = subprocess.run([*cmd, "--quiet", *options], capture_output=True, text=True)
    return r, out


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (("--objective", "depth"), "--objective depth: the circle search's; add --method circle"),
        (("--objective", "deep", "--method", "circle"), "invalid choice: 'deep'"),
    ],
)
def test_cli_refuses_bad_objectives(tmp_path, options, message):
    r, out = _cli(tmp_path, *options)
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr
    assert not out.exists()


def test_cli_builds_with_the_depth_objective(tmp_path):
    r, out = _cli(tmp_path, "--method", "circle", "--objective", "depth", "--float", "float64")
    assert r.returncode == 0, r.stderr
    assert "method circle" in r.stdout and "float64:" in r.stdout and out.exists()
    net = fileformat.load(out)
    assert net.meta["objective"] == "depth" and net.meta["float64"]


def test_circle_net_with_the_depth_objective_and_eps_gives_a_certified_net():
    # 8 points in R^2, two of them 1e-30 apart with unlike labels; eps = 1/1000 moves the
    # radius (which the readout sees) far more than that gap unless the last layer is scaled
    # up first, as build does: circle_net must do the same
    rng = np.random.default_rng(2)
    X = [(fmpq(int(a)), fmpq(int(b))) for a, b in rng.integers(-8, 8, (7, 2))]
    y = [int(v) for v in rng.integers(0, 2, 7)]
    X, y = [*X, (X[3][0] + fmpq(1, 10**30), X[3][1])], [*y, 1 - y[3]]
    points = points_from_arrays(X, y)
    eps = fmpq(1, 1000)
    got = circle_net(
        points.floats(), np.asarray(y), float(eps), max_depth=6, objective="depth", exact=X
    )
    assert got is not None
    layers, read = got
    cert = certify(LNNet(2, 3, eps, tuple(layers), read, (0, 1), {}), points)
    assert cert.all_certified and 0 < cert.min_margin < 1e-29
