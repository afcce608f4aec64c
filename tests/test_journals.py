"""Journals of ``shatter --resume`` that are not what a run leaves, and what a run stopped at
its start leaves: each ends in exit 0 or 2 with one line, reading a bounded prefix at most.

Every run is ``python -m lncapacity`` in a subprocess whose address space is capped
(``RLIMIT_AS``), so a journal read whole (gigabytes) would fail as an internal error."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from lncapacity.shatter import shatter, verify_shatter

ROOT = Path(__file__).resolve().parents[1]
ENV = {k: v for k, v in os.environ.items() if k != "LNCAPACITY_DEBUG"} | {"PYTHONPATH": str(ROOT)}
RUN = ["shatter", "--depth", "1", "--arch", "ln-g", "--groups", "1", "--workers", "1"]
MEMORY = 3 << 30  # bytes of address space a run may take: far below a journal read whole
TIMEOUT = 300


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def _shatter(folder: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lncapacity", *RUN, "--out", "s.jsonl", *extra],
        cwd=folder,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        preexec_fn=_capped,
    )


@pytest.fixture(scope="module")
def header(tmp_path_factory) -> bytes:
    path = tmp_path_factory.mktemp("whole") / "s.jsonl"
    assert shatter(None, 1, out=path, workers=1, groups=1).all_certified  # what RUN writes
    return path.read_bytes().splitlines(keepends=True)[0]


def _folder(tmp_path: Path, name: str, header: bytes) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    journal = folder / "s.jsonl.part"
    if name == "directory":
        journal.mkdir()
    elif name == "dev-zero":
        journal.symlink_to("/dev/zero")
    elif name == "dangling-link":
        journal.symlink_to(folder / "nowhere")
    elif name == "fifo":
        os.mkfifo(journal)
    elif name == "sparse-3-GB":
        with open(journal, "wb") as f:
            f.truncate(3 << 30)  # holes: no disk used, 3 GB of zeros when read
    elif name == "empty":
        journal.write_bytes(b"")
    elif name == "half-header":
        journal.write_bytes(header[: len(header) // 2])
    return folder


REFUSED = ["directory", "dev-zero", "dangling-link", "fifo", "sparse-3-GB"]
AFRESH = ["empty", "half-header"]


def test_odd_journals_are_refused_and_a_stopped_start_is_started_afresh(tmp_path, header):
    folders = {name: _folder(tmp_path, name, header) for name in REFUSED + AFRESH}
    quiet = {name: () if name in AFRESH else ("--quiet",) for name in folders}  # AFRESH: a note
    with ThreadPoolExecutor(4) as pool:
        futures = {n: pool.submit(_shatter, f, "--resume", *quiet[n]) for n, f in folders.items()}
        runs = {name: future.result() for name, future in futures.items()}
    for name in REFUSED:
        p = runs[name]
        err = p.stderr.strip().splitlines()
        assert p.returncode == 2 and len(err) == 1, (name, p.stderr)
        assert err[0].startswith("lncapacity: error: ") and len(err[0]) < 300, (name, err)
        assert not (folders[name] / "s.jsonl").exists()
    for name in ("directory", "dev-zero", "dangling-link", "fifo"):
        assert "not a regular file" in runs[name].stderr, name
    assert "another run" in runs["sparse-3-GB"].stderr
    for name in AFRESH:
        p = runs[name]
        said = [line for line in p.stderr.splitlines() if "incomplete header" in line]
        assert p.returncode == 0, (name, p.stderr)
        assert len(said) == 1 and "afresh" in said[0], p.stderr  # (not --quiet: progress too)
        assert (folders[name] / "s.jsonl").read_bytes().startswith(header)
        assert not (folders[name] / "s.jsonl.part").exists()
        summary, problems = verify_shatter(folders[name] / "s.jsonl", workers=1)
        assert summary.all_certified and not problems
