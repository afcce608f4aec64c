"""``lncapacity capacity`` and :mod:`lncapacity.theory.capacity` (issue 30, part 4)."""

from __future__ import annotations

import json
import random
from types import SimpleNamespace

import numpy as np
import pytest
from flint import fmpq

import lncapacity
from lncapacity.cli import capacity as cli_capacity
from lncapacity.cli import main
from lncapacity.model import Affine, LNNet, Norm
from lncapacity.theory.capacity import (
    counting_bound,
    layer_ranks,
    lemma_bound,
    linear_accuracy,
    parameter_count,
    random_labels,
    random_net,
    rank_upper_bounds,
)

# ---------------------------------------------------------------- the rank lemma, exactly


@pytest.mark.parametrize(
    ("d", "layers"),
    [
        (2, [(5, 1)] * 5),  # LN: 3, 4, then width - 1 = 4
        (3, [(12, 1), (7, 1), (12, 1)]),  # widths may differ: 4, 5, 6
        (2, [(6, 3), (8, 2), (6, 1), (9, 3)]),  # LN-G: groups multiply, capped by n - g
        (1, [(4, 2), (6, 3), (12, 4)]),
    ],
)
def test_rank_of_every_layer_is_proved_and_meets_the_lemma(d, layers):
    """Every layer: the certified lower bound (a nonzero ball minor) meets the exact upper
    bound, and both are the lemma's ``g min(r + 1, k - 1)`` on generic points."""
    rng = random.Random(d * 100 + len(layers))
    maps, norms, fan_in = [], [], d
    for n, g in layers:
        W = tuple(tuple(fmpq(rng.randint(-99, 99), 37) for _ in range(fan_in)) for _ in range(n))
        maps.append(Affine(W, tuple(fmpq(rng.randint(-99, 99), 41) for _ in range(n))))
        gain = tuple(fmpq(rng.randint(1, 9), 4) for _ in range(n))
        norms.append(Norm(gain, tuple(fmpq(rng.randint(-9, 9), 5) for _ in range(n)), g))
        fan_in = n
    readout = Affine(((fmpq(1),) * fan_in, (fmpq(-1),) * fan_in), (fmpq(0), fmpq(1)))
    net = LNNet(d, None, fmpq(1, 1000), tuple(maps), readout, (0, 1), {}, tuple(norms))
    X = np.random.default_rng(7).standard_normal((40, d))
    want = lemma_bound(d, layers, 40)
    ranks = layer_ranks(net, X)
    assert [r.exact for r in ranks] == want
    assert [r.upper for r in ranks] == want == rank_upper_bounds(net, X)
    assert [r.groups for r in ranks] == [g for _, g in layers]


def test_a_constructed_ln_g_net_has_rank_bounded_by_its_points():
    X, y = random_labels(30, 2, 3, 1)
    net = lncapacity.build(X, y, arch="ln-g")
    (rank,) = layer_ranks(net, X)
    # one layer on points in R^3: every group's block has rank <= min(rank [X | 1], 2) = 2
    assert rank.lower is not None and rank.lower <= rank.upper <= min(30, 2 * net.groups[0])


# ---------------------------------------------------------------- counts and baselines


def test_counting_bound_exact_values():
    assert [counting_bound(m, k) for m, k in [(100, 2), (100, 10), (1000, 2), (1000, 10)]] == [
        2,
        6,
        16,
        52,
    ]
    assert counting_bound(10_000, 10) == 520  # ceil(33220 / 64) with ceil(log2 10^10000) = 33220
    assert (10**10_000 - 1).bit_length() == 33220
    with pytest.raises(ValueError):
        counting_bound(0, 2)


def test_parameter_count():
    net = random_net(3, 8, 2, 4, classes=5)
    assert parameter_count(net) == 8 * 4 + 8 * 9 + 5 * 9
    gained = LNNet(
        net.input_dim,
        8,
        net.eps,
        net.layers,
        net.readout,
        net.classes,
        {},
        (Norm((fmpq(1),) * 8, None, 4), Norm((fmpq(2),) * 8, (fmpq(1),) * 8, 4)),
    )
    assert parameter_count(gained) == parameter_count(net) + 24


def test_linear_accuracy_separable_and_random_labels_are_shared():
    X = np.array([[0.0, 0], [1, 0], [0, 1], [5, 5], [6, 5], [5, 6]])
    assert linear_accuracy(X, np.array([0, 0, 0, 1, 1, 1])) == 1.0
    X2, y2 = random_labels(50, 10, 3, 0)
    X10, y10 = random_labels(50, 2, 3, 0)
    assert (X2 == X10).all() and set(y2[:10]) == set(range(10)) and set(y10) == {0, 1}


# ---------------------------------------------------------------- the command


@pytest.fixture(scope="module")
def small_run():
    """``capacity --m 14 --classes 2 --json``: every row, the ranks."""
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["capacity", "--m", "14", "--classes", "2", "--json", "--quiet"])
    return code, json.loads(out.getvalue())


def test_capacity_json_schema_and_certified_rows(small_run):
    code, s = small_run
    assert code == 0
    assert {"m", "dim", "seed", "bits_per_parameter", "results", "ranks"} <= set(s)
    assert (s["m"], s["dim"], s["bits_per_parameter"]) == (14, 3, 64)
    (r,) = s["results"]
    assert r["classes"] == 2 and r["counting_bound"] == 1
    assert 0.5 <= r["linear_train_accuracy"] <= 1
    archs = [(n["arch"], n["depth"]) for n in r["nets"]]
    assert archs[0][0] == "ln3" and archs[1:4] == [("ln-g", 1), ("ln-g", 2), ("ln-g", 3)]
    # the RMSNorm twins (proofs/rmsnorm.md): width 2 of ln3's depth, groups of 2
    assert archs[4] == ("rms", archs[0][1]) and archs[5:] == [("rms-g", d) for d in (1, 2, 3)]
    for n in r["nets"]:
        assert n["status"] in ("certified", "not built")
        if n["status"] == "certified":
            assert n["certified_points"] == 14
            assert n["parameters"] > 0 and n["total_width"] >= 2 and n["groups"] >= n["depth"]
    for ln, rms in zip(r["nets"][:4], r["nets"][4:], strict=True):  # groups of 3 to groups of 2
        if ln["status"] == "certified":
            assert rms["status"] == "certified" and rms["depth"] == ln["depth"]
            assert 3 * rms["total_width"] == 2 * ln["total_width"] and rms["groups"] == ln["groups"]
            assert rms["parameters"] < ln["parameters"]
    assert r["nets"][0]["status"] == "certified" and r["nets"][1]["status"] == "certified"
    ln3 = r["nets"][0]
    assert ln3["total_width"] == 3 * ln3["depth"] and ln3["groups"] == ln3["depth"]
    X, y = random_labels(14, 2, 3, 0)
    net = lncapacity.build(X, y, arch="ln-g")
    assert r["nets"][1]["parameters"] == parameter_count(net)


def test_capacity_ranks_proved(small_run):
    _, s = small_run
    layers = s["ranks"]["layers"]
    assert [row["ln"]["rank"] for row in layers] == [4, 5, 6, 7, 8, 9]
    assert [row["ln_g"]["rank"] for row in layers] == [14] * 6  # 48, capped by the 14 points
    assert all(row[k]["rank"] == row[k]["lemma_bound"] for row in layers for k in ("ln", "ln_g"))


def test_capacity_train_columns(monkeypatch, capsys):
    seen = []

    def fake(X, y, *, width, depth, groups, random_state, max_iter, norm="ln"):
        seen.append((width, depth, groups, max_iter, norm))
        return SimpleNamespace(train_accuracy=0.75)

    args = ["capacity", "--m", "10", "--classes", "3", "--no-ln3", "--no-rank", "--train"]
    monkeypatch.setattr(cli_capacity, "_trainer", lambda: fake)
    assert main([*args, "--train-iter", "7", "--json", "--quiet"]) == 0
    result = json.loads(capsys.readouterr().out)["results"][0]
    nets = result["nets"]
    assert nets[0]["train_accuracy"] == 0.75
    assert seen[0][1:] == (1, nets[0]["groups"], 7, "ln") and seen[0][0] == nets[0]["total_width"]
    rms = next(i for i, n in enumerate(nets) if n["arch"] == "rms-g")
    assert seen[rms][4] == "rms" and seen[rms][0] == nets[rms]["total_width"]
    # LayerNorm, RMSNorm, GroupNorm and PLS at equal width, depth and (so) parameter count
    equal = [(e["norm"], e["groups"], e["train_accuracy"]) for e in result["equal_parameters"]]
    assert [e[:2] for e in equal] == [
        ("LayerNorm", 1),
        ("RMSNorm", 1),
        ("GroupNorm", 4),
        ("RMSNorm in groups", 4),
    ]
    assert seen[-4:] == [
        (16, 2, 1, 7, "ln"),
        (16, 2, 1, 7, "rms"),
        (16, 2, 4, 7, "ln"),
        (16, 2, 4, 7, "rms"),
    ]

    def refuses(X, y, **kwargs):
        raise lncapacity.InputError("width: too wide")

    monkeypatch.setattr(cli_capacity, "_trainer", lambda: refuses)
    assert main([*args, "--json", "--quiet"]) == 0
    nets = json.loads(capsys.readouterr().out)["results"][0]["nets"]
    assert nets[0]["train_accuracy"] is None
    assert nets[0]["train_note"] == "not trained: width: too wide"
    monkeypatch.setattr(cli_capacity, "_trainer", lambda: None)
    assert main([*args, "--quiet"]) == 0
    assert cli_capacity.TRAIN_MISSING in capsys.readouterr().out


@pytest.mark.parametrize(
    "bad",
    [
        ["--m", "1"],
        ["--m", "10", "--classes", "1"],
        ["--m", "10", "--classes", "2,x"],
        ["--m", "10", "--classes", "2,2"],
        ["--m", "10", "--classes", ""],
        ["--m", "10", "--dim", "0"],
        ["--m", "x"],
    ],
)
def test_capacity_bad_arguments_exit_2(bad, capsys):
    with pytest.raises(SystemExit) as e:
        main(["capacity", *bad])
    assert e.value.code == 2
    err = capsys.readouterr()
    assert err.out == "" and "Traceback" not in err.err


def test_capacity_more_classes_than_points_exit_2(capsys):
    assert main(["capacity", "--m", "4", "--classes", "2,5", "--quiet"]) == 2
    err = capsys.readouterr()
    assert err.out == ""
    assert err.err.strip() == "lncapacity: error: --classes 5 needs at least as many points (--m 4)"
