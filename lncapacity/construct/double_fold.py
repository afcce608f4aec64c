"""Depth ``L`` shatters ``2L + 1`` points (``2L + 3`` on a circle): two exact merges per layer.

Proofs: proofs/double_fold.md.

With ``eps = 0`` a width-3 layer after the first is the circle map
``e -> arg M (e - Q)`` (proofs/circle_maps.md, section 1): two points of the
circle land on one angle exactly when they lie on one line through the pole
``Q``.  Take ``Q`` where the lines of two chords meet, each chord joining two
points of one label: those two pairs merge, exactly, and nothing else does when
the re-spacing ``M`` of the layer before is generic.  Every layer after the
first then takes the number of distinct points down by two, so ``2L + 1``
distinct inputs end as 3 points on the circle after ``L`` layers, and a chord
of the circle (the readout) realises any labeling of 3 points.  The order of
the points along the circle never matters.  Inputs on the upper half of the
unit circle of the plane are folded by the first layer too (``g = M (x - Q)``):
``2L + 3`` of them, when no three of their chords meet in one point.

:func:`design` does this in mpmath (exact merges up to the working precision,
the re-spacing chosen among a few candidates for the widest gap between the
labels); :func:`double_fold_net` rounds the design to dyadic rationals and
keeps the first rounding that :func:`lncapacity.certify` accepts.  Binary
labels, ``eps = 0``.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import mpmath
import numpy as np
from flint import fmpq

from ..certify import certify
from ..data import PointSet
from ..elementary import PI, TWO_PI, atan2, sincos
from ..errors import InputError
from ..model import Affine, LNNet

WIDTH = 3
DPS = 60
"""Decimal digits of the design arithmetic."""
BITS = (48, 80, 128, 192, 256)
"""Dyadic roundings tried, in turn, until the certificate accepts."""
TS = (1, 3, 9)
"""Stretch factors tried for the re-spacing ``M = diag(1, t) R(-alpha) N0``."""
SAME_WEIGHT = 1e-2
"""Weight of the smallest gap of one label in a candidate's score (see ``_float_scores``)."""
CANDIDATES = 12
"""Pairs of merges tried per layer (the first ones of :func:`merge_pairs`)."""


@dataclass
class Design:
    """The real-number net: layer ``l`` is ``g = M_l (e - Q_l)`` (layer 1: ``M_1 (x, 1)``).

    ``Q[0]`` is None when layer 1 reads the projected input, or the pole of a
    first fold of points on the unit circle (then ``g = M_1 (x - Q_1)``);
    ``Q[l]`` None means no fold (``g = M_l e``).  ``direction`` projects the input to a line
    (exact rationals); ``chord = (w, r)``: the score is ``w . e + r`` on the
    last circle, positive for label 1.  ``groups[l]``: the points that share
    one position after layer ``l + 1``.
    """

    direction: tuple[fmpq, ...]
    M: list[list[list[mpmath.mpf]]]
    Q: list[list[mpmath.mpf] | None]
    chord: tuple[list[mpmath.mpf], mpmath.mpf]
    groups: list[list[list[int]]]


def _angle(v: Sequence[mpmath.mpf]) -> mpmath.mpf:
    return mpmath.atan2(v[1], v[0])


def _unit(v: Sequence[mpmath.mpf]) -> list[mpmath.mpf]:
    n = mpmath.sqrt(v[0] ** 2 + v[1] ** 2)
    return [v[0] / n, v[1] / n]


def _mul(M: Sequence[Sequence[mpmath.mpf]], v: Sequence[mpmath.mpf]) -> list[mpmath.mpf]:
    return [M[0][0] * v[0] + M[0][1] * v[1], M[1][0] * v[0] + M[1][1] * v[1]]


def _matmul(A, B):  # type: ignore[no-untyped-def]
    return [[sum(A[i][k] * B[k][j] for k in range(2)) for j in range(2)] for i in range(2)]


def _rot(a: mpmath.mpf) -> list[list[mpmath.mpf]]:
    c, s = mpmath.cos(a), mpmath.sin(a)
    return [[c, -s], [s, c]]


def _relative_angles(dirs: Sequence[Sequence[mpmath.mpf]]) -> list[mpmath.mpf]:
    """Angles of directions lying in an open half-plane, measured from their bisector."""
    a0 = _angle(dirs[0])
    rel = [mpmath.atan2(*reversed(_mul(_rot(-a0), d))) for d in dirs]  # in (-pi, pi)
    lo, hi = min(rel), max(rel)
    mid = (lo + hi) / 2
    return [r - mid for r in rel]


def _narrowing(dirs: Sequence[Sequence[mpmath.mpf]]) -> list[list[mpmath.mpf]]:
    """``N0``: turn the cone of ``dirs`` to straddle angle 0, squeeze it into ``|angle| < pi/8``."""
    a0 = _angle(dirs[0])
    rel = [mpmath.atan2(*reversed(_mul(_rot(-a0), d))) for d in dirs]
    mid = a0 + (min(rel) + max(rel)) / 2
    half = (max(rel) - min(rel)) / 2
    k = mpmath.tan(mpmath.pi / 8) / mpmath.tan(half) if half > 0 else mpmath.mpf(1)
    return _matmul([[mpmath.mpf(1), 0], [0, min(k, mpmath.mpf(1))]], _rot(-mid))


def merge_pairs(order: Sequence[int], labels: Sequence[int]) -> list[tuple[tuple[int, int], ...]]:
    """Candidate merges for ``N >= 4`` points in circle order ``order`` (indices into ``labels``).

    Two pairs, each of one label, whose chords do not cross: for ``N >= 7`` only
    *separated* ones (``a < a' < b < b'`` along the arc, the genericity lemma's
    case); for ``N = 5`` also nested ones (no third pair is left to collide);
    for even ``N`` one pair (the count becomes odd).  First the pairs of
    neighbours.
    """
    n = len(order)
    lab = [labels[i] for i in order]
    if n % 2 == 0:
        singles = [(i, j) for i, j in itertools.combinations(range(n), 2) if lab[i] == lab[j]]
        singles.sort(key=lambda p: p[1] - p[0])
        return [((order[i], order[j]),) for i, j in singles]
    pairs = [(i, j) for i, j in itertools.combinations(range(n), 2) if lab[i] == lab[j]]
    out = []
    for (i, j), (k, m) in itertools.combinations(pairs, 2):
        if len({i, j, k, m}) < 4:
            continue
        separated = j < k or m < i
        nested = (i < k and m < j) or (k < i and j < m)
        if separated or (n == 5 and nested):
            out.append(((i, j), (k, m)))
    out.sort(key=lambda q: (q[0][1] - q[0][0]) + (q[1][1] - q[1][0]))
    return [((order[i], order[j]), (order[k], order[m])) for (i, j), (k, m) in out]


def pole(h: Sequence[Sequence[mpmath.mpf]], pairs) -> list[mpmath.mpf]:  # type: ignore[no-untyped-def]
    """Where the chords' lines meet (two pairs), or a point on the one chord's line outside."""
    (a, b) = pairs[0]
    if len(pairs) == 1:
        return [h[a][0] + 3 * (h[b][0] - h[a][0]), h[a][1] + 3 * (h[b][1] - h[a][1])]
    (c, d) = pairs[1]
    p, r = h[a], [h[b][0] - h[a][0], h[b][1] - h[a][1]]
    q, s = h[c], [h[d][0] - h[c][0], h[d][1] - h[c][1]]
    den = r[0] * s[1] - r[1] * s[0]
    t = ((q[0] - p[0]) * s[1] - (q[1] - p[1]) * s[0]) / den
    return [p[0] + t * r[0], p[1] + t * r[1]]


def _float_scores(dirs, labels, N0, alphas, ts, pairs) -> np.ndarray:  # type: ignore[no-untyped-def]
    """Scores of the candidate folds ``M = diag(1, t) R(-alpha) N0`` merging ``pairs``, for
    every ``alpha`` of ``alphas`` and ``t`` of ``ts`` (``alpha`` major), in floats (the
    design is then redone in mpmath).

    The smallest angle, after the fold, between neighbours of two labels (<= 0:
    a collision), or ``SAME_WEIGHT`` times the smallest between any neighbours,
    whichever is less, over the spread of the angles (-1 when the chords' lines are
    parallel or meet inside the circle; 1 when the angles have no spread).
    """
    alpha = np.repeat(np.asarray(alphas, dtype=float), len(ts))
    t = np.tile(np.asarray(ts, dtype=float), len(alphas))
    s, c = sincos(alpha)
    M = [[c * N0[0][j] + s * N0[1][j] for j in range(2)]]
    M.append([t * ((-s) * N0[0][j] + c * N0[1][j]) for j in range(2)])
    d = np.asarray(dirs, dtype=float)
    v0 = M[0][0][:, None] * d[:, 0] + M[0][1][:, None] * d[:, 1]
    v1 = M[1][0][:, None] * d[:, 0] + M[1][1][:, None] * d[:, 1]
    size = np.sqrt(v0 * v0 + v1 * v1)
    h0, h1 = v0 / size, v1 / size  # candidate x point
    (a, b) = pairs[0]
    out = np.zeros(len(alpha))
    with np.errstate(divide="ignore", invalid="ignore"):
        if len(pairs) == 1:
            Q0, Q1 = h0[:, a] + 3 * (h0[:, b] - h0[:, a]), h1[:, a] + 3 * (h1[:, b] - h1[:, a])
            parallel = np.zeros(len(alpha), dtype=bool)
        else:
            (cc, dd) = pairs[1]
            r0, r1 = h0[:, b] - h0[:, a], h1[:, b] - h1[:, a]
            s0, s1 = h0[:, dd] - h0[:, cc], h1[:, dd] - h1[:, cc]
            den = r0 * s1 - r1 * s0
            parallel = den == 0
            u = ((h0[:, cc] - h0[:, a]) * s1 - (h1[:, cc] - h1[:, a]) * s0) / den
            Q0, Q1 = h0[:, a] + u * r0, h1[:, a] + u * r1
    gone = {j for _, j in pairs}
    kept = [i for i in range(len(d)) if i not in gone]
    angles = atan2(h1[:, kept] - Q1[:, None], h0[:, kept] - Q0[:, None])
    rel = (angles - angles[:, :1] + PI) % TWO_PI - PI
    lab = np.array([labels[i] for i in kept])
    order = np.lexsort((np.broadcast_to(lab, rel.shape), rel), axis=1)  # by angle, then label
    rel, lab = np.take_along_axis(rel, order, axis=1), lab[order]
    spread = rel[:, -1] - rel[:, 0]
    every = np.diff(rel, axis=1)
    between = np.where(lab[:, 1:] != lab[:, :-1], every, np.inf).min(axis=1, initial=np.inf)
    between = np.where(np.isinf(between), spread, between)
    every = every.min(axis=1, initial=np.inf)
    every = np.where(np.isinf(every), spread, every)
    with np.errstate(divide="ignore", invalid="ignore"):
        # two labels colliding is fatal; one nearly colliding makes later folds ill-conditioned
        out = np.minimum(between, SAME_WEIGHT * every) / spread
    out = np.where(spread <= 0, 1.0, out)
    return np.where(parallel | (Q0 * Q0 + Q1 * Q1 <= 1 + 1e-9), -1.0, out)


def _fold(dirs, labels, M, pairs):  # type: ignore[no-untyped-def]
    """Positions after ``M``, the pole, and the directions after the fold (None: degenerate)."""
    h = [_unit(_mul(M, d)) for d in dirs]
    with mpmath.workdps(DPS):
        try:
            Q = pole(h, pairs)
        except ZeroDivisionError:  # parallel chords
            return None
    if Q[0] ** 2 + Q[1] ** 2 <= 1:
        return None
    new = [_unit([x[0] - Q[0], x[1] - Q[1]]) for x in h]
    return h, Q, new


def _merge(dirs, labels, groups, pairs, new):  # type: ignore[no-untyped-def]
    """Groups after the fold: each designed pair becomes one point."""
    gone = {b: a for a, b in pairs}
    keep = [i for i in range(len(dirs)) if i not in gone]
    merged = {a: groups[a] + groups[b] for a, b in pairs}
    return (
        [new[i] for i in keep],
        [labels[i] for i in keep],
        [sorted(merged.get(i, groups[i])) for i in keep],
    )


def _first_fold(dirs, labels, groups):  # type: ignore[no-untyped-def]
    """Layer 1 as a fold of input points on the unit circle: the best merge candidate."""
    rel = _relative_angles(dirs)
    order = sorted(range(len(dirs)), key=lambda i: rel[i])
    fdirs = [[float(v) for v in d] for d in dirs]
    eye = [[1.0, 0.0], [0.0, 1.0]]
    scored = [
        (float(_float_scores(fdirs, labels, eye, [0.0], [1], pairs)[0]), pairs)
        for pairs in merge_pairs(order, labels)
    ]
    best = max(scored, key=lambda c: c[0], default=None)
    if best is None or best[0] <= 0:
        raise InputError("no first fold without a collision (three chords meet in one point?)")
    got = _fold(dirs, labels, [[mpmath.mpf(1), 0], [0, mpmath.mpf(1)]], best[1])
    if got is None:
        raise InputError("degenerate first fold")
    _, Q, new = got
    nd, nl, ng = _merge(dirs, labels, groups, best[1], new)
    return nd, nl, ng, Q


def on_half_circle(X: Sequence[Sequence[fmpq]]) -> bool:
    """Points of the plane on the unit circle with positive second coordinate (exact)."""
    return bool(X) and all(len(x) == 2 and x[0] ** 2 + x[1] ** 2 == 1 and x[1] > 0 for x in X)


def design(X: Sequence[Sequence[fmpq]], y: Sequence[int], depth: int) -> Design:
    """The real-number net of the theorem for distinct points ``X`` with labels ``y`` in {0, 1}.

    Needs ``len(X) <= 2 depth + 1``, or ``2 depth + 3`` for points on the upper half
    of the unit circle of the plane (:func:`on_half_circle`): there the first layer
    folds too (proofs/double_fold.md, section 5; no two labels may collide, which
    holds when no three chords with six distinct end points meet in one point).
    Deterministic.
    """
    n = len(X)
    circle = on_half_circle(X)
    most = 2 * depth + (3 if circle else 1)
    if depth < 1 or n > most:
        need = max(1, (n - 2) // 2 if circle else n // 2)
        raise InputError(f"{n} points need depth >= {need} ({most} points at depth {depth})")
    with mpmath.workdps(DPS):
        labels = list(y)
        groups = [[i] for i in range(n)]
        Ms: list = []
        Qs: list = [None]
        history = []
        if circle:
            direction: tuple[fmpq, ...] = ()
            dirs = [[_mp(x[0]), _mp(x[1])] for x in X]
            if n >= 4:
                dirs, labels, groups, Q = _first_fold(dirs, labels, groups)
                Qs = [Q]
        else:
            direction = _separating_direction(X)
            xs = [sum((a * c for a, c in zip(direction, x, strict=True)), fmpq(0)) for x in X]
            dirs = [[_mp(x), mpmath.mpf(1)] for x in xs]
        for layer in range(1, depth + 1):
            N0 = _narrowing(dirs)
            last = layer == depth or len(dirs) <= 3
            if last:
                M = N0
                h = [_unit(_mul(M, d)) for d in dirs]
                Ms.append(M)
                history.append([list(g) for g in groups])
                if layer < depth:
                    Qs.append(None)
                    dirs = h
                continue
            rel = _relative_angles([_mul(N0, d) for d in dirs])
            order = sorted(range(len(dirs)), key=lambda i: rel[i])
            best = None
            cuts = [(rel[i] + rel[j]) / 2 for i, j in itertools.pairwise(order)]
            fdirs = [[float(v) for v in d] for d in dirs]
            fN0 = [[float(v) for v in row] for row in N0]
            for pairs in merge_pairs(order, labels)[:CANDIDATES]:
                scores = _float_scores(fdirs, labels, fN0, [float(a) for a in cuts], TS, pairs)
                for k, s in enumerate(scores.tolist()):  # alpha major, as the cuts and TS
                    if best is None or s > best[0]:
                        best = (s, cuts[k // len(TS)], TS[k % len(TS)], pairs)
            if best is None or best[0] <= 0:
                raise InputError("no fold without a collision found (should not happen)")
            _, alpha, t, pairs = best
            M = _matmul([[1, 0], [0, mpmath.mpf(t)]], _matmul(_rot(-alpha), N0))
            got = _fold(dirs, labels, M, pairs)
            if got is None:
                raise InputError("degenerate fold (should not happen)")
            h, Q, new = got
            Ms.append(M)
            Qs.append(Q)
            dirs, labels, groups = _merge(dirs, labels, groups, pairs, new)
            history.append([list(g) for g in groups])
        h = [_unit(_mul(Ms[-1], d)) for d in dirs] if len(Ms) == depth else dirs
        chord = _chord(h, labels)
    return Design(direction, Ms, Qs, chord, history)


def _chord(h, labels):  # type: ignore[no-untyped-def]
    """``(w, r)`` with ``w . e + r`` positive exactly at the label-1 points (at most 3 points)."""
    if len(set(labels)) == 1:
        return [mpmath.mpf(0), mpmath.mpf(0)], mpmath.mpf(1 if labels[0] == 1 else -1)
    ones = [i for i, lab in enumerate(labels) if lab == 1]
    zeros = [i for i, lab in enumerate(labels) if lab == 0]
    if len(ones) == 1:
        lone, sign = ones[0], 1
    elif len(zeros) == 1:
        lone, sign = zeros[0], -1
    else:
        raise InputError(f"{len(labels)} points left for the readout (at most 3 expected)")
    p = h[lone]
    c = (1 + max(p[0] * h[j][0] + p[1] * h[j][1] for j in range(len(h)) if j != lone)) / 2
    return [sign * p[0], sign * p[1]], -sign * c


def _separating_direction(X: Sequence[Sequence[fmpq]]) -> tuple[fmpq, ...]:
    """``(1, k, k^2, ...)`` for the least ``k >= 0`` that keeps the points distinct (exact)."""
    d = len(X[0])
    for k in itertools.count():
        a = tuple(fmpq(k) ** i for i in range(d))
        vals = {sum((ai * xi for ai, xi in zip(a, x, strict=True)), fmpq(0)) for x in X}
        if len(vals) == len(X):
            return a
    raise AssertionError  # pragma: no cover


def _basis():  # type: ignore[no-untyped-def]
    """``E = [u/|u|, v/|v|]``, ``u = (1, -1, 0)``, ``v = (1, 1, -2)``, at the design precision."""
    s2, s6 = mpmath.sqrt(2), mpmath.sqrt(6)
    return [[1 / s2, 1 / s6], [-1 / s2, 1 / s6], [mpmath.mpf(0), -2 / s6]]


def _mp(x: fmpq) -> mpmath.mpf:
    return mpmath.mpf(int(x.p)) / int(x.q)


def _dyadic(x: mpmath.mpf, bits: int) -> fmpq:
    return fmpq(int(mpmath.nint(x * 2**bits)), 2**bits)


def _layers(des: Design, bits: int, d: int) -> tuple[list[Affine[fmpq]], Affine[fmpq]]:
    """Round the design to dyadic rationals (each map scaled to entries of order 1 first)."""
    with mpmath.workdps(DPS):
        E = _basis()
        r3 = mpmath.sqrt(3)
        layers = []
        for layer, (M, Q) in enumerate(zip(des.M, des.Q, strict=True)):
            EM = [[sum(E[i][k] * M[k][j] for k in range(2)) for j in range(2)] for i in range(3)]
            if layer == 0 and not des.direction:  # points of the circle: x is e itself
                q = Q if Q is not None else [0, 0]
                W = [[EM[i][j] for j in range(2)] for i in range(3)]
                b = [-(EM[i][0] * q[0] + EM[i][1] * q[1]) for i in range(3)]
            elif layer == 0:
                W = [[EM[i][0] * _mp(a) for a in des.direction] for i in range(3)]
                b = [EM[i][1] for i in range(3)]
            else:
                W = [
                    [sum(EM[i][k] * E[j][k] for k in range(2)) / r3 for j in range(3)]
                    for i in range(3)
                ]
                q = Q if Q is not None else [0, 0]
                b = [-(EM[i][0] * q[0] + EM[i][1] * q[1]) for i in range(3)]
            scale = max(abs(v) for row in W for v in row)
            layers.append(
                Affine(
                    tuple(tuple(_dyadic(v / scale, bits) for v in row) for row in W),
                    tuple(_dyadic(v / scale, bits) for v in b),
                    {"kind": "double-fold" if Q is not None else "spacing"},
                )
            )
        w, r = des.chord
        row = [sum(E[i][k] * w[k] for k in range(2)) / r3 for i in range(3)]
        scale = max([abs(v) for v in row] + [abs(r)])
        rr = tuple(_dyadic(v / scale, bits) for v in row)
        rb = _dyadic(r / scale, bits)
        readout = Affine((tuple(-v for v in rr), rr), (-rb, rb), {"kind": "chord"})
    return layers, readout


def double_fold_net(
    points: PointSet, depth: int | None = None, classes: Sequence[object] = (0, 1)
) -> LNNet[fmpq]:
    """A certified width-3 net with exactly ``depth`` layers (default ``ceil((m - 1)/2)``), eps 0.

    Any ``m <= 2 depth + 1`` distinct points in any dimension, two classes.
    Raises :class:`InputError` if no rounding in :data:`BITS` is certified
    (not expected: the design classifies with positive margins, so fine enough
    roundings do too).
    """
    y = [list(classes).index(label) for label in points.y]
    if depth is None:
        depth = max(1, (points.m - 2) // 2 if on_half_circle(points.X) else points.m // 2)
    des = design(points.X, y, depth)
    for bits in BITS:
        layers, readout = _layers(des, bits, points.d)
        net = LNNet(
            points.d,
            WIDTH,
            fmpq(0),
            tuple(layers),
            readout,
            tuple(classes),
            {"method": "double-fold", "bits": bits},
        )
        if certify(net, points, workers=1).all_certified:
            return net
    raise InputError("double fold: no rounding certified")
