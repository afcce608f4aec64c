"""Executable check of proofs/runs_fold.md: the angle form of the layer and the run lemma."""

import itertools
import random

import sympy as sp
from flint import arb, fmpq

from lncapacity.arith import precision
from lncapacity.construct import Chain, FoldStep, fold_layer, runs
from lncapacity.construct.build import METHODS
from lncapacity.fileformat import read_vector
from lncapacity.model import layer_norm

s, t, theta, psi = sp.symbols("s t theta psi", real=True)
S, beta, alpha, eps, beta_eff = sp.symbols("S beta alpha epsilon beta_eff", positive=True)
gamma = sp.symbols("gamma", real=True)


def gadget_read(beta_, gamma_, alpha_=alpha, eps_=0):
    """The lemma's read ``a . LN(y)`` of ``y = S(s u + beta v)`` (proofs/fold_lemma.md, (1))."""
    return (
        S
        * (6 * alpha_ * beta_ + 2 * gamma_ * s)
        / sp.sqrt(S**2 * (2 * s**2 + 6 * beta_**2) / 3 + eps_)
    )


def angle_form(b_eff, alpha_eff, gamma_):
    """``A cos(theta - psi)`` written in ``t = tan(theta)``, theta in (-pi/2, pi/2).

    ``cos(theta) = 1/sqrt(1 + t^2)``, ``sin(theta) = t/sqrt(1 + t^2)``, and
    ``A cos(psi) = 3 sqrt(2) alpha_eff``, ``A sin(psi) = sqrt(6) gamma`` (proved below).
    """
    return (3 * sp.sqrt(2) * alpha_eff + sp.sqrt(6) * gamma_ * t) / sp.sqrt(1 + t**2)


# ---------------------------------------------------------------------------
# 1. eps = 0: p' = A cos(theta - psi)


def test_amplitude_and_angle():
    A = sp.sqrt(18 * alpha**2 + 6 * gamma**2)
    ps = sp.atan(gamma / (sp.sqrt(3) * alpha))
    assert sp.simplify(A * sp.cos(ps) - 3 * sp.sqrt(2) * alpha) == 0
    assert sp.simplify(A * sp.sin(ps) - sp.sqrt(6) * gamma) == 0
    # and the expansion A cos(theta - psi) = A cos psi cos theta + A sin psi sin theta
    th = sp.atan(t)
    lhs = A * sp.cos(th - ps)
    assert sp.simplify(sp.expand_trig(lhs) - angle_form(beta, alpha, gamma)) == 0


def test_eps_zero_read_is_a_cosine():
    p = gadget_read(beta, gamma)
    # s = sqrt(3) beta tan(theta), i.e. tan(theta) = s / (sqrt(3) beta)
    lhs = p.subs(s, sp.sqrt(3) * beta * t)
    assert sp.simplify(lhs - angle_form(beta, alpha, gamma)) == 0


def test_theta_increases_with_p():
    th = sp.atan(s / (sp.sqrt(3) * beta))
    assert sp.simplify(sp.diff(th, s) - sp.sqrt(3) * beta / (s**2 + 3 * beta**2)) == 0


# ---------------------------------------------------------------------------
# 2. eps > 0: the same map with effective parameters


def test_eps_is_an_effective_offset():
    # beta_eff^2 = beta^2 + eps/(2 S^2), i.e. eps = 2 S^2 (beta_eff^2 - beta^2)
    e = 2 * S**2 * (beta_eff**2 - beta**2)
    a_eff = alpha * beta / beta_eff
    p = gadget_read(beta, gamma, alpha, e)
    lhs = p.subs(s, sp.sqrt(3) * beta_eff * t)
    assert sp.simplify(lhs - angle_form(beta_eff, a_eff, gamma)) == 0


def test_construction_parameters_give_the_intended_angle():
    """alpha = 1, beta = sqrt(beta_eff^2 - eps/(2S^2)), gamma = sqrt3 (beta/beta_eff) tan psi."""
    b = sp.sqrt(beta_eff**2 - eps / (2 * S**2))
    g = sp.sqrt(3) * (b / beta_eff) * sp.tan(psi)
    # effective offset is beta_eff again ...
    assert sp.simplify(sp.sqrt(b**2 + eps / (2 * S**2)) - beta_eff) == 0
    # ... and the effective angle is psi: tan(psi_eff) = gamma / (sqrt3 alpha_eff)
    a_eff = 1 * b / beta_eff
    assert sp.simplify(g / (sp.sqrt(3) * a_eff) - sp.tan(psi)) == 0


def test_the_package_layer_is_this_map():
    """fold_layer + the model's LayerNorm + the read, in balls, equals A cos(theta - psi)."""
    with precision(200):
        for e in (fmpq(0), fmpq(1, 100000)):
            step = FoldStep(fmpq(3, 7), fmpq(2, 5), fmpq(4), (fmpq(1), fmpq(-5, 3)))
            layer = fold_layer([fmpq(1)], step)
            a = read_vector(step.read)
            S_, b_, (al, ga) = arb(step.scale), arb(step.offset), step.read
            b_eff = (b_**2 + arb(e) / (2 * S_**2)).sqrt()
            a_eff = arb(al) * b_ / b_eff
            A = (18 * a_eff**2 + 6 * arb(ga) ** 2).sqrt()
            ps = (arb(ga) / (arb(3).sqrt() * a_eff)).atan()
            for p in (fmpq(-2), fmpq(1, 3), fmpq(5, 2), fmpq(40)):
                y = [w[0] * p + bb for w, bb in zip(layer.W, layer.b, strict=True)]
                h = layer_norm([arb(v) for v in y], arb(e), lambda x: x.sqrt())
                read = sum((arb(ai) * hi for ai, hi in zip(a, h, strict=True)), arb(0))
                th = ((arb(p) - arb(step.centre)) / (arb(3).sqrt() * b_eff)).atan()
                assert abs(read - A * (th - ps).cos()) < arb(2) ** -150
                assert abs(read - step.ball_map(e)(arb(p))) < arb(2) ** -150


# ---------------------------------------------------------------------------
# 3. the run lemma


def interval(angle_runs):
    """The lemma's open interval for psi, from the runs' angles (sorted, increasing)."""
    R = angle_runs
    f, a, b0, b1, a1 = R[0][0], R[0][-1], R[1][0], R[1][-1], R[2][0]
    lo, hi = (a + b1) / 2, (b0 + a1) / 2
    if len(R) >= 4:
        hi = min(hi, (f + R[3][0]) / 2)
    return lo, hi


def blocks(angle_runs):
    """The claimed order by distance to psi: R_2, R_1 + R_3, R_4, ..., R_r."""
    R = angle_runs
    return [R[1], R[0] + R[2], *R[3:]]


def block_order_holds(angle_runs, ps):
    """Every value of each block strictly closer to psi than every value of the next."""
    d = [[abs(x - ps) for x in b] for b in blocks(angle_runs)]
    return all(max(u) < min(w) for u, w in itertools.pairwise(d))


def random_angle_runs(rng, r):
    sizes = [rng.randint(1, 3) for _ in range(r)]
    n = sum(sizes)
    # rational angles inside (-3/2, 3/2), a subset of (-pi/2, pi/2)
    vals = sorted(fmpq(x, 1000) for x in rng.sample(range(-1499, 1500), n))
    out, k = [], 0
    for size in sizes:
        out.append(vals[k : k + size])
        k += size
    return out


def test_run_lemma_exhaustively_on_random_configurations():
    rng = random.Random(11)
    tried = nonempty = folds = 0
    with precision(128):
        for _ in range(600):
            r = rng.randint(3, 7)
            R = random_angle_runs(rng, r)
            tried += 1
            lo, hi = interval(R)
            f, a, b0, b1, a1 = R[0][0], R[0][-1], R[1][0], R[1][-1], R[2][0]
            # the first half of the interval is never empty ...
            assert (a + b1) / 2 < (b0 + a1) / 2
            # ... so the interval is empty exactly when R_1 is wider than the gap b1..x
            if r >= 4:
                assert (lo < hi) == (a - f < R[3][0] - b1)
            else:
                assert lo < hi
            # sharpness: at either end (a tie of two labels) and just outside, the order fails
            for ps in (lo, hi, lo - fmpq(1, 10**6), hi + fmpq(1, 10**6)):
                assert not block_order_holds(R, ps)
            if not lo < hi:
                continue
            nonempty += 1
            candidates = [lo + (hi - lo) * fmpq(k, 8) for k in range(1, 8)]
            # centres of mirror pairs of one label (exact merges) inside the interval
            candidates += [
                (x + z) / 2
                for b in blocks(R)
                for x in b
                for z in b
                if x < z and lo < (x + z) / 2 < hi
            ][:4]
            labels = [1] + [0] + [k % 2 for k in range(3, r)]  # R_2, R_1+R_3, R_4, ...
            for ps in candidates:
                assert block_order_holds(R, ps)
                # |theta - psi| < 3 < pi, and cos decreases on [0, pi]: p' = cos(theta - psi)
                # decreases block by block (certified in balls)
                cos = [[(arb(x) - arb(ps)).cos() for x in b] for b in blocks(R)]
                for u, w in itertools.pairwise(cos):
                    assert all(x > z for x in u for z in w)
                # read in p' order, the labels form exactly r - 1 runs
                seq = [lab for lab, b in zip(labels, blocks(R), strict=True) for _ in b]
                assert runs(seq) == r - 1
                folds += 1
    assert tried == 600 and nonempty > 300 and folds > 2500


def test_mirror_image_is_the_fold_from_the_other_end():
    p, c, b, ps = sp.symbols("p c b psi", real=True)
    th = sp.atan((p - c) / (sp.sqrt(3) * b))
    mirrored = sp.atan((-p - (-c)) / (sp.sqrt(3) * b))
    assert sp.simplify(mirrored + th) == 0  # theta~ = -theta
    assert sp.simplify(sp.cos(mirrored - ps) - sp.cos(th - (-ps))) == 0  # psi~ = -psi


# ---------------------------------------------------------------------------
# the interval can always be made non-empty


def angles_of(values, c, w):
    return [((arb(x) - arb(c)) / arb(w)).atan() for x in values]


def test_centre_at_the_top_of_r2_and_small_offset_make_the_interval_non_empty():
    """c = max R_2 and sqrt3 beta <= min(c - max R_1, min R_4 - c): a - f < pi/4 <= x - b1."""
    rng = random.Random(4)
    with precision(128):
        for _ in range(300):
            r = rng.randint(4, 7)
            sizes = [rng.randint(1, 4) for _ in range(r)]
            n = sum(sizes)
            vals = sorted(
                fmpq(x, rng.randint(1, 50)) for x in rng.sample(range(-(10**4), 10**4), n)
            )
            if len(set(vals)) < n:
                continue
            P, k = [], 0
            for size in sizes:
                P.append(vals[k : k + size])
                k += size
            c = P[1][-1]
            w = min(c - P[0][-1], P[3][0] - c)  # w = sqrt(3) beta
            R = [angles_of(run, c, w) for run in P]
            f, a, b1, x = R[0][0], R[0][-1], R[1][-1], R[3][0]
            quarter = arb.pi() / 4
            assert a - f < quarter and x - b1 >= quarter - arb(2) ** -100
            lo, hi = interval(R)
            assert lo < hi  # certified


def test_a_grid_of_offsets_bounded_below_can_miss_the_interval():
    """Why the lemma's offset is explicit: R_1 wide, R_2..R_4 within 1/1000 of it.

    With sqrt3 beta = span/100 and any centre near R_2 the interval is empty; the
    lemma's choice (sqrt3 beta = 1/1000) makes it non-empty.
    """
    g = fmpq(1, 1000)
    P = [[fmpq(0), fmpq(1)], [1 + g], [1 + 2 * g], [1 + 3 * g, 2 + 3 * g]]
    with precision(128):
        for c in (1 + g, 1 + g + g / 2, 1 + 2 * g):
            lo, hi = interval([angles_of(run, c, fmpq(1, 100)) for run in P])
            assert lo > hi
        lo, hi = interval([angles_of(run, 1 + g, g) for run in P])
        assert lo < hi


# ---------------------------------------------------------------------------
# the package's "runs" construction works inside the lemma


def effective(step, e):
    S_, b_ = arb(step.scale), arb(step.offset)
    al, ga = (arb(x) for x in step.read)
    b_eff = (b_**2 + arb(e) / (2 * S_**2)).sqrt()
    ps = (ga * b_eff / (arb(3).sqrt() * al * b_)).atan()
    return b_eff, ps


def check_construction(values, y, e):
    chain = Chain(values, e)
    METHODS["runs"](chain, y, None)
    order = sorted(range(len(values)), key=values.__getitem__)
    start = runs([y[k] for k in order])
    assert len(chain.steps) == max(start - 2, 0)  # depth = runs after projection - 2
    with precision(chain.prec + 64):
        vals = [arb(v) for v in values]
        for step in chain.steps:
            b_eff, ps = effective(step, e)
            order = sorted(range(len(vals)), key=lambda k: vals[k].mid())
            groups = []
            for k in order:
                if groups and y[groups[-1][0]] == y[k]:
                    groups[-1].append(k)
                else:
                    groups.append([k])
            th = [((v - arb(step.centre)) / (arb(3).sqrt() * b_eff)).atan() for v in vals]
            R = [[th[k] for k in g] for g in groups]
            left_lo, left_hi = interval(R)
            mirror = [[-x for x in reversed(g)] for g in reversed(R)]
            right_lo, right_hi = interval(mirror)
            assert (left_lo < ps < left_hi) or (right_lo < -ps < right_hi)
            before = len(groups)
            f = step.ball_map(e)
            vals = [f(v) for v in vals]
            order = sorted(range(len(vals)), key=lambda k: vals[k].mid())
            assert runs([y[k] for k in order]) == before - 1
            # the runs are certainly separated
            for i, j in itertools.pairwise(order):
                if y[i] != y[j]:
                    assert vals[i] < vals[j]


def test_runs_construction_alternating():
    m = 12
    check_construction([fmpq(k) for k in range(m)], [k % 2 for k in range(m)], fmpq(1, 100000))


def test_runs_construction_random_labelings():
    rng = random.Random(8)
    for _ in range(6):
        m = rng.randint(5, 10)
        values = sorted({fmpq(rng.randint(-99, 99), rng.randint(1, 7)) for _ in range(m)})
        y = [rng.randint(0, 1) for _ in values]
        if len(set(y)) == 2:
            check_construction(values, y, fmpq(rng.choice((0, 1, 3))))
