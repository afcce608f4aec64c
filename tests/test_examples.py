"""The console examples of the README and the manual are what the commands print.

Every ``$ lncapacity ...`` line in a fenced block of README.md or docs/**/*.md is run, in
order per file, in a fresh folder holding ``examples/`` (and ``xor.lnnet.json``, which some
pages start from), and its output is compared with the lines under it, times aside
(``0.5 s``).  A block's output may stop at a line ``...`` (the rest is left out); a command
with no output under it and a ``# comment`` after it must only succeed.  The ``python``
blocks of the README and getting started run as written.

After a change of output, ``python tests/test_examples.py`` writes the new output into the
pages (it leaves shortened and omitted outputs, and outputs that differ in their times only,
as they are); read the diff before committing it.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
TIME = re.compile(r"\b\d+(\.\d+)? s\b")
"""A time in seconds: it varies from run to run."""
HAVE_TORCH = importlib.util.find_spec("torch") is not None
ENV = {k: v for k, v in os.environ.items() if k != "LNCAPACITY_DEBUG"} | {
    "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]),
    "COLUMNS": "100",
}


@dataclass
class Example:
    """One ``$ lncapacity ...`` line of a page and the output shown under it."""

    page: Path
    line: int  # 1-based, of the command
    args: list[str]
    shown: list[str]  # output lines as on the page
    omitted: bool  # no output shown, and a comment says what the command does
    shortened: bool  # the output ends with a line "..."
    end: int  # 1-based line number after the last output line


def examples(page: Path) -> list[Example]:
    """The console examples of one page, in order."""
    out: list[Example] = []
    fence: str | None = None  # the opening line of the block we are in
    current: Example | None = None
    lines = page.read_text(encoding="utf-8").splitlines()
    for n, text in enumerate(lines, 1):
        if text.startswith("```"):
            fence = text.strip() if fence is None else None
            current = None
            continue
        if fence != "```":  # outside blocks, and in tagged ones: not commands
            continue
        if text.startswith("$ lncapacity "):
            command, _, comment = text[2:].partition("  #")
            args = shlex.split(command)[1:]
            current = Example(page, n, args, [], bool(comment.strip()), False, n + 1)
            out.append(current)
        elif current is not None and not text.startswith("$ "):
            if text == "...":
                current.shortened = True
            else:
                current.shown.append(text)
            current.end = n + 1
        else:
            current = None
    for e in out:
        e.omitted = e.omitted and not e.shown
    return out


def _normal(lines: list[str]) -> list[str]:
    return [TIME.sub("N s", line.rstrip()) for line in lines]


def _folder(tmp: Path) -> Path:
    """A folder as a user has it: ``examples/`` and the XOR net of the README."""
    tmp.mkdir(parents=True, exist_ok=True)
    shutil.copytree(ROOT / "examples", tmp / "examples")
    run = [sys.executable, "-m", "lncapacity", "certify", "examples/xor.csv"]
    subprocess.run(
        [*run, "--out", "xor.lnnet.json", "--quiet", "--float", "float64"],
        cwd=tmp,
        env=ENV,
        check=True,
        capture_output=True,
        timeout=300,
    )
    return tmp


def run_page(page: Path, tmp: Path) -> list[tuple[Example, subprocess.CompletedProcess[str]]]:
    """Run a page's examples in order in a fresh folder."""
    folder = _folder(tmp)
    done = []
    for e in examples(page):
        proc = subprocess.run(
            [sys.executable, "-m", "lncapacity", *e.args],
            cwd=folder,
            env=ENV,
            capture_output=True,
            text=True,
            timeout=600,
        )
        done.append((e, proc))
    return done


PAGES_WITH_EXAMPLES = [p for p in PAGES if examples(p)]


def test_the_pages_have_examples() -> None:
    names = {p.relative_to(ROOT).as_posix() for p in PAGES_WITH_EXAMPLES}
    assert {"README.md", "docs/getting-started.md"} <= names
    every = [e for p in PAGES_WITH_EXAMPLES for e in examples(p)]
    assert sum(1 for e in every if e.shown) >= 8


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[Path, list]:
    root = tmp_path_factory.mktemp("examples")
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {
            page: pool.submit(run_page, page, root / f"page{i}")
            for i, page in enumerate(PAGES_WITH_EXAMPLES)
        }
        return {page: f.result() for page, f in futures.items()}


@pytest.mark.parametrize(
    "page", PAGES_WITH_EXAMPLES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES_WITH_EXAMPLES]
)
def test_each_example_prints_what_the_page_shows(results: dict, page: Path) -> None:
    for e, proc in results[page]:
        where = f"{page.relative_to(ROOT)}:{e.line}: $ lncapacity {shlex.join(e.args)}"
        assert proc.returncode == 0, f"{where}: exit {proc.returncode}\n{proc.stderr}"
        if e.omitted or (not HAVE_TORCH and any("torch-" in line for line in e.shown)):
            continue  # without PyTorch its float lines say "skipped"
        got = _normal(proc.stdout.splitlines())
        want = _normal(e.shown)
        if e.shortened:
            got = got[: len(want)]
        assert got == want, (
            f"{where}: the page shows\n"
            + "\n".join(want)
            + "\nthe command prints\n"
            + "\n".join(got)
        )


def update(page: Path, tmp: Path) -> bool:
    """Write what the commands print into ``page`` (full outputs only); True if it changed."""
    lines = page.read_text(encoding="utf-8").splitlines()
    for e, proc in reversed(run_page(page, tmp)):
        if proc.returncode or e.omitted or e.shortened:
            continue
        if _normal(proc.stdout.splitlines()) == _normal(e.shown):
            continue  # only the times differ
        lines[e.line : e.end - 1] = proc.stdout.rstrip("\n").splitlines()
    text = "\n".join(lines) + "\n"
    changed = text != page.read_text(encoding="utf-8")
    page.write_text(text, encoding="utf-8")
    return changed


def python_blocks(page: Path) -> list[str]:
    """The ```python blocks of a page."""
    return re.findall(r"^```python\n(.*?)^```$", page.read_text(encoding="utf-8"), re.M | re.S)


@pytest.mark.parametrize("page", ["README.md", "docs/getting-started.md"])
def test_the_python_examples_run(
    page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The front pages' Python examples run as written (in a folder of their own)."""
    blocks = python_blocks(ROOT / page)
    assert blocks, page
    monkeypatch.chdir(tmp_path)
    for code in blocks:
        exec(compile(code, f"{page} (python block)", "exec"), {})


@pytest.mark.parametrize("page", ["README.md", "docs/index.md", "docs/cli/index.md"])
def test_the_front_pages_name_every_command(page: str) -> None:
    from lncapacity.cli import build_parser

    text = (ROOT / page).read_text(encoding="utf-8")
    missing = [
        c for c in build_parser().commands if not re.search(rf"`(lncapacity )?{c}[` ]", text)
    ]
    assert not missing, f"{page} does not name {missing}"


def test_the_readme_fits_a_front_page() -> None:
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 200


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for i, page in enumerate(PAGES_WITH_EXAMPLES):
            if update(page, Path(tmp) / f"page{i}"):
                print(f"updated {page.relative_to(ROOT)}")
