"""The fold playground: one fold gadget with sliders for its centre, offset and read.

One layer ``h -> (s - c) u + beta v`` (:func:`lncapacity.fileformat.gadget_affine`,
``u = (1, -1, 0)``, ``v = (1, 1, -2)``), LayerNorm, then the read ``v + gamma u``: the line
wrapping onto the circle and the fold it gives, next to the layer's formula
``s' = (a1 + a2 (s - s0)) / sqrt(g (s - s0)^2 + k)`` with its exact constants
(:func:`lncapacity.explain.scalars.layer_constants`, proofs/fold_lemma.md).  Every
combination of the sliders' values is a precomputed frame.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from flint import fmpq

from ..arith import format_rational, to_float
from ..explain import float_trace, fold_points, layer_constants, layer_curve, reads
from ..fileformat import gadget_affine, read_vector
from ..model import Affine, LNNet
from ..plot.common import OKABE_ITO
from .markup import GREY, R3, read_arrow, require_plotly

__all__ = [
    "PLAYGROUND_BETA",
    "PLAYGROUND_C",
    "PLAYGROUND_GAMMA",
    "PLAYGROUND_GLUE",
    "PLAYGROUND_PARAMETERS",
    "PLAYGROUND_S",
    "playground_figure",
]

PLAYGROUND_C = (-1.0, -0.5, 0.0, 0.5, 1.0)
PLAYGROUND_BETA = (0.1, 0.25, 0.5, 1.0, 2.0)
PLAYGROUND_GAMMA = (-2.0, -1.0, 0.0, 1.0, 2.0)
"""The fold playground's slider values (every combination is a precomputed frame)."""
PLAYGROUND_PARAMETERS = (PLAYGROUND_C, PLAYGROUND_BETA, PLAYGROUND_GAMMA)
PLAYGROUND_S = (-4.0, 4.0)
"""The window of input values ``s`` the playground draws."""


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
    arrow = read_arrow(rd[1])  # the read v + gamma u is never zero
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
            "line": {"color": GREY, "width": 2},
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
