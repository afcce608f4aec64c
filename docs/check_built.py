"""Check the BUILT manual for maths that did not render: raw TeX in the pages' text.

A strict Sphinx build (``-W -n``) passes when a ``$$`` block sits inside a paragraph:
MyST then leaves the dollars and the TeX as text, and the page shows ``$$\\frac{...``
with its words run together.  This script reads every HTML page of a build and reports
text, outside rendered maths (elements of class ``math``), code (``code``, ``pre``, and
Sphinx's ``span.pre``), scripts and styles, that holds TeX: a dollar sign (a maths
delimiter MyST did not take) or a control word such as ``\\varepsilon``.

    python docs/check_built.py docs/_build/html

prints one line per finding (page, and the text around it) and exits 1 if there is any,
0 if there is none, 2 if the folder holds no built manual.  ``.ci/run`` runs it after the
build; ``tests/test_built_manual.py`` runs it on a build that is already there.
"""

from __future__ import annotations

import re
import sys
from html.parser import HTMLParser
from pathlib import Path

RAW_TEX = re.compile(
    r"\$"  # a maths delimiter left as text (prose has no dollar signs; commands are code)
    r"|\\[A-Za-z]{2,}"  # a control word: \frac, \varepsilon, \mathbb, ...
)
"""TeX in a page's text: a dollar sign or a control word."""

SKIPPED_TAGS = {"script", "style", "pre", "code", "kbd", "samp", "tt", "textarea"}
"""Elements whose text is code, not prose (their TeX, if any, is meant to show)."""

SKIPPED_PAGES = ("genindex.html", "search.html", "py-modindex.html")
"""Pages that only list names."""


class _Text(HTMLParser):
    """The text of a page outside rendered maths and code, with the context around it."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[bool] = []  # per open element: does it hide its text from the check
        self.chunks: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in {"br", "img", "hr", "input", "meta", "link", "wbr", "col", "source"}:
            return  # void elements have no end tag
        classes = (dict(attrs).get("class") or "").split()
        hidden = tag in SKIPPED_TAGS or not {"math", "pre", "headerlink"}.isdisjoint(classes)
        self.stack.append(hidden or bool(self.stack and self.stack[-1]))

    def handle_endtag(self, tag: str) -> None:
        if self.stack and tag not in {"br", "img", "hr", "input", "meta", "link", "wbr"}:
            self.stack.pop()

    def handle_data(self, data: str) -> None:
        if not (self.stack and self.stack[-1]):
            self.chunks.append(data)


def findings(page: Path) -> list[str]:
    """The TeX left as text on one built page, each with the text around it."""
    parser = _Text()
    parser.feed(page.read_text(encoding="utf-8"))
    text = " ".join(" ".join(parser.chunks).split())
    return [text[max(0, m.start() - 40) : m.end() + 40].strip() for m in RAW_TEX.finditer(text)]


def check(html: Path) -> dict[str, list[str]]:
    """Every page of the built manual in ``html`` with TeX left as text, and what."""
    out: dict[str, list[str]] = {}
    for page in sorted(html.rglob("*.html")):
        relative = page.relative_to(html)
        if relative.parts[0].startswith("_") or relative.name in SKIPPED_PAGES:
            continue  # _static, _sources, _images: not pages
        if found := findings(page):
            out[relative.as_posix()] = found
    return out


def main(argv: list[str]) -> int:
    html = Path(argv[0] if argv else "docs/_build/html")
    if not (html / "docs" / "index.html").is_file():
        print(f"{html}: no built manual here (docs/index.html is missing)", file=sys.stderr)
        return 2
    bad = check(html)
    for page, found in bad.items():
        for text in found:
            print(f"{page}: TeX left as text: ...{text}...")
    n = sum(map(len, bad.values()))
    print(f"{n} raw TeX fragment(s) on {len(bad)} page(s)" if bad else "no raw TeX on any page")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
