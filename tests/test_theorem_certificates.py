"""The certificates by the margin theorems (proofs/ln_g_steps.md Theorem 8, proofs/ln_g_depth.md
Theorem 5) against the generic certificate, which shares nothing with them: on the LN-G step
and block nets of moderate size every point's verdict agrees, and the theorem's margin is a
lower bound inside the generic enclosure's reach; other nets, and points the theorem cannot
decide, go to the generic pass."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from flint import fmpq

import lncapacity
from lncapacity import fileformat
from lncapacity.certify import THEOREM_PRECISION

ROOT = Path(__file__).resolve().parents[1]


def _random(m: int, k: int, seed: int, d: int = 3):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, d))
    y = rng.integers(0, k, m)
    y[:k] = np.arange(k)
    return lncapacity.points_from_arrays(X, y)


@pytest.mark.parametrize(
    "m, k, depth, eps",
    [(200, 2, 1, "0"), (600, 3, 1, "1e-5"), (1000, 2, 2, "0"), (2000, 3, 2, "1e-5")],
)
def test_every_verdict_agrees_with_the_generic_pass(m, k, depth, eps):
    points = _random(m, k, seed=m + depth)
    net = lncapacity.build(points, arch="ln-g", depth=depth, eps=eps)
    by_theorem = lncapacity.certify(net, points)
    generic = lncapacity.certify(net, points, theorems=False)
    assert by_theorem.theorem is not None and generic.theorem is None
    assert by_theorem.all_certified and generic.all_certified
    assert all(p.precision == THEOREM_PRECISION for p in by_theorem.points)
    assert all(p.precision != THEOREM_PRECISION for p in generic.points)
    for p, q in zip(by_theorem.points, generic.points, strict=True):
        assert p.verdict == q.verdict
        # both enclose the same exact margin: the intervals meet, and the theorem's lower
        # bound is at most the generic upper end
        assert p.margin <= q.margin_interval[1]
        assert q.margin_interval[0] <= p.margin_interval[1]
        assert p.margin_interval[0] == p.margin > 0
    # the theorem's bounds are nearly as good as the generic pass's here
    assert by_theorem.min_margin > 0.9 * generic.min_margin


def test_wrong_labels_are_certainly_wrong_by_the_theorem_too():
    """A flipped label: the theorem finds the point certainly wrong (its upper end negative),
    as the generic pass does; the other points stay certified."""
    points = _random(300, 2, seed=4)
    net = lncapacity.build(points, arch="ln-g", depth=2)
    y = list(points.y)
    y[7] = 1 - y[7]
    flipped = lncapacity.points_from_arrays([[float(v) for v in x] for x in points.X], y)
    cert = lncapacity.certify(net, flipped)
    generic = lncapacity.certify(net, flipped, theorems=False)
    assert [p.verdict for p in cert.points] == [p.verdict for p in generic.points]
    assert cert.points[7].verdict == "wrong" and cert.points[7].precision == THEOREM_PRECISION
    assert cert.certified == 299


def test_a_point_on_a_centre_goes_to_the_generic_pass():
    """A point exactly at a step's centre: the theorem decides nothing there (its tail bound
    is infinite), and the generic pass decides it (here: the step reads 0, the point is
    undecided or wrong, never certified by the theorem)."""
    X = [[fmpq(i)] for i in range(8)]
    y = [0, 0, 1, 1, 0, 0, 1, 1]
    net = lncapacity.build(X, y, arch="ln-g")
    layer = net.layers[0]
    r = layer.W[0][0]
    centre = (layer.b[4] - layer.b[3]) / 2 / r  # the first inner centre, in units of x
    X2 = [*X, [centre]]
    cert = lncapacity.certify(net, X2, [*y, 0])
    assert cert.points[-1].precision != THEOREM_PRECISION
    assert all(p.precision == THEOREM_PRECISION for p in cert.points[:-1])


def test_other_nets_are_left_to_the_generic_pass():
    points = _random(20, 2, seed=1)  # (ln3's search grows fast with the points)
    for net in (
        lncapacity.build(points),  # ln3
        lncapacity.build(points, arch="ln-g", depth=3),  # re-stepped: no theorem here
    ):
        cert = lncapacity.certify(net, points)
        assert cert.theorem is None and cert.all_certified
        assert all(p.precision != THEOREM_PRECISION for p in cert.points)


def test_gains_are_folded_before_recognition():
    """The same function with LayerNorm gains and biases undone in the next map: folded, the
    net is the step net again, certified by the theorem with the same margins."""
    from forgery import unfold

    from lncapacity.model import Norm

    points = _random(80, 2, seed=5)
    net = lncapacity.build(points, arch="ln-g")
    G = net.norm(0).groups
    gain = tuple(fmpq(2 + (i % 3), 3) for i in range(3 * G))
    gained = unfold(net, [Norm(gain, None, G)])
    a, b = lncapacity.certify(net, points), lncapacity.certify(gained, points)
    assert b.theorem == a.theorem and [p.margin for p in a.points] == [p.margin for p in b.points]


def test_the_certificate_json_keeps_its_shape():
    points = _random(100, 2, seed=2)
    net = lncapacity.build(points, arch="ln-g", depth=2)
    d = lncapacity.certify(net, points).to_dict()
    g = lncapacity.certify(net, points, theorems=False).to_dict()
    assert set(d) == set(g) and set(d["results"][0]) == set(g["results"][0])
    assert d["precision_bits"] == THEOREM_PRECISION == d["results"][0]["precision_bits"]
    assert d["theorem"].startswith("proofs/ln_g_depth.md") and g["theorem"] is None


def test_the_command_line_reports_the_theorem(tmp_path):
    rng = np.random.default_rng(3)
    X = rng.standard_normal((150, 3))
    y = rng.integers(0, 2, 150)
    rows = "".join(
        ",".join(repr(float(v)) for v in x) + f",{c}\n" for x, c in zip(X, y, strict=True)
    )
    (tmp_path / "d.csv").write_text("a,b,c,label\n" + rows)
    env = {k: v for k, v in os.environ.items() if k != "LNCAPACITY_DEBUG"} | {
        "PYTHONPATH": str(ROOT)
    }
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "lncapacity",
            "certify",
            "d.csv",
            "--arch",
            "ln-g",
            "--out",
            "n.json",
            "--float",
            "float64",
            "--json",
            "--quiet",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    summary = json.loads(run.stdout)
    assert summary["all_certified"] and summary["precision_bits"] == THEOREM_PRECISION
    assert summary["theorem"].startswith("proofs/ln_g_steps.md")
    run = subprocess.run(
        [sys.executable, "-m", "lncapacity", "verify", "n.json", "d.csv", "--float", "float64"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "Theorem 8" in run.stdout
    assert fileformat.load(tmp_path / "n.json").meta["method"] == "steps"
    assert not math.isnan(summary["min_certified_margin"])
