"""The built manual shows its maths rendered: no TeX left as text on any page.

``docs/check_built.py`` reads the HTML of a build; ``.ci/run`` runs it right after the
build.  Here it runs on a build already in ``docs/_build/html`` (the suite never builds the
manual: that takes minutes), and its rule is tried on pages garbled the way MyST garbles a
``$$`` block inside a paragraph.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BUILT = ROOT / "docs" / "_build" / "html"

_spec = importlib.util.spec_from_file_location("check_built", ROOT / "docs" / "check_built.py")
assert _spec and _spec.loader
check_built = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_built)

RENDERED = """<p>For a vector
<span class="math notranslate nohighlight">\\(y \\in \\mathbb{R}^n\\)</span>,</p>
<div class="math notranslate nohighlight">\\[\\mathrm{LN}(y) = \\frac{y}{\\sigma}\\]</div>
<pre>$ lncapacity certify examples/xor.csv</pre>
<p><code class="docutils literal notranslate"><span class="pre">\\varepsilon</span></code>;
<span class="pre">"\\nvar</span></p>"""

# what MyST made of a $$ block inside a paragraph (notebook 01 before its repair)
GARBLED = """<p>affine map), $ \\varepsilon = 0$ this is two steps</p>"""
# and of one inside a paragraph with inline maths around it (notebook 05 before its repair)
STRAY_DOLLARS = """<p>for <strong>every</strong> input
$<span class="math notranslate nohighlight">\\(\\frac{H}{H} \\ge 1,\\)</span>
with equality. Below, \\)</span>d = 24<span class="math">\\(: the exact
ratio per \\)</span>g$</p>"""


def _page(tmp_path: Path, body: str) -> Path:
    page = tmp_path / "page.html"
    page.write_text(f"<html><body>{body}</body></html>", encoding="utf-8")
    return page


def test_rendered_maths_and_code_pass(tmp_path: Path) -> None:
    assert check_built.findings(_page(tmp_path, RENDERED)) == []


@pytest.mark.parametrize("body", [GARBLED, STRAY_DOLLARS], ids=["tex-as-text", "stray-dollars"])
def test_tex_left_as_text_is_found(tmp_path: Path, body: str) -> None:
    assert check_built.findings(_page(tmp_path, body))


def test_the_check_fails_on_a_garbled_build(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.html").write_text(RENDERED, encoding="utf-8")
    assert check_built.main([str(tmp_path)]) == 0
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "01.html").write_text(GARBLED, encoding="utf-8")
    assert check_built.main([str(tmp_path)]) == 1
    assert list(check_built.check(tmp_path)) == ["notebooks/01.html"]


@pytest.mark.skipif(
    not (BUILT / "docs" / "index.html").is_file(),
    reason="no built manual in docs/_build/html (build it with the README's command; "
    ".ci/run checks it after the build)",
)
def test_the_built_manual_has_no_tex_left_as_text() -> None:
    assert check_built.check(BUILT) == {}
