"""Merge trees: which points and label runs each layer joins.

As a NetworkX graph (written as GraphML) and drawn as a dendrogram; NetworkX is
imported only when a graph is made.
"""

from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InputError
from ..explain import Trace, merge_history
from ..model import LNNet
from .common import (
    SLIDE,
    _class_handles,
    _figure,
    _setup,
    class_style,
    integer_ticks,
    require_matplotlib,
)

if TYPE_CHECKING:  # pragma: no cover
    import networkx as nx
    from matplotlib.figure import Figure


def _columns_for_merges(trace: Trace) -> list[np.ndarray]:
    if trace.has_values:
        return [v for v in trace.values if v is not None]
    if not trace.on_circle:  # layers of other widths: each one's first principal coordinate
        return list(trace.principal or [])
    first = [trace.values[0]] if trace.values[0] is not None else []
    return first + list(trace.angles)


def merge_graph(
    net: LNNet[Any], X: Any, y: Any = None, *, by: str = "runs", trace: Trace | None = None
) -> nx.DiGraph:
    """The merge tree, as a NetworkX directed graph (edges from child to group).

    Nodes: ``x<k>`` for every point (``kind="point"``, ``layer=0``) and ``g<n>``
    for every group, with attributes ``kind``, ``label`` (the class, as text),
    ``layer``, ``size`` (points below) and ``point`` (the point's index, -1 for
    groups); each edge carries the ``layer`` of the group it enters.

    ``by="runs"``: groups are label runs (each column sorted by its float64
    value, or angle when a map has rank above one): the projection's runs of
    two or more points (``kind="run"``, layer 0), then after layer ``l`` every
    run holding points of two or more earlier groups (``kind="merge"``).  Right
    for the ``runs`` method, which joins runs and never equal values.
    ``by="values"``: groups are the values merged in the sense of
    :func:`lncapacity.explain.runs.merge_history`: the paper's merges.  For constructed
    nets the graph is a forest with one root per final group; a general net may
    split a run (a node with two parents).
    """
    import networkx as nx

    if by not in ("runs", "values"):
        raise InputError(f"merge_graph: by must be runs or values, got {by!r}")
    points, idx, trace = _setup(net, X, y, trace)
    if by == "values" and not trace.has_values:
        raise InputError("merges of values need rank-one maps: use by='runs'")
    names = [str(c) for c in net.classes]
    m = points.m
    G = nx.DiGraph(net_depth=net.depth, points=m, merged_by=by)
    for kpt in range(m):
        G.add_node(f"x{kpt}", kind="point", label=names[idx[kpt]], layer=0, size=1, point=kpt)
    group = np.array([f"x{kpt}" for kpt in range(m)], dtype=object)
    counter = 0

    def join(members: np.ndarray, layer: int, kind: str) -> None:
        nonlocal counter
        children = list(dict.fromkeys(group[members].tolist()))
        if len(children) < 2:
            return
        counter += 1
        name = f"g{counter}"
        G.add_node(
            name,
            kind=kind,
            label=names[idx[members[0]]],
            layer=layer,
            size=len(members),
            point=-1,
        )
        for ch in children:
            G.add_edge(ch, name, layer=layer)
        group[members] = name

    if by == "values":
        for layer, groups in enumerate(merge_history(net, trace, idx), 1):
            for members in groups:
                join(np.array(members), layer, "merge")
        return G
    for c, col in enumerate(_columns_for_merges(trace)):
        order = np.argsort(col, kind="stable")
        lab = idx[order]
        cuts = np.nonzero(lab[1:] != lab[:-1])[0] + 1
        for run in np.split(order, cuts):
            if len(run) > 1:
                join(np.sort(run), c, "run" if c == 0 else "merge")
    return G


def merge_by(net: LNNet[Any], by: str = "auto") -> str:
    """``by`` for :func:`merge_graph`; ``"auto"``: values for ``pma`` nets (meta), else runs."""
    if by == "auto":
        return "values" if net.meta.get("method") == "pma" else "runs"
    return by


def write_graphml(G: nx.DiGraph, path: str | os.PathLike[str]) -> None:
    """Write ``G`` as GraphML, atomically."""
    import networkx as nx

    from ..fileformat import write_atomic

    write_atomic(path, "\n".join(nx.generate_graphml(G)) + "\n")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' * (n != 1)}"


COLLAPSE = 5
"""A group with at least this many points as direct children shows them as one leaf."""


def _collapse_leaves(G: nx.DiGraph) -> nx.DiGraph:
    """``G`` with the points directly below a group of ``COLLAPSE`` or more replaced by one
    leaf (``kind="point"``, ``size`` their number, ``point`` -1): iris's runs of 49 flowers
    become one leaf "n = 49" instead of a comb of 49."""
    H = G.copy()
    for node in list(G.nodes):
        kids = [c for c in G.predecessors(node) if G.nodes[c]["kind"] == "point"]
        if len(kids) < COLLAPSE:
            continue
        H.remove_nodes_from(kids)
        leaf = f"{node}-points"
        H.add_node(
            leaf, kind="point", label=G.nodes[node]["label"], layer=0, size=len(kids), point=-1
        )
        H.add_edge(leaf, node, layer=G.nodes[node]["layer"])
    return H


def merge_tree(
    net: LNNet[Any],
    X: Any,
    y: Any = None,
    *,
    by: str = "auto",
    graph: nx.DiGraph | None = None,
    trace: Trace | None = None,
) -> Figure:
    """The merge tree drawn as a dendrogram: points on the left, groups at their layer.

    Leaves are ordered so that no two branches cross; each group sits at the
    mean height of what it joins, its marker area grows with its size.  The points
    directly below a group of ``COLLAPSE`` or more are drawn as one leaf "n = ..."
    (the graph written to GraphML keeps every point).
    """
    from matplotlib.collections import LineCollection

    points, idx, trace = _setup(net, X, y, trace)
    G = graph if graph is not None else merge_graph(net, points, by=merge_by(net, by), trace=trace)
    merges = sum(1 for n in G.nodes if G.nodes[n]["kind"] == "merge")
    G = _collapse_leaves(G)
    k = len(net.classes)
    names = [str(c) for c in net.classes]
    roots = [n for n in G.nodes if G.out_degree(n) == 0]
    roots.sort(key=lambda n: (names.index(G.nodes[n]["label"]), -G.nodes[n]["size"]))
    ypos: dict[str, float] = {}
    leaf = 0
    seen: set[str] = set()

    def place(n: str) -> float:  # iterative post-order: deep trees exceed the recursion limit
        nonlocal leaf
        stack: list[tuple[str, bool]] = [(n, False)]
        while stack:
            node, done = stack.pop()
            if done:
                kids = [c for c in G.predecessors(node) if c in ypos]
                ypos[node] = float(np.mean([ypos[c] for c in kids])) if kids else float(leaf)
                if not kids:
                    leaf += 1
                continue
            if node in seen:
                continue
            seen.add(node)
            stack.append((node, True))
            kids = sorted(G.predecessors(node), key=lambda c: -G.nodes[c]["layer"])
            for c in reversed(kids):
                if c not in seen:
                    stack.append((c, False))
        return ypos[n]

    for r in roots:
        place(r)
    xpos = {
        n: (-1.0 if G.nodes[n]["kind"] == "point" else float(G.nodes[n]["layer"])) for n in G.nodes
    }
    segs, colours = [], []
    for a, b in G.edges:
        segs.append([(xpos[a], ypos[a]), (xpos[b], ypos[a]), (xpos[b], ypos[b])])
        colours.append(class_style(names.index(G.nodes[b]["label"]), k)[0])
    m = points.m
    with require_matplotlib().rc_context(SLIDE):
        fig = _figure(11, 6.5 if m <= 60 else 8)
        ax = fig.add_subplot()
        ax.add_collection(
            LineCollection(segs, colors=colours, linewidths=1.2 if m <= 60 else 0.5, gid="edges")
        )
        present = sorted(set(idx.tolist()))
        crowded = G.number_of_nodes() - m > 60
        big, small = (40.0, 4.0) if crowded else (240.0, 20.0)
        for i in present:
            colour, marker = class_style(i, k)
            pts = [
                n
                for n in G.nodes
                if G.nodes[n]["kind"] == "point" and G.nodes[n]["label"] == names[i]
            ]
            bunch = [n for n in pts if G.nodes[n]["size"] > 1]
            pts = [n for n in pts if G.nodes[n]["size"] == 1]
            ax.scatter(
                [xpos[n] for n in bunch],
                [ypos[n] for n in bunch],
                s=90,
                color=colour,
                marker=marker,
                edgecolors="black",
                linewidths=0.6,
                zorder=3,
                gid=f"bunches-{i}",
            )
            ax.scatter(
                [xpos[n] for n in pts],
                [ypos[n] for n in pts],
                s=30 if leaf <= 60 else 4,
                color=colour,
                marker=marker,
                zorder=3,
                gid=f"points-{i}",
            )
            grp = [
                n
                for n in G.nodes
                if G.nodes[n]["kind"] != "point" and G.nodes[n]["label"] == names[i]
            ]
            if grp:
                ax.scatter(
                    [xpos[n] for n in grp],
                    [ypos[n] for n in grp],
                    s=[big * math.sqrt(G.nodes[n]["size"] / m) + small for n in grp],
                    color=colour,
                    marker=marker,
                    edgecolors="black",
                    linewidths=0.3 if crowded else 0.6,
                    zorder=4,
                    gid=f"groups-{i}",
                )
        for n in G.nodes:  # a leaf of many points says how many; single points their id
            size = G.nodes[n]["size"]
            if G.nodes[n]["kind"] == "point" and (size > 1 or m <= 30):
                ax.annotate(
                    f"n = {size}" if size > 1 else str(G.nodes[n]["point"]),
                    (xpos[n], ypos[n]),
                    textcoords="offset points",
                    xytext=(-9 if size > 1 else -6, 0),
                    ha="right",
                    va="center",
                    fontsize=10 if size > 1 else 9,
                )
        bunched = any(G.nodes[n]["kind"] == "point" and G.nodes[n]["size"] > 1 for n in G)
        ax.set_xlim(-2.2 if bunched else -1.5, max([0.0, *xpos.values()]) + 0.5)
        ax.set_ylim(-1, max(leaf, 1))
        integer_ticks(ax.xaxis)
        ax.set_xlabel("layer at which the group forms (points at -1, input runs at 0)")
        ax.set_ylabel("points (ordered so branches do not cross)")
        ax.set_yticks([])
        ax.set_title(
            f"Merge tree ({G.graph.get('merged_by', 'runs')}): {m} points, "
            f"{_count(merges, 'merge')} over {_count(net.depth, 'layer')}, "
            f"{_count(len(roots), 'final group')}"
        )
        ax.legend(
            handles=_class_handles(net, present), loc="upper left", bbox_to_anchor=(1.01, 1.0)
        )
    return fig
