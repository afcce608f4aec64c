"""LN-G at depth 1: one steep step per label boundary of a projection.

The construction, proved in proofs/ln_g_steps.md:

1. Project the points to a line, ``t = read^T x - shift`` (:func:`choose_direction`).
2. Between every two neighbours of different labels put a *centre* ``c_j``, a short dyadic
   rational within ``gap / 16`` of their midpoint, and one more outside each end of the
   data (``c_0`` and ``c_{B+1}``, ``B`` the number of label boundaries).
3. Give every centre a group of 3 features fed ``y = S ((t - c_j) u + beta v)``
   (``u = (1, -1, 0)``, ``v = (1, 1, -2)``).  Its LayerNorm, read along ``u``, is the step
   ``u . LN(y) = sqrt(6) (t - c_j) / sqrt((t - c_j)^2 + b^2)`` with
   ``b^2 = 3 beta^2 + 3 eps / (2 S^2)``, for every ``eps >= 0``.
4. The readout gives class ``c`` the coefficient ``kappa / 2`` on group ``j`` (weights
   ``(kappa/2, -kappa/2, 0)``, no bias): ``kappa = +1`` where the label enters ``c`` at
   ``c_j``, ``-1`` where it leaves ``c``, ``0`` otherwise.  With the ends counted as
   boundaries to "no class" the steps telescope to ``sqrt(6)`` for the point's class and
   ``0`` for every other, up to the steps' tails.

The steepness is set from ``delta``, the smallest distance of a point to a centre:
``b <= delta / 4``, so the tails sum to at most ``(pi^2/8) (b/delta)^2 <= pi^2/128`` at
every point and each point's margin is at least ``(1 - pi^2/128) sqrt(6) > 0.92 sqrt(6)``
(the score range is ``[0, sqrt(6)]``).  :func:`lncapacity.certify` checks a per-point form of
that theorem from the weights alone (proofs/ln_g_steps.md, §7), independently of this module.

Width ``3 (B + 2)``; one LayerNorm layer of ``B + 2`` groups of 3 (``Norm(groups=B + 2)``).
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from flint import arb, fmpq

from ..arith import dyadic_between, precision, to_float
from ..data import PointSet
from ..errors import InputError
from ..model import Affine, Label, LNNet, Norm
from ..reproducible import matmul
from .common_denominator import Columns, dyadic_in
from .project import directions

GROUP = 3
"""Features per group: the smallest LayerNorm with a circle of outputs."""
STEEP = fmpq(1, 16)
"""``b^2 <= STEEP delta^2`` (``b <= delta / 4``): the tails then sum to at most
``pi^2 / 128`` at every point (proofs/ln_g_steps.md, Theorem 4)."""
WINDOW = fmpq(1, 16)
"""A centre lies within ``WINDOW`` times the gap of the midpoint of its two neighbours (so at
least ``7/16`` of the gap from each): a short dyadic rational, nearly as far as the midpoint."""
PI2_8 = fmpq(12338, 10000)
"""A rational upper bound of ``pi^2 / 8 = 1.2337005...`` (the series ``sum 1/(2i-1)^2``)."""
NEAR_FEWEST = fmpq(1, 8)
"""A direction counts as having the fewest boundaries when it has at most this fraction more
than the fewest found: among those the one with the most float room is taken."""
EXTRA_BUDGET = 12_000_000
"""Multiply-adds (extra random directions times points times dimensions) spent looking for
float room."""
EXTRA_MAX = 512
"""At most this many extra random directions (10-bit dyadic, seeded)."""
ROOM_TARGET = 4
"""``delta / E`` (``E``: the worst float32 error of a group's input, in units of ``t``) from
which float32 is proved right on every point: directions reaching it need no more room."""
UNIT = {"float64": fmpq(1, 2**53), "float32": fmpq(1, 2**24)}
"""Unit roundoff of each float format."""


@dataclass(frozen=True)
class Steps:
    """The line of an LN-G depth-1 net: ``t = read^T x - shift``; the centres, increasing from
    ``c_0`` to ``c_{B+1}`` (the two ends included), and the label of each run between them
    (``runs[r]`` lies between ``centres[r]`` and ``centres[r + 1]``); ``delta``, the smallest
    distance of a point's ``t`` to a centre."""

    read: tuple[fmpq, ...]
    shift: fmpq
    centres: tuple[fmpq, ...]
    runs: tuple[int, ...]
    delta: fmpq


def build_ln_g(
    points: PointSet,
    eps: fmpq,
    *,
    seed: int = 0,
    classes: Sequence[Label] | None = None,
    meta: dict[str, Any] | None = None,
    frame: Frame | None = None,
    columns: Columns | None = None,
) -> LNNet[fmpq]:
    """A depth-1 LN-G net (groups of 3, one per label boundary and two more) that classifies
    every point of ``points`` correctly, with a margin of at least ``0.92 sqrt(6)``.

    ``eps >= 0`` (exact) is LayerNorm's epsilon; ``classes``: the readout's rows (default the
    sorted labels; absent ones score 0); ``frame = (X', s, o)`` with ``x = s x' + o``
    coordinatewise: the coordinates the direction is searched in (``build`` passes its
    normalised ones; default ``points.X`` itself), ``columns`` their :class:`.Columns` if
    known.  ``meta`` is updated and becomes the net's.
    """
    cls, present, yk, read, shift, t = line(points, seed, classes, frame, columns)
    steps = place_centres(read, shift, t, yk)
    beta, S = steepness(steps.delta, eps)
    b2 = 3 * beta**2 + 3 * eps / (2 * S**2)
    layer = steps_layer(steps, beta, S)
    readout = steps_readout(steps, [present.index(c) if c in present else -1 for c in cls])
    groups = len(steps.centres)
    tails = PI2_8 * b2 / steps.delta**2
    meta = {} if meta is None else meta
    meta.update(
        method="steps",
        arch="ln-g",
        projection=[str(r) for r in read],
        boundaries=groups - 2,
        groups=groups,
        depth=1,
        delta=str(steps.delta),
        b2=str(b2),
        margin=_floor4(1 - tails),
        float=rooms(points, steps, layer, beta, S, eps, t.raw),
    )
    return LNNet(
        points.d,
        GROUP * groups,
        eps,
        (layer,),
        readout,
        cls,
        meta,
        norms=(Norm(groups=groups),),
    )


# ---------------------------------------------------------------------------
# the projection


Frame = tuple[Sequence[Sequence[fmpq]], Sequence[fmpq], Sequence[fmpq]]
"""``(X', s, o)`` with ``x = s x' + o`` coordinatewise (``build``'s normalised coordinates)."""


@dataclass(frozen=True)
class Line:
    """The points' places on the line, exactly: ``t_i = T[i] / D`` (``T`` Python integers);
    ``order`` sorts them (stable); ``raw``: the :class:`.Columns` of the points' own
    coordinates (``points.X``, for the float rooms)."""

    T: list[int]
    D: int
    order: list[int]
    raw: Columns

    def __getitem__(self, i: int) -> fmpq:
        return fmpq(self.T[i], self.D)

    def __len__(self) -> int:
        return len(self.T)


def line(
    points: PointSet,
    seed: int,
    classes: Sequence[Label] | None,
    frame: Frame | None,
    columns: Columns | None = None,
) -> tuple[tuple[Label, ...], list[Label], list[int], tuple[fmpq, ...], fmpq, Line]:
    """The line an LN-G net reads: ``(classes, present, yk, read, shift, t)`` with ``yk`` the
    points' labels numbered in ``present`` (the classes that occur, in ``classes``' order),
    and ``t = read^T x - shift`` exactly for every point (a :class:`Line`;
    :func:`choose_direction`, searched in the coordinates of ``frame``, default ``points.X``,
    whose :class:`.Columns` are ``columns`` if given).  :class:`InputError` for a label not
    among ``classes``."""
    cls = tuple(points.classes if classes is None else classes)
    if missing := sorted(set(points.y) - set(cls), key=str):
        raise InputError(f"labels {missing} are not among the classes {list(cls)}")
    present = sorted(set(points.y), key=cls.index)
    yk = [present.index(label) for label in points.y]
    d = points.d
    if frame is None:
        frame = (points.X, [fmpq(1)] * d, [fmpq(0)] * d)
    Xn, scale, offset = frame
    cols = columns if columns is not None else Columns(Xn)
    plain = all(v == 1 for v in scale) and not any(offset)
    w, T, D, order = choose_direction(cols, yk, seed)
    read = tuple(wi / si for wi, si in zip(w, scale, strict=True))
    shift = sum((r * o for r, o in zip(read, offset, strict=True)), fmpq(0))
    return cls, present, yk, read, shift, Line(T, D, order, cols if plain else Columns(points.X))


def choose_direction(
    cols: Columns, y: Sequence[int], seed: int = 0
) -> tuple[tuple[fmpq, ...], list[int], int, list[int]]:
    """A direction ``w`` (exact) along which no two points of different labels tie, and the
    projections ``w^T x = T[i] / D`` (exact), with the order that sorts them (stable), for
    points with coordinates ``cols``.

    The candidates: :func:`.project.directions` (axes, small-integer and 10-bit dyadic
    directions, Fisher's) and up to :data:`EXTRA_MAX` seeded random 10-bit dyadic ones
    (within :data:`EXTRA_BUDGET`).  Each is scored in float64 (a heuristic; the choice is
    checked exactly): ``B``, its number of label boundaries, and its *room*, the smallest
    gap between neighbours of different labels over ``max_x sum |w_k x_k| + max |w^T x|``
    (the scale of the first layer's float error, proofs/ln_g_steps.md §5).  Ranked: first
    those with at most :data:`NEAR_FEWEST` more boundaries than the fewest, by their room up
    to the level float32 needs (:data:`ROOM_TARGET`), then by fewest boundaries, then by room.
    So on structured data (few boundaries along a good direction) boundaries decide, and on
    random labels (every direction has about as many) float room does.
    """
    m, d = cols.m, cols.d
    Xf = cols.floats()
    labels = np.asarray(y)
    W, _ = directions(Xf, labels, seed=seed)
    if d > 1:
        W += _random_directions(d, seed, min(EXTRA_MAX, EXTRA_BUDGET // (m * d)))
    W = list(dict.fromkeys(W))
    Wf = np.asarray([[float(v) for v in w] for w in W])
    with np.errstate(all="ignore"):
        P = matmul(Xf, Wf.T)
        boundaries, gap = float_boundaries(P, labels)
        size = matmul(np.abs(Xf), np.abs(Wf).T).max(axis=0) + np.abs(P).max(axis=0)
        room = gap / size
    room = np.where(np.isfinite(room) | (boundaries == 0), room, 0.0)
    fewest = int(boundaries.min())
    near = fewest + fewest * NEAR_FEWEST
    need = float(ROOM_TARGET * _gamma(d + 5, UNIT["float32"]) / (1 - 2 * WINDOW) * 2)

    def rank(k: int) -> tuple[bool, float, int, float]:
        return bool(boundaries[k] > near), -min(room[k], need), int(boundaries[k]), -room[k]

    def moment_curve() -> Iterator[tuple[fmpq, ...]]:
        j = 2
        while True:  # each difference of points is orthogonal to few of these
            yield tuple(fmpq(j) ** i for i in range(d))
            j += 1

    for w in itertools.chain((W[k] for k in sorted(range(len(W)), key=rank)), moment_curve()):
        T, D = cols.project(w)
        order = _no_cross_ties(T, labels)
        if order is not None:
            return w, T.tolist(), D, order
    raise AssertionError("unreachable: the moment curve separates")


def _random_directions(d: int, seed: int, count: int) -> list[tuple[fmpq, ...]]:
    """``count`` seeded directions, Gaussian then scaled to a largest entry 1 and rounded to
    10 bits after the point."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        v = rng.standard_normal(d)
        v = np.round(v / np.abs(v).max() * 1024)
        if v.any():
            out.append(tuple(fmpq(int(x), 1024) for x in v))
    return out


def float_boundaries(P: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each column of projections: the number of label boundaries along it, and the
    smallest gap between neighbours of different labels (``inf`` without boundaries).  A few
    columns at a time, each sorted as a contiguous row (the same stable order)."""
    n = P.shape[1]
    count, least_gap = np.zeros(n, dtype=np.int64), np.full(n, np.inf)
    labels = np.unique(y, return_inverse=True)[1].astype(np.int32)  # equal exactly when y is
    step = max(1, BOUNDARY_CHUNK // max(1, P.shape[0]))
    for a in range(0, n, step):
        rows = np.ascontiguousarray(P[:, a : a + step].T)
        order = np.argsort(rows, axis=1, kind="stable")
        ls = labels[order]
        change = ls[:, 1:] != ls[:, :-1]
        ps = np.take_along_axis(rows, order, axis=1)
        gaps = np.where(change, np.diff(ps, axis=1), np.inf)
        count[a : a + step] = change.sum(axis=1)
        least_gap[a : a + step] = gaps.min(axis=1, initial=np.inf)
    return count, least_gap


BOUNDARY_CHUNK = 1 << 23
"""Projections :func:`float_boundaries` sorts at once (a few directions at a million
points: its arrays stay near 100 MB)."""


def _no_cross_ties(T: np.ndarray, y: np.ndarray) -> list[int] | None:
    """The order that sorts the integers ``T`` (stable), if no two points of different labels
    have the same ``T`` (decided exactly); else None."""
    values = T.tolist()
    order = sorted(range(len(values)), key=values.__getitem__)
    ts, ls = T[order], y[order]
    return None if ((ts[1:] == ts[:-1]) & (ls[1:] != ls[:-1])).any() else order


# ---------------------------------------------------------------------------
# centres and steepness


def place_centres(read: tuple[fmpq, ...], shift: fmpq, t: Line, y: Sequence[int]) -> Steps:
    """The centres along ``t`` (no two points of different labels tie): one between every two
    neighbours of different labels, within ``WINDOW`` times their gap of the midpoint, and one
    beyond each end, at more than ``D`` from it (``D`` a power of two at least half the
    largest gap between neighbours): the ends set ``delta`` only when there is no boundary.

    In integers over ``t``'s denominator (:func:`.dyadic_in`: the rationals' own dyadics)."""
    order = t.order
    ts = [t.T[i] for i in order]
    ls = np.asarray(y)[order]
    Q = t.D
    # mid = (lo + hi) / 2 and mid -+ WINDOW gap, WINDOW = wp / wq, over 2 wq Q
    wp, wq = int(WINDOW.p), int(WINDOW.q)
    centres: list[fmpq] = []
    near: list[tuple[int, int]] = []  # each centre's distance to its nearer neighbour: (p, q)
    changes = np.flatnonzero(ls[1:] != ls[:-1]).tolist()
    for a in changes:
        lo, hi = ts[a], ts[a + 1]
        mid, gap = wq * (lo + hi), 2 * wp * (hi - lo)
        n, k = dyadic_in(mid - gap, mid + gap, mid, 2 * wq * Q)
        centres.append(fmpq(n, 1 << k))
        nQ = n * Q
        near.append((min(nQ - (lo << k), (hi << k) - nQ), Q << k))
    runs = [int(ls[0]), *(int(ls[a + 1]) for a in changes)]
    widest = max((b - a for a, b in itertools.pairwise(ts)), default=0)
    first_t, last_t = fmpq(ts[0], Q), fmpq(ts[-1], Q)
    D = _power_of_two_at_least(fmpq(widest, 2 * Q) if widest else fmpq(1))
    first = dyadic_between(first_t - 2 * D, first_t - D)
    last = dyadic_between(last_t + D, last_t + 2 * D)
    delta = min(first_t - first, last - last_t)
    if near:
        delta = min(delta, least(near))
    return Steps(read, shift, (first, *centres, last), tuple(runs), delta)


def least(fractions: Sequence[tuple[int, int]]) -> fmpq:
    """The least of the positive rationals ``p / q`` given as integer pairs, exactly: the
    correctly rounded floats propose (rounding is monotone, so the least rational's float is
    the least float) and the rationals with that float decide."""
    floats = np.array([p / q for p, q in fractions])
    low = floats.min()
    return min(fmpq(*fractions[i]) for i in np.flatnonzero(floats == low).tolist())


def steepness(delta: fmpq, eps: fmpq) -> tuple[fmpq, fmpq]:
    """``(beta, S)``, powers of two: ``S`` the smallest with ``S delta >= 1`` and
    ``(S delta)^2 >= 48 eps`` (so ``3 eps / (2 S^2) <= delta^2 / 32``, and the pre-activations
    are about 1 near a centre, whatever the data's scale), ``beta`` the largest with
    ``96 beta^2 <= delta^2`` (``3 beta^2 <= delta^2 / 32``): ``b^2 <= delta^2 / 16``."""
    S = _power_of_two_at_least(1 / delta)
    while (S * delta) ** 2 < 48 * eps:
        S *= 2
    beta = _power_of_two_at_least(delta)
    while 96 * beta**2 > delta**2:
        beta /= 2
    return beta, S


def _power_of_two_at_least(x: fmpq) -> fmpq:
    """The smallest power of two ``>= x > 0``."""
    k = int(x.p).bit_length() - int(x.q).bit_length()
    p = fmpq(2) ** k if k >= 0 else fmpq(1, 2 ** (-k))
    while p < x:
        p *= 2
    while p / 2 >= x:
        p /= 2
    return p


def _floor4(x: fmpq) -> str:
    """``x`` rounded down to 4 decimals, as text (a bound stays a bound)."""
    n = (x * 10000).floor()
    return f"{int(n) / 10000:.4f}"


# ---------------------------------------------------------------------------
# the layer and the readout


def steps_layer(steps: Steps, beta: fmpq, S: fmpq) -> Affine[fmpq]:
    """The first layer: group ``j`` computes ``S ((t - c_j) u + beta v)`` from ``x``, that is
    rows ``(S read, -S read, 0)`` and biases ``(S (beta - C_j), S (beta + C_j), -2 S beta)``
    with ``C_j = c_j + shift``."""
    row = tuple(S * r for r in steps.read)
    neg = tuple(-w for w in row)
    zero = tuple(fmpq(0) for _ in row)
    W: list[tuple[fmpq, ...]] = []
    b: list[fmpq] = []
    low = -2 * S * beta
    for c in steps.centres:
        C = c + steps.shift
        W += [row, neg, zero]
        b += [S * (beta - C), S * (beta + C), low]
    return Affine(tuple(W), tuple(b), {"kind": "steps", "group": GROUP})


def coefficients(runs: Sequence[int], label: int) -> list[int]:
    """``kappa_j`` for one class (``label``, the construction's number) at each centre ``j``
    from 0 to ``B + 1``: ``+1`` where the label enters it, ``-1`` where it leaves it (the ends
    are boundaries to no class)."""
    inside = [False, *(r == label for r in runs), False]
    return [int(inside[j + 1]) - int(inside[j]) for j in range(len(runs) + 1)]


def steps_readout(steps: Steps, labels: Sequence[int]) -> Affine[fmpq]:
    """One row per class (``labels[i]``: the construction's number of class ``i``, ``-1`` for
    a class no point has): weights ``(kappa/2, -kappa/2, 0)`` on each group, no bias."""
    half = {1: (fmpq(1, 2), fmpq(-1, 2)), -1: (fmpq(-1, 2), fmpq(1, 2)), 0: (fmpq(0), fmpq(0))}
    zero = fmpq(0)
    rows = []
    for label in labels:
        kappa = coefficients(steps.runs, label) if label >= 0 else [0] * len(steps.centres)
        row: list[fmpq] = []
        for k in kappa:
            row += [*half[k], zero]
        rows.append(tuple(row))
    return Affine(tuple(rows), tuple(fmpq(0) for _ in labels), {"kind": "steps"})


# ---------------------------------------------------------------------------
# float room (proofs/ln_g_steps.md §5)


def _gamma(n: int, u: fmpq) -> fmpq:
    return n * u / (1 - n * u)


def rooms(
    points: PointSet,
    steps: Steps,
    layer: Affine[fmpq],
    beta: fmpq,
    S: fmpq,
    eps: fmpq,
    raw: Columns,
) -> dict[str, Any]:
    """How much room each float format has: ``room = delta / E`` with ``E`` the bound on the
    float error of every group's input in units of ``t`` (Lemma 5), and whether the float
    margin bound of Theorem 6 proves every point right (``proved``, with that ``margin`` over
    ``sqrt(6)``) in lncapacity's NumPy backend; never where a number leaves the format's
    normal range (``_in_range``).  ``raw``: the :class:`.Columns` of ``points.X``."""
    size = raw.abs_dot_max(steps.read)
    # the centres increase: the farthest from 0 is an end
    reach = max(abs(steps.centres[0] + steps.shift), abs(steps.centres[-1] + steps.shift))
    per_class = max(
        sum(1 for k in coefficients(steps.runs, label) if k) for label in set(steps.runs)
    )
    b2 = 3 * beta**2 + 3 * eps / (2 * S**2)
    out = {}
    for dtype, u in UNIT.items():
        E = _gamma(points.d + 5, u) * size + _gamma(3, u) * (reach + beta)
        ok, margin = float_margin(steps.delta, b2, E, per_class, u)
        ok = ok and _in_range(
            raw, layer, _least_bias(steps, beta, S), S * (size + reach + beta), eps, dtype
        )
        out[dtype] = {"room": _short(steps.delta / E), "proved": ok}
        if ok:
            out[dtype]["margin"] = _floor4(margin)
    return out


NORMAL = {"float64": fmpq(1, 2**1022), "float32": fmpq(1, 2**126)}
"""The smallest positive normal number of each format."""
TOP = {"float64": fmpq(2) ** 1023, "float32": fmpq(2) ** 127}
"""A power of two at most the largest number of each format."""


def _least_bias(steps: Steps, beta: fmpq, S: fmpq) -> fmpq | None:
    """The least nonzero ``|b|`` over the biases ``S (beta -+ C_j)``, ``-2 S beta`` of
    :func:`steps_layer` (``C_j = c_j + shift``), None if all are 0: near ``C_j = +-beta``,
    found by bisection in the increasing centres."""
    cs, shift = steps.centres, steps.shift
    found = [2 * S * beta] if beta else []
    for target in (beta, -beta):  # |beta - C| and |beta + C| = |-beta - C|
        i = bisect.bisect_left(cs, target - shift)
        for j in range(max(0, i - 2), min(len(cs), i + 2)):
            v = abs(target - (cs[j] + shift)) * S
            if v:
                found.append(v)
    return min(found, default=None)


def _in_range(
    raw: Columns, layer: Affine[fmpq], least_bias: fmpq | None, reach: fmpq, eps: fmpq, dtype: str
) -> bool:
    """Theorem 6's range condition: every nonzero input coordinate, weight, bias (the least
    nonzero ``|bias|`` is ``least_bias``), product of an input and a weight and ``eps`` at least
    the smallest normal number (no underflow, so every rounding is relative), and the largest
    pre-activation ``reach`` (``S (M + max |C_j| + beta)``) below the square root of the
    largest number over 4 (no square, sum or input overflows)."""
    x_low, x_high = raw.extremes()
    ws = [abs(v) for v in layer.W[0] if v]
    small, top = NORMAL[dtype], TOP[dtype]
    if not ws or least_bias is None:
        return False
    lows = [min(ws), least_bias, *([x_low, x_low * min(ws)] if x_low is not None else [])]
    if eps:
        lows.append(eps)
    return min(lows) >= small and reach**2 * 16 <= top and x_high <= top


def float_margin(delta: fmpq, b2: fmpq, E: fmpq, n: int, u: fmpq) -> tuple[bool, fmpq]:
    """Theorem 6: whether ``1 - T - R > 0``, and a rational lower bound of it (the float
    margin over ``sqrt(6)``).  ``b2 = 3 beta^2 + 3 eps / (2 S^2)``; ``E`` the first layer's
    error bound; ``n`` the most groups one class reads; ``u`` the unit roundoff.  Computed in
    ball arithmetic and rounded down to a rational."""
    if E >= delta:
        return False, fmpq(-1)
    with precision(128):
        e, dl, uu = arb(E), arb(delta), arb(u)

        def gamma(k: int) -> arb:
            return k * uu / (1 - k * uu)

        nu = arb(2).sqrt() * e / (3 * (dl - e))
        alpha = gamma(3) * (1 + arb(3).sqrt() * nu) * (1 + uu) + uu
        lam = alpha / (1 - alpha) + gamma(7)
        b = arb(b2).sqrt() + e / arb(3).sqrt()
        tails = arb(PI2_8) * (b / (dl - e)) ** 2
        rounding = n * (lam + gamma(2 * n) * (1 + gamma(7)))
        left = 1 - tails - rounding
        low = fmpq(int((left.lower() * 10**6).floor().unique_fmpz()), 10**6)
    return low > 0, low


def _short(x: fmpq) -> float:
    """A float near ``x`` with 4 significant digits, for the meta (a report, not a bound)."""
    f = to_float(x)
    return float(f"{f:.4g}") if math.isfinite(f) else f
