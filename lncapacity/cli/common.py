"""What the commands share: exit codes, argparse types and options, progress, interruptions."""

from __future__ import annotations

import argparse
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

from .. import floats

EXIT_OK, EXIT_INTERNAL, EXIT_BAD = 0, 1, 2


# --- argparse: types and the options several commands take ----------------------------------


def int_in(lo: int, hi: int | None = None) -> Callable[[str], int]:
    """An argparse type: an integer from ``lo`` to ``hi`` (no bound: None), else one line."""

    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            n = None
        if n is None or n < lo or (hi is not None and n > hi):
            want = (
                f"an integer from {lo:,} to {hi:,}"
                if hi is not None
                else "a positive integer"
                if lo == 1
                else f"an integer >= {lo}"
            )
            raise argparse.ArgumentTypeError(f"expected {want}, got {text[:40]!r}")
        return n

    return parse


positive_int = int_in(1)
seed_int = int_in(0, 2**64 - 1)  # NumPy's generators take no negative seed


def add_output_options(
    q: argparse.ArgumentParser, certificate: bool = False, workers: bool = False
) -> None:
    """``--json`` and ``--quiet``; with ``certificate`` also ``--certificate``, ``--float`` and
    ``--require-float``; with ``workers`` also ``--workers``."""
    if certificate:
        q.add_argument("--certificate", metavar="CERT.json", help="write the certificate")
        q.add_argument(
            "--float",
            metavar="B1,B2",
            help=f"comma-separated float backends to check, from {', '.join(floats.BACKENDS)} "
            "(default: all available)",
        )
        q.add_argument(
            "--require-float",
            metavar="B1,B2",
            help="exit 2 unless these float backends (checked too) get every point right",
        )
    if workers:
        q.add_argument(
            "--workers",
            type=positive_int,
            metavar="N",
            help="processes (default: all cores; never more than there are chunks of work)",
        )
    q.add_argument("--json", action="store_true", help="print a JSON summary instead of text")
    q.add_argument("--quiet", action="store_true", help="no progress on stderr")


# --- progress on stderr ------------------------------------------------------------------------


class Bar:
    """Progress on stderr: a one-line bar on a terminal, else a plain line every few seconds.

    Stdout is never touched (``--json`` output stays clean).  :meth:`note` prints
    a message at once (e.g. that the construction falls back to another method).
    """

    PERIOD = 5.0
    """Seconds between plain progress lines when stderr is not a terminal."""

    def __init__(self, label: str, enabled: bool, tty: bool | None = None) -> None:
        self.label, self.enabled, self.last, self.drawn = label, enabled, 0.0, False
        self.tty = sys.stderr.isatty() if tty is None else tty
        self.start = time.monotonic()
        self.last_line = self.start

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if not self.enabled:
            return
        if not self.tty:
            if now - self.last_line >= self.PERIOD and done < total:
                self.last_line = now
                sys.stderr.write(
                    f"lncapacity: {self.label} {done}/{total} ({now - self.start:.0f} s)\n"
                )
                sys.stderr.flush()
            return
        if now - self.last < 0.1 and done < total:
            return
        self.last, self.drawn = now, True
        frac = done / total if total else 1.0
        filled = int(30 * frac)
        sys.stderr.write(f"\r{self.label:<11} [{'#' * filled}{'.' * (30 - filled)}] {done}/{total}")
        sys.stderr.flush()

    def note(self, message: str) -> None:
        """Say ``message`` on stderr now (unless quiet)."""
        if not self.enabled:
            return
        if self.drawn:
            sys.stderr.write("\r\033[K")
        sys.stderr.write(f"lncapacity: {message}\n")
        sys.stderr.flush()

    def close(self) -> None:
        if self.drawn:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


def run(label: str, quiet: bool, f: Callable[[Bar], Any]) -> tuple[Any, float]:
    """``f(bar)`` with a progress bar ``label`` (cleared at the end, however it ends), and the
    seconds it took."""
    bar = Bar(label, not quiet)
    start = time.perf_counter()
    try:
        return f(bar), time.perf_counter() - start
    finally:
        bar.close()


# --- interruptions -------------------------------------------------------------------------------


class Interrupted(KeyboardInterrupt):
    """A termination signal (SIGTERM, SIGHUP) turned into an exception, as Ctrl-C is."""

    def __init__(self, signo: int) -> None:
        super().__init__(signo)
        self.signo = signo


def raise_interrupted(signo: int, _frame: object) -> None:
    raise Interrupted(signo)


STOP_SIGNALS = tuple(getattr(signal, n) for n in ("SIGTERM", "SIGHUP") if hasattr(signal, n))
"""Signals that stop a run as Ctrl-C (SIGINT) does: temporary files removed, workers stopped,
one line, exit code 128 + the signal's number (130 SIGINT, 143 SIGTERM, 129 SIGHUP)."""
