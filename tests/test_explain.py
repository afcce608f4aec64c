"""``lncapacity.explain``: the layer-by-layer account read back from a saved net.

The account must agree exactly with what the construction wrote in the net's
metadata (centre, offset, threshold), with the mathematics of the two methods
(``runs`` removes exactly one label run per layer, proofs/runs_fold.md; the
paper's ``pma`` merges one group per layer, seed 000), and with the certificate.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from flint import fmpq

import lncapacity
from lncapacity import certify, fileformat
from lncapacity.arith import parse_rational
from lncapacity.explain import (
    class_arcs,
    class_intervals,
    explain,
    float_scores,
    float_trace,
    fold_points,
    reads,
)
from lncapacity.floats import forward
from lncapacity.model import Affine, LNNet

ROOT = Path(__file__).resolve().parents[1]
SPIRALS = lncapacity.load_points(ROOT / "examples" / "spirals.csv")
XOR = lncapacity.load_points(ROOT / "examples" / "xor.csv")


@pytest.fixture(scope="module")
def nets() -> dict[str, LNNet[fmpq]]:
    return {
        "runs": lncapacity.build(SPIRALS, method="runs"),
        "pma": lncapacity.build(SPIRALS, method="pma"),
        "padded": lncapacity.build(XOR, depth=3),
    }


def three_class_net() -> tuple[LNNet[fmpq], list[list[int]], list[int]]:
    """Six points on a line, labels 0 0 1 1 2 2; one injective "warp" layer and a
    rank-one readout whose three lines give each class one interval."""
    X = [[k] for k in range(6)]
    y = [0, 0, 1, 1, 2, 2]
    layer = fileformat.gadget_affine(
        [fmpq(1)], fmpq(-10), fmpq(1), fmpq(1), {"kind": "warp", "why": "breaks a mirror pair"}
    )
    # v . LN((p + 10) u + v) = 6 / sqrt((2 (p + 10)^2 + 6) / 3): decreasing in p >= 0
    s = [6 / math.sqrt((2 * (p + 10) ** 2 + 6) / 3) for p in range(6)]
    t1, t2 = (
        fmpq(*(s[3] + s[4]).as_integer_ratio()) / 2,
        fmpq(*(s[1] + s[2]).as_integer_ratio()) / 2,
    )
    V = fileformat.V
    rows = [tuple(vi for vi in V), tuple(fmpq(0) for _ in V), tuple(-vi for vi in V)]
    readout = Affine(tuple(rows), (-t2, fmpq(0), t1))
    net = LNNet(1, 3, fmpq(0), (layer,), readout, (0, 1, 2), {"method": "hand-made"})
    return net, X, y


def test_centres_offsets_and_threshold_match_the_metadata_exactly(nets) -> None:
    for name, net in nets.items():
        account = explain(net, SPIRALS if name != "padded" else XOR)
        assert [e["kind"] for e in account["layers"]] == [a.meta["kind"] for a in net.layers]
        for e, layer in zip(account["layers"], net.layers, strict=True):
            assert e["meta"] == dict(layer.meta)
            assert parse_rational(e["centre"]) == parse_rational(layer.meta["centre"])
            offset = parse_rational(layer.meta["offset"])
            assert parse_rational(e["offset_squared"]) == offset * offset
        cuts = [iv["to"] for iv in account["readout"]["intervals"][:-1]]
        assert [parse_rational(c) for c in cuts] == [parse_rational(net.readout.meta["threshold"])]


def test_plain_folds_turn_at_their_centre(nets) -> None:
    """With the read v (gamma = 0) the map is a function of (s - c)^2: the fold point is c."""
    net = nets["pma"]
    for fp, layer in zip(fold_points(net), net.layers, strict=True):
        assert "read" not in layer.meta
        assert fp == parse_rational(layer.meta["centre"])


def test_runs_removes_exactly_one_label_run_per_layer(nets) -> None:
    account = explain(nets["runs"], SPIRALS)
    counts = [account["input"]["runs"]] + [e["after"]["runs"] for e in account["layers"]]
    assert counts[-1] == 2
    assert counts == list(range(counts[0], 1, -1))
    for e in account["layers"]:
        (joined,) = e["joined_runs"]  # R_1 folded onto R_3, from one end or the other
        n = e["before"]["runs"]
        expected = [1, 3] if e["folded"]["end"] == "left" else [n - 2, n]
        assert joined["runs_before"] == expected
        assert e["merged_values"] == []  # runs join; values stay apart
        assert e["after"]["label_gap_certainly_positive"]


def test_pma_merges_one_group_per_layer(nets) -> None:
    net = nets["pma"]
    account = explain(net, SPIRALS)
    for e in account["layers"]:
        assert e["kind"] == "pma"
        assert len(e["merged_values"]) == 1
        assert e["folded"]["end"] == "left"  # the smallest value is folded over
    # every point ends in one of the final groups; each merge takes two groups into one
    assert account["layers"][-1]["after"]["runs"] == 2


def test_margin_is_the_certificate(nets) -> None:
    net = nets["runs"]
    cert = certify(net, SPIRALS)
    account = explain(net, SPIRALS, certificate=cert)
    assert account["certificate"]["min_margin"] == cert.min_margin
    assert account["certificate"]["certified"] == SPIRALS.m
    assert account["certificate"]["precision_bits"] == cert.precision


def test_three_classes_and_an_unknown_kind() -> None:
    net, X, y = three_class_net()
    assert certify(net, X, y).all_certified
    account = explain(net, X, y)
    (layer,) = account["layers"]
    assert layer["kind"] == "warp"
    assert "breaks a mirror pair" in layer["words"]
    assert layer["folded"]["end"] == "none"  # the centre is left of every value
    assert [iv["class"] for iv in account["readout"]["intervals"]] == [2, 1, 0]
    assert account["layers"][0]["after"]["runs"] == 3
    json.dumps(account)  # plain data


def test_unknown_kinds_are_named_with_their_parameters() -> None:
    net, X, y = three_class_net()
    meta = {"kind": "mystery", "centre": "-10", "tilt": ["1", "1/4"], "note": "new"}
    odd = replace(net, layers=(replace(net.layers[0], meta=meta),))
    (layer,) = explain(odd, X, y)["layers"]
    assert layer["meta"] == meta
    assert layer["words"].startswith(
        "layer 1: a layer of kind 'mystery' (centre -10, tilt [1, 0.25], note new)."
    )
    assert parse_rational(layer["centre"]) == -10  # read from the weights all the same


def test_class_intervals_are_the_upper_envelope() -> None:
    net, _, _ = three_class_net()
    iv = class_intervals(net)
    assert iv is not None and [c for _, _, c in iv] == [2, 1, 0]
    (lo0, hi0, _), (lo1, hi1, _), (lo2, hi2, _) = iv
    assert lo0 is None and hi2 is None and hi0 == lo1 and hi1 == lo2
    r = reads(net)[-1]
    assert r is not None
    for s in [hi0 - 1, (hi0 + hi1) / 2, hi1 + 1]:
        scores = [c * s + b for c, b in zip(r.col, net.readout.b, strict=True)]
        expected = next(c for lo, hi, c in iv if (lo is None or lo < s) and (hi is None or s < hi))
        assert scores.index(max(scores)) == expected


def test_class_arcs_cover_the_circle_and_agree_with_argmax(nets) -> None:
    for net in [nets["runs"], three_class_net()[0]]:
        arcs = class_arcs(net)
        assert sum(e - s for s, e, _ in arcs) == pytest.approx(2 * math.pi)
        R = np.array([[float(w) for w in row] for row in net.readout.W])
        b = np.array([float(x) for x in net.readout.b])
        u, v = np.array([1, -1, 0]) / math.sqrt(2), np.array([1, 1, -2]) / math.sqrt(6)
        for s, e, c in arcs:
            t = (s + e) / 2
            h = math.sqrt(3) * (math.cos(t) * u + math.sin(t) * v)
            assert int(np.argmax(R @ h + b)) == c


def test_float_trace_and_scores_agree_with_the_float64_backend(nets) -> None:
    net = nets["runs"]
    z = forward(net, SPIRALS, "float64")
    np.testing.assert_array_equal(float_trace(net, SPIRALS).scores, z)
    np.testing.assert_array_equal(float_scores(net, SPIRALS.floats(), chunk=5), z)
    trace = float_trace(net, SPIRALS)
    assert trace.has_values and len(trace.values) == net.depth + 1
    np.testing.assert_allclose(trace.radius, math.sqrt(3))  # eps = 0: on the circle


def run(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lncapacity", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


def test_cli_explain(tmp_path, nets) -> None:
    path = tmp_path / "net.json"
    fileformat.save(nets["pma"], path)
    data = ROOT / "examples" / "spirals.csv"
    text, js = run("explain", path, data, "--quiet"), run("explain", path, data, "--json")
    assert text.returncode == 0 and js.returncode == 0, text.stderr + js.stderr
    account = json.loads(js.stdout)
    assert account["net"]["meta"] == dict(nets["pma"].meta)
    assert len(account["layers"]) == nets["pma"].depth
    lines = text.stdout.splitlines()
    assert lines[2].startswith("layer 1: the paper's fold")
    assert lines[-1].startswith(f"certificate: {SPIRALS.m}/{SPIRALS.m} points certified")
    bad = run("explain", path, ROOT / "examples" / "xor.csv")  # labels 0/1 are not a, b
    assert bad.returncode == 2
    assert bad.stderr.startswith("lncapacity: error:") and len(bad.stderr.splitlines()) == 1


def test_every_labeling_of_six_points_reads_back_as_the_proofs_say() -> None:
    """All 62 two-class labelings of 0..5, both methods, padded to depth 4.

    runs layers: one label run fewer each, joined from the folded end, no values merged
    (proofs/runs_fold.md); pma layers: one merge each, of values of one label that the
    fold brings closer (seed 000); pad layers: injective, nothing joins or merges
    (proofs/depth_and_padding.md); at the end two runs and the readout's threshold between.
    """
    X = [[k] for k in range(6)]
    for code in range(1, 63):
        y = [(code >> i) & 1 for i in range(6)]
        for method in ("runs", "pma"):
            net = lncapacity.build(X, y, method=method, depth=4)
            account = explain(net, X, y)
            assert account["certificate"]["all_certified"]
            trace = float_trace(net, X)
            for e in account["layers"]:
                before, after = e["before"]["runs"], e["after"]["runs"]
                if e["kind"] == "pad":
                    assert (after, e["joined_runs"], e["merged_values"]) == (before, [], [])
                    assert e["folded"]["end"] == "none"
                elif e["kind"] == "runs":
                    assert after == before - 1 and e["merged_values"] == []
                    (joined,) = e["joined_runs"]
                    ends = {"left": [1, 3], "right": [before - 2, before]}
                    assert joined["runs_before"] == ends[e["folded"]["end"]]
                elif e["kind"] == "pma":
                    # the paper's merge, and maybe exact mirror images about the centre
                    # (values between p_i and p_j, all of the other label: harmless)
                    layer = e["layer"]
                    v0, v1 = trace.values[layer - 1], trace.values[layer]
                    assert e["merged_values"]
                    for group in e["merged_values"]:
                        assert len({y[k] for k in group}) == 1
                    smallest = min(range(6), key=lambda k: v0[k])
                    (group,) = [g for g in e["merged_values"] if smallest in g]
                    a, b = min(group, key=lambda k: v0[k]), max(group, key=lambda k: v0[k])
                    rel = [
                        abs(v[b] - v[a]) / trace.amplitude[c]
                        for c, v in ((layer - 1, v0), (layer, v1))
                    ]
                    assert rel[1] < rel[0]
                    assert after <= before
            assert account["layers"][-1]["after"]["runs"] == 2, (code, method)


ABCA = ([[0], [1], [3], [4]], ["A", "B", "C", "A"])
"""The trap of proofs/multiclass.md: B and C are mirror images about 2, between the A's."""


@pytest.mark.parametrize("classes", [None, ("D", "A", "B", "C")])
def test_multiclass_warps_and_envelopes_read_back(classes) -> None:
    X, y = ABCA
    for method in ("pma", "runs"):
        net = lncapacity.build(X, y, method=method, classes=classes)
        account = explain(net, X, y)
        kinds = [e["kind"] for e in account["layers"]]
        r = account["readout"]
        assert r["kind"] == "envelope"
        # the thresholds the envelope changes class at are the construction's, exactly
        present = [c for c in r["class_order"] if c != "D"]
        assert r["thresholds"][-2:] == net.readout.meta["thresholds"]
        assert present == ["A", "C", "B"]  # A B C A: the A's join, then C lies nearer B's end
        slope = {ln["class"]: parse_rational(ln["slope"]) for ln in r["lines"]}
        assert [slope[c] for c in present] == [1, 2, 3]  # slopes 1..k along the line
        assert slope.get("D", 0) == 0  # a class with no point: the zero row
        assert "upper envelope of" in r["words"] and "1 (A), 2 (C), 3 (B)" in r["words"]
        if method == "pma":
            assert kinds == ["warp", "pma"]
            warp = account["layers"][0]
            assert warp["meta"]["why"].startswith("a value of label 1 and one of label 2")
            # the construction numbers the classes present; explain names them
            assert warp["why"].startswith("a value of label B and one of label C")
            assert "label B and one of label C" in warp["words"]
            assert warp["folded"]["end"] == "none" and warp["after"]["runs"] == 4
        else:
            assert kinds == ["runs"]
            assert account["layers"][0]["joined_runs"] == [{"label": "A", "runs_before": [1, 4]}]
            assert "a later run of its label" in account["layers"][0]["words"]
        assert account["certificate"]["all_certified"]
        json.dumps(account)


def test_cli_certify_explain(tmp_path) -> None:
    data = tmp_path / "abca.csv"
    data.write_text("x,label\n0,A\n1,B\n3,C\n4,A\n")
    opts = ("--method", "pma", "--float", "float64", "--quiet")
    text = run("certify", data, *opts, "--explain")
    js = run("certify", data, *opts, "--explain", "--json")
    plain = run("certify", data, *opts, "--json")
    assert text.returncode == js.returncode == plain.returncode == 0, text.stderr + js.stderr
    lines = text.stdout.splitlines()
    assert lines[2].startswith("certified: 4/4 points")  # the certify summary first
    assert any(ln.startswith("layer 1: an injective warp") and "label B" in ln for ln in lines)
    assert any(ln.startswith("readout: an upper envelope of 3 lines") for ln in lines)
    summary, without = json.loads(js.stdout), json.loads(plain.stdout)
    account = summary.pop("explain")
    summary["seconds"] = without["seconds"] = None
    assert summary == without  # --explain only adds its key
    assert [e["kind"] for e in account["layers"]] == ["warp", "pma"]
    assert account["readout"]["thresholds"] == ["107/32", "1911/512"]  # mid-gap (issue 31)
    assert account["certificate"]["certified"] == 4
    # the explain command on the saved net prints the same account
    net = tmp_path / "net.json"
    assert run("certify", data, *opts, "--out", net).returncode == 0
    again = run("explain", net, data, "--quiet")
    assert again.returncode == 0
    assert again.stdout.splitlines()[1:] == lines[-len(again.stdout.splitlines()) + 1 :]


def test_rescale_layers_are_named(monkeypatch, tmp_path) -> None:
    """A ``runs`` net with a rescale layer (what the construction inserts when its float search
    runs out of resolution; forced here by failing the search once) reads back in words."""
    from lncapacity.construct import runfold

    real, calls = runfold._first_certified, []

    def fail_once(chain, candidates, rs, labels, y):
        calls.append(y is None)
        if len(calls) == 3:  # layer 3's float search: as if no candidate certified
            return None
        return real(chain, candidates, rs, labels, y)

    monkeypatch.setattr(runfold, "_first_certified", fail_once)
    rng = np.random.default_rng(7)
    X = rng.integers(-64, 64, size=(24, 3))
    y = [0, 1] + [int(v) for v in rng.integers(0, 2, 22)]
    net = lncapacity.build(X, y)
    kinds = [layer.meta["kind"] for layer in net.layers]
    assert kinds.count("rescale") == 1 and net.meta["method"] == "runs"
    i = kinds.index("rescale")
    account = explain(net, X, y)
    entry = account["layers"][i]
    assert entry["kind"] == "rescale"
    assert entry["words"].startswith(f"layer {i + 1}: a rescale: an injective fold")
    assert "float64" in entry["words"]
    assert entry["before"]["runs"] == entry["after"]["runs"]  # injective: no run joins
    assert entry["folded"]["end"] == "none" and entry["merged_values"] == []
    json.loads(json.dumps(account))
    path, data = tmp_path / "net.json", tmp_path / "d.csv"
    fileformat.save(net, path)
    rows = [",".join(map(str, x)) + f",{label}" for x, label in zip(X, y, strict=True)]
    data.write_text("x1,x2,x3,label\n" + "\n".join(rows) + "\n")
    text, js = run("explain", path, data, "--quiet"), run("explain", path, data, "--json")
    assert text.returncode == 0 and js.returncode == 0, text.stderr + js.stderr
    assert f"layer {i + 1}: a rescale: an injective fold" in text.stdout
    assert "a layer of kind 'rescale'" not in text.stdout
    assert json.loads(js.stdout)["layers"][i]["words"] == entry["words"]


def test_weights_beyond_the_float_range_are_explained_as_the_same_net(tmp_path, capsys) -> None:
    """The first layer's weights and biases, and the projection, times ``3 10^380`` (exact
    rationals, beyond the float range): LayerNorm is scale-invariant (eps 0), so the net and
    its account are the same; the input's label gap is a ratio of balls, not ``inf / inf``
    (which crashed the text with ``NoneType.__format__``)."""
    from lncapacity.cli import main

    data = tmp_path / "line.csv"
    data.write_text("x,label\n1,0\n2,1\n3,0\n4,1\n")
    points = lncapacity.load_points(data)
    net = lncapacity.build(points, method="runs")
    big = fmpq(3 * 10**380)
    first = net.layers[0]
    scaled_first = replace(
        first,
        W=tuple(tuple(w * big for w in row) for row in first.W),
        b=tuple(v * big for v in first.b),
    )
    meta = dict(
        net.meta, projection=[str(parse_rational(str(p)) * big) for p in net.meta["projection"]]
    )
    scaled = replace(net, layers=(scaled_first, *net.layers[1:]), meta=meta)
    plain, wide = explain(net, points), explain(scaled, points)
    assert wide["input"]["label_gap"] == pytest.approx(plain["input"]["label_gap"])
    assert [e["after"]["runs"] for e in wide["layers"]] == [
        e["after"]["runs"] for e in plain["layers"]
    ]
    assert wide["layers"][0]["folded"]["end"] == plain["layers"][0]["folded"]["end"]
    lncapacity.save(scaled, tmp_path / "wide.json")
    assert main(["explain", str(tmp_path / "wide.json"), str(data), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert f"smallest label gap {plain['input']['label_gap']:.3g}" in out
