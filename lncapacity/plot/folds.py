"""Fold maps: each layer's scalar map, value in -> value out, one panel per layer.

Each panel has the map's curve, the points, the layer's centre and fold point, and the
label runs before and after.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..arith import to_float
from ..errors import InputError
from ..explain import Trace, layer_curve, reads
from ..model import LNNet
from .common import (
    MAX_PANELS,
    SLIDE,
    _class_handles,
    _figure,
    _grid,
    _kind,
    _setup,
    _subsample_note,
    class_style,
    evenly_spaced,
    require_matplotlib,
)

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure


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

    from ..explain import layer_constants

    points, idx, trace = _setup(net, X, y, trace)
    if not net.layers:
        raise InputError("the net has no LayerNorm layers: there is no fold to draw")
    rd = reads(net)
    all_layers = list(range(1, net.depth + 1))
    chosen = (
        list(layers)
        if layers is not None
        else [all_layers[i] for i in evenly_spaced(net.depth, max_panels)]
    )
    if bad := [n for n in chosen if not 1 <= n <= net.depth]:
        raise InputError(f"layers {bad} out of range 1..{net.depth}")
    k = len(net.classes)
    present = sorted(set(idx.tolist()))
    with require_matplotlib().rc_context(SLIDE):
        rows, ncols = _grid(len(chosen))
        fig = _figure(max(7.5, 4.2 * ncols + 0.5), 3.6 * rows + 1.4)
        axes = fig.subplots(rows, ncols, squeeze=False)
        for ax in axes.ravel()[len(chosen) :]:
            ax.set_visible(False)
        drawn: set[str] = set()  # the legend names only what some panel shows
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
            drawn.add("map")
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
            if net.norm(layer - 1).groups == 1:  # an LN-G layer has no single centre or fold
                s0, g, kk, a1, a2 = layer_constants(
                    net,
                    net.layers[layer - 1].b,
                    rd[layer - 1].col,
                    rd[layer].row,  # type: ignore[union-attr]
                    not net.norm(layer - 1).rms,
                )
                if math.isfinite(to_float(s0)):  # beyond the float range: off any axis
                    drawn.add("centre")
                    ax.axvline(
                        to_float(s0), color="black", linestyle="--", linewidth=1, gid="centre"
                    )
                if (
                    a1 != 0
                    and g != 0
                    and a2 != 0
                    and math.isfinite(to_float(s0 + a2 * kk / (a1 * g)))
                ):
                    drawn.add("fold point")
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
        handles = _class_handles(net, present)
        for name, line in (
            ("map", Line2D([], [], color="0.45", label="the layer's map")),
            ("centre", Line2D([], [], color="black", linestyle="--", label="centre")),
            ("fold point", Line2D([], [], color="black", linestyle=":", label="fold point")),
            ("map", Line2D([], [], color="0.3", linewidth=5, label="label runs (edges)")),
        ):
            if name in drawn:
                handles.append(line)
        fig.legend(handles=handles, loc="outside lower center", ncol=min(len(handles), 2 * ncols))
        fig.suptitle(
            "Fold maps: value in -> value out" + _subsample_note(len(chosen), net.depth, "layers")
        )
    return fig
