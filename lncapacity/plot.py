"""Pictures of a width-3 LN-Net at work: ladders, fold maps, circles, regions, merge trees.

Every function takes a net and labelled points (a :class:`~lncapacity.data.PointSet`,
or ``X, y``) and returns a Matplotlib :class:`~matplotlib.figure.Figure` (made
without pyplot, so nothing global changes).  Values and angles come from the
float64 trace of :mod:`lncapacity.explain` (see its module doc for the scalar
each map reads, the amplitude, the angle on the circle and label runs); they are
pictures, not proofs: the certificate (:func:`lncapacity.certify.certify`) is the
proof, and :func:`regions` marks the points where float64 and the certificate
disagree.

Colours are the Okabe-Ito palette (colour-blind safe) in class order; with more
than 8 classes the colours repeat with another marker, so every (colour, marker)
pair names one class.  Nets deeper than a figure can show are subsampled evenly
(first and last layer always kept), and the title says so.

Needs the ``plot`` extra: ``pip install 'lncapacity[plot]'`` (Matplotlib, NetworkX).
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from . import fileformat
from .arith import to_float
from .certify import Certificate
from .errors import InputError
from .explain import (
    MERGE_RTOL,
    U_HAT,
    V_HAT,
    Trace,
    as_points,
    class_arcs,
    class_intervals,
    float_scores,
    float_trace,
    layer_curve,
    merge_history,
    reads,
)
from .model import LNNet

if TYPE_CHECKING:  # pragma: no cover
    import networkx as nx
    from matplotlib.figure import Figure

__all__ = [
    "MARKERS",
    "OKABE_ITO",
    "circles",
    "class_style",
    "fold_maps",
    "ladder",
    "merge_by",
    "merge_graph",
    "merge_tree",
    "regions",
    "save_figures",
    "write_graphml",
]

OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#F0E442", "#000000")
"""Okabe and Ito's colour-blind-safe palette, ordered so that the first classes contrast most."""
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")

MAX_COLUMNS = 60
"""Ladder columns shown at most (layers are subsampled evenly beyond)."""
MAX_PANELS = 12
"""Fold-map and circle panels shown at most."""
SLIDE = {"font.size": 12, "axes.titlesize": 13, "axes.labelsize": 12, "legend.fontsize": 11}


def _mpl() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise InputError("plotting needs Matplotlib: pip install 'lncapacity[plot]'") from None
    return matplotlib


def _figure(width: float, height: float) -> Figure:
    _mpl()
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def class_style(i: int, k: int) -> tuple[str, str]:
    """``(colour, marker)`` of class index ``i`` among ``k`` classes."""
    if k <= len(OKABE_ITO):
        return OKABE_ITO[i], MARKERS[i % len(MARKERS)]
    return OKABE_ITO[i % len(OKABE_ITO)], MARKERS[(i // len(OKABE_ITO) + i) % len(MARKERS)]


def _lighten(colour: str, amount: float = 0.7) -> tuple[float, float, float]:
    from matplotlib.colors import to_rgb

    r, g, b = to_rgb(colour)
    return (r + (1 - r) * amount, g + (1 - g) * amount, b + (1 - b) * amount)


def _setup(net: LNNet[Any], X: Any, y: Any, trace: Trace | None) -> tuple[Any, np.ndarray, Trace]:
    points = as_points(net, X, y)
    idx = np.array([net.classes.index(c) for c in points.y], dtype=np.intp)
    return points, idx, trace if trace is not None else float_trace(net, points)


def _select(n: int, limit: int) -> list[int]:
    """At most ``limit`` of ``0..n-1``, evenly spaced, first and last kept."""
    if n <= limit:
        return list(range(n))
    return sorted({round(float(x)) for x in np.linspace(0, n - 1, limit)})


def _subsample_note(shown: int, total: int, what: str) -> str:
    return "" if shown == total else f"\n({shown} of {total} {what} shown, evenly spaced)"


def _kind(net: LNNet[Any], layer: int) -> str:
    kind = net.layers[layer - 1].meta.get("kind")
    return f" ({kind})" if kind else ""


def _class_handles(net: LNNet[Any], present: Sequence[int], line: bool = False) -> list[Any]:
    from matplotlib.lines import Line2D

    k = len(net.classes)
    out = []
    for i in present:
        colour, marker = class_style(i, k)
        out.append(
            Line2D(
                [],
                [],
                color=colour,
                marker=marker,
                linestyle="-" if line else "none",
                markersize=8,
                label=f"class {net.classes[i]}",
            )
        )
    return out


def _alpha(m: int) -> float:
    return 1.0 if m <= 40 else max(0.08, min(1.0, 40 / m))


# ---------------------------------------------------------------------------
# the ladder


def _rank(v: np.ndarray, amplitude: float) -> np.ndarray:
    """Positions ``-1..1`` in sorted order; values closer than MERGE_RTOL share one."""
    m = len(v)
    order = np.argsort(v, kind="stable")
    sv = v[order]
    block = np.concatenate([[0], np.cumsum(np.diff(sv) >= MERGE_RTOL * amplitude)])
    pos = np.arange(m, dtype=float)
    mean = np.bincount(block, weights=pos) / np.bincount(block)
    out = np.empty(m)
    out[order] = mean[block]
    return 2 * out / max(m - 1, 1) - 1


def _merged_sets(net: LNNet[Any], trace: Trace, idx: np.ndarray) -> list[np.ndarray]:
    """For each column, a representative per point: points merged so far share one."""
    root = np.arange(len(idx))
    out = [root.copy()]
    for groups in merge_history(net, trace, idx):
        for g in groups:
            root[g] = g[0]
        out.append(root.copy())
    return out


def _ladder_columns(
    trace: Trace, mode: str, sets: list[np.ndarray] | None = None
) -> tuple[list[int], list[np.ndarray], str]:
    """Column indices, their plotted coordinates, and the y-axis label."""
    cols, ys = [], []
    if mode in ("value", "rank"):
        for c, v in enumerate(trace.values):
            if v is None:
                continue
            a = trace.amplitude[c]
            if mode == "rank":
                pos = _rank(v, a)
                if sets is not None and c < len(sets):  # merged values share a place
                    r = sets[c]
                    pos = (
                        np.bincount(r, weights=pos, minlength=len(r))
                        / np.maximum(np.bincount(r, minlength=len(r)), 1)
                    )[r]
                ys.append(pos)
            elif c == 0:
                ys.append((v - (np.max(v) + np.min(v)) / 2) / a)
            else:
                ys.append(v / a)
            cols.append(c)
        if mode == "rank":
            for c in range(1, len(ys)):  # undo reversals: orient like the previous column
                if np.dot(ys[c], ys[c - 1]) < 0:
                    ys[c] = -ys[c]
            return cols, ys, "position in sorted order\n(each column oriented like the one before)"
        return cols, ys, "value / amplitude"
    if mode == "principal":
        ys = list(trace.principal or [])
        for c in range(1, len(ys)):  # undo reversals: orient like the previous column
            if np.dot(ys[c], ys[c - 1]) < 0:
                ys[c] = -ys[c]
        label = "first principal coordinate / largest\n(each column oriented like the one before)"
        return list(range(len(ys))), ys, label
    if trace.values[0] is not None:
        v = trace.values[0]
        cols.append(0)
        ys.append((v - (np.max(v) + np.min(v)) / 2) / trace.amplitude[0])
    for layer in range(1, trace.depth + 1):
        cols.append(layer)
        ys.append(trace.angles[layer - 1] / math.pi)
    return cols, ys, "angle on the circle / pi (column 0: value / amplitude)"


def _final_bands(
    net: LNNet[Any], trace: Trace, mode: str
) -> tuple[list[tuple[float, float, int]], list[float]]:
    """The readout's class bands ``(y0, y1, class)`` at the last column, and its thresholds."""
    if mode == "principal":
        return [], []
    if mode == "angle":
        if not trace.depth:
            return [], []
        bands = [
            (lo, hi, c) for s, e, c in class_arcs(net) for lo, hi in _wrap(s / math.pi, e / math.pi)
        ]
        return bands, []
    iv = class_intervals(net)
    last = trace.values[trace.depth]
    if iv is None or last is None:
        return [], []
    a = trace.amplitude[trace.depth]
    shift = (np.max(last) + np.min(last)) / 2 if trace.depth == 0 else 0.0

    def y_of(x: Any, default: float) -> float:
        if x is None:
            return default
        if mode == "rank":
            below = int(np.sum(last < to_float(x)))
            return 2 * (below - 0.5) / max(len(last) - 1, 1) - 1
        return (to_float(x) - shift) / a

    bands, cuts = [], []
    for lo, hi, c in iv:
        y0, y1 = max(y_of(lo, -1.1), -1.1), min(y_of(hi, 1.1), 1.1)
        if y1 > y0:
            bands.append((y0, y1, c))
        if hi is not None and -1.1 < y_of(hi, 0.0) < 1.1:
            cuts.append(y_of(hi, 0.0))
    return bands, cuts


def ladder(
    net: LNNet[Any],
    X: Any,
    y: Any = None,
    *,
    mode: str = "auto",
    max_columns: int = MAX_COLUMNS,
    trace: Trace | None = None,
) -> Figure:
    """Every point's value (or position, or angle) after each layer, joined across layers.

    Column 0 is the input's projection, column ``l`` what follows layer ``l``.
    ``mode``: ``"value"`` (the scalar each map reads, over its amplitude: needs
    rank-one maps), ``"rank"`` (the point's position in each column's sorted
    order, oriented like the column before, merged values sharing one place:
    the paper's picture, every merge visible), ``"angle"`` (the angle on the
    circle: every layer of width 3), ``"principal"`` (each column's first principal
    coordinate: any net, e.g. a trained one of other widths) or ``"auto"`` (value when
    possible, else angle, else principal).  Lines that meet
    are merges; at the last column the readout's thresholds (dashed) and the
    values (or arcs) each class wins (bar) are drawn.
    """
    from matplotlib.collections import LineCollection
    from matplotlib.lines import Line2D
    from matplotlib.patches import Rectangle

    points, idx, trace = _setup(net, X, y, trace)
    if mode == "auto":
        mode = "value" if trace.has_values else "angle" if trace.on_circle else "principal"
    if mode not in ("value", "rank", "angle", "principal"):
        raise InputError(f"ladder mode must be value, rank, angle, principal or auto, got {mode!r}")
    if mode in ("value", "rank") and not trace.has_values:
        raise InputError("this net has a map of rank above one: use mode='angle' or 'principal'")
    if mode == "angle" and not trace.on_circle:
        raise InputError("the angle view needs every layer of width 3: use mode='principal'")
    sets = _merged_sets(net, trace, idx) if mode == "rank" else None
    cols, ys, ylabel = _ladder_columns(trace, mode, sets)
    if not cols:
        raise InputError("nothing to draw: no LayerNorm layers and a readout of rank above one")
    sel = _select(len(cols), max_columns)
    xs = np.array([cols[i] for i in sel], dtype=float)
    Y = np.array([ys[i] for i in sel])  # (columns, m)
    m, k = points.m, len(net.classes)
    with _mpl().rc_context(SLIDE):
        fig = _figure(11, 6.5)
        ax = fig.add_subplot()
        segs = np.stack([np.broadcast_to(xs, Y.T.shape), Y.T], axis=-1)
        colours = [class_style(i, k)[0] for i in idx]
        lines = LineCollection(list(segs), colors=colours, linewidths=1.0, alpha=_alpha(m))
        lines.set_gid("ladder-lines")
        lines.set_rasterized(m * len(xs) > 4000)
        ax.add_collection(lines)
        present = sorted(set(idx.tolist()))
        for i in present:
            colour, marker = class_style(i, k)
            sel_pts = idx == i
            sc = ax.scatter(
                np.repeat(xs, sel_pts.sum()),
                Y[:, sel_pts].ravel(),
                s=28 if m <= 40 else 8,
                color=colour,
                marker=marker,
                edgecolors="white" if m <= 40 else "none",
                linewidths=0.5,
                zorder=3,
                gid=f"points-{i}",
            )
            sc.set_rasterized(m * len(xs) > 4000)
        handles = _class_handles(net, present, line=True)
        last = xs[-1]
        step = last - xs[-2] if len(xs) > 1 else 1.0
        bar_x, bar_w = last + 0.15 * step, 0.25 * step
        if cols[sel[-1]] == trace.depth:
            bands, cuts = _final_bands(net, trace, mode)
            if mode == "rank" and len(ys) > 1:
                v_last = trace.values[trace.depth]
                if np.dot(ys[-1], _rank(v_last, trace.amplitude[trace.depth])) < 0:  # type: ignore[arg-type]
                    bands = [(-y1, -y0, c) for y0, y1, c in bands]
                    cuts = [-yc for yc in cuts]
            for y0, y1, c in bands:
                ax.add_patch(
                    Rectangle(
                        (bar_x, y0),
                        bar_w,
                        y1 - y0,
                        color=class_style(c, k)[0],
                        alpha=0.5,
                        gid="class-band",
                    )
                )
            for yc in cuts:
                ax.plot(
                    [last - 0.3 * step, bar_x + bar_w],
                    [yc, yc],
                    color="black",
                    linestyle="--",
                    linewidth=1.5,
                    zorder=4,
                    gid="threshold",
                )
            if cuts:
                handles.append(
                    Line2D([], [], color="black", linestyle="--", label="readout threshold")
                )
            if bands:
                what = "arcs" if mode == "angle" else "values"
                handles.append(
                    Rectangle((0, 0), 1, 1, color="0.5", alpha=0.5, label=f"{what} each class wins")
                )
        ax.set_xlim(xs[0] - 0.3 * step, bar_x + bar_w + 0.1 * step)
        ax.set_ylim(-1.12, 1.12)
        ax.set_xlabel("layer (0 = projection of the input)")
        ax.set_ylabel(ylabel)
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.set_title(
            f"Ladder: {m} points through {trace.depth} LayerNorm layer"
            f"{'s' * (trace.depth != 1)} ({mode})" + _subsample_note(len(sel), len(cols), "columns")
        )
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        ax.grid(True, axis="x", alpha=0.3)
    return fig


def _wrap(lo: float, hi: float) -> list[tuple[float, float]]:
    """``[lo, hi]`` (units of pi, ``lo`` in ``[-1, 1)``) as pieces inside ``[-1, 1]``."""
    if hi <= 1:
        return [(lo, hi)]
    return [(lo, 1.0), (-1.0, hi - 2)]


# ---------------------------------------------------------------------------
# fold maps


def _grid(n: int) -> tuple[int, int]:
    cols = min(n, 4)
    return math.ceil(n / cols), cols


def _runs_spans(v: np.ndarray, idx: np.ndarray) -> list[tuple[float, float, int]]:
    """The label runs of ``v`` as ``(low, high, class)``, single values widened to be seen."""
    order = np.argsort(v, kind="stable")
    spans: list[tuple[float, float, int]] = []
    for k in order:
        if spans and spans[-1][2] == idx[k]:
            spans[-1] = (spans[-1][0], float(v[k]), int(idx[k]))
        else:
            spans.append((float(v[k]), float(v[k]), int(idx[k])))
    least = 0.006 * (float(np.max(v) - np.min(v)) or 1.0)
    return [
        (a, b, c) if b - a >= least else ((a + b - least) / 2, (a + b + least) / 2, c)
        for a, b, c in spans
    ]


def fold_maps(
    net: LNNet[Any],
    X: Any,
    y: Any = None,
    *,
    layers: Sequence[int] | None = None,
    max_panels: int = MAX_PANELS,
    trace: Trace | None = None,
) -> Figure:
    """Each layer's scalar map, value in -> value out, one panel per layer.

    The curve is the layer's map (float64), the dots the points, the dashed line
    the layer's centre and the dotted line its fold point (where the map turns);
    the coloured bars along the bottom and left edges are the label runs before
    and after the layer.  ``layers`` (1-based) defaults to all, subsampled to
    ``max_panels``.
    """
    from matplotlib.collections import LineCollection
    from matplotlib.lines import Line2D
    from matplotlib.transforms import blended_transform_factory

    from .explain import _layer_constants

    points, idx, trace = _setup(net, X, y, trace)
    if not net.layers:
        raise InputError("the net has no LayerNorm layers: there is no fold to draw")
    rd = reads(net)
    all_layers = list(range(1, net.depth + 1))
    chosen = (
        list(layers)
        if layers is not None
        else [all_layers[i] for i in _select(net.depth, max_panels)]
    )
    if bad := [n for n in chosen if not 1 <= n <= net.depth]:
        raise InputError(f"layers {bad} out of range 1..{net.depth}")
    k = len(net.classes)
    present = sorted(set(idx.tolist()))
    with _mpl().rc_context(SLIDE):
        rows, ncols = _grid(len(chosen))
        fig = _figure(max(7.5, 4.2 * ncols + 0.5), 3.6 * rows + 1.4)
        axes = fig.subplots(rows, ncols, squeeze=False)
        for ax in axes.ravel()[len(chosen) :]:
            ax.set_visible(False)
        for ax, layer in zip(axes.ravel(), chosen, strict=False):
            vin, vout = trace.values[layer - 1], trace.values[layer]
            ax.set_title(f"layer {layer}{_kind(net, layer)}")
            if vin is None or vout is None or rd[layer - 1] is None or rd[layer] is None:
                ax.text(
                    0.5,
                    0.5,
                    "no scalar map\n(rank above one)",
                    ha="center",
                    va="center",
                    transform=ax.transAxes,
                )
                continue
            lo, hi = float(np.min(vin)), float(np.max(vin))
            pad = 0.08 * (hi - lo) if hi > lo else 1.0
            grid = np.linspace(lo - pad, hi + pad, 600)
            ax.plot(
                grid, layer_curve(net, layer, grid, rd), color="0.45", linewidth=1.5, gid="curve"
            )
            for i in present:
                colour, marker = class_style(i, k)
                sel = idx == i
                ax.scatter(
                    vin[sel],
                    vout[sel],
                    s=30 if points.m <= 40 else 8,
                    color=colour,
                    marker=marker,
                    zorder=3,
                    gid=f"points-{i}",
                )
            s0, g, kk, a1, a2 = _layer_constants(
                net,
                net.layers[layer - 1].b,
                rd[layer - 1].col,
                rd[layer].row,  # type: ignore[union-attr]
            )
            if math.isfinite(to_float(s0)):  # beyond the float range: off any axis
                ax.axvline(to_float(s0), color="black", linestyle="--", linewidth=1, gid="centre")
            if a1 != 0 and g != 0 and a2 != 0 and math.isfinite(to_float(s0 + a2 * kk / (a1 * g))):
                ax.axvline(
                    to_float(s0 + a2 * kk / (a1 * g)),
                    color="black",
                    linestyle=":",
                    linewidth=1.5,
                    gid="fold-point",
                )
            bottom = blended_transform_factory(ax.transData, ax.transAxes)
            left = blended_transform_factory(ax.transAxes, ax.transData)
            before, after = _runs_spans(vin, idx), _runs_spans(vout, idx)
            ax.add_collection(
                LineCollection(
                    [[(a, 0.015), (b, 0.015)] for a, b, _ in before],
                    transform=bottom,
                    colors=[class_style(c, k)[0] for _, _, c in before],
                    linewidths=5,
                    capstyle="butt",
                    gid="runs-before",
                )
            )
            ax.add_collection(
                LineCollection(
                    [[(0.015, a), (0.015, b)] for a, b, _ in after],
                    transform=left,
                    colors=[class_style(c, k)[0] for _, _, c in after],
                    linewidths=5,
                    capstyle="butt",
                    gid="runs-after",
                )
            )
            ax.set_xlabel(f"value read by layer {layer}")
            ax.set_ylabel("value out" if layer < net.depth else "value read by the readout")
            ax.ticklabel_format(axis="both", style="sci", scilimits=(-3, 4))
        handles = [
            *_class_handles(net, present),
            Line2D([], [], color="0.45", label="the layer's map"),
            Line2D([], [], color="black", linestyle="--", label="centre"),
            Line2D([], [], color="black", linestyle=":", label="fold point"),
            Line2D([], [], color="0.3", linewidth=5, label="label runs (edges)"),
        ]
        fig.legend(handles=handles, loc="outside lower center", ncol=min(len(handles), 2 * ncols))
        fig.suptitle(
            "Fold maps: value in -> value out" + _subsample_note(len(chosen), net.depth, "layers")
        )
    return fig


# ---------------------------------------------------------------------------
# circles


def circles(
    net: LNNet[Any],
    X: Any,
    y: Any = None,
    *,
    layers: Sequence[int] | None = None,
    max_panels: int = MAX_PANELS,
    trace: Trace | None = None,
) -> Figure:
    """LayerNorm's output after each layer, in the plane orthogonal to ``(1, 1, 1)``.

    Coordinates ``h . u/|u|`` and ``h . v/|v|``; with eps = 0 every point is on the
    circle of radius ``sqrt 3`` (drawn).  The arrow is the direction the next map
    reads; after the last layer the arcs outside the circle are won by each class.
    """
    from matplotlib.lines import Line2D
    from matplotlib.patches import Arc, FancyArrowPatch

    points, idx, trace = _setup(net, X, y, trace)
    if not net.layers or net.width != 3:
        raise InputError("the circle view needs a width-3 net with LayerNorm layers")
    rd = reads(net)
    chosen = list(layers) if layers is not None else [n + 1 for n in _select(net.depth, max_panels)]
    if bad := [n for n in chosen if not 1 <= n <= net.depth]:
        raise InputError(f"layers {bad} out of range 1..{net.depth}")
    k = len(net.classes)
    present = sorted(set(idx.tolist()))
    R3 = math.sqrt(3.0)
    with _mpl().rc_context(SLIDE):
        rows, ncols = _grid(len(chosen))
        fig = _figure(max(6.5, 3.8 * ncols + 0.5), 4.4 * rows + 1.6)
        axes = fig.subplots(rows, ncols, squeeze=False)
        for ax in axes.ravel()[len(chosen) :]:
            ax.set_visible(False)
        for ax, layer in zip(axes.ravel(), chosen, strict=False):
            t, r = trace.angles[layer - 1], trace.radius[layer - 1]
            ax.add_patch(Arc((0, 0), 2 * R3, 2 * R3, color="0.7", linewidth=1))
            for i in present:
                colour, marker = class_style(i, k)
                sel = idx == i
                ax.scatter(
                    r[sel] * np.cos(t[sel]),
                    r[sel] * np.sin(t[sel]),
                    s=30 if points.m <= 40 else 8,
                    color=colour,
                    marker=marker,
                    zorder=3,
                    gid=f"points-{i}",
                )
            nxt = rd[layer]
            if nxt is not None:
                row = np.array([to_float(c) for c in nxt.row])
                d = np.array([row @ U_HAT, row @ V_HAT])
                if np.linalg.norm(d) > 0:
                    d = 0.8 * R3 * d / np.linalg.norm(d)
                    ax.add_patch(
                        FancyArrowPatch(
                            (0, 0),
                            tuple(d),
                            arrowstyle="-|>",
                            mutation_scale=14,
                            color="0.25",
                            gid="read",
                        )
                    )
            if layer == net.depth:
                for s, e, c in class_arcs(net):
                    ax.add_patch(
                        Arc(
                            (0, 0),
                            2.5 * R3,
                            2.5 * R3,
                            theta1=math.degrees(s),
                            theta2=math.degrees(e),
                            color=class_style(c, k)[0],
                            linewidth=6,
                            gid=f"arc-{c}",
                        )
                    )
            lim = 1.4 * R3
            ax.set_xlim(-lim, lim)
            ax.set_ylim(-lim, lim)
            ax.set_aspect("equal")
            ax.set_title(f"after layer {layer}{_kind(net, layer)}")
            ax.set_xlabel("h . u/|u|")
            ax.set_ylabel("h . v/|v|")
        handles = [
            *_class_handles(net, present),
            Line2D([], [], color="0.25", marker=">", label="next read"),
            Line2D([], [], color="0.5", linewidth=6, label="class arcs (readout)"),
        ]
        fig.legend(handles=handles, loc="outside lower center", ncol=min(len(handles), 2 * ncols))
        fig.suptitle(
            "LayerNorm's output on the circle\n(the plane orthogonal to (1, 1, 1))"
            + _subsample_note(len(chosen), net.depth, "layers")
        )
    return fig


# ---------------------------------------------------------------------------
# decision regions


def disagreements(net: LNNet[Any], points: Any, certificate: Certificate) -> np.ndarray:
    """Indices of points where float64 and the certificate disagree on correctness."""
    from .floats import forward

    z = forward(net, points, "float64")
    idx = np.array([net.classes.index(c) for c in points.y], dtype=np.intp)
    float_right = np.argmax(np.nan_to_num(z, nan=-np.inf), axis=1) == idx
    certified = np.array([p.certified for p in certificate.points], dtype=bool)
    return np.nonzero(float_right != certified)[0]


def regions(
    net: LNNet[Any],
    X: Any,
    y: Any = None,
    *,
    certificate: Certificate | None = None,
    resolution: int = 300,
) -> Figure:
    """The classes of the plane (d = 2), evaluated in float64, the points on top.

    Points where float64 and the certificate (computed if not given) disagree are
    circled in red.
    """
    from matplotlib.colors import ListedColormap
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    from .certify import certify

    points = as_points(net, X, y)
    if points.d != 2:
        raise InputError(f"decision regions need 2-D points, these have {points.d} features")
    cert = certificate if certificate is not None else certify(net, points)
    F = points.floats()
    idx = np.array([net.classes.index(c) for c in points.y], dtype=np.intp)
    lo, hi = F.min(axis=0), F.max(axis=0)
    pad = 0.08 * np.where(hi > lo, hi - lo, 1.0)
    lo, hi = lo - pad, hi + pad
    gx, gy = np.linspace(lo[0], hi[0], resolution), np.linspace(lo[1], hi[1], resolution)
    G = np.stack(np.meshgrid(gx, gy), axis=-1).reshape(-1, 2)
    z = float_scores(net, G)
    win = np.argmax(np.nan_to_num(z, nan=-np.inf), axis=1).reshape(resolution, resolution)
    k = len(net.classes)
    cmap = ListedColormap([_lighten(class_style(i, k)[0]) for i in range(k)])
    bad = disagreements(net, points, cert)
    with _mpl().rc_context(SLIDE):
        fig = _figure(8.5, 6.5)
        ax = fig.add_subplot()
        ax.imshow(
            win,
            origin="lower",
            extent=(lo[0], hi[0], lo[1], hi[1]),
            cmap=cmap,
            vmin=-0.5,
            vmax=k - 0.5,
            interpolation="nearest",
            aspect="auto",
            gid="regions",
        )
        present = sorted(set(idx.tolist()))
        for i in present:
            colour, marker = class_style(i, k)
            sel = idx == i
            ax.scatter(
                F[sel, 0],
                F[sel, 1],
                s=40 if points.m <= 200 else 12,
                color=colour,
                marker=marker,
                edgecolors="black",
                linewidths=0.6,
                zorder=3,
                gid=f"points-{i}",
            )
        handles = _class_handles(net, present) + [
            Patch(color=_lighten(class_style(i, k)[0]), label=f"region {net.classes[i]}")
            for i in range(k)
        ]
        if len(bad):
            ax.scatter(
                F[bad, 0],
                F[bad, 1],
                s=160,
                facecolors="none",
                edgecolors="#D00000",
                linewidths=2,
                zorder=4,
                gid="disagree",
            )
            handles.append(
                Line2D(
                    [],
                    [],
                    marker="o",
                    markerfacecolor="none",
                    linestyle="none",
                    markeredgecolor="#D00000",
                    markersize=11,
                    label=f"float64 != certificate ({len(bad)})",
                )
            )
        ax.set_xlabel("x1")
        ax.set_ylabel("x2")
        ok = f"{cert.certified}/{len(cert.points)} certified"
        ax.set_title(f"Decision regions in float64 ({resolution}x{resolution} grid); {ok}")
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


# ---------------------------------------------------------------------------
# merge trees


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
    :func:`lncapacity.explain.merge_history`: the paper's merges.  For constructed
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

    from .fileformat import write_atomic

    write_atomic(path, "\n".join(nx.generate_graphml(G)) + "\n")


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
    mean height of what it joins, its marker area grows with its size.
    """
    from matplotlib.collections import LineCollection

    points, idx, trace = _setup(net, X, y, trace)
    G = graph if graph is not None else merge_graph(net, points, by=merge_by(net, by), trace=trace)
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
    with _mpl().rc_context(SLIDE):
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
            ax.scatter(
                [xpos[n] for n in pts],
                [ypos[n] for n in pts],
                s=30 if m <= 60 else 4,
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
        if m <= 30:
            for n in G.nodes:
                if G.nodes[n]["kind"] == "point":
                    ax.annotate(
                        str(G.nodes[n]["point"]),
                        (xpos[n], ypos[n]),
                        textcoords="offset points",
                        xytext=(-6, 0),
                        ha="right",
                        va="center",
                        fontsize=9,
                    )
        ax.set_xlim(-1.5, max([0.0, *xpos.values()]) + 0.5)
        ax.set_ylim(-1, max(leaf, 1))
        ax.set_xlabel("layer at which the group forms (points at -1, input runs at 0)")
        ax.set_ylabel("points (ordered so branches do not cross)")
        ax.set_yticks([])
        merges = sum(1 for n in G.nodes if G.nodes[n]["kind"] == "merge")
        ax.set_title(
            f"Merge tree ({G.graph.get('merged_by', 'runs')}): {m} points, {merges} "
            f"merges over {net.depth} layers, {len(roots)} final groups"
        )
        ax.legend(
            handles=_class_handles(net, present), loc="upper left", bbox_to_anchor=(1.01, 1.0)
        )
    return fig


# ---------------------------------------------------------------------------
# everything at once (the CLI)


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
    (merged ``by`` runs or values, see :func:`merge_by`).  Files appear only when
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
