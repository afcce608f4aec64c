"""LayerNorm's output on the circle, one panel per layer.

The points in the plane orthogonal to ``(1, 1, 1)``, the direction the next map reads
and, after the last layer, the arcs each class wins.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..arith import to_float
from ..errors import InputError
from ..explain import U_HAT, V_HAT, Trace, class_arcs, reads
from ..floats import affine_arrays
from ..model import LNNet
from .common import (
    MAX_PANELS,
    SLIDE,
    _class_handles,
    _figure,
    _grid,
    _kind,
    _lighten,
    _setup,
    _subsample_note,
    class_style,
    evenly_spaced,
    require_matplotlib,
)

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure


def _boundaries_name(net: LNNet[Any], read: Any) -> str:
    """How the readout's boundaries look: parallel chords (rank one), the sides of the
    polygon inscribed at the cuts (every class one arc), or, for the LP readout that gives a
    class several arcs (proofs/multiclass.md §9), the sides of the class cells."""
    if read is not None:
        return "parallel chords"
    lp = (net.readout.meta or {}).get("kind") == "arcs-lp"
    return "the class cells' sides" if lp else "a polygon's sides"


def _readout_cells(ax: Any, net: LNNet[Any], lim: float) -> bool:
    """Shade where each class wins the readout in the plane of the circle, and draw the
    boundaries between winners: parallel chords for a rank-one (envelope or threshold)
    readout, the sides of a polygon of ``k`` cells for a general one.  False if none is seen.

    The readout's scores are affine in the plane's coordinates ``(a, b)`` (``h = a u/|u|
    + b v/|v|``); a boundary between classes ``i`` and ``j`` is the segment of the line
    ``z_i = z_j`` where both are the largest score.  Float64: a picture, not a proof.
    """
    R, rb = affine_arrays(net.readout)
    with np.errstate(over="ignore", invalid="ignore"):  # a readout beyond floats: not drawn
        P = R @ np.stack([U_HAT, V_HAT], axis=1)  # (classes, 2): scores on the plane
    if not np.all(np.isfinite(P)) or not np.all(np.isfinite(rb)):
        return False
    k = len(net.classes)
    n = 400
    g = np.linspace(-lim, lim, n)
    A, B = np.meshgrid(g, g)
    z = np.einsum("kd,dij->kij", P, np.stack([A, B])) + rb[:, None, None]
    win = np.argmax(z, axis=0)
    from matplotlib.colors import ListedColormap

    ax.imshow(
        win,
        origin="lower",
        extent=(-lim, lim, -lim, lim),
        cmap=ListedColormap([_lighten(class_style(i, k)[0], 0.8) for i in range(k)]),
        vmin=-0.5,
        vmax=k - 0.5,
        interpolation="nearest",
        zorder=0,
        gid="readout-cells",
    )
    t = np.linspace(-2 * lim, 2 * lim, 4001)
    drew = False
    for i in range(k):
        for j in range(i + 1, k):
            d = P[i] - P[j]
            norm = float(np.hypot(*d))
            if norm == 0:
                continue
            foot = -(rb[i] - rb[j]) * d / norm**2  # the point of z_i = z_j nearest the centre
            xy = foot[:, None] + np.outer(np.array([-d[1], d[0]]) / norm, t)
            zz = P @ xy + rb[:, None]
            top = np.max(zz, axis=0)
            scale = np.max(np.abs(zz), axis=0) + 1.0
            on = (zz[i] >= top - 1e-9 * scale) & (zz[j] >= top - 1e-9 * scale)
            on &= np.all(np.abs(xy) <= lim, axis=0)
            if on.any():
                xs, ys = np.where(on, xy[0], np.nan), np.where(on, xy[1], np.nan)
                ax.plot(xs, ys, color="black", linewidth=1.5, zorder=2, gid="readout-boundary")
                drew = True
    return drew


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
    reads; after the last layer the arcs outside the circle are won by each class, the
    plane is shaded by the class the readout gives it and the boundaries are drawn
    (parallel chords for a rank-one readout, the sides of a polygon of class cells
    otherwise; ``_readout_cells``).
    """
    from matplotlib.lines import Line2D
    from matplotlib.patches import Arc, FancyArrowPatch

    points, idx, trace = _setup(net, X, y, trace)
    if not net.layers or net.width != 3:
        raise InputError("the circle view needs a width-3 net with LayerNorm layers")
    rd = reads(net)
    chosen = (
        list(layers)
        if layers is not None
        else [n + 1 for n in evenly_spaced(net.depth, max_panels)]
    )
    if bad := [n for n in chosen if not 1 <= n <= net.depth]:
        raise InputError(f"layers {bad} out of range 1..{net.depth}")
    k = len(net.classes)
    present = sorted(set(idx.tolist()))
    R3 = math.sqrt(3.0)
    with require_matplotlib().rc_context(SLIDE):
        rows, ncols = _grid(len(chosen))
        fig = _figure(max(6.5, 3.8 * ncols + 0.5), 4.4 * rows + 1.6)
        axes = fig.subplots(rows, ncols, squeeze=False)
        for ax in axes.ravel()[len(chosen) :]:
            ax.set_visible(False)
        drew_read = drew_cells = False
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
                    drew_read = True
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
                drew_cells = _readout_cells(ax, net, 1.4 * R3) or drew_cells
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
            ax.set_xlabel(r"$h \cdot u/|u|$")
            ax.set_ylabel(r"$h \cdot v/|v|$")
        handles = _class_handles(net, present)
        if drew_read:
            handles.append(
                Line2D([], [], color="0.25", marker=">", label="direction the next map reads")
            )
        if net.depth in chosen:
            handles.append(Line2D([], [], color="0.5", linewidth=6, label="class arcs (readout)"))
        if drew_cells:
            handles.append(
                Line2D(
                    [],
                    [],
                    color="black",
                    linewidth=1.5,
                    label="readout boundaries: " + _boundaries_name(net, rd[net.depth]),
                )
            )
        fig.legend(handles=handles, loc="outside lower center", ncol=min(len(handles), 2 * ncols))
        fig.suptitle(
            "LayerNorm's output on the circle\n(the plane orthogonal to (1, 1, 1))"
            + _subsample_note(len(chosen), net.depth, "layers")
        )
    return fig
