"""Interruptions: SIGINT, SIGTERM or SIGHUP in the middle of ``certify``, ``verify`` and
``shatter`` (real subprocesses, real signals) leave no partial or temporary file and no worker
process, print one line, and exit with 128 + the signal's number (130, 143, 129).  A second
run in the same folder then works.

Each run is signalled only once it is demonstrably at work: its workers exist (``verify``,
``shatter``, whose temporary certificate exists too) or it has spent CPU time past its imports
(``certify``, which builds in the main process).  Linux only (``/proc``).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import lncapacity
from lncapacity import fileformat

ROOT = Path(__file__).resolve().parents[1]
ENV = {k: v for k, v in os.environ.items() if k != "LNCAPACITY_DEBUG"} | {"PYTHONPATH": str(ROOT)}
SIGNALS = {"SIGINT": signal.SIGINT, "SIGTERM": signal.SIGTERM, "SIGHUP": signal.SIGHUP}

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")


def _stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()  # fields from the state on


def children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (s := _stat(int(entry.name))) and int(s[1]) == pid:
            out.append(int(entry.name))
    return out


def cpu_seconds(pid: int) -> float:
    s = _stat(pid)
    return 0.0 if s is None else (int(s[11]) + int(s[12])) / os.sysconf("SC_CLK_TCK")


def alive(pid: int) -> bool:
    s = _stat(pid)
    return s is not None and s[0] != "Z"


def _inputs(folder: Path) -> None:
    rng = random.Random(0)
    rows = [(rng.randint(-(10**6), 10**6), rng.randint(-(10**6), 10**6)) for _ in range(20_000)]
    text = "".join(f"{x}/1000,{y}/1000,{int(x > y)}\n" for x, y in rows)
    (folder / "big.csv").write_text("x,y,label\n" + text)
    # a deep net and 96 points: three chunks of certification, so verify starts workers
    d = fileformat.to_dict(lncapacity.build([[0], [1], [2]], [0, 1, 0], depth=2))
    d["layers"] = [d["layers"][0]] + [d["layers"][1]] * 9_999
    # tied scores: the float64 interval pass decides nothing, so every point goes to balls
    d["readout"]["W"][1], d["readout"]["b"][1] = d["readout"]["W"][0], d["readout"]["b"][0]
    (folder / "deep.json").write_text(json.dumps(d))
    (folder / "line.csv").write_text("x,label\n" + "".join(f"{k}/7,{k % 2}\n" for k in range(96)))


def _ready(command: str, folder: Path, pid: int) -> bool:
    if command == "certify":
        return cpu_seconds(pid) > 2.5
    if command == "shatter" and not list(folder.glob(".s.jsonl.*.tmp")):
        return False
    return len(children(pid)) >= 2


ARGS = {
    "certify": ["certify", "big.csv", "--out", "n.json", "--certificate", "c.json"],
    "verify": ["verify", "deep.json", "line.csv", "--certificate", "c.json", "--float", "float64"],
    "shatter": ["shatter", "--depth", "13", "--out", "s.jsonl", "--workers", "2"],
}


def _start_at_work(args: list[str], folder: Path, ready: Callable[[int], bool]) -> subprocess.Popen:
    """``lncapacity ARGS --quiet`` in ``folder``, returned once ``ready(pid)`` (at most 2 min)."""
    p = subprocess.Popen(
        [sys.executable, "-m", "lncapacity", *args, "--quiet"],
        cwd=folder,
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    try:
        while not ready(p.pid):
            assert p.poll() is None, f"{args[0]} ended before the signal: {p.communicate()}"
            assert time.monotonic() < deadline, f"{args[0]} never got to work"
            time.sleep(0.1)
    except BaseException:  # a failed wait leaves no run (nor its workers) behind
        for pid in children(p.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        p.kill()
        p.communicate()
        raise
    return p


def _interrupt(command: str, signame: str, folder: Path) -> dict:
    before = sorted(p.name for p in folder.iterdir())
    p = _start_at_work(ARGS[command], folder, lambda pid: _ready(command, folder, pid))
    workers = children(p.pid)
    p.send_signal(SIGNALS[signame])
    out, err = p.communicate(timeout=60)
    gone = time.monotonic() + 10
    while any(alive(w) for w in workers) and time.monotonic() < gone:
        time.sleep(0.1)
    return {
        "code": p.returncode,
        "stdout": out,
        "stderr": err,
        "files": sorted(p.name for p in folder.iterdir()),
        "before": before,
        "survivors": [w for w in workers if alive(w)],
        "workers": workers,
    }


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory) -> dict:
    cases = {}
    for command in ARGS:
        for signame in SIGNALS:
            folder = tmp_path_factory.mktemp(f"{command}-{signame}")
            _inputs(folder)
            cases[command, signame] = folder
    # a shell that starts a job in the background sets it to ignore SIGINT, and a program
    # keeps that across exec (as it should: nohup-like runs); Python's own handler here
    # makes the children start with the default disposition, as from a terminal
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with ThreadPoolExecutor(max_workers=len(cases)) as pool:
            futures = {key: pool.submit(_interrupt, *key, folder) for key, folder in cases.items()}
            return {key: (f.result(), cases[key]) for key, f in futures.items()}
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.mark.parametrize("signame", SIGNALS)
@pytest.mark.parametrize("command", ARGS)
def test_interrupted_run_leaves_nothing(interrupted, command, signame):
    r, _ = interrupted[command, signame]
    assert r["code"] == 128 + SIGNALS[signame], r["stderr"]
    assert r["stderr"] == f"lncapacity: interrupted ({signame})\n"
    assert r["files"] == r["before"]  # no net, no certificate, no temporary file
    assert r["survivors"] == []
    if command != "certify":
        assert len(r["workers"]) >= 2  # there were workers to stop


def test_a_second_run_works(interrupted):
    _, folder = interrupted["shatter", "SIGTERM"]
    p = subprocess.run(
        [sys.executable, "-m", "lncapacity", "shatter", "--depth", "2", "--out", "s.jsonl"],
        cwd=folder,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    assert "16/16 labelings certified" in p.stdout
    assert [n for n in os.listdir(folder) if n.endswith(".tmp")] == []


def test_trace_of_a_wide_net_stops_within_a_second_of_sigterm(tmp_path):
    """Issue 28, item 11: ``trace`` multiplies matrices of balls; NumPy's object loops run no
    signal handler, so it now multiplies a block of rows at a time
    (:func:`lncapacity.theory.separability.object_dot`) and stops within about a second."""
    import numpy as np
    from flint import fmpq

    from lncapacity.model import Affine, LNNet

    rng = np.random.default_rng(0)

    def affine(rows: int, cols: int) -> Affine:
        W = rng.integers(-16, 16, (rows, cols))
        b = rng.integers(-16, 16, rows)
        return Affine(
            tuple(tuple(fmpq(int(v), 16) for v in row) for row in W),
            tuple(fmpq(int(v), 16) for v in b),
        )

    width = 64  # the widest trace takes
    layers = (affine(width, 2), affine(width, width))
    net = LNNet(2, width, fmpq(0), layers, affine(2, width), (0, 1))
    fileformat.save(net, tmp_path / "wide.json")
    X = rng.integers(-1000, 1000, (3000, 2))
    rows = "".join(f"{x}/7,{y}/7,{(x + y) % 2}\n" for x, y in X)
    (tmp_path / "points.csv").write_text("x,y,label\n" + rows)
    # signalled past its imports and into the balls
    p = _start_at_work(
        ["trace", "wide.json", "points.csv"], tmp_path, lambda pid: cpu_seconds(pid) >= 4
    )
    sent = time.monotonic()
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 128 + signal.SIGTERM, err
    assert time.monotonic() - sent < 2.0, err  # a second, with room for a loaded machine
