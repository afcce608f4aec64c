"""--search: certified nets beyond the construction, and honest failures."""

from __future__ import annotations

import numpy as np

from lncapacity.shatter import shatter, verify_shatter


def test_collinear_alternating_four_points_are_impossible_at_depth_one(tmp_path):
    # on a line a depth-1 net's class-1 set is an interval or the complement of one
    # (proofs/depth_one_on_a_line.md): 0101 and 1010 must stay unrealised, whatever the search does
    out = tmp_path / "s.jsonl"
    summary = shatter([[0], [1], [2], [3]], 1, search={"restarts": 4, "steps": 400}, out=out)
    assert sorted(summary.failures) == [0b0101, 0b1010]
    assert summary.certified == 14 and not summary.all_certified
    assert not out.exists()


def test_four_points_in_the_plane_shattered_at_depth_one(tmp_path):
    from flint import fmpq

    # here the construction needs two layers for two labelings (one pair): the search must
    # find certified depth-1 nets for them
    pts = [[fmpq(2, 4), fmpq(3, 4)], [fmpq(-9, 4), fmpq(-2, 4)], [fmpq(6, 4), fmpq(5, 4)]]
    pts.append([fmpq(2, 4), fmpq(-1, 4)])
    out = tmp_path / "s.jsonl"
    summary = shatter(pts, 1, search={"restarts": 8}, out=out, workers=1)
    assert summary.all_certified and summary.labelings == 16
    assert summary.folds["search"] == 2
    assert verify_shatter(out, workers=1)[1] == []


def test_a_search_of_ones_own_is_called_as_find_net_and_certified_like_it(tmp_path):
    import functools

    from flint import fmpq

    from lncapacity.search import certified_rounding, find_net

    pts = [[fmpq(2, 4), fmpq(3, 4)], [fmpq(-9, 4), fmpq(-2, 4)], [fmpq(6, 4), fmpq(5, 4)]]
    pts.append([fmpq(2, 4), fmpq(-1, 4)])
    a, b = tmp_path / "dict.jsonl", tmp_path / "own.jsonl"
    shatter(pts, 1, search={"restarts": 8}, out=a, workers=1)
    own = functools.partial(find_net, restarts=8)
    assert shatter(pts, 1, search=own, out=b, workers=2).all_certified
    assert a.read_bytes() == b.read_bytes()  # the same nets, the same certificate

    # a wrong float net is rounded but never accepted: the labeling fails honestly
    def wrong(points, depth, eps, classes, *, seed):
        W = np.zeros((3, 2))
        W[0, 0] = 1.0
        r = np.array([1.0, 0.0, 0.0])
        return certified_rounding(points, [W, np.zeros(3), r, np.zeros(1)], depth, eps, classes)

    summary = shatter(pts, 1, search=wrong, workers=1)
    assert summary.failures and not summary.all_certified
