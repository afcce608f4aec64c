"""Certified shattering: every labeling of L + 2 points at depth exactly L, and its verifier."""

from __future__ import annotations

import gzip
import json
import math
import os
import subprocess
import sys
from collections import Counter
from dataclasses import fields, replace
from pathlib import Path

import pytest
from flint import fmpq
from forgery import unfold

import lncapacity
from lncapacity import InputError
from lncapacity.algebraic import Radical
from lncapacity.arith import json_float
from lncapacity.fileformat import from_dict, from_gadget, to_dict
from lncapacity.model import Affine, LNNet, Norm
from lncapacity.shatter import (
    ShatterSummary,
    _margins,
    _swapped,
    labels_of,
    shatter,
    verify_shatter,
)

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("depth", range(7))
def test_every_labeling_certified_at_exact_depth(depth, tmp_path):
    out = tmp_path / "s.jsonl"
    summary = shatter(None, depth, out=out, workers=1)
    m = depth + 2
    assert summary.labelings == 2**m == summary.certified
    assert summary.all_certified and summary.min_margin > 0
    assert sum(summary.folds.values()) == 2**m
    assert max(summary.folds) == depth  # the bound m - 2 = L is attained
    lines = out.read_text().splitlines()
    assert len(lines) == 2 ** (m - 1) + 2  # header, one line per complementary pair, summary
    checked, problems = verify_shatter(out, workers=1)
    assert problems == [] and checked.certified == 2**m


def test_eps_and_user_points_and_gzip(tmp_path):
    pts = [[0, 0], [1, 3], [fmpq(5, 2), 1], [4, 4], [-1, 2]]
    out = tmp_path / "s.jsonl.gz"
    summary = shatter(pts, 3, eps="1e-5", out=out, workers=2)
    assert summary.all_certified and summary.labelings == 32
    header = json.loads(gzip.open(out, "rt").readline())
    assert header["eps"] == "1/100000" and header["points"][2] == ["5/2", "1"]
    assert verify_shatter(out, workers=2)[1] == []


def tamper(path, edit):
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    edit(lines)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


@pytest.fixture
def certificate(tmp_path):
    out = tmp_path / "s.jsonl"
    shatter(None, 4, out=out, workers=1)
    return out


def test_inflated_margin_is_rejected(certificate):
    def inflate(lines):
        lines[5]["margins"][2] *= 1.5

    k = json.loads(certificate.read_text().splitlines()[5])["labeling"]
    tamper(certificate, inflate)
    summary, problems = verify_shatter(certificate, workers=1)
    assert not summary.all_certified and summary.certified == 63
    assert problems == [f"labeling {k}: a claimed margin exceeds the certified bound"]


def test_changed_weight_is_rejected(certificate):
    changed = []

    def change(lines):
        rec = next(r for r in lines[1:-1] if r["folds"] == 4)
        rec["net"]["layers"][1]["centre"] = "1000"
        changed.extend([rec["labeling"], rec["complement"]["labeling"]])

    tamper(certificate, change)
    summary, problems = verify_shatter(certificate, workers=1)
    assert summary.certified == 62
    assert problems == [
        f"labeling {changed[0]}: not certified",
        f"labeling {changed[1]}: not certified",
    ]


def test_missing_duplicated_and_truncated(certificate):
    tamper(certificate, lambda lines: lines.__setitem__(3, lines[2]))
    _, problems = verify_shatter(certificate, workers=1)
    assert problems[0] == "line 4: labeling 2 repeated or out of order"
    assert "2 labelings missing" in problems
    tamper(certificate, lambda lines: lines.pop())
    assert "no summary line (the file is truncated)" in verify_shatter(certificate, workers=1)[1]


def test_bad_parameters(tmp_path):
    with pytest.raises(InputError, match="takes 5 points, got 2"):
        shatter([[0], [1]], 3)
    with pytest.raises(InputError, match="distinct"):
        shatter([[0], [1], [1]], 1)
    with pytest.raises(InputError, match="eps must be >= 0"):
        shatter(None, 1, eps=-1)
    bad = tmp_path / "x.jsonl"
    bad.write_text('{"format": "other"}\n')
    with pytest.raises(InputError, match="not an lnnet-shatter/1 certificate"):
        verify_shatter(bad)
    assert not list(tmp_path.glob(".*"))


def test_labels_of():
    assert labels_of(0b1011, 5) == [1, 1, 0, 1, 0]


def test_folds_histogram_in_numeric_order():
    summary = ShatterSummary(12, 11, 4096)
    summary.folds = Counter({11: 2, 2: 6, "search": 2, 10: 8, 0: 2, 1: 4})
    hist = summary.to_dict()["folds_histogram"]
    assert list(hist) == ["0", "1", "2", "10", "11", "search"]  # not text order 0, 1, 10, 11, 2
    assert json.dumps(hist) == '{"0": 2, "1": 4, "2": 6, "10": 8, "11": 2, "search": 2}'


def _summary_histogram(path):
    return json.loads(path.read_text().splitlines()[-1])["summary"]["folds_histogram"]


def test_histogram_order_does_not_matter_to_the_verifier(certificate):
    """Older files have the histogram in text order: compared as a dict, they still verify."""
    before = _summary_histogram(certificate)
    assert list(before) == sorted(before, key=int)

    def reverse(lines):
        hist = lines[-1]["summary"]["folds_histogram"]
        lines[-1]["summary"]["folds_histogram"] = dict(reversed(hist.items()))

    tamper(certificate, reverse)
    assert list(_summary_histogram(certificate)) == list(reversed(before))
    assert verify_shatter(certificate, workers=1)[1] == []

    def miscount(lines):
        hist = lines[-1]["summary"]["folds_histogram"]
        hist[next(iter(hist))] += 2

    tamper(certificate, miscount)
    problems = verify_shatter(certificate, workers=1)[1]
    assert problems == ["the summary's folds_histogram disagrees with the records"]


@pytest.mark.slow
def test_written_histogram_in_numeric_order_beyond_nine_folds(tmp_path):
    out = tmp_path / "s.jsonl"
    shatter(None, 10, out=out, workers=2)
    hist = _summary_histogram(out)
    assert list(hist) == [str(k) for k in range(11)]  # 10 last, not after 1

    def text_order(lines):  # as files written before the fix have it
        hist = lines[-1]["summary"]["folds_histogram"]
        lines[-1]["summary"]["folds_histogram"] = dict(sorted(hist.items()))

    tamper(out, text_order)
    assert list(_summary_histogram(out))[:3] == ["0", "1", "10"]
    assert verify_shatter(out, workers=2)[1] == []


# ---------------------------------------------------------------------------
# records whose LayerNorms have gains and biases (issue 28): the complement is certified on the
# record's whole net, readout rows swapped, never on the net with its gains and biases dropped


def q(*xs):
    return tuple(fmpq(x) if isinstance(x, int) else fmpq(*x) for x in xs)


NORMS = [  # a gain and a bias, a gain alone, a bias alone (negative gains included)
    Norm(q(2, (-1, 3), (5, 2)), q((1, 2), -1, (3, 7))),
    Norm(q((1, 5), 3, (-7, 4))),
    Norm(None, q(-2, (1, 9), 4)),
]
X4 = [(fmpq(i),) for i in range(4)]  # the default points at depth 2


def gadget_net(rec):
    return from_gadget(rec["net"], input_dim=1, eps=fmpq(0), classes=(0, 1))


def lnnet_record(k, net, margins, complement_margins):
    return {
        "labeling": k,
        "folds": "search",
        "lnnet": to_dict(net),
        "margins": margins,
        "complement": {"labeling": k ^ 15, "margins": complement_margins},
    }


def honest_record(k, net):
    """A record of ``net`` for labeling ``k`` of :data:`X4`, margins certified by the library."""
    return lnnet_record(
        k,
        net,
        [json_float(x) for x in _margins(net, X4, labels_of(k, 4))],
        [json_float(x) for x in _margins(_swapped(net), X4, labels_of(k ^ 15, 4))],
    )


def rewrite(path, records):
    """Put ``records`` in place of the file's records of their labelings; restate the summary."""
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    new = {r["labeling"]: r for r in records}
    body = [new.get(r["labeling"], r) for r in lines[1:-1]]
    s = lines[-1]["summary"]
    s["folds_histogram"] = dict(Counter(str(r["folds"]) for r in body for _ in "kc"))
    s["min_margin"] = min(c for r in body for c in (*r["margins"], *r["complement"]["margins"]))
    path.write_text("".join(json.dumps(x) + "\n" for x in [lines[0], *body, lines[-1]]))


@pytest.fixture
def depth2(tmp_path):
    out = tmp_path / "s.jsonl"
    shatter(None, 2, out=out, workers=1)
    return out


def verify_cli(path):
    env = {k: v for k, v in os.environ.items() if k != "LNCAPACITY_DEBUG"}
    return subprocess.run(
        [sys.executable, "-m", "lncapacity", "verify-shatter", str(path), "--workers", "1"],
        env=env | {"PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_complement_margin_of_a_net_with_gains_is_checked_on_that_net(depth2):
    """A record whose last LayerNorm has gain 1/2 and a bias, claiming for the complement the
    margins of the net without them (exactly twice the true ones), is refused."""
    lines = [json.loads(x) for x in depth2.read_text().splitlines()]
    rec = next(r for r in lines[1:-1] if r["folds"] >= 1)
    k, net = rec["labeling"], gadget_net(rec)
    (r0, r1), (b0, b1) = net.readout.W, net.readout.b
    assert r1 == tuple(-w for w in r0) and b1 == -b0  # a threshold readout
    # R beta = -b/2: dropping the gain and bias doubles every score, hence every margin
    beta = tuple(-b0 / 2 * w / sum((v * v for v in r0), fmpq(0)) for w in r0)
    half = Norm(q((1, 2), (1, 2), (1, 2)), beta)
    gained = unfold(net, [Norm(), half])
    assert gained.folded() == net and gained.norms[1] == half
    comp = labels_of(k ^ 15, 4)
    true = _margins(_swapped(net), X4, comp)  # gained computes what net (no gains) computes
    dropped = _margins(_swapped(replace(gained, norms=())), X4, comp)
    assert all(x >= 1.9 * t and x > t > 0 for x, t in zip(dropped, true, strict=True))
    rewrite(depth2, [lnnet_record(k, gained, rec["margins"], dropped)])
    assert json.loads(depth2.read_text().splitlines()[1 + k // 2])["lnnet"]["requires"] == [
        "ln-affine"
    ]
    summary, problems = verify_shatter(depth2, workers=1)
    assert problems == [f"labeling {k ^ 15}: a claimed margin exceeds the certified bound"]
    assert summary.certified == 15 and summary.failures == [k ^ 15]
    p = verify_cli(depth2)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    # the true margins are accepted
    rewrite(depth2, [lnnet_record(k, gained, rec["margins"], [json_float(t) for t in true])])
    assert verify_shatter(depth2, workers=1)[1] == []


def test_records_with_gains_and_biases_verify(depth2):
    """Every net of a certificate given gains and biases (undone in the next map): the same
    function, so the same certified margins, for both labelings."""
    lines = [json.loads(x) for x in depth2.read_text().splitlines()]
    records = []
    for i, rec in enumerate(lines[1:-1]):
        gained = unfold(gadget_net(rec), [NORMS[i % 3], NORMS[(i + 1) % 3]])
        assert gained.norms and gained.folded() == gadget_net(rec)
        records.append(
            lnnet_record(rec["labeling"], gained, rec["margins"], rec["complement"]["margins"])
        )
        assert honest_record(rec["labeling"], gained) == records[-1]
    rewrite(depth2, records)
    summary, problems = verify_shatter(depth2, workers=1)
    assert problems == [] and summary.all_certified and summary.folds == Counter()
    assert verify_cli(depth2).returncode == 0


def test_a_record_with_algebraic_weights_and_gains_verifies(depth2):
    k = 0b1010  # alternating labels: pma --exact merges with an algebraic offset
    net = lncapacity.build(X4, labels_of(k, 4), method="pma", exact=True, depth=2, classes=(0, 1))
    gained = unfold(net, NORMS[:2])
    record = honest_record(k, gained)
    assert record["lnnet"]["requires"] == ["ln-affine", "algebraic"]
    assert from_dict(record["lnnet"]).norms == tuple(NORMS[:2])
    rewrite(depth2, [record])
    summary, problems = verify_shatter(depth2, workers=1)
    assert problems == [] and summary.all_certified
    # and a complement margin claimed above the true one is refused
    record["complement"]["margins"][0] *= 1.5
    rewrite(depth2, [record])
    assert verify_shatter(depth2, workers=1)[1] == [
        f"labeling {k ^ 15}: a claimed margin exceeds the certified bound"
    ]


def test_the_swapped_net_differs_only_in_its_readout_rows():
    layers = (
        Affine((q(1, -2), q(3, (1, 2)), q(0, 1)), q(1, 0, -1)),
        Affine(tuple(q(i, 1, -i) for i in range(4)), q(0, 1, 2, 3), {"note": "w4"}),
    )
    readout = Affine((q(1, 2, 3, 4), q(-1, 0, 2, 5)), q((1, 3), -2), {"kind": "threshold"})
    norms = (Norm(q(2, (-1, 3), (5, 2)), q((1, 2), -1, (3, 7))), Norm(None, q(1, 2, 3, 4)))
    net = LNNet(2, None, fmpq(1, 10), layers, readout, ("a", "b"), {"built": "by hand"}, norms)
    assert net.widths == (3, 4)
    exact = lncapacity.build(X4, [0, 1, 0, 1], method="pma", exact=True, depth=2, classes=(0, 1))
    assert any(isinstance(w, Radical) for a in exact.layers for w in a.b)
    for model in (net, exact, unfold(exact, NORMS[:2])):
        swapped = _swapped(model)
        assert swapped.readout.W == tuple(reversed(model.readout.W))
        assert swapped.readout.b == tuple(reversed(model.readout.b))
        assert swapped.readout.meta == model.readout.meta
        for f in fields(LNNet):  # every other part, present and future, is the model's own
            if f.name != "readout":
                assert getattr(swapped, f.name) is getattr(model, f.name), f.name
        assert _swapped(swapped) == model
    x = (0.25, -1.5)
    z = net.map(float).forward(x, math.sqrt)
    assert _swapped(net).map(float).forward(x, math.sqrt) == z[::-1]
