"""``method="auto"`` with two classes (issue 33): the shallower of ``runs`` and a circle
search within a time budget; ``budget`` and ``--budget``."""

from __future__ import annotations

import numpy as np
import pytest

from lncapacity import InputError, build, certify, fileformat, points_from_arrays
from lncapacity.construct import AUTO_BUDGET, AUTO_LARGE, AUTO_MIN_DEPTH, auto_budget
from lncapacity.floats import check

ALTERNATING = points_from_arrays(np.arange(12).reshape(-1, 1), np.arange(12) % 2)
"""12 alternating points on a line: ``runs`` needs 10 layers (more than ``AUTO_MIN_DEPTH``),
circle fewer (the fold-count bound is 3, proofs/circle_maps.md)."""


def _bytes(net):
    return fileformat.dumps(fileformat.to_dict(net))


def test_auto_is_circle_when_circle_is_shallower():
    runs = build(ALTERNATING, method="runs")
    circle = build(ALTERNATING, method="circle")
    net = build(ALTERNATING, budget=3600)  # a budget the search cannot exhaust: deterministic
    assert runs.depth == 10 > AUTO_MIN_DEPTH
    assert 3 <= net.depth == circle.depth < runs.depth
    assert net.meta["method"] == "circle" and net.meta["auto"] == "circle over runs (10)"
    assert (net.layers, net.readout) == (circle.layers, circle.readout)
    assert certify(net, ALTERNATING).all_certified
    assert check(net, ALTERNATING, "float64").all_agree


def test_auto_keeps_the_runs_net_without_a_budget_or_with_a_depth():
    runs = build(ALTERNATING, method="runs")
    assert _bytes(build(ALTERNATING, budget=0)) == _bytes(runs)
    # with a depth both would have it: runs alone, as before
    padded = build(ALTERNATING, depth=11, budget=3600)
    assert _bytes(padded) == _bytes(build(ALTERNATING, method="runs", depth=11))


def test_auto_keeps_shallow_runs_nets_without_a_search():
    # 10 alternating points: runs needs 8 layers (AUTO_MIN_DEPTH), circle could do with 3
    points = points_from_arrays(np.arange(10).reshape(-1, 1), np.arange(10) % 2)
    runs = build(points, method="runs")
    assert runs.depth == AUTO_MIN_DEPTH
    assert _bytes(build(points, budget=3600)) == _bytes(runs)


def test_circle_with_budget_zero_gives_way_to_runs():
    net = build(ALTERNATING, method="circle", budget=0)
    assert net.meta["method"] == "runs" and net.meta["fallback"].startswith("circle: ")
    assert certify(net, ALTERNATING).all_certified


def test_three_classes_ignore_the_budget():
    y = [k % 3 for k in range(6)]
    points = points_from_arrays(np.arange(6).reshape(-1, 1), y)
    assert _bytes(build(points, budget=0)) == _bytes(build(points))


def test_the_budget_rule():
    least, per_point, most = AUTO_BUDGET
    assert auto_budget(10) == least and auto_budget(AUTO_LARGE - 1) == most
    assert auto_budget(300) == pytest.approx(300 * per_point)
    assert auto_budget(AUTO_LARGE) == 0  # at scale: runs, unless a budget is given


@pytest.mark.parametrize("budget", [-1, float("nan"), float("inf"), "5", True])
def test_bad_budgets_are_refused(budget):
    with pytest.raises(InputError, match="budget must be"):
        build(ALTERNATING, budget=budget)


@pytest.mark.parametrize("value", ["-1", "abc", "nan", "inf"])
def test_cli_refuses_bad_budgets(tmp_path, capsys, value):
    from lncapacity.cli import main

    data = tmp_path / "d.csv"
    data.write_text("x,label\n0,0\n1,1\n2,0\n3,1\n")
    with pytest.raises(SystemExit) as exit_:
        main(["certify", str(data), "--budget", value, "--out", str(tmp_path / "n.json")])
    assert exit_.value.code == 2
    assert "--budget: expected seconds >= 0" in capsys.readouterr().err
    assert sorted(f.name for f in tmp_path.iterdir()) == ["d.csv"]


def test_cli_budget_zero_writes_the_runs_net(tmp_path):
    from lncapacity.cli import main

    data = tmp_path / "d.csv"
    data.write_text("x,label\n" + "".join(f"{k},{k % 2}\n" for k in range(12)))
    out = tmp_path / "n.json"
    assert main(["certify", str(data), "--budget", "0", "--out", str(out), "--quiet"]) == 0
    net = fileformat.load(out)
    assert net.meta["method"] == "runs" and net.depth == 10
