"""What every figure of the page shares: Plotly, user text made literal, class markers.

Plotly reads a small HTML in every piece of text it draws (legend names, hover text,
titles, annotations): ``<a href>`` becomes a live link and ``<span style>`` applies CSS, so a
class label such as ``<span style="fill:url(http://host/x)">`` would make the offline page
fetch from another host.  Every user string (labels, layer kinds and notes from the net's
metadata, file names) enters the page through :func:`literal`, which Plotly shows as the
characters it holds and never reads as markup.
"""

from __future__ import annotations

import html
import math
from typing import Any

import numpy as np

from ..arith import to_float
from ..errors import InputError
from ..explain import U_HAT, V_HAT, Read
from ..plot.common import class_style

__all__ = [
    "GREY",
    "R3",
    "class_marker",
    "empty",
    "literal",
    "note",
    "read_arrow",
    "require_plotly",
]

R3 = math.sqrt(3.0)
"""The radius of LayerNorm's circle (width 3, eps = 0)."""
GREY = "#777777"


def require_plotly() -> Any:
    """Plotly, or a one-line :class:`~lncapacity.errors.InputError` saying how to install it."""
    try:
        import plotly
    except ImportError:
        raise InputError("the explorer needs Plotly: pip install 'lncapacity[explore]'") from None
    return plotly


def literal(text: object) -> str:
    """``text`` as Plotly (and HTML) shows it, character for character: ``&``, ``<`` and
    ``>`` escaped, so that no tag, style or link in it is read, and quotes as numeric
    entities (Plotly decodes those, not ``&quot;``)."""
    return html.escape(str(text), quote=False).replace('"', "&#34;").replace("'", "&#39;")


def class_marker(i: int, k: int, sizes: Any) -> dict[str, Any]:
    """The Plotly marker of class index ``i`` among ``k`` (the colours and shapes of
    :func:`lncapacity.plot.common.class_style`)."""
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


def empty() -> dict[str, Any]:
    """A trace with nothing in it (frames keep the number of traces fixed)."""
    return {"type": "scatter", "x": [], "y": [], "showlegend": False}


def note(text: str, x: float = 0.5, y: float = 0.5) -> dict[str, Any]:
    """A line of text in a panel (a scatter in text mode, so that frames can change it);
    ``text`` is the page's own (Plotly markup allowed)."""
    return {
        "type": "scatter",
        "mode": "text",
        "x": [x] if text else [],
        "y": [y] if text else [],
        "text": [text] if text else [],
        "textfont": {"size": 14, "color": "#444444"},
        "hoverinfo": "skip",
        "showlegend": False,
    }


def read_arrow(read: Read | None) -> np.ndarray | None:
    """The direction a map's read points in the plane of the circle (0.8 of its radius), or
    None for a map without a rank-one read or with a read along ``(1, 1, 1)``."""
    if read is None:
        return None
    row = np.array([to_float(c) for c in read.row])
    d = np.array([row @ U_HAT, row @ V_HAT])
    size = float(np.linalg.norm(d))
    return 0.8 * R3 * d / size if size > 0 else None
