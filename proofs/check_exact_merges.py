"""Executable check of proofs/exact_merges.md, against the package's own code."""

import random

import mpmath
import sympy as sp
from flint import arb, fmpq, fmpz_poly

import lncapacity
from lncapacity.algebraic import RadicalProgram
from lncapacity.arith import precision
from lncapacity.construct.exact import ExactStep, exact_layer, exact_pma
from lncapacity.fileformat import V
from lncapacity.model import layer_norm

pi, pj, q, r, h = sp.symbols("p_i p_j q r h", real=True)
S, beta, eps = sp.symbols("S beta epsilon", positive=True)


def v_read(p, c):
    """``v . LN(y)`` for the gadget's layer ``y = S((p - c) u + beta v)``, by the model."""
    y = [S * ((p - c) + beta), S * (-(p - c) + beta), S * (-2 * beta)]
    out = layer_norm(y, eps, sp.sqrt)
    return out[0] + out[1] - 2 * out[2]


def test_lemma_2_designed_merge_is_an_identity():
    c = (pi + pj) / 2
    assert sp.expand((pj - c) + (pi - c)) == 0  # p_j - c = -(p_i - c)
    assert sp.simplify(v_read(pi, c) - v_read(pj, c)) == 0
    # and the u-read, which nothing reads, differs: only v . h merges
    y = [S * ((pi - c) + beta), S * (-(pi - c) + beta), S * (-2 * beta)]
    z = [S * ((pj - c) + beta), S * (-(pj - c) + beta), S * (-2 * beta)]
    hu = layer_norm(y, eps, sp.sqrt)
    hz = layer_norm(z, eps, sp.sqrt)
    assert sp.simplify((hu[0] - hu[1]) + (hz[0] - hz[1])) == 0


def test_lemma_2_the_layer_built_is_the_gadget():
    """``exact_layer`` with a symbolic-free rational centre is ``S((a.h - c)u + beta v)``."""
    step = ExactStep(fmpq(7, 3), fmpq(1, 5), fmpq(4))
    layer = exact_layer([fmpq(2)], step)
    for x in (fmpq(-1), fmpq(0), fmpq(5, 2)):
        pre = layer([x])
        s = 2 * x - fmpq(7, 3)
        assert pre == [4 * (s + fmpq(1, 5)), 4 * (-s + fmpq(1, 5)), 4 * fmpq(-2, 5)]


def test_lemma_3_factorisations_at_the_midpoint():
    c = (pi + pj) / 2
    assert sp.expand((c - pi) ** 2 - (q - c) ** 2 - (q - pi) * (pj - q)) == 0
    assert sp.expand((r - c) ** 2 - (pj - c) ** 2 - (r - pj) * (r - pi)) == 0


def test_F_is_strictly_decreasing_so_equal_keys_iff_equal_values():
    D = sp.symbols("D", nonnegative=True)
    F = 6 * S * beta / sp.sqrt(S**2 * (2 * D + 6 * beta**2) / 3 + eps)
    dF = sp.diff(F, D)
    assert sp.simplify(
        dF * (S**2 * (2 * D + 6 * beta**2) / 3 + eps) ** sp.Rational(3, 2)
    ) == sp.simplify(-2 * S**3 * beta)


def test_lemma_1_balls_contain_the_values():
    rng = random.Random(3)
    for _ in range(30):
        prog = RadicalProgram()
        nodes = [prog.const(fmpq(rng.randint(1, 30), rng.randint(1, 7))) for _ in range(3)]
        exprs = [
            sp.Rational(int(prog.nodes[n.index][1].p), int(prog.nodes[n.index][1].q)) for n in nodes
        ]
        for _ in range(12):
            a, b = rng.randrange(len(nodes)), rng.randrange(len(nodes))
            op = rng.choice(["add", "mul", "div", "sqrt", "sub"])
            if op == "sqrt":
                nodes.append(nodes[a].sqrt() if float(exprs[a]) > 0 else nodes[a] * nodes[a])
                exprs.append(sp.sqrt(exprs[a]) if float(exprs[a]) > 0 else exprs[a] ** 2)
            elif op == "sub":
                nodes.append(nodes[a] - nodes[b])
                exprs.append(exprs[a] - exprs[b])
            elif op == "div" and exprs[b] != 0 and abs(float(exprs[b])) > 1e-6:
                nodes.append(nodes[a] / nodes[b])
                exprs.append(exprs[a] / exprs[b])
            else:
                nodes.append(nodes[a] + nodes[b] if op == "add" else nodes[a] * nodes[b])
                exprs.append(exprs[a] + exprs[b] if op == "add" else exprs[a] * exprs[b])
        with mpmath.workdps(200):
            for n, e in zip(nodes, exprs, strict=True):
                ball = n.ball(512)
                with precision(512):
                    mid = mpmath.mpf(ball.mid().str(180, radius=False))
                    rad = mpmath.mpf(ball.rad().str(5, radius=False))
                exact = mpmath.mpf(str(sp.N(e, 200)))
                assert abs(mid - exact) <= rad + mpmath.mpf(10) ** -170 * (1 + abs(exact))
                assert rad < mpmath.mpf(2) ** -400 * (1 + abs(exact))


def test_root_isolation():
    prog = RadicalProgram()
    r = prog.root(fmpz_poly([-2, 0, 1]), fmpq(1), fmpq(2))
    with precision(256):
        assert (r.ball() - arb(2).sqrt()).contains(0)
    for poly, lo, hi in [([-2, 0, 1], -2, 2), ([0, -1, 0, 1], -2, 2), ([1, 0, 1], 0, 1)]:
        try:
            prog.root(fmpz_poly(poly), fmpq(lo), fmpq(hi))
        except ValueError:
            continue
        raise AssertionError(f"{poly} on [{lo}, {hi}] accepted")


def paper_depth(t, y, digits=300):
    with mpmath.workdps(digits):
        vals = [mpmath.mpf(int(v.p)) / int(v.q) for v in t]
        groups = [[k] for k in range(len(t))]
        depth = 0
        while True:
            order = sorted(range(len(vals)), key=lambda k: vals[k])
            merged = []
            for k in order:
                if merged and abs(vals[merged[-1]] - vals[k]) < mpmath.mpf(10) ** (-digits // 2):
                    groups[merged[-1]] += groups[k]
                    continue
                merged.append(k)
            vals, groups = [vals[k] for k in merged], [groups[k] for k in merged]
            labels = [y[g[0]] for g in groups]
            if sum(1 for i in range(len(labels)) if i == 0 or labels[i] != labels[i - 1]) <= 2:
                return depth
            j = next(k for k in range(1, len(labels)) if labels[k] == labels[0])
            c = (vals[0] + vals[j]) / 2
            b = (vals[j] - vals[0]) / 3
            vals = [6 * b / mpmath.sqrt(2 * (p - c) ** 2 / 3 + 2 * b**2) for p in vals]
            depth += 1


def test_theorem_depths_and_certificates_up_to_7_points():
    for m in range(3, 8):
        X = [[i] for i in range(m)]
        for k in range(1, 2**m - 1):
            y = [(k >> i) & 1 for i in range(m)]
            chain = exact_pma([fmpq(i) for i in range(m)], y, fmpq(0))
            assert len(chain.steps) == paper_depth([fmpq(i) for i in range(m)], y)
            net = lncapacity.build(X, y, method="pma", exact=True)
            assert lncapacity.certify(net, X, y).all_certified
    assert tuple(V) == (1, 1, -2)
