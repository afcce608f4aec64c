"""Scaling over cores: how much faster each spread-out piece of work gets with more processes.

For each workload, the wall-clock seconds with 1, 2, ... N worker processes (``workers=``, the
process pool of :mod:`lncapacity.parallel`), the speed-up over one process and the efficiency
(speed-up / processes).  The workloads:

* ``certify, generic net``: an untrained full-rank LN-Net (``theory.capacity.random_net``,
  width 16, depth 2, inputs in R^3) on random points labelled by its own float64 argmax: the
  float64 interval pass in chunks of points, the few undecided points in balls;
* ``certify, LN-G net``: the ``--arch ln-g --depth 1`` net built for random points in R^3;
* ``verify, generic net``: what ``verify`` computes (certify, then the float64 and float32
  checks), for the first net;
* ``float checks``: the NumPy backends on a deeper, wider untrained net;
* ``shatter``: every labeling of ``L + 2`` points on a line, built and certified;
* ``verify-shatter``: a shipped shattering certificate re-checked.

The **serial fraction** is measured, not fitted: with 2 processes, the CPU seconds of the
main process (the driver: making tasks, pickling, ordering results, bookkeeping) over all CPU
seconds (its own and its workers', from ``getrusage``).  Amdahl's law then projects the
speed-up on 16 processes, ``1 / (s + (1 - s) / 16)``, for a machine with 16 idle cores
(it leaves out what a loaded machine or memory bandwidth take away).  The load average
(``os.getloadavg``) is printed with the table: on a shared machine the wall-clock figures are
only as good as the machine was quiet.

Figures, not assertions: run it and read it.

    PYTHONPATH=. python benchmarks/bench_scaling.py                  # 1 .. all cores
    PYTHONPATH=. python benchmarks/bench_scaling.py --workers 1 2 --quick
    PYTHONPATH=. python benchmarks/bench_scaling.py --markdown docs/tables/scaling.md
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from markdown_table import Markdown, add_option

from lncapacity import build, floats
from lncapacity.certify import certify
from lncapacity.data import points_from_arrays
from lncapacity.shatter import shatter, verify_shatter
from lncapacity.theory.capacity import random_net

ROOT = Path(__file__).resolve().parents[1]
SHATTERED = ROOT / "certificates"

Work = Callable[[int], object]
"""A workload: run it with this many worker processes."""


def _labelled(net, m: int, seed: int):
    """``m`` random points in R^d, each labelled by ``net``'s float64 argmax."""
    rng = np.random.default_rng(seed)
    X = np.round(rng.standard_normal((m, net.input_dim)) * 2**10) / 2**10
    y = np.argmax(floats.forward(net, X, "float64", workers=1), axis=1)
    return points_from_arrays(X, [net.classes[k] for k in y])


def workloads(quick: bool) -> dict[str, Work]:
    """Every workload, its inputs made once (not timed)."""
    m = 4_000 if quick else 20_000
    generic = random_net(3, 16, 2, seed=0)
    points = _labelled(generic, m, 1)
    rng = np.random.default_rng(2)
    X = rng.standard_normal((m, 3))
    ln_g_points = points_from_arrays(X, (X[:, 0] * X[:, 1] > 0).astype(int))
    ln_g = build(ln_g_points, arch="ln-g", depth=1)
    wide = random_net(3, 64, 8, seed=3)
    wide_points = _labelled(wide, 10 * m, 4)
    depth = 6 if quick else 8
    certificate = SHATTERED / (
        "shatter-line-L4-n11.jsonl.gz" if quick else "shatter-plane-L3-n14.jsonl.gz"
    )

    def verify(workers: int) -> object:
        cert = certify(generic, points, workers=workers, scores=True)
        return [
            floats.check(generic, points, b, cert.scores, workers=workers) for b in floats.DTYPES
        ]

    return {
        "certify, generic net": lambda w: certify(generic, points, workers=w),
        "certify, LN-G net": lambda w: certify(ln_g, ln_g_points, workers=w),
        "verify, generic net": verify,
        "float checks": lambda w: [
            floats.check(wide, wide_points, b, workers=w) for b in floats.DTYPES
        ],
        "shatter": lambda w: shatter(None, depth=depth, workers=w),
        "verify-shatter": lambda w: verify_shatter(certificate, workers=w),
    }


def measure(work: Work, workers: int) -> tuple[float, float, float]:
    """Wall seconds, the main process's CPU seconds and its workers' CPU seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0, c0 = time.perf_counter(), time.process_time()
    work(workers)
    wall, own = time.perf_counter() - t0, time.process_time() - c0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    children = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, own, children


def amdahl(serial: float, n: int) -> float:
    """Amdahl's speed-up on ``n`` processes with serial fraction ``serial``."""
    return 1 / (serial + (1 - serial) / n)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workers", type=int, nargs="+", help="process counts (default 1 .. cores)")
    p.add_argument("--quick", action="store_true", help="smaller workloads (a smoke run)")
    p.add_argument("--only", nargs="+", help="workloads whose names start with these")
    add_option(p)
    args = p.parse_args()
    counts = args.workers or list(range(1, (os.cpu_count() or 1) + 1))
    md = Markdown(args.markdown)
    load = os.getloadavg()
    works = {
        name: w
        for name, w in workloads(args.quick).items()
        if not args.only or any(name.startswith(o) for o in args.only)
    }
    head = " | ".join(f"{n} proc. s (speed-up)" for n in counts)
    md.out(f"| workload | {head} | serial fraction | projected on 16 |")
    md.out("|---" * (len(counts) + 3) + "|")
    for name, work in works.items():
        cells, base, serial = [], None, None
        for n in counts:
            wall, own, children = measure(work, n)
            base = wall if base is None else base
            cells.append(f"{wall:.2f} ({base / wall:.2f} x, {base / wall / n:.0%})")
            if n == 2:
                serial = own / (own + children) if own + children else None
        proj = (
            "-" if serial is None else f"{amdahl(serial, 16):.1f} x ({amdahl(serial, 16) / 16:.0%})"
        )
        share = "-" if serial is None else f"{serial:.1%}"
        md.out(f"| {name} | {' | '.join(cells)} | {share} | {proj} |")
    after = os.getloadavg()
    md.out()
    md.out(
        f"Load average (1, 5, 15 min) {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f} before and "
        f"{after[0]:.2f}, {after[1]:.2f}, {after[2]:.2f} after, on {os.cpu_count()} cores. "
        "Serial fraction: the main process's share of all CPU seconds with 2 processes; "
        "projected: Amdahl's speed-up (and efficiency) on 16 idle cores."
    )
    md.save()


if __name__ == "__main__":
    main()
