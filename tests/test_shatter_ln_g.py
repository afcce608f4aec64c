"""``shatter --arch ln-g --groups g``: LN-G shattering certificates, and forged ones refused."""

from __future__ import annotations

import json

import pytest

from lncapacity.cli import main
from lncapacity.errors import InputError
from lncapacity.shatter import shatter, verify_shatter


@pytest.fixture(scope="module")
def cert_lines(tmp_path_factory) -> list[dict]:
    path = tmp_path_factory.mktemp("lng") / "s.jsonl"
    assert shatter(None, 1, out=path, workers=1, groups=2).all_certified
    return [json.loads(line) for line in path.read_text().splitlines()]


def _write(tmp_path, lines: list[dict]) -> str:
    path = tmp_path / "forged.jsonl"
    path.write_text("".join(json.dumps(x, separators=(",", ":")) + "\n" for x in lines))
    return str(path)


def test_the_command_line_writes_and_verifies(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["shatter", "--depth", "1", "--arch", "ln-g", "--groups", "2", "--quiet"]) == 0
    assert "5 points at depth 1, 32/32" in capsys.readouterr().out
    assert main(["verify-shatter", "shatter-ln-g2-L1.jsonl", "--quiet", "--workers", "1"]) == 0
    bad_runs = [
        ["--depth", "1", "--groups", "2"],  # groups are for ln-g
        ["--depth", "1", "--arch", "ln-g"],  # ln-g needs groups
        ["--depth", "0", "--arch", "ln-g", "--groups", "2"],  # depth >= 1
        ["--depth", "1", "--arch", "ln-g", "--groups", "12"],  # 25 points
        ["--depth", "1", "--arch", "ln-g", "--groups", "2", "--search"],
    ]
    for bad in bad_runs:
        assert main(["shatter", *bad, "--quiet", "--out", "x.jsonl"]) == 2
        assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shatter-ln-g2-L1.jsonl"]


def _forged(cert_lines, how: str) -> list[dict]:
    lines = json.loads(json.dumps(cert_lines))
    if how == "no-groups":  # an LN-G net claimed as a width-3 one
        del lines[0]["groups"]
    elif how == "fewer-groups":
        lines[0]["groups"] = 1
    elif how == "more-groups":
        lines[0]["groups"] = 3
    elif how == "layer-ungrouped":  # the net's layer normalised as one LayerNorm of 6
        rec = lines[3]["lnnet"]
        rec["layers"][0]["groups"] = 1
    elif how == "bump-moved":  # a bump off its point: that labeling is no longer right
        rec = next(r for r in lines[1:-1] if r["lnnet"]["meta"]["bumps"] == 2)
        b = rec["lnnet"]["layers"][0]["b"]
        b[0], b[1] = b[3], b[4]
    elif how == "margin-raised":
        lines[2]["margins"][0] = 100.0
    elif how == "readout-tied":  # both rows 0 and both biases 2: every margin exactly 0
        readout = lines[1]["lnnet"]["readout"]
        readout["W"][1], readout["b"][1] = readout["W"][0], readout["b"][0]
    return lines


@pytest.mark.parametrize(
    "how",
    [
        "no-groups",
        "fewer-groups",
        "more-groups",
        "layer-ungrouped",
        "bump-moved",
        "margin-raised",
        "readout-tied",
    ],
)
def test_forged_ln_g_certificates_are_refused(cert_lines, tmp_path, how):
    path = _write(tmp_path, _forged(cert_lines, how))
    try:
        summary, problems = verify_shatter(path, workers=1)
    except Exception as e:  # a header refused outright is a refusal too
        assert type(e).__name__ == "InputError"
        return
    assert problems and not (summary.all_certified and not problems)


@pytest.mark.parametrize(
    "args",
    [
        ["--arch", "ln-g", "--groups", "2", "--depth", "4"],  # 5 points, fewer than depth + 2
        ["--arch", "ln-g", "--groups", "1", "--depth", "3"],
        ["--arch", "ln-g", "--groups", "3", "--depth", "2", "--points", "{three}"],
        ["--arch", "ln-g", "--groups", "2", "--depth", "2", "--points", "{three}"],
        ["--depth", "2"],
        ["--depth", "1", "--points", "{three}"],
    ],
)
def test_what_shatter_reports_verify_shatter_accepts(args, tmp_path, capsys):
    """A command never reports what its own verifier refuses: every run of ``shatter`` that
    says "shattered" (exit 0) wrote a file ``verify-shatter`` accepts (the points' rule of an
    LN-G certificate is not the width-3 one, ``points >= depth + 2``: 2g + 1 points are
    shattered at every depth)."""
    three = tmp_path / "three.csv"
    three.write_text("x,label\n0,0\n1,0\n3,0\n")
    out = str(tmp_path / "s.jsonl")
    argv = ["shatter", *(a.format(three=three) for a in args), "--out", out, "--workers", "1"]
    code = main([*argv, "--quiet"])
    text = capsys.readouterr()
    assert code in (0, 2) and len(text.err.strip().splitlines()) <= 1
    if code == 0:
        assert text.out.startswith("shattered:")
        assert main(["verify-shatter", out, "--quiet", "--workers", "1"]) == 0, capsys.readouterr()
    assert code == 0 or "ln-g" not in args  # every LN-G claim above is true


def test_ln_g_shatters_2g_plus_1_points_at_any_depth(tmp_path):
    """Depth 23 (25 > 24 points by the width-3 rule) with 2 groups: 5 points, certified and
    verified."""
    out = tmp_path / "s.jsonl"
    summary = shatter(None, 23, out=out, workers=1, groups=2)
    assert summary.all_certified and summary.points == 5 and summary.depth == 23
    checked, problems = verify_shatter(out, workers=1)
    assert problems == [] and checked.certified == 32


def test_a_record_too_long_for_the_verifier_is_refused_before_any_work(tmp_path):
    out = tmp_path / "s.jsonl"
    with pytest.raises(InputError, match="beyond the 16 MiB a line"):
        shatter(None, 10_000, out=out, workers=1, groups=11)
    with pytest.raises(InputError, match="depth 10001, beyond the limit"):
        shatter(None, 10_001, out=out, workers=1, groups=1)
    assert not out.exists()


def test_a_zero_margin_certificate_is_refused_without_climbing(cert_lines, tmp_path, monkeypatch):
    """A record whose readout rows are equal (a zero-margin bomb: every margin exactly 0) is
    refused at the starting precision: the tie is exact, so no ball evaluation climbs toward
    65,536 bits (which cost minutes and gigabytes for wide LN-G certificates)."""
    from lncapacity.certify import balls

    seen: list[int] = []
    evaluator = balls._evaluator

    def recorded(net):
        scores = evaluator(net)
        return lambda x, prec: seen.append(prec) or scores(x, prec)

    monkeypatch.setattr(balls, "_evaluator", recorded)
    path = _write(tmp_path, _forged(cert_lines, "readout-tied"))
    summary, problems = verify_shatter(path, workers=1)
    assert problems and not summary.all_certified
    assert max(seen, default=balls.START_PRECISION) == balls.START_PRECISION
