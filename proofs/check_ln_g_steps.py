"""Executable check of proofs/ln_g_steps.md, against the package's own construction."""

import itertools
import random
from fractions import Fraction

import numpy as np
import sympy as sp
from flint import arb, fmpq

from lncapacity.arith import exact, precision, to_float
from lncapacity.construct.groups import (
    PI2_8,
    UNIT,
    build_ln_g,
    coefficients,
    float_margin,
)
from lncapacity.data import points_from_arrays
from lncapacity.fileformat import U, V
from lncapacity.model import layer_norm

x, t, c, e1, e2 = sp.symbols("x t c eta1 eta2", real=True)
S, beta, eps, b = sp.symbols("S beta epsilon b", positive=True)
u = sp.Matrix([int(v) for v in U])
v = sp.Matrix([int(w) for w in V])


def sigma(z, bb):
    return z / sp.sqrt(z**2 + bb**2)


# ---------------------------------------------------------------- Lemma 1: the group's step


def test_group_mean_variance_and_u_read():
    y = list(S * (x * u + beta * v))
    assert sp.simplify(sum(y)) == 0
    var = sum(yi**2 for yi in y) / 3
    assert sp.simplify(var - S**2 * (2 * x**2 + 6 * beta**2) / 3) == 0
    h = sp.Matrix(layer_norm(y, eps, sp.sqrt))  # the model's own LayerNorm
    b2 = 3 * beta**2 + 3 * eps / (2 * S**2)
    assert sp.simplify((u.T * h)[0] - sp.sqrt(6) * x / sp.sqrt(x**2 + b2)) == 0
    # |LN(y)|^2 = 3 var / (var + eps): the circle of radius sqrt 3 at eps = 0, inside for eps > 0
    assert sp.simplify(sum(hi**2 for hi in h) - 3 * var / (var + eps)) == 0


def test_layer_norm_ignores_a_shift_along_ones():
    a = sp.symbols("a", real=True)
    y = list(S * (x * u + beta * v))
    h0 = layer_norm(y, eps, sp.sqrt)
    h1 = layer_norm([yi + a for yi in y], eps, sp.sqrt)
    assert all(sp.simplify(p - q) == 0 for p, q in zip(h0, h1, strict=True))


def test_grouped_layer_norm_is_layer_norm_per_group():
    ys = sp.symbols("y0:6", real=True)
    g = layer_norm(list(ys), eps, sp.sqrt, groups=2)
    each = layer_norm(list(ys[:3]), eps, sp.sqrt) + layer_norm(list(ys[3:]), eps, sp.sqrt)
    assert all(sp.simplify(p - q) == 0 for p, q in zip(g, each, strict=True))


def test_the_step_is_odd_increasing_and_bounded():
    s = sigma(x, b)
    assert sp.simplify(s + sigma(-x, b)) == 0
    assert sp.simplify(sp.diff(s, x) - b**2 / (x**2 + b**2) ** sp.Rational(3, 2)) == 0
    assert sp.simplify(1 - s**2 - b**2 / (x**2 + b**2)) == 0
    assert sp.limit(s, x, sp.oo) == 1 and sp.limit(s, x, -sp.oo) == -1


def test_the_package_layer_is_the_gadget():
    """Group j of the first layer computes S((t - c_j) u + beta v) exactly, t = read.x - shift."""
    X, y = [[0, 0], [1, 0], [0, 1], [2, 1], [1, 3]], [0, 1, 1, 0, 2]
    for e in (fmpq(0), fmpq(1, 100000)):
        net = build_ln_g(points_from_arrays(X, y), e)
        layer, G = net.layers[0], net.norm(0).groups
        assert net.widths == (3 * G,) and G == net.meta["groups"]
        read = [sp.Rational(r) for r in net.meta["projection"]]
        for j in range(G):
            rows = layer.W[3 * j : 3 * j + 3]
            bias = layer.b[3 * j : 3 * j + 3]
            Sb = -sp.Rational(str(bias[2])) / 2  # S beta
            Sr = [sp.Rational(str(w)) for w in rows[0]]
            Sc = sp.Rational(str(bias[1] - bias[0])) / 2  # S C_j
            for xi in X:
                pre = [
                    sum(sp.Rational(str(w)) * q for w, q in zip(row, xi, strict=True))
                    + sp.Rational(str(bb))
                    for row, bb in zip(rows, bias, strict=True)
                ]
                ts = sum(r * q for r, q in zip(Sr, xi, strict=True)) - Sc  # S (t - c_j)
                expected = ts * u + Sb * v
                assert [sp.simplify(p - q) for p, q in zip(pre, expected, strict=True)] == [0] * 3
            # and S read is a multiple of read: one S for all coordinates
            ratios = {sp.simplify(a / r) for a, r in zip(Sr, read, strict=True) if r != 0}
            assert len(ratios) == 1


# ---------------------------------------------------------------- Lemma 2: the tails


def test_tail_identity_and_bound():
    xp = sp.symbols("xp", positive=True)
    s = sp.sqrt(xp**2 + b**2)
    tail = 1 - xp / s
    assert sp.simplify(tail - b**2 / (s * (xp + s))) == 0
    # s (x + s) - 2 x^2 = (s - x)(s + 2x) >= 0 because s >= x
    assert sp.expand(s * (xp + s) - 2 * xp**2 - (s - xp) * (s + 2 * xp)) == 0
    assert sp.simplify(s**2 - xp**2 - b**2) == 0
    # so the tail is at most b^2 / (2 x^2); and it decreases in x, increases in b
    assert sp.simplify(sp.diff(tail, xp) + b**2 / s**3) == 0
    assert sp.simplify(sp.diff(tail, b) - xp * b / s**3) == 0


def test_tail_bound_on_a_grid_in_balls():
    with precision(128):
        for num, den in itertools.product(range(1, 40), (1, 3, 7, 50)):
            xx, bb = arb(fmpq(num, 7)), arb(fmpq(den, 10))
            tail = 1 - xx / (xx * xx + bb * bb).sqrt()
            assert tail < bb * bb / (2 * xx * xx)
            assert tail < 1


# ---------------------------------------------------------------- Lemma 3: telescoping


def test_readout_telescopes_to_one_hot():
    """Every run sequence of 1..6 runs over 3 labels (no two neighbours equal): at each run
    the half-sum of kappa times the signs is the indicator of the run's label."""
    for n in range(1, 7):
        for runs in itertools.product(range(3), repeat=n):
            if any(a == b for a, b in itertools.pairwise(runs)):
                continue
            for label in range(3):
                kappa = coefficients(runs, label)
                assert set(kappa) <= {-1, 0, 1} and len(kappa) == n + 1
                for r in range(n):  # between centres r and r + 1
                    signs = [1 if j <= r else -1 for j in range(n + 1)]
                    total = sum(k * s for k, s in zip(kappa, signs, strict=True))
                    assert fmpq(total, 2) == int(runs[r] == label)
            for a, c2 in itertools.combinations(range(3), 2):
                ka, kc = coefficients(runs, a), coefficients(runs, c2)
                assert max(abs(p - q) for p, q in zip(ka, kc, strict=True)) <= 2


# ---------------------------------------------------------------- Theorem 4: the margin


def test_odd_squares_sum_to_pi_squared_over_eight():
    i = sp.symbols("i", integer=True, positive=True)
    assert sp.simplify(sp.summation(1 / (2 * i - 1) ** 2, (i, 1, sp.oo)) - sp.pi**2 / 8) == 0
    with precision(128):
        assert arb.pi() ** 2 / 8 < arb(PI2_8)
    assert PI2_8 * fmpq(1, 16) < fmpq(772, 10000)  # pi^2/128 < 0.0772
    assert PI2_8 * fmpq(1, 32) < fmpq(386, 10000)


def _scores_and_tails(net, points):
    """Each point's exact scores (balls, the model's own forward pass) and its tails T(t)
    (balls), from the net's weights."""
    layer, G = net.layers[0], net.norm(0).groups
    out = []
    with precision(256):
        sq = lambda q: q.sqrt()  # noqa: E731
        ballnet = net.map(arb)
        for xi in points.X:
            z = ballnet.forward([arb(q) for q in xi], sq)
            T = arb(0)
            for j in range(G):
                p, q, s = layer.b[3 * j : 3 * j + 3]
                X = sum((w * xq for w, xq in zip(layer.W[3 * j], xi, strict=True)), fmpq(0))
                X += (p - q) / 2
                b2 = 3 * ((p + q - 2 * s) / 6) ** 2 + 3 * net.eps / 2
                T += 1 - abs(arb(X)) / (arb(X) ** 2 + arb(b2)).sqrt()
            out.append((z, T))
    return out


def test_margin_theorem_on_examples():
    """Every point of several nets: |z_c - sqrt6 [c = l]| <= sqrt6 T / 2 and
    z_l - z_c >= sqrt6 (1 - T) with T <= (pi^2/8) max b^2 / delta^2 <= pi^2/128 (balls)."""
    rng = random.Random(3)
    sets = [([[0, 0], [1, 0], [0, 1], [1, 1], [2, 1], [1, 3], [3, 2]], [0, 1, 1, 0, 2, 0, 1])]
    for _ in range(4):
        X = [[rng.randint(-20, 20), rng.randint(-20, 20)] for _ in range(12)]
        sets.append((X, [rng.randrange(3) for _ in X]))
    checked = 0
    for X, y in sets:
        points = points_from_arrays(X, y)
        for e in (fmpq(0), fmpq(1, 100000), fmpq(3)):
            net = build_ln_g(points, e)
            # Theorem 4.2's bound, from the construction's delta and b^2 (b / delta is the
            # same in units of t and of the first layer's S t)
            tails = PI2_8 * fmpq(net.meta["b2"]) / fmpq(net.meta["delta"]) ** 2
            assert tails <= PI2_8 / 16
            root6 = arb(6).sqrt()
            for (z, T), label in zip(_scores_and_tails(net, points), points.y, strict=True):
                assert T <= arb(tails)
                own = net.classes.index(label)
                for ci, zc in enumerate(z):
                    assert abs(zc - root6 * int(ci == own)) <= root6 * T / 2
                    if ci != own:
                        assert z[own] - zc >= root6 * (1 - T)
                        assert z[own] - zc > root6 * (1 - arb(PI2_8) / 16)
                checked += 1
    assert checked > 100


def test_distances_to_the_centres_grow_like_odd_multiples():
    """Theorem 4.1 on a built net: the i-th centre on either side is >= (2i - 1) delta away."""
    rng = random.Random(5)
    X = [[rng.randint(-50, 50), rng.randint(-50, 50)] for _ in range(40)]
    y = [rng.randrange(2) for _ in X]
    points = points_from_arrays(X, y)
    net = build_ln_g(points, fmpq(0))
    layer, G = net.layers[0], net.norm(0).groups
    C = sorted((layer.b[3 * j + 1] - layer.b[3 * j]) / 2 for j in range(G))
    r = layer.W[0]
    L = [sum((w * q for w, q in zip(r, xi, strict=True)), fmpq(0)) for xi in points.X]
    delta = min(abs(p - q) for p in L for q in C)
    assert delta > 0
    for p in L:
        right = sorted(q - p for q in C if q > p)
        left = sorted(p - q for q in C if q < p)
        for side in (right, left):
            for i, dist in enumerate(side, 1):
                assert dist >= (2 * i - 1) * delta


def test_the_construction_constants():
    """delta >= 7/16 of the smallest different-label gap; b^2 <= delta^2 / 16; eps = 0:
    b^2 <= delta^2 / 32."""
    rng = random.Random(11)
    for trial in range(6):
        X = [[fmpq(rng.randint(-999, 999), rng.randint(1, 64))] for _ in range(30)]
        X = [list(p) for p in dict.fromkeys(tuple(p) for p in X)]
        y = [rng.randrange(3) for _ in X]
        e = fmpq(0) if trial % 2 else fmpq(rng.randint(1, 10**6), 10**6)
        points = points_from_arrays(X, y)
        net = build_ln_g(points, e)
        t = [q[0] * fmpq(net.meta["projection"][0]) for q in points.X]
        order = sorted(range(len(t)), key=t.__getitem__)
        gaps = [t[j] - t[i] for i, j in itertools.pairwise(order) if points.y[i] != points.y[j]]
        delta, b2 = fmpq(net.meta["delta"]), fmpq(net.meta["b2"])
        assert delta >= fmpq(7, 16) * min(gaps)
        assert b2 <= delta**2 / (32 if e == 0 else 16)


# ---------------------------------------------------------------- §5: floats


def test_float_perturbation_decomposes_along_u_v_and_ones():
    """Lemma 5: y + (eta1, eta2, 0) - mean = S(x~ u + beta~ v) with the stated x~, beta~."""
    y = S * (x * u + beta * v) + sp.Matrix([e1, e2, 0])
    mean = sum(y) / 3
    xt = x + (e1 - e2) / (2 * S)
    bt = beta + (e1 + e2) / (6 * S)
    assert sp.simplify(y - mean * sp.ones(3, 1) - S * (xt * u + bt * v)) == sp.zeros(3, 1)
    assert sp.simplify(mean - (e1 + e2) / 3) == 0


def _float_forward(net, X, dtype):
    """lncapacity's NumPy forward pass for a grouped layer (product then bias, LayerNorm per
    group as floats.layer_norm computes it, the readout), in ``dtype``; also the first
    layer's pre-activations."""
    dt = np.dtype(dtype).type
    layer = net.layers[0]
    W = np.array([[to_float(q) for q in row] for row in layer.W]).astype(dt)
    bias = np.array([to_float(q) for q in layer.b]).astype(dt)
    R = np.array([[to_float(q) for q in row] for row in net.readout.W]).astype(dt)
    h = np.array([[to_float(q) for q in row] for row in X]).astype(dt)
    pre = np.zeros((len(h), W.shape[0]), dtype=dt)
    for k in range(W.shape[1]):
        pre += h[:, k, None] * W[:, k]
    pre = pre + bias
    Y = pre.reshape(len(h), -1, 3)
    Y = Y - Y.mean(axis=-1, keepdims=True)
    Y = Y / np.sqrt((Y * Y).mean(axis=-1, keepdims=True) + dt(to_float(net.eps)))
    return pre, Y.reshape(len(h), -1) @ R.T


def test_float_error_of_the_first_layer_within_lemma_5():
    """Measured |fl(pre-activation) - exact| <= S E at every point and row, both formats."""
    rng = np.random.default_rng(2)
    Xf = rng.standard_normal((300, 3))
    y = rng.integers(0, 3, 300)
    points = points_from_arrays(Xf, y)
    net = build_ln_g(points, fmpq(0))
    layer = net.layers[0]
    read = [fmpq(r) for r in net.meta["projection"]]
    S = layer.W[0][0] / read[0]
    size = max(
        sum((abs(r) * abs(q) for r, q in zip(read, row, strict=True)), fmpq(0)) for row in points.X
    )
    reach = max(
        abs(layer.b[3 * j + 1] - layer.b[3 * j]) / (2 * S) for j in range(len(layer.b) // 3)
    )
    beta = -layer.b[2] / (2 * S)
    for dtype in ("float64", "float32"):
        uu = UNIT[dtype]
        E = 8 * uu / (1 - 8 * uu) * size + 3 * uu / (1 - 3 * uu) * (reach + beta)
        pre, _ = _float_forward(net, points.X, dtype)
        bound = float(S * E)
        worst = 0.0
        for i in range(0, points.m, 7):
            for r in range(0, len(layer.b), 5):
                exact = sum(
                    (w * q for w, q in zip(layer.W[r], points.X[i], strict=True)), layer.b[r]
                )
                err = abs(_exact(pre[i, r]) - exact)
                worst = max(worst, float(err))
                assert err <= S * E
        assert worst <= bound


def _exact(f):
    q = Fraction(float(f))
    return fmpq(q.numerator, q.denominator)


def test_float_margin_theorem_holds_where_it_proves():
    """Where Theorem 6 proves a format, the measured float margins are at least its bound;
    and the meta's verdicts are Theorem 6's."""
    rng = np.random.default_rng(4)
    proved = set()
    for m, k in ((40, 2), (60, 3), (200, 5)):
        Xf = rng.standard_normal((m, 3))
        y = rng.integers(0, k, m)
        points = points_from_arrays(Xf, y)
        net = build_ln_g(points, fmpq(0))
        for dtype in ("float64", "float32"):
            verdict = net.meta["float"][dtype]
            if not verdict["proved"]:
                continue
            _, z = _float_forward(net, points.X, dtype)
            idx = np.array([net.classes.index(label) for label in points.y])
            own = z[np.arange(m), idx].astype(np.float64)
            zz = z.astype(np.float64)
            zz[np.arange(m), idx] = -np.inf
            margin = float((own - zz.max(axis=1)).min())
            assert margin >= float(exact(verdict["margin"])) * 6**0.5
            proved.add(dtype)
    assert proved == {"float64", "float32"}


def test_float_margin_is_monotone_and_fails_without_room():
    d = fmpq(1)
    ok, low = float_margin(d, d**2 / 16, fmpq(1, 10**6), 100, UNIT["float32"])
    assert ok and low > fmpq(9, 10)
    ok2, low2 = float_margin(d, d**2 / 16, fmpq(1, 4), 100, UNIT["float32"])
    assert ok2 and low2 < low
    assert float_margin(d, d**2 / 16, d, 100, UNIT["float32"]) == (False, fmpq(-1))
    assert not float_margin(d, d**2 / 16, fmpq(1, 2), 100, UNIT["float32"])[0]


# ---------------------------------------------------------- §7: the certificate by the theorem


def test_lemma_7_a_group_read_from_its_weights():
    """Rows (w, -w, 0), biases (p, q, e): y - mean = (w.h - C) u + B v and u.LN(y) =
    sqrt6 sigma_b(w.h - C), b^2 = 3 B^2 + 3 eps / 2; a row with a1 + a2 = 2 a3 reads
    ((a1 - a2)/2) u.LN(y)."""
    wh, p, q, e, a1, a3 = sp.symbols("wh p q e a1 a3", real=True)
    y = sp.Matrix([wh + p, -wh + q, e])
    C, B = (q - p) / 2, (p + q - 2 * e) / 6
    mean = sum(y) / 3
    assert sp.simplify(y - mean * sp.ones(3, 1) - ((wh - C) * u + B * v)) == sp.zeros(3, 1)
    h = sp.Matrix(layer_norm(list(y), eps, sp.sqrt))
    z = wh - C
    assert sp.simplify((u.T * h)[0] - sp.sqrt(6) * z / sp.sqrt(z**2 + 3 * B**2 + 3 * eps / 2)) == 0
    a2 = 2 * a3 - a1
    a = sp.Matrix([a1, a2, a3])
    assert sp.simplify((a.T * h)[0] - (a1 - a2) / 2 * (u.T * h)[0]) == 0


def _random_step_net(rng, G, k, d, eps, spread):
    """A depth-1 net of Theorem 8's form with random weights: rows (r, -r, 0), centres C_j
    distinct, steepness b_j^2 = 3 B_j^2 + 3 eps / 2 (B_j random, ``spread`` large = steep),
    readout rows (a3 + kappa/2, a3 - kappa/2, a3) with random kappa, a3 and biases."""
    from lncapacity.model import Affine, LNNet, Norm

    Q = lambda a, b=1: fmpq(a, b)  # noqa: E731
    r = tuple(Q(rng.randint(-5, 5) or 1, rng.choice([1, 2, 4])) for _ in range(d))
    centres = sorted({Q(rng.randint(-400, 400), 8) for _ in range(G)})
    W, bias = [], []
    for c in centres:
        B, e_ = Q(rng.randint(0, 20), spread), Q(rng.randint(-9, 9), 4)
        W += [r, tuple(-x for x in r), tuple(Q(0) for _ in r)]
        bias += [3 * B + e_ - c, 3 * B + e_ + c, e_]
    rows, rho = [], []
    for _ in range(k):
        row = []
        for _ in centres:
            kap, a3 = Q(rng.randint(-2, 2), rng.choice([1, 2])), Q(rng.randint(-3, 3), 3)
            row += [a3 + kap / 2, a3 - kap / 2, a3]
        rows.append(tuple(row))
        rho.append(Q(rng.randint(-4, 4), 5))
    layer = Affine(tuple(W), tuple(bias))
    G = len(centres)
    return LNNet(
        d,
        3 * G,
        eps,
        (layer,),
        Affine(tuple(rows), tuple(rho)),
        tuple(range(k)),
        {},
        (Norm(groups=G),),
    )


def _mp_margins(net, X, labels):
    """The exact margins z_l - max_{c != l} z_c by mpmath at 60 digits (the model's forward)."""
    import mpmath

    with mpmath.workdps(60):
        mnet = net.map(lambda q: mpmath.mpf(int(q.p)) / int(q.q))
        out = []
        for x, lab in zip(X, labels, strict=True):
            z = mnet.forward([mpmath.mpf(int(v.p)) / int(v.q) for v in x], mpmath.sqrt)
            out.append(z[lab] - max(zc for c, zc in enumerate(z) if c != lab))
        return out


def _theorem_8_interval(net, x, lab):
    """Theorem 8's enclosure of the margin at x, in mpmath (from the weights, independently of
    the package's certificate)."""
    import mpmath

    layer, R = net.layers[0], net.readout
    G = len(layer.b) // 3
    mq = lambda q: mpmath.mpf(int(q.p)) / int(q.q)  # noqa: E731
    t = sum((w * v for w, v in zip(layer.W[0], x, strict=True)), fmpq(0))
    C = [(layer.b[3 * j + 1] - layer.b[3 * j]) / 2 for j in range(G)]
    b2 = max(
        3 * ((layer.b[3 * j] + layer.b[3 * j + 1] - 2 * layer.b[3 * j + 2]) / 6) ** 2
        + 3 * net.eps / 2
        for j in range(G)
    )
    if t in C:
        return None
    cs = sorted(C)
    h = min((bq - aq for aq, bq in itertools.pairwise(cs)), default=None)

    def f(dist):
        if dist is None:
            return mpmath.mpf(0)
        return 1 / mq(dist) ** 2 + (0 if h is None else 1 / (mq(h) * mq(dist)))

    lower = max((c for c in cs if c < t), default=None)
    upper = min((c for c in cs if c > t), default=None)
    T = (
        mq(b2)
        / 2
        * (f(None if lower is None else t - lower) + f(None if upper is None else upper - t))
    )
    kap = [[R.W[c][3 * j] - R.W[c][3 * j + 1] for j in range(G)] for c in range(len(R.W))]
    lo = hi = mpmath.inf
    for c in range(len(R.W)):
        if c == lab:
            continue
        dk = [a - b for a, b in zip(kap[lab], kap[c], strict=True)]
        D = mpmath.sqrt(6) / 2 * sum(mq(v) * (1 if t > C[j] else -1) for j, v in enumerate(dk))
        D += mq(R.b[lab] - R.b[c])
        err = mpmath.sqrt(6) / 2 * max(abs(mq(v)) for v in dk) * T
        lo, hi = min(lo, D - err), min(hi, D + err)
    return lo, hi


def test_theorem_8_encloses_the_exact_margins():
    """Random nets of the form (random kappa, readout biases, steepness, eps) and points: the
    exact margin (mpmath) lies in Theorem 8's interval at every point, and in the package's
    certificate's (which is rounded outwards, so contains Theorem 8's)."""
    import mpmath

    from lncapacity.certify.theorems.steps import steps_certificate

    rng = random.Random(8)
    inside = decided = 0
    for trial in range(24):
        k, d = rng.choice([2, 3]), rng.choice([1, 2])
        e = [fmpq(0), fmpq(1, 1000), fmpq(2)][trial % 3]
        net = _random_step_net(rng, rng.randint(1, 9), k, d, e, rng.choice([4, 64, 4096]))
        X = [
            tuple(fmpq(rng.randint(-300, 300), rng.choice([4, 8, 3])) for _ in range(d))
            for _ in range(40)
        ]
        labels = [rng.randrange(k) for _ in X]
        exact = _mp_margins(net, X, labels)
        cert = steps_certificate(net, tuple(X), np.array(labels))
        assert cert is not None
        for i, (x, lab, mg) in enumerate(zip(X, labels, exact, strict=True)):
            got = _theorem_8_interval(net, x, lab)
            if got is None:
                assert cert.lo[i] == -np.inf
                continue
            with mpmath.workdps(60):
                assert got[0] - 1e-50 <= mg <= got[1] + 1e-50  # 60 digits' rounding
                assert cert.lo[i] <= mg <= cert.hi[i]
                assert cert.lo[i] <= got[0] + 1e-9 and got[1] - 1e-9 <= cert.hi[i]
            inside += 1
            decided += bool(cert.decided[i])
    assert inside > 600 and decided > 200


def test_the_construction_is_certified_by_theorem_8():
    """The construction's nets: every point certified by Theorem 8, with a margin of at least
    (29/32) sqrt 6 (§7), whatever eps."""
    from lncapacity.certify.theorems.steps import steps_certificate

    rng = np.random.default_rng(9)
    for e, k in ((fmpq(0), 2), (fmpq(1, 100000), 3), (fmpq(3), 2)):
        Xf = rng.standard_normal((400, 3))
        y = rng.integers(0, k, 400)
        points = points_from_arrays(Xf, y)
        net = build_ln_g(points, e)
        labels = np.array([net.classes.index(v) for v in points.y])
        cert = steps_certificate(net, points.X, labels)
        assert cert.decided.all() and (cert.lo > 29 / 32 * 6**0.5).all()
