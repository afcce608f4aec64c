"""Nets from sectors: an apex, at most one fold, a chord (eps = 0; proofs/sector_theorem.md).

With ``eps = 0`` the first width-3 layer sends ``x`` to the circle by the angle of
``rho x - a`` (``rho``: a ``2 x d`` projection, ``a``: the *apex*), so a labeling whose labels
change at most ``2^L`` times around the apex is the one candidate shape for a depth-``L`` net
(the sector theorem).  For at most four changes the converse is a construction:

* at most two changes: the points of one label fill an arc of the circle after layer 1, and the
  readout's chord cuts that arc off (depth ``>= 1``);
* four changes ``b_1 .. b_4`` (one label on the arcs ``(b_1, b_2)`` and ``(b_3, b_4)``): layer 2
  has its pole ``Q`` where the lines of the chords ``b_2 b_3`` and ``b_4 b_1`` meet (outside the
  circle: the chords do not cross); the lines through ``Q`` inside the wedge of those two lines
  meet the circle exactly in the two arcs of the first label (proofs/circle_maps.md, section 2:
  the fold merges the circle by the lines through its pole), so after the fold that label fills
  one arc, which the chord cuts off (depth ``>= 2``).

Later layers are the identity on the circle.  In the plane :func:`sector_net` finds an apex
(the sample points of the faces of the arrangement of the lines through two points, the best
then pushed to widen its smallest label gap); in ``R^d``, ``d >= 3``, it takes two changes only,
from two half-spaces whose intersection (or its complement) is the label-1 set
(:func:`wedge_plan`, the shape Theorem 3 of the proof gives them).  It builds the net in floats,
rounds it to dyadic rationals and keeps the first rounding that
:func:`lncapacity.certify.certify` accepts.  Binary labels.

Its float decisions use IEEE ``+ - * /`` and ``sqrt`` only (angles from
:mod:`lncapacity.elementary`, products from :func:`lncapacity.reproducible.matmul`, the sides
of hyperplanes by exact determinants), so the same points give the same net on every
processor; the linear programs of :func:`wedge_plan` (HiGHS, through SciPy) are the exception.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from flint import fmpq, fmpq_mat

from .. import elementary
from ..certify import certify
from ..data import PointSet
from ..errors import InputError
from ..model import Affine, LNNet
from ..reproducible import matmul, norm

WIDTH = 3
B = np.array([[1.0, 1.0], [-1.0, 1.0], [0.0, -2.0]])
"""Columns ``u = (1, -1, 0)`` and ``v = (1, 1, -2)``: a rational basis of the plane
orthogonal to ``(1, 1, 1)``; layer 1 is ``x -> B (rho x - a)``."""
E = B / np.sqrt((B * B).sum(axis=0))
"""The columns of :data:`B` normalised: an orthonormal basis of that plane."""
BITS = (24, 40, 64)
"""Dyadic roundings tried, in turn, until the certificate accepts."""
REFINE = 60
"""Random pushes of the best apex (each kept when it widens the smallest label gap)."""


@dataclass(frozen=True)
class Plan:
    """An apex for a labeling: ``rho`` projects to the plane, ``apex`` is in the plane, the labels
    change ``changes`` times around it, the smallest angle between neighbours of different
    labels is ``gap`` (radians)."""

    rho: np.ndarray
    apex: np.ndarray
    changes: int
    gap: float


def face_samples(Y: np.ndarray) -> np.ndarray:
    """Points in every face of the arrangement of the lines through two of the points ``Y``
    (``N x 2``, floats): both sides of the middle of every edge, at a third of the way to the
    nearest other line, and beyond the last crossing of every line."""
    N = len(Y)
    pairs = list(itertools.combinations(range(N), 2))
    P = np.array([Y[i] for i, _ in pairs])
    D = np.array([Y[j] - Y[i] for i, j in pairs])
    D /= np.sqrt(D[:, 0] * D[:, 0] + D[:, 1] * D[:, 1])[:, None]
    normal = np.c_[-D[:, 1], D[:, 0]]
    out = []
    for k in range(len(pairs)):
        den = D[k, 0] * D[:, 1] - D[k, 1] * D[:, 0]
        ok = np.abs(den) > 1e-12
        rel = P - P[k]
        t = (rel[ok, 0] * D[ok, 1] - rel[ok, 1] * D[ok, 0]) / den[ok]
        t = np.unique(np.round(t, 12))
        if not len(t):
            t = np.array([0.0])
        scale = max(1.0, float(t[-1] - t[0]))
        mids = np.r_[(t[:-1] + t[1:]) / 2, t[0] - scale, t[-1] + scale]
        base = P[k] + mids[:, None] * D[k]
        rel = base[:, None, :] - P[None, :, :]
        dist = np.abs(rel[..., 0] * normal[:, 0] + rel[..., 1] * normal[:, 1])
        dist[:, k] = np.inf
        h = np.minimum(dist.min(axis=1) / 3, scale)
        out += [base + h[:, None] * normal[k], base - h[:, None] * normal[k]]
    return np.concatenate(out) if out else np.zeros((1, 2))


@dataclass(frozen=True)
class _Directions:
    """The directions of the points ``Y`` from each apex of ``apexes``, sorted: what does not
    depend on the labels, computed once per point set."""

    apexes: np.ndarray
    order: np.ndarray  # per apex, the points by direction
    diff: np.ndarray  # per apex, the angle from each point (in that order) to the next
    near: np.ndarray  # per apex, the nearest point's distance over the spread of the points

    @classmethod
    def of(cls, Y: np.ndarray, apexes: np.ndarray) -> _Directions:
        V = Y[None, :, :] - apexes[:, None, :]
        theta = elementary.atan2(V[..., 1], V[..., 0])
        order = np.argsort(theta, axis=1, kind="stable")
        srt = np.take_along_axis(theta, order, axis=1)
        diff = np.diff(np.c_[srt, srt[:, :1] + elementary.TWO_PI], axis=1)
        length = np.sqrt(V[..., 0] * V[..., 0] + V[..., 1] * V[..., 1])
        near = length.min(axis=1) / (float(np.ptp(Y, axis=0).max()) or 1.0)
        return cls(apexes, order, diff, near)

    def gaps(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Cyclic label changes around each apex and a margin: the smallest angle between
        neighbours of different labels (0 where two points of different labels share a ray),
        or the distance to the nearest point if smaller (an apex close to a point turns that
        point's direction wildly)."""
        lab = y[self.order]
        change = lab != np.roll(lab, -1, axis=1)
        gap = np.where(change, self.diff, np.inf).min(axis=1)
        return change.sum(axis=1), np.minimum(gap, self.near)


_CACHE: dict[bytes, _Directions] = {}


def _directions(Y: np.ndarray) -> _Directions:
    """:class:`_Directions` from the :func:`face_samples` of ``Y`` (kept for the last few point
    sets: a shattering asks for every labeling of one set)."""
    key = Y.tobytes()
    if key not in _CACHE:
        if len(_CACHE) >= 4:
            _CACHE.clear()
        _CACHE[key] = _Directions.of(Y, face_samples(Y))
    return _CACHE[key]


def plan(Y: np.ndarray, y: Sequence[int], most: int, seed: int = 0) -> Plan | None:
    """The apex with at most ``most`` cyclic label changes and the widest margin
    (``_Directions.gaps``) among :func:`face_samples`, then pushed at random; None if no face
    has few enough changes (then no apex has: every apex off the lines through two points sees
    a face's order, and one on such a line does no more than a face beside it)."""
    lab = np.asarray(y)
    directions = _directions(Y)
    changes, gap = directions.gaps(lab)
    ok = np.flatnonzero((changes <= most) & (gap > 0))
    if not len(ok):
        return None
    best = int(ok[np.argmax(gap[ok])])
    a, g = directions.apexes[best], float(gap[best])
    rng = np.random.default_rng(seed)
    spread = float(np.ptp(Y, axis=0).max()) or 1.0
    step = spread / 8
    for _ in range(REFINE):
        trial = a + rng.normal(scale=step, size=(16, 2))
        c, gg = _Directions.of(Y, trial).gaps(lab)
        gg = np.where(c <= most, gg, -1.0)
        k = int(np.argmax(gg))
        if gg[k] > g:
            a, g = trial[k], float(gg[k])
        else:
            step /= 1.5
        if step < spread * 1e-9:
            break
    c, _ = _Directions.of(Y, a[None, :]).gaps(lab)
    return Plan(np.eye(2), a, int(c[0]), g)


def halfspace_sets(Y: np.ndarray) -> dict[int, tuple[int, ...]]:
    """The dichotomies of the points ``Y`` (``N x d``, general position) by affine half-spaces,
    as bit masks, each with the ``d`` points whose hyperplane, moved a little, realises it:
    every such dichotomy is one of a hyperplane through ``d`` points with those points put on
    either side.  The sides are signs of exact determinants (the floats read as rationals)."""
    N, d = Y.shape
    full = (1 << N) - 1
    rows = [[fmpq(*float(v).as_integer_ratio()) for v in p] + [fmpq(1)] for p in Y]
    out: dict[int, tuple[int, ...]] = {0: (), full: ()}
    for idx in itertools.combinations(range(N), d):
        base = [rows[i] for i in idx]
        side = sum(
            1 << k for k in range(N) if k not in idx and fmpq_mat([*base, rows[k]]).det() > 0
        )
        for extra in range(1 << d):
            k = side | sum(((extra >> t) & 1) << idx[t] for t in range(d))
            out.setdefault(k, idx)
            out.setdefault(k ^ full, idx)
    return out


def _separating(Y: np.ndarray, mask: int) -> tuple[np.ndarray, float, float]:
    """``(w, c, margin)``: the affine ``w . x + c`` positive on the points of ``mask`` and
    negative on the others with the widest margin (``|w|, |c| <= 1``; a linear program)."""
    from scipy.optimize import linprog

    N, d = Y.shape
    sign = np.array([1.0 if (mask >> k) & 1 else -1.0 for k in range(N)])
    # variables w (d), c, t: maximise t with sign (w . x + c) >= t
    A = np.c_[-sign[:, None] * Y, -sign, np.ones(N)]
    res = linprog(
        np.r_[np.zeros(d + 1), -1.0],
        A_ub=A,
        b_ub=np.zeros(N),
        bounds=[(-1, 1)] * (d + 1) + [(None, 1)],
        method="highs",
    )
    x = res.x if res.status == 0 else np.zeros(d + 2)
    return x[:d], float(x[d]), float(x[d + 1])


def wedge_plan(Y: np.ndarray, y: Sequence[int]) -> Plan | None:
    """A plan with two changes for points of any dimension: the label-1 points are where two
    affine functions are both positive, or the label-0 points are (proofs/sector_theorem.md,
    Theorem 3); ``pi(x) = (h_1(x), h_2(x))``.  None if no two half-spaces do it."""
    N = len(Y)
    full, pos = (1 << N) - 1, sum(1 << k for k in range(N) if y[k])
    sets = list(halfspace_sets(Y))
    best = None
    for target in (pos, full ^ pos):
        for i, a in enumerate(sets):
            if a & target != target:
                continue
            for b in sets[i:]:
                if a & b == target:
                    (wa, ca, ma), (wb, cb, mb) = _separating(Y, a), _separating(Y, b)
                    if min(ma, mb) > 0 and (best is None or min(ma, mb) > best[0]):
                        best = (min(ma, mb), np.array([wa, wb]), np.array([-ca, -cb]))
        if best is not None:
            break
    if best is None:
        return None
    return Plan(best[1], best[2], 2, best[0])


def _dyadic(x: float, bits: int) -> fmpq:
    return fmpq(round(x * 2**bits), 2**bits)


def _affine(W: np.ndarray, b: np.ndarray, bits: int, kind: str) -> Affine[fmpq]:
    _, e = math.frexp(max(float(np.abs(np.c_[W, b]).max()), 1e-300))  # exact, unlike log2
    scale = 2.0 ** (1 - e)
    return Affine(
        tuple(tuple(_dyadic(w * scale, bits) for w in row) for row in W),
        tuple(_dyadic(v * scale, bits) for v in b),
        {"kind": kind},
    )


def _ln(H: np.ndarray) -> np.ndarray:
    C = H - H.mean(axis=1, keepdims=True)
    return C / np.sqrt((C * C).mean(axis=1, keepdims=True))


def _forward(layers: Sequence[Affine[fmpq]], X: np.ndarray) -> np.ndarray:
    H = X
    for layer in layers:
        W = np.array([[float(w) for w in row] for row in layer.W])
        b = np.array([float(v) for v in layer.b])
        H = _ln(matmul(H, W.T) + b)
    return H


def _angles(H: np.ndarray) -> np.ndarray:
    """Angles of layer outputs in the plane orthogonal to ``(1, 1, 1)`` (basis ``u, v``)."""
    G = matmul(H, E)
    return elementary.atan2(G[:, 1], G[:, 0])


def _on_circle(theta: float) -> np.ndarray:
    """The point of angle ``theta`` on the circle of radius ``sqrt(3)`` (layer outputs)."""
    return math.sqrt(3) * matmul(E, elementary.direction(theta))


def _runs(theta: np.ndarray, lab: np.ndarray) -> list[float]:
    """The middles of the cyclic gaps between neighbours of different labels, in angle order,
    starting with a gap into label 1."""
    order = np.argsort(theta, kind="stable")
    t, lb = theta[order], lab[order]
    cuts = []
    for k in range(len(t)):
        k2 = (k + 1) % len(t)
        if lb[k] != lb[k2]:
            hi = t[k2] + (elementary.TWO_PI if k2 == 0 else 0.0)
            cuts.append(((t[k] + hi) / 2, int(lb[k2])))
    while cuts and cuts[0][1] != 1:
        cuts = cuts[1:] + cuts[:1]
    return [c for c, _ in cuts]


def _chord(H: np.ndarray, lab: np.ndarray, bits: int) -> Affine[fmpq]:
    """A readout whose score ``z_1 - z_0`` is positive exactly on label 1, when each label fills
    one arc of the circle: the chord cuts off the narrower of the two arcs."""
    if lab.min() == lab.max():
        row, r = np.zeros(3), (1.0 if lab[0] == 1 else -1.0)
    else:
        theta = _angles(H)
        order = np.argsort(theta, kind="stable")
        t, lb = theta[order], lab[order]
        start = int(np.flatnonzero(lb != np.roll(lb, 1))[0])  # first point of a run
        t = np.r_[t[start:], t[:start] + elementary.TWO_PI]
        lb = np.r_[lb[start:], lb[:start]]
        cut = int(np.flatnonzero(lb != lb[0])[0])  # the second run starts here
        runs = [(t[0], t[cut - 1], int(lb[0])), (t[cut], t[-1], int(lb[cut]))]
        lo, hi, inner = min(runs, key=lambda run: run[1] - run[0])
        n = _on_circle((lo + hi) / 2) / 3
        vals = matmul(H, n)
        inside, outside = vals[lab == inner].min(), vals[lab != inner].max()
        sign = 1.0 if inner == 1 else -1.0
        row, r = sign * n, -sign * (inside + outside) / 2
    w = _affine(row[None, :], np.array([r]), bits, "chord")
    rr, rb = w.W[0], w.b[0]
    return Affine((tuple(-v for v in rr), rr), (-rb, rb), {"kind": "chord"})


def _fold(H: np.ndarray, lab: np.ndarray, bits: int) -> Affine[fmpq] | None:
    """Layer 2 for four label changes: ``h -> h - Q`` with ``Q`` where the lines of the chords
    across the two runs of one label meet (of the two labels, the pole whose distance from the
    circle is the least extreme: neither grazing it nor far away)."""
    cuts = _runs(_angles(H), lab)
    if len(cuts) != 4:
        return None
    pts = list(elementary.direction(np.array(cuts)))  # on the unit circle
    best = None
    for a, b, c, d in ((1, 2, 3, 0), (0, 1, 2, 3)):  # chords across label 0, or across label 1
        r, s = pts[b] - pts[a], pts[d] - pts[c]
        det = r[0] * s[1] - r[1] * s[0]
        if abs(det) < 1e-12:
            continue
        q = pts[c] - pts[a]
        t = (q[0] * s[1] - q[1] * s[0]) / det
        Q = pts[a] + t * r
        dist = norm(Q)
        if dist > 1 + 1e-9:
            key = abs(elementary.log(elementary.log(dist)))
            if best is None or key < best[0]:
                best = (key, Q)
    if best is None:
        return None
    Q = best[1]
    # stretch across Q, so that the image of the circle (an arc of half-width
    # asin(1 / |Q|)) spreads over about a right angle: the chord then cuts it well
    perp = matmul(E, np.array([-Q[1], Q[0]]) / norm(Q))
    W = np.eye(3) + (norm(Q) - 1) * np.outer(perp, perp)
    return _affine(W, -matmul(W, math.sqrt(3) * matmul(E, Q)), bits, "fold")


def sector_net(points: PointSet, depth: int, classes: Sequence[object] = (0, 1)) -> LNNet[fmpq]:
    """A certified width-3 net with exactly ``depth`` layers, eps 0, for points of the plane
    whose labels change at most twice (``depth >= 1``) or four times (``depth >= 2``) around
    some apex, or points of ``R^d`` (``d >= 3``) whose label-1 or label-0 points are where two
    affine functions are positive (:func:`wedge_plan`).  Raises :class:`InputError` when no apex
    has few enough changes, or (not expected) when no rounding in :data:`BITS` is certified."""
    if points.d < 2:
        raise InputError("the sector construction takes points of the plane or beyond, not R^1")
    if depth < 1:
        raise InputError(f"the sector construction needs depth >= 1, got {depth}")
    y = np.array([list(classes).index(label) for label in points.y])
    Y = np.array(points.floats(), dtype=float)
    most = 2 if depth == 1 or points.d > 2 else 4
    p = plan(Y, y, most) if points.d == 2 else wedge_plan(Y, y)
    if p is None:
        raise InputError(f"no apex around which the labels change at most {most} times")
    for bits in BITS:
        a = np.array([float(_dyadic(v, bits)) for v in p.apex])
        W1 = matmul(B, p.rho)
        layers = [_affine(W1, -matmul(B, a), bits, "apex")]
        H = _forward(layers, Y)
        if p.changes > 2:
            fold = _fold(H, y, bits)
            if fold is None:
                continue
            layers.append(fold)
            H = _forward(layers[1:], H)
        layers += [_affine(np.eye(3), np.zeros(3), bits, "pad")] * (depth - len(layers))
        net = LNNet(
            points.d,
            WIDTH,
            fmpq(0),
            tuple(layers),
            _chord(H, y, bits),
            tuple(classes),
            {"method": "sector", "changes": p.changes, "bits": bits},
        )
        if certify(net, points, workers=1).all_certified:
            return net
    raise InputError("sector construction: no rounding certified")
