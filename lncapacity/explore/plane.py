"""The plane, step by step (2-D data): what the net has made of every point of the plane.

At step 0 each point of the plane is shaded by the value layer 1 reads (the projection:
parallel bands); at layer ``l`` by the value the next map reads after layer ``l``, each step
shaded over its own range; after the last layer by the class the readout gives (the
decision regions).  This shows the net's own function and nothing added: a fold appears
as a mirror (two bands of the plane that take the same shades, so the next layer cannot
tell them apart), and the last step is where the readout's thresholds cut the last value
into the classes.  Nets whose maps are not rank one have no value per layer: their plane
shows the decision regions at every step.

The grid goes through the net in float64 in blocks of bounded memory
(:func:`lncapacity.explain.trace.block_rows`); its size is bounded by the net's
(:func:`lncapacity.plot.budget.grid_side`).  The points are drawn on top, each with its
certified margin (or why there is none) in its hover.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from flint import fmpq

from ..arith import to_float
from ..explain import Read, block_rows
from ..floats import affine_arrays, layer_arrays, product, run_layer
from ..model import LNNet
from ..plot.common import class_style
from .markup import class_marker, literal

__all__ = ["SIDE", "grid_steps", "plane_points", "plane_step"]

SIDE = 150
"""Cells across (and up) of the plane's grid, at most."""
SHADES = [[0.0, "#f4f4f4"], [1.0, "#4d4d4d"]]
"""Light to dark: a value's place in its step's own range."""


def grid_axes(F: np.ndarray, side: int) -> tuple[np.ndarray, np.ndarray]:
    """The grid's x and y coordinates: the points' box with a margin, ``side`` cells each."""
    lo, hi = F.min(axis=0), F.max(axis=0)
    pad = 0.08 * np.where(hi > lo, hi - lo, 1.0)
    lo, hi = lo - pad, hi + pad
    return np.linspace(lo[0], hi[0], side), np.linspace(lo[1], hi[1], side)


def grid_steps(
    net: LNNet[fmpq],
    rd: Sequence[Read | None],
    gx: np.ndarray,
    gy: np.ndarray,
    steps: Sequence[int],
) -> tuple[dict[int, np.ndarray], np.ndarray]:
    """Every grid cell through the net: the value the next map reads after each of
    ``steps`` (0: the input; only where that map has rank one), and the class the readout
    gives.  In blocks of :func:`~lncapacity.explain.trace.block_rows` cells."""
    G = np.stack(np.meshgrid(gx, gy), axis=-1).reshape(-1, 2)
    eps = to_float(net.eps)
    layers = [layer_arrays(net, j) for j in range(net.depth)]
    R, rb = affine_arrays(net.readout)
    rows = {s: np.array([to_float(c) for c in rd[s].row]) for s in steps if rd[s] is not None}  # type: ignore[union-attr]
    values = {s: np.empty(len(G)) for s in rows}
    win = np.empty(len(G), dtype=np.intp)
    step = block_rows(net)
    with np.errstate(all="ignore"):
        for i in range(0, len(G), step):
            h = G[i : i + step]
            for j in range(net.depth + 1):
                if j in rows:
                    values[j][i : i + step] = h @ rows[j]
                if j < net.depth:
                    h = run_layer(h, layers[j], eps)
            z = product(h, R) + rb
            win[i : i + step] = np.argmax(np.nan_to_num(z, nan=-np.inf), axis=1)
    return values, win


def plane_step(values: np.ndarray | None, win: np.ndarray, side: int, k: int) -> dict[str, Any]:
    """The heatmap of one step: the values shaded over their own range (in 101 levels), or
    the classes when ``values`` is None (the last step, or no value to read)."""
    if values is None:
        scale = []
        for i in range(k):
            colour = class_style(i, k)[0]
            scale += [[i / k, colour], [(i + 1) / k, colour]]
        z = win.reshape(side, side)
        return {"z": z, "zmin": -0.5, "zmax": k - 0.5, "colorscale": scale, "opacity": 0.35}
    f = values[np.isfinite(values)]
    lo, hi = (float(np.min(f)), float(np.max(f))) if len(f) else (0.0, 1.0)
    with np.errstate(all="ignore"):
        level = np.rint(100 * (values - lo) / (hi - lo if hi > lo else 1.0))
    z = np.nan_to_num(level, nan=0.0).astype(np.int8).reshape(side, side)
    return {"z": z, "zmin": 0, "zmax": 100, "colorscale": SHADES, "opacity": 0.6}


def plane_points(
    net: LNNet[fmpq], F: np.ndarray, idx: np.ndarray, ids: np.ndarray, margins: Sequence[str]
) -> list[dict[str, Any]]:
    """The points on the plane, a scatter per class; hover: id in the data, label and
    ``margins[p]`` (the certified margin, or why there is none)."""
    k = len(net.classes)
    out = []
    for i in range(k):
        sel = np.nonzero(idx == i)[0]
        name = literal(net.classes[i])
        out.append(
            {
                "type": "scatter",
                "mode": "markers",
                "x": F[sel, 0],
                "y": F[sel, 1],
                "text": [f"id {ids[p]}<br>label {name}<br>{margins[p]}" for p in sel],
                "hovertemplate": "%{text}<extra></extra>",
                "marker": {
                    **class_marker(i, k, 10 if len(idx) <= 200 else 6),
                    "line": {"color": "black", "width": 0.8},
                },
                "name": f"class {name}",
                "legendgroup": f"class {i}",
                "showlegend": False,
            }
        )
    return out
