"""The circle search in ball arithmetic: ``objective="depth"``.

The float-faithful search (``objective="faithful"``) scores a state by its label gaps
*less* the float64 error its angles carry (``state._carry``), and so gives way where
float64 cannot follow its deep maps (near 0.41 of ``m - 2`` at ``m = 1000``).  The
certificate needs no floats, so this module carries the points through the layers the
way the certificate does: python-flint ``arb`` balls of the exact net's outputs
(:class:`Balls`), from the exact inputs, at a working precision that doubles (the layers
replayed from the inputs) whenever a ball's radius exceeds :data:`ROOM` times the
smallest label gap, so that some 24 bits always lie beyond ``-log2(gap)``.  A state's
label boundaries and smallest label gap are read off these balls and are rigorous
(:func:`measure`: the gap is a lower bound of every gap between neighbouring label
runs); float64 no longer decides anything but which layers are *tried*: the candidates of
:mod:`.candidates` are found on the balls' midpoints rounded to float64 (accurate to an
ulp, with no error carried from earlier layers), and every weight of a fold layer is
still a float64, i.e. an exact dyadic rational.  The readout (:func:`readout`)
cuts the arcs in the middle of the precise gaps, with weights the dyadic midpoints of
balls at the working precision (an ordinary ``lnnet/1`` net; rows of long dyadics), and
is checked in balls.  The finished net is certified by :func:`lncapacity.certify` as any;
whether float64 runs it right is reported, not required (proofs/circle_maps.md §6 is
what the faithful search promises instead).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from flint import arb, fmpq

from ...arith import arb_to_fmpq, precision
from ...elementary import log2
from ...model import Affine, layer_norm
from .state import State, boundaries_cyclic

PREC_START = 128
"""Bits the balls start with (the layers are replayed with twice as many when short)."""
MAX_PREC = 1 << 15
"""The most bits the search spends on a state (a state needing more is dropped)."""
ROOM = 2.0**-24
"""A state's balls are resolved when every angle's radius is at most this times its
smallest label gap; otherwise the layers are replayed at twice the precision."""
GAP_FLOOR = 2.0**-240
"""States whose smallest label gap (radians, rigorous) falls below this are dropped."""
PRE_FLOOR = 2.0**-48
"""Float64 label gaps below this count as this when candidates are pre-ranked on the
rounded midpoints (float64 angles of unit points carry about ``2^-52``; below this a
float gap is noise, and the ranking in balls decides)."""
COMFORT = 2.0**-20
"""Label gaps (radians) at or above this cost nothing in the ranking of states."""
LAMBDA = 0.25
"""Boundaries a state is charged per halving of its smallest label gap below
:data:`COMFORT` (the float-faithful search charges 1: there every halving costs float
resolution; here only room to place later folds with float64 poles)."""


CANDIDATES = 3000
"""Candidate poles per state and layer at least (the float-faithful search tries ``WORK / m``,
600 at ``m = 1000``: measured with that, the depth objective needed 0.153 of ``m - 2`` there,
against 0.085 at ``m = 200`` with 3000; with 3000 at ``m = 1000``, 0.135, and at 500 0.110
instead of 0.124: docs/tables/depth_frontier.md)."""


def cost(boundaries: Any, gap: Any) -> Any:
    """Boundaries, plus :data:`LAMBDA` per halving of the label gap below :data:`COMFORT`
    (the gap floored at :data:`GAP_FLOOR`, so a tie costs a finite amount; numbers or arrays,
    :func:`~lncapacity.elementary.log2`)."""
    halvings = np.maximum(0.0, log2(COMFORT / np.maximum(gap, GAP_FLOOR)))
    out = boundaries + LAMBDA * halvings
    return float(out) if np.ndim(out) == 0 else out


def pre_cost(boundaries: Any, gap: Any) -> Any:
    """:func:`cost` of a float64 gap measured on rounded midpoints (floored at
    :data:`PRE_FLOOR`)."""
    return cost(boundaries, np.maximum(gap, PRE_FLOOR))


def rank(st: State) -> float:
    """The depth objective's rank of a state: :func:`cost` of its rigorous gap."""
    return cost(st.boundaries, st.gap)


@dataclass
class Balls:
    """The exact net's outputs ``h`` (one ``arb`` triple per point) after a state's
    layers, computed at ``prec`` bits."""

    rows: list[list[arb]]
    prec: int


def _plane_angles(rows: Sequence[Sequence[arb]]) -> list[arb]:
    """The angle of each ``h`` in the plane orthogonal to ``(1, 1, 1)`` (basis
    :data:`~.state.E`), as a ball in ``(-pi/2, 3 pi/2)``: ``atan2`` is taken from the side
    away from its branch cut, so that no ball straddles it (inside ``precision``)."""
    r2, r6 = 1 / arb(2).sqrt(), 1 / arb(6).sqrt()
    out = []
    for h0, h1, h2 in rows:
        p0, p1 = (h0 - h1) * r2, (h0 + h1 - 2 * h2) * r6
        if p0.mid() < 0:
            out.append(arb.atan2(-p1, -p0) + arb.pi())
        else:
            out.append(arb.atan2(p1, p0))
    return out


def _key(x: arb, bits: int) -> int:
    """An integer that orders balls by their midpoints (``bits`` beyond the binary point)."""
    man, exp = x.mid().man_exp()
    e = int(exp) + bits
    return int(man) << e if e >= 0 else int(man) >> -e


def measure(rows: Sequence[Sequence[arb]], y: np.ndarray, prec: int) -> tuple[int, float, bool]:
    """Cyclic label boundaries, a lower bound of the smallest label gap, and whether the
    balls resolve it (every radius at most :data:`ROOM` times that gap).

    Sorted by midpoints, two neighbours of different labels are ordered, and every point
    of one run lies before every point of the next, when the lower end of their
    difference exceeds twice the largest radius ``R`` (every ball lies within ``R`` of
    its midpoint): so the gap returned is the least ``theta_next - theta_prev - 2 R``
    over the label changes (with ``2 pi`` added across the seam), rounded down; ``-inf``
    when some change is not resolved.  Inside ``precision(prec)``.
    """
    theta = _plane_angles(rows)
    order = sorted(range(len(theta)), key=lambda i: _key(theta[i], prec + 16))
    lab = y[np.array(order)]
    b = int(boundaries_cyclic(lab[None, :])[0])
    R = max(arb(t.rad()) for t in theta)
    two_pi = 2 * arb.pi()
    m = len(order)
    gap = math.inf
    for i in np.flatnonzero(lab != np.roll(lab, -1)):
        j = (i + 1) % m
        d = theta[order[j]] - theta[order[i]] + (two_pi if j == 0 else 0) - 2 * R
        low = float(d.lower())
        gap = min(gap, low * (1 - 2.0**-50) if low > 0 else -math.inf)
    resolved = gap > 0 and float(R) <= ROOM * gap
    return b, gap, resolved


def _rational(v: Any) -> fmpq:
    """``v`` exactly: a rational, an integer or a float (its dyadic value)."""
    if isinstance(v, fmpq):
        return v
    if isinstance(v, int | np.integer):
        return fmpq(int(v))
    return fmpq(*float(v).as_integer_ratio())


class Tracker:
    """The points of one search in balls: from the exact inputs ``X`` (rationals), labels
    ``y`` and LayerNorm's ``eps``, states after any layers (:meth:`Tracker.start`,
    :meth:`Tracker.child`); the finished state's readout is :func:`readout`."""

    def __init__(self, X: Sequence[Sequence[Any]], y: np.ndarray, eps: Any):
        self.X = [tuple(_rational(v) for v in row) for row in X]
        self.y = y
        self.eps = _rational(eps)

    rank = staticmethod(rank)
    pre_cost = staticmethod(pre_cost)

    def _replay(self, layers: Sequence[Affine[fmpq]], prec: int) -> list[list[arb]]:
        with precision(prec):
            rows: Any = [[arb(v) for v in x] for x in self.X]
            for layer in layers:
                f, eps = layer.map(arb), arb(self.eps)
                rows = [layer_norm(f(h), eps, arb.sqrt) for h in rows]
        return rows

    def _state(self, layers: list[Affine[fmpq]], rows: Any, prec: int) -> State | None:
        """The state after ``layers`` from ``rows`` at ``prec`` bits, the layers replayed at
        twice the precision while the balls do not resolve its gap; None when its gap is
        below :data:`GAP_FLOOR` (or beyond :data:`MAX_PREC` bits)."""
        while True:
            with precision(prec):
                b, gap, resolved = measure(rows, self.y, prec)
            if resolved or prec >= MAX_PREC:
                break
            prec *= 2
            rows = self._replay(layers, prec)
        if not resolved or gap < GAP_FLOOR:
            return None
        H = np.array([[float(v) for v in h] for h in rows])
        if layers and isinstance(layers[-1].meta, dict):
            layers[-1].meta["boundaries"] = b
        return State(H, layers, b, gap, err=np.zeros(len(rows)), exact=Balls(rows, prec))

    def start(self, st: State) -> State | None:
        """``st`` (its layers found in float64) with its points in balls: boundaries and gap
        measured rigorously; None when the gap is not resolved (``_state``)."""
        return self._state(st.layers, self._replay(st.layers, PREC_START), PREC_START)

    def flattened(self, st: State) -> State | None:
        """``st`` with its last layer scaled by a power of two ``2^j`` so that ``eps`` moves
        the radius by less than about ``2^-24`` of the label gap (the angles do not change;
        the readout's scores do with the radius, by up to ``2^-40`` after ``state._scaled``,
        which would swamp smaller gaps).  None when no scaling is needed (or the gap is lost)."""
        j = math.ceil((-16 - log2(st.gap)) / 2) if st.gap > 0 else 0
        if j <= 0:
            return None
        last = st.layers[-1]
        t = fmpq(2) ** j
        scaled = Affine(
            tuple(tuple(w * t for w in row) for row in last.W),
            tuple(v * t for v in last.b),
            last.meta,
        )
        layers = [*st.layers[:-1], scaled]
        return self._state(layers, self._replay(layers, st.exact.prec), st.exact.prec)

    def child(self, st: State, layer: Affine[fmpq]) -> State | None:
        """The state one ``layer`` after ``st`` (which has its balls)."""
        balls = st.exact
        with precision(balls.prec):
            f, eps = layer.map(arb), arb(self.eps)
            rows = [layer_norm(f(h), eps, arb.sqrt) for h in balls.rows]
        return self._state([*st.layers, layer], rows, balls.prec)


def readout(st: State, y: np.ndarray) -> Affine[fmpq] | None:
    """A readout with one row per class, score ``c`` positive exactly on the arc of ``c``:
    the polygon inscribed at the cuts in the middle of the label gaps (as
    :func:`~.readouts.polygon`; two classes: one chord, as a pair of opposite rows),
    with the weights' dyadic midpoints at the state's precision; None unless each
    class is one arc and every point's score is certainly the largest (checked in
    balls)."""
    balls = st.exact
    k = int(y.max()) + 1
    with precision(balls.prec):
        theta = _plane_angles(balls.rows)
        order = sorted(range(len(theta)), key=lambda i: _key(theta[i], balls.prec + 16))
        lab = y[np.array(order)]
        ch = np.flatnonzero(lab != np.roll(lab, -1))
        if len(ch) != k:
            return None
        m, two_pi = len(order), 2 * arb.pi()
        cuts = []
        for i in ch:
            j = (i + 1) % m
            cuts.append((theta[order[i]] + theta[order[j]] + (two_pi if j == 0 else 0)) / 2)
        s2, s6, s3 = arb(2).sqrt(), arb(6).sqrt(), arb(3).sqrt()
        E = ((1 / s2, 1 / s6), (-1 / s2, 1 / s6), (arb(0), -2 / s6))
        W: list[tuple[fmpq, ...]] = [()] * k
        b: list[fmpq] = [fmpq(0)] * k
        for j in range(k):
            lo, hi = cuts[j], cuts[(j + 1) % k] + (two_pi if j == k - 1 else 0)
            c = int(lab[(ch[j] + 1) % m])
            mid, half = (lo + hi) / 2, (hi - lo) / 2
            cs, sn = mid.cos(), mid.sin()
            W[c] = tuple(arb_to_fmpq(((e0 * cs + e1 * sn) / s3).mid()) for e0, e1 in E)
            b[c] = arb_to_fmpq((-half.cos()).mid())
        read = Affine(tuple(W), tuple(b), {"kind": "arcs", "cuts": [float(g) for g in cuts[:k]]})
        f = read.map(arb)
        for h, c in zip(balls.rows, y, strict=True):
            z = f(h)
            if not all(z[c] - z[j] > 0 for j in range(k) if j != c):
                return None
    return read
