"""Executable check of proofs/ln_g_depth.md, against the package's own construction."""

import itertools
import math
import random

import numpy as np
import sympy as sp
from flint import arb, fmpq

from lncapacity.arith import precision
from lncapacity.certify import certify
from lncapacity.construct import build
from lncapacity.construct.groups import steepness
from lncapacity.construct.groups_deep import (
    Blocks,
    Levels,
    _units,
    choose_blocks,
    toggles,
    unit_levels,
)
from lncapacity.data import points_from_arrays
from lncapacity.model import layer_norm

ROOT6 = math.sqrt(6)
PROVED = fmpq(7, 16)  # Theorem 3: the margin over sqrt 6


# ---------------------------------------------------------------- the bias group


def test_bias_group_reads_a_constant_step():
    """``(s0, -s0, 0)`` reads ``sqrt(6) k0``, ``k0 = s0 / sqrt(s0^2 + 3 eps/2)``: a step at
    ``x = s0`` with ``b^2 = 3 eps / 2`` (so ``1 - k0 <= 3 eps / (4 s0^2)``)."""
    s0, eps = sp.symbols("s0 epsilon", positive=True)
    h = layer_norm([s0, -s0, sp.Integer(0)], eps, sp.sqrt)
    k0 = s0 / sp.sqrt(s0**2 + 3 * eps / 2)
    assert sp.simplify(h[0] - h[1] - sp.sqrt(6) * k0) == 0
    # tail bound (ln_g_steps.md Lemma 2) at x = s0, b^2 = 3 eps / 2, and the choice of s0
    for e, m in [(fmpq(0), fmpq(1, 10)), (fmpq(1, 100000), fmpq(1, 10**8)), (fmpq(7), fmpq(1, 3))]:
        s = fmpq(1)
        while s**2 * m < 6 * e:
            s *= 2
        with precision(200):
            tail = 1 - arb(s) / (arb(s) ** 2 + arb(3 * e / 2)).sqrt()
        assert (
            tail <= arb(3 * e / (4 * s**2)) + arb(fmpq(1, 10**50)) and 3 * e / (4 * s**2) <= m / 8
        )


# ---------------------------------------------------------------- Lemma 1: levels telescope


def test_levels_telescope_symbolically():
    for B in range(1, 7):
        ell = sp.symbols(f"l0:{B}", real=True)
        o = [(ell[i] - ell[i - 1]) / 2 for i in range(1, B)]
        o0 = (ell[0] + ell[-1]) / 2
        for j in range(B):  # block j: cuts 1..j below, j+1..B-1 above
            value = o0 + sum(o[i - 1] * (1 if i <= j else -1) for i in range(1, B))
            assert sp.simplify(value - ell[j]) == 0
        if B > 1:  # increasing levels: o_i >= 0 and sum o_i = (l_last - l_first)/2
            assert sp.simplify(sum(o) - (ell[-1] - ell[0]) / 2) == 0


# ---------------------------------------------------------------- Lemma 2 and Theorem 3: constants


def _largest_power(square_at_most):
    f = fmpq(1)
    while f * f > square_at_most:
        f /= 2
    return f


def test_the_constants_of_lemma_2_and_theorem_3():
    # (sqrt 6 / 2)(3/4) >= 9/10: G = (9/10) mu
    assert sp.sqrt(6) * 3 / 8 >= sp.Rational(9, 10)
    for mu in [fmpq(1, 3), fmpq(1, 10**3), fmpq(3, 10**8), fmpq(1, 2**70)]:
        f1 = _largest_power(4 * mu)
        assert f1 * f1 <= 4 * mu < 16 * f1 * f1 or f1 == 1  # the largest such power of two
        for eps in [fmpq(0), fmpq(1, 100000), fmpq(5)]:
            delta1 = fmpq(3, 7)
            beta, S = steepness(f1 * delta1, eps)
            b2 = 3 * beta**2 + 3 * eps / (2 * S**2)
            assert b2 <= delta1**2 * mu / 4  # Lemma 2's hypothesis
            assert b2 / (2 * delta1**2) <= mu / 8  # each cut's tail
            G = fmpq(9, 10) * mu
            for U in [1, 3, 5, 17, 101]:
                f2 = _largest_power(fmpq(4, U))
                beta2, S2 = steepness(f2 * G, eps)
                bb = 3 * beta2**2 + 3 * eps / (2 * S2**2)
                assert bb <= G**2 / (4 * U)  # Theorem 3's hypothesis
                assert U * (bb / (2 * G**2)) / 2 <= fmpq(1, 16)  # one channel's tails
    # re-steps (depth > 2): |y| >= (sqrt 6/2)(7/16) > 1/2, b <= 1/8, tail <= 1/32,
    # (sqrt 6/4)(31/32) > 1/2 and (sqrt 6/2)(31/32) > (7/16) sqrt 6
    assert sp.sqrt(6) / 2 * sp.Rational(7, 16) > sp.Rational(1, 2)
    for eps in [fmpq(0), fmpq(1, 100000), fmpq(9)]:
        beta, S = steepness(fmpq(1, 2), eps)
        bb = 3 * beta**2 + 3 * eps / (2 * S**2)
        assert bb <= fmpq(1, 64) and bb / (2 * fmpq(1, 4)) <= fmpq(1, 32)
    assert sp.sqrt(6) / 4 * sp.Rational(31, 32) > sp.Rational(1, 2)
    assert sp.Rational(31, 64) > sp.Rational(7, 16)


# ---------------------------------------------------------------- Lemma 3: every block's labels


def _all_partitions(n):
    """Every way to split runs 0..n-1 into blocks: the tuples of block starts."""
    for mask in range(2 ** (n - 1)):
        yield (0, *(i + 1 for i in range(n - 1) if mask >> i & 1))


def _ideal_channel(blocks, c, levels_per_unit, phis):
    """``V_c`` with signs for units, at each point (its block and ``phi``), exactly."""
    out = []
    for j, phi in phis:
        v = fmpq(0)
        for r, ell in enumerate(levels_per_unit):
            v += fmpq((-1) ** r, 2) * (1 if phi > ell[j] else -1)
        out.append(v)
    return out


def test_lemma_3_every_labeling_and_partition():
    """Every label sequence of up to 5 runs over 3 classes, every partition into blocks and
    every default: the channels read ``+1/2`` exactly on their class, ``-1/2`` elsewhere, with
    ``U_c`` (odd) the most toggles on one block."""
    checked = 0
    for n in range(1, 6):
        for labels in itertools.product(range(3), repeat=n):
            if any(a == b for a, b in itertools.pairwise(labels)):
                continue  # runs: neighbours differ
            runs = tuple((lab, i, i) for i, lab in enumerate(labels))  # one point per run
            for starts in _all_partitions(n):
                for default in sorted(set(labels)):
                    units = _units(list(labels), starts, default)
                    blocks = Blocks(runs, starts, default, units)
                    # levels: the gap before run r is level r (phi of run r's point: r + 1/2)
                    lv = Levels(tuple(fmpq(r) for r in range(n + 1)), fmpq(1, 2))
                    per_unit = unit_levels(blocks, lv)
                    ends = [*starts[1:], n]
                    block_of = [
                        j
                        for j, (a, b) in enumerate(zip(starts, ends, strict=True))
                        for _ in range(a, b)
                    ]
                    phis = [(block_of[r], fmpq(2 * r + 1, 2)) for r in range(n)]
                    for c in units:
                        assert units[c] % 2 == 1
                        assert units[c] >= max(
                            toggles(labels[a:b], c) for a, b in zip(starts, ends, strict=True)
                        )
                        ell = [e for cc, e in per_unit if cc == c]
                        assert len(ell) == units[c]
                        for e in ell:  # each unit's levels increase from block to block
                            assert all(x <= y for x, y in itertools.pairwise(e))
                        got = _ideal_channel(blocks, c, ell, phis)
                        want = [fmpq(1, 2) if lab == c else fmpq(-1, 2) for lab in labels]
                        assert got == want
                    checked += 1
    assert checked > 200


def test_toggles_formula():
    assert toggles([1], 1) == 1 and toggles([0], 1) == 0
    assert toggles([1, 0, 1], 1) == 3 and toggles([0, 1, 0], 1) == 2
    assert toggles([1, 0], 1) == 2 and toggles([0, 1], 1) == 1  # 2 runs_c - [ends with c]


# ---------------------------------------------------------------- Theorem 4: the group count


def _groups_of(labels):
    return choose_blocks(labels)


def test_theorem_4_two_classes():
    rng = random.Random(4)
    for m in [1, 2, 3, 5, 10, 37, 200, 1000, 5000]:
        for kind in ("alternating", "random"):
            labels = (
                [i % 2 for i in range(m)]
                if kind == "alternating"
                else [rng.randrange(2) for _ in range(m)]
            )
            blocks = _groups_of(labels)
            b = len(blocks.runs) - 1
            if b:
                assert blocks.groups <= 2 * math.sqrt(b) + 4, (m, kind, blocks.groups)
            # the count is the formula: B + 1 + sum U_c, U_c odd, the most toggles per block
            labs = [r[0] for r in blocks.runs]
            ends = [*blocks.starts[1:], len(labs)]
            for c, n in blocks.units.items():
                most = max(toggles(labs[a:e], c) for a, e in zip(blocks.starts, ends, strict=True))
                assert n == most + (most % 2 == 0)
            assert blocks.groups == len(blocks.starts) + 1 + max(1, sum(blocks.units.values()))
    # random labels on 10,000 points: about sqrt(2 m), far below the target 4 sqrt(m)
    labels = [rng.randrange(2) for _ in range(10_000)]
    assert _groups_of(labels).groups <= 2 * math.sqrt(10_000 / 2) + 8 < 4 * math.sqrt(10_000)


# ---------------------------------------------------------------- the built nets


def _check_net(X, y, depth, eps="0"):
    points = points_from_arrays(X, y)
    net = build(points, arch="ln-g", depth=depth, eps=eps)
    assert net.depth == depth
    cert = certify(net, points)
    assert cert.all_certified
    assert cert.min_margin >= float(PROVED) * ROOT6 - 1e-12
    # Theorem 3 in balls, through the model's own forward pass
    with precision(300):
        ballnet = net.map(arb)
        bound = arb(PROVED) * arb(6).sqrt()
        for x, label in zip(points.X, points.y, strict=True):
            z = ballnet.forward([arb(q) for q in x], lambda a: a.sqrt())
            own = net.classes.index(label)
            assert all(z[own] - zc > bound for c, zc in enumerate(z) if c != own)
    return net


def test_built_nets_reach_theorem_3():
    rng = np.random.default_rng(3)
    for m, k, depth, eps in [
        (40, 2, 2, "0"),
        (60, 4, 2, "1/100000"),
        (30, 3, 3, "1"),
        (25, 2, 4, "0"),
    ]:
        cells = rng.choice(100 * 100, size=m, replace=False)  # distinct integer points
        X = np.stack([cells // 100 - 50, cells % 100 - 50], axis=1)
        y = rng.integers(0, k, size=m)
        net = _check_net(X, y, depth, eps)
        b, blocks = net.meta["boundaries"], net.meta["blocks"]
        first, second = net.meta["groups_by_layer"][:2]
        assert first == blocks + 1
        assert second == max(1, sum(net.meta["units"].values()))
        assert net.meta["groups_by_layer"][2:] == [max(1, len(set(y.tolist())) - 1)] * (depth - 2)
        if k == 2 and b:
            assert first + second <= 2 * math.sqrt(b) + 4


# ---------------------------------------------------------- §5: the certificate by the theorem


def _random_block_net(rng, d, eps):
    """A depth-2 net of Theorem 5's form with random weights: layer 1 a pass-through (wide), a
    few steep steps (s_j in {1/2, 1, 2}) and constants, in random order; units with centre 0
    reading every group along u (A_rP > 0, the rest random); a readout along u with random
    kappa, a3 and biases."""
    from lncapacity.model import Affine, LNNet, Norm

    Q = fmpq
    r = tuple(Q(rng.randint(-4, 4) or 1, rng.choice([1, 2])) for _ in range(d))
    zero = tuple(Q(0) for _ in r)
    kinds = ["pass"] + ["cut"] * rng.randint(0, 5) + ["const"] * rng.randint(0, 2)
    rng.shuffle(kinds)
    W1, b1 = [], []
    for kind in kinds:
        s = {"pass": Q(1, 8), "cut": Q(rng.choice([1, 2, 4]), 2), "const": Q(0)}[kind]
        C = Q(rng.randint(-200, 200), 4) * s if s else Q(rng.choice([-1, 1]) * rng.randint(1, 9))
        B = Q(rng.randint(40, 80)) if kind == "pass" else Q(rng.randint(0, 4), 16)
        e_ = Q(rng.randint(-9, 9), 4)
        w = tuple(s * x for x in r)
        W1 += [w, tuple(-x for x in w), zero]
        b1 += [3 * B + e_ - C, 3 * B + e_ + C, e_]
    G1 = len(kinds)
    P = kinds.index("pass")
    units = rng.randint(1, 6)
    W2, b2 = [], []
    for _ in range(units):
        row = []
        for j in range(G1):
            A = Q(rng.randint(1, 4), 2) if j == P else Q(rng.randint(-6, 6), 16)
            a3 = Q(rng.randint(-3, 3), 5)
            row += [a3 + A / 2, a3 - A / 2, a3]
        e_ = Q(rng.randint(-5, 5), 3)
        B = Q(rng.randint(0, 3), 64)
        W2 += [tuple(row), tuple(-x for x in row), tuple(Q(0) for _ in row)]
        b2 += [3 * B + e_, 3 * B + e_, e_]
    k = rng.choice([2, 3])
    rows, rho = [], []
    for _ in range(k):
        row = []
        for _ in range(units):
            kap, a3 = Q(rng.randint(-2, 2), rng.choice([1, 2])), Q(rng.randint(-3, 3), 3)
            row += [a3 + kap / 2, a3 - kap / 2, a3]
        rows.append(tuple(row))
        rho.append(Q(rng.randint(-4, 4), 5))
    layers = (Affine(tuple(W1), tuple(b1)), Affine(tuple(W2), tuple(b2)))
    return LNNet(
        d,
        None,
        eps,
        layers,
        Affine(tuple(rows), tuple(rho)),
        tuple(range(k)),
        {},
        (Norm(groups=G1), Norm(groups=units)),
    )


def _theorem_5_interval(net, x, lab):
    """Theorem 5's enclosure of the margin at x in mpmath, from the weights (independently of
    the package's certificate), with tau* the largest actual tail of a step; None where its
    hypothesis mu > alpha tau* fails or x lies on a steep centre."""
    import mpmath

    mq = lambda q: mpmath.mpf(int(q.p)) / int(q.q)  # noqa: E731
    L1, L2, R = net.layers[0], net.layers[1], net.readout
    G1, U = len(L1.b) // 3, len(L2.b) // 3
    r = next(L1.W[3 * j] for j in range(G1) if any(L1.W[3 * j]))
    pivot = next(i for i, v in enumerate(r) if v)
    t = sum((w * v for w, v in zip(r, x, strict=True)), fmpq(0))
    groups = []
    for j in range(G1):
        p, q, e = L1.b[3 * j : 3 * j + 3]
        s = L1.W[3 * j][pivot] / r[pivot]
        b2 = 3 * ((p + q - 2 * e) / 6) ** 2 + 3 * net.eps / 2
        groups.append((s, (q - p) / 2, b2))
    P = max(
        (j for j in range(G1) if groups[j][0] > 0),
        key=lambda j: (groups[j][2] / groups[j][0] ** 2, -j),
    )
    if any(s > 0 and j != P and s * t == C for j, (s, C, _) in enumerate(groups)):
        return None

    def sigma(j):
        s, C, b2 = groups[j]
        z = mq(s * t - C)
        return z / mpmath.sqrt(z * z + mq(b2))

    sign = {j: 1 if groups[j][0] * t - groups[j][1] > 0 else -1 for j in range(G1) if j != P}
    tau = max((abs(sigma(j) - sign[j]) for j in sign), default=mpmath.mpf(0))
    phi = sigma(P)
    A = [[L2.W[3 * u_][3 * j] - L2.W[3 * u_][3 * j + 1] for j in range(G1)] for u_ in range(U)]
    level = [-sum(mq(a[j]) * sign[j] for j in sign) / mq(a[P]) for a in A]
    mu = min(abs(phi - lv) for lv in level)
    alpha = max(sum(abs(mq(a[j])) for j in sign) / mq(a[P]) for a in A)
    if not mu > alpha * tau:
        return None
    X = mpmath.sqrt(6) / 2 * min(mq(a[P]) for a in A) * (mu - alpha * tau)
    bu2 = max(
        3 * mq((L2.b[3 * u_] + L2.b[3 * u_ + 1] - 2 * L2.b[3 * u_ + 2]) / 6) ** 2
        + 3 * mq(net.eps) / 2
        for u_ in range(U)
    )
    tail2 = bu2 / (2 * X * X)
    kap = [[R.W[c][3 * u_] - R.W[c][3 * u_ + 1] for u_ in range(U)] for c in range(len(R.W))]
    on = [1 if phi > lv else -1 for lv in level]
    lo = hi = mpmath.inf
    for c in range(len(R.W)):
        if c == lab:
            continue
        dk = [mq(a - b) for a, b in zip(kap[lab], kap[c], strict=True)]
        D = mpmath.sqrt(6) / 2 * sum(v * o for v, o in zip(dk, on, strict=True))
        D += mq(R.b[lab] - R.b[c])
        err = mpmath.sqrt(6) / 2 * sum(abs(v) for v in dk) * tail2
        lo, hi = min(lo, D - err), min(hi, D + err)
    return lo, hi


def test_theorem_5_encloses_the_exact_margins():
    """Random nets of Theorem 5's form and points: where its hypothesis holds the exact margin
    (mpmath, the model's forward pass) lies in its interval; the package's certificate's
    interval contains the exact margin at every point it decides."""
    import mpmath

    from lncapacity.certify.theorems.blocks import blocks_certificate

    rng = random.Random(5)
    held = decided = 0
    for trial in range(30):
        d = rng.choice([1, 2])
        e = [fmpq(0), fmpq(1, 1000), fmpq(1, 2)][trial % 3]
        net = _random_block_net(rng, d, e)
        X = [
            tuple(fmpq(rng.randint(-200, 200), rng.choice([1, 4, 3])) for _ in range(d))
            for _ in range(30)
        ]
        labels = [rng.randrange(len(net.classes)) for _ in X]
        cert = blocks_certificate(net, tuple(X), np.array(labels))
        assert cert is not None
        with mpmath.workdps(60):
            mnet = net.map(lambda q: mpmath.mpf(int(q.p)) / int(q.q))
            for i, (x, lab) in enumerate(zip(X, labels, strict=True)):
                z = mnet.forward([mpmath.mpf(int(v.p)) / int(v.q) for v in x], mpmath.sqrt)
                mg = z[lab] - max(zc for c, zc in enumerate(z) if c != lab)
                got = _theorem_5_interval(net, x, lab)
                if got is not None:  # (within 60 digits' rounding of the forward pass)
                    assert got[0] - 1e-50 <= mg <= got[1] + 1e-50
                    held += 1
                if cert.lo[i] > -np.inf:
                    assert cert.lo[i] <= mg <= cert.hi[i]
                    decided += bool(cert.decided[i])
    assert held > 200 and decided > 100


def test_the_construction_is_certified_by_theorem_5():
    """The construction's depth-2 nets: every point certified by Theorem 5, with at least
    Theorem 3's margin (7/16) sqrt 6, whatever eps and the number of classes."""
    from lncapacity.certify.theorems.blocks import blocks_certificate

    rng = np.random.default_rng(6)
    for e, k in (("0", 2), ("1e-5", 3), ("2", 2)):
        Xf = rng.standard_normal((500, 3))
        y = rng.integers(0, k, 500)
        points = points_from_arrays(Xf, y)
        net = build(points, arch="ln-g", depth=2, eps=e)
        labels = np.array([net.classes.index(v) for v in points.y])
        cert = blocks_certificate(net, points.X, labels)
        assert cert.decided.all() and (cert.lo >= float(PROVED) * ROOT6).all()
