"""Local Sphinx glue for the lncapacity manual.

Links from the proofs and notebooks to files that are not pages (``check_*.py``,
benchmark scripts, package sources) are plain Markdown links, so that they work
when the files are read as they are.  MyST takes a ``.py`` target for a document
because ``.py`` is the notebooks' source suffix; this turns every such link whose
target is a file but not a page of the manual into a download link (the file is
copied into the build), before Sphinx collects the downloads.
"""

from __future__ import annotations

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


def setup(app: Sphinx) -> dict[str, Any]:
    # before the download collector (priority 500) sees the document
    app.connect("doctree-read", _files_as_downloads, priority=400)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
