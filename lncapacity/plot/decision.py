"""Decision regions of a net on 2-D points.

The class float64 gives on a grid, the points on top, and the points where float64 and
the certificate disagree.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..certify import Certificate
from ..errors import InputError
from ..explain import as_points, float_scores
from ..model import LNNet
from .common import SLIDE, _class_handles, _figure, _lighten, class_style, require_matplotlib

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure


def disagreements(net: LNNet[Any], points: Any, certificate: Certificate) -> np.ndarray:
    """Indices of points where float64 and the certificate disagree on correctness."""
    from ..floats import forward

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
    resolution: int | tuple[int, int] = 300,
    window: tuple[float, float, float, float] | None = None,
) -> Figure:
    """The classes of the plane (d = 2), evaluated in float64, the points on top.

    Points where float64 and the certificate (computed if not given) disagree are
    circled in red.  ``resolution``: grid cells across (and up), or ``(across, up)``;
    a grid coarser than the points' spacing aliases (stripes one unit wide drawn with
    cells 0.8 apart look like noise), so give points ``delta`` apart several cells.
    ``window``: ``(x1 low, x1 high, x2 low, x2 high)``, the part of the plane drawn (a
    zoom; default: every point, with a margin).
    """
    from matplotlib.colors import ListedColormap
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    from ..certify import certify

    points = as_points(net, X, y)
    if points.d != 2:
        raise InputError(f"decision regions need 2-D points, these have {points.d} features")
    cert = certificate if certificate is not None else certify(net, points)
    F = points.floats()
    idx = np.array([net.classes.index(c) for c in points.y], dtype=np.intp)
    if window is None:
        lo, hi = F.min(axis=0), F.max(axis=0)
        pad = 0.08 * np.where(hi > lo, hi - lo, 1.0)
        lo, hi = lo - pad, hi + pad
    else:
        lo, hi = np.array(window[::2], dtype=float), np.array(window[1::2], dtype=float)
        if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)) and np.all(hi > lo)):
            raise InputError(f"window must be (x1 low, x1 high, x2 low, x2 high), got {window!r}")
    nx, ny = (resolution, resolution) if isinstance(resolution, int) else resolution
    if nx < 2 or ny < 2:
        raise InputError(f"resolution must be at least 2 cells each way, got {resolution!r}")
    gx, gy = np.linspace(lo[0], hi[0], nx), np.linspace(lo[1], hi[1], ny)
    G = np.stack(np.meshgrid(gx, gy), axis=-1).reshape(-1, 2)
    z = float_scores(net, G)
    win = np.argmax(np.nan_to_num(z, nan=-np.inf), axis=1).reshape(ny, nx)
    k = len(net.classes)
    cmap = ListedColormap([_lighten(class_style(i, k)[0]) for i in range(k)])
    bad = disagreements(net, points, cert)
    with require_matplotlib().rc_context(SLIDE):
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
        if window is not None:
            ax.set_xlim(lo[0], hi[0])
            ax.set_ylim(lo[1], hi[1])
        ax.set_xlabel("x1")
        ax.set_ylabel("x2")
        ok = f"{cert.certified}/{len(cert.points)} certified"
        ax.set_title(f"Decision regions in float64 ({nx}x{ny} grid); {ok}")
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig
