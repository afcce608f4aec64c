"""Sector classifiers: what a width-3 LN-Net with eps = 0 can do to points, and how many ways.

The sector theorem (proofs/sector_theorem.md): with ``eps = 0`` a width-3 net of depth ``L``
labels the points of the plane by their direction from an *apex*, the labels changing at most
``2^L`` times around it (in ``R^d`` the apex is a ``(d - 2)``-flat).  So its dichotomies of
``N`` points are among those of the ``K``-sector classifiers, ``K = 2^L``, which this module
enumerates exactly (:func:`sector_labelings`, for small point sets of the plane) and counts
(:func:`sector_growth`, an upper bound for every set of ``N`` points, from which
:func:`sector_vc` is the VC bound).

* In the plane the cyclic order of the points around the apex is constant off the lines through
  two points, and only the *outer* parts of those lines (outside the segment between the two)
  change it, by swapping two neighbours; the components off the outer parts number at most
  ``1 + N (N - 2) + 2 C(N, 4)`` (:func:`outer_components_bound`).
* A cyclic order carries :func:`per_order` labelings with at most ``K`` changes; a swap of two
  neighbours adds at most :func:`per_swap` new ones.
* In ``R^d`` the cyclic order around a flat is decided by the signs of ``C(N, 2)`` linear forms
  in ``D = d (d + 1) / 2`` Plücker coordinates: at most :func:`orders_bound` orders up to
  reversal.
* Depth 1 (``K = 2``): a wedge or the complement of one, so two half-spaces decide
  (:func:`halfspace_pairs_growth`); in the plane, wedges shatter no 6 points
  (:func:`wedge_growth`).

>>> [sector_vc(L, 2) for L in (1, 2, 3, 4)]
[11, 27, 43, 70]
>>> [sector_vc(L, 3) for L in (1, 2, 3, 4)]
[24, 64, 84, 119]
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from math import comb

from flint import fmpq

from ..errors import InputError

Point = tuple[fmpq, fmpq]


def cyclic_changes(labels: Sequence[int]) -> int:
    """Neighbours with different labels around a cycle."""
    return sum(a != b for a, b in zip(labels, [*labels[1:], *labels[:1]], strict=True))


def per_order(N: int, K: int) -> int:
    """``A(N, K) = 2 sum_(2j <= K) C(N, 2j)``: the labelings of ``N`` points in one cyclic order
    whose labels change at most ``K`` times (a set of ``2j`` changing gaps and the first label)."""
    return sum(2 * comb(N, 2 * j) for j in range(K // 2 + 1) if 2 * j <= N)


def per_swap(N: int, K: int) -> int:
    """``2 C(N - 3, K - 1)``: labelings with at most ``K`` changes after two neighbours of a
    cyclic order of ``N >= 4`` points swap that had more before (proofs/sector_theorem.md,
    Lemma 4)."""
    return 2 * comb(N - 3, K - 1)


def outer_components_bound(N: int) -> int:
    """``1 + N (N - 2) + 2 C(N, 4)``: components of the plane off the outer parts of the lines
    through two of ``N`` points in general position (equality: ``N`` points in convex
    position; proofs/sector_theorem.md, Lemma 5)."""
    return 1 + N * (N - 2) + 2 * comb(N, 4)


def orders_bound(N: int, dim: int) -> int:
    """``sum_(i < D) C(n - 1, i)``, ``n = C(N, 2)``, ``D = dim (dim + 1) / 2``: the regions of a
    central arrangement of ``n`` hyperplanes in ``R^D``, halved; bounds the cyclic orders (up to
    reversal) of ``N`` points of ``R^dim`` around a ``(dim - 2)``-flat (Lemma 6)."""
    n, D = comb(N, 2), dim * (dim + 1) // 2
    return 1 if n < 1 else sum(comb(n - 1, i) for i in range(D))


def sector_growth(N: int, depth: int, dim: int) -> int:
    """An upper bound on the labelings of any ``N`` points of ``R^dim`` (``dim >= 2``) realised
    by width-3 depth-``depth`` nets with eps = 0: ``A(N, K) + (S - 1) 2 C(N - 3, K - 1)``,
    ``K = 2^depth``, ``S`` the components of Lemma 5 (plane) or the orders of Lemma 6; and at
    depth 1 also the half-space pairs (Theorem 3)."""
    if dim < 2 or depth < 1:
        raise InputError("the sector count is for depth >= 1 and dimension >= 2")
    K = 2**depth
    if N <= K or N < 4:
        return 2**N
    S = outer_components_bound(N) if dim == 2 else orders_bound(N, dim)
    count = per_order(N, K) + (S - 1) * per_swap(N, K)
    if depth == 1:
        count = min(count, halfspace_pairs_growth(N, dim))
        if dim == 2:
            count = min(count, wedge_growth(N))
    return count


def halfspace_pairs_growth(N: int, dim: int) -> int:
    """``H (H + 1)`` with ``H = 2 sum_(i <= dim) C(N - 1, i)`` (Cover's count of the half-space
    dichotomies of ``N`` points of ``R^dim``): intersections and unions of two of them."""
    H = 2 * sum(comb(N - 1, i) for i in range(dim + 1))
    return H * (H + 1)


def wedge_growth(N: int) -> int:
    """``2 sum_(i <= 5) C(N, i)``: intersections of two half-planes shatter no 6 points, so by
    Sauer's lemma they cut at most ``sum_(i <= 5) C(N, i)`` subsets from ``N`` points of the
    plane, and their complements as many (proofs/sector_theorem.md, Theorem 3)."""
    return 2 * sum(comb(N, i) for i in range(6))


def first_unshattered(growth: Callable[[int], int], start: int = 1) -> int:
    """The least ``N >= start`` with ``growth(N) < 2^N``: no ``N`` points are shattered, so the
    VC dimension is below it (``growth(N) >= 2^N`` below ``start`` is the caller's claim)."""
    N = start
    while growth(N) >= 2**N:
        N += 1
    return N


def _log2_growth(N: int, depth: int, dim: int) -> float:
    """``log2`` of :func:`sector_growth` in floats (``lgamma``): only to guide the scan."""

    def lc(n: int, k: int) -> float:
        if not 0 <= k <= n:
            return -math.inf
        return (math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)) / math.log(2)

    def lsum(terms: list[float]) -> float:
        top = max(terms)
        return top + math.log2(sum(2 ** (t - top) for t in terms if t > -math.inf))

    K = 2**depth
    if N <= K or N < 4:
        return float(N)
    A = 1 + lsum([lc(N, 2 * j) for j in range(K // 2 + 1) if 2 * j <= N])
    if dim == 2:
        S = lsum([0.0, math.log2(N * (N - 2)), 1 + lc(N, 4)])
    else:
        n, D = comb(N, 2), dim * (dim + 1) // 2
        S = lsum([lc(n - 1, i) for i in range(min(D, n))])
    g = lsum([A, S + 1 + lc(N - 3, K - 1)])
    if depth == 1:
        H = 1 + lsum([lc(N - 1, i) for i in range(min(dim, N - 1) + 1)])
        g = min(g, 2 * H + 2 ** (-H) / math.log(2))
        if dim == 2:
            g = min(g, 1 + lsum([lc(N, i) for i in range(6)]))
    return g


def sector_vc(depth: int, dim: int, limit: int | None = None) -> int | None:
    """The VC bound of the sector count: width-3 depth-``depth`` nets with eps = 0 on
    ``R^dim`` (``dim >= 2``) shatter at most ``N - 1`` points, ``N`` the least number of points
    at which :func:`sector_growth` is below ``2^N`` (proofs/sector_theorem.md).  The scan is
    guided by floats and decided in integers: the ``N`` returned (plus one) is proved to fail.
    With ``limit``: None unless the count already fails at ``limit`` points."""

    def growth(N: int) -> int:
        return sector_growth(N, depth, dim)

    if limit is not None and growth(limit) >= 2**limit:
        return None
    N = 2**depth + 1  # below, every labeling has few enough changes: the count is 2^N
    while _log2_growth(N, depth, dim) >= N - 1e-6 * N:
        N += 1
    while N > 2**depth + 1 and growth(N - 1) < 2 ** (N - 1):
        N -= 1  # the floats were pessimistic
    while growth(N) >= 2**N:
        N += 1  # or optimistic
    return N - 1


# --- exact enumeration in the plane ------------------------------------------------------------


def _side(p: Point, q: Point, a: Point) -> fmpq:
    """``det(p - a, q - a)``: its sign says on which side of the line ``pq`` the apex ``a`` is."""
    return (p[0] - a[0]) * (q[1] - a[1]) - (p[1] - a[1]) * (q[0] - a[0])


def _half(v: Point) -> int:
    return 0 if v[1] > 0 or (v[1] == 0 and v[0] > 0) else 1


def cyclic_order(X: Sequence[Point], a: Point) -> list[list[int]]:
    """The points ``X`` by their direction from ``a`` (counterclockwise from the positive first
    axis), points on one ray grouped; exact.  Raises if ``a`` is one of the points."""
    V = [(x[0] - a[0], x[1] - a[1]) for x in X]
    if any(v == (0, 0) for v in V):
        raise InputError("the apex is one of the points")
    groups: list[list[int]] = []
    order = sorted(range(len(V)), key=lambda i: _half(V[i]))
    for i in order:  # insertion by direction: few points
        for g in groups:
            v, w = V[i], V[g[0]]
            if _half(v) == _half(w) and v[0] * w[1] - v[1] * w[0] == 0:
                g.append(i)
                break
        else:
            groups.append([i])
    from functools import cmp_to_key

    def cmp(g: list[int], h: list[int]) -> int:
        v, w = V[g[0]], V[h[0]]
        if _half(v) != _half(w):
            return _half(v) - _half(w)
        c = v[0] * w[1] - v[1] * w[0]
        return -1 if c > 0 else 1

    return sorted(groups, key=cmp_to_key(cmp))


def _lines(X: Sequence[Point]) -> list[tuple[fmpq, fmpq, fmpq]]:
    """The distinct lines through two of the points, as ``(a, b, c)`` with ``a x + b y = c``."""
    out = set()
    for p, q in itertools.combinations(X, 2):
        a, b = q[1] - p[1], p[0] - q[0]
        c = a * p[0] + b * p[1]
        k = a if a != 0 else b  # normalise the first non-zero coefficient to 1
        out.add((a / k, b / k, c / k))
    return sorted(out, key=lambda t: (t[0], t[1], t[2]))


def face_points(X: Sequence[Point]) -> Iterator[tuple[Point, Point, Point]]:
    """For every edge of the arrangement of the lines through two of the points: ``(m, a, a')``,
    ``m`` inside the edge and ``a, a'`` on either side of it, each inside a face (exact).  Every
    face has an edge, so every face gets a point."""
    L = _lines(X)
    for k, (a, b, c) in enumerate(L):
        p = (c / a, fmpq(0)) if a != 0 else (fmpq(0), c / b)  # a point of the line
        d = (-b, a)  # its direction
        ts = set()
        for i, (a2, b2, c2) in enumerate(L):
            den = a2 * d[0] + b2 * d[1]
            if i != k and den != 0:
                ts.add((c2 - a2 * p[0] - b2 * p[1]) / den)
        t = sorted(ts) or [fmpq(0)]
        mids = [(s + u) / 2 for s, u in itertools.pairwise(t)] + [t[0] - 1, t[-1] + 1]
        for s in mids:
            m = (p[0] + s * d[0], p[1] + s * d[1])
            n = (a, b)  # the normal
            steps = [
                abs(a2 * m[0] + b2 * m[1] - c2) / (2 * abs(a2 * n[0] + b2 * n[1]))
                for i, (a2, b2, c2) in enumerate(L)
                if i != k and a2 * n[0] + b2 * n[1] != 0
            ]
            h = min(steps, default=fmpq(1))
            yield m, (m[0] + h * n[0], m[1] + h * n[1]), (m[0] - h * n[0], m[1] - h * n[1])


def canonical(order: Sequence[int]) -> tuple[int, ...]:
    """A cyclic order up to rotation and reversal, as the least of its readings."""
    o = list(order)
    readings = [tuple(o[k:] + o[:k]) for k in range(len(o))]
    r = o[::-1]
    readings += [tuple(r[k:] + r[:k]) for k in range(len(r))]
    return min(readings)


def sector_orders(X: Sequence[Point]) -> set[tuple[int, ...]]:
    """The cyclic orders (up to reversal) of the points around apexes in the faces of the
    arrangement of the lines through two points: every apex off those lines sees one of them."""
    orders = set()
    for _, a, b in face_points(X):
        for apex in (a, b):
            orders.add(canonical([g[0] for g in cyclic_order(X, apex)]))
    return orders


def labelings_of_order(order: Sequence[int], K: int) -> set[int]:
    """The labelings (point ``i`` has label ``(k >> i) & 1``) with at most ``K`` changes around
    the cyclic ``order``."""
    N, out = len(order), set()
    for c in range(0, min(K, N) + 1, 2):
        for gaps in itertools.combinations(range(N), c):
            k, cur, cut = 0, 0, set(gaps)
            for pos, i in enumerate(order):
                if pos in cut:
                    cur ^= 1
                k |= cur << i
            out |= {k, k ^ ((1 << N) - 1)}
    return out


def sector_labelings(X: Sequence[Point], K: int) -> set[int]:
    """Every labeling of ``X`` (points of the plane, exact) realised by a sector classifier
    with at most ``K`` label changes around its apex (proofs/sector_theorem.md, Lemma 2: an
    apex on a line through two points does no more than the faces beside it)."""
    out: set[int] = set()
    for order in sector_orders(X):
        out |= labelings_of_order(order, K)
    return out


def outer_components(X: Sequence[Point]) -> int:
    """Components of the plane off the outer parts of the lines through two points (``X`` in
    general position: no three on a line), counted exactly: faces of the arrangement (by their
    sign vectors) joined across the edges that lie between their two points."""
    pairs = list(itertools.combinations(range(len(X)), 2))
    parent: dict[tuple[int, ...], tuple[int, ...]] = {}

    def sign(a: Point) -> tuple[int, ...]:
        return tuple(int(_side(X[i], X[j], a) > 0) for i, j in pairs)

    def find(s: tuple[int, ...]) -> tuple[int, ...]:
        while parent.setdefault(s, s) != s:
            s = parent[s]
        return s

    for m, a, b in face_points(X):
        sa, sb = find(sign(a)), find(sign(b))
        ((i, j),) = [(i, j) for i, j in pairs if _side(X[i], X[j], m) == 0]
        p, q = X[i], X[j]
        # m between p and q: the edge is inner, the two faces are one component
        t = (m[0] - p[0]) * (q[0] - p[0]) + (m[1] - p[1]) * (q[1] - p[1])
        if 0 < t < (q[0] - p[0]) ** 2 + (q[1] - p[1]) ** 2:
            parent[sa] = sb
    return len({find(s) for s in list(parent)})


def convex_quadrilaterals(X: Sequence[Point]) -> int:
    """Four-point subsets of ``X`` in convex position (no point inside the triangle of the
    other three; general position)."""

    def inside(d: Point, a: Point, b: Point, c: Point) -> bool:
        s = [_side(a, b, d) > 0, _side(b, c, d) > 0, _side(c, a, d) > 0]
        return all(s) or not any(s)

    count = 0
    for quad in itertools.combinations(X, 4):
        if not any(inside(quad[k], *(quad[:k] + quad[k + 1 :])) for k in range(4)):
            count += 1
    return count
