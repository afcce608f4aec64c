"""The explorer (``lncapacity explore``, issue 31): its page, its command, and the page in a
real browser.

The browser tests drive headless Chromium through Playwright's Python package against the
system's Chromium (Debian's ``chromium`` package: ``apt-get install -y chromium``; ``.ci/run``
installs it when it runs as root with apt; any other binary through ``LNCAPACITY_CHROMIUM``),
never a browser Playwright downloads.  They skip, saying why, only when Playwright or a
Chromium binary cannot be found.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("plotly", reason="the explorer needs Plotly: pip install 'lncapacity[explore]'")

from lncapacity import explore
from lncapacity.certify import certify
from lncapacity.cli import main
from lncapacity.explain import float_trace


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
    for name in ("layers", "playground", "regions"):
        assert f'id="explore-{name}"' in text


def test_layer_frames_are_the_trace(alternating: tuple[Any, Any]) -> None:
    """Each layer's frame shows the float64 trace: the fold map's points are (value in, value
    out) of the layer, and the merged markers account for every point exactly once."""
    net, points = alternating
    figs, notes = explore.figures(net, points)
    frames = figs["layers"]["frames"]
    assert [f["name"] for f in frames] == [str(n) for n in range(1, net.depth + 1)]
    assert notes == []  # 14 layers, nothing subsampled, 2-D points
    tr = float_trace(net, points)
    k = len(net.classes)
    for f in frames:
        layer = int(f["name"])
        fold_points = f["data"][2 * k + 4 : 3 * k + 4]  # the fold map's class scatters
        seen: list[int] = []
        for cls, t in enumerate(fold_points):
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
    last = frames[-1]["data"][2 * k + 4 : 3 * k + 4]
    assert [len(t["x"]) for t in last] == [1, 1]


def test_regions_hover_gives_the_certified_margin(alternating: tuple[Any, Any]) -> None:
    net, points = alternating
    cert = certify(net, points)
    figs, _ = explore.figures(net, points, certificate=cert)
    texts = [t for tr in figs["regions"]["data"][1:] for t in tr["text"]]
    assert len(texts) == points.m
    for text in texts:
        i = int(re.match(r"id (\d+)", text).group(1))  # type: ignore[union-attr]
        assert f"margin {cert.points[i].margin:.4g} (certified)" in text


def test_deep_nets_are_subsampled_and_the_page_says_so(alternating: tuple[Any, Any]) -> None:
    net, points = alternating
    figs, notes = explore.figures(net, points, max_layers=5)
    names = [int(f["name"]) for f in figs["layers"]["frames"]]
    assert len(names) == 5 and names[0] == 1 and names[-1] == net.depth
    assert names == sorted(set(names))
    assert any(f"has {net.depth} layers" in n and "shows 5 of them" in n for n in notes)
    assert "shows 5 of them" in explore.page(net, points, max_layers=5)


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
    from playwright.sync_api import sync_playwright

    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            page.set_default_timeout(60_000)
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(page_file.as_uri())
            page.wait_for_function(
                "() => ['layers', 'playground', 'regions'].every("
                "n => (document.getElementById('explore-' + n) || {})._fullLayout)"
            )
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
        finally:
            browser.close()
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
    assert ["no circle:<br>some layer is not of width 3"] in texts
    frame = figs["layers"]["frames"][0]["data"]
    assert ["no scalar map<br>(a map of rank above one)"] in [t.get("text") for t in frame]
