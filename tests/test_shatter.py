"""Certified shattering: every labeling of L + 2 points at depth exactly L, and its verifier."""

from __future__ import annotations

import gzip
import json
from collections import Counter

import pytest
from flint import fmpq

from lncapacity import InputError
from lncapacity.shatter import ShatterSummary, labels_of, shatter, verify_shatter


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
