"""Executable check of proofs/vc_theorem.md: certified shattering for small L."""

import random

import pytest
from flint import fmpq

from lncapacity.shatter import shatter, verify_shatter


@pytest.mark.parametrize("depth", range(6))
def test_line_points_shattered_at_exact_depth(depth, tmp_path):
    out = tmp_path / "s.jsonl"
    summary = shatter(None, depth, out=out, workers=1)
    assert summary.all_certified and summary.certified == 2 ** (depth + 2)
    checked, problems = verify_shatter(out, workers=1)
    assert not problems and checked.certified == summary.certified


@pytest.mark.parametrize("depth", range(4))
def test_points_in_the_plane_shattered(depth):
    rng = random.Random(depth)
    pts = []
    while len(pts) < depth + 2:
        p = (
            fmpq(rng.randint(-9, 9), rng.randint(1, 3)),
            fmpq(rng.randint(-9, 9), rng.randint(1, 3)),
        )
        if p not in pts:
            pts.append(p)
    summary = shatter(pts, depth, eps="1e-5", workers=1)
    assert summary.all_certified and summary.certified == 2 ** (depth + 2)
