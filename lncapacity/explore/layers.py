"""The layer figure: the guided tour and the inspector in one Plotly figure.

A Play button and a slider step through the input (step 0) and the layers; every step
moves the ladder's column (:mod:`.panels`), LayerNorm's circle, the fold map and, for 2-D
data, the plane (:mod:`.plane`) together, and its title is the step's sentence
(:mod:`.tour`).  Each step is a precomputed Plotly frame named by its number.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from flint import fmpq

from ..data import PointSet
from ..explain import Trace
from ..model import LNNet
from ..plot.budget import grid_side
from ..plot.common import evenly_spaced
from .markup import R3, note, require_plotly
from .panels import (
    circle_traces,
    drawn,
    fold_traces,
    ladder_column,
    ladder_static,
    ladder_unit,
)
from .plane import SIDE, grid_axes, grid_steps, plane_points, plane_step

__all__ = ["FRAME_MS", "LAYERS_GLUE", "frame_panels", "layer_figure", "steps_shown"]

FRAME_MS = 1800
"""How long Play shows each step, in milliseconds (time to read its sentence)."""
PLAY = {
    "frame": {"duration": FRAME_MS, "redraw": True},
    "fromcurrent": True,
    "transition": {"duration": 0},
    "mode": "immediate",
}
STEP = {
    "frame": {"duration": 0, "redraw": True},
    "mode": "immediate",
    "transition": {"duration": 0},
}
PAUSE = {**STEP, "frame": {"duration": 0, "redraw": False}}


LAYERS_GLUE = """
var gd = document.getElementById('{plot_id}');
gd.on('plotly_buttonclicked', function (e) {
  var args = e.button.args, options = Object.assign({}, args[1]);
  var slider = gd.layout.sliders[0];
  if (args[0] === null && slider.active === slider.steps.length - 1) {
    options.fromcurrent = false;  // Play at the last step starts again from the input
  }
  Plotly.animate(gd, args[0], options).catch(function () {});  // Pause interrupts Play
});
"""
"""The layer figure's JavaScript beyond Plotly's: its Play and Pause buttons, which start
and stop Plotly's animation of the frames (catching the promise that a pause rejects)."""


def frame_panels(k: int, heat: bool) -> dict[str, slice]:
    """Where each panel's traces are in a frame's ``data`` (``k`` classes): the plane's
    heatmap (when there is a grid), the ladder's column (the classes' markers, the band),
    the circle (the classes, the arrow, the arcs, a note) and the fold map (the curve, the
    classes, the centre, the fold point, the thresholds, a note)."""
    at, out = int(heat), {"plane": slice(0, int(heat))}
    for name, n in (("ladder", k + 1), ("circle", k + 3), ("fold", k + 5)):
        out[name] = slice(at, at + n)
        at += n
    return out


def steps_shown(depth: int, max_layers: int) -> list[int]:
    """Step 0 (the input) and at most ``max_layers`` layers, evenly spaced (first and last
    kept)."""
    return [0, *(n + 1 for n in evenly_spaced(depth, max_layers))]


def _controls(steps: Sequence[int]) -> dict[str, Any]:
    """The Play and Pause buttons (:data:`LAYERS_GLUE` plays) and the step slider (Plotly
    moves it as it plays)."""
    return {
        "updatemenus": [
            {
                "type": "buttons",
                "direction": "left",
                "showactive": False,
                "x": 0.0,
                "xanchor": "left",
                "y": -0.07,
                "yanchor": "top",
                "pad": {"r": 10, "t": 10},
                "buttons": [
                    {"label": "▶ Play", "method": "skip", "args": [None, PLAY]},
                    {"label": "❚❚ Pause", "method": "skip", "args": [[None], PAUSE]},
                ],
            }
        ],
        "sliders": [
            {
                "active": 0,
                "currentvalue": {"prefix": "layer "},
                "x": 0.16,
                "len": 0.84,
                "y": -0.05,
                "pad": {"t": 10},
                "steps": [
                    {
                        "label": str(s) if s else "0: input",
                        "method": "animate",
                        "args": [[str(s)], STEP],
                    }
                    for s in steps
                ],
            }
        ],
    }


def layer_figure(
    net: LNNet[fmpq],
    points: PointSet,
    ids: np.ndarray,
    trace: Trace,
    steps: Sequence[int],
    titles: Mapping[int, str],
    margins: Sequence[str] | None,
) -> tuple[dict[str, Any], list[str]]:
    """The figure (a Plotly figure dict with one frame per step) and notes on what it leaves
    out.  ``points``: the points drawn, ``ids`` their indices in the data; ``titles``: each
    step's sentence; ``margins``: each point's hover line on the plane (2-D data only)."""
    go = require_plotly().graph_objects
    from plotly.subplots import make_subplots

    k = len(net.classes)
    idx = np.array([net.classes.index(c) for c in points.y], dtype=np.intp)
    d = drawn(net, trace, idx, ids, {*steps, *(s - 1 for s in steps if s)})
    plane = points.d == 2
    side = grid_side(net, SIDE) if plane else 0
    notes = []
    if plane and not side:
        notes.append(
            f"The net has {sum(net.widths):,} features: a grid of the plane through it is "
            "beyond the page's budget, so the plane shows the points only."
        )
    cols = 3 if plane else 2
    fig = make_subplots(
        rows=2,
        cols=cols,
        specs=[[{"colspan": cols}, *([None] * (cols - 1))], [{}] * cols],
        row_heights=[0.42, 0.58],
        vertical_spacing=0.11,
        horizontal_spacing=0.07,
        subplot_titles=(
            "",
            "LayerNorm's circle after the layer",
            "fold map: value in, value out",
            *(("the plane through the net",) if plane else ()),
        ),
    )

    def add(traces: list[dict[str, Any]], row: int, col: int) -> list[int]:
        at = len(fig.data)
        for t in traces:
            kind = go.Heatmap if t.get("type") == "heatmap" else go.Scatter
            fig.add_trace(kind(t), row=row, col=col)
        return list(range(at, len(fig.data)))

    add(ladder_static(d), 1, 1)
    a = np.linspace(-math.pi, math.pi, 181)
    ring = {
        "type": "scatter",
        "mode": "lines",
        "x": R3 * np.cos(a),
        "y": R3 * np.sin(a),
        "line": {"color": "#BBBBBB", "width": 1},
        "hoverinfo": "skip",
        "showlegend": False,
    }
    no_circle = "no LayerNorm layers" if not net.layers else "no circle:<br>a layer not of width 3"
    add([ring if d.circle else note(no_circle, 0, 0)], 2, 1)
    heat: dict[int, dict[str, Any]] = {}
    moving: list[int] = []
    if plane:
        F = points.floats()
        if side:
            gx, gy = grid_axes(F, side)
            values, win = grid_steps(net, d.reads, gx, gy, steps)
            for s in steps:
                v = None if s == net.depth else values.get(s)
                heat[s] = {"type": "heatmap", **plane_step(v, win, side, k)}
            base = {"x": gx, "y": gy, "showscale": False, "hoverinfo": "skip", **heat[steps[0]]}
            moving += add([base], 2, 3)
        add(plane_points(net, F, idx, ids, margins or [""] * points.m), 2, 3)
    frames = []
    for s in steps:
        lad, circ = ladder_column(d, s), circle_traces(d, s)
        fold, ranges = fold_traces(d, s)
        if s == steps[0]:
            moving += add(lad, 1, 1) + add(circ, 2, 1) + add(fold, 2, 2)
            first = ranges
        data = ([heat[s]] if heat else []) + lad + circ + fold
        assert len(data) == frame_panels(k, bool(heat))["fold"].stop
        frames.append(
            {
                "name": str(s),
                "data": data,
                "traces": moving,
                "layout": _step_layout(net, s, titles.get(s, ""), ranges),
            }
        )
    fig.update_layout(
        **_controls(steps),
        height=1100,
        width=1240 if plane else 1100,
        template="plotly_white",
        title={"x": 0.01, "xanchor": "left", "y": 0.985, "yanchor": "top", "font": {"size": 14}},
        legend={"orientation": "h", "x": 0.0, "y": -0.16, "yanchor": "top"},
        margin={"t": 150, "b": 190, "l": 60, "r": 30},
    )
    fig.update_xaxes(
        title_text="layer (0: the input)",
        tickvals=list(range(0, net.depth + 1, max(1, math.ceil(net.depth / 20)))),
        range=[-2 * ladder_unit(net.depth), net.depth + 4 * ladder_unit(net.depth)],
        row=1,
        col=1,
    )
    fig.update_yaxes(
        title_text="ladder: value, each column<br>scaled to its own range",
        range=[-1.25, 1.25],
        row=1,
        col=1,
    )
    fig.update_xaxes(range=[-1.4 * R3, 1.4 * R3], row=2, col=1)
    fig.update_yaxes(
        title_text="h . v/|v|", range=[-1.4 * R3, 1.4 * R3], scaleanchor="x2", row=2, col=1
    )
    if plane:
        fig.update_xaxes(title_text="x1", row=2, col=3)
        fig.update_yaxes(title_text="x2", row=2, col=3)
    fig.update_layout(_step_layout(net, steps[0], titles.get(steps[0], ""), first))
    return {**fig.to_dict(), "frames": frames}, notes


def _step_layout(
    net: LNNet[fmpq], step: int, title: str, ranges: Mapping[str, Any]
) -> dict[str, Any]:
    """What a step changes in the layout: the title (its sentence), the fold map's ranges
    and the axis titles."""
    read = "value the readout reads" if step == net.depth else f"value layer {step + 1} reads"
    read = read if step else ""
    return {
        "title": {"text": title},
        "xaxis3": {
            "range": ranges["x"],
            "title": {"text": f"value layer {max(step, 1)} reads"},
        },
        "yaxis3": {"range": ranges["y"], "title": {"text": read}},
        "xaxis2": {"title": {"text": f"after layer {step}: h . u/|u|" if step else "h . u/|u|"}},
    }
