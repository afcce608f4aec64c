"""What the commands share: exit codes, argparse types and options, progress, interruptions."""

from __future__ import annotations

import argparse
import functools
import signal
import sys
import threading
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


def add_max_points(q: argparse.ArgumentParser, default: int, says: str) -> None:
    """``--max-points``: the points a picture draws at most (:mod:`lncapacity.plot.budget`);
    ``says``: where the picture says that it shows a sample."""
    q.add_argument(
        "--max-points",
        type=int_in(1),
        default=default,
        metavar="N",
        help=f"points drawn at most (default {default:,}; fewer for a net too large to draw "
        "that many): beyond, a sample drawn at random with a fixed seed, every class kept, "
        f"and {says} says so",
    )


def add_output_options(
    q: argparse.ArgumentParser, certificate: bool = False, workers: bool = False
) -> None:
    """``--json`` and ``--quiet``; with ``certificate`` also ``--certificate``, ``--float`` and
    ``--require-float``; with ``workers`` also ``--workers`` and ``--scheduler`` (see
    :func:`check_scheduler`)."""
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
        q.add_argument(
            "--scheduler",
            metavar="ADDRESS",
            help="run the chunks on a Dask distributed cluster: a scheduler's address "
            "(tcp://host:8786 or host:8786) or local:N for N local worker processes (needs "
            "lncapacity[dask]; default: the process pool of --workers)",
        )
    q.add_argument("--json", action="store_true", help="print a JSON summary instead of text")
    q.add_argument("--quiet", action="store_true", help="no progress on stderr")


def check_scheduler(args: argparse.Namespace) -> None:
    """``--scheduler``, checked before any work: an address of a scheme the tool supports (or
    ``local:N``) and ``dask.distributed`` installed; one line otherwise."""
    if getattr(args, "scheduler", None) is not None:
        from ..cluster import distributed_module, parse_scheduler

        parse_scheduler(args.scheduler)
        distributed_module()


# --- progress on stderr ------------------------------------------------------------------------


class Bar:
    """Progress on stderr: a tqdm bar on a terminal, else a plain line every few seconds.

    Called as ``bar(done, total)`` by the library's progress callbacks (``total`` may change
    as a construction revises its estimate).  Stdout is never touched (``--json`` output
    stays clean), and nothing is printed when not ``enabled`` (``--quiet``).  :meth:`note`
    prints a message at once (e.g. that the construction falls back to another method), above
    the bar; :meth:`close` clears the bar from the terminal.

    Used as a context manager (as :func:`run` does), the bar also has a watch: a thread that
    waits :data:`FIRST` seconds and then shows the phase running (:meth:`tick`) unless a line
    or the bar already shows, so a long run says what it does within a second or two even
    when its first callback comes much later (the circle search on digits is silent for
    ten seconds).  Leaving the block stops the watch before the bar is cleared; a run done
    within :data:`FIRST` seconds prints nothing, as before.
    """

    PERIOD = 5.0
    """Seconds between plain progress lines when stderr is not a terminal."""

    FIRST = 1.5
    """Seconds before the first plain line may come (a run done sooner prints none)."""

    REDRAW = 0.1
    """Seconds between redraws of the bar on a terminal."""

    FORMAT = "{desc:<11} {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}]"
    """The bar (tqdm's ``bar_format``): the counts are of the caller's own steps (layers,
    points, labelings), so no rate is shown."""

    def __init__(self, label: str, enabled: bool, tty: bool | None = None) -> None:
        self.label, self.enabled, self.last = label, enabled, 0.0
        self.base = label  # the label phases are named after
        self.tty = sys.stderr.isatty() if tty is None else tty
        self.start = time.monotonic()
        self.last_line = self.start
        self.lines = 0  # plain lines printed
        self.bar: Any = None  # the tqdm bar, made when first drawn
        self.drawn = False  # whether a bar may be on the terminal
        self.counts: tuple[int, int] | None = None  # the last callback's (done, total)
        self.lock = threading.RLock()  # the watch's thread and the caller's write in turn
        self.closed = False  # after close: the watch shows nothing
        self.stop = threading.Event()
        self.watch: threading.Thread | None = None

    def __enter__(self) -> Bar:
        """Start the watch (when ``enabled``): :meth:`tick` once the run has lasted
        :data:`FIRST` seconds, unless the block is left first."""
        if self.enabled:
            self.watch = threading.Thread(target=self._watch, name="lncapacity-bar", daemon=True)
            self.watch.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _watch(self) -> None:
        if not self.stop.wait(max(0.0, self.start + self.FIRST - time.monotonic())):
            self.tick()

    def tick(self) -> None:
        """Show the phase running now, if nothing shows yet: off a terminal the line
        ``lncapacity: <label> [done/total] (<s> s)``, on a terminal the bar (``0/?`` until the
        first callback).  Nothing when quiet, closed, or once a line or the bar was shown."""
        with self.lock:
            if not self.enabled or self.closed or self.lines or self.drawn:
                return
            if self.tty:  # no callback yet (one would have drawn the bar)
                self._draw(None)
                return
            now = time.monotonic()
            counts = f" {self.counts[0]}/{self.counts[1]}" if self.counts else ""
            self.last_line, self.lines = now, self.lines + 1
            sys.stderr.write(f"lncapacity: {self.label}{counts} ({now - self.start:.0f} s)\n")
            sys.stderr.flush()

    def _draw(self, total: int | None) -> None:
        """Make the tqdm bar, drawn at once (``0/?`` when the ``total`` is not known yet)."""
        self.drawn = True  # from now: an interruption may come as tqdm draws its first frame
        self.bar = _tqdm()(
            total=total,
            desc=self.label,
            file=sys.stderr,
            leave=False,  # closing clears the line
            dynamic_ncols=True,
            bar_format=self.FORMAT,
        )

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if not self.enabled:
            return
        with self.lock:
            self.counts = (done, total)
            if self.closed:
                return
            if not self.tty:
                wait = self.PERIOD if self.lines else min(self.FIRST, self.PERIOD)
                if now - self.last_line >= wait and done < total:
                    self.last_line, self.lines = now, self.lines + 1
                    sys.stderr.write(
                        f"lncapacity: {self.label} {done}/{total} ({now - self.start:.0f} s)\n"
                    )
                    sys.stderr.flush()
                return
            if self.bar is None:
                self._draw(total)
            self.bar.total, self.bar.n = total, done  # kept current: a note draws it again
            if now - self.last >= self.REDRAW or done >= total:
                self.last = now
                self.bar.refresh()

    def phase(self, name: str) -> None:
        """Name the phase now running (a construction's ``circle search``, ``runs``,
        ``peel``, ``pma fallback``): the label of the bar and of the lines from now on; off a
        terminal a line at once, when the run has lasted :data:`FIRST` seconds already.  The
        label becomes ``"<label>: <name>"`` (``folding: circle search``)."""
        name = f"{self.base}: {name}"
        with self.lock:
            if name == self.label:
                return
            self.label, self.counts = name, None  # the counts were the last phase's
            if not self.enabled or self.closed:
                return
            now = time.monotonic()
            if self.bar is not None:
                self.bar.set_description_str(name, refresh=False)
            elif not self.tty and now - self.start >= min(self.FIRST, self.PERIOD):
                self.last_line, self.lines = now, self.lines + 1
                sys.stderr.write(f"lncapacity: {name} ({now - self.start:.0f} s)\n")
                sys.stderr.flush()

    def note(self, message: str) -> None:
        """Say ``message`` on stderr now (unless quiet)."""
        if not self.enabled:
            return
        with self.lock:
            if self.bar is not None:  # clears the bar, writes the line, draws the bar again
                self.bar.write(f"lncapacity: {message}", file=sys.stderr)
                return
            sys.stderr.write(f"lncapacity: {message}\n")
            sys.stderr.flush()

    def close(self) -> None:
        """Stop the watch and clear the bar from the terminal (also when tqdm was interrupted
        making it); nothing is shown after this."""
        self.stop.set()
        with self.lock:
            self.closed = True
            if self.bar is not None:
                self.bar.close()
            elif self.drawn:
                sys.stderr.write("\r\033[K")
                sys.stderr.flush()
            self.bar, self.drawn = None, False
        if self.watch is not None and self.watch is not threading.current_thread():
            self.watch.join()


@functools.cache
def _tqdm() -> type[Any]:
    """tqdm's bar class, imported when a bar is first drawn (not for ``--help``, ``--quiet`` or
    off a terminal): without the monitor thread tqdm starts (:class:`Bar` paces its own
    redraws), and with a thread lock instead of tqdm's default, which also makes a
    multiprocessing lock (a semaphore, and a resource-tracker process where ``fork`` is not
    the start method)."""
    from tqdm import tqdm

    class Tqdm(tqdm):
        monitor_interval = 0

    Tqdm.set_lock(threading.RLock())
    return Tqdm


def run(label: str, quiet: bool, f: Callable[[Bar], Any]) -> tuple[Any, float]:
    """``f(bar)`` with a progress bar ``label`` and its watch (stopped and the bar cleared at
    the end, however it ends), and the seconds it took."""
    start = time.perf_counter()
    with Bar(label, not quiet) as bar:
        return f(bar), time.perf_counter() - start


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
