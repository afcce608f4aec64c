"""Executable check of proofs/rational_centre.md."""

import random

import sympy as sp
from flint import fmpq

pi, pj, q, r, c = sp.symbols("p_i p_j q r c", real=True)


def test_distance_comparisons_factor():
    assert sp.expand((c - pi) ** 2 - (q - c) ** 2 - (q - pi) * (2 * c - pi - q)) == 0
    assert sp.expand((pj - c) ** 2 - (q - c) ** 2 - (pj - q) * (pj + q - 2 * c)) == 0
    assert sp.expand((r - c) ** 2 - (c - pi) ** 2 - (r - pi) * (r + pi - 2 * c)) == 0
    assert sp.expand((r - c) ** 2 - (pj - c) ** 2 - (r - pj) * (r + pj - 2 * c)) == 0


def test_midpoint_is_inside():
    m = (pi + pj) / 2
    assert sp.simplify(m - (pi + q) / 2 - (pj - q) / 2) == 0
    assert sp.simplify((q + pj) / 2 - m - (q - pi) / 2) == 0
    assert sp.simplify((pi + r) / 2 - m - (r - pj) / 2) == 0


def safe_interval(p_i, p_j, between, farther):
    """The lemma's interval: ``between`` must end closer than p_i, p_j, ``farther`` farther."""
    lower, upper = p_i, p_j
    if between:
        lower = max(lower, (p_i + max(between)) / 2)
        upper = min(upper, (min(between) + p_j) / 2)
    if farther:
        upper = min(upper, (p_i + min(farther)) / 2)
    return lower, upper


def test_any_centre_in_the_interval_keeps_the_structure():
    rng = random.Random(7)
    checked = 0
    for _ in range(500):
        values = sorted({fmpq(rng.randint(-50, 50), rng.randint(1, 9)) for _ in range(8)})
        j = rng.randint(1, len(values) - 1)
        p_i, p_j, between, rest = values[0], values[j], values[1:j], values[j + 1 :]
        lower, upper = safe_interval(p_i, p_j, between, rest)
        assert lower < upper
        for t in range(1, 10):
            cc = lower + (upper - lower) * fmpq(t, 10)
            near, far = abs(p_i - cc), abs(p_j - cc)
            assert all(abs(b - cc) < min(near, far) for b in between)
            assert all(abs(x - cc) > max(near, far) for x in rest)
            checked += 1
    assert checked == 4500


def test_relaxed_interval_keeps_the_label_structure():
    """Only values of the other label beyond p_j must stay farther (the relaxation)."""
    from lncapacity.construct import runs

    rng = random.Random(3)
    checked = 0
    for _ in range(400):
        values = sorted({fmpq(rng.randint(-60, 60), rng.randint(1, 9)) for _ in range(9)})
        labels = [rng.randint(0, 1) for _ in values]
        if runs(labels) <= 2:
            continue
        a = labels[0]
        j = next(k for k in range(1, len(values)) if labels[k] == a)
        p_i, p_j, between = values[0], values[j], values[1:j]
        other = [v for v, lab in zip(values[j + 1 :], labels[j + 1 :], strict=True) if lab != a]
        lower, upper = safe_interval(p_i, p_j, between, other)
        assert lower < upper
        for t in (1, 5, 9):
            cc = lower + (upper - lower) * fmpq(t, 10)
            order = sorted(range(len(values)), key=lambda k: -abs(values[k] - cc))
            new = [labels[k] for k in order]
            single = labels[1] != a
            assert runs(new) == runs(labels) - (1 if single else 0)
            # p_i and p_j end in one block of their label, above everything of the other label
            pos = sorted(order.index(k) for k in (0, j))
            assert all(new[q] == a for q in range(pos[0], pos[1] + 1))
            checked += 1
    assert checked > 600
