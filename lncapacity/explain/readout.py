"""Where each class wins at the readout: intervals of its scalar, arcs of the circle.

With a rank-one readout, the upper envelope of the classes' score lines gives each winning
class an interval of the last value, with exact ends (:func:`class_intervals`); on the
circle of a width-3 net, each class wins arcs (:func:`class_arcs`, float64).  The terms
are those of :mod:`lncapacity.explain`.
"""

from __future__ import annotations

import math

import numpy as np
from flint import fmpq

from ..errors import InputError
from ..floats import affine_arrays
from ..model import LNNet
from .scalars import reads
from .trace import U_HAT, V_HAT

__all__ = [
    "class_arcs",
    "class_intervals",
]


def class_intervals(net: LNNet[fmpq]) -> list[tuple[fmpq | None, fmpq | None, int]] | None:
    """The readout's classes along its scalar: ``(lo, hi, class index)`` from left to right.

    With a rank-one readout the scores are ``z_i = col_i s + b_i``; the upper
    envelope of these lines gives each winning class an interval, with exact
    rational ends (``None`` for an infinite end).  None without a rank-one readout.
    """
    r = reads(net)[-1]
    if r is None:
        return None
    lines = list(zip(r.col, net.readout.b, strict=True))
    # walk the upper envelope from s = -inf: the smallest slope wins (ties: the larger bias)
    cur = min(range(len(lines)), key=lambda i: (lines[i][0], -lines[i][1], i))
    out: list[tuple[fmpq | None, fmpq | None, int]] = []
    lo: fmpq | None = None
    while True:
        a, b = lines[cur]
        best = None
        for i, (ai, bi) in enumerate(lines):
            if ai > a:  # overtakes cur at s = (b - bi) / (ai - a)
                x = (b - bi) / (ai - a)
                if lo is None or x > lo or (x == lo and i != cur):
                    if best is None or x < best[0] or (x == best[0] and ai > lines[best[1]][0]):
                        best = (x, i)
        if best is None:
            out.append((lo, None, cur))
            return out
        out.append((lo, best[0], cur))
        lo, cur = best


def class_arcs(net: LNNet[fmpq], samples: int = 4096) -> list[tuple[float, float, int]]:
    """The arcs of the circle (radius ``sqrt 3``, eps = 0) each class wins at the readout.

    ``(start, end, class index)`` in radians, ``start`` in ``[-pi, pi)`` and
    ``end > start``, covering the circle; boundaries found numerically (float64,
    a grid of ``samples`` angles refined by bisection).  Depth >= 1 only.
    """
    if not net.layers or net.width != 3:
        raise InputError("class arcs need a width-3 net with at least one LayerNorm layer")
    R, rb = affine_arrays(net.readout)

    def winner(t: np.ndarray) -> np.ndarray:
        h = math.sqrt(3.0) * (np.outer(np.cos(t), U_HAT) + np.outer(np.sin(t), V_HAT))
        with np.errstate(all="ignore"):  # weights beyond the float range: inf/NaN scores
            return np.argmax(np.nan_to_num(h @ R.T + rb, nan=-np.inf), axis=1)

    t = np.linspace(-math.pi, math.pi, samples, endpoint=False)
    w = winner(t)
    cuts = []
    for i in np.nonzero(w != np.roll(w, -1))[0]:
        a, b = t[i], t[i] + 2 * math.pi / samples
        wa = w[i]
        for _ in range(50):
            mid = (a + b) / 2
            if winner(np.array([mid]))[0] == wa:
                a = mid
            else:
                b = mid
        cuts.append(((a + b) / 2, int(w[(i + 1) % samples])))
    if not cuts:
        return [(-math.pi, math.pi, int(w[0]))]
    arcs = []
    for (start, cls), (end, _) in zip(cuts, [*cuts[1:], cuts[0]], strict=True):
        if end <= start:
            end += 2 * math.pi
        s = (start + math.pi) % (2 * math.pi) - math.pi
        arcs.append((s, s + (end - start), cls))
    return arcs
