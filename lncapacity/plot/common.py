"""What every picture of :mod:`lncapacity.plot` shares.

The class colours and markers (Okabe-Ito), the slide style, figures made without
pyplot (Matplotlib is imported only when a figure is drawn), the float64 trace of the
points, layers subsampled evenly, panel grids and legend handles.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InputError
from ..explain import Trace, as_points, float_trace
from ..model import LNNet

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure


OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#F0E442", "#000000")
"""Okabe and Ito's colour-blind-safe palette, ordered so that the first classes contrast most."""
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")

MAX_PANELS = 12
"""Fold-map and circle panels shown at most."""
SLIDE = {"font.size": 12, "axes.titlesize": 13, "axes.labelsize": 12, "legend.fontsize": 11}


def require_matplotlib() -> Any:
    """Matplotlib, or a one-line :class:`~lncapacity.errors.InputError` saying how to install it."""
    try:
        import matplotlib
    except ImportError:
        raise InputError("plotting needs Matplotlib: pip install 'lncapacity[plot]'") from None
    return matplotlib


def _figure(width: float, height: float) -> Figure:
    require_matplotlib()
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def class_style(i: int, k: int) -> tuple[str, str]:
    """``(colour, marker)`` of class index ``i`` among ``k`` classes."""
    if k <= len(OKABE_ITO):
        return OKABE_ITO[i], MARKERS[i % len(MARKERS)]
    return OKABE_ITO[i % len(OKABE_ITO)], MARKERS[(i // len(OKABE_ITO) + i) % len(MARKERS)]


def _lighten(colour: str, amount: float = 0.7) -> tuple[float, float, float]:
    from matplotlib.colors import to_rgb

    r, g, b = to_rgb(colour)
    return (r + (1 - r) * amount, g + (1 - g) * amount, b + (1 - b) * amount)


def _setup(net: LNNet[Any], X: Any, y: Any, trace: Trace | None) -> tuple[Any, np.ndarray, Trace]:
    points = as_points(net, X, y)
    idx = np.array([net.classes.index(c) for c in points.y], dtype=np.intp)
    return points, idx, trace if trace is not None else float_trace(net, points)


def evenly_spaced(n: int, limit: int) -> list[int]:
    """At most ``limit`` of ``0..n-1``, evenly spaced, first and last kept."""
    if n <= limit:
        return list(range(n))
    return sorted({round(float(x)) for x in np.linspace(0, n - 1, limit)})


def _subsample_note(shown: int, total: int, what: str) -> str:
    return "" if shown == total else f"\n({shown} of {total} {what} shown, evenly spaced)"


def _kind(net: LNNet[Any], layer: int) -> str:
    kind = net.layers[layer - 1].meta.get("kind")
    return f" ({kind})" if kind else ""


def _class_handles(net: LNNet[Any], present: Sequence[int], line: bool = False) -> list[Any]:
    from matplotlib.lines import Line2D

    k = len(net.classes)
    out = []
    for i in present:
        colour, marker = class_style(i, k)
        out.append(
            Line2D(
                [],
                [],
                color=colour,
                marker=marker,
                linestyle="-" if line else "none",
                markersize=8,
                label=f"class {net.classes[i]}",
            )
        )
    return out


def _alpha(m: int) -> float:
    return 1.0 if m <= 40 else max(0.08, min(1.0, 40 / m))


def integer_ticks(axis: Any) -> None:
    """Ticks at integers only (layers), even when the axis spans less than one unit."""
    from matplotlib.ticker import MaxNLocator

    axis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))


def _grid(n: int) -> tuple[int, int]:
    cols = min(n, 4)
    return math.ceil(n / cols), cols
