"""Every picture that applies to a net, written to a folder at once (``lncapacity plot``).

The pictures draw what they are given; the command gives them a sample of large point sets
and :func:`save_figures` says so on every figure (:mod:`.budget`).
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import fileformat
from ..certify import Certificate
from ..data import PointSet
from ..explain import Trace, as_points, float_trace
from ..model import LNNet
from .budget import certificate_affordable, grid_side, sample_note
from .circle_views import circles
from .decision import regions
from .folds import fold_maps
from .ladders import ladder
from .merges import merge_by, merge_graph, merge_tree

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure


FIGURES = ("ladder", "ladder_rank", "fold_maps", "circles", "regions", "merge_tree")
"""The pictures :func:`save_figures` draws, each where it applies (:func:`skipped_figures`)."""


REGIONS_RESOLUTION = 300
"""Cells across the plane of :func:`save_figures`' decision regions (fewer for nets whose grid
would cost more: :func:`~.budget.grid_side`)."""


def skipped_figures(
    net: LNNet[Any], points: PointSet, trace: Trace, certificate: Certificate | None = None
) -> dict[str, str]:
    """The pictures of :data:`FIGURES` that do not apply to ``net`` on ``points``, and why:
    also decision regions whose grid, or whose certificate of the points (when
    ``certificate`` is not given), is beyond a picture's budget (:mod:`.budget`)."""
    out: dict[str, str] = {}
    depth0 = "the net has no LayerNorm layers (depth 0)"
    if not (net.layers or trace.has_values):
        out["ladder"] = f"{depth0} and a readout of rank above one: no value to draw"
    if not trace.has_values:
        out["ladder_rank"] = "a map of rank above one: no scalar value to rank"
    if not net.layers:
        out["fold_maps"] = f"{depth0}: there is no fold to draw"
    elif not trace.has_values:
        out["fold_maps"] = "a map of rank above one: no scalar map to draw"
    if not net.layers:
        out["circles"] = f"{depth0}: no LayerNorm output to put on the circle"
    elif net.width != 3:
        out["circles"] = f"layers of width {net.width}: the circle view needs width 3"
    if points.d != 2:
        out["regions"] = f"the points have {points.d} features: decision regions need 2"
    elif not grid_side(net, REGIONS_RESOLUTION):
        out["regions"] = (
            f"a grid of the plane through a net of {sum(net.widths):,} features is beyond a "
            "picture's budget"
        )
    elif certificate is None and not certificate_affordable(net, points.m):
        out["regions"] = (
            f"certifying {points.m:,} points of this net is beyond a picture's budget "
            "(lncapacity verify certifies them)"
        )
    return out


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
    trace: Trace | None = None,
    sample_of: int | None = None,
) -> list[Path]:
    """Draw every picture that applies and write them to folder ``out``; return the paths.

    ``ladder`` (value or angle), ``ladder_rank``, ``fold_maps``, ``circles`` (width 3
    with layers), ``regions`` (d = 2), ``merge_tree`` and ``merge_tree.graphml``
    (merged ``by`` runs or values, see :func:`~.merges.merge_by`); those that do not
    apply, and why, are :func:`skipped_figures`.  ``trace``: the points' float64 trace,
    if already computed.  ``sample_of``: the number of points ``X`` is a sample of (every
    figure says so, and the GraphML's ``sample`` attribute).  Files appear only when
    all are drawn (each written to a temporary file first, then renamed).
    """
    points = as_points(net, X, y)
    trace = trace if trace is not None else float_trace(net, points)
    folder = Path(out)
    skip = skipped_figures(net, points, trace, certificate)
    side = grid_side(net, REGIONS_RESOLUTION)
    draw: dict[str, Callable[[], Figure]] = {
        "ladder": lambda: ladder(net, points, trace=trace),
        "ladder_rank": lambda: ladder(net, points, mode="rank", trace=trace),
        "fold_maps": lambda: fold_maps(net, points, trace=trace),
        "circles": lambda: circles(net, points, trace=trace),
        "regions": lambda: regions(net, points, certificate=certificate, resolution=side),
    }
    figs = [(name, f()) for name, f in draw.items() if name not in skip]
    G = merge_graph(net, points, by=merge_by(net, by), trace=trace)
    figs.append(("merge_tree", merge_tree(net, points, graph=G, trace=trace)))
    if note := sample_note(points.m, sample_of or points.m):
        G.graph["sample"] = note
        for _, fig in figs:
            fig.suptitle(note[0].upper() + note[1:], fontsize=11, color="0.3")
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
