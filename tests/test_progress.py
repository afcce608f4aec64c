"""Progress on a terminal (issue 29): a tqdm bar on stderr, drawn over itself, cleared at the end
and when the run is interrupted; notes above it; nothing with ``--quiet``; tqdm not imported
for ``--help`` or off a terminal.  The plain lines off a terminal: ``test_scale.py``.  The watch
(issue 35): the phase shown once the run has lasted ``Bar.FIRST`` seconds, before a silent
search's first callback; stopped however the run ends."""

from __future__ import annotations

import io
import math
import os
import random
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lncapacity.cli import Bar
from lncapacity.cli.common import run

ROOT = Path(__file__).resolve().parents[1]
ENV = {k: v for k, v in os.environ.items() if k != "LNCAPACITY_DEBUG"} | {"PYTHONPATH": str(ROOT)}


def screen(text: str) -> list[str]:
    """What a terminal shows after ``text``: carriage returns, newlines and erase-line (ESC[K)
    applied, trailing blanks dropped."""
    lines, row, col = [""], 0, 0
    for token in re.findall(r"\x1b\[[0-9;]*[A-Za-z]|.|\n", text, re.S):
        if token == "\r":
            col = 0
        elif token == "\n":
            row, col = row + 1, 0
            lines += [""] * (row + 1 - len(lines))
        elif token.startswith("\x1b"):
            if token.endswith("K"):
                lines[row] = lines[row][:col]
        else:
            line = lines[row].ljust(col)
            lines[row] = line[:col] + token + line[col + 1 :]
            col += 1
    return [line.rstrip() for line in lines]


def test_bar_on_a_terminal(monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    bar = Bar("folding", True, tty=True)
    bar(0, 10)
    assert "folding" in err.getvalue() and "0/10" in err.getvalue()
    bar(4, 10)  # within REDRAW of the last: not drawn, but kept for the note's redraw
    bar.note("method runs gave way to pma: why")
    assert screen(err.getvalue())[-1].startswith("folding      40%|")
    bar(10, 10)  # the end is always drawn
    assert "10/10" in screen(err.getvalue())[-1]
    bar.close()
    assert screen(err.getvalue()) == ["lncapacity: method runs gave way to pma: why", ""]
    quiet = Bar("folding", False, tty=True)
    quiet(1, 2)
    quiet.note("x")
    quiet.close()
    assert screen(err.getvalue()) == ["lncapacity: method runs gave way to pma: why", ""]


def test_tqdm_is_imported_only_to_draw():
    code = (
        "import sys, lncapacity.cli as c; c.build_parser(); "
        "b = c.Bar('x', True, tty=False); b(1, 2); b.note('n'); b.close(); "
        "q = c.Bar('x', False, tty=True); q(1, 2); q.close(); print('tqdm' in sys.modules)"
    )
    r = subprocess.run([sys.executable, "-c", code], env=ENV, capture_output=True, text=True)
    assert r.stdout == "False\n", r.stderr


def test_tick_shows_the_phase_before_any_callback(monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    bar = Bar("folding", True, tty=False)
    bar.FIRST = bar.PERIOD = math.inf  # no line of the bar's own: only what tick shows
    bar.phase("circle search")
    assert err.getvalue() == ""
    bar.tick()  # what the watch does once the run has lasted FIRST seconds
    bar.tick()  # once: a line shows already
    bar(2, 10)  # the search's first callback: within PERIOD of that line
    bar.close()
    bar.tick()  # nothing after the end
    assert re.fullmatch(r"lncapacity: folding: circle search \(\d+ s\)\n", err.getvalue())
    counted = Bar("folding", True, tty=False)
    counted.FIRST = counted.PERIOD = math.inf
    counted(3, 10)
    counted.tick()  # a callback came, but showed nothing: its counts
    assert re.fullmatch(r"lncapacity: folding 3/10 \(\d+ s\)", err.getvalue().splitlines()[-1])
    counted.close()
    quiet = Bar("folding", False, tty=False)
    quiet.tick()
    quiet.close()
    assert len(err.getvalue().splitlines()) == 2


def test_tick_draws_the_bar_on_a_terminal(monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    bar = Bar("folding", True, tty=True)
    bar.phase("circle search")
    assert err.getvalue() == ""
    bar.tick()
    assert screen(err.getvalue())[-1].startswith("folding: circle search   0%|")
    assert "0/?" in screen(err.getvalue())[-1]  # the total comes with the first callback
    bar(3, 10)
    assert "3/10" in screen(err.getvalue())[-1]
    bar.close()
    bar.tick()
    assert screen(err.getvalue()) == [""]


def test_the_watch_shows_the_phase_while_the_search_is_silent(monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    bars: list[Bar] = []

    def silent_search(bar: Bar) -> str:
        bars.append(bar)
        bar.phase("circle search")
        assert bar.watch is not None
        bar.watch.join(timeout=120)  # silent until the watch has shown the phase
        shown = err.getvalue()
        bar(2, 10)  # then the first callback
        return shown

    shown, _ = run("folding", False, silent_search)
    assert re.fullmatch(r"lncapacity: folding: circle search \(\d+ s\)\n", shown), shown
    assert not bars[0].watch.is_alive()
    assert run("folding", True, lambda bar: bar.watch)[0] is None  # --quiet: no watch


@pytest.mark.parametrize("error", [KeyboardInterrupt, ValueError])
def test_the_watch_stops_however_the_run_ends(monkeypatch, error):
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    bars: list[Bar] = []

    def failing(bar: Bar) -> None:
        bars.append(bar)
        bar.phase("circle search")
        raise error

    with pytest.raises(error):
        run("folding", False, failing)
    assert bars[0].watch is not None and not bars[0].watch.is_alive()
    bars[0].tick()  # as a late watch would: the run has ended, nothing shows
    assert err.getvalue() == ""


def test_the_watch_off_a_terminal_does_not_import_tqdm():
    code = (
        "import sys, lncapacity.cli as c\n"
        "with c.Bar('x', True, tty=False) as b:\n"
        "    b.tick()\n"
        "print('tqdm' in sys.modules, b.watch.is_alive())"
    )
    r = subprocess.run([sys.executable, "-c", code], env=ENV, capture_output=True, text=True)
    assert r.stdout == "False False\n", r.stderr
    assert re.fullmatch(r"lncapacity: x \(\d+ s\)\n", r.stderr), r.stderr


def _on_a_terminal(args: list[str], folder: Path, stop_at: str | None = None) -> dict:
    """``lncapacity ARGS`` with stderr on an 80-column pseudo-terminal; with ``stop_at``,
    SIGTERM once that text is on it.  The exit code, stdout, and the terminal's text."""
    import fcntl
    import pty
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    p = subprocess.Popen(
        [sys.executable, "-m", "lncapacity", *args],
        cwd=folder,
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=slave,
    )
    os.close(slave)
    raw, sent, deadline = b"", False, time.monotonic() + 120
    while time.monotonic() < deadline:
        if select.select([master], [], [], 0.05)[0]:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the other end closed (Linux)
                chunk = b""
            raw += chunk
            if not chunk and p.poll() is not None:
                break
        elif p.poll() is not None:
            break
        if stop_at and not sent and stop_at.encode() in raw:
            p.send_signal(signal.SIGTERM)
            sent = True
    out = p.communicate(timeout=60)[0].decode()
    os.close(master)
    return {"code": p.returncode, "stdout": out, "tty": raw.decode("utf-8", "replace")}


@pytest.fixture(scope="module")
def checkerboard(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("progress")
    rng = random.Random(0)
    for name, m, cell in (("small.csv", 300, 250_000), ("large.csv", 4000, 100_000)):
        rows = [(rng.randint(-(10**6), 10**6), rng.randint(-(10**6), 10**6)) for _ in range(m)]
        text = "".join(f"{x}/1000,{y}/1000,{(x // cell + y // cell) % 2}\n" for x, y in rows)
        (folder / name).write_text("x,y,label\n" + text)
    return folder


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pseudo-terminal: Linux")
def test_a_run_on_a_terminal_draws_and_clears_its_bars(checkerboard):
    # runs: the same net in both runs (auto's circle search has a time budget)
    args = ["certify", "small.csv", "--float", "float64", "--method", "runs"]
    r = _on_a_terminal(args, checkerboard)
    plain = subprocess.run(
        [sys.executable, "-m", "lncapacity", *args],
        cwd=checkerboard,
        env=ENV,
        capture_output=True,
        text=True,
    )
    assert r["code"] == plain.returncode == 0, r["tty"]
    assert r["stdout"] == plain.stdout  # the terminal changes stderr only
    assert "folding" in r["tty"] and "certifying" in r["tty"] and "300/300" in r["tty"]
    assert screen(r["tty"]) == [""]  # every bar cleared
    quiet = _on_a_terminal([*args, "--quiet"], checkerboard)
    assert quiet["code"] == 0 and quiet["tty"] == ""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pseudo-terminal: Linux")
def test_an_interrupted_run_clears_its_bar(checkerboard):
    args = ["certify", "large.csv", "--out", "n.json", "--certificate", "c.json"]
    r = _on_a_terminal(args, checkerboard, stop_at="folding")
    assert r["code"] == 128 + signal.SIGTERM, r["tty"]
    assert "folding" in r["tty"]
    assert screen(r["tty"]) == ["lncapacity: interrupted (SIGTERM)", ""]
    assert sorted(p.name for p in checkerboard.iterdir()) == ["large.csv", "small.csv"]
