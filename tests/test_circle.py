"""method="circle": whole circle maps per layer (proofs/circle_maps.md), certified, shallower."""

from __future__ import annotations

import itertools
import math
import subprocess
import sys

import numpy as np
import pytest
from flint import fmpq

from lncapacity import build, certify, points_from_arrays
from lncapacity.construct.circle import E, boundaries_cyclic, circle_net, identity_layer
from lncapacity.floats import check
from lncapacity.search import find_circle_net
from lncapacity.shatter import shatter, verify_shatter


def _line(y):
    return points_from_arrays(np.arange(len(y)).reshape(-1, 1), list(y))


def _fold_bound(labels):
    B = int(boundaries_cyclic(np.asarray(labels)))
    return 0 if B <= 2 else math.ceil(math.log2(B + 2)) - 1  # B <= 2: a threshold, depth 0


def _dyadic(q: fmpq) -> bool:
    d = int(q.q)
    return d & (d - 1) == 0


def test_every_labeling_of_seven_points_on_a_line_is_certified_and_never_deeper_than_runs():
    for bits in itertools.product((0, 1), repeat=7):
        if len(set(bits)) < 2:
            continue
        points = _line(bits)
        net = build(points, method="circle")
        assert certify(net, points).all_certified, bits
        assert net.depth <= build(points, method="runs").depth  # circle or its runs fallback
        # and no net can beat the fold-count bound on a line (proofs/circle_maps.md)
        assert net.depth >= _fold_bound(bits)
        if net.meta["method"] == "circle":
            assert all(_dyadic(w) for lay in net.layers for row in lay.W for w in row)


def test_alternating_points_reach_the_fold_count_bound_closely():
    # 16 alternating points: B = 16, the bound is 4; runs needs 14 layers
    points = _line([k % 2 for k in range(16)])
    net = build(points, method="circle")
    assert net.meta["method"] == "circle" and 4 <= net.depth <= 6
    assert certify(net, points).all_certified


@pytest.mark.parametrize("eps", ["0", "1e-5"])
def test_random_points_in_r3_are_certified_and_float64_faithful(eps):
    rng = np.random.default_rng(3)
    X = rng.integers(-(2**20), 2**20, size=(48, 3)) / 2**18
    y = rng.integers(0, 2, 48)
    points = points_from_arrays(X, y)
    net = build(points, method="circle", eps=eps)
    assert net.meta["method"] == "circle"
    assert net.depth < build(points, eps=eps, method="runs").depth
    cert = certify(net, points)
    assert cert.all_certified and cert.min_margin > 0
    assert check(net, points, "float64").all_agree


def test_padding_gives_the_exact_depth_and_stays_certified():
    points = _line([0, 1, 1, 0, 1, 0, 0, 1, 0, 1])
    free = build(points, method="circle")
    assert free.meta["method"] == "circle"
    for eps in ("0", "1e-5"):
        net = build(points, method="circle", depth=free.depth + 3, eps=eps)
        assert net.depth == free.depth + 3
        assert [lay.meta.get("kind") for lay in net.layers[-3:]] == ["pad"] * 3
        assert certify(net, points).all_certified


def test_identity_layer_is_the_identity_on_the_circle():
    layer = identity_layer(0.0)
    h = np.sqrt(3) * E @ np.array([math.cos(0.7), math.sin(0.7)])
    W = np.array([[float(w) for w in row] for row in layer.W])
    y = W @ h
    y = y - y.mean()
    assert np.allclose(y / np.sqrt((y * y).mean()), h)


def test_the_search_is_deterministic_for_a_seed():
    y = np.random.default_rng(5).integers(0, 2, 40)
    X = np.arange(40.0).reshape(-1, 1)
    a = circle_net(X, y, 0.0, max_depth=20, seed=2)
    b = circle_net(X, y, 0.0, max_depth=20, seed=2)
    assert a is not None and b is not None
    assert [lay.W for lay in a[0]] == [lay.W for lay in b[0]]


def test_it_gives_way_to_runs_when_runs_needs_one_layer():
    points = _line([0, 1, 1, 0])  # runs: one layer; a circle net cannot have fewer
    net = build(points, method="circle")
    assert net.meta["method"] == "runs" and net.depth == 1
    assert "circle" in net.meta["fallback"]
    assert certify(net, points).all_certified


def test_shattering_five_points_on_a_line_at_depth_two_beyond_l_plus_two(tmp_path):
    out = tmp_path / "s5.jsonl"
    pts = [[k] for k in range(5)]
    summary = shatter(pts, 2, search={"method": "circle", "restarts": 8}, out=out, workers=1)
    assert summary.all_certified and summary.labelings == 32
    s, problems = verify_shatter(out, workers=1)
    assert problems == [] and s.certified == 32


def test_the_circle_search_cannot_do_the_impossible():
    # 0101 on a line needs depth 2 (B = 4: ceil(log2 6) - 1 = 2), so nothing at depth 1
    points = _line([0, 1, 0, 1])
    assert find_circle_net(points, 1, fmpq(0), restarts=4) is None
    net = find_circle_net(points, 2, fmpq(0), restarts=4)
    assert net is not None and net.depth == 2 and certify(net, points).all_certified


def test_cli_accepts_the_circle_method(tmp_path):
    data = tmp_path / "d.csv"
    rows = ["x,label"] + [f"{k},{(k * 7 // 3) % 2}" for k in range(24)]
    data.write_text("\n".join(rows) + "\n")
    out = tmp_path / "n.json"
    cmd = [sys.executable, "-m", "lncapacity", "certify", str(data), "--method", "circle"]
    r = subprocess.run(
        [*cmd, "--out", str(out), "--quiet", "--float", "float64"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    assert "method circle" in r.stdout and out.exists()
    r = subprocess.run(
        [sys.executable, "-m", "lncapacity", "verify", str(out), str(data), "--quiet"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr


# k classes: every class one arc of the circle (proofs/multiclass.md §7)


def test_every_three_class_labeling_of_five_points_on_a_line_is_certified():
    for labels in itertools.product(range(3), repeat=5):
        if len(set(labels)) < 3:
            continue
        points = _line(labels)
        net = build(points, method="circle")
        assert certify(net, points).all_certified, labels
        assert net.depth <= build(points, method="runs").depth  # circle, or runs if not shallower
        assert check(net, points, "float64").all_agree, labels


# Sets whose circle nets have room to spare on every processor's vector math (issue 34):
# the 5-class set of seed 5 got a circle net of depth 29 with AVX-512's arctan2 and fell
# back to peel (46, as runs) without it; seed 6's is 22 deep (runs: 51) with either.
@pytest.mark.parametrize(
    ("k", "eps", "seed"), [(3, "0", 3), pytest.param(5, "1e-5", 6, marks=pytest.mark.slow)]
)
def test_random_k_class_sets_get_circle_nets_far_shallower_than_runs(k, eps, seed):
    rng = np.random.default_rng(seed)
    X = rng.integers(-(2**20), 2**20, size=(60, 3)) / 2**18
    y = rng.integers(0, k, 60)
    points = points_from_arrays(X, y)
    net = build(points, method="circle", eps=eps)
    # every class one arc, or (issue 33) arcs the linear program's readout reads
    assert net.meta["method"] == "circle" and net.readout.meta["kind"] in ("arcs", "arcs-lp")
    assert net.depth < build(points, method="runs", eps=eps).depth
    cert = certify(net, points)
    assert cert.all_certified and cert.min_margin > 0
    assert check(net, points, "float64").all_agree


def test_a_class_absent_from_the_data_never_wins():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((30, 2))
    y = rng.integers(0, 3, 30)
    points = points_from_arrays(X, y)
    net = build(points, method="circle", classes=(0, 1, 2, 3))
    assert net.meta["method"] == "circle" and net.classes == (0, 1, 2, 3)
    assert net.readout.W[3] == (0, 0, 0) and net.readout.b[3] < 0
    assert certify(net, points).all_certified


def test_the_polygon_readout_needs_every_class_to_be_one_arc():
    from lncapacity.construct.circle import SQRT3, readout

    def at(angles):
        return SQRT3 * np.c_[np.cos(angles), np.sin(angles)] @ E.T

    phi = np.linspace(-3.0, 3.0, 12)
    y = np.repeat([2, 0, 1], 4)  # three arcs
    r = readout(at(phi), y)
    assert r is not None and r.meta["kind"] == "arcs"
    W = np.array([[float(w) for w in row] for row in r.W])
    b = np.array([float(v) for v in r.b])
    assert (np.argmax(at(phi) @ W.T + b, axis=1) == y).all()
    assert readout(at(phi), np.array([2, 0, 0, 2, 1, 1, 1, 1, 0, 0, 2, 2])) is None  # 5 arcs


def test_circle_layers_handed_over_to_runs_stay_certified(monkeypatch):
    from lncapacity.construct import circle

    search = circle.circle_state

    def shallow(*args, **kwargs):  # two circle layers at most, then runs must finish
        return search(*args, **{**kwargs, "max_depth": 2})

    monkeypatch.setattr(circle, "circle_state", shallow)
    rng = np.random.default_rng(7)
    X = rng.integers(-(2**20), 2**20, size=(400, 3)) / 2**18
    points = points_from_arrays(X, rng.integers(0, 2, 400))
    net = build(points, method="circle")
    assert net.meta["method"] == "circle" and "handoff" in net.meta
    c = net.meta["circle_layers"]
    assert {lay.meta.get("kind") for lay in net.layers[c:]} <= {"runs", "rescale"}
    assert net.depth < build(points, method="runs").depth
    cert = certify(net, points)
    assert cert.all_certified
    # decided by float64 intervals through the circle layers, then the runs folds as a
    # scalar chain (certify._rank_one_tail), with no point left for ball arithmetic
    assert {p.precision for p in cert.points} == {53}
    assert certify(net, points, intervals=False).all_certified  # and in balls alone
    assert check(net, points, "float64").all_agree


def test_the_hand_over_widens_the_true_values_past_float64s(monkeypatch):
    # runs after circle layers keeps apart the true values widened by the slack; that is
    # sound for float64 only if float64's values lie within it

    from lncapacity.arith import precision
    from lncapacity.construct import circle
    from lncapacity.floats import forward
    from lncapacity.model import Affine, LNNet

    search = circle.circle_state
    monkeypatch.setattr(
        circle, "circle_state", lambda *a, **kw: search(*a, **{**kw, "max_depth": 3})
    )
    rng = np.random.default_rng(7)
    X = rng.integers(-(2**20), 2**20, size=(400, 3)) / 2**18
    y = rng.integers(0, 2, 400)
    points = points_from_arrays(X, y)
    got = circle.build_circle(points, list(y), [0, 1], (0, 1), fmpq(0), None, 0, None, {})
    assert isinstance(got, circle.Handoff) and (got.slack > 0).all()
    prefix = LNNet(3, 3, fmpq(0), tuple(got.layers), Affine((got.read,), (fmpq(0),)), (0,), {})
    floats64 = forward(prefix, points, "float64")[:, 0]
    with precision(200):
        for x, b, r in zip(floats64, got.start(200), got.slack, strict=True):
            assert abs(float((b - x).mid())) + float(b.rad()) <= r


def test_a_circle_net_float64_gets_wrong_is_not_used(monkeypatch):
    import dataclasses

    from lncapacity import floats

    real = floats.check

    def one_wrong(net, points, backend="float64", *args):
        got = real(net, points, backend, *args)
        return dataclasses.replace(got, agree=got.total - 1)

    monkeypatch.setattr(floats, "check", one_wrong)
    points = _line([0, 1, 2, 0, 1, 2, 2, 0, 1, 0, 2, 1])
    net = build(points, method="circle")
    assert net.meta["method"] == "runs", net.meta
    assert net.meta["fallback"] == "circle: float64 gets 1 of 12 points wrong; runs used"
    assert "circle_layers" not in net.meta
    assert certify(net, points).all_certified


def test_giving_way_to_runs_is_said_when_it_happens():
    class Progress:
        def __init__(self):
            self.notes = []

        def __call__(self, done, total):
            pass

        def note(self, message):
            self.notes.append(message)

    progress = Progress()
    points = _line([0, 1, 1, 0, 0, 1])  # runs: 2 layers; one circle layer keeps 4 boundaries
    net = build(points, method="circle", progress=progress)
    assert net.meta["method"] == "runs" and net.depth == 2
    assert progress.notes == [
        "circle gave way to runs: runs needs 2 layers and the search found no circle net with fewer"
    ]


def test_the_searchs_float_error_estimate_bounds_the_true_error():
    # the search keeps a label gap only if it exceeds the float64 error its neighbours may
    # carry (State.err); that estimate must bound the distance between the angles float64
    # computes and the true ones (balls at 300 bits through the exact layers)
    from flint import arb

    from lncapacity.arith import precision
    from lncapacity.construct.circle import circle_state, plane
    from lncapacity.model import Affine, LNNet

    rng = np.random.default_rng(5)
    X = rng.integers(-(2**20), 2**20, size=(120, 3)) / 2**18
    y = rng.integers(0, 3, 120)
    y[:3] = (0, 1, 2)
    st = circle_state(X, y, 0.0, max_depth=40, seed=0, warm=False)
    # finished: three arcs, or four a linear program reads (proofs/multiclass.md §9)
    assert st is not None and st.boundaries <= 4 and len(st.layers) > 10
    one, zero = fmpq(1), fmpq(0)
    ident = Affine(((one, zero, zero), (zero, one, zero), (zero, zero, one)), (zero,) * 3)
    P = plane(st.H)
    got = np.arctan2(P[:, 1], P[:, 0])
    with precision(300):
        net = LNNet(3, 3, fmpq(0), tuple(st.layers), ident, (0, 1, 2), {}).map(arb)
        for i, x in enumerate(points_from_arrays(X, y).X):
            h = net.forward([arb(v) for v in x], arb.sqrt)
            true = arb.atan2(
                (h[0] + h[1] - 2 * h[2]) / arb(6).sqrt(), (h[0] - h[1]) / arb(2).sqrt()
            )
            off = abs(float((true - got[i]).mid()))
            assert min(off, 2 * math.pi - off) <= st.err[i], i


@pytest.mark.parametrize(("short", "seeds"), [(4, 4), (20, 4), (21, 1), (1000, 1)])
def test_a_search_that_came_close_is_retried_with_another_seed(monkeypatch, short, seeds):
    """k = 5 labels on 120 points (more than SMALL: one seed by default).  A search that
    finds nothing but leaves at most CLOSE k = 20 boundaries more than it needs is followed
    by another seed, up to RESTARTS seeds; farther, the search is not repeated."""
    from lncapacity.construct import circle

    called = []

    def search(X, y, eps, *, seed, reached, **kwargs):
        called.append(seed)
        reached[:] = [5 + short]
        return None

    monkeypatch.setattr(circle, "search", search)
    y = np.arange(120) % 5
    X = np.random.default_rng(0).standard_normal((120, 3))
    assert circle.circle_state(X, y, 0.0, max_depth=50) is None
    assert called == list(range(seeds))
    called.clear()  # asked for a number of seeds, it runs exactly those
    assert circle.circle_state(X, y, 0.0, max_depth=50, restarts=2) is None
    assert called == [0, 1]


def test_the_error_bound_near_a_pole_covers_any_angle():
    """A point whose pre-activation nearly cancels (``W h + b`` of size 1e-10) while its
    input angle may be off by 1e-8: the output angle may then be anything.  The bound
    must say so.  (A slope measured by a finite turn of 2^-20 saturated at pi / 2^-20 there
    and bounded the turn by 0.03; NumPy and PyTorch then put such a point half a circle
    apart.)"""
    from lncapacity.construct.circle import _carry, layer_norm, plane

    phi = np.array([0.3, 1.7, 4.0])
    H = math.sqrt(3) * np.c_[np.cos(phi), np.sin(phi)] @ E.T
    W = np.eye(3)
    tangent = E @ np.array([-math.sin(phi[0]), math.cos(phi[0])])
    b = -H[0] - 1e-10 * tangent  # point 0 sits 1e-10 off the pole, behind its tangent
    err = np.full(3, 1e-8)
    _, theta, bound = _carry(H, W, b, 0.0, err)
    turned = []
    for d in (-1e-8, 1e-8):  # the input angle off by the error it may carry
        Hd = math.sqrt(3) * np.c_[np.cos(phi + d), np.sin(phi + d)] @ E.T
        after = np.arctan2(*plane(layer_norm(Hd @ W.T + b, 0.0)).T[::-1])
        moved = np.abs((after - theta + math.pi) % (2 * math.pi) - math.pi)
        assert (moved <= bound).all()
        turned.append(moved[0])
    assert max(turned) > 3  # the pole's point really turns, by half a circle
    assert bound[0] == math.pi and (bound[1:] < 1e-6).all()  # far from it, a small bound


def test_scores_from_slopes_keys_and_cross_products_are_the_angles():
    # the search orders and measures directions without arctan2 (the same bits on every
    # processor); the boundaries must be those of the angles, the gaps their differences
    from lncapacity.construct.circle.candidates import seen_from
    from lncapacity.construct.circle.state import _score_directions, _score_slopes

    rng = np.random.default_rng(8)
    m = 40
    theta = rng.uniform(-math.pi, math.pi, m)
    P = np.c_[np.cos(theta), np.sin(theta)]
    y = rng.integers(0, 3, m)

    def by_angles(rel, cyclic):
        order = np.argsort(rel, axis=1, kind="stable")
        srt, lab = np.take_along_axis(rel, order, axis=1), y[order]
        b = boundaries_cyclic(lab)
        d = np.where(lab[:, 1:] != lab[:, :-1], np.diff(srt, axis=1), np.inf).min(axis=1)
        if cyclic:
            wrap = srt[:, 0] + 2 * math.pi - srt[:, -1]
            d = np.minimum(d, np.where(lab[:, 0] != lab[:, -1], wrap, np.inf))
        return b, d

    qq = 1.5 * rng.standard_normal((50, 2))
    qq = qq[np.hypot(qq[:, 0], qq[:, 1]) > 1.01]  # poles off the circle
    c, s = seen_from(P, qq)
    b, gap = _score_slopes(c, s, y)
    b0, gap0 = by_angles(np.arctan2(s, c), cyclic=False)
    assert (b == b0).all() and np.allclose(gap, gap0, rtol=1e-12, atol=1e-15)
    centres = rng.uniform(-0.5, 0.5, (50, 2))  # inside: the points all around them
    u, v = P[None, :, 0] - centres[:, None, 0], P[None, :, 1] - centres[:, None, 1]
    b, gap = _score_directions(u, v, y)
    b0, gap0 = by_angles(np.arctan2(v, u), cyclic=True)
    assert (b == b0).all() and np.allclose(gap, gap0, rtol=1e-12, atol=1e-15)
    far = np.array([[40.0, 3.0]])  # far outside: the points in a narrow arc, a wide wrap
    u, v = P[None, :, 0] - far[:, None, 0], P[None, :, 1] - far[:, None, 1]
    b, gap = _score_directions(u, v, y)
    b0, gap0 = by_angles(np.arctan2(v, u) % (2 * math.pi), cyclic=True)
    assert (b == b0).all() and np.allclose(gap, gap0, rtol=1e-12, atol=1e-15)
