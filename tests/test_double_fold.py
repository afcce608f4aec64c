"""Depth L shatters 2L + 1 points (proofs/double_fold.md): every labeling, certified."""

import itertools

import pytest
from flint import fmpq

from lncapacity.certify import certify
from lncapacity.construct.double_fold import design, double_fold_net, merge_pairs
from lncapacity.errors import InputError
from lncapacity.shatter import _point_set, labels_of, random_points


def _line(n):
    return [(fmpq(k),) for k in range(n)]


def _shattered(X, depth):
    n = len(X)
    for k in range(2**n):
        points = _point_set(X, labels_of(k, n))
        net = double_fold_net(points, depth)
        assert net.depth == depth and net.eps == 0 and net.width == 3
        assert certify(net, points, workers=1).all_certified, k


@pytest.mark.parametrize("depth", [1, 2, 3, pytest.param(4, marks=pytest.mark.slow)])
def test_every_labeling_of_2L_plus_1_points_on_a_line_is_certified_at_depth_L(depth):
    _shattered(_line(2 * depth + 1), depth)


@pytest.mark.slow
def test_every_labeling_of_11_points_on_a_line_is_certified_at_depth_5():
    _shattered(_line(11), 5)


def _circle(n):  # half-angle coordinates i^2: no three chords concurrent for n <= 11
    out = []
    for i in range(1, n + 1):
        u = fmpq(i * i)
        out.append(((1 - u * u) / (1 + u * u), 2 * u / (1 + u * u)))
    return out


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_every_labeling_of_2L_plus_3_points_on_a_circle_is_certified_at_depth_L(depth):
    _shattered(_circle(2 * depth + 3), depth)


@pytest.mark.slow
def test_every_labeling_of_11_points_on_a_circle_is_certified_at_depth_4():
    _shattered(_circle(11), 4)


def test_on_the_circle_the_first_layer_folds_and_more_points_are_refused():
    points = _point_set(_circle(7), [0, 1] * 3 + [0])
    net = double_fold_net(points, 2)
    assert net.layers[0].meta["kind"] == "double-fold" and net.layers[0].shape == (3, 2)
    with pytest.raises(InputError, match="depth"):
        double_fold_net(_point_set(_circle(8), [0, 1] * 4), 2)


def test_any_distinct_points_in_the_plane_too():
    _shattered(random_points(7, 2, 0), 3)


def test_fewer_points_and_uneven_spacing():
    X = [(fmpq(v),) for v in (0, 1, 3, 7, fmpq(15, 2), 40)]  # 6 points: depth 3 (one single merge)
    _shattered(X, 3)


def test_weights_are_dyadic_rationals():
    points = _point_set(_line(9), labels_of(0b101010101, 9))
    net = double_fold_net(points, 4)
    for layer in (*net.layers, net.readout):
        for v in [w for row in layer.W for w in row] + list(layer.b):
            q = int(v.q)
            assert q & (q - 1) == 0  # a power of two


def test_each_fold_merges_exactly_two_pairs_and_three_points_reach_the_readout():
    for k in range(0, 2**9, 3):  # a third of the labelings (all are certified above)
        des = design(_line(9), labels_of(k, 9), 4)
        sizes = [len(groups) for groups in des.groups]  # after layers 2, 3, 4 and the readout
        assert sizes == [7, 5, 3, 3]
        for groups in des.groups:  # a group holds points of one label only
            for g in groups:
                assert len({labels_of(k, 9)[i] for i in g}) == 1


def test_too_many_points_for_the_depth_are_refused():
    with pytest.raises(InputError, match="depth"):
        double_fold_net(_point_set(_line(6), [0, 1] * 3), 2)


@pytest.mark.parametrize("n", [4, 5, 6, 7, 8, 9, 10, 11])
def test_merge_candidates_exist_and_are_valid_for_every_labeling(n):
    order = list(range(n))
    for labels in itertools.product((0, 1), repeat=n):
        cands = merge_pairs(order, labels)
        assert cands, labels
        for pairs in cands:
            assert len(pairs) == (1 if n % 2 == 0 else 2)
            for a, b in pairs:
                assert a < b and labels[a] == labels[b]
            if len(pairs) == 2:
                (a, b), (c, d) = sorted(pairs)
                assert b < c or (n == 5 and a < c < d < b)  # separated, or nested at n = 5
