"""Algebraic weights that ask for much work (issue 28, items 7 and 8), each answered at once.

Roots are refined by interval Newton on balls (not by exact bisection to 65,536 bits), a
program's roots and magnitudes are bounded when it is read, and a margin beyond the float
range is never turned into an integer of its exponent's size.  Every file here is about
1 KB; the runs have short timeouts (the old code took minutes, or ran out of memory).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from flint import arb, fmpq

import lncapacity
from lncapacity.algebraic import (
    MAX_MAGNITUDE,
    MAX_ROOT_DEGREE,
    MAX_ROOT_DEGREES,
    Radical,
    RadicalProgram,
)
from lncapacity.arith import lower_bound_float, precision
from lncapacity.certify import upper_bound_float
from lncapacity.errors import InputError
from lncapacity.fileformat import from_dict
from lncapacity.shatter import shatter

ROOT = Path(__file__).resolve().parents[1]
ENV = {k: v for k, v in os.environ.items() if k != "LNCAPACITY_DEBUG"} | {"PYTHONPATH": str(ROOT)}


def cli(*args: object, cwd: Path, timeout: float = 20) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lncapacity", *map(str, args)],
        capture_output=True,
        text=True,
        env=ENV,
        cwd=cwd,
        timeout=timeout,
    )


def one_line(p: subprocess.CompletedProcess[str]) -> str:
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("lncapacity: error: "), p.stderr
    return lines[0]


def net(radicals: list, row0: object, row1: object) -> dict:
    """A depth-0 net on one feature scoring ``row0 * x`` and ``row1 * x``."""
    return {
        "format": "lnnet/1.1",
        "requires": ["algebraic"],
        "input_dim": 1,
        "width": 1,
        "eps": "0",
        "layers": [],
        "readout": {"W": [[row0], [row1]], "b": ["0", "0"]},
        "classes": [0, 1],
        "radicals": radicals,
    }


def root(k: int, degree: int = 10) -> dict:
    """The root ``k^(1/degree)`` of ``x^degree - k`` in an interval of width 2/1000."""
    r = int(k ** (1 / degree) * 1000)
    return {
        "root": [str(-k)] + ["0"] * (degree - 1) + ["1"],
        "lo": f"{r - 1}/1000",
        "hi": f"{r + 1}/1000",
    }


REF = {"ref": 0}


def write(folder: Path, doc: dict) -> Path:
    path = folder / "net.json"
    path.write_text(json.dumps(doc))
    (folder / "d.csv").write_text("x,label\n1,0\n")
    assert path.stat().st_size < 1100
    return path


def test_a_degree_10_root_at_a_zero_margin_is_undecided_at_once(tmp_path):
    """Both scores read the same root: the margin is exactly 0 and the certificate reaches
    65,536 bits (was: exact bisection of the root to that many bits, over 5 minutes)."""
    write(tmp_path, net([root(2)], REF, REF))
    start = time.perf_counter()
    p = cli("verify", "net.json", "d.csv", "--float", "float64", cwd=tmp_path)
    assert "undecided" in one_line(p) and "65536 bits" in p.stdout
    assert time.perf_counter() - start < 10


def test_six_roots_under_a_square_root_of_zero_are_refused_at_once(tmp_path):
    """``sqrt(r - r)`` is not proven defined up to 16,384 bits (was: 55-90 s of bisection)."""
    radicals = [root(k) for k in range(2, 8)] + [{"sub": [0, 0]}, {"sqrt": 6}]
    write(tmp_path, net(radicals, {"ref": 7}, "0"))
    line = one_line(cli("verify", "net.json", "d.csv", cwd=tmp_path))
    assert "radicals: [7]: square root" in line


@pytest.mark.parametrize("times", [17, 30, 40])
def test_2_squared_many_times_is_refused_at_once(tmp_path, times):
    """2^(2^40) is a ball like any other, but its margin was turned into an integer of 2^40
    bits (40-80 s, gigabytes, then MemoryError): refused when read, by its magnitude."""
    radicals = ["2"] + [{"mul": [i, i]} for i in range(times)]
    write(tmp_path, net(radicals, {"ref": times}, "0"))
    line = one_line(cli("verify", "net.json", "d.csv", cwd=tmp_path))
    assert (
        f"radicals: [16]: a value of about 2^65537, beyond the limit of 2^±{MAX_MAGNITUDE}" in line
    )


@pytest.mark.parametrize(("base", "text"), [("2", ">= 1.797"), ("1/2", "> 0 (below 1e-308)")])
def test_margins_beyond_the_float_range_are_reported_clamped(tmp_path, base, text):
    """Margins of 2^±32768 (within the limit) certify at 128 bits, reported as the largest
    float or 0: lower bounds, without an integer of 32,768 bits."""
    radicals = [base] + [{"mul": [i, i]} for i in range(15)]
    write(tmp_path, net(radicals, {"ref": 15}, "0"))
    p = cli("verify", "net.json", "d.csv", "--float", "float64", "--json", cwd=tmp_path)
    report = json.loads(p.stdout)
    assert report["all_certified"] and report["precision_bits"] == 128
    assert report["min_certified_margin_text"].startswith(text)


def test_ball_bounds_build_no_integer_of_the_exponent():
    x = arb(2)
    for _ in range(36):  # 2^(2^36): the old conversion built an integer of 8 GiB
        x = x * x
    assert lower_bound_float(x) == sys.float_info.max and upper_bound_float(x) == float("inf")
    assert lower_bound_float(1 / x) == 0.0 and lower_bound_float(-1 / x) == -5e-324
    assert lower_bound_float(-x) == -float("inf")
    prog = RadicalProgram.from_json(["2"] + [{"mul": [i, i]} for i in range(15)], check=False)
    assert float(Radical(prog, 15)) == float("inf")


def test_roots_are_refined_by_newton_to_any_precision():
    prog = RadicalProgram.from_json(
        [root(2), root(3, 64), {"root": ["-6", "11", "-6", "1"], "lo": "199/100", "hi": "201/100"}]
    )
    start = time.perf_counter()
    for bits in (64, 1024, 65536):
        balls = prog.balls(bits)
        with precision(bits + 64):
            assert (balls[0] - arb(2).root(10)).contains(0)
            assert (balls[1] - arb(3).root(64)).contains(0)
            assert balls[2].contains(2)
            assert all(b.rel_accuracy_bits() >= bits - 8 for b in balls)
    assert time.perf_counter() - start < 2


def test_root_degrees_are_bounded_when_read():
    with pytest.raises(ValueError, match=f"degree {MAX_ROOT_DEGREE + 1}, beyond the limit"):
        RadicalProgram.from_json([root(2, MAX_ROOT_DEGREE + 1)])
    many = [root(k, MAX_ROOT_DEGREE) for k in range(2, 2 + MAX_ROOT_DEGREES // MAX_ROOT_DEGREE)]
    assert len(RadicalProgram.from_json(many)) == MAX_ROOT_DEGREES // MAX_ROOT_DEGREE
    with pytest.raises(ValueError, match=f"add up to {MAX_ROOT_DEGREES + 2}, beyond"):
        RadicalProgram.from_json([*many, root(2, 2)])
    with pytest.raises(InputError, match="radicals: \\[0\\]: a root of a polynomial of degree"):
        from_dict(net([root(2, 100)], REF, "0"))


def test_nets_built_by_the_package_pass_the_limits():
    X, y = [[i] for i in range(30)], [(i * 7) % 3 % 2 for i in range(30)]
    built = lncapacity.build(X, y, method="pma", exact=True)
    back = from_dict(lncapacity.fileformat.to_dict(built))
    assert lncapacity.certify(back, X, y).all_certified


def test_a_shatter_certificate_of_zero_margin_roots_is_refused_at_once(tmp_path):
    """8 records whose nets score both labels by the same root (margin 0), claiming 0: every
    labeling undecided at 65,536 bits (was: over 100 s)."""
    path = tmp_path / "s.jsonl"
    shatter(None, 2, out=path, workers=1)
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    for rec in lines[1:-1]:
        doc = lncapacity.fileformat.to_dict(
            lncapacity.fileformat.from_gadget(
                rec.pop("net"), input_dim=1, eps=fmpq(0), classes=(0, 1)
            )
        )
        doc.update(format="lnnet/1.1", requires=["algebraic"], radicals=[root(rec["labeling"] + 2)])
        doc["readout"] = {"W": [[REF] * 3, [REF] * 3], "b": ["0", "0"]}
        rec.update(lnnet=doc, folds="search", margins=[0] * 4)
        rec["complement"]["margins"] = [0] * 4
    lines[-1]["summary"]["folds_histogram"] = {"search": 16}
    lines[-1]["summary"]["min_margin"] = 0
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    start = time.perf_counter()
    p = cli("verify-shatter", path, "--workers", "1", cwd=tmp_path, timeout=30)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert "not certified" in p.stderr + p.stdout
    assert time.perf_counter() - start < 15


def test_a_large_program_is_evaluated_at_a_capped_precision(monkeypatch):
    """Issue 28, item 7: the precision a file may ask for is bounded by its program's size
    (``MAX_PROGRAM_BITS / n`` bits for ``n`` entries), so a large program at a zero margin is
    reported undecided at that cap, not evaluated at 65,536 bits in gigabytes of balls."""
    from lncapacity import algebraic
    from lncapacity.certify import certify, decide

    doc = net([root(2), *({"sqrt": 0} for _ in range(40))], REF, REF)
    lnnet = from_dict(doc)
    assert certify(lnnet, [[fmpq(1)]], [0]).points[0].precision == 65536
    monkeypatch.setattr(algebraic, "MAX_PROGRAM_BITS", 41 * 1024)
    assert algebraic.precision_cap(lnnet, 65536) == 1024
    point = certify(lnnet, [[fmpq(1)]], [0]).points[0]
    assert not point.certified and point.precision == 1024
    with pytest.raises(ArithmeticError, match="1024 bits"):
        decide(lnnet, [1])
