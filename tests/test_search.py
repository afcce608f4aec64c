"""--search: certified nets beyond the construction, and honest failures."""

from __future__ import annotations

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
