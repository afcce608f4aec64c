"""The folds as an animated GIF, one frame per layer, for static pages and presentations.

Each frame is one layer: its fold map (value in -> value out, the layer's map and the
points, as :func:`~.folds.fold_maps` draws a panel) beside LayerNorm's circle after it (as
:func:`~.circle_views.circles`).  Made with Matplotlib's animation (``FuncAnimation``) and
written by its ``PillowWriter``.
"""

from __future__ import annotations

import math
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from .. import fileformat
from ..arith import to_float
from ..errors import InputError
from ..explain import Trace, fold_points, layer_curve, reads
from ..model import LNNet
from .budget import sample_note
from .common import (
    SLIDE,
    _class_handles,
    _figure,
    _kind,
    _setup,
    class_style,
    evenly_spaced,
    require_matplotlib,
)

MAX_FRAMES = 60
"""Frames (layers) at most; deeper nets are subsampled evenly, first and last layer kept."""


def _points(ax: Any, x: np.ndarray, y: np.ndarray, idx: np.ndarray, k: int) -> None:
    for i in sorted(set(idx.tolist())):
        colour, marker = class_style(i, k)
        sel = idx == i
        ax.scatter(
            x[sel], y[sel], s=36 if len(idx) <= 40 else 10, color=colour, marker=marker, zorder=3
        )


def fold_animation(
    net: LNNet[Any],
    X: Any,
    y: Any = None,
    *,
    max_frames: int = MAX_FRAMES,
    trace: Trace | None = None,
    sample_of: int | None = None,
) -> tuple[Any, list[int]]:
    """A Matplotlib ``FuncAnimation`` with one frame per layer, and the layers shown.

    Layers beyond ``max_frames`` are subsampled evenly (first and last kept; the title
    says so).  ``sample_of``: the number of points ``X`` is a sample of (the title says
    so).  Raises :class:`~lncapacity.errors.InputError` for a net without layers.
    """
    from matplotlib.animation import FuncAnimation
    from matplotlib.transforms import blended_transform_factory

    points, idx, trace = _setup(net, X, y, trace)
    if not net.layers:
        raise InputError("the net has no LayerNorm layers: there is no fold to animate")
    rd = reads(net)
    folds = fold_points(net)
    k = len(net.classes)
    layers = [n + 1 for n in evenly_spaced(net.depth, max_frames)]
    note = "" if len(layers) == net.depth else f" ({len(layers)} of {net.depth} shown)"
    if sampled := sample_note(points.m, sample_of or points.m):
        note += f"\n{sampled}"
    circle = trace.on_circle
    R3 = math.sqrt(3.0)
    with require_matplotlib().rc_context(SLIDE):
        fig = _figure(11 if circle else 6, 5.2)
        axes = fig.subplots(1, 2 if circle else 1, squeeze=False)[0]
        present = sorted(set(idx.tolist()))
        fig.legend(handles=_class_handles(net, present), loc="outside lower center", ncol=k)

        def draw(layer: int) -> list[Any]:
            fold = axes[0]
            fold.clear()
            vin, vout = trace.values[layer - 1], trace.values[layer]
            fold.set_title(f"layer {layer}{_kind(net, layer)}: value in -> value out")
            bottom = blended_transform_factory(fold.transData, fold.transAxes)
            if vin is None or vout is None or rd[layer - 1] is None or rd[layer] is None:
                fold.text(0.5, 0.5, "no scalar map\n(rank above one)", ha="center", va="center")
            else:
                lo, hi = float(np.min(vin)), float(np.max(vin))
                pad = 0.08 * (hi - lo) if hi > lo else 1.0
                grid = np.linspace(lo - pad, hi + pad, 400)
                fold.plot(grid, layer_curve(net, layer, grid, rd), color="0.45", linewidth=1.5)
                _points(fold, vin, vout, idx, k)
                turn = folds[layer - 1]
                if turn is not None and lo - pad <= to_float(turn) <= hi + pad:
                    fold.axvline(to_float(turn), color="black", linestyle=":", linewidth=1.5)
                    fold.text(to_float(turn), 0.98, " fold point", va="top", transform=bottom)
                fold.set_xlabel(f"value read by layer {layer}")
                fold.set_ylabel("value out" if layer < net.depth else "value the readout reads")
                fold.ticklabel_format(axis="both", style="sci", scilimits=(-3, 4))
            if circle:
                ax = axes[1]
                ax.clear()
                a = np.linspace(-math.pi, math.pi, 200)
                ax.plot(R3 * np.cos(a), R3 * np.sin(a), color="0.7", linewidth=1)
                t, r = trace.angles[layer - 1], trace.radius[layer - 1]
                _points(ax, r * np.cos(t), r * np.sin(t), idx, k)
                lim = 1.3 * R3
                ax.set_xlim(-lim, lim)
                ax.set_ylim(-lim, lim)
                ax.set_aspect("equal")
                ax.set_title(f"LayerNorm's circle after layer {layer}")
                ax.set_xlabel("h . u/|u|")
                ax.set_ylabel("h . v/|v|")
            fig.suptitle(f"The folds of a depth-{net.depth} net, layer by layer{note}")
            return list(axes)

        anim = FuncAnimation(fig, draw, frames=layers, blit=False, repeat=True)
    return anim, layers


def save_animation(
    net: LNNet[Any],
    X: Any,
    y: Any = None,
    *,
    out: str | os.PathLike[str],
    fps: float = 1.0,
    dpi: int = 80,
    max_frames: int = MAX_FRAMES,
    sample_of: int | None = None,
) -> list[int]:
    """Write :func:`fold_animation` as an animated GIF to ``out`` (atomically); the layers."""
    from matplotlib.animation import PillowWriter

    anim, layers = fold_animation(net, X, y, max_frames=max_frames, sample_of=sample_of)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "folds.gif"
        with require_matplotlib().rc_context(SLIDE):
            anim.save(str(path), writer=PillowWriter(fps=fps), dpi=dpi)
        fileformat.write_all_atomic([(out, path.read_bytes())])
    return layers
