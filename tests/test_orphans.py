"""No worker outlives its command: a run killed by SIGKILL (which it cannot handle) takes its
process-pool workers, and a ``local:N`` Dask cluster's processes, with it; the hidden
temporary file it leaves is removed by the next run that writes the same file.

Each command is started in a subprocess and killed only once its workers exist (found as its
descendants in ``/proc``); every descendant must then be gone within a bounded wait.  Linux
only (``/proc``); the portable watch (a thread that looks at the parent) is tested on its
own, without the kernel's ``PR_SET_PDEATHSIG``.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from test_interrupt import ENV, ROOT, _inputs, alive, children

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")

GONE = 10.0
"""Seconds the workers of a killed command may take to end (a bounded wait, not a timing)."""

READY = 120.0
"""Seconds a command may take to start its workers (a loaded machine)."""

PLANE = ROOT / "certificates" / "shatter-plane-L3-n14.jsonl.gz"

COMMANDS = {
    # builds (a second), then certifies on workers (a few seconds)
    "certify": ["certify", "mid.csv", "--method", "runs", "--workers", "2", "--out", "n.json"],
    "verify": ["verify", "deep.json", "line.csv", "--float", "float64"],
    "shatter": ["shatter", "--depth", "13", "--out", "s.jsonl", "--workers", "2"],
    "verify-shatter": ["verify-shatter", str(PLANE), "--workers", "2"],
}


def descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        for child in children(todo.pop()):
            out.append(child)
            todo.append(child)
    return out


def _kill_all(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _kill_at_work(args: list[str], folder: Path, workers: int) -> list[int]:
    """Start ``lncapacity ARGS`` in ``folder``, SIGKILL it once it has ``workers`` descendants,
    and return the descendants still alive after :data:`GONE` seconds (killed then)."""
    p = subprocess.Popen(
        [sys.executable, "-m", "lncapacity", *args, "--quiet"],
        cwd=folder,
        env=ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    seen: list[int] = []
    try:
        deadline = time.monotonic() + READY
        while len(seen := descendants(p.pid)) < workers:
            assert p.poll() is None, f"{args[0]} ended first: {p.communicate()[1][-500:]!r}"
            assert time.monotonic() < deadline, f"{args[0]} never started its workers"
            time.sleep(0.1)
        time.sleep(0.5)  # at work, and every worker started
        seen = descendants(p.pid)
        p.kill()
        p.wait()
        gone = time.monotonic() + GONE
        while any(alive(w) for w in seen) and time.monotonic() < gone:
            time.sleep(0.1)
        return [w for w in seen if alive(w)]
    finally:
        _kill_all([p.pid, *seen])
        p.wait()


@pytest.mark.parametrize("command", COMMANDS)
def test_the_workers_die_with_a_killed_command(tmp_path, command):
    _inputs(tmp_path)
    rows = (tmp_path / "big.csv").read_text().splitlines(keepends=True)
    (tmp_path / "mid.csv").write_text("".join(rows[:4001]))  # 4,000 points
    assert _kill_at_work(COMMANDS[command], tmp_path, workers=2) == []


def test_a_local_cluster_dies_with_a_killed_command(tmp_path):
    pytest.importorskip("distributed")
    args = ["shatter", "--depth", "1", "--arch", "ln-g", "--groups", "8", "--out", "s.jsonl"]
    # the cluster's process, and its two workers
    assert _kill_at_work([*args, "--scheduler", "local:2"], tmp_path, workers=3) == []


def test_a_killed_runs_temporary_file_goes_with_the_next_run(tmp_path):
    _inputs(tmp_path)
    assert _kill_at_work(COMMANDS["shatter"], tmp_path, workers=2) == []
    left = list(tmp_path.glob(".s.jsonl.*.tmp"))
    assert len(left) == 1  # what SIGKILL leaves behind
    host = left[0].name.split(".")[3].rpartition("-")[0]  # .s.jsonl.HOST-PID.XXXXXXXX.tmp
    mine = tmp_path / f".s.jsonl.{host}-{os.getpid()}.x.tmp"
    mine.write_text("a live process's")  # this process is alive: its file stays
    run = subprocess.run(
        [sys.executable, "-m", "lncapacity", "shatter", "--depth", "1", "--out", "s.jsonl"],
        cwd=tmp_path,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert sorted(tmp_path.glob(".s.jsonl.*.tmp")) == [mine]


def test_the_portable_watch_ends_a_worker_whose_parent_died(tmp_path):
    """Without the kernel's help (``PR_SET_PDEATHSIG`` off): the watch thread alone."""
    script = textwrap.dedent(
        """
        import os, sys, time
        from lncapacity import parallel
        parallel._kernel_watches = lambda: False
        parent = os.getpid()
        if os.fork() == 0:
            parallel.die_with_parent(parent)
            print(os.getpid(), flush=True)  # watched from now on
            time.sleep(600)
            os._exit(0)
        time.sleep(600)
        """
    )
    p = subprocess.Popen([sys.executable, "-c", script], env=ENV, stdout=subprocess.PIPE, text=True)
    ready, _, _ = select.select([p.stdout], [], [], READY)  # a bounded wait for its pid
    line = p.stdout.readline() if ready else ""
    try:
        child = int(line)  # the child says it watches its parent
        p.kill()
        p.wait()
        gone = time.monotonic() + GONE
        while alive(child) and time.monotonic() < gone:
            time.sleep(0.05)
        assert not alive(child)
    finally:
        p.kill()
        p.wait()
        p.stdout.close()
        if line.strip().isdigit():
            _kill_all([int(line)])
