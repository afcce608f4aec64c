"""Executable check of proofs/interval_rounding.md: every operation encloses the exact result."""

import random
from fractions import Fraction

import numpy as np
import pytest
from flint import fmpq

from lncapacity import interval as iv

MAX = float(np.finfo(np.float64).max)
TINY = 2.0**-1074


def q(f: float) -> Fraction:
    return Fraction(f)


def nearest(t: Fraction) -> float:
    """fl(t): Python's int / int is correctly rounded (inf beyond the range)."""
    try:
        return t.numerator / t.denominator
    except OverflowError:
        return float("inf") if t > 0 else float("-inf")


def random_float(rng: random.Random) -> float:
    kind = rng.random()
    if kind < 0.15:
        return rng.choice([0.0, -0.0, TINY, -TINY, MAX, -MAX, 1.0, -1.0])
    if kind < 0.3:  # subnormal
        return rng.choice([-1, 1]) * rng.randint(1, 2**52) * TINY
    exp = rng.choice([rng.randint(-1074, 1023), rng.randint(-30, 30), rng.randint(990, 1023)])
    return float(np.ldexp(rng.uniform(-1, 1), exp))


def test_the_lemma_one_step_outwards():
    rng = random.Random(1)
    for _ in range(20000):
        a, b = random_float(rng), random_float(rng)
        t = q(a) * q(b) if rng.random() < 0.5 else q(a) + q(b)
        f = nearest(t)
        with np.errstate(over="ignore"):
            lo, hi = float(np.nextafter(f, -np.inf)), float(np.nextafter(f, np.inf))
        assert lo == -np.inf or q(lo) <= t
        assert hi == np.inf or t <= q(hi)


def test_without_the_step_the_enclosure_fails():
    # fl(1/3) < 1/3: the rounded value alone is no upper bound, so the step is needed
    assert q(1.0 / 3.0) < Fraction(1, 3)
    lo, hi = iv.scale((np.array([1.0]), np.array([1.0])), 1 / 3)
    assert q(lo[0]) < Fraction(1, 3) * q(1 / 3) * 3 <= q(hi[0])


def enclosing(rng: random.Random, n: int):
    """Random float intervals and an exact rational point of each."""
    lo, hi, pts = np.empty(n), np.empty(n), []
    for i in range(n):
        a, b = sorted((random_float(rng), random_float(rng)))
        if rng.random() < 0.3:
            b = a
        lo[i], hi[i] = a, b
        w = Fraction(rng.randint(0, 1000), 1000)
        pts.append(q(a) + w * (q(b) - q(a)))
    return (lo, hi), pts


def inside(x: Fraction, lo: float, hi: float) -> bool:
    return (lo == -np.inf or q(lo) <= x) and (hi == np.inf or x <= q(hi))


def test_add_mul_square_enclose():
    rng = random.Random(2)
    for _ in range(20):
        a, s = enclosing(rng, 500)
        b, t = enclosing(rng, 500)
        with np.errstate(all="ignore"):
            add, mul, sq = iv.add(a, b), iv.mul(a, b), iv.square(a)
        for i in range(500):
            assert inside(s[i] + t[i], add[0][i], add[1][i])
            if not np.isnan(mul[0][i]):
                assert inside(s[i] * t[i], mul[0][i], mul[1][i])
            else:  # only 0 * inf makes NaN
                assert np.isinf([a[0][i], a[1][i], b[0][i], b[1][i]]).any()
            assert inside(s[i] * s[i], sq[0][i], sq[1][i]) and sq[0][i] >= 0


def test_sqrt_and_division_enclose():
    rng = random.Random(3)
    for _ in range(20):
        a, s = enclosing(rng, 500)
        d, t = enclosing(rng, 500)
        d = (np.abs(d[0]), np.abs(d[1]))
        d = (np.minimum(d[0], d[1]), np.maximum(d[0], d[1]))
        t = [q(d[0][i]) + (q(d[1][i]) - q(d[0][i])) / 3 for i in range(500)]
        with np.errstate(all="ignore"):
            r = iv.sqrt(d)
            quo = iv.div_positive(a, d)
        for i in range(500):
            lo, hi = r[0][i], r[1][i]
            # sqrt(t) in [lo, hi]  <=>  lo^2 <= t <= hi^2 (both ends >= 0)
            assert lo >= 0 and q(lo) ** 2 <= t[i]
            assert hi == np.inf or t[i] <= q(hi) ** 2
            if d[0][i] > 0 and not np.isnan(quo[0][i]):
                assert inside(s[i] / t[i], quo[0][i], quo[1][i])
            if not d[0][i] > 0:
                assert np.isnan(quo[0][i])


def test_matvec_and_total_enclose():
    rng = random.Random(4)
    for _ in range(30):
        m, rows, cols = 7, rng.randint(1, 5), rng.randint(1, 6)
        W = [
            [fmpq(rng.randint(-(10**6), 10**6), rng.randint(1, 10**4)) for _ in range(cols)]
            for _ in range(rows)
        ]
        X = [
            [fmpq(rng.randint(-(10**6), 10**6), rng.randint(1, 10**4)) for _ in range(cols)]
            for _ in range(m)
        ]
        Wi = iv.enclose(np.array(W, dtype=object))
        Xi = iv.enclose(np.array(X, dtype=object))
        out = iv.matvec(Wi, Xi)
        tot = iv.total(Xi)
        for k in range(m):
            for i in range(rows):
                exact = sum((W[i][j] * X[k][j] for j in range(cols)), fmpq(0))
                assert fmpq(*q(out[0][k, i]).as_integer_ratio()) <= exact
                assert exact <= fmpq(*q(out[1][k, i]).as_integer_ratio())
            s = sum(X[k], fmpq(0))
            assert fmpq(*q(tot[0][k, 0]).as_integer_ratio()) <= s
            assert s <= fmpq(*q(tot[1][k, 0]).as_integer_ratio())


def test_enclose_is_tight_and_exact_for_floats():
    lo, hi = iv.enclose([fmpq(1, 3), fmpq(3, 4), fmpq(10**400), fmpq(-(10**400)), fmpq(1, 10**400)])
    assert q(lo[0]) < Fraction(1, 3) < q(hi[0]) and np.nextafter(lo[0], 1) == hi[0]
    assert lo[1] == hi[1] == 0.75
    assert lo[2] == MAX and hi[2] == np.inf and lo[3] == -np.inf
    assert lo[4] == 0 and hi[4] == TINY


def test_this_machine_rounds_to_nearest_with_subnormals():
    assert iv.default_float_mode()


# ---------------------------------------------------------------------------
# Products by BLAS, and a grouped layer in balls (the grouped pass)


def exact_sum(terms) -> Fraction:
    return sum((q(a) * q(b) for a, b in terms), Fraction(0))


def orders(a: np.ndarray, b: np.ndarray) -> list[float]:
    """The same dot product in several orders: left to right, right to left, NumPy's pairwise
    sum, BLAS, ``einsum``."""
    forward = np.float64(0.0)
    for x, y in zip(a, b, strict=True):
        forward = forward + x * y
    backward = np.float64(0.0)
    for x, y in zip(a[::-1], b[::-1], strict=True):
        backward = backward + x * y
    return [
        float(forward),
        float(backward),
        float((a * b).sum()),
        float(a @ b),
        float(np.einsum("i,i->", a, b)),
    ]


def test_dot_error_bounds_every_order():
    rng = random.Random(11)
    with np.errstate(all="ignore"):
        for _ in range(150):
            n = rng.choice([1, 2, 3, 7, 40, 120])
            scale = rng.choice([0, -1060, -540, 500])  # subnormal products, large sums
            a = np.array(
                [np.ldexp(rng.uniform(-1, 1), scale + rng.randint(-5, 5)) for _ in range(n)]
            )
            b = np.array([rng.uniform(-1, 1) * 2.0 ** rng.randint(-20, 20) for _ in range(n)])
            exact = exact_sum(zip(a, b, strict=True))
            S = float(np.abs(a) @ np.abs(b))
            bound = float(iv.dot_error(n, np.array([S]))[0])
            for s in orders(a, b):
                if np.isfinite(s) and np.isfinite(bound):
                    assert abs(q(s) - exact) <= q(bound)
            up = float(iv.upper_product(np.abs(a)[None, :], np.abs(b)[:, None])[0, 0])
            if np.isfinite(up):
                assert exact_sum(zip(np.abs(a), np.abs(b), strict=True)) <= q(up)


def test_dot_constants_are_the_rationals_rounded_up():
    u, eta = Fraction(1, 2**53), Fraction(1, 2**1074)
    for n in (1, 3, 15067, 2**40):
        gamma, Gamma, E, T = iv.dot_constants(n)
        g, G = n * u / (1 - n * u), n * u / (1 - 2 * n * u)
        assert g <= q(gamma) and G <= q(Gamma) and 2 * n * eta <= q(E)
        assert 2 * n * eta * (1 + G) <= q(T)
        assert g * (1 + G) == G and 1 / (1 - g) == 1 + G  # the identities the proof uses


def test_the_normalisation_is_within_rho():
    from flint import arb

    from lncapacity.arith import precision
    from lncapacity.certify import NORMAL_FLOOR, _norm_constants

    rng = random.Random(12)
    with precision(300):
        for _ in range(300):
            k = rng.choice([2, 3, 5, 64])
            scale = rng.choice([-452, -300, 0, 200, 500])
            c = np.array([np.ldexp(rng.uniform(-1, 1), scale) for _ in range(k)])
            eps = rng.choice(
                [fmpq(0), fmpq(1, 3), fmpq(1, 2**1070), fmpq(10) ** -rng.randint(1, 300)]
            )
            eps_hi = iv.enclose([eps])[1]
            S = np.array([float(np.einsum("i,i->", c, c))])
            if not S[0] >= NORMAL_FLOOR:
                continue
            s = float(np.sqrt(S / k + eps_hi)[0])
            exact = (sum((arb(float(v)) ** 2 for v in c), arb(0)) / k + arb(eps)).sqrt()
            f, _ = _norm_constants(k)
            rho = 1 - q(f)  # f <= 1 - rho
            dev = abs(exact / arb(s) - 1)
            assert dev < arb(rho.numerator) / rho.denominator


def test_the_grouped_ball_encloses_every_point_of_the_ball():
    from flint import arb

    from lncapacity.arith import precision
    from lncapacity.certify import _ball_norm

    rng = random.Random(13)
    with precision(300):
        for _ in range(200):
            k = rng.choice([2, 3, 4])
            scale = rng.choice([-400, -2, 0, 3, 300])
            ct = np.array([[np.ldexp(rng.uniform(-1, 1), scale) for _ in range(k)]])
            R1 = np.array([[abs(float(ct[0, 0])) * rng.choice([0.0, 1e-15, 1e-6, 0.3])]])
            eps = rng.choice([fmpq(0), fmpq(1, 100), fmpq(1, 3)])
            ya, e = _ball_norm(ct, R1, k, iv.enclose([eps]))
            if not np.isfinite(e[0, 0]):
                continue
            for _ in range(5):  # points of the ball ||c - c~||_1 <= R1, exact
                w = [rng.uniform(-1, 1) for _ in range(k)]
                t = sum(abs(v) for v in w) or 1.0
                c = [fmpq(*float(ct[0, i]).as_integer_ratio()) for i in range(k)]
                r1 = fmpq(*float(R1[0, 0]).as_integer_ratio())
                c = [
                    ci + r1 * fmpq(*float(wi / t * 0.999).as_integer_ratio())
                    for ci, wi in zip(c, w, strict=True)
                ]
                s = (sum((arb(ci) ** 2 for ci in c), arb(0)) / k + arb(eps)).sqrt()
                for i in range(k):
                    dev = abs(arb(c[i]) / s - arb(float(ya[0, i])))
                    assert dev < arb(float(e[0, 0]))


@pytest.mark.parametrize("groups", [1, 2, 4])
def test_rmsnorm_nets_intervals_enclose_balls(groups):
    """RMSNorm (no centring), plain or in groups of 2 and 1: every score of the interval pass
    (the plain one, or the grouped one in balls) encloses the 300-bit balls of the exact net."""
    from flint import arb

    from lncapacity.arith import precision
    from lncapacity.certify import interval_pass
    from lncapacity.model import Affine, LNNet, Norm

    rng = random.Random(groups)

    def q():
        return fmpq(rng.randint(-(2**12), 2**12), 2**10)

    def affine(rows, cols):
        W = tuple(tuple(q() for _ in range(cols)) for _ in range(rows))
        return Affine(W, tuple(q() for _ in range(rows)))

    norms = (Norm(groups=groups, rms=True),) * 2
    net = LNNet(
        3, 4, fmpq(1, 2**10), (affine(4, 3), affine(4, 4)), affine(3, 4), (0, 1, 2), {}, norms
    )
    X = [[q() for _ in range(3)] for _ in range(40)]
    labels = [rng.randrange(3) for _ in X]
    *_, zlo, zhi = interval_pass(net, X, labels)
    assert np.isfinite(zlo).all() and (zhi - zlo < 1e-9).all()
    with precision(300):
        balls = net.map(arb)
        for k, x in enumerate(X):
            z = balls.forward([arb(v) for v in x], arb.sqrt)
            for j, zj in enumerate(z):
                assert arb(float(zlo[k, j])) <= zj <= arb(float(zhi[k, j]))


def test_a_group_of_one_feature_in_balls():
    from flint import arb

    from lncapacity.arith import precision
    from lncapacity.certify import _ball_norm

    rng = random.Random(14)
    with precision(300):
        for _ in range(200):
            ct = np.array([[np.ldexp(rng.uniform(-1, 1), rng.choice([-400, 0, 300]))]])
            R1 = np.array([[abs(float(ct[0, 0])) * rng.choice([0.0, 1e-15, 1e-6, 0.3])]])
            eps = rng.choice([fmpq(0), fmpq(1, 100), fmpq(1, 3)])
            ya, e = _ball_norm(ct, R1, 1, iv.enclose([eps]))
            if not np.isfinite(e[0, 0]):
                continue
            c0 = fmpq(*float(ct[0, 0]).as_integer_ratio())
            r1 = fmpq(*float(R1[0, 0]).as_integer_ratio())
            for t in (fmpq(-999, 1000), fmpq(0), fmpq(999, 1000)):
                c = c0 + r1 * t
                s = (arb(c) ** 2 + arb(eps)).sqrt()
                assert abs(arb(c) / s - arb(float(ya[0, 0]))) < arb(float(e[0, 0]))
