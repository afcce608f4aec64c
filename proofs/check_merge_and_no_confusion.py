"""Executable check of proofs/merge_and_no_confusion.md."""

import itertools
import random

import sympy as sp
from flint import fmpq

from lncapacity.construct import runs


def test_merge_identity():
    pi, pj, S, beta, eps = sp.symbols("p_i p_j S beta epsilon", positive=True)
    c = (pi + pj) / 2

    def read(p):
        return 6 * S * beta / sp.sqrt(S**2 * (2 * (p - c) ** 2 + 6 * beta**2) / 3 + eps)

    assert sp.simplify(read(pi) - read(pj)) == 0


def exact_fold_order(values, labels):
    """Labels in the new order, grouping equal new values (equal distance to c)."""
    order = sorted(range(len(values)), key=values.__getitem__)
    i = order[0]
    j = next(k for k in order[1:] if labels[k] == labels[i])
    c = (values[i] + values[j]) / 2
    dist = {k: abs(values[k] - c) for k in order}
    new = sorted(order, key=lambda k: -dist[k])  # p' decreases with distance
    return [(dist[k], labels[k]) for k in new], values[j]


def test_no_confusion_and_new_order_on_every_labeling():
    rng = random.Random(11)
    checked = 0
    for m in range(3, 8):
        for _ in range(6):
            values = sorted({fmpq(rng.randint(-40, 40), rng.randint(1, 4)) for _ in range(m)})
            if rng.random() < 0.5:
                values = [fmpq(k) for k in range(m)]  # equally spaced: many mirror images
            for labels in itertools.product((0, 1), repeat=len(values)):
                if runs(labels) <= 2:
                    continue
                seq, pj = exact_fold_order(values, list(labels))
                # equal distances only between equal labels
                for (d1, l1), (d2, l2) in itertools.pairwise(seq):
                    assert d1 != d2 or l1 == l2
                # the order: beyond p_j (reversed), then A, A, then the between values (all B)
                a = labels[0]
                beyond = sum(1 for v in values if v > pj)
                tail = [lab for _, lab in seq[beyond:]]
                assert tail[:2] == [a, a] and all(lab != a for lab in tail[2:])
                checked += 1
    assert checked > 500
