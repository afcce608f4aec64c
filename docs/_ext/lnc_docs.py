"""Local Sphinx glue for the lncapacity manual.

Names as a module sees them: a docstring of ``lncapacity.fileformat`` that mentions
:class:`InputError` means the ``InputError`` that module imports, and
``lncapacity.build`` is ``lncapacity.construct.build.build`` re-exported.  Python
resolves both through the module's namespace; Sphinx looks only for an object
documented under that exact name.  A reference Sphinx cannot resolve is looked up
in the namespace of the module it was written in (or from the package, for a full
name), and resolved to where the object is defined and documented, if it is.

Links from the proofs and notebooks to files that are not pages (``check_*.py``,
benchmark scripts, package sources) are plain Markdown links, so that they work
when the files are read as they are.  MyST takes a ``.py`` target for a document
because ``.py`` is the notebooks' source suffix; this turns every such link whose
target is a file but not a page of the manual into a download link (the file is
copied into the build), before Sphinx collects the downloads.

Tables get a class by their shape (:func:`_table_classes`), so that the stylesheet
(``_static/lncapacity.css``) can keep a table of figures on one line per row and give a
wide table of prose room: both then scroll sideways instead of being squeezed.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx


def _files_as_downloads(app: Sphinx, doctree: nodes.document) -> None:
    env = app.env
    for node in list(doctree.findall(addnodes.pending_xref)):
        if node.get("refdomain") != "doc" or node.get("reftype") != "myst":
            continue
        target = node["reftarget"]
        if target in env.found_docs:
            continue
        for suffix in (".py",):
            path = Path(app.srcdir, target + suffix)
            if path.is_file():
                new = addnodes.download_reference(
                    refdomain=None,
                    reftarget="/" + target + suffix,
                    refdoc=node.get("refdoc", env.docname),
                    reftype="myst",
                    refexplicit=True,
                )
                new.extend(node.children)
                node.replace_self(new)
                break


FIGURE_CELL = 28
"""A table whose body cells all have at most this many characters is a table of figures."""

PROSE_COLUMNS = 5
"""A table of prose with at least this many columns is wide."""


def _table_classes(app: Sphinx, doctree: nodes.document) -> None:
    """``lnc-figures`` on tables of short cells (rows stay on one line), ``lnc-wide`` on
    tables of prose with many columns (they get a minimum width)."""
    for table in doctree.findall(nodes.table):
        groups = list(table.findall(nodes.tgroup))
        if not groups:
            continue
        columns = int(groups[0].get("cols", 0))
        cells = [
            e.astext() for body in table.findall(nodes.tbody) for e in body.findall(nodes.entry)
        ]
        if cells and max(map(len, cells)) <= FIGURE_CELL:
            table["classes"].append("lnc-figures")
        elif columns >= PROSE_COLUMNS:
            table["classes"].append("lnc-wide")


def _lookup(path: str) -> Any:
    """The object a dotted name denotes in Python (modules, then attributes), or None."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return None
        return obj
    return None


def _canonical(obj: Any) -> str | None:
    """Where ``obj`` is defined: ``module.qualname`` (a method: through its class)."""
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    if isinstance(obj, type(importlib)):  # a module
        return obj.__name__
    if module and qualname and module.startswith("lncapacity"):
        return f"{module}.{qualname}"
    return None


def _as_the_module_sees_it(
    app: Sphinx, env: Any, node: addnodes.pending_xref, contnode: nodes.Element
) -> nodes.Element | None:
    if node.get("refdomain") != "py":
        return None
    target = node.get("reftarget", "")
    here = node.get("py:module") or ""
    candidates = [target] if target.startswith("lncapacity") else []
    if here:
        candidates.append(f"{here}.{target}")
    domain = env.get_domain("py")
    for path in candidates:
        obj = _lookup(path)
        canonical = _canonical(obj) if obj is not None else None
        if canonical and canonical != target:
            found = domain.resolve_xref(
                env, node["refdoc"], app.builder, node["reftype"], canonical, node, contnode
            )
            if found is not None:
                return found
    return None


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("missing-reference", _as_the_module_sees_it)
    # before the download collector (priority 500) sees the document
    app.connect("doctree-read", _files_as_downloads, priority=400)
    app.connect("doctree-read", _table_classes)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
