"""Executable check of proofs/double_fold.md (depth L shatters 2L + 1 points)."""

import itertools
import random
from fractions import Fraction

import mpmath
import sympy as sp
from flint import fmpq

from lncapacity.certify import certify
from lncapacity.construct.double_fold import double_fold_net, merge_pairs
from lncapacity.shatter import _point_set, labels_of

SQ2, SQ6 = sp.sqrt(2), sp.sqrt(6)
E = sp.Matrix([[1 / SQ2, 1 / SQ6], [-1 / SQ2, 1 / SQ6], [0, -2 / SQ6]])
s, t = sp.symbols("s t", real=True)


def _e(u):
    return sp.Matrix([(1 - u**2) / (1 + u**2), 2 * u / (1 + u**2)])


def _pt(u):  # the point of C with half-angle coordinate u, exactly (rationals)
    u = Fraction(u)
    return ((1 - u * u) / (1 + u * u), 2 * u / (1 + u * u))


def _cross(a, b):
    return a[0] * b[1] - a[1] * b[0]


def _sub(a, b):
    return (a[0] - b[0], a[1] - b[1])


def _meet(a, a2, b, b2):
    """Where the lines a a2 and b b2 meet (exact), or None if parallel."""
    r, q = _sub(a2, a), _sub(b2, b)
    den = _cross(r, q)
    if den == 0:
        return None
    lam = _cross(_sub(b, a), q) / den
    return (a[0] + lam * r[0], a[1] + lam * r[1])


# --- Lemma 1: the pole of two chords -------------------------------------------------------------


def test_pole_of_two_chords_that_do_not_meet_is_outside_the_disc_and_inside_if_they_cross():
    rng = random.Random(1)
    seen = {"separated": 0, "nested": 0, "crossing": 0}
    for _ in range(600):
        us = sorted({Fraction(rng.randint(-400, 400), rng.randint(1, 60)) for _ in range(4)})
        if len(us) < 4:
            continue
        p = [_pt(u) for u in us]  # four points in order along the arc s in (-inf, inf)
        for kind, (a, a2, b, b2) in (
            ("separated", (0, 1, 2, 3)),
            ("nested", (0, 3, 1, 2)),
            ("crossing", (0, 2, 1, 3)),
        ):
            Q = _meet(p[a], p[a2], p[b], p[b2])
            if Q is None:
                continue
            r2 = Q[0] ** 2 + Q[1] ** 2
            assert (r2 > 1) if kind != "crossing" else (r2 < 1), (kind, us)
            seen[kind] += 1
    assert min(seen.values()) > 500


# --- Lemma 2: the layers -------------------------------------------------------------------------


def test_the_parallel_fold_layer_is_M_of_the_read_and_a_constant():
    phi = sp.symbols("phi", real=True)
    M = sp.Matrix(2, 2, sp.symbols("m1:5", real=True))
    v1, v2 = sp.symbols("v1 v2", real=True)
    Jv = sp.Matrix([-v2, v1])
    e = sp.Matrix([sp.cos(phi), sp.sin(phi)])
    h = sp.sqrt(3) * E * e
    W = E * M * sp.Matrix.vstack(Jv.T, sp.zeros(1, 2)) * E.T / sp.sqrt(3)
    b = E * M * sp.Matrix([0, 2])
    y = W * h + b
    assert sp.simplify(E.T * y - M * sp.Matrix([(Jv.T * e)[0], 2])) == sp.zeros(2, 1)


def test_a_fold_merges_the_two_designed_pairs_exactly_and_keeps_the_rest_apart():
    # exact: rational points of C, the pole of two separated chords, cross products
    rng = random.Random(2)
    for _ in range(200):
        us = sorted({Fraction(rng.randint(-99, 99), rng.randint(1, 9)) for _ in range(7)})
        if len(us) < 7:
            continue
        p = [_pt(u) for u in us]
        Q = _meet(p[0], p[1], p[4], p[6])
        if Q is None:
            continue
        assert Q[0] ** 2 + Q[1] ** 2 > 1
        for i, j in itertools.combinations(range(7), 2):
            collinear = _cross(_sub(p[i], Q), _sub(p[j], Q)) == 0
            if {i, j} in ({0, 1}, {4, 6}):
                assert collinear
            elif collinear:  # an accidental merge: Lemma 3's determinant vanishes
                assert _det3((us[0], us[1]), (us[4], us[6]), (us[i], us[j])) == 0


# --- Lemma 3: an involution of the half-angle coordinate -----------------------------------------


def test_collinear_with_the_pole_is_a_bilinear_relation_of_the_half_angles():
    q1, q2 = sp.symbols("q1 q2", real=True)
    Q = sp.Matrix([q1, q2])
    D = sp.Matrix.hstack(_e(s) - Q, _e(t) - Q).det() * (1 + s**2) * (1 + t**2)
    rel = (1 + q1) * s * t - q2 * (s + t) + (1 - q1)
    assert sp.cancel(D + 2 * (s - t) * rel) == 0
    v1, v2 = sp.symbols("v1 v2", real=True)  # the pole at infinity in direction v
    P = sp.Matrix.hstack(_e(s) - _e(t), sp.Matrix([v1, v2])).det() * (1 + s**2) * (1 + t**2)
    rel_inf = v1 * (s * t - 1) - v2 * (s + t)
    assert sp.cancel(P - 2 * (s - t) * rel_inf) == 0


def _det3(*pairs):
    return sp.Matrix([[1, a + b, a * b] for a, b in pairs]).det()


def test_a_third_pair_is_merged_iff_the_determinant_vanishes():
    rng = random.Random(3)
    for _ in range(300):
        q1 = Fraction(rng.randint(-50, 50), 7)
        q2 = Fraction(rng.randint(-50, 50), 7)
        if q1 * q1 + q2 * q2 <= 1:
            continue

        def partner(u, q1=q1, q2=q2):  # the other point of C on the line through Q and u
            return (q2 * u - (1 - q1)) / ((1 + q1) * u - q2)

        us = [Fraction(rng.randint(-99, 99), rng.randint(1, 9)) for _ in range(4)]
        try:
            A, B, C = ((u, partner(u)) for u in us[:3])
        except ZeroDivisionError:
            continue
        assert _det3(A, B, C) == 0  # three pairs of one fold
        other = (us[3], us[3] + 1)
        collinear = (1 + q1) * other[0] * other[1] - q2 * sum(other) + (1 - q1) == 0
        assert (_det3(A, B, other) == 0) == collinear


# --- Lemma 4: merge pairs exist ------------------------------------------------------------------


def _separated(lab):
    n = len(lab)
    pairs = [(i, j) for i, j in itertools.combinations(range(n), 2) if lab[i] == lab[j]]
    return any(j < k for (i, j), (k, m) in itertools.product(pairs, pairs))


def _non_crossing(lab):
    n = len(lab)
    pairs = [(i, j) for i, j in itertools.combinations(range(n), 2) if lab[i] == lab[j]]
    for (i, j), (k, m) in itertools.combinations(pairs, 2):
        if len({i, j, k, m}) == 4 and not (i < k < j < m or k < i < m < j):
            return True
    return False


def test_merge_pairs_exist_for_every_labeling():
    for n in range(5, 14):
        for lab in itertools.product((0, 1), repeat=n):
            if n >= 7 or max(lab.count(0), lab.count(1)) >= 4:
                assert _separated(lab), lab
            if n == 5:
                assert _non_crossing(lab), lab
            if n <= 11:
                assert merge_pairs(list(range(n)), lab), lab


# --- Lemma 5: a cut ------------------------------------------------------------------------------


def _cut_exists(word):
    pos = {k: [i for i, c in enumerate(word) if c == k] for k in "ABC"}
    for c in range(1, 6):  # cut between positions c - 1 and c
        kinds = sorted(sum(i >= c for i in pos[k]) for k in "ABC")  # points above the cut
        if kinds == [0, 1, 2]:
            return True
    return False


def test_a_cut_exists_when_two_pairs_are_separated_and_can_fail_when_nested():
    words = set(itertools.permutations("AABBCC"))
    assert len(words) == 90
    separated = [w for w in words if _sep(w)]
    assert separated and all(_cut_exists(w) for w in separated)
    nested_fail = [w for w in words if _nested(w) and not _cut_exists(w)]
    assert ("A", "C", "B", "B", "C", "A") in nested_fail  # C overlaps both A and B


def _sep(w):
    a = [i for i, c in enumerate(w) if c == "A"]
    b = [i for i, c in enumerate(w) if c == "B"]
    return max(a) < min(b) or max(b) < min(a)


def _nested(w):
    a = [i for i, c in enumerate(w) if c == "A"]
    b = [i for i, c in enumerate(w) if c == "B"]
    return (a[0] < b[0] and b[1] < a[1]) or (b[0] < a[0] and a[1] < b[1])


# --- Lemma 6: the limit that shows F_C is not identically zero -----------------------------------


def test_the_limit_rows_have_determinant_eight_and_the_half_angles_tend_to_plus_minus_one():
    rows = sp.Matrix([[1, -2, 1], [1, 2, 1], [1, 0, -1]])
    assert rows.det() == -8
    z = sp.symbols("z", positive=True)
    half = z / (1 + sp.sqrt(1 + z**2))  # tan(atan(z)/2) = sin/(1 + cos) at atan(z)
    assert sp.simplify(sp.sin(sp.atan(z)) / (1 + sp.cos(sp.atan(z))) - half) == 0
    assert sp.limit(half, z, sp.oo) == 1  # so t -> inf sends s = tan(atan(t u)/2) to sign(u)


def test_F_C_is_nonzero_for_large_t_at_the_cut_on_random_configurations():
    rng = random.Random(6)
    with mpmath.workdps(40):
        _large_t(rng)


def _large_t(rng):
    tested = 0
    for _ in range(100):
        psi = sorted(mpmath.mpf(rng.uniform(-0.39, 0.39)) for _ in range(6))
        idx = list(range(6))
        rng.shuffle(idx)
        A, B, C = sorted(idx[:2]), sorted(idx[2:4]), sorted(idx[4:])
        if not max(A) < min(B):
            A, B = B, A
        if not max(A) < min(B):
            continue
        word = ["ABC"[[A, B, C].index(p)] for i in range(6) for p in (A, B, C) if i in p]
        cuts = [c for c in range(1, 6) if _cut_at(word, c)]
        assert cuts
        alpha = (psi[cuts[0] - 1] + psi[cuts[0]]) / 2

        def F(T, alpha=alpha, psi=psi, A=A, B=B, C=C):
            sv = [mpmath.tan(mpmath.atan(T * mpmath.tan(p - alpha)) / 2) for p in psi]
            m = mpmath.matrix([[1, sv[a] + sv[b], sv[a] * sv[b]] for a, b in (A, B, C)])
            return mpmath.det(m)

        assert abs(abs(F(mpmath.mpf(10) ** 12)) - 8) < 1e-6
        tested += 1
    assert tested >= 20


def _cut_at(word, c):
    return sorted(sum(i >= c for i, w in enumerate(word) if w == k) for k in "ABC") == [0, 1, 2]


# --- Lemma 7: the readout ------------------------------------------------------------------------


def test_three_points_of_the_circle_take_every_labeling_by_a_chord():
    rng = random.Random(7)
    for _ in range(200):
        us = {Fraction(rng.randint(-99, 99), rng.randint(1, 9)) for _ in range(3)}
        if len(us) < 3:
            continue
        p = [_pt(u) for u in us]
        for lone in range(3):
            m = max(p[lone][0] * q[0] + p[lone][1] * q[1] for j, q in enumerate(p) if j != lone)
            c = (1 + m) / 2
            for j, q in enumerate(p):
                score = p[lone][0] * q[0] + p[lone][1] * q[1] - c
                assert (score > 0) == (j == lone)


# --- the theorem, certified: every labeling of 2L + 1 points, L = 1, 2, 3 ------------------------


def test_every_labeling_of_2L_plus_1_points_is_certified_at_depth_L():
    for depth in (1, 2, 3):
        n = 2 * depth + 1
        X = [(fmpq(k),) for k in range(n)]
        for k in range(2**n):
            points = _point_set(X, labels_of(k, n))
            net = double_fold_net(points, depth)
            assert net.depth == depth and net.eps == 0
            assert certify(net, points, workers=1).all_certified


# --- section 4: in the plane the first layer folds too (2L + 3 points) ---------------------------


def _general_position(svals):
    """(G) in half-angle coordinates: F != 0 for every three disjoint pairs (exact)."""
    pairs = list(itertools.combinations(range(len(svals)), 2))
    bad = 0
    for A, B, C in itertools.combinations(pairs, 3):
        if len(set(A + B + C)) == 6:
            (a1, a2, a3), (b1, b2, b3), (c1, c2, c3) = (
                (1, svals[x] + svals[y], svals[x] * svals[y]) for x, y in (A, B, C)
            )
            det = a1 * (b2 * c3 - b3 * c2) - a2 * (b1 * c3 - b3 * c1) + a3 * (b1 * c2 - b2 * c1)
            bad += det == 0
    return bad


def test_F_of_three_disjoint_pairs_is_twelve_monomials_with_unit_coefficients():
    x = sp.symbols("x1:7")
    F = sp.Poly(sp.expand(_det3((x[0], x[1]), (x[2], x[3]), (x[4], x[5]))), *x)
    terms = F.terms()
    assert len(terms) == 12 and {abs(c) for _, c in terms} == {1}
    for exps, _ in terms:
        assert sorted(exps) == [0, 0, 0, 1, 1, 1]  # three distinct variables, degree 1 each


def test_sets_with_no_three_concurrent_chords():
    squares = [Fraction(i * i) for i in range(1, 14)]
    assert _general_position(squares[:11]) == 0  # s_i = i^2 has (G) up to 11 points
    assert _general_position(squares[:12]) > 0  # ... and not at 12
    powers = [Fraction(12) ** (2**i) for i in range(1, 8)]
    assert _general_position(powers) == 0  # s_i = 12^(2^i), the family of the proof
    # (G) is what a first fold needs: three chords through one pole <=> F = 0 (Lemma 3)
    p = [_pt(u) for u in squares[:11]]
    pairs = list(itertools.combinations(range(11), 2))
    rng = random.Random(8)
    for _ in range(300):
        A, B, C = rng.sample(pairs, 3)
        if len(set(A + B + C)) < 6:
            continue
        Q = _meet(p[A[0]], p[A[1]], p[B[0]], p[B[1]])
        if Q is not None:
            assert _cross(_sub(p[C[0]], Q), _sub(p[C[1]], Q)) != 0


def _circle_points(n):
    out = []
    for i in range(1, n + 1):
        u = fmpq(i * i)
        out.append(((1 - u * u) / (1 + u * u), 2 * u / (1 + u * u)))
    return out


def test_every_labeling_of_2L_plus_3_points_on_the_circle_is_certified_at_depth_L():
    for depth in (1, 2):
        n = 2 * depth + 3
        X = _circle_points(n)
        for k in range(2**n):
            points = _point_set(X, labels_of(k, n))
            net = double_fold_net(points, depth)
            assert net.depth == depth and net.eps == 0
            assert certify(net, points, workers=1).all_certified
