"""The ladder: every point through every layer, joined across layers.

Each column is the value (or position, or angle) after a layer; at the last column the
readout's thresholds and the values or arcs each class wins.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ..arith import to_float
from ..errors import InputError
from ..explain import (
    MERGE_RTOL,
    Trace,
    class_arcs,
    class_intervals,
    layer_constants,
    merge_representatives,
    reads,
)
from ..model import LNNet
from .common import (
    SLIDE,
    _alpha,
    _class_handles,
    _figure,
    _setup,
    _subsample_note,
    class_style,
    evenly_spaced,
    integer_ticks,
    require_matplotlib,
)

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure


MAX_COLUMNS = 60
"""Ladder columns shown at most (layers are subsampled evenly beyond)."""
MAX_IDS = 12
"""Points labelled with their ids (at the first and last column) at most."""


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


def _folded_end(net: LNNet[Any], trace: Trace) -> list[int]:
    """Per column ``c < L``: ``-1`` if layer ``c + 1`` folds at the low end of the values it
    reads (its centre at or below their middle: the short side is folded over the long
    one), ``+1`` at the high end, ``0`` if it has no single centre."""
    rd = reads(net)
    out = []
    for c, v in enumerate(trace.values[:-1]):
        a, nxt = rd[c], rd[c + 1]
        if v is None or a is None or nxt is None or net.norm(c).groups != 1:
            out.append(0)
            continue
        centre = not net.norm(c).rms
        s0 = to_float(layer_constants(net, net.layers[c].b, a.col, nxt.row, centre)[0])
        lo, hi = float(np.min(v)), float(np.max(v))
        # near the middle both ends fold onto each other: keep the low end at the bottom
        out.append(0 if not math.isfinite(s0) else 1 if s0 > (lo + hi) / 2 + (hi - lo) / 50 else -1)
    return out


def ladder_columns(
    trace: Trace,
    mode: str,
    sets: Mapping[int, np.ndarray] | None = None,
    folded_end: list[int] | None = None,
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
                if sets is not None and c in sets:  # merged values share a place
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
            for c in range(len(ys) - 1):  # the end the next layer folds at the bottom
                if folded_end is not None and folded_end[c] > 0:
                    ys[c] = -ys[c]
            return (
                cols,
                ys,
                "position in sorted order\n(the end the next layer folds at the bottom)",
            )
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
    return cols, ys, r"angle on the circle / $\pi$ (column 0: value / amplitude)"


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
    order, each column turned so that the end the next layer folds over is at the
    bottom (``_folded_end``), merged values sharing one place: the paper's picture,
    every merge visible), ``"angle"`` (the angle on the
    circle: every layer of width 3), ``"principal"`` (each column's first principal
    coordinate: any net, e.g. a trained one of other widths) or ``"auto"`` (value when
    possible, else angle, else principal).  Lines that meet
    are merges, drawn wider the more points they carry (value and rank modes); with
    ``MAX_IDS`` points or fewer their ids label the first column (and, in rank mode,
    the places of the last); at the last column the readout's thresholds (dashed) and
    the values (or arcs) each class wins (bar) are drawn.
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
    sets = merge_representatives(net, trace, idx) if mode in ("value", "rank") else None
    ends = _folded_end(net, trace) if mode == "rank" else None
    cols, ys, ylabel = ladder_columns(trace, mode, sets if mode == "rank" else None, ends)
    if not cols:
        raise InputError("nothing to draw: no LayerNorm layers and a readout of rank above one")
    sel = evenly_spaced(len(cols), max_columns)
    xs = np.array([cols[i] for i in sel], dtype=float)
    Y = np.array([ys[i] for i in sel])  # (columns, m)
    m, k = points.m, len(net.classes)
    with require_matplotlib().rc_context(SLIDE):
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
        if sets is not None:
            merged = _merged_segments(xs, Y, [sets[cols[i]] for i in sel], colours)
            if merged is not None:
                ax.add_collection(merged)
                handles.append(
                    Line2D([], [], color="0.3", linewidth=4, label="merged values (width: points)")
                )
        if m <= MAX_IDS:  # ids at the last column where places are apart: in rank mode
            _label_ids(ax, xs, Y, last=mode == "rank")
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
        integer_ticks(ax.xaxis)
        ax.set_title(
            f"Ladder: {m} points through {trace.depth} LayerNorm layer"
            f"{'s' * (trace.depth != 1)} ({mode})" + _subsample_note(len(sel), len(cols), "columns")
        )
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        ax.grid(True, axis="x", alpha=0.3)
    return fig


def _merged_segments(
    xs: np.ndarray, Y: np.ndarray, roots: list[np.ndarray], colours: list[str]
) -> Any:
    """The ladder's segments that carry merged values, width growing with the points they carry.

    A segment from column ``c`` to the next is shared by the points merged at ``c``
    (same root); ``None`` if no segment carries two or more points.
    """
    from matplotlib.collections import LineCollection

    segs, widths, cs = [], [], []
    for c in range(len(xs) - 1):
        root = roots[c]
        count = np.bincount(root, minlength=len(root))
        for r in np.nonzero(count > 1)[0]:
            segs.append([(xs[c], Y[c, r]), (xs[c + 1], Y[c + 1, r])])
            widths.append(min(1.0 + 2.0 * math.log2(count[r]), 10.0))
            cs.append(colours[r])
    if not segs:
        return None
    lines = LineCollection(segs, colors=cs, linewidths=widths, alpha=0.6, capstyle="round")
    lines.set_gid("merged-lines")
    return lines


def _label_ids(ax: Any, xs: np.ndarray, Y: np.ndarray, last: bool) -> None:
    """Each point's id left of the first column; at the last (if ``last``) the ids of each place."""
    for k, yk in enumerate(Y[0]):
        ax.annotate(
            str(k),
            (xs[0], yk),
            xytext=(-7, 0),
            textcoords="offset points",
            ha="right",
            va="center",
            fontsize=9,
            gid="point-id",
        )
    if len(xs) == 1 or not last:
        return
    places: dict[float, list[int]] = {}
    for k, yk in enumerate(Y[-1]):
        places.setdefault(round(float(yk), 6), []).append(k)
    for yk, ks in places.items():
        ax.annotate(
            ",".join(map(str, ks)),
            (xs[-1], yk),
            xytext=(0, 7),
            textcoords="offset points",
            ha="center",
            va="bottom",
            fontsize=9,
            gid="point-id",
        )


def _wrap(lo: float, hi: float) -> list[tuple[float, float]]:
    """``[lo, hi]`` (units of pi, ``lo`` in ``[-1, 1)``) as pieces inside ``[-1, 1]``."""
    if hi <= 1:
        return [(lo, hi)]
    return [(lo, 1.0), (-1.0, hi - 2)]
