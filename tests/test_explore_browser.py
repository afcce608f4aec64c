"""The explorer (``lncapacity explore``): its page, its command, and the page in a real
browser (the sliders, the Play button, no network request even with hostile labels).

The browser tests drive headless Chromium through Playwright's Python package against the
system's Chromium (Debian's ``chromium`` package: ``apt-get install -y chromium``; ``.ci/run``
installs it when it runs as root with apt; any other binary through ``LNCAPACITY_CHROMIUM``),
never a browser Playwright downloads.  They skip, saying why, only when Playwright or a
Chromium binary cannot be found.
"""

from __future__ import annotations

import contextlib
import html
import json
import os
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("plotly", reason="the explorer needs Plotly: pip install 'lncapacity[explore]'")

from plotly_arrays import array

from lncapacity import explore
from lncapacity.certify import certify
from lncapacity.cli import main
from lncapacity.explain import class_intervals, explain, float_scores, float_trace, reads


@pytest.fixture(scope="module")
def alternating() -> tuple[Any, Any]:
    return explore.example("alternating")


@pytest.fixture(scope="module")
def page_file(tmp_path_factory: pytest.TempPathFactory, alternating: tuple[Any, Any]) -> Path:
    net, points = alternating
    path = tmp_path_factory.mktemp("explore") / "page.html"
    path.write_text(explore.page(net, points), encoding="utf-8")
    return path


# ---------------------------------------------------------------------------
# the page, without a browser


def test_page_is_self_contained(page_file: Path) -> None:
    text = page_file.read_text(encoding="utf-8")
    srcs = re.findall(r"<script[^>]*\bsrc\s*=\s*['\"]?([^'\" >]+)", text, flags=re.I)
    assert srcs == []  # Plotly's JavaScript is inlined: nothing is loaded from anywhere
    assert not re.search(r"<link[^>]*href\s*=\s*['\"]?https?:", text, flags=re.I)
    assert "Plotly.newPlot" in text and len(text) > 1_000_000  # plotly.js itself is inside
    for name in ("layers", "playground"):
        assert f'id="explore-{name}"' in text
    assert "Content-Security-Policy" in text and "default-src 'none'" in text
    # a page of one's own data is two commands away, and the net exports
    assert "lncapacity certify my.csv --out net.json" in text
    assert "lncapacity explore net.json my.csv --out page.html" in text
    assert "lncapacity export net.json --torch model.pt --onnx model.onnx" in text


def _panel(frame: dict[str, Any], k: int, name: str) -> list[dict[str, Any]]:
    from lncapacity.explore.layers import frame_panels

    return frame["data"][frame_panels(k, heat=True)[name]]


def test_layer_frames_are_the_trace(alternating: tuple[Any, Any]) -> None:
    """Each layer's frame shows the float64 trace: the fold map's points are (value in, value
    out) of the layer, and the merged markers account for every point exactly once."""
    net, points = alternating
    figs, notes = explore.figures(net, points)
    frames = figs["layers"]["frames"]
    assert [f["name"] for f in frames] == [str(n) for n in range(net.depth + 1)]  # 0: input
    assert notes == []  # 14 layers, nothing subsampled, 2-D points
    tr = float_trace(net, points)
    k = len(net.classes)
    for f in frames[1:]:
        layer = int(f["name"])
        seen: list[int] = []
        for cls, t in enumerate(_panel(f, k, "fold")[1 : k + 1]):  # the classes' markers
            for x, y, text in zip(t["x"], t["y"], t["text"], strict=True):
                ids = [int(i) for i in re.findall(r"\d+", text.split("<br>")[0])]
                seen += ids
                assert f"label {net.classes[cls]}" in text
                # a merged group is drawn at its first point's values (pma merges by the
                # paper's rule, leaving the values a small gap: the hover gives their range)
                assert tr.values[layer - 1][ids[0]] == x and tr.values[layer][ids[0]] == y
                if len(ids) > 1:
                    assert f"{len(ids)} merged" in text
        assert sorted(seen) == list(range(points.m))
    # the paper's algorithm merges: the last layer leaves two values, one per label
    last = _panel(frames[-1], k, "fold")[1 : k + 1]
    assert [len(t["x"]) for t in last] == [1, 1]


def test_each_step_says_what_explain_says(alternating: tuple[Any, Any]) -> None:
    """Every step's title is a sentence from explain's account of the layer: its kind, the
    runs that join, the values that merge, the smallest label gap before and after; the last
    step adds the readout."""
    net, points = alternating
    figs, _ = explore.figures(net, points)
    titles = {
        f["name"]: html.unescape(f["layout"]["title"]["text"].replace("<br>", " "))
        for f in figs["layers"]["frames"]
    }
    account = explain(net, points)
    assert f"form {account['input']['runs']} runs" in titles["0"]
    for e in account["layers"]:
        title = titles[str(e["layer"])]
        assert f"Layer {e['layer']} of {net.depth}: the paper's fold" in title
        for j in e["joined_runs"][:1]:
            runs = " and ".join(str(r) for r in j["runs_before"])
            assert f"runs {runs} of label {j['label']} join" in title
        if e["merged_values"]:
            assert f"groups of {len(e['merged_values'][0])}" in title
        b, a = e["before"]["label_gap"], e["after"]["label_gap"]
        assert f"Label runs {e['before']['runs']} → {e['after']['runs']}" in title
        assert f"{b:.3g} to {a:.3g} of the amplitude" in title
    assert "Readout: the last value decides" in titles[str(net.depth)]


def test_the_readout_is_drawn_in_the_ladder_and_the_last_fold_map(
    alternating: tuple[Any, Any],
) -> None:
    """The readout's threshold (exact, from class_intervals) is a dashed line at the ladder's
    last column (scaled as that column is) and across the last fold map (in values)."""
    net, points = alternating
    figs, _ = explore.figures(net, points)
    (lo, tau, below), (_, _, above) = class_intervals(net)  # type: ignore[misc]
    assert lo is None and tau is not None
    tau_f = float(tau.p) / float(tau.q)
    last = float_trace(net, points).values[net.depth]
    mid, half = (last.max() + last.min()) / 2, (last.max() - last.min()) / 2
    (cut,) = [t for t in figs["layers"]["data"] if t.get("name") == "readout threshold"]
    assert list(cut["y"][:2]) == [pytest.approx((tau_f - mid) / half)] * 2
    assert min(cut["x"][:2]) < net.depth < max(cut["x"][:2])
    frames = figs["layers"]["frames"]
    k = len(net.classes)
    thresholds = _panel(frames[-1], k, "fold")[k + 3]
    assert thresholds["y"][:2] == [tau_f, tau_f]
    assert f"class {net.classes[below]} below, {net.classes[above]} above" in thresholds["text"][0]
    assert all(_panel(f, k, "fold")[k + 3]["type"] == "scatter" for f in frames)
    assert all(not _panel(f, k, "fold")[k + 3].get("y") for f in frames[:-1])


def test_each_column_and_each_fold_map_is_scaled_to_its_own_values(
    alternating: tuple[Any, Any],
) -> None:
    """Late columns are not squashed: every ladder column spans -1 to 1, and each fold map's
    ranges are its own points' (with a margin), whatever the layer's amplitude."""
    net, points = alternating
    figs, _ = explore.figures(net, points)
    tr = float_trace(net, points)
    lines = [t for t in figs["layers"]["data"] if t.get("showlegend") and t["mode"] == "lines"]
    lines = [t for t in lines if t["name"].startswith("class")]  # a line per point
    column: dict[float, list[float]] = {}
    for t in lines:
        for x, y in zip(t["x"], t["y"], strict=True):
            if x is not None:
                column.setdefault(x, []).append(y)
    assert sorted(column) == list(range(net.depth + 1))
    for ys in column.values():
        assert min(ys) == pytest.approx(-1, abs=1e-12) and max(ys) == pytest.approx(1, abs=1e-12)
    for f in figs["layers"]["frames"]:
        step = int(f["name"])
        if step == 0:
            continue
        x0, x1 = f["layout"]["xaxis3"]["range"]
        y0, y1 = f["layout"]["yaxis3"]["range"]
        vin, vout = tr.values[step - 1], tr.values[step]
        assert x0 < vin.min() and vin.max() < x1
        assert (x1 - x0) == pytest.approx(1.16 * (vin.max() - vin.min()))
        assert y0 < vout.min() and vout.max() < y1


def test_the_plane_follows_the_steps(alternating: tuple[Any, Any]) -> None:
    """For 2-D data, each step's frame shades the plane by the value after the step (step 0:
    the projection, which grows along one direction) and the last by the class the readout
    gives: the decision regions of float64 on the grid."""
    net, points = alternating
    figs, _ = explore.figures(net, points)
    frames = figs["layers"]["frames"]
    heat = {f["name"]: _panel(f, len(net.classes), "plane")[0] for f in frames}
    (base,) = [t for t in figs["layers"]["data"] if t["type"] == "heatmap"]
    gx, gy = (array(base[a]) for a in ("x", "y"))
    z0 = array(heat["0"]["z"]).astype(float)
    row = np.array([float(c) for c in reads(net)[0].row])  # type: ignore[union-attr]
    G = np.stack(np.meshgrid(gx, gy), axis=-1)
    p = G @ row  # the projection: the value layer 1 reads, in 101 shades of its range
    assert np.all(np.abs(z0 - 100 * (p - p.min()) / np.ptp(p)) <= 0.5 + 1e-9)
    zl = array(heat[str(net.depth)]["z"])
    win = np.argmax(float_scores(net, G.reshape(-1, 2)), axis=1).reshape(zl.shape)
    assert np.array_equal(zl, win)
    assert len({json.dumps(array(h["z"]).tolist()) for h in heat.values()}) > 5


def test_plane_hover_gives_the_certified_margin(alternating: tuple[Any, Any]) -> None:
    net, points = alternating
    cert = certify(net, points)
    figs, _ = explore.figures(net, points, certificate=cert)
    texts = [
        t for tr in figs["layers"]["data"] if "margin" in str(tr.get("text")) for t in tr["text"]
    ]
    assert len(texts) == points.m
    for text in texts:
        i = int(re.match(r"id (\d+)", text).group(1))  # type: ignore[union-attr]
        assert f"margin {cert.points[i].margin:.4g} (certified)" in text


def test_deep_nets_are_subsampled_and_the_page_says_so(alternating: tuple[Any, Any]) -> None:
    net, points = alternating
    figs, notes = explore.figures(net, points, max_layers=5)
    names = [int(f["name"]) for f in figs["layers"]["frames"]]
    assert len(names) == 6 and names[:2] == [0, 1] and names[-1] == net.depth
    assert names == sorted(set(names))
    assert any(f"has {net.depth} layers" in n and "shows 5 of them" in n for n in notes)
    assert "shows 5 of them" in explore.page(net, points, max_layers=5)


HOSTILE = (
    '<a href="http://evil.example/a">a</a>',
    "<img src=http://evil.example/i.png>",
    '<span style="background:url(http://evil.example/c.png);fill:url(http://evil.example/f.svg#x)">'
    "c</span>",
    "<script>fetch('http://evil.example/s')</script>",
)
"""Class labels that, read as markup, would add a live link, load an image, fetch through CSS
(Plotly applies a span's style in a legend) or run a script."""


@pytest.fixture(scope="module")
def hostile() -> tuple[Any, Any]:
    from lncapacity import build, points_from_arrays

    m = 12
    points = points_from_arrays(
        [[k, (k * k) % 7] for k in range(m)], [HOSTILE[k % 4] for k in range(m)]
    )
    net = build(points, method="runs")
    assert net.depth >= 1
    return net, points


def _strings(obj: Any) -> list[str]:
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, dict):
        return [s for v in obj.values() for s in _strings(v)]
    if isinstance(obj, (list, tuple)):
        return [s for v in obj for s in _strings(v)]
    return []


def test_labels_enter_every_figure_as_literal_text(hostile: tuple[Any, Any]) -> None:
    """No label reaches Plotly as markup: legend names, hover texts, titles (the sentences
    name labels) carry it escaped, so Plotly shows its characters and reads no tag."""
    net, points = hostile
    figs, _ = explore.figures(net, points)
    text = "\n".join(_strings(figs["layers"]))
    for label in HOSTILE:
        assert label not in text
        assert explore.literal(label) in text
    for tag in ("<a", "<img", "<span", "<script"):
        assert tag not in text
    names = {t["name"] for t in figs["layers"]["data"] if t.get("showlegend")}
    assert {f"class {explore.literal(c)}" for c in HOSTILE} <= names


def test_fold_playground_frames_follow_the_formula() -> None:
    """The playground's fold is the gadget's map: at the centre the read v + gamma u gives
    ``6 beta / sqrt(2 beta^2)`` = ``3 sqrt 2`` for every beta (eps = 0, s = c)."""
    fig = explore.playground_figure()
    n_c, n_b, n_g = (len(v) for v in explore.PLAYGROUND_PARAMETERS)
    assert len(fig["frames"]) == n_c * n_b * n_g
    for f in fig["frames"]:
        i = int(f["name"].split("-")[0])
        c = explore.PLAYGROUND_PARAMETERS[0][i]
        s, curve = np.asarray(f["data"][6]["x"]), np.asarray(f["data"][6]["y"])
        at = np.argmin(np.abs(s - c))
        assert abs(s[at] - c) < 1e-12  # the grid holds every centre
        assert abs(curve[at] - 3 * np.sqrt(2)) < 1e-12


# ---------------------------------------------------------------------------
# the command


def test_cli_writes_the_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "xor.html"
    assert main(["explore", "--example", "xor", "--out", str(out), "--quiet", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["depth"] == 1
    assert "lncapacity explorer: xor" in out.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--example", "xor", "net.json", "data.csv"], "not both"),
        ([], "give NET.json and DATA"),
        (["net.json"], "give NET.json and DATA"),
        (["--example", "xor", "--out", "no/such/folder/p.html"], "no such folder"),
    ],
)
def test_cli_bad_input_exit_2(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    message: str,
) -> None:
    monkeypatch.chdir(tmp_path)  # restored after the test: later files read relative paths
    if "--out" not in argv:
        argv = [*argv, "--out", "p.html"]
    assert main(["explore", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_cli_without_plotly_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "plotly", None)  # import plotly raises ImportError
    out = tmp_path / "p.html"
    assert main(["explore", "--example", "xor", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("pip install 'lncapacity[explore]'") and "\n" not in err
    assert not out.exists()


# ---------------------------------------------------------------------------
# in a real browser


@pytest.fixture(scope="module")
def chromium() -> str:
    """The system's Chromium, or skip saying why (before the page is made)."""
    pytest.importorskip(
        "playwright.sync_api", reason="the browser tests need Playwright: pip install playwright"
    )
    env = os.environ.get("LNCAPACITY_CHROMIUM")
    for candidate in [env] if env else ["chromium", "chromium-browser", "google-chrome"]:
        found = shutil.which(candidate) if candidate else None
        if found:
            return found
    pytest.skip(
        "no Chromium binary (install Debian's: apt-get install -y chromium, or set "
        "LNCAPACITY_CHROMIUM to a Chromium or Chrome binary)"
    )


def _state(page: Any, div: str) -> str:
    return page.evaluate(
        f"JSON.stringify(document.getElementById('{div}').data.map(t => [t.x, t.y]))"
    )


def test_page_in_headless_chromium(chromium: str, page_file: Path, tmp_path: Path) -> None:
    """Load the page from a file:// URL, move every slider with the mouse, check that the
    figure's data change and that the console has no error, save a screenshot."""
    errors: list[str] = []
    with _opened(chromium, page_file, errors) as page:
        moved = []
        for div in ("explore-layers", "explore-playground"):
            sliders = page.locator(f"#{div} .slider-group")
            assert sliders.count() == (1 if div == "explore-layers" else 3)
            for n in range(sliders.count()):
                before = _state(page, div)
                rail = sliders.nth(n).locator(".slider-rail-touch-rect")
                rail.scroll_into_view_if_needed()
                box = rail.bounding_box()
                assert box is not None
                page.mouse.click(box["x"] + 0.98 * box["width"], box["y"] + box["height"] / 2)
                page.wait_for_function(
                    f"() => {{ const s = document.getElementById('{div}').layout.sliders[{n}];"
                    " return s.active === s.steps.length - 1; }"
                )
                page.wait_for_timeout(200)  # the frame is drawn after the slider moves
                assert _state(page, div) != before, (div, n)
                moved.append((div, n))
        # hover on a point of the ladder gives its id, label and value
        page.evaluate(
            "() => { const gd = document.getElementById('explore-layers');"
            " const i = gd.data.findIndex(t => t.mode === 'markers' && t.x.length);"
            " Plotly.Fx.hover(gd, [{curveNumber: i, pointNumber: 0}], 'xy'); }"
        )
        hover = page.locator("#explore-layers .hovertext").first.text_content()
        assert hover is not None and "label" in hover and re.search(r"ids? \d", hover)
        shot = tmp_path / "explore.png"
        page.screenshot(path=str(shot), full_page=True)
    assert errors == []
    assert len(moved) == 4
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000


def test_a_net_without_circle_or_scalar_maps_says_so() -> None:
    """An LN-G net (layers wider than 3, maps of rank above one) has no circle and no fold
    map: the page says so instead of drawing empty panels."""
    from lncapacity import build, points_from_arrays

    points = points_from_arrays(
        [[0, 0], [1, 2], [2, 1], [3, 3], [4, 0], [5, 2]], [0, 1, 2, 0, 1, 2]
    )
    net = build(points, arch="ln-g")
    assert net.depth == 1 and net.widths[0] != 3
    figs, notes = explore.figures(net, points)
    assert "Some layer is not of width 3: there is no circle to show." in notes
    texts = [t["text"] for t in figs["layers"]["data"] if t.get("mode") == "text" and t["text"]]
    assert ["no circle:<br>a layer not of width 3"] in texts
    frame = figs["layers"]["frames"][1]["data"]  # layer 1
    assert ["no scalar map<br>(a map of rank above one)"] in [t.get("text") for t in frame]


FLAGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
)


@contextlib.contextmanager
def _opened(
    chromium: str, path: Path, errors: list[str], requests: list[str] | None = None
) -> Iterator[Any]:
    """The page at ``path`` loaded in headless Chromium, its figures drawn; console errors
    and uncaught exceptions go to ``errors``, every request's URL to ``requests``."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=list(FLAGS))
        try:
            context = browser.new_context(viewport={"width": 1300, "height": 1100})
            if requests is not None:
                context.on("request", lambda r: requests.append(r.url))
            page = context.new_page()
            page.set_default_timeout(60_000)
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(path.as_uri())
            _loaded(page)
            yield page
        finally:
            browser.close()


def _loaded(page: Any, names: tuple[str, ...] = ("layers", "playground")) -> None:
    page.wait_for_function(
        f"() => {json.dumps(list(names))}.every("
        "n => (document.getElementById('explore-' + n) || {})._fullLayout)"
    )


def test_play_moves_the_picture(chromium: str, page_file: Path, tmp_path: Path) -> None:
    """Pressing Play steps through the layers: the slider advances by itself, the figure's
    data and title change at each step; Pause stops it; no error in the console."""
    errors: list[str] = []
    with _opened(chromium, page_file, errors) as page:
        div = "explore-layers"
        active = f"document.getElementById('{div}').layout.sliders[0].active"
        title = f"document.getElementById('{div}').layout.title.text"
        before, title0 = _state(page, div), page.evaluate(title)
        assert page.evaluate(active) == 0 and title0.startswith("<b>Step 0: the input</b>")
        page.locator(f"#{div}").scroll_into_view_if_needed()
        page.locator(f"#{div} .updatemenu-button").filter(has_text="Play").click()
        page.wait_for_function(f"() => {active} >= 2")  # two steps on, by itself
        shot = tmp_path / "playing.png"
        page.locator(f"#{div}").screenshot(path=str(shot))
        page.locator(f"#{div} .updatemenu-button").filter(has_text="Pause").click()
        page.wait_for_timeout(explore.FRAME_MS + 500)
        stopped = page.evaluate(active)
        page.wait_for_timeout(explore.FRAME_MS + 500)
        assert page.evaluate(active) == stopped >= 2  # paused: it stays
        assert _state(page, div) != before
        assert page.evaluate(title).startswith(f"<b>Layer {stopped} of ")
    assert errors == []
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_hostile_labels_make_no_network_request(
    chromium: str, hostile: tuple[Any, Any], tmp_path: Path
) -> None:
    """A page whose labels are links, images, CSS ``url(...)`` and scripts fetches nothing
    from anywhere (every request is recorded: only the page itself is loaded), shows each
    label as its characters (legend) and has no link in its figures, after drawing every
    step and hovering every trace."""
    net, points = hostile
    path = tmp_path / "hostile.html"
    path.write_text(explore.page(net, points), encoding="utf-8")
    errors: list[str] = []
    requests: list[str] = []
    with _opened(chromium, path, errors, requests) as page:
        legend = page.evaluate(
            "Array.from(document.querySelectorAll('#explore-layers .legendtext'))"
            ".map(e => e.textContent)"
        )
        frames = page.evaluate(
            "document.getElementById('explore-layers')._transitionData._frames.map(f => f.name)"
        )
        for name in frames:  # every frame drawn, every panel hovered
            page.evaluate(
                f"Plotly.animate('explore-layers', ['{name}'], {{mode: 'immediate', "
                "frame: {duration: 0, redraw: true}, transition: {duration: 0}})"
            )
            page.evaluate(
                "() => { const gd = document.getElementById('explore-layers');"
                " gd.data.forEach((t, i) => { if (t.x && t.x.length && t.text)"
                " Plotly.Fx.hover(gd, [{curveNumber: i, pointNumber: 0}],"
                " (t.xaxis || 'x') + (t.yaxis || 'y')); }); }"
            )
        page.wait_for_timeout(500)
        links = page.evaluate("document.querySelectorAll('svg a, a[href^=http]').length")
    assert requests == [path.as_uri()]
    assert links == 0 and len(frames) == net.depth + 1
    assert {f"class {c}" for c in HOSTILE} <= set(legend)
    assert errors == []
