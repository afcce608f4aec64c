"""The binary constructions (the default "runs" and the paper's "pma"): every labeling,
certified, within m - 2 layers, and float64 agrees."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from flint import arb, fmpq
from hypothesis import given, settings
from hypothesis import strategies as st

from lncapacity import InputError, build, certify, points_from_arrays
from lncapacity.arith import precision
from lncapacity.construct import METHODS, FoldStep, runs
from lncapacity.floats import check

EPS = [fmpq(0), fmpq(1, 100000)]
CHAIN_METHODS = [m for m in METHODS if m != "circle"]  # circle: tests/test_circle.py


def labelings(m: int):
    """Every labeling of m points with two classes, both present."""
    for bits in itertools.product((0, 1), repeat=m):
        if 0 < sum(bits) < m:
            yield list(bits)


def certified_depth(X, y, **kw) -> int:
    """Build, certify every point, check that float64 agrees; the depth."""
    net = build(X, y, **kw)
    cert = certify(net, X, y)
    assert cert.all_certified, (y, [p for p in cert.points if not p.certified])
    assert cert.min_margin > 0
    assert check(net, points_from_arrays(X, y), "float64").all_agree, y
    return net.depth


@pytest.mark.parametrize("method", CHAIN_METHODS)
@pytest.mark.parametrize("m", [*range(3, 10), pytest.param(10, marks=pytest.mark.slow)])
def test_every_labeling_of_a_line_is_certified_within_m_minus_2(m, method):
    X = [[k] for k in range(m)]
    depths = {tuple(y): certified_depth(X, y, method=method) for y in labelings(m)}
    assert max(depths.values()) == m - 2  # the bound holds and is attained (alternating labels)
    assert depths[tuple(k % 2 for k in range(m))] == m - 2
    if method == "runs":  # exactly one run fewer per layer
        assert all(d == runs(y) - 2 for y, d in depths.items())


def test_the_paper_loop_spends_a_layer_inside_a_run():
    """0010 has three runs: one fold suffices, but PMA first merges the two leading 0s."""
    X, y = [[0], [1], [2], [3]], [0, 0, 1, 0]
    assert certified_depth(X, y, method="runs") == 1
    assert certified_depth(X, y, method="pma") == 2


@pytest.mark.parametrize("method", CHAIN_METHODS)
@pytest.mark.parametrize("m", range(3, 9))
def test_every_labeling_with_pytorch_eps(m, method):
    X = [[fmpq(k, 3)] for k in range(m)]
    depths = [certified_depth(X, y, eps=EPS[1], method=method) for y in labelings(m)]
    assert max(depths) == m - 2


@pytest.mark.parametrize("m", [50, 100, 200])
def test_random_sets_float64_agrees_and_runs_uses_fewer_layers(m):
    """Random binary sets in R^3: the runs net is right in float64 on every point, and
    shallower than the paper's (about half the layers: random labels give about m/2 runs)."""
    ratios = []
    for seed in range(2):
        rng = np.random.default_rng([m, seed])
        X = rng.integers(-(2**20), 2**20, size=(m, 3)) / 2**18
        y = rng.integers(0, 2, m)
        points = points_from_arrays(X, y)
        net = build(points, method="runs")
        assert certify(net, points).all_certified
        assert check(net, points, "float64").all_agree
        ratios.append(net.depth / build(points, method="pma").depth)
    assert np.mean(ratios) < 0.75, ratios


@pytest.mark.parametrize("eps", EPS, ids=["eps0", "eps1e-5"])
@pytest.mark.parametrize("d", [2, 5])
@pytest.mark.parametrize("seed", range(3))
def test_random_points_random_labels(d, eps, seed):
    rng = np.random.default_rng(seed)
    m = 30
    X = rng.standard_normal((m, d))
    y = rng.integers(0, 2, m)
    y[:2] = [0, 1]
    net = build(X, y, eps=eps)
    assert net.depth <= m - 2
    assert net.eps == eps
    assert certify(net, X, y).all_certified
    assert (net.predict(X, backend="exact") == y).all()


def test_linearly_separable_needs_no_layer():
    X = [[0, 0], [1, 0], [3, 1], [4, 1]]
    y = ["a", "a", "b", "b"]
    net = build(X, y)
    assert net.depth == 0
    assert certify(net, X, y).all_certified
    assert list(net.predict(X)) == y


def test_single_class_is_depth_zero_and_pads():
    X = [[1, 2], [3, 4]]
    net = build(X, [7, 7])
    assert net.depth == 0 and net.classes == (7,)
    assert certify(net, X, [7, 7]).all_certified
    padded = build(X, [7, 7], depth=3, classes=[7, 8])
    assert padded.depth == 3
    cert = certify(padded, X, [7, 7])
    assert cert.all_certified and cert.min_margin == 1.0


@pytest.mark.parametrize("eps", EPS, ids=["eps0", "eps1e-5"])
def test_padding_gives_exactly_the_requested_depth(eps):
    X = [[k] for k in range(5)]
    y = [0, 1, 0, 0, 1]
    for depth in range(build(X, y).depth, 9):
        net = build(X, y, eps=eps, depth=depth)
        assert net.depth == depth
        assert certify(net, X, y).all_certified


def test_depth_too_small_is_an_input_error():
    with pytest.raises(InputError, match="needs 3 LayerNorm layers, more than 2"):
        build([[k] for k in range(5)], [0, 1, 0, 1, 0], depth=2)


def test_bad_parameters():
    X, y = [[0], [1], [2]], [0, 1, 0]
    with pytest.raises(InputError, match="eps must be >= 0"):
        build(X, y, eps=-1)
    with pytest.raises(InputError, match="eps must be a finite number"):
        build(X, y, eps="nan")
    with pytest.raises(InputError, match="unknown method"):
        build(X, y, method="magic")
    with pytest.raises(InputError, match="depth must be a non-negative integer"):
        build(X, y, depth=True)


def test_duplicates_and_exact_reading():
    # 0.1 + 0.2 and 0.3 are different floats, but the same decimals
    X = [[0.1 + 0.2], [0.3], [1.0]]
    points = points_from_arrays(X, [0, 1, 0])
    assert points.m == 3  # distinct as floats: their exact dyadic values differ
    net = build(points)
    assert certify(net, points).all_certified


def test_fold_map_merges_mirror_images_and_orders_by_distance():
    """The chain's ball map obeys the fold lemma (proofs/fold_lemma.md), for eps = 0 and > 0."""
    step = FoldStep(fmpq(1, 3), fmpq(2, 7), fmpq(5))
    for e in EPS:
        with precision(200):
            f = step.ball_map(e)
            left, right = f(arb(fmpq(1, 3) - fmpq(1, 5))), f(arb(fmpq(1, 3) + fmpq(1, 5)))
            far = f(arb(fmpq(1, 3) + fmpq(1, 2)))
            assert left.overlaps(right) and (left - right).rad() < 2**-190
            assert far < left


def test_runs():
    assert runs([]) == 0
    assert runs([1, 1, 0, 0, 1]) == 3
    assert runs("abba") == 3


small_sets = st.integers(2, 8).flatmap(
    lambda m: st.tuples(
        st.lists(
            st.lists(st.integers(-20, 20), min_size=2, max_size=2),
            min_size=m,
            max_size=m,
            unique_by=tuple,
        ),
        st.lists(st.sampled_from(["x", "y"]), min_size=m, max_size=m),
        st.sampled_from(EPS),
    )
)


@settings(max_examples=60, deadline=None)
@given(small_sets)
def test_property_any_small_set_any_labels(case):
    X, y, eps = case
    net = build(X, y, eps=eps)
    m = len(X)
    assert net.depth <= max(m - 2, 0)
    cert = certify(net, X, y)
    assert cert.all_certified
    assert check(net, points_from_arrays(X, y), "float64").all_agree


@pytest.mark.parametrize("seed", [0, 1, 4, 8])
def test_data_on_a_grid_with_many_mirror_coincidences(seed):
    """Iris-like data (a 0.1 grid, many exact ties): the first centre tolerance fails on
    seeds 1, 4 and 8, a tighter one succeeds (regression: these used to fail or spin)."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 12, size=(150, 4)) / 10
    y = (X[:, 0] + X[:, 1] > 1.1).astype(int) ^ (rng.random(150) < 0.2)
    points = points_from_arrays(*_unique(X, y))
    net = build(points, method="runs")
    assert net.depth <= points.m - 2
    assert certify(net, points).all_certified


def test_iris_setosa_against_the_rest():
    datasets = pytest.importorskip("sklearn.datasets")
    X, y = datasets.load_iris(return_X_y=True)
    points = points_from_arrays(*_unique(X - X.mean(), (y != 0).astype(int)))
    assert certify(build(points), points).all_certified


def _unique(X, y):
    """Drop rows that repeat a point with another label (no net can fit those)."""
    seen: dict[tuple, int] = {}
    keep = []
    for i, (row, label) in enumerate(zip(map(tuple, X), y, strict=True)):
        if seen.setdefault(row, label) == label:
            keep.append(i)
    conflicted = {row for row, label in zip(map(tuple, X), y, strict=True) if seen[row] != label}
    keep = [i for i in keep if tuple(X[i]) not in conflicted]
    return X[keep], y[keep]


@pytest.mark.parametrize("g", [fmpq(1, 300), fmpq(1, 10**6)])
def test_runs_opens_the_fold_interval_when_r1_is_wide(g):
    """R_1 = {0, 1} is far wider than the slot beyond R_2 = {1 + g}: only a small offset
    at the top of R_2 opens the interval (proofs/runs_fold.md); this used to fail."""
    X = [[x] for x in (0, 1, 1 + g, 1 + 2 * g, 1 + 3 * g, 2 + 3 * g)]
    assert certified_depth(X, [0, 0, 1, 0, 1, 1]) == 2


def test_runs_falls_back_to_pma_below_float_resolution():
    """Labels 2^-60 apart: no float64 search can see them; the paper's construction,
    which needs none, still gives a certified net, and the net says so."""
    X = [[0], [1], [1 + fmpq(1, 2**60)], [1 + fmpq(1, 2**59)], [3]]
    y = [0, 1, 0, 1, 0]
    net = build(X, y)
    assert net.meta["method"] == "pma" and "float64" in net.meta["fallback"]
    assert certify(net, X, y).all_certified
