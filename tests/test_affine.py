"""The contrast: an affine classifier (no LayerNorm) versus one LayerNorm layer."""

from __future__ import annotations

import itertools
import random

from flint import fmpq

from lncapacity import build, certify
from lncapacity.affine import affine_separation, is_separator, is_witness
from lncapacity.construct import runs


def test_three_collinear_points_one_labeling_is_impossible_without_layer_norm():
    X = [[0], [1], [2]]
    verdict = affine_separation(X, [0, 1, 0])
    assert not verdict.separable
    assert verdict.witness == (fmpq(1, 4), fmpq(1, 2), fmpq(1, 4))
    assert is_witness(X, [0, 1, 0], verdict.witness)
    # ... and one LayerNorm layer realises it, certified
    net = build(X, [0, 1, 0])
    assert net.depth == 1 and certify(net, X, [0, 1, 0]).all_certified


def test_every_labeling_of_three_collinear_points():
    X = [[0], [1], [2]]
    impossible = [
        y for y in itertools.product((0, 1), repeat=3) if not affine_separation(X, y).separable
    ]
    assert impossible == [(0, 1, 0), (1, 0, 1)]


def test_on_a_line_separable_iff_at_most_two_runs():
    rng = random.Random(0)
    for _ in range(200):
        m = rng.randint(2, 9)
        xs = rng.sample(range(-30, 30), m)
        y = [rng.randint(0, 1) for _ in range(m)]
        verdict = affine_separation([[x] for x in xs], y)
        order = sorted(range(m), key=xs.__getitem__)
        assert verdict.separable == (runs([y[i] for i in order]) <= 2)
        if verdict.separable:
            w, b = verdict.separator
            assert is_separator([[x] for x in xs], y, w, b)
        else:
            assert is_witness([[x] for x in xs], y, verdict.witness)


def test_xor_witness_and_a_separable_set():
    xor = [[0, 0], [0, 1], [1, 0], [1, 1]]
    assert affine_separation(xor, [0, 1, 1, 0]).witness == (fmpq(1, 4),) * 4
    verdict = affine_separation(xor, [0, 0, 1, 1])
    assert verdict.separable and is_separator(xor, [0, 0, 1, 1], *verdict.separator)
