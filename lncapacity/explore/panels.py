"""The panels of the layer figure, one step at a time: the ladder's column, LayerNorm's circle
after the layer and the layer's fold map, with the readout drawn at the last layer.

Step 0 is the input (the value layer 1 reads); step ``l`` is layer ``l``.  Every column of
the ladder and every fold map is scaled to its own values (:func:`own_range`), so that a
column of values a hundred times smaller than the next is as legible; hovering gives the
values themselves.  What is drawn is computed once (:class:`Drawn`) by
:mod:`lncapacity.explain`: the float64 trace, the merged groups, the layer maps, the
readout's thresholds (:func:`lncapacity.explain.class_intervals`) and arcs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from flint import fmpq

from ..arith import to_float
from ..explain import (
    Read,
    Trace,
    class_arcs,
    class_intervals,
    fold_points,
    layer_constants,
    layer_curve,
    merge_representatives,
    reads,
)
from ..model import LNNet
from ..plot.common import class_style
from ..plot.ladders import ladder_columns
from .markup import GREY, R3, class_marker, empty, literal, note, read_arrow

__all__ = [
    "Drawn",
    "circle_traces",
    "drawn",
    "fold_traces",
    "ladder_column",
    "ladder_static",
    "ladder_unit",
    "own_range",
]

PAD = 0.08
"""Margin around a panel's values, as a fraction of their span."""


def own_range(v: np.ndarray) -> tuple[float, float]:
    """``(middle, half span)`` of the finite values of ``v`` (half span 1 when they are one
    value): ``(v - middle) / half`` runs from -1 to 1."""
    f = v[np.isfinite(v)]
    if not len(f):
        return 0.0, 1.0
    lo, hi = float(np.min(f)), float(np.max(f))
    return (lo + hi) / 2, (hi - lo) / 2 if hi > lo else 1.0


@dataclass(frozen=True)
class Drawn:
    """Everything the layer figure draws, computed once for the points drawn.

    ``idx``: each point's class index; ``ids``: each point's index in the data (a sample's
    points keep theirs); ``columns``: the ladder's columns, each scaled to its own range in
    ``ys``; ``reps``: per column, each point's merged group named by its smallest point;
    ``intervals``: the classes along the readout's scalar (None without a rank-one readout).
    """

    net: LNNet[fmpq]
    trace: Trace
    idx: np.ndarray
    ids: np.ndarray
    mode: str
    columns: list[int]
    ys: dict[int, np.ndarray]
    reps: dict[int, np.ndarray]
    reads: list[Read | None]
    folds: list[fmpq | None]
    arcs: list[tuple[float, float, int]] | None
    intervals: list[tuple[fmpq | None, fmpq | None, int]] | None

    @property
    def k(self) -> int:
        return len(self.net.classes)

    @property
    def circle(self) -> bool:
        """Whether the layers' outputs lie on LayerNorm's circle (width 3, at least one)."""
        return self.net.depth > 0 and self.trace.on_circle


def drawn(
    net: LNNet[fmpq], trace: Trace, idx: np.ndarray, ids: np.ndarray, columns: Sequence[int]
) -> Drawn:
    """What the layer figure draws at ladder ``columns`` (the steps shown and their inputs)."""
    mode = "value" if trace.has_values else "principal"
    cols = sorted(set(columns))
    # principal coordinates oriented as the static ladder orients them (each like the last)
    raw = trace.values if mode == "value" else ladder_columns(trace, "principal")[1]
    ys = {}
    for c in cols:
        mid, half = own_range(raw[c])  # type: ignore[arg-type]
        ys[c] = (raw[c] - mid) / half  # type: ignore[operator]
    if mode == "value":
        reps = merge_representatives(net, trace, idx, cols)
    else:
        reps = {c: np.arange(len(idx)) for c in cols}
    return Drawn(
        net=net,
        trace=trace,
        idx=idx,
        ids=ids,
        mode=mode,
        columns=cols,
        ys=ys,
        reps=reps,
        reads=reads(net),
        folds=fold_points(net),
        arcs=class_arcs(net) if net.layers and net.width == 3 else None,
        intervals=class_intervals(net) if mode == "value" else None,
    )


# ---------------------------------------------------------------------------
# points, as markers of merged groups


def _by_class(d: Drawn, rep: np.ndarray) -> list[list[list[int]]]:
    """Per class, the merged groups of points (merged points share a representative)."""
    groups: dict[int, list[int]] = {}
    for i, r in enumerate(rep.tolist()):
        groups.setdefault(r, []).append(i)
    out: list[list[list[int]]] = [[] for _ in range(d.k)]
    for g in groups.values():
        out[d.idx[g[0]]].append(g)
    return out


def _ids(d: Drawn, g: Sequence[int]) -> str:
    shown = ", ".join(str(d.ids[i]) for i in g[:12])
    return shown + (f", ... ({len(g)} points)" if len(g) > 12 else "")


def _size(points: int, m: int) -> float:
    """A marker's size: larger the more merged points it holds (at most 28 pixels)."""
    return min(28.0, (9.0 if m <= 40 else 6.0) + 4.0 * math.sqrt(points - 1))


def class_points(
    d: Drawn, rep: np.ndarray, xy: tuple[np.ndarray, np.ndarray], what: str, value: np.ndarray
) -> list[dict[str, Any]]:
    """One scatter per class: a marker per merged group (larger by its number of points),
    hover: the id(s) in the data, the label and ``what`` (the value)."""
    m = len(d.idx)
    out = []
    for i, mine in enumerate(_by_class(d, rep)):
        label = literal(d.net.classes[i])
        text = []
        for g in mine:
            who = f"id {d.ids[g[0]]}" if len(g) == 1 else f"ids {_ids(d, g)}<br>{len(g)} merged"
            v = f"<br>{what} {float(value[g[0]]):.6g}"
            if len(g) > 1 and np.ptp(value[g]) > 0:  # the paper's rule merges with a gap
                v += f" (merged values {float(np.min(value[g])):.6g} to "
                v += f"{float(np.max(value[g])):.6g})"
            text.append(f"{who}<br>label {label}{v}")
        first = [g[0] for g in mine]
        out.append(
            {
                "type": "scatter",
                "mode": "markers",
                "x": xy[0][first],
                "y": xy[1][first],
                "text": text,
                "hovertemplate": "%{text}<extra></extra>",
                "marker": class_marker(i, d.k, [_size(len(g), m) for g in mine]),
                "name": f"class {label}",
                "legendgroup": f"class {i}",
                "showlegend": False,
            }
        )
    return out


# ---------------------------------------------------------------------------
# the ladder


def _last_range(d: Drawn) -> tuple[float, float] | None:
    """The last column's own range, when the readout reads it as one value."""
    v = d.trace.values[d.trace.depth]
    return None if d.intervals is None or v is None else own_range(v)


def ladder_unit(depth: int) -> float:
    """A small step along the ladder's axis (columns 0..depth): 1/40 of its span."""
    return (depth + 1) / 40


def ladder_static(d: Drawn) -> list[dict[str, Any]]:
    """The ladder's lines (a trace per class, points joined across the columns) and the
    readout at the last column: its thresholds (dashed) and the values each class wins
    (bars), scaled as the column is."""
    xs = [float(c) for c in d.columns]
    lines: list[dict[str, Any]] = []
    m = len(d.idx)
    for i in range(d.k):
        x: list[float | None] = []
        y: list[float | None] = []
        for p in np.nonzero(d.idx == i)[0]:
            x += [*xs, None]
            y += [*(float(d.ys[c][p]) for c in d.columns), None]
        lines.append(
            {
                "type": "scatter",
                "mode": "lines",
                "x": x,
                "y": y,
                "line": {"color": class_style(i, d.k)[0], "width": 1},
                "opacity": 1.0 if m <= 40 else max(0.15, 40 / m),
                "hoverinfo": "skip",
                "name": f"class {literal(d.net.classes[i])}",
                "legendgroup": f"class {i}",
                "showlegend": True,
            }
        )
    cut_x: list[float | None] = []
    cut_y: list[float | None] = []
    bars: list[dict[str, Any]] = []
    last = _last_range(d)
    if last is not None and d.intervals is not None and d.columns[-1] == d.trace.depth:
        mid, half = last
        at, u = float(d.trace.depth), ladder_unit(d.trace.depth)
        for lo, hi, c in d.intervals:
            y0 = -1.15 if lo is None else max(-1.15, (to_float(lo) - mid) / half)
            y1 = 1.15 if hi is None else min(1.15, (to_float(hi) - mid) / half)
            if y1 > y0:
                bars.append(
                    {
                        "type": "scatter",
                        "mode": "lines",
                        "x": [at + 2 * u, at + 2 * u],
                        "y": [y0, y1],
                        "line": {"color": class_style(c, d.k)[0], "width": 9},
                        "opacity": 0.6,
                        "hovertemplate": f"the readout gives class {literal(d.net.classes[c])}"
                        "<extra></extra>",
                        "showlegend": False,
                    }
                )
            if hi is not None and -1.15 < (yc := (to_float(hi) - mid) / half) < 1.15:
                cut_x += [at - 3 * u, at + 3 * u, None]
                cut_y += [yc, yc, None]
    cuts = {
        "type": "scatter",
        "mode": "lines",
        "x": cut_x,
        "y": cut_y,
        "line": {"color": "black", "width": 2, "dash": "dash"},
        "hovertemplate": "the readout's threshold<extra></extra>",
        "name": "readout threshold",
        "showlegend": bool(cut_x),
    }
    return [*lines, cuts, *bars]


def ladder_column(d: Drawn, step: int) -> list[dict[str, Any]]:
    """The step's column of the ladder (a marker per merged group) and the band from the
    column the layer reads to the one it writes (dotted)."""
    y = d.ys[step]
    value = d.trace.values[step] if d.mode == "value" else y
    what = "value" if d.mode == "value" else "principal coordinate (scaled)"
    x = np.full(len(y), float(step))
    traces = class_points(d, d.reps[step], (x, y), what, np.asarray(value))
    edges = [step - 1, step] if step else [0]
    bx: list[float | None] = []
    by: list[float | None] = []
    for e in edges:
        bx += [e, e, None]
        by += [-1.2, 1.2, None]
    traces.append(
        {
            "type": "scatter",
            "mode": "lines",
            "x": bx,
            "y": by,
            "line": {"color": "black", "width": 1, "dash": "dot"},
            "hoverinfo": "skip",
            "showlegend": False,
        }
    )
    return traces


# ---------------------------------------------------------------------------
# the circle


def circle_traces(d: Drawn, step: int) -> list[dict[str, Any]]:
    """LayerNorm's output after layer ``step`` on the circle, the direction the next map reads
    (arrow) and, after the last layer, the arcs each class wins: ``k + 3`` traces."""
    if not (d.circle and step):  # without a circle, the figure's own note says so
        words = "the input:<br>no LayerNorm yet" if d.circle else ""
        return [*(empty() for _ in range(d.k + 2)), note(words, 0.0, 0.0)]
    t, r = d.trace.angles[step - 1], d.trace.radius[step - 1]
    traces = class_points(d, d.reps[step], (r * np.cos(t), r * np.sin(t)), "angle/pi", t / math.pi)
    arrow = read_arrow(d.reads[step])
    traces.append(
        empty()
        if arrow is None
        else {
            "type": "scatter",
            "mode": "lines+markers",
            "x": [0.0, float(arrow[0])],
            "y": [0.0, float(arrow[1])],
            "line": {"color": "#404040", "width": 2},
            "marker": {"symbol": "arrow", "angleref": "previous", "size": [0, 14]},
            "hovertemplate": "the direction the next map reads<extra></extra>",
            "showlegend": False,
        }
    )
    ax: list[float | None] = []
    ay: list[float | None] = []
    at: list[str] = []
    ac: list[str] = []
    if step == d.net.depth and d.arcs:
        for s, e, c in d.arcs:
            for a in np.linspace(s, e, max(2, int(40 * (e - s)))):
                ax.append(1.25 * R3 * math.cos(a))
                ay.append(1.25 * R3 * math.sin(a))
                at.append(f"the readout gives class {literal(d.net.classes[c])}")
                ac.append(class_style(c, d.k)[0])
            ax.append(None)
            ay.append(None)
            at.append("")
            ac.append("white")
    traces.append(
        {
            "type": "scatter",
            "mode": "markers",
            "x": ax,
            "y": ay,
            "text": at,
            "marker": {"color": ac, "size": 5},
            "hovertemplate": "%{text}<extra></extra>",
            "showlegend": False,
        }
    )
    traces.append(note(""))
    return traces


# ---------------------------------------------------------------------------
# the fold map


def _vline(x0: float, lo: float, hi: float, what: str, dash: str) -> dict[str, Any]:
    seen = math.isfinite(x0)
    return {
        "type": "scatter",
        "mode": "lines",
        "x": [x0, x0] if seen else [],
        "y": [lo, hi] if seen else [],
        "line": {"color": "black", "width": 1.5, "dash": dash},
        "hovertemplate": f"{what} %{{x:.6g}}<extra></extra>",
        "showlegend": False,
    }


def _thresholds(d: Drawn, x0: float, x1: float, ys: tuple[float, float]) -> dict[str, Any]:
    """The readout's thresholds across the last fold map (dashed), within its range."""
    x: list[float | None] = []
    y: list[float | None] = []
    text: list[str] = []
    for (_, hi, c), (_, _, c2) in zip(d.intervals or [], (d.intervals or [])[1:], strict=False):
        tau = to_float(hi)  # type: ignore[arg-type]
        if ys[0] <= tau <= ys[1]:
            below, above = literal(d.net.classes[c]), literal(d.net.classes[c2])
            words = f"readout threshold {tau:.6g}: class {below} below, {above} above"
            x += [x0, x1, None]
            y += [tau, tau, None]
            text += [words, words, ""]
    return {
        "type": "scatter",
        "mode": "lines",
        "x": x,
        "y": y,
        "text": text,
        "line": {"color": "black", "width": 2, "dash": "dash"},
        "hovertemplate": "%{text}<extra></extra>",
        "showlegend": False,
    }


def _marks(
    d: Drawn, layer: int, span: tuple[float, float], ys: tuple[float, float]
) -> list[dict[str, Any]]:
    """Layer ``layer``'s centre (dashed) and fold point (dotted) where they fall in ``span``
    (none for an LN-G layer, which has no single centre or fold)."""
    net, rd = d.net, d.reads
    centre = fold = math.nan
    a, nxt = rd[layer - 1], rd[layer]
    if net.norm(layer - 1).groups == 1 and a is not None and nxt is not None:
        centred = not net.norm(layer - 1).rms  # RMSNorm: no mean subtracted
        b = net.layers[layer - 1].b
        centre = to_float(layer_constants(net, b, a.col, nxt.row, centred)[0])
        fold = to_float(d.folds[layer - 1]) if d.folds[layer - 1] is not None else math.nan
    out = []
    for x0, what, dash in ((centre, "centre", "dash"), (fold, "fold point", "dot")):
        inside = span[0] <= x0 <= span[1]  # False for NaN
        out.append(_vline(x0 if inside else math.nan, *ys, f"layer {layer}'s {what}", dash))
    return out


def _span(v: np.ndarray) -> tuple[float, float]:
    lo, hi = float(np.nanmin(v)), float(np.nanmax(v))
    pad = PAD * (hi - lo) if hi > lo else 1.0
    return lo - pad, hi + pad


def fold_traces(d: Drawn, step: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Layer ``step``'s map from the value it reads to the value the next map reads, its
    points, centre (dashed), fold point (dotted) and, at the last layer, the readout's
    thresholds; at step 0 the values layer 1 reads, on a line, with layer 1's centre and
    fold point.  ``k + 5`` traces, and the axes' ranges (the step's own values)."""
    net, tr = d.net, d.trace
    vin = tr.values[step - 1] if step else tr.values[0]
    vout = tr.values[step] if step else None
    if not step and vin is not None and net.layers:  # the line the layers fold
        span = _span(vin)
        traces = [
            empty(),
            *class_points(d, d.reps[0], (vin, np.zeros(len(vin))), "value", vin),
            *_marks(d, 1, span, (-0.6, 0.6)),
            empty(),
            note("the line layer 1 folds", float(np.mean(span)), 0.8),
        ]
        return traces, {"x": list(span), "y": [-1.0, 1.0]}
    if step and vin is not None and vout is not None and d.reads[step - 1] is not None:
        lo, hi = float(np.nanmin(vin)), float(np.nanmax(vin))
        span = _span(vin)
        grid = np.linspace(*span, 400)
        curve = layer_curve(net, step, grid, d.reads)
        inside = curve[(grid >= lo) & (grid <= hi)]
        ylo, yhi = _span(np.concatenate([inside, vout]))
        traces = [
            {
                "type": "scatter",
                "mode": "lines",
                "x": grid,
                "y": curve,
                "line": {"color": GREY, "width": 2},
                "hovertemplate": "s = %{x:.4g}<br>s' = %{y:.4g}<extra>the layer's map</extra>",
                "showlegend": False,
            },
            *class_points(d, d.reps[step], (vin, vout), "value out", np.asarray(vout)),
            *_marks(d, step, span, (ylo, yhi)),
            _thresholds(d, *span, (ylo, yhi)) if step == net.depth else empty(),
            note(""),
        ]
        return traces, {"x": list(span), "y": [ylo, yhi]}
    words = (
        "the input: one value per point<br>(the fold maps start at layer 1)"
        if not step
        else "no scalar map<br>(a map of rank above one)"
    )
    return [*(empty() for _ in range(d.k + 4)), note(words)], {"x": [0, 1], "y": [0, 1]}
