"""The floors of the package (issue 29): imports only point down, and no module imports itself
through others.

Both read the source tree these tests belong to (the ``lncapacity`` beside ``tests/``), never
another install, and count every import: lazy ones inside functions too.  The contracts are
``[tool.importlinter]`` in pyproject.toml, run by import-linter as ``lint-imports`` runs them;
the cycle check builds the same graph with grimp and names the cycle it finds.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import grimp
import networkx as nx

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "lncapacity"

LINT = """
import importlib.util, pathlib
origin = pathlib.Path(importlib.util.find_spec("lncapacity").origin).resolve()
assert origin.parent == pathlib.Path.cwd().resolve() / "lncapacity", f"linting {origin}"
from importlinter.cli import lint_imports_command
lint_imports_command()
"""


def _source_tree_env() -> dict[str, str]:
    """The environment with the tree under test first on the path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def test_the_import_contracts_hold() -> None:
    """pyproject.toml's contracts: the floors, the plain model, the package root on top,
    no cycle between sibling modules."""
    p = subprocess.run(
        [sys.executable, "-c", LINT, "--no-cache", "--no-logo", "pyproject.toml"],
        cwd=ROOT,
        env=_source_tree_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, f"lint-imports failed:\n{p.stdout}{p.stderr}"
    assert ", 0 broken." in p.stdout, p.stdout


def _import_graph() -> grimp.ImportGraph:
    spec = importlib.util.find_spec(PACKAGE)
    assert spec is not None and spec.origin is not None
    here = Path(spec.origin).resolve().parent
    assert here == ROOT / PACKAGE, f"the graph would be of {here}, not of {ROOT / PACKAGE}"
    return grimp.build_graph(PACKAGE, cache_dir=None)


def _cycle_text(graph: grimp.ImportGraph, cycle: list[tuple[str, str]]) -> str:
    """``a -> b -> ... -> a``, then each import with its line."""
    names = [a for a, _ in cycle] + [cycle[0][0]]
    lines = [" -> ".join(names)]
    for a, b in cycle:
        for d in graph.get_import_details(importer=a, imported=b):
            lines.append(f"  {a}:{d['line_number']}: {d['line_contents']}")
    return "\n".join(lines)


def test_no_module_imports_itself_through_others() -> None:
    """Every module of the package, the package root and each ``__init__`` included: the graph
    of who imports whom has no cycle (one per tangle is named, with its import lines)."""
    graph = _import_graph()
    g = nx.DiGraph()
    g.add_nodes_from(graph.modules)
    for m in graph.modules:
        g.add_edges_from((m, imported) for imported in graph.find_modules_directly_imported_by(m))
    tangles = [sorted(c) for c in nx.strongly_connected_components(g) if len(c) > 1]
    tangles += [[m] for m in g.nodes if g.has_edge(m, m)]
    found = [_cycle_text(graph, nx.find_cycle(g.subgraph(c))) for c in sorted(tangles)]
    assert not found, "import cycles:\n" + "\n".join(found)
