"""The circle search's hand-over to ``runs`` (``--method circle``, two classes).

A state whose points occupy an arc narrower than :data:`HANDOFF_ARC` is read by
``a . h`` monotone in the angle (:func:`handoff_read`), and ``runs`` folds those
scalars; :func:`finish` counts the layers that takes, and :class:`Handoff` carries the
circle layers to :func:`lncapacity.construct.build` with the float64 slack ``runs``
must respect.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from flint import fmpq

from ...elementary import atan2, sincos
from ...model import Affine
from ...reproducible import matmul
from .state import SQRT3, E, State, plane

HANDOFF_ARC = 0.9 * math.pi
"""The widest arc of points ``runs`` can take over: ``a . h`` is monotone in the angle on it."""
HANDOFF_GAP = 2.0**-20
"""The smallest label gap (radians) of a state ``runs`` takes over: its float search needs
room (measured on random points in R^3: from a state with gaps near ``2^-24`` (m = 400),
runs ran out of float resolution within 40 layers; from ``2^-16`` (m = 400) and ``2^-20``
(m = 1000) it finished).  When it does not, ``build`` uses ``runs`` alone."""

HANDOFF_ERR = 2.0**-30
"""The largest float64 error (radians, :attr:`State.err <.state.State.err>`) a state ``runs``
takes over may carry.  ``runs`` keeps the true values widened by it apart
(:attr:`Handoff.slack`), so float64 stays faithful; wider slack leaves it too little room
(measured on 1000 random points in R^3: from states with errors near ``2^-24`` it ran out
of float resolution after about 180 layers; without the slack, one point in 1000 went wrong
in float64)."""

HANDOFF_ROUNDING = 2.0**-48
"""Float64 rounding of ``read^T h`` itself, and of the radius with eps > 0 (scaled so that
``eps`` is below ``2^-40`` of the squared norm, ``_scaled``), with room."""


def handoff_read(H: np.ndarray) -> np.ndarray | None:
    """A read ``a`` (3 floats) with ``a^T h = sin(phi - mu)`` increasing on the points' arc.

    ``mu`` is the middle of the arc the points occupy (the circle minus its widest
    empty gap); None if that arc is wider than :data:`HANDOFF_ARC` (then no read
    is monotone on it: a linear read of the circle folds it).
    """
    p = plane(H)
    theta = np.sort(atan2(p[:, 1], p[:, 0]), kind="stable")
    gaps = np.diff(np.r_[theta, theta[0] + 2 * math.pi])
    i = int(np.argmax(gaps))
    arc = 2 * math.pi - float(gaps[i])
    if arc > HANDOFF_ARC:
        return None
    mu = float(theta[(i + 1) % len(theta)]) + arc / 2
    s, c = sincos(mu)
    return matmul(E, np.array([-s, c])) / SQRT3


def finish(st: State, y: np.ndarray) -> float:
    """Layers of ``st`` plus those ``runs`` needs from it (runs along :func:`handoff_read`
    minus ``k``; one run fewer per layer); ``inf`` if no read is monotone on its arc, its
    label gap is below :data:`HANDOFF_GAP` or its float error above :data:`HANDOFF_ERR`."""
    if st.finish is None:
        k = int(y.max()) + 1
        a = handoff_read(st.H)
        if st.boundaries <= k:
            st.finish = len(st.layers)
        elif a is None or st.gap < HANDOFF_GAP or np.max(st.err) > HANDOFF_ERR:
            st.finish = math.inf
        else:
            lab = y[np.argsort(matmul(st.H, a), kind="stable")]
            st.finish = len(st.layers) + max(0, 1 + int((lab[1:] != lab[:-1]).sum()) - k)
    return st.finish


@dataclass
class Handoff:
    """Circle layers for ``runs`` to finish: it folds the scalars ``read^T h`` of their
    outputs, known as balls from the exact inputs (``t``: their float64 values)."""

    layers: list[Affine[fmpq]]
    read: tuple[fmpq, ...]
    t: list[fmpq]
    start: Callable[[int], list[Any]]
    """``prec -> balls`` of the true ``read^T h`` of every point (:class:`~.fold.Chain`)."""
    slack: np.ndarray
    """How far float64's ``read^T h`` may be from the true one, per point (``|read| <= 1 /
    sqrt 3``, so the angle's error bound :attr:`State.err <.state.State.err>`, doubled, plus
    rounding)."""
