"""Executable check of proofs/multiclass.md."""

import itertools
import math
import random

import mpmath
import sympy as sp
from flint import fmpq

from lncapacity import build, certify
from lncapacity.construct.project import runs


def test_readout_lemma_symbolically():
    s = sp.symbols("s", real=True)
    taus = sp.symbols("tau1:4", real=True)
    iota = [sp.Integer(0)]
    for tau in taus:
        iota.append(iota[-1] - tau)
    lines = [(t + 1) * s + iota[t] for t in range(4)]
    for t in range(3):
        assert sp.expand(lines[t + 1] - lines[t] - (s - taus[t])) == 0
    # numerically exact at rational points strictly inside each interval
    vals = [sp.Rational(1, 3), sp.Rational(2), sp.Rational(7, 2)]
    bounds = [-sp.oo, *vals, sp.oo]
    for t in range(4):
        lo, hi = bounds[t], bounds[t + 1]
        x = (lo + hi) / 2 if lo.is_finite and hi.is_finite else (hi - 1 if lo == -sp.oo else lo + 1)
        scores = [line.subs(dict(zip(taus, vals, strict=True))).subs(s, x) for line in lines]
        assert max(range(4), key=scores.__getitem__) == t
        others = [scores[t] - z for u, z in enumerate(scores) if u != t]
        margin = min(x - lo, hi - x)
        assert min(others) == margin


def order_after(runs_lohi, c, w, psi):
    """Runs sorted by distance |theta - psi| (each run as its list of distances)."""
    dist = []
    for k, (lo, hi) in enumerate(runs_lohi):
        ds = [abs(mpmath.atan((x - c) / w) - psi) for x in (lo, (lo + hi) / 2, hi)]
        dist.append((k, min(ds), max(ds)))
    return dist


def test_merge_lemma_on_random_configurations():
    mpmath.mp.dps = 60
    rng = random.Random(3)
    checked = 0
    for _ in range(300):
        r = rng.randint(4, 8)
        cuts = sorted(rng.sample(range(1, 1000), 2 * r))
        R = [(mpmath.mpf(cuts[2 * t]), mpmath.mpf(cuts[2 * t + 1])) for t in range(r)]
        s = rng.randint(0, 1)
        j = rng.randint(s + 2, r - 1)
        c = (R[s][1] + R[s + 1][0]) / 2
        for n in range(1, 80):
            w = (R[s + 1][0] - R[s][1]) * mpmath.mpf(2) ** -n
            tl = [mpmath.atan((lo - c) / w) for lo, _ in R]
            th = [mpmath.atan((hi - c) / w) for _, hi in R]
            lo_psi = (th[s] + th[j - 1]) / 2
            if s:
                lo_psi = max(lo_psi, (th[s - 1] + th[-1]) / 2)
            hi_psi = (tl[s + 1] + tl[s + 2]) / 2
            if j + 1 < r:
                hi_psi = min(hi_psi, (tl[s] + tl[j + 1]) / 2)
            if lo_psi < hi_psi:
                break
        else:
            continue  # R_s too wide for the gap around R_j: the lemma does not apply
        psi = lo_psi + (hi_psi - lo_psi) * mpmath.mpf(rng.random())
        d = order_after(R, c, w, psi)
        rank = {k: (a, b) for k, a, b in d}
        expected = [*range(s + 1, j), "m", *range(j + 1, r), *range(s - 1, -1, -1)]
        blocks = [
            (min(rank[s][0], rank[j][0]), max(rank[s][1], rank[j][1])) if e == "m" else rank[e]
            for e in expected
        ]
        for (_, hi_a), (lo_b, _) in itertools.pairwise(blocks):
            assert hi_a < lo_b
        checked += 1
    assert checked > 100


def test_end_to_end_merge_is_always_admissible():
    mpmath.mp.dps = 60
    rng = random.Random(8)
    for _ in range(200):
        r = rng.randint(3, 9)
        cuts = sorted(rng.sample(range(1, 10**6), 2 * r))
        R = [(mpmath.mpf(cuts[2 * t]), mpmath.mpf(cuts[2 * t + 1])) for t in range(r)]
        c = (R[0][1] + R[1][0]) / 2
        for n in range(1, 200):
            w = (R[1][0] - R[0][1]) * mpmath.mpf(2) ** -n
            th = [mpmath.atan((hi - c) / w) for _, hi in R]
            tl = [mpmath.atan((lo - c) / w) for lo, _ in R]
            if (th[0] + th[r - 2]) / 2 < (tl[1] + tl[2]) / 2:
                break
        else:
            raise AssertionError("the end-to-end merge did not open")


def test_warp_breaks_the_mirror_trap_exactly():
    X, y = [[0], [1], [3], [4]], [0, 1, 2, 0]  # B and C are mirror images about 2
    net = build(X, y, method="pma")
    assert net.layers[0].meta["kind"] == "warp"
    c = sp.nsimplify(net.layers[0].meta["centre"])
    beta = sp.nsimplify(net.layers[0].meta["offset"])
    S = sp.nsimplify(net.layers[0].meta["scale"])
    p = [sp.Integer(v[0]) for v in X]
    # the warp read: 6 S beta / sqrt(S^2 (2 (p - c)^2 + 6 beta^2) / 3), eps = 0
    q = [6 * S * beta / sp.sqrt(S**2 * (2 * (x - c) ** 2 + 6 * beta**2) / 3) for x in p]
    assert all(sp.simplify(a - b).is_positive for a, b in itertools.pairwise(q))  # injective
    mid = (q[0] + q[3]) / 2
    assert sp.simplify(abs(q[1] - mid) - abs(q[2] - mid)) != 0  # no longer mirror images
    assert certify(net, X, y).all_certified


def test_depth_bounds_on_every_labeling_of_five_points():
    X = [[fmpq(v)] for v in (0, 1, 3, 4, 7)]
    import itertools

    for labels in itertools.product(range(3), repeat=5):
        if len(set(labels)) < 3:
            continue
        for method in ("runs", "pma"):
            net = build(X, list(labels), method=method)
            warps = net.meta["warps"]
            bound = (runs(labels) if method == "runs" else 5) - 3 + warps
            assert net.depth <= bound


def test_polygon_readout_lemma_exactly():
    """§7: s_c(p) = e(mu_c) . p - cos(w_c) is positive exactly on arc c, negative on the others.

    Points of the circle with rational tangent half-angle u are exact:
    e = ((1 - u^2) / (1 + u^2), 2u / (1 + u^2)).  Cuts at such points; e(mu_c) is the unit
    bisector of the two cut vectors and cos(w_c) their half-angle cosine, both exact in
    sqrt-radicals, evaluated by SymPy exactly.
    """

    def on_circle(u):
        u = sp.Rational(u)
        return sp.Matrix([(1 - u**2) / (1 + u**2), 2 * u / (1 + u**2)])

    # increasing angles in (-pi, pi); the last arc (from 1/5 round to -3) is longer than pi
    cuts = [on_circle(u) for u in (-3, -2, -1, sp.Rational(1, 5))]
    k = len(cuts)
    scores = []
    for c in range(k):
        a, b = cuts[c], cuts[(c + 1) % k]
        major = a[0] * b[1] - a[1] * b[0] < 0  # the counter-clockwise angle a -> b exceeds pi
        bis = (a + b) / sp.sqrt((a + b).dot(a + b))
        mid = -bis if major else bis  # e(mu_c)
        cos_w = sp.sqrt((1 + a.dot(b)) / 2) * (-1 if major else 1)  # cos(w_c)
        scores.append(lambda p, mid=mid, cos_w=cos_w: mid.dot(p) - cos_w)
    # sample points strictly inside each arc: tangent half-angles between the cuts
    samples = {
        0: [-sp.Rational(5, 2), -sp.Rational(21, 10)],
        1: [-sp.Rational(3, 2), -sp.Rational(11, 10)],
        2: [-sp.Rational(1, 2), 0, sp.Rational(1, 10)],
        3: [sp.Rational(1, 2), 1, 10, -7, -4],  # across angle pi (u -> +-inf)
    }
    for c, us in samples.items():
        for u in us:
            p = on_circle(u)
            vals = [sp.simplify(f(p)) for f in scores]
            assert vals[c] > 0, (c, u, vals)
            assert all(v < 0 for j, v in enumerate(vals) if j != c), (c, u, vals)
    # and each score vanishes at its own two cuts
    for c in range(k):
        for v in (cuts[c], cuts[(c + 1) % k]):
            assert sp.simplify(scores[c](v)) == 0


def test_circle_method_three_classes_every_labeling_of_five_points():
    """§7 end to end: every labeling with 3 classes of 5 points in the plane is certified."""
    pts = [(0, 0), (4, 1), (1, 5), (-3, 2), (2, -4)]
    X = [[fmpq(a), fmpq(b)] for a, b in pts]
    for y in itertools.product(range(3), repeat=5):
        if len(set(y)) < 3:
            continue
        net = build(X, list(y), method="circle")
        assert certify(net, list(map(tuple, X)), list(y)).all_certified, y


def fold_from_free_end(free):
    """Lemma 8.1 on phase labels: the free region ``x_r .. x_1`` (index 0 is ``x_r``, the
    free end) after one fold: ``R_2`` first, then ``R_1`` joined to ``R_3``, then the rest."""
    assert len(free) >= 3 and free[0] == free[2]
    return [free[1], free[0], *free[3:]]


def test_peel_keeps_the_run_next_to_the_block():
    # every alternating free region of length 2..9 and either label next to the block:
    # folds from the free end leave that label next to the block, and end with two runs
    for r in range(2, 10):
        for first in (0, 1):
            free = [(first + i) % 2 for i in range(r)]  # x_r .. x_1, alternating
            next_to_block = free[-1]
            folds = 0
            while len(free) > 2:
                free = fold_from_free_end(free)
                assert free[-1] == next_to_block
                assert all(a != b for a, b in itertools.pairwise(free))  # still runs
                folds += 1
            assert folds == r - 2 and free[-1] == next_to_block


def test_peel_depth_bound_on_every_labeling_of_six_points():
    # the net of every labeling: certified, one phase per class but the last, and at most
    # 2 n_c - 1 layers per phase
    X = [[i] for i in range(6)]
    for labels in itertools.product(range(3), repeat=6):
        if len(set(labels)) < 3:
            continue
        net = build(X, list(labels), method="peel")
        assert net.meta["method"] == "peel" and certify(net, X, list(labels)).all_certified
        phases = net.meta["phases"]
        assert len(phases) <= 2
        assert net.depth <= sum(2 * labels.count(c) - 1 for c in phases)


def circle_point(u):
    """The point of the unit circle with tangent half-angle ``u`` (exact rationals)."""
    u = fmpq(u) if not isinstance(u, fmpq) else u
    return ((1 - u * u) / (1 + u * u), 2 * u / (1 + u * u))


def cyclic_words(k, length):
    """Cyclic words of ``length`` letters from ``k``, cyclic neighbours distinct, each up to
    renaming the letters (letters in order of first appearance)."""

    def grow(word, used):
        if len(word) == length:
            if word[0] != word[-1]:
                yield word
            return
        for c in range(min(used + 1, k)):
            if not word or c != word[-1]:
                yield from grow([*word, c], max(used, c + 1))

    yield from grow([], 0)


def test_argmax_of_k_scores_has_at_most_2k_minus_2_boundaries():
    """§9, Lemma 9.1: no two classes alternate around the circle, so at most 2k - 2 arcs.

    (i) Every cyclic word over k <= 5 letters without an alternation a..b..a..b has at most
    2k - 2 letters, and 2k - 2 is reached.  (ii) Random small-integer scores, read exactly at
    322 rational points of the circle: the arcs never alternate and never exceed 2k - 2.
    (iii) Two parallel lines give a class two arcs: 4 boundaries at k = 3."""
    from lncapacity.construct.circle.readouts import alternate, most_arcs

    for k in range(2, 6):
        longest = max(
            (n for n in range(2, 2 * k + 1) for w in cyclic_words(k, n) if not alternate(w)),
            default=0,
        )
        assert longest == most_arcs(k) == 2 * k - 2, (k, longest)
    us = [fmpq(j, 4) for j in range(-160, 161)]  # tangent half-angles: angles in (-3.0, 3.0)
    pts = [circle_point(u) for u in us] + [(fmpq(-1), fmpq(0))]  # and the angle pi
    rng = random.Random(9)
    for k in (3, 4, 5, 6):
        for _ in range(25):
            scores = [
                [fmpq(rng.randint(-6, 6), rng.randint(1, 4)) for _ in range(3)] for _ in range(k)
            ]
            lab = []
            for x, y in pts:
                vals = [a * x + b * y + c for a, b, c in scores]
                lab.append(max(range(k), key=lambda c: (vals[c], -c)))
            arcs = [lab[i] for i in range(len(lab)) if lab[i] != lab[(i + 1) % len(lab)]]
            assert len(arcs) <= most_arcs(k) and not alternate(arcs), (k, arcs)
    cut = fmpq(9, 10)  # two parallel lines: class 0 between the caps x > 9/10 and x < -9/10
    lines = [(fmpq(0), fmpq(0), fmpq(0)), (fmpq(1), fmpq(0), -cut), (-fmpq(1), fmpq(0), -cut)]
    lab = [max(range(3), key=lambda c: lines[c][0] * x + lines[c][2]) for x, _ in pts]
    assert runs(lab + lab[:1]) - 1 == 4


def test_lp_readout_reads_a_class_on_two_arcs_that_the_polygon_cannot():
    """§9, Lemma 9.2 end to end: class 0 on two arcs between classes 1 and 2 (4 boundaries).

    Exactly: the scores 0, x - 9/10, -x - 9/10 read every point with a margin.  The polygon
    readout (one arc per class) finds nothing; the LP readout's weights, on one circle layer
    (``LN(E x)``, E in float64 as dyadic rationals), are certified in ball arithmetic."""
    import numpy as np

    from lncapacity import LNNet
    from lncapacity.construct.circle import SQRT3, E, arcs_lp, readout
    from lncapacity.construct.circle.state import _affine

    us = [fmpq(j, 10) for j in range(-30, 31)] + [fmpq(s * v) for v in (5, 8, 13) for s in (-1, 1)]
    pts = sorted((circle_point(u) for u in us), key=lambda p: math.atan2(p[1], p[0]))
    pts.append((fmpq(-1), fmpq(0)))  # the angle pi

    def label(p):  # the cap x > 9/10 is class 1, x < -9/10 class 2, the rest class 0
        return 1 if p[0] > fmpq(9, 10) else 2 if p[0] < -fmpq(9, 10) else 0

    y = [label(p) for p in pts]
    assert sorted(set(y)) == [0, 1, 2] and runs(y + y[:1]) - 1 == 4
    lines = [(0, 0, 0), (1, 0, -fmpq(9, 10)), (-1, 0, -fmpq(9, 10))]
    for p, c in zip(pts, y, strict=True):
        s = [a * p[0] + b * p[1] + d for a, b, d in lines]
        assert all(s[c] > s[j] for j in range(3) if j != c)
    P = np.array([[float(a), float(b)] for a, b in pts])
    H = SQRT3 * P @ E.T
    yy = np.array(y)
    assert readout(H, yy) is None  # the polygon needs every class one arc
    r = arcs_lp(H, yy, np.zeros(len(y)))
    assert r is not None and r.meta["kind"] == "arcs-lp"
    layer = _affine(E, np.zeros(3), {"kind": "circle-first"})  # h = LN(E x): sqrt(3) E x / |x|
    net = LNNet(2, 3, fmpq(0), (layer,), r, (0, 1, 2), {})
    assert certify(net, [tuple(p) for p in pts], y).all_certified
