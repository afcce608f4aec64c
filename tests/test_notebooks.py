"""The teaching notebooks run from top to bottom, self-checks included.

Each ``notebooks/*.py`` (jupytext percent format, the reviewed source) is turned
into a notebook in memory and executed by nbclient with a kernel whose working
folder is the repository root (so it imports this checkout's package); a cell
that raises, including a failed self-check assertion, fails the test.  The
``.ipynb`` files are never committed (notebooks/README.md).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

jupytext = pytest.importorskip("jupytext")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("matplotlib")
pytest.importorskip("networkx")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9]*.py"))
TIMEOUT = 240
"""Seconds per cell; the six notebooks take a few to about fifteen seconds each on one core."""


def test_there_are_notebooks() -> None:
    assert [p.name[:3] for p in NOTEBOOKS] == [f"{k:02d}_" for k in range(1, 7)]
    docs = (ROOT / "docs" / "notebooks.md").read_text()
    assert all(f"../notebooks/{p.stem}\n" in docs for p in NOTEBOOKS)  # each in the manual


# Slow here: CI's build of the manual executes every notebook and fails on any error in one
# (nb_execution_raise_on_error in docs/conf.py); this runs them without building the manual.
@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path: Path) -> None:
    nb = jupytext.read(path)
    client = nbclient.NotebookClient(
        nb,
        timeout=TIMEOUT,
        kernel_name="python3",
        resources={"metadata": {"path": str(ROOT)}},
    )
    start = time.perf_counter()
    client.execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    last = nb.cells[-1]
    text = "".join(o.get("text", "") for o in last.get("outputs", []))
    assert "all self-checks passed" in text
    assert time.perf_counter() - start < 300
