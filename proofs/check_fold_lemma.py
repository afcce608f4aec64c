"""Executable check of proofs/fold_lemma.md, against the package's own gadget."""

import sympy as sp

from lncapacity.construct.fold import FoldStep, fold_layer
from lncapacity.fileformat import U, V
from lncapacity.model import layer_norm

s = sp.symbols("s", real=True)
S, beta, eps = sp.symbols("S beta epsilon", positive=True)
Q = S**2 * (2 * s**2 + 6 * beta**2) / 3 + eps
u = sp.Matrix([int(x) for x in U])
v = sp.Matrix([int(x) for x in V])


def test_u_v_orthogonal_to_ones_and_each_other():
    ones = sp.Matrix([1, 1, 1])
    assert (u.T * ones)[0] == 0 and (v.T * ones)[0] == 0 and (u.T * v)[0] == 0
    assert (u.T * u)[0] == 2 and (v.T * v)[0] == 6


def test_mean_and_variance():
    y = S * (s * u + beta * v)
    assert sp.simplify(sum(y) / 3) == 0
    var = sum((yi - sum(y) / 3) ** 2 for yi in y) / 3
    assert sp.simplify(var - S**2 * (2 * s**2 + 6 * beta**2) / 3) == 0


def test_reads_of_layer_norm():
    y = list(S * (s * u + beta * v))
    h = sp.Matrix(layer_norm(y, eps, sp.sqrt))  # the model's own LayerNorm
    assert sp.simplify((v.T * h)[0] - 6 * S * beta / sp.sqrt(Q)) == 0
    assert sp.simplify((u.T * h)[0] - 2 * S * s / sp.sqrt(Q)) == 0


def test_fold_read_is_even_and_decreasing_in_distance():
    f = 6 * S * beta / sp.sqrt(Q)
    assert sp.simplify(f - f.subs(s, -s)) == 0
    assert sp.simplify(sp.diff(f, s) * Q ** sp.Rational(3, 2) + 4 * S**3 * beta * s) == 0


def test_u_read_is_increasing():
    g = 2 * S * s / sp.sqrt(Q)
    assert (
        sp.simplify(sp.diff(g, s) * Q ** sp.Rational(3, 2) - 2 * S * (2 * S**2 * beta**2 + eps))
        == 0
    )


def test_the_package_gadget_is_this_map():
    """fold_layer + LN + the v read equals the lemma's formula, exactly, at rational data."""
    from flint import fmpq

    step = FoldStep(fmpq(3, 7), fmpq(2, 5), fmpq(4))
    layer = fold_layer([fmpq(1)], step)
    for p in (fmpq(-2), fmpq(1, 3), fmpq(5, 2)):
        y = [
            sp.Rational(str(w)) * sp.Rational(str(p)) + sp.Rational(str(b))
            for (w,), b in zip(layer.W, layer.b, strict=True)
        ]
        for e in (0, sp.Rational(1, 100000)):
            read = (v.T * sp.Matrix(layer_norm(y, e, sp.sqrt)))[0]
            sv = sp.Rational(str(p)) - sp.Rational(3, 7)
            expected = (6 * S * beta / sp.sqrt(Q)).subs(
                {S: 4, beta: sp.Rational(2, 5), eps: e, s: sv}
            )
            assert sp.simplify(read - expected) == 0
