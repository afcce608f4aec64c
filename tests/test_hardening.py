"""Hostile and odd inputs through the real command line (issue 13), table-driven.

Each case runs ``python -m lncapacity`` in its own folder (all cases at once, as in
``test_cli.py``).  A bad case must give exit 2, exactly one line ``lncapacity: error: ...``
of reasonable length naming the fault, nothing on stdout for file errors, no file created
and every input left byte for byte as it was.  The good cases are formerly crashing or
quietly wrong runs that must now succeed.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from flint import fmpq

import lncapacity
from lncapacity import fileformat, floats
from lncapacity.model import Affine, LNNet, Norm
from lncapacity.shatter import shatter

ROOT = Path(__file__).resolve().parents[1]
XOR = (ROOT / "examples" / "xor.csv").read_text(encoding="utf-8")
PYTHON_M = [sys.executable, "-m", "lncapacity"]
# the runs work in their own folders: this worktree's package must come first on the path
ENV = {k: v for k, v in os.environ.items() if k != "LNCAPACITY_DEBUG"} | {"PYTHONPATH": str(ROOT)}
NUMPY = ("--float", "float64,float32")
MAX_LINE = 400  # an error line never echoes a whole input


def run(args: list[object], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PYTHON_M, *map(str, args)], capture_output=True, text=True, env=ENV, cwd=cwd, timeout=120
    )


def one_error_line(p: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in p.stderr, p.stderr
    lines = p.stderr.splitlines()
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith("lncapacity: error: "), p.stderr
    assert len(lines[0]) < MAX_LINE, lines[0][:MAX_LINE]
    return lines[0]


def snapshot(folder: Path) -> dict[str, str]:
    """Every entry of a folder: file digests, link targets, kinds (FIFO, ...)."""
    out = {}
    for p in sorted(folder.iterdir()):
        if p.is_symlink():
            out[p.name] = "-> " + os.readlink(p)
        elif p.is_file():
            out[p.name] = hashlib.sha256(p.read_bytes()).hexdigest()
        else:
            out[p.name] = stat.filemode(p.lstat().st_mode)
    return out


# ---------------------------------------------------------------------------
# the inputs


def xor_net() -> dict:
    return fileformat.to_dict(lncapacity.build([[0, 0], [0, 1], [1, 0], [1, 1]], [0, 1, 1, 0]))


def net_with(path: list, value: object) -> str:
    d = xor_net()
    target = d
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return json.dumps(d)


def scaled_readout(factor: int) -> str:
    d = xor_net()
    r = d["readout"]
    r["W"] = [[fileformat.format_rational(fmpq(w) * factor) for w in row] for row in _q(r["W"])]
    r["b"] = [fileformat.format_rational(fmpq(v) * factor) for v in _q([r["b"]])[0]]
    return json.dumps(d)


def _q(rows: list[list[str]]) -> list[list[fmpq]]:
    return [[lncapacity.arith.parse_rational(v) for v in row] for row in rows]


def deep_net(depth: int) -> str:
    d = fileformat.to_dict(lncapacity.build([[0], [1], [2]], [0, 1, 0], depth=2))
    d["layers"] = [d["layers"][0]] + [d["layers"][1]] * (depth - 1)
    return json.dumps(d)


def shatter_lines() -> list[str]:
    """A valid depth-2 shattering certificate (4 points, 8 records), as text lines."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "s.jsonl"
        shatter(None, 2, out=out, workers=1)
        return out.read_text().splitlines()


SHATTER = shatter_lines()
HEADER, RECORDS, SUMMARY = (
    json.loads(SHATTER[0]),
    [json.loads(x) for x in SHATTER[1:-1]],
    json.loads(SHATTER[-1]),
)


def cert(header: object = None, records: list | None = None, summary: object = None) -> str:
    """A certificate with parts replaced (``None``: the valid part)."""
    parts = [HEADER if header is None else header, *(RECORDS if records is None else records)]
    parts.append(SUMMARY if summary is None else summary)
    return "".join((p if isinstance(p, str) else json.dumps(p)) + "\n" for p in parts)


def header(**change: object) -> dict:
    return {**HEADER, **change}


def summary(**change: object) -> dict:
    return {"summary": {**SUMMARY["summary"], **change}}


def record(i: int, edit: Callable[[dict], object]) -> list:
    recs = json.loads(json.dumps(RECORDS))
    edit(recs[i])
    return recs


def width5_record() -> dict:
    """Record 3 with its net re-encoded as an lnnet of width 5 (zero rows added)."""
    rec = json.loads(json.dumps(RECORDS[3]))
    net = fileformat.from_gadget(rec.pop("net"), input_dim=1, eps=fmpq(0), classes=(0, 1))
    zero = fmpq(0)
    layers = []
    for i, a in enumerate(net.layers):
        pad = (zero,) * 2 if i else ()
        W = tuple(tuple(row) + pad for row in a.W) + ((zero,) * (len(a.W[0]) + len(pad)),) * 2
        layers.append(Affine(W, (*a.b, zero, zero)))
    R = tuple((*row, zero, zero) for row in net.readout.W)
    wide = LNNet(1, 5, fmpq(0), tuple(layers), Affine(R, net.readout.b), (0, 1))
    rec["lnnet"] = fileformat.to_dict(wide)
    rec["folds"] = "search"
    return rec


def gz(text: str) -> bytes:
    return gzip.compress(text.encode())


VALID_GZ = gz(cert())


# ---------------------------------------------------------------------------
# the cases


@dataclass
class Case:
    args: list[object]
    files: dict[str, str | bytes] = field(default_factory=dict)
    fragments: list[str] = field(default_factory=list)
    setup: Callable[[Path], None] | None = None


def verify_net(text: str, *fragments: str) -> Case:
    return Case(["verify", "n.json", "d.csv", *NUMPY], {"n.json": text, "d.csv": XOR}, [*fragments])


def verify_cert(text: str | bytes, *fragments: str, name: str = "s.jsonl") -> Case:
    return Case(["verify-shatter", name, "--workers", "1"], {name: text}, [*fragments])


NUMBERS = {
    "space": " 2",
    "plus": "+2",
    "arabic-indic": "\u0662",
    "fullwidth": "\uff12",
    "negative-denominator": "-2/-1",
    "decimal": "1.5",
    "hex": "0x10",
    "zero-denominator": "1/0",
    "exponent": "1e3",
    "trailing-space": "2 ",
}

BAD: dict[str, Case] = {
    **{
        f"net-number-{name}": verify_net(
            net_with(["readout", "W", 0, 0], text), "readout.W[0][0]", repr(text)
        )
        for name, text in NUMBERS.items()
    },
    "net-json-number": verify_net(net_with(["eps"], 0), "eps", "numbers are strings"),
    "net-duplicate-key": verify_net(
        json.dumps(xor_net())[:-1] + ', "eps": "1"}', "duplicate key 'eps'"
    ),
    "net-nan": verify_net(json.dumps(xor_net()).replace('"eps": "0"', '"eps": NaN'), "NaN"),
    "net-nested-200000": verify_net("[" * 200_000 + "]" * 200_000, "nested too deeply"),
    "net-integer-5000-digits": verify_net(
        json.dumps(xor_net()).replace('"input_dim": 2', '"input_dim": 2' + "0" * 5000),
        "not JSON",
        "4300",
    ),
    "net-10mb-number": verify_net(
        net_with(["readout", "b", 0], "1" * 10_000_000), "readout.b[0]", "characters"
    ),
    "net-depth-10001": verify_net(deep_net(10_001), "10001 layers", "limit of 10000"),
    "net-width-1001": verify_net(net_with(["width"], 1001), "width", "limit of 1000"),
    "net-input-dim-100001": verify_net(
        net_with(["input_dim"], 100_001), "input_dim", "limit of 100000"
    ),
    "certify-depth-10001": Case(
        ["certify", "d.csv", "--depth", "10001", "--out", "n.json"],
        {"d.csv": XOR},
        ["--depth 10001", "limit of 10000"],
    ),
    # shattering certificates: the header
    "shatter-points-int": verify_cert(cert(header(points=5)), "points must be a non-empty list"),
    "shatter-points-ragged": verify_cert(
        cert(header(points=[["0"], ["1", "2"], ["2"], ["3"]])), "one number"
    ),
    "shatter-34-points": verify_cert(
        cert(header(points=[[str(i)] for i in range(34)], labelings=2**34), records=[]),
        "34 points",
        "limit of 24",
    ),
    "shatter-input-dim": verify_cert(cert(header(input_dim=2)), "input_dim 2"),
    "shatter-classes": verify_cert(cert(header(classes=[1, 0])), "classes must be [0, 1]"),
    "shatter-classes-three": verify_cert(cert(header(classes=[0, 1, 2])), "classes"),
    "shatter-eps-abc": verify_cert(cert(header(eps="abc")), "'abc'"),
    "shatter-eps-changed": verify_cert(cert(header(eps="1")), "not certified"),
    "shatter-depth-string": verify_cert(cert(header(depth="2")), "depth must be"),
    "shatter-depth-lower": verify_cert(cert(header(depth=1)), "from 0 to 1"),
    "shatter-points-moved": verify_cert(
        cert(header(points=[["0"], ["1"], ["3"], ["2"]])), "not certified"
    ),
    "shatter-labelings": verify_cert(cert(header(labelings=15)), "labelings must be 2^4"),
    "shatter-unknown-header-field": verify_cert(cert(header(width=5)), "unknown fields"),
    "shatter-not-a-certificate": verify_cert('{"format": "other"}\n', "not an lnnet-shatter/1"),
    "shatter-empty": verify_cert("", "empty file"),
    # the summary
    "shatter-summary-min-margin": verify_cert(
        cert(summary=summary(min_margin=1e300)), "min_margin"
    ),
    "shatter-summary-all-false": verify_cert(
        cert(summary=summary(all_certified=False)), "all_certified"
    ),
    "shatter-summary-certified": verify_cert(cert(summary=summary(certified=15)), "certified"),
    "shatter-summary-failures": verify_cert(cert(summary=summary(failures=[3])), "failures"),
    "shatter-summary-missing": verify_cert(cert()[: cert().rindex('{"summary"')], "no summary"),
    "shatter-after-summary": verify_cert(
        cert() + json.dumps(RECORDS[0]) + "\n", "after the summary"
    ),
    # the records
    "shatter-margin-nan": verify_cert(
        cert(records=[SHATTER[1].replace('"margins":[', '"margins":[NaN,', 1), *SHATTER[2:-1]]),
        "NaN",
    ),
    "shatter-margin-infinite": verify_cert(
        cert(records=[*SHATTER[1:3], SHATTER[3].replace('"margins":[', '"margins":[1e400,', 1)]),
        "finite numbers",
    ),
    "shatter-margin-infinity-token": verify_cert(
        cert(records=record(2, lambda r: r["margins"].__setitem__(0, float("inf")))), "Infinity"
    ),
    "shatter-margin-negative": verify_cert(
        cert(records=record(2, lambda r: r["margins"].__setitem__(0, -1.0))), "finite numbers"
    ),
    "shatter-margin-raised": verify_cert(
        cert(records=record(4, lambda r: r["complement"]["margins"].__setitem__(1, 1e9))),
        "exceeds the certified bound",
    ),
    "shatter-margin-bool": verify_cert(
        cert(records=record(4, lambda r: r["margins"].__setitem__(1, True))), "finite numbers"
    ),
    "shatter-line-dropped": verify_cert(cert(records=RECORDS[:3] + RECORDS[4:]), "missing"),
    "shatter-line-duplicated": verify_cert(
        cert(records=[*RECORDS[:4], RECORDS[3], *RECORDS[4:]]), "repeated or out of order"
    ),
    "shatter-lines-reordered": verify_cert(
        cert(records=[RECORDS[1], RECORDS[0], *RECORDS[2:]]), "out of order"
    ),
    "shatter-complement-wrong": verify_cert(
        cert(records=record(1, lambda r: r["complement"].__setitem__("labeling", 12))),
        "its complement is",
    ),
    "shatter-width-5": verify_cert(
        cert(records=[*RECORDS[:3], width5_record(), *RECORDS[4:]]), "width 5"
    ),
    "shatter-gadget-extra-field": verify_cert(
        cert(records=record(3, lambda r: r["net"].__setitem__("width", 5))), "exactly the fields"
    ),
    "shatter-layer-dropped": verify_cert(
        cert(records=record(5, lambda r: r["net"]["layers"].pop())), "depth 1, not 2"
    ),
    "shatter-readout-swapped": verify_cert(
        cert(records=record(5, lambda r: r["net"]["readout"]["W"].reverse())), "not certified"
    ),
    "shatter-deeply-nested-line": verify_cert(
        cert(records=["[" * 200_000 + "]" * 200_000]), "nested too deeply"
    ),
    "shatter-gzip-truncated": verify_cert(
        VALID_GZ[: len(VALID_GZ) // 2], "unreadable", name="s.jsonl.gz"
    ),
    "shatter-gzip-corrupt": verify_cert(
        VALID_GZ[:40] + bytes(b ^ 0x5A for b in VALID_GZ[40:80]) + VALID_GZ[80:],
        "s.jsonl.gz",
        name="s.jsonl.gz",
    ),
    "shatter-not-gzip": verify_cert(cert(), "unreadable", name="s.jsonl.gz"),
    # shatter's parameters
    **{
        f"shatter-eps-{name}": Case(
            ["shatter", "--depth", "1", "--eps", eps, "--out", "o.jsonl"], {}, ["eps", repr(eps)]
        )
        for name, eps in {"nan": "nan", "abc": "abc", "zero-division": "1/0", "empty": ""}.items()
    },
    "shatter-random-82-dim-1": Case(
        ["shatter", "--depth", "1", "--search", "--random", "82", "--dim", "1"], {}, ["limit of 24"]
    ),
    "shatter-depth-30": Case(["shatter", "--depth", "30"], {}, ["limit of 24"]),
    # inputs read quietly wrong before
    "csv-unclosed-quote": Case(
        ["certify", "d.csv", "--out", "n.json"],
        {"d.csv": 'x,label\n0,"a\n1,b\n2,a\n'},
        ["not valid CSV"],
    ),
    "npy-claims-10^12-rows": Case(
        ["certify", "d.npy"],
        {"d.npy": b""},  # replaced in setup
        ["claims shape (1000000000000, 3)"],
        setup=lambda folder: _huge_npy(folder / "d.npy"),
    ),
}


def _huge_npy(path: Path) -> None:
    np.save(path, np.zeros((3, 3)))
    path.write_bytes(path.read_bytes().replace(b"(3, 3)", b"(1000000000000, 3)"))


# Output paths that would lose data.  Each folder holds d.csv (xor), p.csv (3 points on a line),
# n.json (a valid net for xor), a symbolic link and a FIFO.
def _paths_setup(folder: Path) -> None:
    os.mkfifo(folder / "fifo.json")
    os.symlink("d.csv", folder / "link-to-data.csv")


PATH_FILES: dict[str, str | bytes] = {
    "d.csv": XOR,
    "p.csv": "x,label\n0,0\n1,0\n2,0\n",
    "n.json": json.dumps(xor_net()),
}


def path_case(args: list[object], *fragments: str) -> Case:
    return Case(args, dict(PATH_FILES), [*fragments], setup=_paths_setup)


PATHS: dict[str, Case] = {
    "certify-out-is-data": path_case(["certify", "d.csv", "--out", "d.csv"], "is the input d.csv"),
    "certify-out-is-data-spelled-otherwise": path_case(
        ["certify", "d.csv", "--out", "./sub/../d.csv"], "is the input"
    ),
    "certify-certificate-is-data": path_case(
        ["certify", "d.csv", "--certificate", "d.csv"], "--certificate d.csv: is the input"
    ),
    "certify-out-links-to-data": path_case(
        ["certify", "d.csv", "--out", "link-to-data.csv"], "is the input d.csv"
    ),
    "certify-out-is-certificate": path_case(
        ["certify", "d.csv", "--out", "x.json", "--certificate", "x.json"],
        "--out and --certificate name the same file",
    ),
    "certify-out-empty": path_case(["certify", "d.csv", "--out", ""], "--out", "empty"),
    "certify-out-fifo": path_case(["certify", "d.csv", "--out", "fifo.json"], "not a regular file"),
    "verify-certificate-is-net": path_case(
        ["verify", "n.json", "d.csv", "--certificate", "n.json"], "is the input n.json"
    ),
    "verify-certificate-is-data": path_case(
        ["verify", "n.json", "d.csv", "--certificate", "d.csv"], "is the input d.csv"
    ),
    "shatter-out-is-points": path_case(
        ["shatter", "--depth", "1", "--points", "p.csv", "--out", "p.csv"], "is the input p.csv"
    ),
    "shatter-out-empty": path_case(["shatter", "--depth", "1", "--out", ""], "empty"),
}

LABELS_NPZ = "labels.npz"
ONE, ZERO = fmpq(1), fmpq(0)
DEPTH0_NET = json.dumps(
    fileformat.to_dict(LNNet(1, 3, ZERO, (), Affine(((ONE,), (-ONE,)), (ZERO, ZERO)), (0, 1)))
)
GOOD: dict[str, Case] = {
    # a readout scaled by 10^400: still the same classifier; floats overflow (warned), no crash
    "readout-10^400": Case(
        ["verify", "n.json", "d.csv", *NUMPY], {"n.json": scaled_readout(10**400), "d.csv": XOR}
    ),
    # a net built from CSV labels "0"/"1" (ints) verifies on .npz labels '0'/'1' (strings)
    "labels-csv-then-npz": Case(
        ["verify", "n.json", LABELS_NPZ, *NUMPY],
        {"n.json": json.dumps(xor_net())},
        setup=lambda folder: np.savez(
            folder / LABELS_NPZ,
            X=np.array([[0, 0], [0, 1], [1, 0], [1, 1]]),
            y=np.array(["0", "1", "1", "0"]),
        ),
    ),
    # --out naming a symbolic link writes through it: the link stays, its target gets the net
    "out-through-symlink": Case(
        ["certify", "d.csv", "--out", "link.json", *NUMPY],
        {"d.csv": XOR, "target.json": "old"},
        setup=lambda folder: os.symlink("target.json", folder / "link.json"),
    ),
    # coordinates near 1e300 with every backend (PyTorch's too): float32 overflows, warned in
    # the summary line only, never by a RuntimeWarning on stderr
    "float-overflow-quiet": Case(
        ["verify", "n.json", "big.csv"],
        {"n.json": DEPTH0_NET, "big.csv": "x,label\n1e300,0\n-1e300,1\n1e-300,0\n"},
    ),
    # --workers 200 on one chunk of work starts one process, not 200
    "workers-200": Case(["shatter", "--depth", "1", "--workers", "200", "--out", "s.jsonl"]),
}


@dataclass
class Result:
    proc: subprocess.CompletedProcess[str]
    folder: Path
    before: dict[str, str]


def _launch(cases: dict[str, Case], root: Path) -> dict[str, Result]:
    before, folders = {}, {}
    for name, case in cases.items():
        folder = root / name
        folder.mkdir()
        (folder / "sub").mkdir()
        for fname, content in case.files.items():
            if isinstance(content, bytes):
                (folder / fname).write_bytes(content)
            else:
                (folder / fname).write_text(content, encoding="utf-8")
        if case.setup:
            case.setup(folder)
        folders[name], before[name] = folder, snapshot(folder)
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 1)) as pool:
        futures = {n: pool.submit(run, c.args, folders[n]) for n, c in cases.items()}
        return {n: Result(f.result(), folders[n], before[n]) for n, f in futures.items()}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Result]:
    return _launch({**BAD, **PATHS, **GOOD}, tmp_path_factory.mktemp("hardening"))


@pytest.mark.parametrize("name", [*BAD, *PATHS])
def test_bad_input_one_line_exit_2_nothing_written(runs, name):
    r = runs[name]
    assert r.proc.returncode == 2, (r.proc.stdout[-500:], r.proc.stderr[-500:])
    line = one_error_line(r.proc)
    for fragment in {**BAD, **PATHS}[name].fragments:
        assert fragment in line, line
    assert snapshot(r.folder) == r.before  # inputs untouched, no output, no temporary file


@pytest.mark.parametrize("option", ["--out", "--certificate"])
def test_devices_are_refused_before_any_work(option):
    """In process, so that a regression cannot turn /dev/null into a file (run as root, the
    command line once did); the command line refuses a FIFO above through the same check."""
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)
    with pytest.raises(lncapacity.InputError, match="not a regular file"):
        fileformat.check_outputs({option: os.devnull}, ["d.csv"])


def test_workers_must_be_positive(tmp_path):
    p = run(["shatter", "--depth", "1", "--workers", "0"], tmp_path)
    assert p.returncode == 2 and "expected a positive integer, got '0'" in p.stderr
    assert "Traceback" not in p.stderr and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["hessian", "--eps", "1e400"], "--eps: eps must be at most 1e300"),
        (["hessian", "--seed", "-1"], "--seed: expected an integer from 0"),
        (["hessian", "--d", "1e21"], "--d: expected an integer from 3 to 100,000"),
        (["hessian", "--d", "100000000000000000000"], "--d: expected an integer from 3"),
        (["hessian", "--samples", "1000000000000"], "--samples: expected an integer from 1"),
        (["hessian", "--groups", "0"], "--groups: expected a positive integer"),
        (["certify", "d.csv", "--eps", "1e400", "--out", "n.json"], "at most 1e300"),
        (["certify", "d.csv", "--seed", "-1", "--out", "n.json"], "--seed: expected"),
        (["certify", "d.csv", "--method", "circle", "--seed", "-5", "--out", "n.json"], "--seed"),
        (["shatter", "--depth", "1", "--random", "3", "--dim", "10" + "0" * 10], "--dim"),
        (["shatter", "--depth", "1", "--search", "--restarts", "0"], "--restarts"),
        (["shatter", "--depth", "1", "--eps", "1e400"], "at most 1e300"),
    ],
)
def test_options_out_of_range_are_refused_before_any_work(tmp_path, args, fragment):
    """Issue 28, item 5: option values a command cannot use (a seed NumPy refuses, an eps
    beyond the float range, sizes beyond the limits) exit 2 with one message, not 1."""
    (tmp_path / "d.csv").write_text(XOR, encoding="utf-8")
    p = run(args, tmp_path)
    assert p.returncode == 2 and fragment in p.stderr, p.stderr[-500:]
    assert "Traceback" not in p.stderr and sorted(f.name for f in tmp_path.iterdir()) == ["d.csv"]


def test_readout_scaled_by_10_400_certifies(runs):
    r = runs["readout-10^400"]
    assert r.proc.returncode == 0, r.proc.stderr
    assert "certified: 4/4 points" in r.proc.stdout
    assert "Traceback" not in r.proc.stderr and "Warning" not in r.proc.stderr


def test_float_overflow_is_reported_not_warned(runs):
    r = runs["float-overflow-quiet"]
    assert r.proc.returncode == 0, r.proc.stderr
    assert r.proc.stderr == ""
    assert "certified: 3/3 points" in r.proc.stdout
    assert "float64: 3/3 right" in r.proc.stdout
    # float32: 1e300 overflows (two wrong points), 1e-300 underflows to 0 (a tie: wrong)
    assert "float32: 0/3 right" in r.proc.stdout
    if "torch-float32" in floats.available_backends():
        assert "torch-float32: 0/3 right" in r.proc.stdout


def test_csv_and_npz_labels_agree(runs):
    r = runs["labels-csv-then-npz"]
    assert r.proc.returncode == 0, r.proc.stderr
    assert "certified: 4/4 points" in r.proc.stdout
    assert lncapacity.load_points(r.folder / LABELS_NPZ).y == (0, 1, 1, 0)


def test_out_writes_through_a_symbolic_link(runs):
    r = runs["out-through-symlink"]
    assert r.proc.returncode == 0, r.proc.stderr
    link = r.folder / "link.json"
    assert link.is_symlink() and os.readlink(link) == "target.json"
    net = lncapacity.load(r.folder / "target.json")
    points = lncapacity.load_points(r.folder / "d.csv")
    assert lncapacity.certify(net, points).all_certified
    assert sorted(p.name for p in r.folder.iterdir()) == [
        "d.csv",
        "link.json",
        "sub",
        "target.json",
    ]


def test_workers_capped_to_the_work(runs):
    r = runs["workers-200"]
    assert r.proc.returncode == 0, r.proc.stderr
    assert "8/8 labelings certified" in r.proc.stdout
    check = run(["verify-shatter", "s.jsonl", "--workers", "200", "--json"], r.folder)
    assert check.returncode == 0, check.stderr
    report = json.loads(check.stdout)
    assert report["valid"] is True and report["certified"] == report["labelings"] == 8
    assert "folds_histogram" not in report  # construction metadata: not re-derived, not passed on


def test_workers_are_capped_in_process(monkeypatch):
    """shatter asks imap for at most as many processes as there are chunks."""
    from lncapacity.shatter import workers as pool  # where the process pool is chosen

    asked = []

    def fake_imap(fn, tasks, workers):
        asked.append(workers)
        return (fn(task) for task in tasks)

    monkeypatch.setattr(pool, "imap", fake_imap)
    shatter(None, 1, workers=200)  # 4 pairs of labelings, a chunk each
    assert asked == [4]


# ---------------------------------------------------------------------------
# the Python API


def test_predict_refuses_nan():
    net = lncapacity.build([[0, 0], [1, 1]], [0, 1])
    for backend in ("float64", "exact"):
        with pytest.raises(lncapacity.InputError, match=r"NaN|nan"):
            net.predict([[float("nan"), 0]], backend=backend)


def test_build_refuses_a_bool_depth():
    with pytest.raises(lncapacity.InputError, match="depth"):
        lncapacity.build([[0], [1], [2]], [0, 1, 0], depth=True)


def test_shatter_refuses_a_bool_depth():
    with pytest.raises(lncapacity.InputError, match="depth"):
        shatter(None, True)


# ---------------------------------------------------------------------------
# large easy inputs


def _separable_csv(path: Path, rows: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    X = rng.integers(-(10**6), 10**6, size=(rows, 2))
    lines = [f"{x}/1000,{y}/1000,{int(x > 0)}\n" for x, y in X.tolist()]
    path.write_text("x,y,label\n" + "".join(lines))


def test_reading_certifying_and_float_checks_are_linear(tmp_path):
    """The steps outside the construction, on a depth-0 net: CSV parsing, duplicate detection,
    the certificate and the float checks take time linear in the rows (the issue's superlinear
    step is the construction's depth, see the slow test below)."""
    import time

    one = fmpq(1)
    net = LNNet(
        2, 3, fmpq(0), (), Affine(((-one, fmpq(0)), (one, fmpq(0))), (fmpq(0),) * 2), (0, 1)
    )
    seconds = {}
    for rows in (5_000, 40_000):
        _separable_csv(tmp_path / f"{rows}.csv", rows)
        start = time.perf_counter()
        points = lncapacity.load_points(tmp_path / f"{rows}.csv")
        cert = lncapacity.certify(net, points, workers=1)
        check = floats.check(net, points, "float64")
        seconds[rows] = time.perf_counter() - start
        assert cert.all_certified and check.all_agree
    assert seconds[40_000] < 20 * seconds[5_000]  # 8 times the rows: linear, not quadratic


@pytest.mark.slow
def test_200000_separable_points_certify_within_a_minute(tmp_path):
    _separable_csv(tmp_path / "big.csv", 200_000)
    p = subprocess.run(
        [*PYTHON_M, "certify", "big.csv", "--out", "n.json", "--quiet", *NUMPY],
        cwd=tmp_path,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 0, p.stderr
    assert "depth 0" in p.stdout and "certified: 200000/200000 points" in p.stdout


# ---------------------------------------------------------------------------
# issue 28: weights beyond the float range, nets of other widths


def algebraic_readout(doublings: int = 10) -> str:
    """The xor net with its readout scaled by ``2^(2^doublings)``: 2 squared ten times is
    2^1024, beyond the float range, as an algebraic (lnnet/1.1) file."""
    d = xor_net()
    r = d["readout"]
    radicals: list = ["2", *({"mul": [k, k]} for k in range(doublings))]
    scale = len(radicals) - 1

    def scaled(v: str) -> dict:
        radicals.append(v)
        radicals.append({"mul": [len(radicals) - 1, scale]})
        return {"ref": len(radicals) - 1}

    r["W"] = [[scaled(w) for w in row] for row in r["W"]]
    r["b"] = [scaled(v) for v in r["b"]]
    head = {"format": "lnnet/1.1", "requires": ["algebraic"]}
    return json.dumps(head | {k: v for k, v in d.items() if k != "format"} | {"radicals": radicals})


def small_net(widths: tuple[int, ...], *, norms: bool, rank_one: bool = False, seed: int = 1):
    """A trained-like net on 2-D points: layers of the given widths, LayerNorm gains/biases."""
    import random

    rng = random.Random(seed)

    def q() -> fmpq:
        return fmpq(rng.randint(-9, 9), rng.randint(1, 4))

    def affine(rows: int, cols: int) -> Affine:
        if rank_one:
            col, row = [q() for _ in range(rows)], [q() or fmpq(1) for _ in range(cols)]
            return Affine(tuple(tuple(c * r for r in row) for c in col), tuple(q() for _ in col))
        return Affine(tuple(tuple(q() for _ in range(cols)) for _ in range(rows)), (q(),) * rows)

    layers, fan = [], 2
    for w in widths:
        layers.append(affine(w, fan))
        fan = w
    ns = ()
    if norms:
        ns = tuple(
            Norm(tuple(1 + q() / 10 for _ in range(w)), tuple(q() / 10 for _ in range(w)))
            for w in widths
        )
    width = widths[0] if len(set(widths)) == 1 else None
    return LNNet(2, width, fmpq(1, 10**5), tuple(layers), affine(2, fan), (0, 1), {}, ns)


def net_text(net: LNNet) -> str:
    return json.dumps(fileformat.to_dict(net))


MIXED = net_text(small_net((4, 5), norms=True))
WIDTH4 = net_text(small_net((4, 4), norms=True))
BIG = scaled_readout(10**400)
ALGEBRAIC = algebraic_readout()

ISSUE28: dict[str, Case] = {
    **{
        f"verify-{name}-default-backends": Case(["verify", "n.json", "d.csv"], {"n.json": text})
        for name, text in {"10^400": BIG, "2^1024": ALGEBRAIC}.items()
    },
    **{
        f"{cmd}-{name}": Case([cmd, "n.json", "d.csv", *extra], {"n.json": text})
        for name, text in {"10^400": BIG, "2^1024": ALGEBRAIC}.items()
        for cmd, extra in {"plot": ["--out", "figs", "--format", "svg"], "explain": []}.items()
        if (cmd, name) != ("explain", "2^1024")  # explain refuses algebraic nets (one line)
    },
    **{
        f"{cmd}-{name}": Case([cmd, "n.json", "d.csv", *extra], {"n.json": text})
        for name, text in {"mixed-widths": MIXED, "width-4": WIDTH4}.items()
        for cmd, extra in {
            "plot": ["--out", "figs", "--format", "svg"],
            "explain": ["--json"],
            "trace": ["--json"],
        }.items()
    },
}
for case in ISSUE28.values():
    case.files["d.csv"] = XOR


@pytest.fixture(scope="module")
def issue28(tmp_path_factory) -> dict[str, Result]:
    return _launch(ISSUE28, tmp_path_factory.mktemp("issue28"))


@pytest.mark.parametrize("name", ["10^400", "2^1024"])
def test_verify_beyond_the_float_range_reports_overflow(issue28, name):
    p = issue28[f"verify-{name}-default-backends"].proc
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    assert "certified: 4/4 points" in p.stdout
    backends = floats.available_backends()
    assert p.stdout.count("(overflow or NaN)") == len(backends), p.stdout
    for backend in backends:
        assert f"{backend}: 0/4 right, min margin -inf (overflow or NaN)" in p.stdout


def _only_notes(stderr: str) -> bool:
    """Nothing on stderr but ``plot``'s notes of the figures it skips (issue 31): no warning."""
    return all(line.startswith("skipped ") for line in stderr.splitlines())


@pytest.mark.parametrize("name", ["plot-10^400", "plot-2^1024", "explain-10^400"])
def test_plot_and_explain_beyond_the_float_range(issue28, name):
    r = issue28[name]
    assert r.proc.returncode == 0 and _only_notes(r.proc.stderr), r.proc.stderr
    if name.startswith("plot"):
        assert {"ladder.svg", "regions.svg", "merge_tree.svg"} <= {
            p.name for p in (r.folder / "figs").iterdir()
        }
    else:
        assert "certificate: 4/4 points certified" in r.proc.stdout


@pytest.mark.parametrize("what", ["torch", "onnx"])
@pytest.mark.parametrize("name", ["10^400", "2^1024"])
def test_export_beyond_the_float_range_is_one_line(tmp_path, what, name):
    pytest.importorskip("torch" if what == "torch" else "onnx")
    (tmp_path / "n.json").write_text(BIG if name == "10^400" else ALGEBRAIC)
    before = snapshot(tmp_path)
    p = run(["export", "n.json", f"--{what}", f"m.{what}"], tmp_path)
    assert p.returncode == 2, p.stderr
    line = one_error_line(p)
    assert "readout.W[0]" in line and "beyond the float64 range" in line, line
    assert snapshot(tmp_path) == before


def test_export_refuses_weights_beyond_float32_for_float32():
    pytest.importorskip("torch")
    from lncapacity import interop

    d = json.loads(scaled_readout(10**39))
    net = fileformat.from_dict(d)
    interop.to_torch(net, "float64")  # 10^39 fits a float64
    with pytest.raises(lncapacity.InputError, match="beyond the float32 range"):
        interop.to_torch(net, "float32")
    with pytest.raises(lncapacity.InputError, match=r"readout\.W"):
        interop.to_onnx(net, "float32")


def test_to_float_never_raises():
    from lncapacity.algebraic import RadicalProgram
    from lncapacity.arith import to_float

    big = fmpq(10) ** 400
    assert to_float(big) == float("inf") and to_float(-big) == float("-inf")
    assert to_float(1 / big) == 0.0 and to_float(10**400) == float("inf")
    prog = RadicalProgram()
    x = prog.const(2)
    for _ in range(10):
        x = x * x
    assert float(x) == to_float(x) == float("inf")
    assert float(prog.const(fmpq(1, 3))) == 1 / 3


@pytest.mark.parametrize("name", ["mixed-widths", "width-4"])
def test_plot_draws_nets_of_other_widths(issue28, name):
    r = issue28[f"plot-{name}"]
    assert r.proc.returncode == 0 and _only_notes(r.proc.stderr), r.proc.stderr
    drawn = {p.name for p in (r.folder / "figs").iterdir()}
    assert {"ladder.svg", "regions.svg", "merge_tree.svg"} <= drawn, drawn
    assert "principal" in (r.folder / "figs" / "ladder.svg").read_text()


@pytest.mark.parametrize("name", ["mixed-widths", "width-4"])
def test_explain_describes_a_trained_readout(issue28, name):
    r = issue28[f"explain-{name}"]
    assert r.proc.returncode in (0, 2) and "Traceback" not in r.proc.stderr, r.proc.stderr
    account = json.loads(r.proc.stdout)
    words = account["readout"]["words"]
    assert "no LayerNorm layers" not in words and "layer 2's LayerNorm output" in words, words
    assert "with its gain and bias" in words


@pytest.mark.parametrize("name", ["mixed-widths", "width-4"])
def test_trace_on_other_widths_matches_float64(issue28, name):
    """trace runs on mixed widths, applies the LayerNorm gains, and its certified SSR
    bounds hold the float64 SSR of every layer."""
    r = issue28[f"trace-{name}"]
    assert r.proc.returncode == 0 and "Traceback" not in r.proc.stderr, r.proc.stderr
    report = json.loads(r.proc.stdout)
    net = lncapacity.load(r.folder / "n.json")
    assert [row["dim"] for row in report["layers"]] == [2, *net.widths, 2]
    for row, want in zip(report["layers"][1:], _float_ssr(net), strict=True):
        ssr = row["ssr"]  # certified decimal bounds, or an exact rational
        lo, hi = map(float, ssr) if isinstance(ssr, list) else (float(Fraction(ssr)),) * 2
        assert lo - 1e-9 <= want <= hi + 1e-9, (row, want)


def _float_ssr(net: LNNet) -> list[float]:
    """SSR (tr S_w / tr S_t) after every LayerNorm layer and of the scores, in float64."""
    X = np.array([[0, 0], [0, 1], [1, 0], [1, 1]], dtype=float)
    y = np.array([0, 1, 1, 0])
    f = lncapacity.arith.to_float
    out, h = [], X
    for i, a in enumerate(net.layers):
        W = np.array([[f(w) for w in row] for row in a.W])
        h = floats.layer_norm(h @ W.T + np.array([f(v) for v in a.b]), f(net.eps))
        n = net.norm(i)
        h = h * np.array([f(g) for g in n.gain]) + np.array([f(c) for c in n.bias])
        out.append(h)
    R = np.array([[f(w) for w in row] for row in net.readout.W])
    out.append(h @ R.T)

    def ssr(H: np.ndarray) -> float:
        total = ((H - H.mean(axis=0)) ** 2).sum()
        within = sum(((H[y == c] - H[y == c].mean(axis=0)) ** 2).sum() for c in (0, 1))
        return within / total

    return [ssr(H) for H in out]


def test_trace_rank_one_mixed_widths():
    """The scalar chain of trace (rank-one layers) with layers of different widths."""
    from lncapacity.theory.net_trace import trace

    net = small_net((4, 3, 5), norms=False, rank_one=True, seed=3)
    assert net.width is None
    layers = trace(net, [[0, 0], [0, 1], [1, 0], [1, 1]], [0, 1, 1, 0])
    assert [s.dim for s in layers] == [2, 4, 3, 5, 2]


def test_trace_refuses_a_layer_wider_than_its_limit_before_any_work():
    """Issue 28, item 11: the certified LSSR costs the cube of the width (a width-1000 net ran
    for over 11 minutes); ``trace`` refuses layers wider than its documented limit at once."""
    from lncapacity.model import Affine, LNNet
    from lncapacity.theory.net_trace import MAX_WIDTH, trace

    n = MAX_WIDTH + 1
    first = Affine(tuple((fmpq(1), fmpq(i)) for i in range(n)), (fmpq(0),) * n)
    readout = Affine(((fmpq(1),) * n, (fmpq(-1),) * n), (fmpq(0), fmpq(0)))
    net = LNNet(2, n, fmpq(0), (first,), readout, (0, 1))
    with pytest.raises(lncapacity.InputError, match=f"width {n}, beyond the limit of {MAX_WIDTH}"):
        trace(net, [[fmpq(0), fmpq(1)], [fmpq(1), fmpq(0)]], [0, 1])
