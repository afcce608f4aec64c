"""Whole circle maps per layer: far shallower nets (``--method circle``, any number of classes).

With ``eps = 0`` every width-3 LayerNorm output lies on the circle of radius
``sqrt(3)`` in the plane orthogonal to ``(1, 1, 1)``.  In the orthonormal basis
``E = [u/|u|, v/|v|]`` (``u = (1, -1, 0)``, ``v = (1, 1, -2)``) a layer acts on
the angle only (proofs/circle_maps.md)::

    layer 1:    x   -> arg(N x + c)               (N: 2 x d),
    layer l>1:  phi -> arg(M (e(phi) - q))          (M: 2 x 2, q in the plane),

and the readout keeps each class on an arc of the circle (two classes: a
chord; ``k``: the polygon inscribed at the cuts, proofs/multiclass.md §7).
``phi -> arg(M (e(phi) - q))`` has at most two monotone pieces; for ``|q| > 1``
it *folds* the circle at the two points of contact of the tangents from ``q``
and merges the two arcs in the order of the lines through ``q``.  The order of
the points after the layer depends on ``q`` alone; ``M`` only spreads them (a
projective map of the directions).

So a net is searched combinatorially: the first layer's 2-D image and centre,
then per layer a pole ``q`` (equivalently its two fold points), scored by the
number ``B`` of label boundaries around the circle after the layer, then by the
smallest angle between neighbours of different labels, less the float error
their angles may carry (what float arithmetic must resolve; neighbours of one
label may merge freely).  A small beam of the best states is kept; the search
stops at ``k`` boundaries (every class one arc).  ``M = diag(1, k) R`` with
``k`` from a grid spreads the image.  Every weight is a float64, i.e. an exact
dyadic rational, and the search tracks the points exactly as NumPy float64
runs the net; the finished net is certified by :func:`lncapacity.certify` (ball
arithmetic) and run once in float64 in :func:`lncapacity.construct.build`.  With
``eps > 0`` the output lies strictly inside the disc: each layer is scaled by a
power of two so that ``eps`` shifts the radius by less than ``2^-40`` (the angle
never depends on ``eps``).  With two classes the search may hand over to ``runs``
(:class:`Handoff`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from flint import arb, fmpq

from ..floats import layer_norm
from ..model import Affine
from ..reproducible import (
    gram,
    matmul,
    norm,
    orthonormal_columns,
    solve,
    top_eigenvectors,
    torch_one_thread,
)

SQRT3 = math.sqrt(3.0)
E = np.array([[1.0, 1.0], [-1.0, 1.0], [0.0, -2.0]]) / np.array([math.sqrt(2), math.sqrt(6)])
"""Orthonormal basis of the plane orthogonal to ``(1, 1, 1)`` (columns ``u/|u|``, ``v/|v|``)."""

GAP_MIN = 2.0**-36
"""Smallest angle (radians) between neighbours of different labels that a layer may leave."""
SPREAD = np.array([1.0, 2.0, 4.0, 8.0, 16.0, 64.0, 256.0])
"""Candidate stretch factors ``k`` of ``M = diag(1, k) R`` (relative to the natural one)."""

COMFORT = 2.0**-20
"""Label gaps (radians) at or above this cost nothing in the ranking of states."""
LAMBDA = 1.0
"""Boundaries a state is charged per halving of its smallest label gap below :data:`COMFORT`."""
SMALL = 100
"""Sets of at most this many points get twice the beam and :data:`RESTARTS` seeds (cheap, and
near the bound every layer counts)."""
RESTARTS = 4
WORK = 600_000
"""Candidate poles times points scored per state and layer (fewer candidates for large sets)."""

Progress = Callable[[int, int], None]


ROUNDING_FIRST = 2.0**-44
"""Float64 error (radians) assumed at least for the angles after the first layer."""


@dataclass
class State:
    """The points after some layers, exactly as float64 computes them."""

    H: np.ndarray
    """``m x 3`` layer outputs (or ``m x d`` inputs before the first layer)."""
    layers: list[Affine[fmpq]] = field(default_factory=list)
    boundaries: int = 0
    gap: float = 0.0
    finish: float | None = None
    """Cache of :func:`finish`."""
    err: np.ndarray = field(kw_only=True)
    """Bound, per point, on the float64 error of the angles (:func:`_carry`)."""


def boundaries_cyclic(labels: np.ndarray) -> np.ndarray:
    """Label changes between cyclic neighbours, per row of a ``K x m`` label array."""
    return (labels != np.roll(labels, -1, axis=-1)).sum(axis=-1)


def plane(H: np.ndarray) -> np.ndarray:
    """Plane coordinates ``E^T h`` of layer outputs, scaled to the unit circle (eps = 0)."""
    return matmul(H, E) / SQRT3


def _score_orders(
    rel: np.ndarray, y: np.ndarray, cyclic: bool, err: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each row of angles ``rel`` (``K x m``): boundaries, smallest label gap, order.

    ``cyclic``: the angles go around the whole circle (the gap from the last
    point back to the first counts); otherwise they lie in an arc shorter
    than ``pi`` and the wrap-around is a boundary but not a gap to resolve.
    ``err`` (one per point): each angle is widened by :data:`SAFETY` times the float64
    error it may carry, and the gap between two neighbouring label runs is what is
    left between their widened hulls (so that float64 and the exact net agree: a
    point deep inside a run may carry a larger error than the gap at its run's end).
    """
    order = np.argsort(rel, axis=1, kind="stable")
    srt = np.take_along_axis(rel, order, axis=1)
    lab = y[order]
    b = boundaries_cyclic(lab)
    if err is not None:
        widths = SAFETY * err[order]
        rows = zip(srt, widths, lab, strict=True)
        gap = np.array([_widened_gap(*row, cyclic) for row in rows])
        return b, gap, order
    diff = np.diff(srt, axis=1)
    change = lab[:, 1:] != lab[:, :-1]
    gaps = np.where(change, diff, np.inf)
    gap = gaps.min(axis=1)
    if cyclic:
        wrap = srt[:, 0] + 2 * math.pi - srt[:, -1]
        gap = np.minimum(gap, np.where(lab[:, 0] != lab[:, -1], wrap, np.inf))
    return b, gap, order


def _widened_gap(theta: np.ndarray, width: np.ndarray, lab: np.ndarray, cyclic: bool) -> float:
    """The smallest space between the hulls of ``[theta - width, theta + width]`` over
    neighbouring label runs (sorted angles; ``inf`` with one run).  Negative when a
    widened point reaches its neighbour run, and so when it reaches any other run."""
    if cyclic:  # start at a label change, so that no run is split at the seam
        start = np.flatnonzero(lab != np.roll(lab, 1))
        if not len(start):
            return math.inf
        s = int(start[0])
        theta = np.r_[theta[s:], theta[:s] + 2 * math.pi]
        width, lab = np.roll(width, -s), np.roll(lab, -s)
    starts = np.r_[0, np.flatnonzero(lab[1:] != lab[:-1]) + 1]
    hi = np.maximum.reduceat(theta + width, starts)
    lo = np.minimum.reduceat(theta - width, starts)
    gaps = lo[1:] - hi[:-1]
    if cyclic and len(starts) > 1:
        gaps = np.r_[gaps, lo[0] + 2 * math.pi - hi[-1]]
    return float(gaps.min()) if len(gaps) else math.inf


def _first_candidates(X: np.ndarray, y: np.ndarray, rng: np.random.Generator, count: int):
    """2-D images ``Z = X Q`` (``d x 2`` matrices ``Q``) worth trying for layer 1."""
    m, d = X.shape
    Xc = X - X.mean(axis=0)
    scale = float(np.abs(Xc).max()) or 1.0
    Qs = []
    if d == 1:
        Qs.append(np.array([[1.0, 0.0]]))
    else:
        # least squares directions (Fisher-like) and principal directions
        # (BLAS-free: :mod:`lncapacity.reproducible`, so that every machine starts alike)
        k = int(y.max()) + 1
        A = np.c_[Xc, np.ones(m)]
        G = gram(A)
        G += np.eye(d + 1) * (1e-9 * np.trace(G) / (d + 1) + 1e-300)  # ridge: any rank
        targets = np.where(y == 1, 1.0, -1.0)[:, None] if k == 2 else np.eye(k)[y]
        B = solve(G, gram(A, targets))
        if k == 2:
            w = B[:d, 0] / (norm(B[:d, 0]) or 1.0)
            V = top_eigenvectors(gram(Xc - np.outer(matmul(Xc, w), w)), 2)
            Qs.append(np.c_[w, V[:, 0]])
            if d > 2:
                Qs.append(np.c_[w, V[:, 1]])
        else:  # the plane of the two leading discriminant directions (one-hot targets)
            Qs.append(top_eigenvectors(matmul(B[:d], B[:d].T), 2))
        Qs.append(top_eigenvectors(gram(Xc), 2))
        while len(Qs) < count:
            Qs.append(orthonormal_columns(rng.standard_normal((d, 2))))
    return [Q / scale for Q in Qs]


def _first_layer(
    X: np.ndarray, y: np.ndarray, rng: np.random.Generator, beam: int, centres: int
) -> list[tuple[int, float, np.ndarray, np.ndarray]]:
    """Candidate first layers ``(B, gap, Q, q)``: angle of ``X Q - q`` around ``q``."""
    out = []
    d = X.shape[1]
    for Q in _first_candidates(X, y, rng, 1 if d == 1 else 12):
        Z = matmul(X, Q)
        lo, hi = Z.min(axis=0), Z.max(axis=0)
        span = float(np.max(hi - lo)) or 1.0
        mid = (lo + hi) / 2
        if d == 1:
            # points on a line: every centre off the line gives the line's order
            qs = np.array([[mid[0], -span]])
        else:
            inner = mid + (rng.random((centres, 2)) - 0.5) * 1.2 * span
            ang = rng.random(centres // 2) * 2 * math.pi
            far = (
                mid
                + np.c_[np.cos(ang), np.sin(ang)]
                * span
                * rng.choice([0.75, 1.5, 4.0, 64.0], size=centres // 2)[:, None]
            )
            qs = np.r_[inner, far]
        radius = 0.1 * span
        for _ in range(REFINE + 1):
            rel = np.arctan2(Z[None, :, 1] - qs[:, None, 1], Z[None, :, 0] - qs[:, None, 0])
            b, gap, _ = _score_orders(rel, y, cyclic=True)
            found = [
                (int(b[k]), float(gap[k]), Q, qs[k]) for k in range(len(qs)) if gap[k] >= GAP_MIN
            ]
            out += found
            if d == 1 or not found:
                break
            # refine: centres around the best ones so far, closer each round
            found.sort(key=lambda c: _cost(c[0], c[1]))
            best = np.array([c[3] for c in found[:4]])
            qs = np.repeat(best, centres // 8, axis=0)
            qs = qs + rng.standard_normal(qs.shape) * radius
            radius /= 2
    out.sort(key=lambda c: _cost(c[0], c[1]))
    return out[:beam]


def _fold_poles(theta: np.ndarray, y: np.ndarray, rng: np.random.Generator, count: int):
    """Poles ``q`` outside the unit circle from pairs of fold points in the gaps.

    The tangents from ``q`` touch the circle at ``t1, t2``; then
    ``q = e((t1 + t2) / 2) / cos((t2 - t1) / 2)`` (proofs/circle_maps.md).
    """
    srt = np.sort(theta)
    nxt = np.r_[srt[1:], srt[0] + 2 * math.pi]
    order = np.argsort(theta, kind="stable")
    lab = y[order]
    change = lab != np.roll(lab, -1)
    m = len(theta)
    if m * (m - 1) // 2 <= count:
        i, j = np.triu_indices(m, 1)
        f1 = f2 = np.full(len(i), 0.5)
    else:
        bnd = np.flatnonzero(change)
        n = count
        pick = rng.random(n) < 0.7
        i = np.where(pick, rng.choice(bnd, n), rng.integers(0, m, n))
        j = np.where(rng.random(n) < 0.7, rng.choice(bnd, n), rng.integers(0, m, n))
        keep = i != j
        i, j = i[keep], j[keep]
        f1, f2 = rng.random(len(i)), rng.random(len(i))
    t1 = srt[i] + f1 * (nxt[i] - srt[i])
    t2 = srt[j] + f2 * (nxt[j] - srt[j])
    half = (t2 - t1) / 2
    c = np.cos(half)
    keep = np.abs(c) > 1e-9
    t1, t2, c = t1[keep], t2[keep], c[keep]
    mid = (t1 + t2) / 2
    return np.c_[np.cos(mid), np.sin(mid)] / c[:, None]


def _aligning_poles(theta: np.ndarray, y: np.ndarray, rng: np.random.Generator, count: int):
    """Poles of the fold involutions that swap two pairs of label-boundary gaps.

    The lines through ``q`` pair the points of the circle by a projective
    involution; one is determined by two swapped pairs ``a <-> b``, ``c <-> d``
    and has real fixed points (``|q| > 1``) when the pairs do not cross
    (proofs/circle_maps.md).  Swapping two boundary gaps merges their
    boundaries: this is how a layer removes them.
    """
    srt = np.sort(theta)
    m = len(srt)
    nxt = np.r_[srt[1:], srt[0] + 2 * math.pi]
    lab = y[np.argsort(theta, kind="stable")]
    bnd = np.flatnonzero(lab != np.roll(lab, -1))
    if len(bnd) < 4:
        bnd = np.arange(m)
    mids = (srt + nxt) / 2
    if int(y.max()) > 1 and (pairs := _matching_pairs(bnd, lab)) is not None:
        a, b, c, d = (mids[v] for v in _non_crossing(pairs, rng, count))
        count = len(a)
    else:
        pick = np.sort(rng.choice(bnd, (count, 4)), axis=1)
        pick = pick[(np.diff(pick, axis=1) > 0).all(axis=1)]
        count = len(pick)
        g = mids[pick]  # count x 4, increasing
        outer = rng.random(count) < 0.5  # (g0, g3), (g1, g2) or (g0, g1), (g2, g3)
        a = g[:, 0]
        b = np.where(outer, g[:, 3], g[:, 1])
        c = np.where(outer, g[:, 1], g[:, 2])
        d = np.where(outer, g[:, 2], g[:, 3])
    rot = rng.random(count) * 2 * math.pi  # keep the half-angle tangents finite
    sa, sb, sc, sd = (np.tan((v - rot) / 2) for v in (a, b, c, d))
    # g(s) = (al s + be) / (ga s - al): al (s1 + s2) + be - ga s1 s2 = 0 for both pairs
    u = np.c_[sa + sb, np.ones(count), -sa * sb]
    v = np.c_[sc + sd, np.ones(count), -sc * sd]
    al, be, ga = np.cross(u, v).T
    disc = al * al + be * ga
    ok = (disc > 0) & (np.abs(ga) > 1e-12)
    r = np.sqrt(np.where(ok, disc, 0.0))
    s1 = (al + r) / np.where(ok, ga, 1.0)
    s2 = (al - r) / np.where(ok, ga, 1.0)
    t1 = 2 * np.arctan(s1) + rot
    t2 = 2 * np.arctan(s2) + rot
    half = (t2 - t1) / 2
    cs = np.cos(half)
    ok &= np.abs(cs) > 1e-9
    mid = (t1 + t2) / 2
    q = np.c_[np.cos(mid), np.sin(mid)] / np.where(ok, cs, 1.0)[:, None]
    return q[ok]


def _matching_pairs(bnd: np.ndarray, lab: np.ndarray) -> np.ndarray | None:
    """Pairs ``i < j`` of boundary gaps whose swap merges them: labels ``(a | b)`` at gap
    ``i`` and ``(b | a)`` at gap ``j`` (a fold involution reverses the orientation).

    With two labels every other boundary matches; with ``k`` labels only about one in
    ``k (k - 1)``, so sampling gaps at random would almost never align two of them.
    None if fewer than two pairs match.
    """
    left, right = lab[bnd], lab[(bnd + 1) % len(lab)]
    i, j = np.triu_indices(len(bnd), 1)
    ok = (left[i] == right[j]) & (right[i] == left[j])
    if ok.sum() < 2:
        return None
    return np.c_[bnd[i[ok]], bnd[j[ok]]]


def _non_crossing(pairs: np.ndarray, rng: np.random.Generator, count: int):
    """``count`` draws of two pairs ``(a, b), (c, d)`` of ``pairs`` that neither cross nor
    share a gap (the two swaps of one fold involution with real fixed points)."""
    p = pairs[rng.integers(0, len(pairs), (2, count))]  # 2 x count x 2, each i < j
    (a, b), (c, d) = p[0].T, p[1].T
    nested = ((a < c) & (d < b)) | ((c < a) & (b < d))
    apart = (b < c) | (d < a)
    keep = nested | apart
    return a[keep], b[keep], c[keep], d[keep]


def _fold_layer_candidates(
    P: np.ndarray, y: np.ndarray, rng: np.random.Generator, count: int, keep: int
) -> list[tuple[int, float, np.ndarray]]:
    """The ``keep`` best poles ``(B, gap, q)`` for points ``P`` near the unit circle."""
    theta = np.arctan2(P[:, 1], P[:, 0])
    qs = np.r_[_fold_poles(theta, y, rng, count // 2), _aligning_poles(theta, y, rng, count)]
    out = []
    for s in range(0, len(qs), 256):
        qq = qs[s : s + 256]
        base = np.arctan2(-qq[:, 1], -qq[:, 0])[:, None]
        a = np.arctan2(P[None, :, 1] - qq[:, None, 1], P[None, :, 0] - qq[:, None, 0])
        rel = (a - base + math.pi) % (2 * math.pi) - math.pi
        b, gap, _ = _score_orders(rel, y, cyclic=False)
        for k in np.flatnonzero(gap >= GAP_MIN):
            out.append((int(b[k]), float(gap[k]), qq[k]))
    out.sort(key=lambda c: _cost(c[0], c[1]))
    return out[:keep]


def _moebius(t: np.ndarray, s: np.ndarray) -> np.ndarray:
    """The 2 x 2 matrix whose projective map sends slopes ``t[0..2]`` to ``s[0..2]``.

    Directions ``(x, y)`` with slope ``t = y / x``; ``M (x, y)`` has slope
    ``(b + a t) / (d + c t)`` for ``M = [[d, c], [b, a]]``.
    """

    def to_std(p: np.ndarray) -> np.ndarray:
        # the map sending p0, p1, p2 to 0, 1, inf: (t - p0)(p1 - p2) / ((t - p2)(p1 - p0))
        u, v = p[1] - p[2], p[1] - p[0]
        return np.array([[u, -p[0] * u], [v, -p[2] * v]])

    # matrices act on (t, 1) as column (numerator, denominator); F = S^-1 T, by the
    # adjugate (no LAPACK: the same bits on every machine)
    S, T = to_std(s), to_std(t)
    adjugate = np.array([[S[1, 1], -S[0, 1]], [-S[1, 0], S[0, 0]]])
    F = matmul(adjugate, T) / (S[0, 0] * S[1, 1] - S[0, 1] * S[1, 0])
    a, b, c, d = F[0, 0], F[0, 1], F[1, 0], F[1, 1]
    M = np.array([[d, c], [b, a]])
    return M / np.abs(M).max()


TARGET = 0.45 * math.pi
"""The image of the outermost points: the cone of directions becomes ``(-TARGET, TARGET)``."""
REFINE = 6
"""Rounds of local refinement of the first layer's centre."""
PIVOTS = (0.1, 0.25, 0.4, 0.5, 0.6, 0.75, 0.9)
"""Rank fractions of the point sent to direction 0 by the spreading map."""


def _spread(rel: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    """``M`` (2 x 2, acting on directions at angles ``rel`` in ``(-pi/2, pi/2)``) spreading them.

    A projective map of the directions sends the two outermost points to
    ``-+TARGET`` and the point of rank fraction ``f`` (from :data:`PIVOTS`) to
    0; the ``f`` giving the largest smallest label gap wins.
    """
    srt = np.sort(rel)
    t = np.tan(srt)
    best = (-math.inf, np.eye(2))
    for f in PIVOTS:
        k = min(max(round(f * (len(t) - 1)), 1), len(t) - 2) if len(t) > 2 else 0
        src = np.array([t[0], t[k], t[-1]])
        if not (src[0] < src[1] < src[2]):
            continue
        M = _moebius(src, np.tan(np.array([-TARGET, 0.0, TARGET])))
        V = matmul(np.c_[np.cos(rel), np.sin(rel)], M.T)
        if np.median(V[:, 0]) < 0:
            M, V = -M, -V
        new = np.arctan2(V[:, 1], V[:, 0])
        score = _evenness(new, y)
        if score > best[0]:
            best = (score, M)
    return best[1], best[0]


def _evenness(theta: np.ndarray, y: np.ndarray) -> float:
    """Mean log angle between neighbours of different labels (``-inf`` below :data:`GAP_MIN`)."""
    srt_i = np.argsort(theta, kind="stable")
    srt, lab = theta[srt_i], y[srt_i]
    d = np.diff(srt)[lab[1:] != lab[:-1]]
    if d.size == 0:
        return 0.0
    if d.min() < GAP_MIN:
        return -math.inf
    return float(np.log(d).mean())


def _affine(W: np.ndarray, b: np.ndarray, meta: dict[str, Any]) -> Affine[fmpq]:
    return Affine(
        tuple(tuple(fmpq(*float(w).as_integer_ratio()) for w in row) for row in W),
        tuple(fmpq(*float(v).as_integer_ratio()) for v in b),
        meta,
    )


def _scaled(G: np.ndarray, eps: float) -> float:
    """A power of two ``s`` so that ``s |g| >= 2^20 sqrt(eps)`` for every row ``g`` of ``G``."""
    r = float(np.linalg.norm(G, axis=1).min())
    if eps == 0 or r == 0:
        return 2.0 ** -round(math.log2(max(float(np.linalg.norm(G, axis=1).max()), 1e-300)))
    need = 2.0**20 * math.sqrt(eps) / r
    return 2.0 ** max(0, math.ceil(math.log2(need)))


def _cost(boundaries: int, gap: float) -> float:
    """Boundaries, plus :data:`LAMBDA` per halving of the label gap below :data:`COMFORT`."""
    return boundaries + LAMBDA * max(0.0, math.log2(COMFORT / gap))


def _rank(st: State) -> float:
    return _cost(st.boundaries, st.gap)


def _floats(a: Affine[fmpq]) -> tuple[np.ndarray, np.ndarray]:
    return (
        np.array([[float(w) for w in r] for r in a.W]),
        np.array([float(v) for v in a.b]),
    )


def _children(
    st: State, y: np.ndarray, eps: float, rng: np.random.Generator, candidates: int, keep: int
) -> list[State]:
    """The states one fold layer after ``st``, from its ``keep`` best poles."""
    P = plane(st.H)
    out = []
    for b, _, q in _fold_layer_candidates(P, y, rng, candidates, keep):
        base = math.atan2(-q[1], -q[0])
        a = np.arctan2(P[:, 1] - q[1], P[:, 0] - q[0])
        rel = (a - base + math.pi) % (2 * math.pi) - math.pi
        M, _ = _spread(rel, y)
        c, s_ = math.cos(base), math.sin(base)
        Mq = matmul(M, np.array([[c, s_], [-s_, c]]))  # rotate -q to angle 0, then spread
        s = _scaled(matmul(P - q, Mq.T), eps)
        # h = sqrt(3) E x, so x = E^T h / sqrt(3):  P (W h + c) = s E Mq (x - q)
        EMq = matmul(E, Mq)
        layer = _affine(
            matmul(s * EMq, E.T) / SQRT3, matmul(-s * EMq, q), {"kind": "circle", "boundaries": b}
        )
        H, theta, err = _carry(st.H, *_floats(layer), eps, st.err)
        bb, gg, _ = _score_orders(theta[None, :], y, cyclic=True, err=err)
        if gg[0] >= GAP_MIN:
            out.append(State(H, [*st.layers, layer], int(bb[0]), float(gg[0]), err=err))
    return out


def _carry(
    H: np.ndarray, W: np.ndarray, b: np.ndarray, eps: float, err: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One layer in float64: its outputs, their angles, and a bound on the angles' float
    error (``err``: the inputs'; None: the inputs are data, exact up to rounding).

    The angle after the layer is that of ``P = E^T (W h + b)`` (LayerNorm keeps it).  An
    input angle off by ``d`` moves ``h`` along its circle by ``t d`` to first order (``t``
    the tangent, ``|t| = |h|``) and by at most ``|h| d^2 / 2`` beyond, so ``P`` moves by
    ``D = E^T W t d`` and at most ``q = ||W|| |h| d^2 / 2`` more, and its angle by at most
    ``(|D_perp| + q) / (|P| - |D| - q)`` while that denominator is positive; otherwise the
    point may be at the pole, and its angle anything (``pi``).  Plus this layer's own
    rounding, :data:`ROUNDING` per unit of :func:`_condition`.  (The slope used to be
    measured by a finite turn of the inputs: near a pole that saturates at ``pi`` over
    the turn, and NumPy and PyTorch then put points half a circle apart where the bound
    said ``2^-17``.)"""
    Z = matmul(H, W.T) + b
    out = layer_norm(Z, eps)
    theta = np.arctan2(*(plane(out)).T[::-1])
    P = matmul(Z, E)
    size = np.linalg.norm(P, axis=1)  # |z - mean z|: E is an orthonormal basis of the plane
    fresh = ROUNDING * _condition(H, W, b, size)
    if err is None:
        return out, theta, np.minimum(np.maximum(fresh, ROUNDING_FIRST), math.pi)
    c = matmul(H, E)  # the inputs in the plane (radius |h|)
    tangent = matmul(np.c_[-c[:, 1], c[:, 0]], E.T)
    D = matmul(matmul(tangent, W.T), E) * err[:, None]
    # the Frobenius norm bounds the operator norm ||W|| (and needs no LAPACK)
    q = norm(W) * np.linalg.norm(c, axis=1) * err * err / 2
    perp = np.abs(P[:, 0] * D[:, 1] - P[:, 1] * D[:, 0]) / size
    room = size - np.linalg.norm(D, axis=1) - q
    with np.errstate(divide="ignore", invalid="ignore"):
        turn = np.where(room > 0, (perp + q) / room, math.pi)
    return out, theta, np.minimum(turn + fresh, math.pi)


def _condition(H: np.ndarray, W: np.ndarray, b: np.ndarray, centred: np.ndarray) -> np.ndarray:
    """Per point, how much float64 rounding of ``z = W h + b`` can turn its angle, in ulps:
    ``| |W| |h| + |b| | / |z - mean z|`` (``centred``: the denominator; cancellation near a
    pole is what makes it large)."""
    size = matmul(np.abs(H), np.abs(W).T) + np.abs(b)
    return np.linalg.norm(size, axis=1) / centred


ROUNDING = 2.0**-49
"""Float64 error (radians) one layer adds to an angle, per unit of :func:`_condition`: a few
ulps (measured against 300-bit balls: the estimate stays above the true error, 2^-4 of it at
most on random sets; without the condition it fell short by up to 2^13 near poles)."""
SAFETY = 4.0
"""How many times its float error bound each angle is widened by when label gaps are
measured (:func:`_score_orders`): the bound is carried rigorously to first order, with the
second-order rest bounded (:func:`_carry`), so this covers only :data:`ROUNDING`'s being
measured (on NumPy; PyTorch's LayerNorm rounds differently)."""


def search(
    X: np.ndarray,
    y: np.ndarray,
    eps: float,
    *,
    max_depth: int,
    seed: int = 0,
    beam: int = 4,
    candidates: int = 1500,
    warm: bool = True,
    handoff: bool = False,
    progress: Progress | None = None,
    reached: list[int] | None = None,
) -> State | None:
    """A beam search for layers leaving every class one arc (``k`` boundaries); None if
    not found.  ``reached``: a list that is left holding the fewest boundaries of any state
    kept (how close a failed search came).

    ``X``: the points as float64 (``m x d``), ``y`` labels ``0 .. k-1``, each
    present.  Deterministic for ``seed``.  The returned state has the layers
    (exact dyadic weights) and the float64 outputs ``H`` of the last one.  With
    ``warm`` (and PyTorch installed, data in ``R^d``, ``d > 1``) the first layers of
    small nets trained by Adam compete as starting states (:func:`_trained_starts`).
    States are ranked by boundaries plus :data:`LAMBDA` per halving of the label gap
    below :data:`COMFORT` (what float arithmetic must keep resolving).

    ``handoff``: the search may stop early with the state whose :func:`finish`
    (its depth plus the layers ``runs`` needs from it) is least: once that is no more
    than the depth the circle's pace over the last :data:`PATIENCE` layers projects,
    or when the search ends without finishing.  Then the returned
    state may have more than ``k`` boundaries; the caller finishes it with ``runs``.
    """
    rng = np.random.default_rng(seed)
    k = int(y.max()) + 1
    states = []
    for b, gap, Q, q in _first_layer(X, y, rng, beam, 256):
        M = np.eye(2)
        s = _scaled(matmul(matmul(X, Q) - q, M.T), eps)
        EM = matmul(E, M)
        layer = _affine(
            matmul(s * EM, Q.T), matmul(-s * EM, q), {"kind": "circle-first", "boundaries": b}
        )
        H, _, err = _carry(X, *_floats(layer), eps)
        states.append(State(H, [layer], b, gap, err=err))
    if warm and X.shape[1] > 1:
        states += [st for st in _trained_starts(X, y, eps, seed, max_depth) if st.gap >= GAP_MIN]
    kept: State | None = None  # handoff: the state with the least finish so far
    history: dict[int, int] = {}  # depth -> fewest boundaries reached
    while states:
        best = min(states, key=lambda s: (s.boundaries, -s.gap))
        depth = len(best.layers)
        history[depth] = best.boundaries
        if reached is not None:
            reached[:] = [min(history.values())]
        if handoff:
            for st in states:
                if finish(st, y) < (math.inf if kept is None else finish(kept, y)):
                    kept = st
        if progress:
            guess = depth + _estimate(best.boundaries - k + 2)
            if kept is not None:
                guess = min(guess, finish(kept, y))
            progress(depth, max(depth, min(max_depth, guess)))
        if best.boundaries <= k:
            return best if kept is None or finish(best, y) <= finish(kept, y) else kept
        if depth >= max_depth:
            break
        if handoff and kept is not None and depth - PATIENCE in history:
            # hand over once runs from the kept state beats the circle's recent pace
            pace = (history[depth - PATIENCE] - best.boundaries) / PATIENCE
            if pace <= 0 or finish(kept, y) <= depth + (best.boundaries - k) / pace:
                break
        if depth - 2 * PATIENCE in history and best.boundaries - k > 2 * PATIENCE:
            # give up when the pace over the last layers cannot finish within max_depth
            # (not near the end, where a few boundaries may take a few tries)
            pace = (history[depth - 2 * PATIENCE] - best.boundaries) / (2 * PATIENCE)
            if pace <= 0 or depth + (best.boundaries - k) / pace > GIVE_UP * max_depth:
                break
        expanded = [c for st in states for c in _children(st, y, eps, rng, candidates, 2 * beam)]
        expanded.sort(key=_rank)
        # diversity: at most two states per boundary count
        states, seen = [], Counter()
        for st in expanded:
            if seen[st.boundaries] < 2:
                states.append(st)
                seen[st.boundaries] += 1
            if len(states) == beam:
                break
    return kept


PATIENCE = 6
"""Layers over which the handoff search measures its pace (boundaries removed per layer)."""
GIVE_UP = 1.5
"""The search stops when its pace over ``2 PATIENCE`` layers projects more than this many
times ``max_depth`` (it would not beat ``runs``: the time is better spent there)."""
HANDOFF_ARC = 0.9 * math.pi
"""The widest arc of points ``runs`` can take over: ``a . h`` is monotone in the angle on it."""
HANDOFF_GAP = 2.0**-20
"""The smallest label gap (radians) of a state ``runs`` takes over: its float search needs
room (measured on random points in R^3: from a state with gaps near ``2^-24`` (m = 400),
runs ran out of float resolution within 40 layers; from ``2^-16`` (m = 400) and ``2^-20``
(m = 1000) it finished).  When it does not, ``build`` uses ``runs`` alone."""


HANDOFF_ERR = 2.0**-30
"""The largest float64 error (radians, :attr:`State.err`) a state ``runs`` takes over may
carry.  ``runs`` keeps the true values widened by it apart (:attr:`Handoff.slack`), so
float64 stays faithful; wider slack leaves it too little room (measured on 1000 random
points in R^3: from states with errors near ``2^-24`` it ran out of float resolution
after about 180 layers; without the slack, one point in 1000 went wrong in float64)."""


HANDOFF_ROUNDING = 2.0**-48
"""Float64 rounding of ``read . h`` itself, and of the radius with eps > 0 (scaled so that
``eps`` is below ``2^-40`` of the squared norm, :func:`_scaled`), with room."""


def handoff_read(H: np.ndarray) -> np.ndarray | None:
    """A read ``a`` (3 floats) with ``a . h = sin(phi - mu)`` increasing on the points' arc.

    ``mu`` is the middle of the arc the points occupy (the circle minus its widest
    empty gap); None if that arc is wider than :data:`HANDOFF_ARC` (then no read
    is monotone on it: a linear read of the circle folds it).
    """
    theta = np.sort(np.arctan2(*plane(H).T[::-1]))
    gaps = np.diff(np.r_[theta, theta[0] + 2 * math.pi])
    i = int(np.argmax(gaps))
    arc = 2 * math.pi - float(gaps[i])
    if arc > HANDOFF_ARC:
        return None
    mu = float(theta[(i + 1) % len(theta)]) + arc / 2
    return matmul(E, np.array([-math.sin(mu), math.cos(mu)])) / SQRT3


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


TRAIN_DEPTHS = (1, 2)
"""Depths of the nets trained by Adam as warm starts."""
TRAIN_STEPS = 1500


def _trained_starts(
    X: np.ndarray, y: np.ndarray, eps: float, seed: int, max_depth: int
) -> list[State]:
    """States after the layers of small LN-Nets trained by Adam (float64, seeded).

    Real data has structure a 2-D angle can see at once (a depth-2 LN-Net trained
    for seconds gets about 99% of digits even/odd right): its layers, taken as
    the exact dyadic rationals their float64 weights are, leave few label
    boundaries for the folds to remove.  Empty without PyTorch.
    """
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is an optional dependency
        return []
    mu = X.mean(axis=0)
    sd = float(np.abs(X - mu).max()) or 1.0
    out = []
    with torch_one_thread(torch):
        Xs = torch.tensor((X - mu) / sd, dtype=torch.float64)
        k = int(y.max()) + 1
        sign = torch.tensor(np.where(y == 1, 1.0, -1.0), dtype=torch.float64)
        target = torch.tensor(y, dtype=torch.long)
        gen = torch.Generator().manual_seed(seed)
        for depth in TRAIN_DEPTHS:
            if depth > max_depth:
                continue
            params, fan_in = [], X.shape[1]
            for _ in range(depth):
                params += [
                    torch.randn(3, fan_in, generator=gen, dtype=torch.float64) / fan_in**0.5,
                    torch.randn(3, generator=gen, dtype=torch.float64) * 0.1,
                ]
                fan_in = 3
            if k == 2:  # one score, logistic loss
                params.append(torch.randn(3, generator=gen, dtype=torch.float64))
                params.append(torch.zeros(1, dtype=torch.float64))
            else:  # k scores, cross-entropy
                params.append(torch.randn(3, k, generator=gen, dtype=torch.float64))
                params.append(torch.zeros(k, dtype=torch.float64))
            for p in params:
                p.requires_grad_(True)
            opt = torch.optim.Adam(params, lr=0.05)
            for _ in range(TRAIN_STEPS):
                opt.zero_grad()
                h = Xs
                for i in range(depth):
                    h = torch.nn.functional.layer_norm(
                        h @ params[2 * i].T + params[2 * i + 1], (3,), eps=eps
                    )
                if k == 2:
                    score = h @ params[-2] + params[-1][0]
                    torch.nn.functional.softplus(-4 * sign * score).mean().backward()
                else:
                    logits = 4 * (h @ params[-2] + params[-1])
                    torch.nn.functional.cross_entropy(logits, target).backward()
                opt.step()
            layers, H, err = [], X, None
            for i in range(depth):
                W = params[2 * i].detach().numpy().copy()
                b = params[2 * i + 1].detach().numpy().copy()
                if i == 0:  # undo the standardisation: W (x - mu) / sd + b
                    W, b = W / sd, b - matmul(W, mu) / sd
                G = matmul(matmul(H, W.T) + b, E)
                s = _scaled(G, eps)
                layer = _affine(s * W, s * b, {"kind": "trained"})
                H, theta, err = _carry(H, *_floats(layer), eps, err)
                layers.append(layer)
            bb, gg, _ = _score_orders(theta[None, :], y, cyclic=True, err=err)
            for layer in layers:
                layer.meta["boundaries"] = int(bb[0])  # type: ignore[index]
            out.append(State(H, layers, int(bb[0]), float(gg[0]), err=err))
    return out


def _estimate(b: int) -> int:
    return max(0, math.ceil(math.log2(b + 2)) - 2)


def readout(H: np.ndarray, y: np.ndarray) -> Affine[fmpq] | None:
    """The readout of labels ``0 .. k-1`` forming ``k`` arcs: :func:`chord` for two,
    :func:`polygon` for more; None if they do not form ``k`` arcs (in float64)."""
    return chord(H, y) if int(y.max()) == 1 else polygon(H, y)


def _arcs(H: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Angles sorted, their labels, and the indices ``i`` with a label change from
    sorted point ``i`` to ``i + 1`` (cyclically); None unless each label is one arc."""
    theta = np.arctan2(*plane(H).T[::-1])
    order = np.argsort(theta, kind="stable")
    lab = y[order]
    ch = np.flatnonzero(lab != np.roll(lab, -1))
    if len(ch) != int(y.max()) + 1:
        return None
    return theta[order], lab, ch


def _gap_middle(srt: np.ndarray, i: int) -> float:
    """The angle halfway from sorted point ``i`` to the next (cyclically, unwrapped)."""
    m = len(srt)
    return (srt[i] + srt[(i + 1) % m] + (2 * math.pi if i + 1 >= m else 0.0)) / 2


def polygon(H: np.ndarray, y: np.ndarray) -> Affine[fmpq] | None:
    """An argmax readout for ``k >= 3`` classes, each one arc of the circle.

    Cut the circle in the middle of the ``k`` gaps between arcs: the cut points
    are the vertices of a convex polygon inscribed in the circle, and the arc of
    class ``c`` is the cap beyond its edge.  Score ``c`` is the signed distance
    beyond that edge, ``e(mu_c) . p - cos(w_c)`` (``mu_c`` the middle and ``w_c``
    the half-width of the arc between its cuts): positive on the arc, negative
    on every other arc (the edges' lines meet the circle only at the cuts), so
    the argmax is ``c`` exactly on the arc (proofs/multiclass.md, the circle
    readout).  ``p = E^T h / sqrt(3)``, so row ``c`` is ``E e(mu_c) / sqrt(3)``.
    """
    arcs = _arcs(H, y)
    if arcs is None:
        return None
    srt, lab, ch = arcs
    k = len(ch)
    cuts = [_gap_middle(srt, int(i)) for i in ch]
    W, b = np.zeros((k, 3)), np.zeros(k)
    for j in range(k):
        lo, hi = cuts[j], cuts[(j + 1) % k]
        if hi <= lo:
            hi += 2 * math.pi
        c = int(lab[(ch[j] + 1) % len(lab)])  # the label of the arc after cut j
        mid, half = (lo + hi) / 2, (hi - lo) / 2
        W[c] = matmul(E, np.array([math.cos(mid), math.sin(mid)])) / SQRT3
        b[c] = -math.cos(half)
    layer = _affine(W, b, {"kind": "arcs", "cuts": [float(g) for g in cuts]})
    Wf, bf = _floats(layer)
    if not (np.argmax(matmul(H, Wf.T) + bf, axis=1) == y).all():
        return None
    return layer


def chord(H: np.ndarray, y: np.ndarray) -> Affine[fmpq] | None:
    """A chord readout: rows ``(-a, a)``, biases ``(t, -t)`` with ``a . h > t`` exactly on label 1.

    ``a = E n`` for the unit normal ``n`` pointing to the middle of the label-1
    arc; ``t`` halfway between the two labels' extreme values.  None if the
    labels do not form two arcs (in float64).
    """
    arcs = _arcs(H, y)
    if arcs is None:
        return None
    srt, lab, ch = arcs
    m = len(srt)
    g = [_gap_middle(srt, int(i)) for i in ch]
    # the arc from g[k] to g[k+1] counter-clockwise holds label lab[ch[k]+1]
    k = 0 if lab[(ch[0] + 1) % m] == 1 else 1
    alpha, beta = g[k], g[1 - k]
    if beta < alpha:
        beta += 2 * math.pi
    mid = (alpha + beta) / 2
    a = matmul(E, np.array([math.cos(mid), math.sin(mid)]))
    sc = matmul(H, a)
    lo, hi = float(sc[y == 0].max()), float(sc[y == 1].min())
    if not lo < hi:
        return None
    t = (lo + hi) / 2
    W = np.array([-a, a])
    return _affine(W, np.array([t, -t]), {"kind": "chord", "threshold": float(t)})


def identity_layer(eps: float) -> Affine[fmpq]:
    """``h -> LN(s h)``: the identity on the circle (eps = 0), a radial shrink of less than
    ``2^-40`` otherwise (``s`` a power of two with ``3 s^2 >= 2^40 eps / 3``)."""
    s = _scaled(np.full((1, 2), SQRT3), eps)
    W = s * np.eye(3)
    return _affine(W, np.zeros(3), {"kind": "pad"})


def circle_state(
    X: np.ndarray,
    y: np.ndarray,
    eps: float,
    *,
    max_depth: int,
    seed: int = 0,
    beam: int = 4,
    restarts: int | None = None,
    warm: bool = True,
    handoff: bool = False,
    progress: Progress | None = None,
) -> State | None:
    """The best state of :func:`search` over ``restarts`` seeds (default :data:`RESTARTS`
    for at most :data:`SMALL` points, else one), each asked to beat the best so far;
    ``warm``: trained nets compete as starts (the first seed, more than :data:`SMALL`
    points).  With ``handoff``
    states are compared by :func:`finish`, otherwise only finished ones count.  By
    default a search that finds nothing but came :data:`CLOSE` is followed by another
    seed, up to :data:`RESTARTS` in all."""
    m = len(y)
    k = int(y.max()) + 1
    candidates = max(200, min(4000, WORK // max(m, 1)))
    if m <= SMALL:
        beam *= 2
    st = None
    retry = restarts is None and m > SMALL and not handoff
    if restarts is None:
        restarts = RESTARTS if m <= SMALL else 1
    r = 0
    while r < restarts:
        limit = max_depth if st is None else math.ceil(finish(st, y)) - 1
        if limit < 1:
            break
        reached: list[int] = []
        with np.errstate(all="ignore"):  # extreme data: NaN gaps simply fail the search
            found = search(
                X,
                y,
                eps,
                max_depth=limit,
                seed=seed * RESTARTS + r,
                beam=beam,
                candidates=candidates,
                # trained starts once, and for more than SMALL points only: they cost more
                # than a search, and small sets get RESTARTS seeds instead
                warm=warm and r == 0 and m > SMALL,
                handoff=handoff,
                progress=progress,
                reached=reached,
            )
        if found is not None and (st is None or finish(found, y) < finish(st, y)):
            st = found
        close = bool(reached) and reached[0] <= (CLOSE + 1) * k
        if retry and st is None and close and restarts < RESTARTS:
            restarts += 1
        r += 1
    return st


CLOSE = 4
"""A search that leaves at most ``CLOSE k`` boundaries more than it needs is retried with
another seed (:func:`circle_state`): measured on random sets (``m = 200``), a seed that
fails at ``k = 5`` stops 10 to 17 boundaries short and the next seed finishes about every
other time; at ``k = 10`` all stop about 42 short, and at ``m = 1000`` hundreds."""


def circle_net(
    X: np.ndarray, y: np.ndarray, eps: float, **search: Any
) -> tuple[list[Affine[fmpq]], Affine[fmpq]] | None:
    """Layers and a readout (a row per label ``0 .. k-1``) classifying ``(X, y)`` in float64.

    ``search``: the keywords of :func:`circle_state` (``max_depth`` among them).  None
    when the search finds nothing within ``max_depth`` layers.  The result is *not yet
    certified*: :func:`lncapacity.certify` decides.
    """
    st = circle_state(X, y, eps, **search)
    if st is None:
        return None
    r = readout(st.H, y)
    return None if r is None else (st.layers, r)


CIRCLE_META = ("circle_boundaries", "runs_depth", "circle_layers", "handoff")
"""The keys :func:`build_circle` adds to a net's ``meta`` (dropped when runs replaces it)."""


@dataclass
class Handoff:
    """Circle layers for ``runs`` to finish: it folds the scalars ``read . h`` of their
    outputs, known as balls from the exact inputs (``t``: their float64 values)."""

    layers: list[Affine[fmpq]]
    read: tuple[fmpq, ...]
    t: list[fmpq]
    start: Callable[[int], list[Any]]
    """``prec -> balls`` of the true ``read . h`` of every point (:class:`~.fold.Chain`)."""
    slack: np.ndarray
    """How far float64's ``read . h`` may be from the true one, per point (``|read| <= 1 /
    sqrt 3``, so the angle's error bound :attr:`State.err`, doubled, plus rounding)."""


def build_circle(
    points: Any,
    yk: Sequence[int],
    present: Sequence[Any],
    classes: Sequence[Any],
    eps: fmpq,
    depth: int | None,
    seed: int,
    progress: Progress | None,
    meta: dict[str, Any],
) -> Any:
    """The circle method's entry point from :func:`~lncapacity.construct.build`.

    Returns an :class:`~lncapacity.model.LNNet` (every class one arc after the
    circle layers; ``build`` certifies it), a :class:`Handoff` when circle layers
    followed by ``runs`` are shallower than either alone, or None after noting in
    ``meta`` (``method = "runs"``, ``fallback``) why ``runs`` is used instead: the
    search found nothing shallower than ``runs`` would build (its depth is the
    number of label runs along the projection minus ``k``).
    With ``depth``, the net is padded with identity layers.
    """
    from ..model import LNNet
    from .project import project, runs

    y = np.asarray(yk)
    k = len(present)
    _, t = project(points.X, list(yk), seed=seed)
    order = sorted(range(len(t)), key=t.__getitem__)
    runs_depth = max(0, runs([yk[i] for i in order]) - k)
    limit = runs_depth - 1 if depth is None else min(depth, runs_depth - 1)
    st = None
    if limit >= 1:
        st = circle_state(
            points.floats(),
            y,
            float(eps),
            max_depth=limit,
            seed=seed,
            handoff=k == 2,  # runs with k labels loses float resolution fast (multiclass §6)
            progress=progress,
        )
    layers, chosen = [], None
    if st is not None and finish(st, y) <= limit:
        layers = st.layers
        chosen = readout(st.H, y) if st.boundaries <= k else handoff_read(st.H)
    if chosen is None:
        why = f"runs needs {runs_depth} layer{'s' * (runs_depth != 1)}" + (
            " and the search found no circle net with fewer"
            if runs_depth > 1
            else ": a circle net (at least one layer) cannot be shallower"
        )
        if depth is not None and depth < runs_depth - 1:
            why += f" (at most {depth} asked)"
        meta.update(method="runs", fallback=f"circle: {why}; runs used")
        if limit >= 1 and (note := getattr(progress, "note", None)):  # a search ran: say so now
            note(f"circle gave way to runs: {why}")
        return None
    meta.update(
        circle_boundaries=[lay.meta.get("boundaries") for lay in layers],
        runs_depth=runs_depth,
        circle_layers=len(layers),
    )
    if isinstance(chosen, np.ndarray):  # a read: runs finishes
        read = tuple(fmpq(*float(v).as_integer_ratio()) for v in chosen)
        values = [fmpq(*float(v).as_integer_ratio()) for v in matmul(st.H, chosen)]
        meta["handoff"] = f"runs after {len(layers)} circle layers"
        if note := getattr(progress, "note", None):
            note(f"circle: {len(layers)} layers leave {st.boundaries} boundaries; runs finishes")
        prefix = LNNet(points.d, 3, eps, tuple(layers), Affine((read,), (fmpq(0),)), (0,), {})

        def start(prec: int) -> list[Any]:  # called inside arith.precision(prec)
            net = prefix.map(arb)
            return [net.forward([arb(v) for v in x], arb.sqrt)[0] for x in points.X]

        return Handoff(layers, read, values, start, 2 * st.err + HANDOFF_ROUNDING)
    needed = len(layers)
    layers = layers + [identity_layer(float(eps))] * ((depth or needed) - needed)
    zero = tuple(fmpq(0) for _ in range(3))
    rows = dict(zip(present, zip(chosen.W, chosen.b, strict=True), strict=True))
    W = tuple(rows[c][0] if c in rows else zero for c in classes)
    b = tuple(rows[c][1] if c in rows else fmpq(-1) for c in classes)
    meta.update(folds=needed, depth=len(layers))
    return LNNet(points.d, 3, eps, tuple(layers), Affine(W, b, chosen.meta), tuple(classes), meta)
