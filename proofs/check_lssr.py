"""Executable check of proofs/lssr.md: LSSR's definition, invariances, and LayerNorm breaking it."""

import itertools
import random
from pathlib import Path

import numpy as np
import sympy as sp
from flint import fmpq

import lncapacity
from lncapacity.model import layer_norm
from lncapacity.theory import lssr, ssr
from lncapacity.theory.net_trace import trace
from lncapacity.theory.reals import compare

XOR = [[0, 0], [1, 1], [0, 1], [1, 0]]
XOR_Y = [0, 0, 1, 1]


def _sym_scatter(X, y):
    """S_w, S_t, S_b as SymPy matrices (exact for symbolic or algebraic data)."""
    X = [sp.Matrix(x) for x in X]
    mu = sum(X, sp.zeros(len(X[0]), 1)) / len(X)
    Sw = sp.zeros(len(X[0]))
    Sb = sp.zeros(len(X[0]))
    for c in dict.fromkeys(y):
        Xc = [x for x, yc in zip(X, y, strict=True) if yc == c]
        mc = sum(Xc, sp.zeros(len(X[0]), 1)) / len(Xc)
        Sw += sum(((x - mc) * (x - mc).T for x in Xc), sp.zeros(len(X[0])))
        Sb += len(Xc) * (mc - mu) * (mc - mu).T
    St = sum(((x - mu) * (x - mu).T for x in X), sp.zeros(len(X[0])))
    return Sw, St, Sb


def test_lemma0_total_is_within_plus_between_symbolically():
    a = sp.symbols("a0:10", real=True)
    X = [[a[0], a[1]], [a[2], a[3]], [a[4], a[5]], [a[6], a[7]], [a[8], a[9]]]
    Sw, St, Sb = _sym_scatter(X, [0, 0, 1, 1, 2])
    assert (St - Sw - Sb).expand() == sp.zeros(2)


def test_scatter_of_a_linear_image_and_translation_invariance_symbolically():
    a = sp.symbols("a0:8", real=True)
    C = sp.Matrix(2, 2, sp.symbols("c0:4", real=True))
    t = sp.Matrix(sp.symbols("t0:2", real=True))
    X = [[a[0], a[1]], [a[2], a[3]], [a[4], a[5]], [a[6], a[7]]]
    y = [0, 1, 0, 1]
    Sw, St, _ = _sym_scatter(X, y)
    CX = [list(C * sp.Matrix(x) + t) for x in X]
    Sw2, St2, _ = _sym_scatter(CX, y)
    assert (Sw2 - C * Sw * C.T).expand() == sp.zeros(2)
    assert (St2 - C * St * C.T).expand() == sp.zeros(2)
    # the Rayleigh quotient of C X at w is that of X at C^T w: the substitution behind Prop. 2
    w = sp.Matrix(sp.symbols("w0:2", real=True))
    v = C.T * w
    assert ((w.T * Sw2 * w)[0] - (v.T * Sw * v)[0]).expand() == 0


def test_mediant_inequality():
    p, q, r, s = sp.symbols("p q r s", positive=True)
    # (p + r)/(q + s) - p/q = q... >= 0 when p/q <= r/s: the identity behind Prop. 1
    lhs = (p + r) / (q + s) - p / q
    assert sp.simplify(lhs - (q * r - p * s) / (q * (q + s))) == 0


def _rand_data(rng, m, d, k):
    X = [[fmpq(rng.randint(-9, 9), rng.randint(1, 4)) for _ in range(d)] for _ in range(m)]
    y = [rng.randrange(k) for _ in range(m)]
    return X, y


def _apply(C, X, t=None):
    return [
        [
            sum((C[i][j] * x[j] for j in range(len(x))), fmpq(0)) + (t[i] if t else 0)
            for i in range(len(C))
        ]
        for x in X
    ]


def test_invariance_exactly_on_random_rational_data():
    rng = random.Random(16)
    for trial in range(12):
        d, k = rng.choice([2, 3]), rng.choice([2, 3])
        X, y = _rand_data(rng, 9, d, k)
        base = lssr(X, y)
        C = [[fmpq(rng.randint(-3, 3)) for _ in range(d)] for _ in range(d)]
        if np.linalg.matrix_rank(np.array([[float(c) for c in r] for r in C])) == d:
            same = lssr(_apply(C, X, [fmpq(trial)] * d), y)  # invertible, plus a translation
            assert compare(same, base) == 0
        P = [[fmpq(rng.randint(-3, 3)) for _ in range(d)] for _ in range(rng.choice([1, 2]))]
        img = lssr(_apply(P, X), y)
        if img is not None:  # any linear map: never lower (exact comparison of algebraic numbers)
            assert compare(img, base) >= 0


def test_lssr_is_min_over_one_row_maps_and_ssr_is_not_invariant():
    X, y = [[0, 0], [2, 1], [1, 3], [4, 4], [3, 0]], [0, 0, 1, 1, 1]
    value = lssr(X, y)
    # a sweep of one-row maps never goes below the exact minimum
    for a, b in itertools.product(range(-4, 5), repeat=2):
        if (a, b) != (0, 0):
            s = ssr([[a * x0 + b * x1] for x0, x1 in X], y)
            assert s is None or s.lo >= value.lo
    assert str(ssr(X, y)) != str(ssr([[x0, 10 * x1] for x0, x1 in X], y))


def test_xor_lssr_is_one_and_one_ln_layer_makes_it_zero_exactly():
    assert str(ssr(XOR, XOR_Y)) == "1" and str(lssr(XOR, XOR_Y)) == "1"
    u, v = [1, -1, 0], [1, 1, -2]
    H = []
    for x in XOR:
        p = x[0] + x[1] - 1
        H.append(
            layer_norm([sp.Integer(p * ui + vi) for ui, vi in zip(u, v, strict=True)], 0, sp.sqrt)
        )
    Sw, St, _ = _sym_scatter(H, XOR_Y)
    w = sp.Matrix(v)
    # the read w = v is constant on each class and differs between them: quotient 0 / positive
    assert sp.simplify((w.T * Sw * w)[0]) == 0
    assert sp.simplify((w.T * St * w)[0]) > 0
    # so LSSR = 0 exactly (it is a minimum of non-negative quotients), while SSR is not 0
    assert sp.simplify(Sw.trace()) > 0


def test_built_nets_lower_lssr_certified():
    rng = np.random.default_rng(16)
    sets = [(XOR, XOR_Y)]
    Xr = rng.integers(-64, 64, size=(40, 2)) / 16
    sets.append((Xr.tolist(), (rng.integers(0, 2, 40)).tolist()))
    spirals = lncapacity.load_points(Path(__file__).resolve().parents[1] / "examples/spirals.csv")
    sets.append((spirals, None))
    for X, y in sets:
        for method in ("runs", "pma"):
            net = lncapacity.build(X, y, method=method)
            assert net.depth >= 1
            layers = trace(net, X, y)
            first = layers[0].lssr
            assert first.is_exact
            hidden = [s.lssr for s in layers[1:-1]]
            # some LN layer lowers LSSR, certified: no affine map can (Prop. 2)
            drops = [b.hi < a.lo for a, b in zip([first, *hidden], hidden, strict=False)]
            assert any(drops)
            assert hidden[-1].hi < first.lo
