"""The Hessian measure, LN-G, the proposition's seeded sweep, and GroupLayerNorm."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from flint import fmpq

from lncapacity.arith import exact
from lncapacity.errors import InputError
from lncapacity.theory.hessian import (
    KINDS,
    eps_counterexample,
    hessian_measure,
    hessian_measure_exact,
    hessian_ratio,
    layer_norm_groups,
    ln_hessian,
    ln_hessian_float,
    ratio_lower_bound,
    sample_input,
)

try:
    import torch
except ImportError:  # pragma: no cover - torch is an optional extra
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")


def _admissible(d: int) -> list[int]:
    """Group numbers the proposition covers: g divides d, groups of size >= 3."""
    return [g for g in range(1, d + 1) if d % g == 0 and d // g >= 3]


def _sweep(dims: list[int], samples: int) -> dict[str, int]:
    counts = dict.fromkeys(KINDS, 0)
    for d in dims:
        for g in _admissible(d):
            bound = ratio_lower_bound(d, g)
            rng = np.random.default_rng([16, d, g])
            for kind in KINDS:
                for _ in range(samples):
                    x = sample_input(kind, d, g, rng)
                    ratio = hessian_ratio(x, g)  # exact rational at the exact input
                    assert ratio >= bound, (kind, d, g, x)
                    if 3 * g <= d:
                        assert ratio >= 1
                    if 4 * g == d:
                        assert ratio >= fmpq(d, 8)
                    if kind == "adversarial" and g > 1:
                        assert ratio < bound * fmpq(11, 10)  # the search gets close: bound is sharp
                    counts[kind] += 1
    return counts


def test_proposition_sweep_small_d():
    counts = _sweep([6, 12, 24, 48, 96], samples=2)
    assert min(counts.values()) >= 40


@pytest.mark.slow
def test_proposition_sweep_to_d_1024():
    counts = _sweep([192, 256, 512, 1024], samples=2)
    assert min(counts.values()) >= 40


def test_bound_values():
    assert ratio_lower_bound(12, 4) == fmpq(8, 5) and ratio_lower_bound(64, 16) == fmpq(256, 31)
    assert ratio_lower_bound(9, 1) == 1
    for d in (12, 64, 1024):
        assert ratio_lower_bound(d, d // 4) == fmpq(d * d, 8 * (d - 2)) > fmpq(d, 8)
    with pytest.raises(ValueError):
        ratio_lower_bound(8, 4)  # groups of 2
    with pytest.raises(InputError):
        ratio_lower_bound(10, 3)


def test_closed_form_values():
    x = [fmpq(1), fmpq(2), fmpq(4)]
    assert ln_hessian(x) == fmpq(9, 1) / (fmpq(14, 3) ** 2)  # 3 d (d - 2) / rho^4, rho^2 = 14/3
    assert ln_hessian([1, 5], 1) == 0  # LN of two numbers is locally constant
    with pytest.raises(ValueError):
        ln_hessian([1, 1, 1, 2, 3, 4], 2)  # a constant group, eps = 0
    assert ln_hessian([1, 1, 1, 2, 3, 4], 2, eps=fmpq(1, 10)) > 0
    X = np.random.default_rng(0).standard_normal((5, 12))
    for g, centre, eps in [(1, True, 0.0), (3, False, 0.1), (4, True, 1e-3)]:
        exact_h = [float(ln_hessian([exact(v) for v in row], g, exact(eps), centre)) for row in X]
        assert np.allclose(ln_hessian_float(X, g, eps, centre), exact_h, rtol=1e-12)


def test_layer_norm_groups_backends_agree():
    x = [fmpq(3), fmpq(-1), fmpq(2), fmpq(7), fmpq(0), fmpq(5)]
    sym = layer_norm_groups([sp.Integer(int(v)) for v in x], 2, sp.Rational(1, 10), True)
    num = layer_norm_groups(np.array([float(v) for v in x]), 2, 0.1, True)
    assert np.allclose([float(v) for v in sym], num, rtol=1e-14)
    both = layer_norm_groups(np.tile([float(v) for v in x], (3, 1)), 3, 0.0, False)
    assert both.shape == (3, 6)
    with pytest.raises(InputError):
        layer_norm_groups(np.zeros(6), 4)


def test_measure_is_zero_exactly_for_affine_maps():
    assert hessian_measure_exact(lambda v: [3 * v[0] - v[1], v[2] + 1, v[0]], [1, 2, 3]) == 0
    assert hessian_measure_exact(lambda v: [v[0] * v[1]], [1, 2]) == 2  # d2/dx1dx2 = 1, twice


def test_adversarial_search_finds_the_eps_counterexamples():
    # beyond the assumption (eps > 0) the same search, started where eps matters, goes below 1
    eps = 1e-5
    for d, g in [(12, 3), (12, 4), (64, 16)]:
        x = sample_input("adversarial", d, g, np.random.default_rng([7, d]), eps)
        assert hessian_ratio(x, g, exact(eps)) < fmpq(1, 10)  # exact, at the exact input
    x = sample_input("adversarial", 12, 4, np.random.default_rng(8), 0.0, centre=False)
    assert hessian_ratio(x, 4, 0, centre=False) < 1  # uncentred LN-G against LN


def test_eps_breaks_the_proposition():
    for d, g in [(12, 3), (12, 4), (24, 6)]:
        x = eps_counterexample(d, g)
        assert hessian_ratio(x, g, fmpq(1, 10**5)) < fmpq(1, 10**6)
        assert hessian_ratio(x, g) >= ratio_lower_bound(d, g)


@needs_torch
def test_autodiff_matches_closed_form():
    rng = np.random.default_rng(3)
    for d, g, eps, centre in [(8, 2, 0.0, True), (12, 3, 1e-3, False), (32, 8, 0.0, True)]:
        x = rng.standard_normal(d)
        auto = hessian_measure(lambda t, g=g, e=eps, c=centre: layer_norm_groups(t, g, e, c), x)
        assert auto == pytest.approx(float(ln_hessian_float(x, g, eps, centre)), rel=1e-10)
    # a non-LayerNorm function: y = (x1^2 x2, sin x3): H = 4 x2^2 + 2 (2 x1)^2 + sin(x3)^2
    x = np.array([0.5, -2.0, 1.0])
    f = lambda t: torch.stack([t[0] ** 2 * t[1], torch.sin(t[2])])  # noqa: E731
    assert hessian_measure(f, x) == pytest.approx(4 * 4.0 + 2 * 1.0 + np.sin(1.0) ** 2)


@needs_torch
@pytest.mark.slow
def test_autodiff_matches_closed_form_d_256():
    x = np.random.default_rng(4).standard_normal(256)
    auto = hessian_measure(lambda t: layer_norm_groups(t, 64, 0.0, True), x)
    assert auto == pytest.approx(float(ln_hessian_float(x, 64)), rel=1e-9)


@needs_torch
def test_group_layer_norm_module():
    from lncapacity.theory import GroupLayerNorm

    x = torch.randn(4, 12, dtype=torch.float64)
    ln = torch.nn.LayerNorm(12, eps=1e-5, dtype=torch.float64)
    assert torch.allclose(GroupLayerNorm(12, 1, dtype=torch.float64)(x), ln(x), atol=1e-12)
    m = GroupLayerNorm(12, 3, eps=0.0, centre=False, elementwise_affine=False)
    assert np.allclose(m(x).numpy(), layer_norm_groups(x.numpy(), 3, 0.0, False))
    m = GroupLayerNorm(12, 4, eps=0.0, elementwise_affine=False)
    xx = np.random.default_rng(5).standard_normal(12)
    assert hessian_measure(m, xx) == pytest.approx(float(ln_hessian_float(xx, 4)), rel=1e-10)
    with pytest.raises(ValueError):
        GroupLayerNorm(10, 4)
    assert "groups=4" in repr(GroupLayerNorm(12, 4))
