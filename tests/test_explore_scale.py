"""The explorer and the pictures at scale: merges of many points in near-linear time, a sample
of large point sets (said on the page and on every figure), wide LN-G nets in bounded memory.

No test here times anything: the sizes are ones a quadratic merge history or an unbounded
grid could not finish (or would need gigabytes for), and memory is bounded by an address-space
limit on a subprocess.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from plotly_arrays import array

from lncapacity import fileformat, points_from_arrays
from lncapacity.cli import main
from lncapacity.explain import Trace, float_trace, merge_history

NET = {
    "format": "lnnet/1",
    "input_dim": 2,
    "width": 3,
    "eps": "0",
    "layers": [
        {
            "W": [["2", "7/4"], ["-2", "-7/4"], ["0", "0"]],
            "b": ["-1623/2048", "6057/2048", "-2217/1024"],
            "meta": {"kind": "pma"},
        }
    ],
    "readout": {"W": [["-1", "-1", "2"], ["1", "1", "-2"]], "b": ["4", "-4"]},
    "classes": [0, 1],
}
"""A small net (the paper's XOR net of the formats page): it reads ``8 x1 + 7 x2``, so points
on a line ``8 x1 + 7 x2 = c`` have one value after every map, and merge."""


def _merging_points(per_line: int) -> tuple[np.ndarray, np.ndarray]:
    """``4 * per_line`` points on four lines of one value each, labels 0, 1, 0, 1."""
    t = np.arange(per_line, dtype=np.float64)
    X = np.concatenate([np.stack([7 * t, -8 * t + c], axis=1) for c in range(4)])
    return X, np.repeat([0, 1, 0, 1], per_line)


# ---------------------------------------------------------------------------
# merge history


def _reference_history(
    kinds: list[str | None], values: list[np.ndarray], labels: np.ndarray, rtol: float
) -> list[list[list[int]]]:
    """merge_history's definition, written plainly (quadratic): per layer, the pma rule on
    the groups so far, then every pair of same-label neighbours closer than rtol."""
    group = list(range(len(labels)))
    out = []
    for layer in range(1, len(values)):
        v0, v1 = values[layer - 1], values[layer]
        order = sorted(range(len(labels)), key=lambda i: (v1[i], i))
        pairs = [
            (a, b)
            for a, b in itertools.pairwise(order)
            if labels[a] == labels[b] and v1[b] - v1[a] < rtol
        ]
        if kinds[layer - 1] == "pma":
            o0 = sorted(range(len(labels)), key=lambda i: (v0[i], i))
            first = o0[0]
            partner = next(
                (k for k in o0[1:] if labels[k] == labels[first] and group[k] != group[first]),
                None,
            )
            if partner is not None:
                pairs.insert(0, (first, partner))
        formed: list[list[int]] = []
        for a, b in pairs:
            ga, gb = group[a], group[b]
            if ga == gb:
                continue
            group = [ga if g == gb else g for g in group]
            members = [i for i, g in enumerate(group) if g == ga]
            formed = [f for f in formed if not set(f) <= set(members)] + [members]
        out.append(formed)
    return out


def test_merge_history_is_its_definition() -> None:
    """On random columns with many ties, merge_history is the plain (quadratic) definition,
    and merge_representatives names each point's group by its smallest point."""
    from lncapacity import build
    from lncapacity.explain import MERGE_RTOL, merge_representatives

    rng = np.random.default_rng(7)
    for trial in range(30):
        m = int(rng.integers(4, 12))
        X = [[k, int(rng.integers(0, 7))] for k in range(m)]
        y = [k % 2 for k in range(m)]
        net = build(X, y, method="pma" if trial % 2 else "runs")
        tr = float_trace(net, np.array(X, dtype=float))
        values = [np.round(v, 1) for v in tr.values]  # ties: values merge
        trace = Trace(values, [1.0] * len(values), tr.angles, tr.radius, tr.scores)
        labels = np.array(y)
        kinds = [layer.meta.get("kind") for layer in net.layers]
        expected = _reference_history(kinds, values, labels, MERGE_RTOL)
        assert merge_history(net, trace, labels) == expected
        reps = merge_representatives(net, trace, labels)
        group = list(range(m))
        for layer, formed in enumerate(expected, 1):
            for g in formed:
                for i in g:
                    group[i] = g[0]
            assert reps[layer].tolist() == group


def test_merge_history_of_many_merged_points_is_near_linear() -> None:
    """100,000 points whose values fall on two (one per label) in one layer: 99,998 joins.
    A history that relabels a whole group per join needs 10^10 steps; joining small into
    large, m log m."""
    from lncapacity.explore import example

    net, _ = example("xor")
    m = 100_000
    labels = np.arange(m) % 2
    trace = Trace(
        [np.arange(m, dtype=float), labels.astype(float)],
        [1.0, 1.0],
        np.zeros((1, m)),
        np.ones((1, m)),
        np.zeros((m, 2)),
    )
    (formed,) = merge_history(net, trace, labels)
    assert sorted(formed) == [list(range(0, m, 2)), list(range(1, m, 2))]
    from lncapacity.explain import merge_representatives

    reps = merge_representatives(net, trace, labels, [1])
    assert set(reps) == {1} and set(reps[1].tolist()) == {0, 1}


# ---------------------------------------------------------------------------
# samples


def test_a_sample_keeps_every_class_and_is_the_same_on_every_run() -> None:
    from lncapacity.plot import budget

    X = np.arange(20_000, dtype=float).reshape(-1, 2)
    y = ["rare" if k == 9_876 else f"c{k % 3}" for k in range(10_000)]
    points = points_from_arrays(X, y)
    sample, ids = budget.sample_points(points, 50)
    again, ids2 = budget.sample_points(points, 50)
    assert np.array_equal(ids, ids2) and sample == again
    assert 50 <= len(ids) <= 51 and np.all(np.diff(ids) > 0)
    assert "rare" in sample.y and set(sample.y) == set(points.y)
    assert [points.X[i] for i in ids] == list(sample.X)
    assert budget.sample_points(points, 10_000)[0] is points
    assert budget.sample_note(50, 10_000).startswith("a sample of 50 of the 10,000 points")


def test_the_page_draws_a_sample_and_says_so() -> None:
    """5,000 points, 200 drawn: the markers of every step account for exactly the drawn
    points, hovers give their ids in the data, and the page says it is a sample."""
    pytest.importorskip("plotly")
    from lncapacity import explore
    from lncapacity.explore.layers import frame_panels

    net = fileformat.from_dict(NET)
    X, y = _merging_points(1_250)
    figs, notes = explore.figures(net, X, y, max_points=200)
    assert "The page shows a sample of 200 of the 5,000 points" in " ".join(notes)
    for f in figs["layers"]["frames"]:
        texts = [x for t in f["data"][frame_panels(2, heat=True)["ladder"]][:2] for x in t["text"]]
        merged = [int(re.search(r"(\d+) merged", x).group(1)) for x in texts if "merged" in x]  # type: ignore[union-attr]
        assert sum(merged) + sum("merged" not in x for x in texts) == 200  # each point once
    first = figs["layers"]["frames"][0]["data"][frame_panels(2, heat=True)["ladder"]][:2]
    ids = [i for t in first for x in t["text"] for i in _ids(x)]  # step 0: nothing merged
    assert len(set(ids)) == len(ids) == 200 and set(ids) <= set(range(5_000))
    points = [t for t in figs["layers"]["data"] if "margin" in str(t.get("text"))]
    for t in points:  # each drawn point where its row of the data is
        for x, yy, text in zip(array(t["x"]), array(t["y"]), t["text"], strict=True):
            (i,) = _ids(text)
            assert (x, yy) == (X[i, 0], X[i, 1])


def _ids(text: str) -> list[int]:
    head = text.split("<br>")[0]
    return [int(i) for i in re.findall(r"\d+", head.split("(")[0])]


@pytest.fixture(scope="module")
def large(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("large")
    (folder / "net.json").write_text(json.dumps(NET), encoding="utf-8")
    X, y = _merging_points(5_000)
    np.savez(folder / "points.npz", X=X, y=y)
    return folder / "net.json", folder / "points.npz"


def test_explore_of_20000_merged_points_draws_a_sample(
    large: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """20,000 points that merge (the case that took a minute and grew with the points):
    the page draws the default 1,000, says so, and stays a few megabytes."""
    pytest.importorskip("plotly")
    from lncapacity import explore

    net, data = large
    out = tmp_path / "page.html"
    assert main(["explore", str(net), str(data), "--out", str(out), "--quiet"]) == 0
    text = out.read_text(encoding="utf-8")
    assert f"a sample of {explore.MAX_POINTS:,} of the 20,000 points" in text
    assert len(text) < 12_000_000  # Plotly itself is about 4.7 MB of it
    capsys.readouterr()


def test_plot_of_20000_points_draws_a_sample_and_every_figure_says_so(
    large: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    pytest.importorskip("networkx")
    net, data = large
    out = tmp_path / "figs"
    argv = ["plot", str(net), str(data), "--out", str(out), "--format", "svg", "--quiet"]
    assert main([*argv, "--max-points", "300"]) == 0
    capsys.readouterr()
    note = "A sample of 300 of the 20,000 points"
    figures = sorted(out.glob("*.svg"))
    assert figures and all(note in f.read_text(encoding="utf-8") for f in figures)
    graph = (out / "merge_tree.graphml").read_text(encoding="utf-8")
    assert "a sample of 300 of the 20,000 points" in graph
    assert graph.count("<node ") < 2 * 300  # a node per drawn point and per group


# ---------------------------------------------------------------------------
# wide nets


def _wide_net(width: int) -> dict[str, Any]:
    """An LN-G net with one layer of ``width`` features in groups of 3, random small weights."""
    rng = np.random.default_rng(0)
    W = rng.integers(-9, 10, size=(width, 2))
    return {
        "format": "lnnet/1.1",
        "requires": ["groups"],
        "input_dim": 2,
        "width": width,
        "eps": "0",
        "layers": [
            {
                "W": [[str(a), str(b)] for a, b in W.tolist()],
                "b": [str(v) for v in rng.integers(-9, 10, size=width).tolist()],
                "groups": width // 3,
            }
        ],
        "readout": {
            "W": [[str(v) for v in rng.integers(-9, 10, size=width).tolist()] for _ in range(2)],
            "b": ["0", "0"],
        },
        "classes": [0, 1],
    }


MEMORY = 3 * 2**30
"""Address space the wide-net commands run in (the pictures of a 60,000-feature net need a
few hundred MB; grid scores of 4,096 cells by 60,000 features alone would need 2 GB a copy)."""


def _limited(argv: list[str]) -> subprocess.CompletedProcess[str]:
    import resource

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))

    env = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "lncapacity", *argv],
        capture_output=True,
        text=True,
        preexec_fn=limit,
        env={**os.environ, **env},
        check=False,
    )


@pytest.fixture(scope="module")
def wide(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("wide")
    net = folder / "wide.json"
    net.write_text(json.dumps(_wide_net(60_000)), encoding="utf-8")
    data = folder / "xor.csv"
    data.write_text("x1,x2,label\n0,0,0\n0,1,1\n1,0,1\n1,1,0\n", encoding="utf-8")
    return net, data


def test_a_pass_through_a_wide_net_holds_a_bounded_block() -> None:
    from lncapacity.explain.trace import BLOCK_NUMBERS, block_rows
    from lncapacity.plot import budget

    net = fileformat.from_dict(_wide_net(3_000))
    assert block_rows(net) * 3_000 <= BLOCK_NUMBERS
    assert budget.affordable_points(net, 10**9) * 3_000 <= budget.TRACE_NUMBERS
    huge = fileformat.from_dict(_wide_net(30))
    assert budget.grid_side(huge, 300) == 300  # a small net: the grid asked for


def test_explore_and_plot_of_a_wide_grouped_net_stay_in_bounded_memory(
    wide: tuple[Path, Path], tmp_path: Path
) -> None:
    """A 60,000-feature LN-G layer: both commands finish in a 3 GiB address space (the
    grid, the trace and the certificate sized by the net before any work), exit 0, and say
    what they left out."""
    pytest.importorskip("plotly")
    pytest.importorskip("matplotlib")
    net, data = wide
    page = tmp_path / "wide.html"
    p = _limited(["explore", str(net), str(data), "--out", str(page), "--quiet"])
    assert p.returncode == 0, p.stderr
    assert "beyond the page&#x27;s budget" in page.read_text(encoding="utf-8")
    figs = tmp_path / "figs"
    p = _limited(["plot", str(net), str(data), "--out", str(figs), "--json", "--quiet"])
    assert p.returncode == 0, p.stderr
    skipped = json.loads(p.stdout)["skipped"]
    assert "beyond a picture's budget" in skipped["regions"]
    assert (figs / "ladder.png").exists()
