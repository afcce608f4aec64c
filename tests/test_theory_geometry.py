"""lncapacity.theory.geometry's API edges, and the theory modules' doctests."""

from __future__ import annotations

import doctest
import importlib

import pytest
from flint import fmpq

from lncapacity.errors import InputError
from lncapacity.theory.geometry import (
    ellipsoid_axes,
    hull_witness,
    ln_norm_squared,
    project_and_scale,
    selecting_queries,
    z_score,
)


@pytest.mark.parametrize(
    "module", ["lncapacity.theory", "lncapacity.theory.separability", "lncapacity.theory.reals"]
)
def test_doctests(module):
    result = doctest.testmod(importlib.import_module(module))
    assert result.failed == 0


def test_constant_inputs_are_rejected_at_eps_zero():
    with pytest.raises(ValueError):
        project_and_scale([2, 2, 2])
    with pytest.raises(ValueError):
        ln_norm_squared([2, 2, 2])
    assert ln_norm_squared([2, 2, 2], fmpq(1, 10)) == 0  # eps > 0: the origin, inside


def test_ellipsoid_needs_nonzero_gains():
    with pytest.raises(InputError):
        ellipsoid_axes([1, 0, 2])
    with pytest.raises(InputError):
        ellipsoid_axes([3])
    ax = ellipsoid_axes([2, 2, 2])  # a sphere of radius 2 sqrt(3)
    assert ax.eigenvalues[0][0].rational == fmpq(1, 4) and ax.length_squared(0).rational == 12


def test_hull_and_selection_edges():
    assert hull_witness([[1, 2]], 0) is None  # no other key
    assert hull_witness([[0, 0], [2, 2], [1, 1]], 2) == [fmpq(1, 2), fmpq(1, 2), 0]
    # collinear keys: after LN, (0, 0, 1) and (0, 0, 2) are the same point; (3, 0, 0) differs
    assert selecting_queries([[0, 0, 1], [3, 0, 0]]) == [True, True]


def test_z_score_fixed_statistics_is_the_affine_formula():
    X = [[fmpq(1), fmpq(4)], [fmpq(3), fmpq(0)]]
    out = z_score(X, [fmpq(1), fmpq(2)], [fmpq(4), fmpq(1)], 0, sqrt=lambda v: v.sqrt())
    assert out == [[0, 2], [1, -2]]
    batch = z_score(X, sqrt=lambda v: v.sqrt())  # per-batch: each column becomes -1, +1
    assert batch == [[-1, 1], [1, -1]]
