"""LN-G at depth 2 and more (issue 30, part 3): ``build(..., arch="ln-g", depth=d)`` and
``certify --arch ln-g --depth d``.

Every net is certified by the generic :func:`certify` with the margin Theorem 3 of
proofs/ln_g_depth.md proves (``(7/16) sqrt 6``), and its group count is checked against the
formula ``B + 1 + sum_c U_c`` recomputed here from the labels along the net's projection
(Theorem 4's bound for two classes).
"""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys

import numpy as np
import pytest
from flint import fmpq

from lncapacity.certify import certify
from lncapacity.construct import build
from lncapacity.data import points_from_arrays
from lncapacity.errors import InputError
from lncapacity.floats import check

PROVED = 7 / 16 * math.sqrt(6)
SIX = [[0, 0], [3, 1], [1, 4], [5, 5], [6, 2], [2, 7]]


def _random(m, k, seed, d=3):
    rng = np.random.default_rng(seed)
    return points_from_arrays(rng.random((m, d)), rng.integers(0, k, size=m))


def _runs_along(net, points):
    """The labels of the runs along the net's projection (exact)."""
    read = [fmpq(r) for r in net.meta["projection"]]
    t = [sum((r * q for r, q in zip(read, x, strict=True)), fmpq(0)) for x in points.X]
    labels = [points.y[i] for i in sorted(range(points.m), key=t.__getitem__)]
    return [a for a, _ in itertools.groupby(labels)]


def _toggles(block, c):
    """Steps channel ``c`` needs on a block: entries into ``c`` (the start counts) and exits
    inside it."""
    return sum(b == c for b in block) * 2 - (block[-1] == c)


def _assert_certified(net, points):
    cert = certify(net, points)
    assert cert.all_certified
    assert cert.min_margin >= PROVED - 1e-12
    return cert


def _assert_count(net, points):
    """The net's groups are ``B + 1`` and ``sum_c U_c`` (``U_c`` odd and the most toggles of
    ``c`` on one block, recomputed from the runs and the net's cut positions)."""
    runs = _runs_along(net, points)
    meta = net.meta
    assert meta["boundaries"] == len(runs) - 1
    first, second = meta["groups_by_layer"][:2]
    assert [net.norm(i).groups for i in range(net.depth)] == meta["groups_by_layer"]
    assert first == meta["blocks"] + 1
    # the cuts: layer 1's groups 2.. are centred on label boundaries; split the runs there
    read = [fmpq(r) for r in meta["projection"]]
    layer = net.layers[0]
    j0 = next(j for j, r in enumerate(read) if r)
    S = [layer.W[3 * g][j0] / read[j0] for g in range(first)]
    cuts = sorted((layer.b[3 * g + 1] - layer.b[3 * g]) / (2 * S[g]) for g in range(2, first))
    t = [sum((r * q for r, q in zip(read, x, strict=True)), fmpq(0)) for x in points.X]
    order = sorted(range(points.m), key=t.__getitem__)
    blocks: list[list] = [[]]
    for i in order:
        if len(blocks) - 1 < len(cuts) and t[i] > cuts[len(blocks) - 1]:
            blocks.append([])
        if not blocks[-1] or blocks[-1][-1] != points.y[i]:
            blocks[-1].append(points.y[i])
    assert len(blocks) == meta["blocks"] and all(blocks)
    assert sum(len(b) - 1 for b in blocks) + len(blocks) - 1 == len(runs) - 1  # cuts: boundaries
    default = meta["default"]
    units = {}
    for c in {str(label) for label in points.y} - {default}:
        most = max(_toggles([str(x) for x in b], c) for b in blocks)
        units[c] = most + (most % 2 == 0)
    assert meta["units"] == units
    assert second == max(1, sum(units.values()))


@pytest.mark.parametrize(("k", "seed"), [(2, 0), (10, 1)])
def test_random_labels_depth_two(k, seed):
    points = _random(200, k, seed)
    net = build(points, arch="ln-g", depth=2)
    assert net.depth == 2 and net.meta["method"] == "blocks"
    _assert_certified(net, points)
    _assert_count(net, points)
    b = net.meta["boundaries"]
    if k == 2:
        assert net.meta["groups"] <= 2 * math.sqrt(b) + 4  # Theorem 4
    assert net.meta["groups"] < b / 2  # fewer than depth 1's b + 2 (far fewer as m grows)
    for backend in ("float64", "float32"):
        got = check(net, points, backend)
        assert got.agree == got.total


def test_every_labeling_of_up_to_six_points_at_depth_two():
    for m in range(1, 7):
        for bits in range(2**m):
            y = [(bits >> i) & 1 for i in range(m)]
            points = points_from_arrays(SIX[:m], y)
            net = build(points, arch="ln-g", depth=2, classes=[0, 1])
            assert net.depth == 2
            _assert_certified(net, points)


def test_three_classes_eps_and_deeper():
    points = _random(60, 3, 5, d=2)
    for depth, eps in [(2, "1e-5"), (3, "0"), (4, "1/3")]:
        net = build(points, arch="ln-g", depth=depth, eps=eps)
        assert net.depth == depth
        _assert_certified(net, points)
        _assert_count(net, points)
        # depth > 2 re-steps each channel: one group per class but the default
        assert net.meta["groups_by_layer"][2:] == [2] * (depth - 2)


def test_absent_classes_and_one_class():
    points = points_from_arrays(SIX, [1, 2, 2, 1, 1, 2])
    net = build(points, arch="ln-g", depth=2, classes=[0, 1, 2, 3])
    _assert_certified(net, points)
    assert net.readout.b[0] == net.readout.b[3] == -2
    one = points_from_arrays(SIX, [4] * 6)
    for depth in (2, 3):
        net1 = build(one, arch="ln-g", depth=depth, classes=[3, 4])
        assert net1.meta["groups_by_layer"] == [2, 1] + [1] * (depth - 2)
        _assert_certified(net1, one)


def test_depth_one_is_unchanged():
    points = _random(50, 2, 9)
    assert build(points, arch="ln-g") == build(points, arch="ln-g", depth=1)
    assert build(points, arch="ln-g").meta["method"] == "steps"


def test_bad_options():
    with pytest.raises(InputError, match="built by steps"):
        build(SIX, [0, 1, 0, 1, 0, 1], arch="ln-g", depth=2, method="runs")
    with pytest.raises(InputError, match="not ln-g"):
        build(SIX, [0, 1, 0, 1, 0, 1], arch="ln-g", depth=2, exact=True)


def _cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "lncapacity", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_cli_round_trip_with_verify(tmp_path):
    points = _random(80, 4, 3)
    data = tmp_path / "p.csv"
    rows = ["a,b,c,label"] + [
        ",".join(str(float(v)) for v in x) + f",{y}"
        for x, y in zip(points.X, points.y, strict=True)
    ]
    data.write_text("\n".join(rows) + "\n")
    out = tmp_path / "net.json"
    p = _cli(
        *("certify", data, "--arch", "ln-g", "--depth", 2, "--out", out, "--json"),
        *("--require-float", "float64,float32"),
    )
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout)
    assert report["certified"] == 80
    net = json.loads(out.read_text())
    assert len(net["layers"]) == 2 and "groups" in net["requires"]
    v = _cli("verify", out, data, "--float", "float64")
    assert v.returncode == 0, v.stderr


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--depth", "2", "--method", "runs"], "--method runs builds ln3 nets"),
        (["--depth", "-2"], "a depth is at least 1"),
        (["--depth", "2", "--exact", "--method", "pma"], "--method pma builds ln3 nets"),
    ],
)
def test_cli_bad_input_is_one_line_exit_2(tmp_path, options, message):
    data = tmp_path / "p.csv"
    data.write_text("x,y,label\n" + "".join(f"{a},{b},{i % 2}\n" for i, (a, b) in enumerate(SIX)))
    out = tmp_path / "net.json"
    p = _cli("certify", data, "--arch", "ln-g", "--out", out, *options)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and message in lines[0], p.stderr
    assert not out.exists()


def test_summary_quotes_the_width_3_bound_only_for_width_3_nets(tmp_path):
    """``bound m - 2`` is PMA's depth bound for width-3 nets; an LN-G summary must not quote it."""
    data = tmp_path / "p.csv"
    data.write_text("x,label\n" + "".join(f"{i},{i % 2}\n" for i in range(6)))
    net_lines = {}
    for arch in ("ln-g", "ln3"):
        p = _cli("certify", data, "--arch", arch, "--depth", 2 if arch == "ln-g" else 4, "--quiet")
        assert p.returncode == 0, p.stderr
        net_lines[arch] = p.stdout.splitlines()[1]
    assert net_lines["ln-g"].startswith("net: width 12-3, depth 2, method blocks")
    assert net_lines["ln3"].startswith("net: width 3, depth 4 (bound m - 2 = 4)")
