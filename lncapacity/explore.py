"""An interactive explorer: one self-contained HTML page of a net at work.

:func:`page` returns the HTML of three Plotly figures (Plotly's JavaScript inlined, so the
file works offline, with no server):

- **layers**: a layer slider moves the ladder (every point's value after each layer, the
  layer's input and output columns marked), LayerNorm's circle after the layer and the
  layer's fold map (value in -> value out) together; hovering a point gives its id (row of
  the data, from 0), label and value, and points the construction has merged are drawn as
  one marker whose size and hover give their multiplicity;
- **fold playground**: one fold gadget ``h -> (s - c) u + beta v`` (the layer of
  :func:`lncapacity.fileformat.gadget_affine`, ``u = (1, -1, 0)``, ``v = (1, 1, -2)``),
  LayerNorm, then the read ``v + gamma u``: sliders for the centre ``c``, the offset
  ``beta`` and the read ``gamma`` show the line wrapping onto the circle and the fold it
  gives, next to the layer's formula ``s' = (a1 + a2 (s - s0)) / sqrt(g (s - s0)^2 + k)``
  with its exact constants (:func:`lncapacity.explain.scalars.layer_constants`,
  proofs/fold_lemma.md);
- **regions** (2-D data): the class float64 gives each point of the plane, the points on top,
  each with its certified margin (:func:`lncapacity.certify.certify`) in its hover.

Everything shown is computed by the library: the float64 trace, layer curves, merges and
class arcs by :mod:`lncapacity.explain`, the ladder's columns and merged sets as the static
ladder computes them (:mod:`lncapacity.plot`), margins by the certificate.  The page is a
picture, not a proof: the certificate is the proof.  Nets deeper than ``MAX_LAYERS``
layers are subsampled evenly (first and last layer kept), and the page says so.

Needs the ``explore`` extra: ``pip install 'lncapacity[explore]'`` (Plotly).
"""

from __future__ import annotations

import functools
import html
import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from flint import fmpq

from .arith import format_rational, to_float
from .certify import Certificate, certify
from .data import PointSet, points_from_arrays
from .errors import InputError
from .explain import (
    U_HAT,
    V_HAT,
    Read,
    Trace,
    as_points,
    class_arcs,
    float_scores,
    float_trace,
    fold_points,
    layer_constants,
    layer_curve,
    merge_representatives,
    reads,
)
from .fileformat import gadget_affine, read_vector
from .model import Affine, LNNet
from .plot.common import OKABE_ITO, class_style, evenly_spaced
from .plot.ladders import ladder_columns

__all__ = [
    "EXAMPLES",
    "MAX_LAYERS",
    "example",
    "figures",
    "page",
    "playground_figure",
    "require_plotly",
]

MAX_LAYERS = 40
"""Layers the layer slider shows at most (evenly spaced beyond, first and last kept)."""
EXAMPLES = ("xor", "alternating", "iris")
"""The point sets ``lncapacity explore --example`` builds a net for."""
ALTERNATING_POINTS = 16
"""Points of the alternating example: ``(k, k^2 mod 7)`` labelled ``k mod 2`` (notebook 03),
built by the paper's algorithm (``pma``), which merges values."""

PLAYGROUND_C = (-1.0, -0.5, 0.0, 0.5, 1.0)
PLAYGROUND_BETA = (0.1, 0.25, 0.5, 1.0, 2.0)
PLAYGROUND_GAMMA = (-2.0, -1.0, 0.0, 1.0, 2.0)
"""The fold playground's slider values (every combination is a precomputed frame)."""
PLAYGROUND_PARAMETERS = (PLAYGROUND_C, PLAYGROUND_BETA, PLAYGROUND_GAMMA)
PLAYGROUND_S = (-4.0, 4.0)
"""The window of input values ``s`` the playground draws."""

R3 = math.sqrt(3.0)
_GREY = "#777777"


def require_plotly() -> Any:
    """Plotly, or a one-line :class:`~lncapacity.errors.InputError` saying how to install it."""
    try:
        import plotly
    except ImportError:
        raise InputError("the explorer needs Plotly: pip install 'lncapacity[explore]'") from None
    return plotly


# ---------------------------------------------------------------------------
# the bundled examples


def example(name: str) -> tuple[LNNet[fmpq], PointSet]:
    """The net and points of example ``name`` (``EXAMPLES``), built by
    :func:`lncapacity.construct.build.build`.

    ``xor``: the four corners of the square, XOR labels (``runs``).  ``alternating``:
    ``ALTERNATING_POINTS`` points ``(k, k^2 mod 7)`` labelled ``k mod 2``, the paper's
    algorithm (``pma``).  ``iris``: Fisher's 150 flowers (scikit-learn's copy), ``runs``.
    """
    from .construct import build

    if name == "xor":
        points = points_from_arrays([[0, 0], [0, 1], [1, 0], [1, 1]], [0, 1, 1, 0])
        method = "runs"
    elif name == "alternating":
        m = ALTERNATING_POINTS
        points = points_from_arrays([[k, (k * k) % 7] for k in range(m)], [k % 2 for k in range(m)])
        method = "pma"
    elif name == "iris":
        try:
            from sklearn.datasets import load_iris
        except ImportError:
            raise InputError(
                "the iris example needs scikit-learn: pip install scikit-learn"
            ) from None
        iris = load_iris()
        points = points_from_arrays(iris.data, [str(iris.target_names[t]) for t in iris.target])
        method = "runs"
    else:
        raise InputError(f"unknown example {name!r} (choose from {', '.join(EXAMPLES)})")
    return build(points, method=method), points


# ---------------------------------------------------------------------------
# what a point says when hovered


def _groups(rep: np.ndarray) -> list[list[int]]:
    """Point indices grouped by their representative (merged points share one), in order."""
    out: dict[int, list[int]] = {}
    for i, r in enumerate(rep.tolist()):
        out.setdefault(r, []).append(i)
    return list(out.values())


def _ids(g: Sequence[int]) -> str:
    shown = ", ".join(str(i) for i in g[:12])
    return shown + (f", ... ({len(g)} points)" if len(g) > 12 else "")


def _size(mult: int, m: int) -> float:
    base = 9.0 if m <= 40 else 6.0
    return base + 4.0 * math.sqrt(mult - 1)


def _marker(i: int, k: int, sizes: Any) -> dict[str, Any]:
    colour, marker = class_style(i, k)
    symbol = {"o": "circle", "s": "square", "^": "triangle-up", "D": "diamond"}.get(
        marker, "circle"
    )
    return {
        "color": colour,
        "symbol": symbol,
        "size": sizes,
        "line": {"color": "white", "width": 0.5},
    }


def _class_points(
    net: LNNet[fmpq],
    idx: np.ndarray,
    groups: list[list[int]],
    xy: tuple[np.ndarray, np.ndarray],
    what: str,
    value: np.ndarray | None,
) -> list[dict[str, Any]]:
    """One scatter per class: a marker per merged group, hover id(s), label, value."""
    k, m = len(net.classes), len(idx)
    out = []
    for i in range(k):
        mine = [g for g in groups if idx[g[0]] == i]
        x = [float(xy[0][g[0]]) for g in mine]
        y = [float(xy[1][g[0]]) for g in mine]
        text = []
        for g in mine:
            ids = f"id {g[0]}" if len(g) == 1 else f"ids {_ids(g)}<br>{len(g)} merged"
            v = "" if value is None else f"<br>{what} {float(value[g[0]]):.6g}"
            if value is not None and len(g) > 1 and np.ptp(value[g]) > 0:  # the paper's rule
                lo, hi = float(np.min(value[g])), float(np.max(value[g]))
                v += f" (merged values {lo:.6g} to {hi:.6g})"
            text.append(f"{ids}<br>label {html.escape(str(net.classes[i]))}{v}")
        out.append(
            {
                "type": "scatter",
                "mode": "markers",
                "x": x,
                "y": y,
                "text": text,
                "hovertemplate": "%{text}<extra></extra>",
                "marker": _marker(i, k, [_size(len(g), m) for g in mine]),
                "name": f"class {net.classes[i]}",
                "legendgroup": f"class {i}",
                "showlegend": False,
            }
        )
    return out


# ---------------------------------------------------------------------------
# the layer figure


def _empty(name: str = "") -> dict[str, Any]:
    return {"type": "scatter", "x": [], "y": [], "name": name, "showlegend": False}


def _arrow(read: Read | None) -> np.ndarray | None:
    """The direction a map's read points in the plane of the circle (0.8 of its radius), or
    None for a map without a rank-one read or with a read along ``(1, 1, 1)``."""
    if read is None:
        return None
    row = np.array([to_float(c) for c in read.row])
    d = np.array([row @ U_HAT, row @ V_HAT])
    size = float(np.linalg.norm(d))
    return 0.8 * R3 * d / size if size > 0 else None


def _note(text: str, x: float = 0.5, y: float = 0.5) -> dict[str, Any]:
    """A line of text in a panel (a scatter in text mode, so that frames can change it)."""
    return {
        "type": "scatter",
        "mode": "text",
        "x": [x] if text else [],
        "y": [y] if text else [],
        "text": [text] if text else [],
        "textfont": {"size": 15, "color": "#444444"},
        "hoverinfo": "skip",
        "showlegend": False,
    }


def _ladder_static(
    net: LNNet[fmpq], idx: np.ndarray, cols: list[int], ys: list[np.ndarray]
) -> list[dict[str, Any]]:
    """The ladder's lines, one trace per class (points joined across columns)."""
    k, m = len(net.classes), len(idx)
    out = []
    xs = np.array(cols, dtype=float)
    for i in range(k):
        x: list[float | None] = []
        y: list[float | None] = []
        for p in np.nonzero(idx == i)[0]:
            x += [*xs.tolist(), None]
            y += [*(float(v[p]) for v in ys), None]
        out.append(
            {
                "type": "scatter",
                "mode": "lines",
                "x": x,
                "y": y,
                "line": {"color": class_style(i, k)[0], "width": 1},
                "opacity": 1.0 if m <= 40 else max(0.15, 40 / m),
                "hoverinfo": "skip",
                "name": f"class {net.classes[i]}",
                "legendgroup": f"class {i}",
                "showlegend": True,
            }
        )
    return out


def _layer_frame(
    net: LNNet[fmpq],
    trace: Trace,
    idx: np.ndarray,
    sets: list[np.ndarray],
    cols: list[int],
    ys: list[np.ndarray],
    layer: int,
    folds: list[fmpq | None],
    arcs: list[tuple[float, float, int]] | None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The traces that move with the slider at ``layer`` (ladder columns, circle, fold map)."""
    k = len(net.classes)
    rd = reads(net)
    traces: list[dict[str, Any]] = []
    # the ladder: the layer's output column (merged points as one marker) and its input's band
    c_out = cols.index(layer) if layer in cols else None
    if c_out is not None:
        y = ys[c_out]
        x = np.full(len(y), float(layer))
        traces += _class_points(net, idx, _groups(sets[layer]), (x, y), "value/amplitude", y)
    else:
        traces += [_empty() for _ in range(k)]
    traces.append(
        {
            "type": "scatter",
            "mode": "lines",
            "x": [layer - 1, layer - 1, None, layer, layer],
            "y": [-1.15, 1.15, None, -1.15, 1.15],
            "line": {"color": "black", "width": 1, "dash": "dot"},
            "hoverinfo": "skip",
            "showlegend": False,
        }
    )
    # the circle after the layer
    if trace.on_circle:
        t, r = trace.angles[layer - 1], trace.radius[layer - 1]
        xy = (r * np.cos(t), r * np.sin(t))
        traces += _class_points(net, idx, _groups(sets[layer]), xy, "angle/pi", t / math.pi)
        d = _arrow(rd[layer])
        if d is not None:
            traces.append(
                {
                    "type": "scatter",
                    "mode": "lines+markers",
                    "x": [0.0, float(d[0])],
                    "y": [0.0, float(d[1])],
                    "line": {"color": "#404040", "width": 2},
                    "marker": {"symbol": "arrow", "angleref": "previous", "size": [0, 14]},
                    "hovertemplate": "the direction the next map reads<extra></extra>",
                    "showlegend": False,
                }
            )
        else:
            traces.append(_empty())
        ax: list[float | None] = []
        ay: list[float | None] = []
        at: list[str] = []
        ac: list[str] = []
        if layer == net.depth and arcs:
            for s, e, c in arcs:
                for a in np.linspace(s, e, max(2, int(40 * (e - s)))):
                    ax.append(1.25 * R3 * math.cos(a))
                    ay.append(1.25 * R3 * math.sin(a))
                    at.append(f"the readout gives class {net.classes[c]}")
                    ac.append(class_style(c, k)[0])
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
    else:
        traces += [_empty() for _ in range(k + 2)]
    # the fold map of the layer
    vin, vout = trace.values[layer - 1], trace.values[layer]
    layout: dict[str, Any] = {}
    if vin is not None and vout is not None and rd[layer - 1] is not None:
        lo, hi = float(np.min(vin)), float(np.max(vin))
        pad = 0.08 * (hi - lo) if hi > lo else 1.0
        grid = np.linspace(lo - pad, hi + pad, 400)
        curve = layer_curve(net, layer, grid, rd)
        traces.append(
            {
                "type": "scatter",
                "mode": "lines",
                "x": grid,
                "y": curve,
                "line": {"color": _GREY, "width": 2},
                "hovertemplate": "s = %{x:.4g}<br>s' = %{y:.4g}<extra>the layer's map</extra>",
                "showlegend": False,
            }
        )
        traces += _class_points(
            net, idx, _groups(sets[layer]), (vin, vout), "value out", np.asarray(vout)
        )
        ylo, yhi = float(np.nanmin(curve)), float(np.nanmax(curve))
        marks: list[tuple[fmpq | None, str, str]] = [(None, "centre", "dash"), (None, "", "dot")]
        if net.norm(layer - 1).groups == 1:  # an LN-G layer has no single centre or fold
            s0 = layer_constants(
                net,
                net.layers[layer - 1].b,
                rd[layer - 1].col,  # type: ignore[union-attr]
                rd[layer].row,  # type: ignore[union-attr]
            )[0]
            marks = [(s0, "centre", "dash"), (folds[layer - 1], "fold point", "dot")]
        for where, what, dash in marks:
            x0 = to_float(where) if where is not None else math.nan
            seen = math.isfinite(x0) and lo - pad <= x0 <= hi + pad
            traces.append(
                {
                    "type": "scatter",
                    "mode": "lines",
                    "x": [x0, x0] if seen else [],
                    "y": [ylo, yhi] if seen else [],
                    "line": {"color": "black", "width": 1.5, "dash": dash},
                    "hovertemplate": f"{what} %{{x:.6g}}<extra></extra>",
                    "showlegend": False,
                }
            )
        ypad = 0.08 * (yhi - ylo) if yhi > ylo else 1.0
        layout = {
            "xaxis3": {"range": [lo - pad, hi + pad]},
            "yaxis3": {"range": [ylo - ypad, yhi + ypad]},
        }
        traces.append(_note(""))
    else:
        traces += [_empty() for _ in range(k + 3)]
        traces.append(_note("no scalar map<br>(a map of rank above one)"))
        layout = {"xaxis3": {"range": [0, 1]}, "yaxis3": {"range": [0, 1]}}
    kind = net.layers[layer - 1].meta.get("kind")
    layout.setdefault("xaxis3", {})["title"] = {
        "text": f"value read by layer {layer}" + (f" ({kind})" if kind else "")
    }
    layout["xaxis2"] = {"title": {"text": f"after layer {layer}: h . u/|u|"}}
    last = "value the readout reads" if layer == net.depth else f"value layer {layer + 1} reads"
    layout.setdefault("yaxis3", {})["title"] = {"text": last}
    return traces, layout


def _layer_figure(
    net: LNNet[fmpq], points: PointSet, trace: Trace, max_layers: int
) -> tuple[Any, list[int]]:
    """The ladder, the circle and the fold map, with a layer slider over precomputed frames."""
    go = require_plotly().graph_objects
    from plotly.subplots import make_subplots

    idx = np.array([net.classes.index(c) for c in points.y], dtype=np.intp)
    k = len(net.classes)
    mode = "value" if trace.has_values else "principal"
    cols, ys, ylabel = ladder_columns(trace, mode)
    sets = merge_representatives(net, trace, idx)
    shown = [n + 1 for n in evenly_spaced(net.depth, max_layers)]
    keep = set(shown) | {n - 1 for n in shown}
    chosen_cols = [c for c in cols if c in keep]
    chosen_ys = [ys[cols.index(c)] for c in chosen_cols]
    folds = fold_points(net)
    arcs = class_arcs(net) if net.width == 3 and trace.on_circle else None
    fig = make_subplots(
        rows=2,
        cols=2,
        specs=[[{"colspan": 2}, None], [{}, {}]],
        row_heights=[0.45, 0.55],
        vertical_spacing=0.12,
        horizontal_spacing=0.1,
        subplot_titles=("ladder: every point's value after each layer", "circle", "fold map"),
    )
    static = _ladder_static(net, idx, chosen_cols, chosen_ys)
    n_static = len(static) + 1
    for t in static:
        fig.add_trace(go.Scatter(t), row=1, col=1)
    a = np.linspace(-math.pi, math.pi, 181)
    circle = (
        go.Scatter(
            x=R3 * np.cos(a),
            y=R3 * np.sin(a),
            mode="lines",
            line={"color": "#BBBBBB", "width": 1},
            hoverinfo="skip",
            showlegend=False,
        )
        if trace.on_circle
        else go.Scatter(_note("no circle:<br>some layer is not of width 3", 0.0, 0.0))
    )
    fig.add_trace(circle, row=2, col=1)
    frames = []
    where = [(1, 1)] * (k + 1) + [(2, 1)] * (k + 2) + [(2, 2)] * (k + 4)
    for n, layer in enumerate(shown):
        traces, layout = _layer_frame(net, trace, idx, sets, cols, ys, layer, folds, arcs)
        if n == 0:
            for t, (r, c) in zip(traces, where, strict=True):
                fig.add_trace(go.Scatter(t), row=r, col=c)
            first_layout = layout
        frames.append(
            {
                "name": str(layer),
                "data": traces,
                "traces": list(range(n_static, n_static + len(traces))),
                "layout": layout,
            }
        )
    steps = [
        {
            "label": str(layer),
            "method": "animate",
            "args": [
                [str(layer)],
                {
                    "mode": "immediate",
                    "frame": {"duration": 0, "redraw": True},
                    "transition": {"duration": 0},
                },
            ],
        }
        for layer in shown
    ]
    fig.update_layout(
        sliders=[
            {
                "active": 0,
                "currentvalue": {"prefix": "layer "},
                "pad": {"t": 40},
                "steps": steps,
            }
        ],
        height=950,
        width=1100,
        template="plotly_white",
        legend={"orientation": "h", "y": 1.06, "x": 0},
        margin={"t": 90},
    )
    fig.update_xaxes(
        title_text="layer (0 = projection of the input)",
        dtick=max(1, math.ceil(net.depth / 20)),  # integer ticks
        row=1,
        col=1,
    )
    fig.update_yaxes(title_text=ylabel.split("\n")[0], range=[-1.15, 1.15], row=1, col=1)
    fig.update_xaxes(title_text="h . u/|u|", range=[-1.4 * R3, 1.4 * R3], row=2, col=1)
    fig.update_yaxes(
        title_text="h . v/|v|", range=[-1.4 * R3, 1.4 * R3], scaleanchor="x2", row=2, col=1
    )
    fig.update_layout(first_layout)  # the first frame's axis titles and ranges
    return {**fig.to_dict(), "frames": frames}, shown


# ---------------------------------------------------------------------------
# the fold playground


def _gadget(c: fmpq, beta: fmpq, gamma: fmpq) -> LNNet[fmpq]:
    """One fold layer ``s -> (s - c) u + beta v`` read by ``v + gamma u`` (eps = 0)."""
    layer = gadget_affine([fmpq(1)], c, beta, fmpq(1))
    readout = Affine((read_vector((fmpq(1), gamma)),), (fmpq(0),))
    return LNNet(1, 3, fmpq(0), (layer,), readout, ("s'",))


def _q(x: float) -> fmpq:
    return fmpq(*float(x).as_integer_ratio())


def _playground_frame(
    c: float, beta: float, gamma: float
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The traces of one gadget (plane, circle, fold) and the layout: its formula with exact
    constants in the title, the range of the fold."""
    net = _gadget(_q(c), _q(beta), _q(gamma))
    s = np.linspace(*PLAYGROUND_S, 161)
    samples = np.linspace(*PLAYGROUND_S, 17)
    tr = float_trace(net, samples[:, None])
    t, r = tr.angles[0], tr.radius[0]
    h = np.stack([samples - c, np.full(len(samples), beta)], axis=1)  # coordinates along u, v
    line_x, line_y = h[:, 0] * math.sqrt(2.0), h[:, 1] * math.sqrt(6.0)
    cx, cy = r * np.cos(t), r * np.sin(t)
    rays_x: list[float | None] = []
    rays_y: list[float | None] = []
    for j in range(len(samples)):
        rays_x += [float(line_x[j]), float(cx[j]), None]
        rays_y += [float(line_y[j]), float(cy[j]), None]
    full = float_trace(net, s[:, None])
    arc_x, arc_y = full.radius[0] * np.cos(full.angles[0]), full.radius[0] * np.sin(full.angles[0])
    rd = reads(net)
    arrow = _arrow(rd[1])  # the read v + gamma u is never zero
    d = np.zeros(2) if arrow is None else arrow
    curve = layer_curve(net, 1, s, rd)
    s0, g, k, a1, a2 = layer_constants(net, net.layers[0].b, rd[0].col, rd[1].row)  # type: ignore[union-attr]
    fold = fold_points(net)[0]
    marks = {"color": samples, "colorscale": "Viridis", "size": 8, "cmin": PLAYGROUND_S[0]}
    marks["cmax"] = PLAYGROUND_S[1]
    hover = "s = %{customdata:.3g}<extra></extra>"
    lo, hi = float(np.min(curve)), float(np.max(curve))
    traces = [
        {
            "x": line_x,
            "y": line_y,
            "mode": "lines",
            "line": {"color": _GREY, "width": 2},
            "hoverinfo": "skip",
        },
        {
            "x": rays_x,
            "y": rays_y,
            "mode": "lines",
            "line": {"color": "#BBBBBB", "width": 1},
            "hoverinfo": "skip",
        },
        {
            "x": arc_x,
            "y": arc_y,
            "mode": "lines",
            "line": {"color": OKABE_ITO[0], "width": 4},
            "hoverinfo": "skip",
        },
        {
            "x": line_x,
            "y": line_y,
            "mode": "markers",
            "marker": marks,
            "customdata": samples,
            "hovertemplate": hover,
        },
        {
            "x": cx,
            "y": cy,
            "mode": "markers",
            "marker": marks,
            "customdata": samples,
            "hovertemplate": hover,
        },
        {
            "x": [0.0, float(d[0])],
            "y": [0.0, float(d[1])],
            "mode": "lines+markers",
            "line": {"color": OKABE_ITO[4], "width": 3},
            "marker": {"symbol": "arrow", "angleref": "previous", "size": [0, 16]},
            "hovertemplate": "the read v + gamma u<extra></extra>",
        },
        {
            "x": s,
            "y": curve,
            "mode": "lines",
            "line": {"color": OKABE_ITO[0], "width": 3},
            "hovertemplate": "s = %{x:.3g}<br>s' = %{y:.4g}<extra></extra>",
        },
        {
            "x": samples,
            "y": layer_curve(net, 1, samples, rd),
            "mode": "markers",
            "marker": marks,
            "customdata": samples,
            "hovertemplate": hover,
        },
    ]
    for where, what, dash in ((s0, "centre s0", "dash"), (fold, "fold point", "dot")):
        x0 = to_float(where) if where is not None else math.nan
        seen = PLAYGROUND_S[0] <= x0 <= PLAYGROUND_S[1]  # False for NaN
        traces.append(
            {
                "x": [x0, x0] if seen else [],
                "y": [lo, hi] if seen else [],
                "mode": "lines",
                "line": {"color": "black", "width": 1.5, "dash": dash},
                "hovertemplate": f"{what} %{{x:.4g}}<extra></extra>",
            }
        )
    for tr_ in traces:
        tr_.update({"type": "scatter", "showlegend": False})

    def q(x: fmpq) -> str:
        return format_rational(x) if x.q < 1000 else f"{to_float(x):.4g}"

    shift = "s" if s0 == 0 else f"(s - {q(s0)})" if s0 > 0 else f"(s + {q(-s0)})"
    slope = "" if a2 == 0 else f" + {q(a2)} {shift}" if a2 > 0 else f" - {q(-a2)} {shift}"
    top = f"({q(a1)}{slope})" if slope else q(a1)
    where = "" if fold is None else f", fold point {q(fold)}"
    formula = (
        f"s' = {top} / sqrt({q(g)} {shift}<sup>2</sup> + {q(k)})"
        f"<br><sup>c = {c:g}, beta = {beta:g}, gamma = {gamma:g}: centre s0 = {q(s0)}{where}</sup>"
    )
    pad = 0.06 * (hi - lo) if hi > lo else 1.0
    return traces, {"title": {"text": formula}, "yaxis2": {"range": [lo - pad, hi + pad]}}


@functools.cache
def playground_figure() -> Any:
    """The fold playground: sliders for ``c``, ``beta`` and ``gamma`` over precomputed frames.

    The same figure (a Plotly figure dict, computed once: do not change it) for every page.

    Every combination of ``PLAYGROUND_C``, ``PLAYGROUND_BETA`` and
    ``PLAYGROUND_GAMMA`` is a frame named ``"i-j-k"`` (the sliders' positions); the
    page's glue (``PLAYGROUND_GLUE``) shows the frame of the three sliders' positions.
    """
    go = require_plotly().graph_objects
    from plotly.subplots import make_subplots

    fig = make_subplots(
        rows=1,
        cols=2,
        horizontal_spacing=0.1,
        subplot_titles=(
            "the line (s - c) u + beta v, wrapped onto the circle by LayerNorm",
            "the fold: s' = (v + gamma u) . LN(h)",
        ),
    )
    start = (2, 2, 2)
    frames = []
    combos = itertools.product(
        range(len(PLAYGROUND_C)), range(len(PLAYGROUND_BETA)), range(len(PLAYGROUND_GAMMA))
    )
    for i, j, n in combos:
        traces, layout = _playground_frame(PLAYGROUND_C[i], PLAYGROUND_BETA[j], PLAYGROUND_GAMMA[n])
        name = f"{i}-{j}-{n}"
        if (i, j, n) == start:
            for t_n, t in enumerate(traces):
                fig.add_trace(go.Scatter(t), row=1, col=1 if t_n < 6 else 2)
            first = layout
        frames.append({"name": name, "data": traces, "layout": layout})
    a = np.linspace(-math.pi, math.pi, 181)
    fig.add_trace(
        go.Scatter(
            x=R3 * np.cos(a),
            y=R3 * np.sin(a),
            mode="lines",
            hoverinfo="skip",
            showlegend=False,
            line={"color": "#DDDDDD", "width": 1, "dash": "dot"},
        ),
        row=1,
        col=1,
    )

    def slider(n: int, name: str, values: Sequence[float]) -> dict[str, Any]:
        return {
            "active": start[n],
            "currentvalue": {"prefix": f"{name} = "},
            "steps": [{"label": f"{v:g}", "method": "skip", "args": [None]} for v in values],
            "x": 0.0 + 0.34 * n,
            "len": 0.3,
            "y": -0.08,
            "pad": {"t": 30},
            "name": name,
        }

    fig.update_layout(
        sliders=[
            slider(0, "centre c", PLAYGROUND_C),
            slider(1, "beta", PLAYGROUND_BETA),
            slider(2, "gamma", PLAYGROUND_GAMMA),
        ],
        height=620,
        width=1100,
        template="plotly_white",
        margin={"t": 110, "b": 150},
    )
    lim = 1.1 * math.sqrt(2.0) * max(abs(PLAYGROUND_S[0]), abs(PLAYGROUND_S[1]))
    fig.update_xaxes(title_text="h . u/|u|", range=[-lim / 2, lim / 2], row=1, col=1)
    fig.update_yaxes(
        title_text="h . v/|v|",
        range=[-2.2, 1.05 * math.sqrt(6.0) * max(PLAYGROUND_BETA)],
        scaleanchor="x",
        row=1,
        col=1,
    )
    fig.update_xaxes(
        title_text="s (the value the layer reads)", range=list(PLAYGROUND_S), row=1, col=2
    )
    fig.update_yaxes(title_text="s' (the value the next map reads)", row=1, col=2)
    fig.update_layout(first)  # the first frame's formula and range
    return {**fig.to_dict(), "frames": frames}


PLAYGROUND_GLUE = """
var gd = document.getElementById('{plot_id}');
gd.on('plotly_sliderchange', function () {
  var name = gd.layout.sliders.map(function (s) { return s.active; }).join('-');
  Plotly.animate(gd, [name], {mode: 'immediate', transition: {duration: 0},
                              frame: {duration: 0, redraw: true}});
});
"""
"""The page's only JavaScript beyond Plotly's: Plotly's sliders each drive one frame list,
so this joins the three sliders' positions into the name of the frame to show."""


# ---------------------------------------------------------------------------
# decision regions


def _regions_figure(
    net: LNNet[fmpq], points: PointSet, cert: Certificate, resolution: int = 300
) -> Any:
    """The class float64 gives on a grid of the plane, the points with their certified margin."""
    go = require_plotly().graph_objects
    F = points.floats()
    idx = np.array([net.classes.index(c) for c in points.y], dtype=np.intp)
    k = len(net.classes)
    lo, hi = F.min(axis=0), F.max(axis=0)
    pad = 0.08 * np.where(hi > lo, hi - lo, 1.0)
    lo, hi = lo - pad, hi + pad
    gx, gy = np.linspace(lo[0], hi[0], resolution), np.linspace(lo[1], hi[1], resolution)
    G = np.stack(np.meshgrid(gx, gy), axis=-1).reshape(-1, 2)
    z = float_scores(net, G)
    win = np.argmax(np.nan_to_num(z, nan=-np.inf), axis=1).reshape(resolution, resolution)
    scale = []
    for i in range(k):
        colour = class_style(i, k)[0]
        scale += [[i / k, colour], [(i + 1) / k, colour]]
    fig = go.Figure()
    fig.add_trace(
        go.Heatmap(
            x=gx,
            y=gy,
            z=win,
            zmin=-0.5,
            zmax=k - 0.5,
            colorscale=scale,
            opacity=0.3,
            showscale=False,
            hoverinfo="skip",
        )
    )
    for i in range(k):
        sel = np.nonzero(idx == i)[0]
        text = []
        for p in sel:
            pr = cert.points[p]
            ok = "certified" if pr.certified else "NOT certified"
            name = html.escape(str(net.classes[i]))
            text.append(f"id {p}<br>label {name}<br>margin {pr.margin:.4g} ({ok})")
        fig.add_trace(
            go.Scatter(
                x=F[sel, 0],
                y=F[sel, 1],
                mode="markers",
                text=text,
                hovertemplate="%{text}<extra></extra>",
                marker={
                    **_marker(i, k, 11 if points.m <= 200 else 7),
                    "line": {"color": "black", "width": 0.8},
                },
                name=f"class {net.classes[i]}",
            )
        )
    fig.update_layout(
        title=f"Decision regions in float64 ({resolution}x{resolution} grid); "
        f"{cert.certified}/{len(cert.points)} points certified (hover: the certified margin)",
        xaxis_title="x1",
        yaxis_title="x2",
        height=620,
        width=900,
        template="plotly_white",
    )
    return fig.to_dict()


# ---------------------------------------------------------------------------
# the page


def figures(
    net: LNNet[fmpq],
    X: Any,
    y: Any = None,
    *,
    certificate: Certificate | None = None,
    max_layers: int = MAX_LAYERS,
) -> tuple[dict[str, Any], list[str]]:
    """The page's Plotly figures by name (``layers``, ``playground``, ``regions``) and notes.

    ``layers`` needs at least one LayerNorm layer, ``regions`` 2-D points (the certificate
    is computed when not given); each note says what is left out or subsampled, and why.
    """
    require_plotly()
    points = as_points(net, X, y)
    trace = float_trace(net, points)
    figs: dict[str, Any] = {}
    notes: list[str] = []
    if not net.layers:
        notes.append("The net has no LayerNorm layers: there is no layer to slide through.")
    elif not (trace.has_values or trace.principal):
        notes.append("The layer view needs the values of the layers.")
    else:
        figs["layers"], shown = _layer_figure(net, points, trace, max_layers)
        if len(shown) < net.depth:
            notes.append(
                f"The net has {net.depth} layers, too deep to show whole: the layer slider "
                f"shows {len(shown)} of them, evenly spaced (first and last kept)."
            )
        if not trace.on_circle:
            notes.append("Some layer is not of width 3: there is no circle to show.")
    figs["playground"] = playground_figure()
    if points.d == 2:
        cert = certificate if certificate is not None else certify(net, points)
        figs["regions"] = _regions_figure(net, points, cert)
    else:
        notes.append(f"The points have {points.d} features: decision regions need 2.")
    return figs, notes


_CAPTIONS = {
    "layers": "<b>Layers.</b> Move the slider: the ladder marks the layer's input (left dotted "
    "line) and output (right) columns, the circle shows LayerNorm's output after the layer "
    "(the arrow: the direction the next map reads; after the last layer the arcs each class "
    "wins), the fold map the layer's map from the value it reads to the value the next map "
    "reads (dashed: the centre; dotted: the fold point). Hover a point for its id, label and "
    "value; points merged by the construction are one larger marker (hover: how many).",
    "playground": "<b>Fold playground.</b> One fold gadget: the input value s draws the line "
    "(s - c) u + beta v in the plane orthogonal to (1, 1, 1); LayerNorm scales it onto the "
    "circle of radius sqrt 3 (grey rays), and the read v + gamma u turns the arc into the next "
    "value s'. Colours follow s. The title is the layer's map with its exact constants "
    "(proofs/fold_lemma.md). Move the three sliders.",
    "regions": "<b>Decision regions.</b> The class float64 gives each point of the plane, the "
    "points on top; hover a point for its certified margin (the certificate is the proof, the "
    "regions a float64 picture).",
}


def page(
    net: LNNet[fmpq],
    X: Any,
    y: Any = None,
    *,
    certificate: Certificate | None = None,
    max_layers: int = MAX_LAYERS,
    title: str = "lncapacity explorer",
) -> str:
    """One self-contained HTML page (Plotly's JavaScript inlined) of :func:`figures`."""
    figs, notes = figures(net, X, y, certificate=certificate, max_layers=max_layers)
    points = as_points(net, X, y)
    parts = []
    first = True
    for name, fig in figs.items():
        div = require_plotly().io.to_html(
            fig,
            validate=False,
            full_html=False,
            include_plotlyjs=first,
            div_id=f"explore-{name}",
            auto_play=False,
            post_script=PLAYGROUND_GLUE if name == "playground" else None,
            config={"displaylogo": False},
        )
        first = False
        parts.append(f'<section id="{name}"><p>{_CAPTIONS[name]}</p>{div}</section>')
    note = "".join(f'<p class="note">{html.escape(n)}</p>' for n in notes)
    summary = (
        f"{points.m} points, {points.d} features, classes "
        f"{', '.join(str(c) for c in net.classes)}; a net of depth {net.depth}"
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title>"
        "<style>body{font-family:sans-serif;max-width:1140px;margin:1em auto;color:#222}"
        ".note{background:#fff4d6;padding:.4em .8em;border-left:4px solid #E69F00}"
        "section{margin-bottom:2em}</style></head><body>"
        f"<h1>{html.escape(title)}</h1><p>{html.escape(summary)}. Everything here is float64, "
        "a picture of the net; the certificate is the proof.</p>"
        f"{note}{''.join(parts)}</body></html>\n"
    )
