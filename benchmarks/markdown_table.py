"""``--markdown PATH``: a benchmark's table as a Markdown file for the manual (docs/tables/).

The file ends with one line saying which command produced it, at which commit of
lncapacity, when, on how many cores and under what load, so that a table in the manual
is the output of a named run, never retyped.  Not a benchmark itself (no ``bench_``
prefix).
"""

from __future__ import annotations

import argparse
import datetime
import os
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def add_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--markdown",
        metavar="PATH",
        help="also write the table as Markdown to PATH, headed by the command and commit "
        "that produced it (the manual's docs/tables/)",
    )


def _commit() -> str:
    try:
        head = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--", "lncapacity", "benchmarks"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "an unknown commit"
    return f"commit `{head}`" + (" with local changes" if dirty else "")


def _load() -> str:
    """The 1-minute load average, or a question mark where the system has none."""
    return f"{os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else "?"


class Markdown:
    """Collects Markdown lines; :meth:`save` writes them over a provenance line."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.lines: list[str] = []
        self.load_at_start = _load()

    def add(self, line: str = "") -> None:
        self.lines.append(line)

    def out(self, line: str = "") -> None:
        """Print ``line`` (flushed, as the table is measured) and keep it."""
        print(line, flush=True)
        self.add(line)

    def save(self) -> None:
        if not self.path:
            return
        from lncapacity import __version__

        args = [a for a in sys.argv[1:]]
        # the command as run, without the --markdown option itself
        shown: list[str] = []
        skip = False
        for a in args:
            if skip:
                skip = False
                continue
            if a == "--markdown":
                skip = True
                continue
            if a.startswith("--markdown="):
                continue
            shown.append(a)
        script = Path(sys.argv[0]).resolve()
        try:
            script_name = str(script.relative_to(ROOT))
        except ValueError:
            script_name = script.name
        command = shlex.join(["python", script_name, *shown])
        provenance = (
            f"*Measured* by `{command}` at {_commit()} (lncapacity {__version__}), "
            f"{datetime.date.today().isoformat()}, on {os.cpu_count()} cores, load average "
            f"{self.load_at_start} at the start and {_load()} at the end; times are wall-clock "
            "seconds."
        )
        text = "\n".join([*self.lines, "", provenance]).strip("\n") + "\n"
        Path(self.path).write_text(text, encoding="utf-8")
        print(f"wrote {self.path}", file=sys.stderr)
