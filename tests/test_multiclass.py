"""Multiclass LN-Nets: every labeling of small sets, random sets, mirror-symmetric traps.

The claims tested (proofs/multiclass.md): every net is certified; the depth is
within the proved bound (``runs``: line runs after the projection minus ``k``;
``pma``: ``m - k``; plus one layer per warp); ``runs`` nets are right in float64;
a fold that would make mirror images of different labels collide is preceded
by a warp, recorded in the layer's meta.
"""

from __future__ import annotations

import itertools
import os
import re

import numpy as np
import pytest
from flint import fmpq

import lncapacity
from lncapacity import build, certify, floats
from lncapacity.construct.build import projected
from lncapacity.construct.fold import Chain, fold_layer
from lncapacity.construct.multiclass import cyclic_runs
from lncapacity.construct.peel import merge_peel
from lncapacity.construct.project import project, runs
from lncapacity.construct.runfold import FloatShadow
from lncapacity.fileformat import read_vector
from lncapacity.model import Affine
from lncapacity.parallel import imap


def depth_bound(net: lncapacity.LNNet, points: lncapacity.PointSet) -> int:
    k = len(set(points.y))
    warps = net.meta.get("warps", 0)
    if net.meta["method"] == "pma":
        return points.m - k + warps
    if net.meta["method"] == "peel":  # at most 2 n_c - 1 layers per phase (multiclass §8)
        assert len(net.meta["phases"]) <= k - 1
        return sum(2 * points.y.count(c) - 1 for c in net.meta["phases"])
    yk = [points.classes.index(label) for label in points.y]
    _, t = project(points.X, yk)
    order = sorted(range(points.m), key=lambda i: t[i])
    return runs([yk[i] for i in order]) - k + warps


def _check_labelings(task: tuple[int, str, list[tuple[int, ...]]]) -> tuple[int, int]:
    """Certify, bound and float-check each labeling; (most folds, most warps)."""
    m, method, labelings = task
    X = [[i] for i in range(m)]
    worst, most_warps = 0, 0
    for labels in labelings:
        points = lncapacity.points_from_arrays(X, list(labels))
        net = build(points, method=method)
        assert certify(net, points).all_certified, labels
        assert net.depth <= depth_bound(net, points), labels
        assert floats.check(net, points, "float64").all_agree, labels
        if method in ("runs", "peel"):
            assert "fallback" not in net.meta and net.meta["warps"] == 0, labels
            assert net.meta["method"] == method, labels
        worst = max(worst, net.depth - net.meta["warps"])
        most_warps = max(most_warps, net.meta["warps"])
    return worst, most_warps


@pytest.mark.parametrize(
    ("m", "k"),
    [
        (3, 3),
        (4, 3),
        (5, 3),
        (6, 3),
        pytest.param(7, 3, marks=pytest.mark.slow),
        (4, 4),
        (5, 4),
        pytest.param(6, 4, marks=pytest.mark.slow),
    ],
)
@pytest.mark.parametrize("method", ["runs", "pma"])
def test_every_labeling_of_collinear_points(m: int, k: int, method: str) -> None:
    # binary and constant labelings are the binary construction's (tests/test_construct.py)
    labelings = [ls for ls in itertools.product(range(k), repeat=m) if len(set(ls)) >= 3]
    chunks = [(m, method, labelings[i : i + 128]) for i in range(0, len(labelings), 128)]
    results = list(imap(_check_labelings, chunks, min(os.cpu_count() or 1, len(chunks))))
    worst = max(r[0] for r in results)
    most_warps = max(r[1] for r in results)
    assert worst <= m - 3  # folds, for every labeling with three or more classes present
    assert most_warps <= (1 if method == "pma" else 0)  # measured: one warp always sufficed


@pytest.mark.parametrize(
    ("m", "k"), [(3, 3), (4, 3), (5, 3), (6, 3), (4, 4), pytest.param(5, 4, marks=pytest.mark.slow)]
)
def test_peel_every_labeling_of_collinear_points(m: int, k: int) -> None:
    labelings = [ls for ls in itertools.product(range(k), repeat=m) if len(set(ls)) >= 3]
    chunks = [(m, "peel", labelings[i : i + 128]) for i in range(0, len(labelings), 128)]
    results = list(imap(_check_labelings, chunks, min(os.cpu_count() or 1, len(chunks))))
    assert max(r[0] for r in results) <= 2 * (m - 1) - (k - 1)  # the bound at its largest


def random_points(m: int, d: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, d))
    y = rng.integers(0, k, m)
    y[:k] = np.arange(k)
    return X, y


@pytest.mark.parametrize(
    ("m", "d", "k"),
    [
        (30, 2, 3),
        (60, 3, 5),
        (100, 2, 10),
        pytest.param(200, 3, 4, marks=pytest.mark.slow),  # (60, 3, 5): R^3, more classes
        pytest.param(200, 2, 10, marks=pytest.mark.slow),  # (100, 2, 10) has the ten classes
    ],
)
@pytest.mark.parametrize("method", ["runs", "pma"])
def test_random_sets(m: int, d: int, k: int, method: str) -> None:
    X, y = random_points(m, d, k, seed=m + d + k)
    points = lncapacity.points_from_arrays(X, y)
    net = build(points, method=method)
    assert net.classes == tuple(range(k)) and len(net.readout.W) == k
    cert = certify(net, points)
    assert cert.all_certified and cert.min_margin > 0
    assert net.depth <= depth_bound(net, points)
    if net.meta["method"] in ("runs", "peel"):  # no fallback: float64 right on every point
        assert floats.check(net, points, "float64").all_agree


def mirror_trap(n: int) -> tuple[list[list[int]], list[int]]:
    """``A`` at ``0`` and ``2n``; ``B`` at ``1..n-1``, ``C`` at their mirror images ``2n - i``.

    The paper's first fold (centre ``n``, the midpoint of the two ``A``) sends
    each ``B`` onto a ``C``: exact confusion unless the parallelization is broken.
    """
    X = [[0], *([i] for i in range(1, n)), *([2 * n - i] for i in range(1, n)), [2 * n]]
    y = [0, *([1] * (n - 1)), *([2] * (n - 1)), 0]
    return X, y


@pytest.mark.parametrize("n", [2, 3, 5])
@pytest.mark.parametrize("eps", ["0", "1e-5"])
def test_mirror_images_of_different_labels_are_never_confused(n: int, eps: str) -> None:
    X, y = mirror_trap(n)
    net = build(X, y, method="pma", eps=eps)
    assert certify(net, X, y).all_certified
    kinds = [layer.meta["kind"] for layer in net.layers]
    assert kinds[0] == "warp" and net.meta["warps"] >= 1
    assert "mirror images" in net.layers[0].meta["why"]
    assert net.depth <= len(X) - 3 + net.meta["warps"]
    # the default method joins runs without mirroring values of other labels
    net = build(X, y, eps=eps)
    assert certify(net, X, y).all_certified and net.meta["warps"] == 0


def test_envelope_readout_scores_each_run_on_its_interval() -> None:
    # already three runs along the line: depth 0, the readout is the upper envelope
    X, y = [[0], [1], [2], [3], [4], [5]], ["b", "b", "c", "c", "a", "a"]
    net = build(X, y)
    assert net.depth == 0 and net.readout.meta["kind"] == "envelope"
    taus = [lncapacity.arith.parse_rational(t) for t in net.readout.meta["thresholds"]]
    assert 1 < taus[0] < 2 and 3 < taus[1] < 4
    # slopes 1, 2, 3 along the line, in the order of the runs b, c, a
    slopes = {c: row[0] for c, row in zip(net.classes, net.readout.W, strict=True)}
    assert (slopes["b"], slopes["c"], slopes["a"]) == (1, 2, 3)
    assert certify(net, X, y).min_margin > 0


def test_absent_class_never_wins() -> None:
    X, y = [[0], [1], [2], [3]], [0, 1, 2, 0]
    net = build(X, y, classes=[0, 1, 2, 3])
    Z = floats.forward(net, np.asarray(X, dtype=float), "float64")
    assert (Z[:, 3] < Z.max(axis=1)).all()
    assert certify(net, X, y).all_certified


def test_cyclic_runs() -> None:
    assert cyclic_runs("abca") == 3 and runs("abca") == 4
    assert cyclic_runs("abc") == 3 and cyclic_runs("a") == 1 and cyclic_runs("aba") == 2


@pytest.mark.parametrize(
    "name", ["iris", "wine", pytest.param("digits", marks=pytest.mark.slow)]
)  # digits: 1797 points, 10 classes, about 2 minutes (the circle search, then pma)
def test_sklearn_datasets_through_the_cli(tmp_path, name: str) -> None:
    datasets = pytest.importorskip("sklearn.datasets")
    import subprocess
    import sys

    X, y = getattr(datasets, f"load_{name}")(return_X_y=True)
    data = tmp_path / f"{name}.npz"
    np.savez(data, X=X, y=y)
    out = tmp_path / "net.json"
    run = [sys.executable, "-m", "lncapacity"]
    p = subprocess.run(
        [*run, "certify", str(data), "--out", str(out), "--json", "--float", "float64"],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    import json

    summary = json.loads(p.stdout)
    assert summary["all_certified"] and summary["classes"] == sorted(set(y.tolist()))
    v = subprocess.run([*run, "verify", str(out), str(data), "--float", "float64"],
                       capture_output=True, text=True, timeout=900)  # fmt: skip
    assert v.returncode == 0, v.stderr


def test_peel_through_the_cli_and_its_fallbacks(tmp_path) -> None:
    """``--method peel`` writes a net whose layers say which class they peel, certified and
    right in float64; ``runs`` gives way to peel (its meta says why), and with two classes
    ``peel`` is ``runs``."""
    import json
    import subprocess
    import sys

    X, y = random_points(200, 3, 3, seed=204)
    data = tmp_path / "p.npz"
    np.savez(data, X=X, y=y)
    out = tmp_path / "net.json"
    p = subprocess.run(
        [sys.executable, "-m", "lncapacity", "certify", str(data), "--method", "peel",
         "--out", str(out), "--json", "--explain", "--require-float", "float64"],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    summary = json.loads(p.stdout)
    assert summary["method"] == "peel" and summary["all_certified"]
    assert any("against the rest" in (e.get("why") or "") for e in summary["explain"]["layers"])
    net = build(X, y, method="runs")
    assert net.meta["method"] == "peel" and "best merge" in net.meta["fallback"]
    points = lncapacity.points_from_arrays(X, y)
    assert net.depth <= depth_bound(net, points) and certify(net, points).all_certified
    assert floats.check(net, points, "float64").all_agree
    assert build(X, y % 2, method="peel").meta["method"] == "runs"


def test_fisher_direction_gives_separable_classes_depth_zero() -> None:
    """Three classes in parallel oblique bands: no axis or small fixed direction gives three
    runs, Fisher's direction (rounded to a short dyadic, ties broken) does: depth 0."""
    rng = np.random.default_rng(5)
    X = rng.uniform(-1, 1, (400, 2))
    s = X @ np.array([1.0, 0.37])
    keep = np.abs(s - np.round(s * 2) / 2) > 0.02  # margins around the band edges
    X, s = X[keep], s[keep]
    y = np.digitize(s, [-0.25, 0.25])
    points = lncapacity.points_from_arrays(X, y)
    yk = [points.classes.index(label) for label in points.y]
    _, t = project(points.X, yk)
    order = sorted(range(points.m), key=lambda i: t[i])
    assert runs([yk[i] for i in order]) == 3 and len(set(t)) == points.m
    net = build(points)
    assert net.depth == 0 and certify(net, points).all_certified
    assert floats.check(net, points, "float64").all_agree


def test_exact_distinctness_on_clusters_agrees_with_exact_sets() -> None:
    """``project._distinct`` compares only float clusters exactly; on lattice data full of
    exact ties (and near ties below float resolution) it agrees with the exact set."""
    from flint import fmpq

    from lncapacity.construct.project import _distinct, _dot, _floats

    rng = np.random.default_rng(2)
    big = fmpq(2) ** 60
    X = [tuple(fmpq(int(v)) for v in row) for row in rng.integers(-4, 5, (60, 3))]
    X = list(dict.fromkeys(X))
    X += [(big, fmpq(1), fmpq(0)), (big, fmpq(0), fmpq(1))]  # tie only exactly visible
    Xf = _floats(X)
    for w in [(1, 0, 0), (1, 1, 1), (1, 9, 81), (1, 3, 0), (0, 1, -1), (1, 10, 100)]:
        wq = tuple(fmpq(v) for v in w)
        exact = len(set(_dot(wq, X))) == len(X)
        assert _distinct(wq, X, Xf, Xf @ _floats([wq])[0]) == exact, w


def test_confusion_sees_a_wide_group_reach_past_its_neighbour() -> None:
    """Folding at 0 sends a group of label 0 at -4 and -1.5 to distances 1.5 .. 4, around
    the label-1 value at distance 3: confusion, though its nearest neighbour in distance
    (label 0, at 2) is of its own label.  (Missed by a check of neighbours only, this let
    two labels meet under pma on digits' 10 classes, and then refine to 67,000 bits and beyond.)"""
    from flint import fmpq

    from lncapacity.construct.fold import Chain
    from lncapacity.construct.multiclass import _confusion

    chain = Chain([fmpq(-4), fmpq(-3, 2), fmpq(2), fmpq(3)], fmpq(0))
    y = [0, 0, 0, 1]
    groups = [[0, 1], [2], [3]]
    assert "mirror images" in (_confusion(chain, groups, y, fmpq(0)) or "")
    # moved out of reach (the label-1 value at distance 5), nothing is confused
    far = Chain([fmpq(-4), fmpq(-3, 2), fmpq(2), fmpq(5)], fmpq(0))
    assert _confusion(far, groups, y, fmpq(0)) is None


def test_a_precise_centre_lies_within_its_tolerance_of_the_exact_midpoint() -> None:
    """pma's centre is meant to lie within ``tolerance * gap`` of the exact midpoint of the
    two groups it merges; with balls wider than that the midpoint is known only to their
    width.  ``precise`` (the multiclass loop) refines first: the centre then is that
    close to the midpoint computed at 4000 bits.  (At 64 bits and a 2^-460 tolerance it was
    about 2^-64 away: the tolerance was no tolerance, and pma_k at m = 1000 failed and
    started again until an earlier attempt had raised the precision.)"""
    from flint import arb, fmpq

    from lncapacity.arith import arb_to_fmpq, precision
    from lncapacity.construct.fold import Chain, FoldStep
    from lncapacity.construct.pma import CENTRE_TOLERANCE, _fold

    t = [fmpq(v, 7) for v in (1, 3, 4, 9, 10, 15)]
    y = [0, 1, 2, 0, 1, 0]
    tolerance = CENTRE_TOLERANCE[-1]  # 2^-460
    fold = FoldStep(fmpq(-1), fmpq(1, 3))  # irrational values from here on, order reversed
    groups = [[i] for i in reversed(range(6))]  # labels 0 1 0 2 1 0 by value

    with precision(4000):  # the values of groups 0 and 2 after the fold, near-exact
        f = fold.ball_map(fmpq(0))
        a, b = f(arb(t[5])), f(arb(t[3]))
        assert (a.rad() + b.rad()) < arb(2) ** -3900
        mid, apart = arb_to_fmpq(((a + b) / 2).mid()), abs(arb_to_fmpq((b - a).mid()))

    def miss(precise: bool) -> fmpq:
        chain = Chain(t, fmpq(0), prec=64)
        chain.push(fold)
        step = _fold(chain, groups, 2, y, tolerance, 0, i=0, precise=precise)
        assert step is not None
        return abs(step.centre - mid)

    # the centre is within the tolerance of the (clipped) midpoint, plus the balls' width:
    # a quarter of it when precise
    assert miss(precise=True) < 2 * tolerance * apart
    assert miss(precise=False) > 2**300 * tolerance * apart  # the defect, without it


def _peel_chain(m: int, seed: int) -> tuple[Chain, list[fmpq]]:
    X, y = random_points(m, 3, 3, seed=seed)
    points = lncapacity.points_from_arrays(X, y)
    yk = [points.classes.index(label) for label in points.y]
    t, _, _ = projected(points.X, yk, 0)
    chain = Chain(t, fmpq(0))
    merge_peel(chain, yk)
    return chain, t


def test_float_shadow_is_numpy_and_its_spread_covers_exact_and_pytorch() -> None:
    """:class:`FloatShadow` (what peel's search keeps apart), after a peel chain of some 200
    layers: its plain run is the NumPy backend, bit for bit, on a net of the chain's
    layers; the exact values and PyTorch's float64 ones lie within :data:`SHADOW_SAFETY`
    times its spread of it (an estimate, not a bound: on 99% of the points, and every point
    within twice that; measured on three such chains, on processors with and without
    AVX-512: every point on two, 298 of 300 on the third, 1.7 times out); and the chain's
    own intervals are many times wider than NumPy's actual error (why peel uses the
    shadow)."""
    chain, t = _peel_chain(300, 2)
    assert len(chain.steps) > 150
    shadow = FloatShadow(chain)
    value, _ = shadow.values(chain)
    layers, read = [], (fmpq(1),)  # a net reading t itself, its readout the last read
    for step in chain.steps:
        layers.append(fold_layer(read, step))
        read = read_vector(step.read)
    net = lncapacity.LNNet(1, 3, fmpq(0), tuple(layers), Affine((read,), (fmpq(0),)), ("v",))
    T = np.array([[lncapacity.arith.to_float(q)] for q in t])
    assert np.array_equal(floats.forward(net, T, "float64")[:, 0], value)
    while max(float(v.rad()) for v in chain.values) > 2.0**-80:
        chain.refine()
    exact = np.array([float(v.mid()) for v in chain.values])
    err = np.abs(value - exact)
    assert err.max() > 2.0**-40 * np.abs(exact).max()  # far more than one rounding
    _, lo, hi = shadow.enclosures(chain)

    def covered(v: np.ndarray) -> None:
        assert ((lo <= v) & (v <= hi)).mean() >= 0.99
        assert (np.abs(v - value) <= 2 * np.maximum(hi - value, value - lo)).all()

    covered(exact)
    if floats.have_torch():
        covered(floats.forward(net, T, "torch-float64")[:, 0])
    width = chain.intervals[1] - chain.intervals[0]
    assert np.median(width) > 5 * np.median(err)


def test_peel_fallback_names_the_classes() -> None:
    """When peel gives way, ``meta.fallback`` names the class it was peeling, not the
    construction's number for it."""
    rng = np.random.default_rng(210)
    names = np.array(["cat", "dog", "eel", "fox", "gnu", "hen", "ibis", "jay", "koi", "lynx"])
    X, y = rng.standard_normal((60, 3)), names[rng.integers(0, 10, 60)]
    net = build(X, y, method="peel")
    assert net.meta["method"] == "pma" and certify(net, X, y).all_certified
    why = net.meta["fallback"]
    assert re.search(r"peeling label (cat|dog|eel|fox|gnu|hen|ibis|jay|koi|lynx) ", why), why
    assert not re.search(r"label \d", why), why


def test_envelope_thresholds_sit_in_the_middle_of_the_gaps() -> None:
    from lncapacity.construct.multiclass import THRESHOLD_WINDOW, middle

    for lo, hi in ((fmpq(196, 100), fmpq(5, 2)), (fmpq(0), fmpq(1, 3)), (fmpq(-7, 5), fmpq(-1, 9))):
        tau = middle(lo, hi)
        assert abs(tau - (lo + hi) / 2) <= (hi - lo) * THRESHOLD_WINDOW  # exact rationals
        assert int(tau.q) & (int(tau.q) - 1) == 0  # a dyadic rational
    assert middle(fmpq(196, 100), fmpq(5, 2)) != 2  # the shortest dyadic inside, 2, is off-centre
    # three runs along a line, depth 0: the two values either side of a threshold are at
    # (nearly) the same distance from it, so their certified margins (l_{t+1} - l_t = s - tau)
    # agree to within 2 * THRESHOLD_WINDOW of their sum
    X, y = [[0], [1], [2], [3], [4], [5]], ["b", "b", "c", "c", "a", "a"]
    cert = certify(build(X, y), X, y)
    for left, right in ((1, 2), (3, 4)):
        m1, m2 = cert.points[left].margin, cert.points[right].margin
        assert abs(m1 - m2) <= 2 * float(THRESHOLD_WINDOW) * (m1 + m2) + 1e-12
