"""Every picture that applies to a net, written to a folder at once (``lncapacity plot``).

Split out of ``plot.py`` (issue 29).
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import fileformat
from ..certify import Certificate
from ..explain import as_points, float_trace
from ..model import LNNet
from .circle_views import circles
from .decision import regions
from .folds import fold_maps
from .ladders import ladder
from .merges import merge_by, merge_graph, merge_tree

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure


def save_figures(
    net: LNNet[Any],
    X: Any,
    y: Any = None,
    *,
    out: str | os.PathLike[str],
    formats: Sequence[str] = ("png", "svg"),
    certificate: Certificate | None = None,
    by: str = "auto",
    dpi: int = 120,
) -> list[Path]:
    """Draw every picture that applies and write them to folder ``out``; return the paths.

    ``ladder`` (value or angle), ``ladder_rank``, ``fold_maps``, ``circles`` (width 3
    with layers), ``regions`` (d = 2), ``merge_tree`` and ``merge_tree.graphml``
    (merged ``by`` runs or values, see :func:`~.merges.merge_by`).  Files appear only when
    all are drawn (each written to a temporary file first, then renamed).
    """
    points = as_points(net, X, y)
    trace = float_trace(net, points)
    folder = Path(out)
    figs: list[tuple[str, Figure]] = []
    if net.layers or trace.has_values:
        figs.append(("ladder", ladder(net, points, trace=trace)))
    if trace.has_values:
        figs.append(("ladder_rank", ladder(net, points, mode="rank", trace=trace)))
    if net.layers and trace.has_values:
        figs.append(("fold_maps", fold_maps(net, points, trace=trace)))
    if net.layers and net.width == 3:
        figs.append(("circles", circles(net, points, trace=trace)))
    if points.d == 2:
        figs.append(("regions", regions(net, points, certificate=certificate)))
    G = merge_graph(net, points, by=merge_by(net, by), trace=trace)
    figs.append(("merge_tree", merge_tree(net, points, graph=G, trace=trace)))
    import networkx as nx

    blobs: list[tuple[Path, bytes]] = []
    for name, fig in figs:
        for fmt in formats:
            buf = io.BytesIO()
            fig.savefig(buf, format=fmt, dpi=dpi)
            blobs.append((folder / f"{name}.{fmt}", buf.getvalue()))
    blobs.append(
        (folder / "merge_tree.graphml", ("\n".join(nx.generate_graphml(G)) + "\n").encode())
    )
    fileformat.write_all_atomic(blobs)
    return [p for p, _ in blobs]
