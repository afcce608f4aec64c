"""Executable check of proofs/depth_and_padding.md."""

import itertools
import random

import pytest
from flint import fmpq

from lncapacity import build, certify
from lncapacity.arith import precision
from lncapacity.construct import Chain, FoldStep, runs


def one_fold_runs(values, labels):
    order = sorted(range(len(values)), key=values.__getitem__)
    i = order[0]
    j = next(k for k in order[1:] if labels[k] == labels[i])
    c = (values[i] + values[j]) / 2
    new = sorted(order, key=lambda k: -abs(values[k] - c))
    merged = {i, j}
    seq = [labels[k] for k in new]
    # p_i and p_j merge: count them once (they are adjacent in the new order)
    pos = sorted(new.index(k) for k in merged)
    assert pos[1] == pos[0] + 1
    return runs([labels[k] for k in order]), runs(seq)


def test_run_count_lemma_on_every_labeling():
    rng = random.Random(5)
    for m in range(3, 9):
        values = sorted({fmpq(rng.randint(-50, 50), rng.randint(1, 5)) for _ in range(m)})
        for labels in itertools.product((0, 1), repeat=len(values)):
            if runs(labels) <= 2:
                continue
            before, after = one_fold_runs(values, list(labels))
            first_run_single = labels[1] != labels[0]
            assert after == (before - 1 if first_run_single else before)


@pytest.mark.parametrize("m", range(3, 13))
def test_alternating_labels_need_exactly_m_minus_2(m):
    X = [[k] for k in range(m)]
    y = [k % 2 for k in range(m)]
    net = build(X, y, method="pma")
    assert net.depth == m - 2
    assert certify(net, X, y).all_certified


def test_padding_fold_is_injective_and_reverses_order():
    rng = random.Random(2)
    values = sorted({fmpq(rng.randint(-99, 99), rng.randint(1, 7)) for _ in range(12)})
    chain = Chain(values, fmpq(1, 100000), prec=200)
    lo, span = values[0], values[-1] - values[0]
    chain.push(FoldStep(lo - span - fmpq(1, 3), span, kind="pad"))
    with precision(chain.prec):
        out = chain.values
        assert all(a > b for a, b in itertools.pairwise(out))  # strictly reversed, certified
