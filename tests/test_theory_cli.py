"""``lncapacity trace`` and ``lncapacity hessian`` through real subprocesses (run concurrently)."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from flint import fmpq

import lncapacity
from lncapacity import fileformat

ROOT = Path(__file__).resolve().parents[1]
XOR = ROOT / "examples" / "xor.csv"
SPIRALS = ROOT / "examples" / "spirals.csv"


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    folder = tmp_path_factory.mktemp("theory-cli")
    xor_net = folder / "xor.json"
    xor_net.write_text(
        fileformat.dumps(
            fileformat.to_dict(lncapacity.build(lncapacity.load_points(XOR), method="pma"))
        )
    )
    spiral_net = folder / "spirals.json"
    spiral_net.write_text(
        fileformat.dumps(fileformat.to_dict(lncapacity.build(lncapacity.load_points(SPIRALS))))
    )
    three = folder / "three.csv"
    three.write_text("x,y,label\n0,0,a\n0,1,b\n1,0,c\n1,1,a\n2,1,b\n")
    jobs = {
        "trace-xor": ["trace", xor_net, XOR],
        "trace-xor-json": ["trace", xor_net, XOR, "--json"],
        "trace-spirals-json": ["trace", spiral_net, SPIRALS, "--json"],
        "trace-three-labels": ["trace", xor_net, three, "--json"],
        "trace-wrong-dim": ["trace", spiral_net, ROOT / "examples" / "missing.csv"],
        "trace-bad-net": ["trace", three, XOR],
        "hessian": ["hessian", "--d", "64", "--groups", "16", "--samples", "2"],
        "hessian-json": ["hessian", "--d", "12", "--groups", "3", "--samples", "2", "--json"],
        "hessian-eps": ["hessian", "--d", "12", "--groups", "4", "--eps", "1e-5", "--json"],
        "hessian-bad-groups": ["hessian", "--d", "10", "--groups", "3"],
        "hessian-bad-eps": ["hessian", "--eps", "-1"],
    }

    def run(args):
        return subprocess.run(
            [sys.executable, "-m", "lncapacity", *map(str, args)],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=ROOT,
        )

    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {name: pool.submit(run, args) for name, args in jobs.items()}
        return {name: f.result() for name, f in futures.items()}


def _error_line(p) -> str:
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("lncapacity: error: "), p.stderr
    return lines[0]


def _lower(value) -> fmpq:
    """The certified lower end of an exact string or a [lo, hi] pair."""
    if isinstance(value, list):
        return fmpq(*map(int, _frac(value[0])))
    return fmpq(*map(int, _frac(value)))


def _frac(text: str) -> tuple[int, int]:
    from fractions import Fraction

    f = Fraction(text)
    return f.numerator, f.denominator


def test_trace_text(results):
    p = results["trace-xor"]
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].startswith(f"{XOR}: 4 points, 2 classes; net depth 1")
    assert lines[2].split()[:4] == ["input", "2", "1", "1"]
    assert lines[3].startswith("LN 1") and "[" in lines[3]
    assert "LSSR certified lower than before at 1 of 1 LN layers" in lines[-1]


def test_trace_json_contract(results):
    for name in ("trace-xor-json", "trace-spirals-json"):
        p = results[name]
        assert p.returncode == 0, p.stderr
        s = json.loads(p.stdout)
        layers = s["layers"]
        assert layers[0]["layer"] == "input" and layers[0]["exact"] is True
        assert isinstance(layers[0]["lssr"], str) and isinstance(layers[0]["ssr"], str)
        assert [x["layer"] for x in layers[1:-1]] == [f"LN {i}" for i in range(1, s["depth"] + 1)]
        assert layers[-1]["layer"] == "readout"
        for x in layers[1:]:
            for key in ("ssr", "lssr"):
                lo, hi = x[key]  # certified bounds: decimal strings, never a bare float
                assert isinstance(lo, str) and _lower(lo) <= _lower(hi) <= 1
        assert s["lssr_drops"], "some LN layer lowers LSSR, certified"
        last_hidden = layers[-2]["lssr"][1]
        assert _lower(last_hidden) < _lower(layers[0]["lssr"])


def test_trace_any_number_of_labels(results):
    p = results["trace-three-labels"]
    assert p.returncode == 0, p.stderr
    s = json.loads(p.stdout)
    assert s["classes"] == ["a", "b", "c"] and len(s["layers"]) == 3


def test_trace_bad_input(results):
    assert "missing.csv" in _error_line(results["trace-wrong-dim"])
    _error_line(results["trace-bad-net"])


def test_hessian_text(results):
    p = results["hessian"]
    assert p.returncode == 0, p.stderr
    assert "d = 64, 16 groups of 4, eps 0, centred" in p.stdout
    assert "g (d - 2g)/(d - 2) = 256/31" in p.stdout
    rows = [
        line
        for line in p.stdout.splitlines()
        if line.split()[:1] in (["gaussian"], ["sparse"], ["adversarial"])
    ]
    assert len(rows) == 6 and all(r.endswith("yes") for r in rows)


def test_hessian_json(results):
    s = json.loads(results["hessian-json"].stdout)
    assert s["bound"] == "9/5" and s["bound_applies"] is True and s["group_size"] == 4
    assert len(s["samples"]) == 6
    for x in s["samples"]:
        assert x["ratio_ge_bound"] is True
        lo, hi = x["ratio"]
        assert fmpq(9, 5) <= _lower(hi) and _lower(lo) <= _lower(hi)


def test_hessian_with_eps_reports_counterexamples_with_their_inputs(results):
    s = json.loads(results["hessian-eps"].stdout)
    assert s["eps"] == "1/100000" and s["bound_applies"] is False
    bad = [x for x in s["samples"] if x["ratio_ge_bound"] is False]
    assert bad and all(x["kind"] == "adversarial" for x in bad)
    from lncapacity.theory.hessian import hessian_ratio

    for x in bad:  # the reported input reproduces the ratio exactly
        ratio = hessian_ratio(x["x"], 4, fmpq(1, 100000))
        assert ratio < fmpq(8, 5) and _lower(x["ratio"][0]) <= ratio <= _lower(x["ratio"][1])
    assert all(x["x"] is None for x in s["samples"] if x["ratio_ge_bound"])


def test_hessian_bad_input(results):
    assert "--groups 3 must divide --d 10" in _error_line(results["hessian-bad-groups"])
    assert "--eps" in _error_line(results["hessian-bad-eps"])
