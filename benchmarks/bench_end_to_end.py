"""End to end: what a command costs beyond its mathematics.

Each command runs as a user runs it (``python -m lncapacity ... --json --quiet``, a process
of its own, every float backend installed here), on CSV files written with 17 significant
digits as NumPy and pandas write floats.  Per row: the command's wall seconds and CPU
seconds (user + system of the process and its workers), the seconds of its mathematics
(``build`` + ``certify`` as its ``--json`` reports them; for ``verify``, its ``certify``),
and the ratio the target is about:

* ``certify --arch ln-g --depth 2`` of 30,000 random points in R^3, two classes: total
  wall / (build + certify), target at most 1.5;
* ``verify`` of that net: total wall / the ``certify`` command's total wall, target at most
  0.8 (``verify`` builds nothing);
* reading 10^6 CSV rows (3 features and a label) with ``load_points``: wall seconds, target
  under 20 s.

The rest of a command (neither build nor certify) is reading the CSV, importing PyTorch for
its two backends, the four float checks (a forward pass each, the ulp bound from the
certificate's enclosures), writing the net; the forward passes and PyTorch's import run in
a process of their own while the certificate is computed, so on two idle cores they cost
the command little wall time.  Wall seconds on a shared machine also measure the load,
printed with the table (a busy machine has no idle core for them); the CPU seconds are
the work.

Run ``python benchmarks/bench_end_to_end.py [--points 30000] [--rows 1000000]
[--markdown docs/tables/end_to_end.md]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from bench_ln_g import random_set
from markdown_table import Markdown, add_option

from lncapacity.data import load_points

ROOT = Path(__file__).resolve().parents[1]


def write_csv(path: Path, X: np.ndarray, y: np.ndarray) -> None:
    """Floats as ``repr`` writes them (17 significant digits at most), one row a line."""
    head = ",".join(f"x{j}" for j in range(X.shape[1])) + ",label\n"
    pairs = zip(X.tolist(), y.tolist(), strict=True)
    rows = (",".join(map(repr, r)) + f",{label}\n" for r, label in pairs)
    path.write_text(head + "".join(rows), encoding="utf-8")


def command(*args: str) -> tuple[dict, float, float]:
    """Run ``python -m lncapacity ARGS --json --quiet``: its summary, wall and CPU seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "lncapacity", *args, "--json", "--quiet"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)}: exit {done.returncode}\n{done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return json.loads(done.stdout), wall, cpu


def mark(ratio: float, target: float) -> str:
    return "met" if ratio <= target else "missed"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=30_000, help="points of the certify row")
    ap.add_argument("--rows", type=int, default=1_000_000, help="CSV rows of the reading row")
    add_option(ap)
    a = ap.parse_args()
    md = Markdown(a.markdown)
    load = os.getloadavg()
    md.out(
        f"load average before: {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f}; "
        f"this run's niceness {os.nice(0)}"
    )
    md.out()
    md.out("| command | points | wall s | CPU s | build + certify s | ratio | target | |")
    md.out("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        data, net = folder / "d.csv", folder / "n.json"
        write_csv(data, *random_set(a.points, 2, 0))
        options = ("--arch", "ln-g", "--depth", "2")
        s, wall, cpu = command("certify", str(data), *options, "--out", str(net))
        build, cert = s["seconds"]["build"], s["seconds"]["certify"]
        ratio = wall / (build + cert)
        md.out(
            f"| `certify {' '.join(options)}` | {s['points']:,} "
            f"| {wall:.1f} | {cpu:.1f} | {build:.1f} + {cert:.1f} "
            f"| {ratio:.2f} x build + certify | <= 1.5 | {mark(ratio, 1.5)} |"
        )
        v, v_wall, v_cpu = command("verify", str(net), str(data))
        ratio = v_wall / wall
        md.out(
            f"| `verify` of that net | {v['points']:,} | {v_wall:.1f} | {v_cpu:.1f} "
            f"| {v['seconds']['certify']:.1f} | {ratio:.2f} x `certify` "
            f"| <= 0.8 | {mark(ratio, 0.8)} |"
        )
        rng = np.random.default_rng(1)
        big = folder / "rows.csv"
        write_csv(big, rng.standard_normal((a.rows, 3)), rng.integers(0, 2, a.rows))
        start, cpu0 = time.perf_counter(), time.process_time()
        points = load_points(big)
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu0
        md.out(
            "| `load_points` of a CSV, 3 features "
            f"| {points.m:,} | {wall:.1f} | {cpu:.1f} | - | - | < 20 s | "
            f"{'met' if wall < 20 else 'missed'} |"
        )
    load = os.getloadavg()
    md.out()
    md.out(f"load average after: {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f}")
    md.save()


if __name__ == "__main__":
    main()
