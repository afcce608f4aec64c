"""The layers the circle search tries (``--method circle``).

The first layer's 2-D images ``X Q`` and centres ``q`` (``_first_layer``); the poles
``q`` of a later layer ``phi -> arg(M (e(phi) - q))``, from pairs of fold points in the
label gaps (``_fold_poles``) or from fold involutions that swap two pairs of
label-boundary gaps (``_aligning_poles``); and the projective map ``M`` that
spreads the points' directions after a pole (``_spread``).  proofs/circle_maps.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ...elementary import atan, atan2, cos, direction, log, tan
from ...reproducible import gram, matmul, norm, orthonormal_columns, solve, top_eigenvectors
from .state import GAP_MIN, _cost, _score_directions, _score_slopes


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
    X: np.ndarray,
    y: np.ndarray,
    rng: np.random.Generator,
    beam: int,
    centres: int,
    gap_min: float = GAP_MIN,
    cost: Callable[[np.ndarray, np.ndarray], np.ndarray] = _cost,
) -> list[tuple[int, float, np.ndarray, np.ndarray]]:
    """Candidate first layers ``(B, gap, Q, q)``: angle of ``X Q - q`` around ``q`` (label
    gaps at least ``gap_min``, ranked by ``cost``, as in ``_fold_layer_candidates``)."""
    out: list[tuple[float, tuple[int, float, np.ndarray, np.ndarray]]] = []
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
                + direction(ang)
                * span
                * rng.choice([0.75, 1.5, 4.0, 64.0], size=centres // 2)[:, None]
            )
            qs = np.r_[inner, far]
        radius = 0.1 * span
        for _ in range(REFINE + 1):
            u = Z[None, :, 0] - qs[:, None, 0]
            v = Z[None, :, 1] - qs[:, None, 1]
            b, gap = _score_directions(u, v, y)
            ok = np.flatnonzero(gap >= gap_min)
            costs = cost(b[ok], gap[ok])
            out += [
                (c, (int(b[k]), float(gap[k]), Q, qs[k])) for c, k in zip(costs, ok, strict=True)
            ]
            if d == 1 or not len(ok):
                break
            # refine: centres around the best ones so far, closer each round
            best = qs[ok[np.argsort(costs, kind="stable")[:4]]]
            qs = np.repeat(best, centres // 8, axis=0)
            qs = qs + rng.standard_normal(qs.shape) * radius
            radius /= 2
    out.sort(key=lambda c: c[0])
    return [c for _, c in out[:beam]]


def _fold_poles(theta: np.ndarray, y: np.ndarray, rng: np.random.Generator, count: int):
    """Poles ``q`` outside the unit circle from pairs of fold points in the gaps.

    The tangents from ``q`` touch the circle at ``t1, t2``; then
    ``q = e((t1 + t2) / 2) / cos((t2 - t1) / 2)`` (proofs/circle_maps.md).
    """
    srt = np.sort(theta, kind="stable")
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
    c = cos(half)
    keep = np.abs(c) > 1e-9
    t1, t2, c = t1[keep], t2[keep], c[keep]
    mid = (t1 + t2) / 2
    return direction(mid) / c[:, None]


def _aligning_poles(theta: np.ndarray, y: np.ndarray, rng: np.random.Generator, count: int):
    """Poles of the fold involutions that swap two pairs of label-boundary gaps.

    The lines through ``q`` pair the points of the circle by a projective
    involution; one is determined by two swapped pairs ``a <-> b``, ``c <-> d``
    and has real fixed points (``|q| > 1``) when the pairs do not cross
    (proofs/circle_maps.md).  Swapping two boundary gaps merges their
    boundaries: this is how a layer removes them.
    """
    srt = np.sort(theta, kind="stable")
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
    sa, sb, sc, sd = (tan((v - rot) / 2) for v in (a, b, c, d))
    # g(s) = (al s + be) / (ga s - al): al (s1 + s2) + be - ga s1 s2 = 0 for both pairs
    u = np.c_[sa + sb, np.ones(count), -sa * sb]
    v = np.c_[sc + sd, np.ones(count), -sc * sd]
    al, be, ga = np.cross(u, v).T
    disc = al * al + be * ga
    ok = (disc > 0) & (np.abs(ga) > 1e-12)
    r = np.sqrt(np.where(ok, disc, 0.0))
    s1 = (al + r) / np.where(ok, ga, 1.0)
    s2 = (al - r) / np.where(ok, ga, 1.0)
    t1 = 2 * atan(s1) + rot
    t2 = 2 * atan(s2) + rot
    half = (t2 - t1) / 2
    cs = cos(half)
    ok &= np.abs(cs) > 1e-9
    mid = (t1 + t2) / 2
    q = direction(mid) / np.where(ok, cs, 1.0)[:, None]
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
    P: np.ndarray,
    y: np.ndarray,
    rng: np.random.Generator,
    count: int,
    keep: int,
    gap_min: float = GAP_MIN,
    cost: Callable[[np.ndarray, np.ndarray], np.ndarray] = _cost,
) -> list[tuple[int, float, np.ndarray]]:
    """The ``keep`` best poles ``(B, gap, q)`` for points ``P`` near the unit circle
    (label gaps at least ``gap_min``, ranked by ``cost``; ``objective="depth"`` passes
    its own, :mod:`.precise`)."""
    theta = atan2(P[:, 1], P[:, 0])
    qs = np.r_[_fold_poles(theta, y, rng, count // 2), _aligning_poles(theta, y, rng, count)]
    bs, gaps, poles = [], [], []
    batch = max(256, BATCH // max(len(P), 1))
    for s in range(0, len(qs), batch):
        qq = qs[s : s + batch]
        b, gap = _score_slopes(*seen_from(P, qq), y)
        ok = gap >= gap_min
        bs.append(b[ok])
        gaps.append(gap[ok])
        poles.append(qq[ok])
    if not poles:
        return []
    b, gap, q = np.concatenate(bs), np.concatenate(gaps), np.concatenate(poles)
    best = np.argsort(cost(b, gap), kind="stable")[:keep]
    return [(int(b[k]), float(gap[k]), q[k]) for k in best]


def seen_from(P: np.ndarray, qq: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The directions of the points ``P`` (``m x 2``) seen from each pole of ``qq`` (``K x 2``)
    in the frame whose first axis points from the pole to the centre (``K x m`` each, both
    scaled by ``|q|``): the directions a fold layer reads (proofs/circle_maps.md §1), a
    cone in front of the pole (the first coordinate positive) for a pole off the circle."""
    du = P[None, :, 0] - qq[:, None, 0]
    dv = P[None, :, 1] - qq[:, None, 1]
    a, b = -qq[:, 0, None], -qq[:, 1, None]  # the axis, -q
    u = a * du
    u += b * dv
    dv *= a
    du *= b
    dv -= du
    return u, dv  # (a du + b dv, a dv - b du)


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
_TARGET_SLOPES = tan(np.array([-TARGET, 0.0, TARGET]))
REFINE = 6
"""Rounds of local refinement of the first layer's centre."""
BATCH = 1 << 16
"""Poles times points scored at once by ``_fold_layer_candidates`` (at least 256 poles)."""
PIVOTS = (0.1, 0.25, 0.4, 0.5, 0.6, 0.75, 0.9)
"""Rank fractions of the point sent to direction 0 by the spreading map."""


def _spread(
    u: np.ndarray, v: np.ndarray, y: np.ndarray, gap_min: float = GAP_MIN
) -> tuple[np.ndarray, float]:
    """``M`` (2 x 2, acting on the directions ``(u, v)`` of a cone ``u > 0``, as
    :func:`seen_from` gives them) spreading them.

    A projective map of the directions sends the two outermost points to
    ``-+TARGET`` and the point of rank fraction ``f`` (from :data:`PIVOTS`) to
    0; the ``f`` giving the largest smallest label gap wins (``_evenness``, with
    ``gap_min``; the first of equals).  It acts on the slopes ``v / u`` (:func:`_moebius`).
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.sort(v / u, kind="stable")  # stable: -0.0 and 0.0 in one order everywhere
    Ms = []
    for f in PIVOTS:
        k = min(max(round(f * (len(t) - 1)), 1), len(t) - 2) if len(t) > 2 else 0
        src = np.array([t[0], t[k], t[-1]])
        if src[0] < src[1] < src[2]:
            Ms.append(_moebius(src, _TARGET_SLOPES))
    if not Ms:
        return np.eye(2), -math.inf  # no spreading map: the directions as they are
    M = np.array(Ms)  # every pivot's map at once: n x 2 x 2
    # M (u, v) summed as matmul sums, left to right
    V0 = u[None, :] * M[:, 0, 0, None] + v[None, :] * M[:, 0, 1, None]
    V1 = u[None, :] * M[:, 1, 0, None] + v[None, :] * M[:, 1, 1, None]
    flip = np.median(V0, axis=1) < 0
    M[flip] = -M[flip]
    sign = np.where(flip, -1.0, 1.0)[:, None]
    score = _evenness(atan2(sign * V1, sign * V0), y, gap_min)
    score = np.where(np.isnan(score), -math.inf, score)
    best = int(np.argmax(score))  # the first of equals
    if not score[best] > -math.inf:
        return np.eye(2), -math.inf
    return M[best], float(score[best])


def _evenness(theta: np.ndarray, y: np.ndarray, gap_min: float = GAP_MIN) -> np.ndarray:
    """Per row of angles ``theta`` (``n x m``), the mean log angle between neighbours of
    different labels (not around the circle; ``-inf`` below ``gap_min``, default
    :data:`~.state.GAP_MIN`; angles closer than :data:`TIE` count as that; 0 with one
    label), with :func:`~lncapacity.elementary.log`."""
    order = np.argsort(theta, axis=1, kind="stable")
    d = np.diff(np.take_along_axis(theta, order, axis=1), axis=1)
    lab = y[order]
    change = lab[:, 1:] != lab[:, :-1]
    count = change.sum(axis=1)
    logs = np.where(change, log(np.maximum(d, TIE)), 0.0).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        score = np.where(count > 0, logs / count, 0.0)
    low = np.where(change, d, np.inf).min(axis=1) < gap_min
    return np.where(low, -math.inf, score)


TIE = 2.0**-64
"""Float64 angles closer than this count as this apart in ``_evenness`` (only
``objective="depth"`` passes a ``gap_min`` below it: its points may be closer than float64
resolves)."""
