"""``lncapacity.plot``: every picture has the artists it promises, on small nets.

Artists are found by their ``gid`` (``ladder-lines``, ``points-<class index>``,
``threshold``, ``curve``, ``centre``, ``arc-<class index>``, ``disagree``, ...).
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from flint import fmpq

matplotlib = pytest.importorskip("matplotlib")
nx = pytest.importorskip("networkx")

from test_explain import three_class_net  # noqa: E402

import lncapacity  # noqa: E402
from lncapacity import certify, fileformat, plot  # noqa: E402
from lncapacity.model import LNNet  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SPIRALS = lncapacity.load_points(ROOT / "examples" / "spirals.csv")


@pytest.fixture(scope="module")
def nets() -> dict[str, LNNet[fmpq]]:
    return {
        "runs": lncapacity.build(SPIRALS, method="runs"),
        "pma": lncapacity.build(SPIRALS, method="pma"),
    }


def by_gid(fig, gid: str) -> list:
    return [a for a in fig.findobj() if a.get_gid() == gid]


def legend_texts(fig) -> list[str]:
    legends = [lg for ax in fig.axes for lg in [ax.get_legend()] if lg] + list(fig.legends)
    return [t.get_text() for lg in legends for t in lg.get_texts()]


def test_ladder_draws_every_point_through_every_layer(nets) -> None:
    for name, net in nets.items():
        for mode in ("value", "rank", "angle"):
            fig = plot.ladder(net, SPIRALS, mode=mode)
            (lines,) = by_gid(fig, "ladder-lines")
            segs = lines.get_segments()
            assert len(segs) == SPIRALS.m, (name, mode)
            assert all(len(s) == net.depth + 1 for s in segs)
            counts = [len(a.get_offsets()) for i in (0, 1) for a in by_gid(fig, f"points-{i}")]
            assert sum(counts) == SPIRALS.m * (net.depth + 1)
            texts = legend_texts(fig)
            assert texts[:2] == ["class a", "class b"]
            if mode != "angle":
                assert "readout threshold" in texts and len(by_gid(fig, "threshold")) == 1
            assert "shown" not in fig.axes[0].get_title()


def test_ladder_value_threshold_is_the_readout_threshold(nets) -> None:
    net = nets["runs"]
    fig = plot.ladder(net, SPIRALS, mode="value")
    trace = lncapacity.explain.float_trace(net, SPIRALS)
    (line,) = by_gid(fig, "threshold")
    t = float(fileformat.parse_rational(net.readout.meta["threshold"]))
    assert line.get_ydata()[0] == pytest.approx(t / trace.amplitude[-1])


def test_deep_nets_are_subsampled_and_say_so(nets) -> None:
    net = nets["pma"]
    fig = plot.ladder(net, SPIRALS, max_columns=5)
    (lines,) = by_gid(fig, "ladder-lines")
    xs = lines.get_segments()[0][:, 0]
    assert list(xs) == [0, 4, 7, 10, 14]  # evenly spaced, first and last kept
    assert "(5 of 15 columns shown, evenly spaced)" in fig.axes[0].get_title()
    fig = plot.fold_maps(net, SPIRALS, max_panels=4)
    assert sum(ax.get_visible() for ax in fig.axes) == 4
    assert "4 of 14 layers shown" in fig.get_suptitle()


def test_fold_maps_have_a_curve_centre_and_runs_per_layer(nets) -> None:
    net = nets["runs"]
    fig = plot.fold_maps(net, SPIRALS)
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert len(panels) == net.depth
    assert len(by_gid(fig, "curve")) == len(by_gid(fig, "centre")) == net.depth
    assert len(by_gid(fig, "runs-before")) == net.depth
    # the points sit on the curve: value out is the layer's map of value in
    for ax, layer in zip(panels, range(1, net.depth + 1), strict=True):
        xy = np.concatenate(
            [
                a.get_offsets()
                for a in ax.collections
                if a.get_gid() and a.get_gid().startswith("points-")
            ]
        )
        curve = lncapacity.explain.layer_curve(net, layer, xy[:, 0])
        np.testing.assert_allclose(xy[:, 1], curve, rtol=1e-9, atol=1e-12)
    assert {"class a", "class b", "centre", "fold point"} <= set(legend_texts(fig))


def test_circles_put_layernorm_on_the_circle_and_draw_the_arcs(nets) -> None:
    net = nets["runs"]
    fig = plot.circles(net, SPIRALS)
    assert sum(ax.get_visible() for ax in fig.axes) == net.depth
    for i in (0, 1):
        for sc in by_gid(fig, f"points-{i}"):
            r = np.linalg.norm(sc.get_offsets(), axis=1)
            np.testing.assert_allclose(r, np.sqrt(3))
    assert {a.get_gid() for a in fig.findobj() if str(a.get_gid()).startswith("arc-")} == {
        "arc-0",
        "arc-1",
    }


def test_three_classes_get_three_colours_arcs_and_bands() -> None:
    net, X, y = three_class_net()
    fig = plot.ladder(net, X, y)
    assert legend_texts(fig)[:3] == ["class 0", "class 1", "class 2"]
    assert len(by_gid(fig, "threshold")) == 2  # two boundaries between three intervals
    assert len(by_gid(fig, "class-band")) == 3
    colours = {tuple(by_gid(fig, f"points-{i}")[0].get_facecolor()[0]) for i in range(3)}
    assert len(colours) == 3
    fig = plot.circles(net, X, y)
    assert len({a.get_gid() for a in fig.findobj() if str(a.get_gid()).startswith("arc-")}) == 3


def test_palette_names_every_class_uniquely() -> None:
    styles = {plot.class_style(i, 40) for i in range(40)}
    assert len(styles) == 40
    assert [plot.class_style(i, 8)[0] for i in range(8)] == list(plot.OKABE_ITO)


def test_regions_plot_points_and_mark_disagreements(nets) -> None:
    net = nets["runs"]
    cert = certify(net, SPIRALS)
    fig = plot.regions(net, SPIRALS, certificate=cert, resolution=60)
    assert sum(len(a.get_offsets()) for i in (0, 1) for a in by_gid(fig, f"points-{i}")) == 24
    assert by_gid(fig, "disagree") == []
    assert "24/24 certified" in fig.axes[0].get_title()
    (image,) = by_gid(fig, "regions")
    assert image.get_array().shape == (60, 60)
    # a certificate that (falsely) fails point 3: float64 is right there, so they disagree
    bad = replace(cert.points[3], certified=False, margin=-np.inf)
    fake = replace(cert, points=(*cert.points[:3], bad, *cert.points[4:]))
    fig = plot.regions(net, SPIRALS, certificate=fake, resolution=20)
    (marks,) = by_gid(fig, "disagree")
    np.testing.assert_array_equal(marks.get_offsets(), SPIRALS.floats()[[3]])
    assert "float64 != certificate (1)" in legend_texts(fig)


def test_merge_graph_roundtrips_through_graphml(nets, tmp_path) -> None:
    for name, net in nets.items():
        for by in ("runs", "values"):
            G = plot.merge_graph(net, SPIRALS, by=by)
            path = tmp_path / f"{name}-{by}.graphml"
            plot.write_graphml(G, path)
            H = nx.read_graphml(path)
            pts = [n for n, d in H.nodes(data=True) if d["kind"] == "point"]
            assert len(pts) == SPIRALS.m
            assert sorted(H.nodes[n]["point"] for n in pts) == list(range(SPIRALS.m))
            assert set(H.nodes) == set(G.nodes) and set(H.edges) == set(G.edges)
            assert all(H.out_degree(n) <= 1 for n in H.nodes)  # a forest
            for n, d in H.nodes(data=True):  # every group has one label and the size of its leaves
                if d["kind"] != "point":
                    leaves = [a for a in nx.ancestors(H, n) if H.nodes[a]["kind"] == "point"]
                    assert len(leaves) == d["size"]
                    assert {H.nodes[a]["label"] for a in leaves} == {d["label"]}


def test_merge_trees_of_the_two_methods(nets) -> None:
    # runs: the final two label runs are the two roots, and every point is below one
    G = plot.merge_graph(nets["runs"], SPIRALS, by="runs")
    roots = [n for n in G.nodes if G.out_degree(n) == 0 and G.nodes[n]["kind"] != "point"]
    assert sorted(G.nodes[r]["size"] for r in roots) == sorted(
        [SPIRALS.y.count("a"), SPIRALS.y.count("b")]
    )
    # pma: one merge per layer (seed 000: each fold merges two groups)
    net = nets["pma"]
    G = plot.merge_graph(net, SPIRALS, by="values")
    layers = sorted(d["layer"] for _, d in G.nodes(data=True) if d["kind"] == "merge")
    assert layers == list(range(1, net.depth + 1))
    fig = plot.merge_tree(net, SPIRALS, graph=G)
    assert len(by_gid(fig, "edges")[0].get_segments()) == G.number_of_edges()
    assert "14 merges over 14 layers" in fig.axes[0].get_title()


def run(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lncapacity", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )


def test_cli_plot(nets, tmp_path) -> None:
    net_path = tmp_path / "net.json"
    fileformat.save(nets["runs"], net_path)
    data = ROOT / "examples" / "spirals.csv"
    out = tmp_path / "figs"
    p = run("plot", net_path, data, "--out", out, "--json", "--quiet", "--format", "png")
    assert p.returncode == 0, p.stderr
    files = json.loads(p.stdout)["files"]
    names = sorted(Path(f).name for f in files)
    pictures = ("ladder", "ladder_rank", "fold_maps", "circles", "regions", "merge_tree")
    assert names == sorted([f"{n}.png" for n in pictures] + ["merge_tree.graphml"])
    assert sorted(p.name for p in out.iterdir()) == names  # nothing else (no temporary files)
    assert all(Path(f).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for f in files if f.endswith("png"))
    for args, message in [
        (("--out", net_path), "exists and is not a folder"),
        (("--out", tmp_path / "no" / "figs"), "no such folder"),
        (("--format", "gif"), "--format"),
    ]:
        bad = run("plot", net_path, data, *args)
        assert bad.returncode == 2, bad.stderr
        assert bad.stderr.startswith("lncapacity: error:") and message in bad.stderr
        assert len(bad.stderr.splitlines()) == 1
    # points the net cannot read: an error, and no folder left behind
    bad = run("plot", net_path, ROOT / "examples" / "xor.csv", "--out", tmp_path / "new")
    assert bad.returncode == 2 and "not classes" in bad.stderr
    assert not (tmp_path / "new").exists()


@pytest.mark.slow
def test_plot_1000_points_depth_500_under_30_seconds(tmp_path) -> None:
    import time

    rng = np.random.default_rng(1)
    X = np.unique(rng.integers(-400, 400, size=(1100, 2)) / 16, axis=0)[:1000]
    y = rng.integers(0, 2, size=len(X))
    net = lncapacity.build(X, y, method="runs")
    assert net.depth > 400
    fileformat.save(net, tmp_path / "net.json")
    lines = ["x,y,label"] + [f"{a},{b},{c}" for (a, b), c in zip(X, y, strict=True)]
    (tmp_path / "pts.csv").write_text("\n".join(lines) + "\n")
    start = time.perf_counter()
    p = run("plot", tmp_path / "net.json", tmp_path / "pts.csv", "--out", tmp_path / "f", "--quiet")
    assert p.returncode == 0, p.stderr
    assert time.perf_counter() - start < 30


# --- issue 31: pictures that say what the text says --------------------------------------


def alternating_pma() -> tuple[LNNet[fmpq], list[list[int]], list[int]]:
    X, y = [[k] for k in range(6)], [k % 2 for k in range(6)]
    return lncapacity.build(X, y, method="pma"), X, y


def test_rank_ladder_puts_the_value_the_next_layer_folds_at_the_bottom() -> None:
    net, X, y = alternating_pma()
    fig = plot.ladder(net, X, y, mode="rank")
    (lines,) = by_gid(fig, "ladder-lines")
    Y = np.array([seg[:, 1] for seg in lines.get_segments()])  # (points, columns)
    trace = lncapacity.explain.float_trace(net, X)
    history = lncapacity.explain.merge_history(net, trace, np.array(y))
    for layer, groups in enumerate(history, 1):
        bottom = int(np.argmin(Y[:, layer - 1]))  # the lowest point before the layer...
        (formed,) = groups
        assert bottom in formed  # ...is merged by it (the paper's fold of the smallest value)
        assert np.ptp(Y[formed, layer]) == 0  # and the merged points share one place after
    # merged values: one wider segment per group and column, width growing with the count
    (merged,) = by_gid(fig, "merged-lines")
    widths = merged.get_linewidths()
    assert len(widths) == 1 + 2 + 2  # from layer 1: {0,2}; 2: {0,2},{3,5}; 3: {0,2},{1,3,5}
    assert min(widths) > 1 and max(widths) > min(widths)
    assert "merged values (width: points)" in legend_texts(fig)
    ids = [t.get_text() for t in fig.axes[0].texts if t.get_gid() == "point-id"]
    assert ids[:6] == [str(k) for k in range(6)] and sorted(ids[6:]) == ["0,2,4", "1,3,5"]


def test_layer_ticks_are_integers_even_at_depth_zero() -> None:
    X, y = [[0], [1]], [0, 1]
    net = lncapacity.build(X, y)
    assert net.depth == 0
    for fig in (plot.ladder(net, X, y), plot.merge_tree(net, X, y)):
        ax = fig.axes[0]
        ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
        assert ticks and all(float(t).is_integer() for t in ticks)
    points = lncapacity.explain.as_points(net, X, y)
    skipped = plot.skipped_figures(net, points, lncapacity.explain.float_trace(net, points))
    assert set(skipped) == {"fold_maps", "circles", "regions"}


def test_circles_draw_the_readout_boundaries_where_two_classes_tie_on_top() -> None:
    from lncapacity.explain import U_HAT, V_HAT
    from lncapacity.floats import affine_arrays

    X, y = [[0], [1], [3], [4]], ["A", "B", "C", "A"]
    runs = lncapacity.build(X, y, method="runs")  # envelope readout: parallel chords
    # every class one arc (labels k % 3 now stop earlier, at the LP readout: tested below)
    X9, y9 = [[k] for k in range(8)], [0, 1, 2, 1, 0, 2, 0, 1]
    circ = lncapacity.build(X9, y9)  # the circle method: a polygon of class cells
    assert circ.meta["method"] == "circle" and lncapacity.explain.reads(circ)[-1] is None
    assert circ.readout.meta["kind"] == "arcs"
    for net, Xs, ys, label, chords in (
        (runs, X, y, "readout boundaries: parallel chords", 2),
        (circ, X9, y9, "readout boundaries: a polygon's sides", 3),
    ):
        fig = plot.circles(net, Xs, ys)
        lines = by_gid(fig, "readout-boundary")
        assert len(lines) == chords
        R, rb = affine_arrays(net.readout)
        P = R @ np.stack([U_HAT, V_HAT], axis=1)
        for ln in lines:
            xy = np.stack([ln.get_xdata(), ln.get_ydata()])
            xy = xy[:, ~np.isnan(xy[0])]
            z = np.sort(P @ xy + rb[:, None], axis=0)
            np.testing.assert_allclose(z[-1], z[-2], rtol=1e-9, atol=1e-9)  # a tie on top
        texts = legend_texts(fig)
        assert label in texts
        assert ("direction the next map reads" in texts) == (net is runs)  # circle: the plane
    X3, y3 = [[k] for k in range(9)], [k % 3 for k in range(9)]
    lp = lncapacity.build(X3, y3)
    assert lp.readout.meta["kind"] == "arcs-lp"  # a class on two arcs: not a polygon
    assert "readout boundaries: the class cells' sides" in legend_texts(plot.circles(lp, X3, y3))


def test_merge_tree_collapses_runs_of_points_and_counts_in_words() -> None:
    X, y = [[k] for k in range(15)], [0] * 5 + [1] * 5 + [0] * 5
    net = lncapacity.build(X, y)
    assert net.depth == 1
    fig = plot.merge_tree(net, X, y)
    assert "1 merge over 1 layer, 2 final groups" in fig.axes[0].get_title()
    labels = sorted(t.get_text() for t in fig.axes[0].texts)
    assert labels == ["n = 5", "n = 5", "n = 5"]  # three runs, no comb of fifteen leaves
    G = plot.merge_graph(net, X, y)
    assert sum(d["kind"] == "point" for _, d in G.nodes(data=True)) == 15  # GraphML keeps all


def test_cli_plot_json_says_which_figures_were_skipped_and_why(tmp_path) -> None:
    net_path, data = tmp_path / "net.json", tmp_path / "pts.csv"
    fileformat.save(lncapacity.build([[0], [1]], [0, 1]), net_path)
    data.write_text("x,label\n0,0\n1,1\n")
    p = run("plot", net_path, data, "--out", tmp_path / "f", "--json", "--quiet", "--format", "png")
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout)
    assert sorted(report["skipped"]) == ["circles", "fold_maps", "regions"]
    assert "depth 0" in report["skipped"]["fold_maps"]
    drawn = {Path(f).stem for f in report["files"]}
    assert drawn == {"ladder", "ladder_rank", "merge_tree"}
    assert not drawn & set(report["skipped"])


def test_regions_take_a_grid_per_axis_and_a_window(nets) -> None:
    net = nets["runs"]
    cert = certify(net, SPIRALS)
    fig = plot.regions(net, SPIRALS, certificate=cert, resolution=(30, 12), window=(-1, 1, 0, 2))
    (image,) = by_gid(fig, "regions")
    assert image.get_array().shape == (12, 30)
    assert tuple(image.get_extent()) == (-1, 1, 0, 2)
    assert fig.axes[0].get_xlim() == (-1, 1) and "30x12 grid" in fig.axes[0].get_title()
    with pytest.raises(lncapacity.errors.InputError, match="window"):
        plot.regions(net, SPIRALS, certificate=cert, window=(1, -1, 0, 2))


def test_fold_map_legends_name_only_what_is_drawn() -> None:
    net, X, y = alternating_pma()  # the paper's folds read v: the fold point is the centre
    fig = plot.fold_maps(net, X, y)
    assert len(by_gid(fig, "centre")) == net.depth and by_gid(fig, "fold-point") == []
    texts = legend_texts(fig)
    assert "centre" in texts and "fold point" not in texts
