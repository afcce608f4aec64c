"""The ``lncapacity`` command line, through real subprocesses.

Every invocation is a fresh ``python -m lncapacity`` (one case goes through the
``lncapacity`` console script).  Start-up dominates the cost of each run, so
the runs are independent and launched together by two module-scoped fixtures
(``runs``, then ``verify_runs`` on the net written by the first); each test
then checks the result of its own run.

Contract: exit 0 on success; 2 for bad input or a failing certificate
(argparse usage errors are 2 as well); 1 for an internal error.  Bad input
gives one line on stderr starting ``lncapacity: error:``, no traceback, and
leaves nothing in the output folder (no net, no certificate, no temporary file).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from flint import fmpq

import lncapacity
from lncapacity import fileformat, floats
from lncapacity.model import Affine, LNNet

ROOT = Path(__file__).resolve().parents[1]
XOR = ROOT / "examples" / "xor.csv"
XOR_TEXT = XOR.read_text(encoding="utf-8")
PYTHON_M = [sys.executable, "-m", "lncapacity"]
# the console script installed next to this interpreter, else the first on PATH
SCRIPT = shutil.which(
    "lncapacity",
    path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
)
ENV = {k: v for k, v in os.environ.items() if k != "LNCAPACITY_DEBUG"}
WORKERS = max(2, os.cpu_count() or 1)
TIMEOUT = 120

XOR_POINTS = [[0, 0], [0, 1], [1, 0], [1, 1]]
XOR_LABELS = [0, 1, 1, 0]
# what certify and verify run: the NumPy backends, and PyTorch's when it imports here
BACKENDS = floats.available_backends()
TORCH_BACKENDS = ["torch-float64", "torch-float32"]
# most runs skip PyTorch's import (a second or two each); "xor" and "xor-json" run every backend
NUMPY_ONLY = ("--float", "float64,float32")


def run(*args: object, cmd: list[str] = PYTHON_M) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*cmd, *map(str, args)], capture_output=True, text=True, env=ENV, timeout=TIMEOUT
    )


def run_all(jobs: dict[str, Callable[[], subprocess.CompletedProcess[str]]]) -> dict:
    """Run the jobs concurrently; their results by name."""
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        futures = {name: pool.submit(job) for name, job in jobs.items()}
        return {name: f.result() for name, f in futures.items()}


def xor_net_dict() -> dict:
    """The lnnet/1 object of a net for xor, built in this process."""
    return fileformat.to_dict(lncapacity.build(XOR_POINTS, XOR_LABELS))


def one_error_line(p: subprocess.CompletedProcess[str]) -> str:
    """Check the bad-input contract on stderr and return its one line."""
    assert "Traceback" not in p.stderr, p.stderr
    lines = p.stderr.splitlines()
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith("lncapacity: error: "), p.stderr
    return lines[0]


def listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


# ---------------------------------------------------------------------------
# the runs


@dataclass
class Case:
    """One invocation in its own folder: inputs in ``in/``, outputs aimed at ``out/``."""

    args: Callable[[Path, Path], list[object]]
    files: dict[str, str] = field(default_factory=dict)
    cmd: list[str] = field(default_factory=lambda: list(PYTHON_M))


def certify_bad(name: str, *extra: str) -> Callable[[Path, Path], list[object]]:
    """``certify in/NAME --out out/net.json --certificate out/cert.json EXTRA``."""
    return lambda i, o: [
        *("certify", i / name, "--out", o / "net.json", "--certificate", o / "cert.json"),
        *extra,
    ]


def verify_bad(net: str = "net.json") -> Callable[[Path, Path], list[object]]:
    """``verify in/NET examples/xor.csv --certificate out/cert.json``."""
    return lambda i, o: ["verify", i / net, XOR, "--certificate", o / "cert.json"]


def _net_text(change: Callable[[dict], object]) -> str:
    d = xor_net_dict()
    change(d)
    return json.dumps(d)


def _set(path: list, value: object) -> Callable[[dict], None]:
    def change(d: dict) -> None:
        for key in path[:-1]:
            d = d[key]
        d[path[-1]] = value

    return change


# name -> (case, fragments the one-line message must contain)
BAD: dict[str, tuple[Case, list[str]]] = {
    "conflicting-labels": (
        Case(certify_bad("data.csv"), {"data.csv": "x1,x2,label\n0,0,a\n1,1,b\n0,0,b\n"}),
        ["lines 2 and 4", "the same point with different labels 'a' and 'b'"],
    ),
    "nan": (
        Case(certify_bad("data.csv"), {"data.csv": "x,y,label\n0,nan,a\n1,1,b\n"}),
        ["non-finite value 'nan' at line 2, column y"],
    ),
    "inf": (
        Case(certify_bad("data.csv"), {"data.csv": "x,y,label\n0,0,a\n-inf,1,b\n"}),
        ["non-finite value '-inf' at line 3, column x"],
    ),
    "ragged-row": (
        Case(certify_bad("data.csv"), {"data.csv": "x,y,label\n0,0,a\n1,1\n2,2,b\n"}),
        ["line 3 has 2 fields, expected 3"],
    ),
    "non-numeric": (
        Case(certify_bad("data.csv"), {"data.csv": "x,y,label\n0,0,a\n1,one,b\n"}),
        ["non-numeric value 'one' at line 3, column y"],
    ),
    "empty-file": (Case(certify_bad("data.csv"), {"data.csv": ""}), ["is empty"]),
    "header-only": (
        Case(certify_bad("data.csv"), {"data.csv": "x,y,label\n"}),
        ["has no data rows"],
    ),
    "no-label-column": (
        Case(certify_bad("data.csv"), {"data.csv": "x,y,z\n0,0,1\n1,1,0\n"}),
        ["no 'label' column in the header (line 1)"],
    ),
    "missing-data-file": (Case(certify_bad("nowhere.csv")), ["nowhere.csv: no such file"]),
    "unsupported-suffix": (
        Case(certify_bad("data.txt"), {"data.txt": "x,y,label\n0,0,a\n1,1,b\n"}),
        ["unsupported file type '.txt'"],
    ),
    "three-classes-too-shallow": (
        Case(
            certify_bad("data.csv", "--depth", "0"), {"data.csv": "x,label\n0,a\n1,b\n2,a\n3,c\n"}
        ),
        ["needs 1 LayerNorm layer", "more than 0"],
    ),
    "depth-too-small": (
        Case(certify_bad("data.csv", "--depth", "0"), {"data.csv": XOR_TEXT}),
        ["needs 1 LayerNorm layer", "more than 0"],
    ),
    "negative-eps": (
        Case(certify_bad("data.csv", "--eps=-1"), {"data.csv": XOR_TEXT}),
        ["eps must be >= 0"],
    ),
    "non-numeric-eps": (
        Case(certify_bad("data.csv", "--eps", "abc"), {"data.csv": XOR_TEXT}),
        ["eps must be a finite number", "'abc'"],
    ),
    "net-not-json": (
        Case(verify_bad(), {"net.json": '{"format": "lnnet/1", '}),
        ["net.json: not JSON"],
    ),
    "net-wrong-format": (
        Case(verify_bad(), {"net.json": _net_text(_set(["format"], "lnnet/2"))}),
        ["format: expected 'lnnet/1', got 'lnnet/2'"],
    ),
    "net-decimal-weight": (
        Case(verify_bad(), {"net.json": _net_text(_set(["readout", "W", 0, 0], "1.5"))}),
        ["readout.W[0][0]", "'1.5'"],
    ),
    "net-missing-file": (Case(verify_bad("absent.json")), ["absent.json: cannot read"]),
    "unknown-float-backend": (
        Case(certify_bad("data.csv", "--float", "float64,float16"), {"data.csv": XOR_TEXT}),
        ["--float: unknown backend 'float16'", "float32, torch-float64, torch-float32"],
    ),
    "verify-unknown-float-backend": (
        Case(lambda i, o: [*verify_bad()(i, o), "--float", "numpy"], {"net.json": "{}"}),
        ["--float: unknown backend 'numpy'"],  # before the net is even read
    ),
}

SINGLE_CLASS = "x,y,label\n0,0,a\n1,1,a\n2,0,a\n1,1,a\n"
# certify without PyTorch, as with no torch installed: all backends, then a torch one asked for
NO_TORCH = """
import sys
sys.modules["torch"] = None  # any import of it raises ImportError
from lncapacity.cli import main
codes = [main(["certify", sys.argv[1], "--json", "--quiet"])]
codes.append(main(["certify", sys.argv[1], "--quiet", "--float", "float64,torch-float32"]))
print("exit codes", *codes)
"""
# the float passes run beside the certificate (a process of their own), then here: one summary
BESIDE = """
import sys
from lncapacity import floats
from lncapacity.cli import main
for floats.FLOAT_PARALLEL in (1, 1 << 60):  # every pass large, then none
    main(["certify", sys.argv[1], "--json", "--quiet"])
    print("torch imported here:", "torch" in sys.modules)
"""

GOOD: dict[str, Case] = {
    "xor": Case(
        lambda i, o: ["certify", XOR, "--out", o / "net.json", "--certificate", o / "cert.json"]
    ),
    "xor-json": Case(lambda i, o: ["certify", XOR, "--json", "--quiet"]),
    "depth-5": Case(
        lambda i, o: ["certify", XOR, "--depth", "5", "--out", o / "net.json", *NUMPY_ONLY]
    ),
    "eps": Case(
        lambda i, o: ["certify", XOR, "--eps", "1e-5", "--out", o / "net.json", *NUMPY_ONLY]
    ),
    "single-class": Case(
        lambda i, o: ["certify", i / "one.csv", "--json", "--out", o / "net.json", *NUMPY_ONLY],
        {"one.csv": SINGLE_CLASS},
    ),
    "usage-error": Case(lambda i, o: ["certify", XOR, "--depth", "two", "--out", o / "n.json"]),
    "typo-option": Case(lambda i, o: ["certify", XOR, "--outt", o / "n.json"]),
    "typo-command": Case(lambda i, o: ["certfy", XOR, "--out", o / "n.json"]),
    "typo-choice": Case(lambda i, o: ["certify", XOR, "--method", "rns", "--out", o / "n.json"]),
    # formerly bugs, each with its own test below
    "out-is-a-folder": Case(lambda i, o: ["certify", XOR, "--out", o]),
    "out-folder-missing": Case(
        lambda i, o: ["certify", XOR, "--out", o / "no" / "n.json", "--certificate", o / "c.json"]
    ),
    "cli-imports": Case(
        lambda i, o: [],
        cmd=[sys.executable, "-c", "import sys, lncapacity.cli; print('sklearn' in sys.modules)"],
    ),
    "no-torch": Case(lambda i, o: [XOR], cmd=[sys.executable, "-c", NO_TORCH]),
    "beside": Case(lambda i, o: [XOR], cmd=[sys.executable, "-c", BESIDE]),
}
if SCRIPT:
    GOOD["console-script"] = Case(
        lambda i, o: ["certify", XOR, "--quiet", *NUMPY_ONLY], cmd=[SCRIPT]
    )


@dataclass
class Result:
    proc: subprocess.CompletedProcess[str]
    inputs: Path
    out: Path


def _launch(cases: dict[str, Case], root: Path) -> dict[str, Result]:
    jobs, dirs = {}, {}
    for name, case in cases.items():
        i, o = root / name / "in", root / name / "out"
        i.mkdir(parents=True)
        o.mkdir()
        for fname, text in case.files.items():
            (i / fname).write_text(text, encoding="utf-8")
        dirs[name] = (i, o)
        jobs[name] = lambda case=case, i=i, o=o: run(*case.args(i, o), cmd=case.cmd)
    procs = run_all(jobs)
    return {name: Result(procs[name], *dirs[name]) for name in cases}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Result]:
    cases = {**GOOD, **{name: case for name, (case, _) in BAD.items()}}
    return _launch(cases, tmp_path_factory.mktemp("cli"))


@pytest.fixture(scope="module")
def xor_net(runs) -> Path:
    r = runs["xor"]
    assert r.proc.returncode == 0, r.proc.stderr
    return r.out / "net.json"


@pytest.fixture(scope="module")
def verify_runs(xor_net, tmp_path_factory) -> dict[str, Result]:
    """``verify`` on the net the CLI wrote, as is and tampered with."""
    tampered = json.loads(xor_net.read_text())
    # class 0 scores so high that every point is called 0: the two 1s (lines 3, 4) fail
    assert tampered["classes"] == [0, 1] and tampered["readout"]["b"][0] != "1000000"
    tampered["readout"]["b"][0] = "1000000"
    net_text = xor_net.read_text()

    def verify_xor(i: Path, o: Path) -> list[object]:
        return ["verify", i / "net.json", XOR, "--certificate", o / "c.json", *NUMPY_ONLY]

    def verify_line(i: Path, o: Path) -> list[object]:
        return ["verify", i / "net.json", i / "line.csv"]

    line = "x,label\n1,0\n-1,1\n"
    cases = {
        "tiny-margin": Case(
            lambda i, o: [*verify_line(i, o), *NUMPY_ONLY],
            {"net.json": net_json(TINY_MARGIN), "line.csv": line},
        ),
        "overflow": Case(
            lambda i, o: [*verify_line(i, o), "--json", *NUMPY_ONLY],
            {"net.json": net_json(OVERFLOW), "line.csv": line},
        ),
        "ok": Case(verify_xor, {"net.json": net_text}),
        "tampered": Case(verify_xor, {"net.json": json.dumps(tampered, indent=1)}),
        "features": Case(
            lambda i, o: ["verify", i / "net.json", i / "d3.csv"],
            {"net.json": net_text, "d3.csv": "a,b,c,label\n0,0,0,0\n1,1,1,1\n"},
        ),
    }
    return _launch(cases, tmp_path_factory.mktemp("verify"))


def _affine(W: list[list[int | fmpq]], b: list[int | fmpq]) -> Affine[fmpq]:
    return Affine(tuple(tuple(map(fmpq, row)) for row in W), tuple(map(fmpq, b)))


# depth 0, z = (x, 1 - 2^-30): at x = 1 (label 0) the margin is 2^-30, about 1e-9 of the
# scores; float32 rounds 1 - 2^-30 to 1, a tie, so misclassifies that point
TINY_MARGIN = LNNet(1, 3, fmpq(0), (), _affine([[1], [0]], [0, 1 - fmpq(1, 2**30)]), (0, 1))
# depth 1, y = (2^70 x, -2^70 x, 0): y * y overflows float32 (LayerNorm gives 0, so do the
# scores), while the exact net classifies x = 1 as 0 and x = -1 as 1 by a margin 2 sqrt(6)
OVERFLOW = LNNet(
    1,
    3,
    fmpq(0),
    (_affine([[2**70], [-(2**70)], [0]], [0, 0, 0]),),
    _affine([[1, -1, 0], [-1, 1, 0]], [0, 0]),
    (0, 1),
)


def net_json(net: LNNet) -> str:
    return fileformat.dumps(fileformat.to_dict(net))


def float_lines(stdout: str) -> dict[str, str]:
    """The float backends' lines of a text summary, by backend (in order)."""
    names = tuple(f"{b}: " for b in floats.BACKENDS)
    return {line.split(":")[0]: line for line in stdout.splitlines() if line.startswith(names)}


# ---------------------------------------------------------------------------
# certify: the happy path


def test_certify_xor_text_summary_and_files(runs):
    r = runs["xor"]
    assert r.proc.returncode == 0, r.proc.stderr
    assert r.proc.stderr == ""
    lines = r.proc.stdout.splitlines()
    assert lines[0] == f"{XOR}: 4 points in R^2, classes 0, 1"
    assert any(line.startswith("certified: 4/4 points") for line in lines), r.proc.stdout
    assert any(line.startswith("float64: 4/4 right") for line in lines), r.proc.stdout
    # every backend available here, in order, each agreeing on every point without a warning
    found = float_lines(r.proc.stdout)
    assert list(found) == list(BACKENDS), r.proc.stdout
    for b, line in found.items():
        head, _, margin = line.partition(", min margin ")
        assert head == f"{b}: 4/4 right" and float(margin) > 0, line
    assert "WARNING" not in r.proc.stdout
    assert lines[-2:] == [f"wrote {r.out / 'net.json'}", f"wrote {r.out / 'cert.json'}"]
    assert listing(r.out) == ["cert.json", "net.json"]  # and no temporary file


def test_certify_xor_net_loads_and_certifies(xor_net):
    net = lncapacity.load(xor_net)
    assert (net.input_dim, net.width, net.classes, net.eps) == (2, 3, (0, 1), 0)
    assert net.depth in (1, 2)  # xor is not linearly separable; at most m - 2 layers
    cert = lncapacity.certify(net, lncapacity.load_points(XOR))
    assert (cert.certified, cert.all_certified) == (4, True)
    assert list(net.predict(XOR_POINTS)) == XOR_LABELS


def test_certify_xor_certificate(runs, xor_net):
    cert = json.loads((runs["xor"].out / "cert.json").read_text())
    assert cert["format"] == "lnnet-certificate/1"
    assert (cert["all_certified"], cert["certified"], cert["points"]) == (True, 4, 4)
    results = cert["results"]
    assert [r["point"] for r in results] == [0, 1, 2, 3]
    assert [r["label"] for r in results] == XOR_LABELS
    assert [r["lines"] for r in results] == [[2], [3], [4], [5]]
    assert all(r["certified"] is True for r in results)
    assert all(r["margin_lower"] > 0 for r in results), results
    assert cert["min_margin"] == min(r["margin_lower"] for r in results)
    assert cert["data"] == str(XOR)
    net = json.loads(xor_net.read_text())
    digest = hashlib.sha256(json.dumps(net, sort_keys=True).encode()).hexdigest()
    assert cert["net_sha256"] == digest


def test_certify_xor_json_summary(runs):
    r = runs["xor-json"]
    assert r.proc.returncode == 0, r.proc.stderr
    s = json.loads(r.proc.stdout)
    expected = {
        "points": 4, "depth_bound": 2, "certified": 4, "all_certified": True, "dim": 2,
        "classes": [0, 1], "duplicates_merged": 0, "eps": "0", "method": "runs",
        "net": None, "certificate": None, "data": str(XOR),
    }  # fmt: skip
    assert {k: s[k] for k in expected} == expected
    assert s["depth"] in (1, 2)
    # the same deterministic construction, certified in this process
    points = lncapacity.load_points(XOR)
    margin = lncapacity.certify(lncapacity.build(points, method=s["method"]), points).min_margin
    assert s["min_certified_margin"] == margin > 0
    assert list(s["float"]) == list(BACKENDS)  # "float64", "float32", then the torch ones
    for name, check in s["float"].items():
        assert (check["right"], check["agree"], check["total"]) == (4, 4, 4)
        assert check["min_margin"] > 0
        assert check["min_margin"] == pytest.approx(margin, rel=1e-5)
        assert 0 < check["max_abs_score"] < 10
        assert check["library"] == ("torch" if name in TORCH_BACKENDS else "numpy")
        assert check["dtype"] == name.removeprefix("torch-")
        assert check["warning"] is None
    assert listing(r.out) == []


@pytest.mark.skipif(SCRIPT is None, reason="no 'lncapacity' console script on PATH")
def test_console_script(runs):
    r = runs["console-script"]
    assert r.proc.returncode == 0, r.proc.stderr
    assert "certified: 4/4 points" in r.proc.stdout
    assert r.proc.stderr == ""


def test_depth_pads_to_exactly_five_layers(runs):
    r = runs["depth-5"]
    assert r.proc.returncode == 0, r.proc.stderr
    assert "depth 5 " in r.proc.stdout and "certified: 4/4 points" in r.proc.stdout
    data = json.loads((r.out / "net.json").read_text())
    assert len(data["layers"]) == 5
    net = lncapacity.load(r.out / "net.json")
    assert net.depth == 5
    assert lncapacity.certify(net, XOR_POINTS, XOR_LABELS).certified == 4


def test_eps_is_exact_in_the_file(runs):
    r = runs["eps"]
    assert r.proc.returncode == 0, r.proc.stderr
    assert json.loads((r.out / "net.json").read_text())["eps"] == "1/100000"
    net = lncapacity.load(r.out / "net.json")
    assert net.eps == fmpq(1, 100000)
    assert lncapacity.certify(net, XOR_POINTS, XOR_LABELS).all_certified


def test_single_class_gives_a_depth_zero_net(runs):
    r = runs["single-class"]
    assert r.proc.returncode == 0, r.proc.stderr
    s = json.loads(r.proc.stdout)
    assert (s["points"], s["duplicates_merged"], s["classes"]) == (3, 1, ["a"])
    assert (s["depth"], s["certified"], s["all_certified"]) == (0, 3, True)
    assert s["min_certified_margin"] is None  # infinite: nothing to separate
    net = lncapacity.load(r.out / "net.json")
    assert (net.depth, net.classes) == (0, ("a",))
    assert list(net.predict([[5, -7], [0, 0]])) == ["a", "a"]
    assert lncapacity.certify(net, lncapacity.load_points(r.inputs / "one.csv")).all_certified


def test_usage_error_exits_2(runs):
    r = runs["usage-error"]
    assert r.proc.returncode == 2
    assert "invalid int value: 'two'" in r.proc.stderr
    assert "Traceback" not in r.proc.stderr
    assert listing(r.out) == []


@pytest.mark.parametrize(
    "name, usage, error",
    [
        (
            "typo-option",
            "usage: lncapacity certify ",
            "lncapacity certify: error: unrecognized arguments: --outt ",
        ),
        ("typo-command", "usage: lncapacity [-h]", "invalid choice: 'certfy' (choose from "),
        ("typo-choice", "usage: lncapacity certify ", "argument --method: invalid choice: 'rns'"),
    ],
)
def test_a_typo_is_answered_with_the_nearest_name(runs, name, usage, error):
    """The command's own usage, and the nearest option, command or choice (exit 2)."""
    r = runs[name]
    nearest = {"typo-option": "--out", "typo-command": "certify", "typo-choice": "runs"}[name]
    assert r.proc.returncode == 2 and "Traceback" not in r.proc.stderr
    assert r.proc.stderr.startswith(usage), r.proc.stderr
    last = r.proc.stderr.splitlines()[-1]
    assert error in last and last.endswith(f" (did you mean {nearest}?)"), last
    assert listing(r.out) == []


# ---------------------------------------------------------------------------
# bad input


@pytest.mark.parametrize("name", list(BAD))
def test_bad_input(runs, name):
    r = runs[name]
    assert r.proc.returncode == 2, (r.proc.stdout, r.proc.stderr)
    line = one_error_line(r.proc)
    for fragment in BAD[name][1]:
        assert fragment in line, line
    assert r.proc.stdout == ""
    assert listing(r.out) == []  # no net, no certificate, no temporary file


# ---------------------------------------------------------------------------
# verify


def test_verify_the_written_net(verify_runs):
    r = verify_runs["ok"]
    assert r.proc.returncode == 0, r.proc.stderr
    assert "certified: 4/4 points" in r.proc.stdout
    assert listing(r.out) == ["c.json"]
    assert json.loads((r.out / "c.json").read_text())["all_certified"] is True


def test_verify_tampered_net_names_the_failing_points(verify_runs):
    r = verify_runs["tampered"]
    # what the tampering does, decided independently of the command line
    net = lncapacity.load(r.inputs / "net.json")
    failing = [p.index for p in lncapacity.certify(net, XOR_POINTS, XOR_LABELS).failures]
    assert failing == [1, 2]

    assert r.proc.returncode == 2
    line = one_error_line(r.proc)
    assert line.startswith("lncapacity: error: certificate fails at point 1 (line 3), ")
    assert "point 2 (line 4)" in line
    assert "point 0 " not in line and "point 3 " not in line
    assert line.endswith("; nothing written")
    assert "certified: 2/4 points" in r.proc.stdout
    assert listing(r.out) == []  # the certificate is not written


def test_verify_against_data_with_other_features(verify_runs):
    r = verify_runs["features"]
    assert r.proc.returncode == 2
    assert "points have 3 features, the net takes 2" in one_error_line(r.proc)


# ---------------------------------------------------------------------------
# regressions: bugs found while writing these tests, now fixed


def test_single_class_float_margin_is_null(runs):
    s = json.loads(runs["single-class"].proc.stdout)
    assert [c["min_margin"] for c in s["float"].values()] == [None, None]
    assert [c["warning"] for c in s["float"].values()] == [None, None]


def test_failed_certificate_is_not_called_one_class(verify_runs):
    assert "one class" not in verify_runs["tampered"].proc.stdout


def test_out_is_a_folder_is_bad_input(runs):
    r = runs["out-is-a-folder"]
    assert r.proc.returncode == 2
    one_error_line(r.proc)


def test_unwritable_out_leaves_no_certificate(runs):
    r = runs["out-folder-missing"]
    assert r.proc.returncode == 2
    assert "no such folder" in one_error_line(r.proc)  # refused before any work
    assert listing(r.out) == []


def test_command_line_does_not_import_sklearn(runs):
    pytest.importorskip("sklearn")  # without it, nothing to show
    r = runs["cli-imports"]
    assert r.proc.returncode == 0, r.proc.stderr
    assert r.proc.stdout.strip() == "False"


# ---------------------------------------------------------------------------
# float backends: all of them, and warnings a user can act on


def test_torch_backends_are_reported_when_torch_is_installed(runs):
    pytest.importorskip("torch")
    assert set(TORCH_BACKENDS) <= set(BACKENDS)
    text = runs["xor"].proc.stdout
    assert "torch-float64: 4/4 right" in text and "torch-float32: 4/4 right" in text
    s = json.loads(runs["xor-json"].proc.stdout)
    assert set(TORCH_BACKENDS) <= set(s["float"])


def test_tiny_margin_and_misclassification_warnings(verify_runs):
    r = verify_runs["tiny-margin"]
    assert r.proc.returncode == 0, r.proc.stderr  # the exact certificate holds
    assert r.proc.stderr == ""
    assert "certified: 2/2 points" in r.proc.stdout
    found = float_lines(r.proc.stdout)
    assert list(found) == ["float64", "float32"]  # the wording is the same for torch's
    for name, line in found.items():
        if name == "float64":  # right, by 2^-30 = 9.3e-10 of the largest score 1
            assert line == (
                f"{name}: 2/2 right, min margin 9.313e-10  WARNING: {name} margin near float "
                "resolution (9.3e-10 of the largest |score|; rounding may flip points)"
            )
        else:
            assert line == (  # a tie at x = 1: a float margin of 0, no "> 0" as for certificates
                f"{name}: 1/2 right, min margin 0  WARNING: {name} misclassifies 1 of 2 points "
                "(the exact certificate still holds; the net is too deep/too fine for this "
                "precision)"
            )


def test_overflow_is_reported_as_misclassification_without_runtime_warnings(verify_runs):
    r = verify_runs["overflow"]
    assert r.proc.returncode == 0, r.proc.stderr
    assert r.proc.stderr == ""  # no RuntimeWarning from NumPy (PyTorch's: tests/test_floats.py)
    s = json.loads(r.proc.stdout)
    assert s["all_certified"] is True
    assert list(s["float"]) == ["float64", "float32"]
    for name, c in s["float"].items():
        if c["dtype"] == "float64":
            assert (c["agree"], c["total"], c["warning"]) == (2, 2, None)
        else:
            assert (c["agree"], c["total"], c["min_margin"], c["max_abs_score"]) == (0, 2, 0, 0)
            assert c["warning"] == (
                f"{name} misclassifies 2 of 2 points (the exact certificate still holds; "
                "the net is too deep/too fine for this precision)"
            )


def test_float_option_chooses_the_backends(runs):
    for name in ("depth-5", "eps"):
        r = runs[name]
        assert r.proc.returncode == 0, r.proc.stderr
        assert list(float_lines(r.proc.stdout)) == ["float64", "float32"]


def test_without_torch_only_numpy_backends_run(runs):
    r = runs["no-torch"]
    lines = r.proc.stdout.splitlines()
    assert lines[-1] == "exit codes 0 2", r.proc.stderr
    s = json.loads("\n".join(lines[:-1]))
    assert s["all_certified"] is True
    assert list(s["float"]) == ["float64", "float32"]
    assert [c["agree"] for c in s["float"].values()] == [4, 4]
    line = one_error_line(r.proc)
    assert "--float torch-float32 needs PyTorch: pip install 'lncapacity[torch]'" in line


def test_float_passes_beside_the_certificate_report_what_they_report_here(runs):
    r = runs["beside"]
    assert r.proc.returncode == 0, r.proc.stderr
    beside, here = r.proc.stdout.split("torch imported here: ")[:2]
    assert here.startswith("False")  # PyTorch's passes (where installed) ran beside
    beside, here = json.loads(beside), json.loads(here.split("\n", 1)[1])
    assert beside["all_certified"] and beside["float"]
    assert {**beside, "seconds": None} == {**here, "seconds": None}


def test_failing_certificate_makes_no_claim_about_it(verify_runs):
    r = verify_runs["tampered"]
    for name, line in float_lines(r.proc.stdout).items():
        assert f"WARNING: {name} misclassifies 2 of 4 points" in line
        assert "certificate still holds" not in line


def test_certify_says_when_runs_gave_way_to_pma(tmp_path, capsys):
    """Labels 10^-26 apart: float64 cannot see them, the net comes from pma, and says so."""
    from lncapacity.cli import main

    data = tmp_path / "tiny.csv"
    data.write_text("x,label\n0,0\n1,1\n1.00000000000000000000000001,0\n3,1\n")
    assert main(["certify", str(data), "--quiet", "--float", "float64"]) == 0
    out = capsys.readouterr().out
    assert "method pma (runs gave way: layer 1: no fold" in out, out
    assert "certified: 4/4 points" in out and "WARNING: float64 misclassifies" in out


def test_labels_reach_the_terminal_with_their_control_characters_escaped(tmp_path, capsys):
    """A label carrying terminal escape sequences (set the title, clear the screen) is
    printed escaped by certify, verify, explain and in error lines (arith.printable)."""
    from lncapacity.cli import main

    title, clear = "a\x1b]0;PWNED\x07", "b\x1b[2J\u202e"
    data = tmp_path / "labels.csv"
    data.write_text(f'x,label\n0,"{title}"\n1,"{clear}"\n2,"{title}"\n', encoding="utf-8")
    net = tmp_path / "net.json"
    runs = [
        ["certify", str(data), "--out", str(net), "--float", "float64", "--quiet"],
        ["verify", str(net), str(data), "--float", "float64", "--quiet"],
        ["explain", str(net), str(data), "--quiet"],
    ]
    for argv in runs:
        assert main(argv) == 0, argv
        out = capsys.readouterr().out
        assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out, argv
        assert r"a\x1b]0;PWNED\x07" in out and r"b\x1b[2J\u202e" in out, argv
    data.write_text(
        f'x,label\n0,"{title}"\n0,"{clear}"\n', encoding="utf-8"
    )  # one point, two labels
    assert main(["certify", str(data), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and len(err.strip().splitlines()) == 1
