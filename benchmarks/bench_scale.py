"""The scale table (issue 19): build, certify and verify times for m = 500 ... 20,000.

Random binary points in R^3 (``bench_methods.random_set``), the method ``runs``
(the default for two classes before ``auto`` searched circle nets too), eps 0.  Per
``m``: build, certify and verify (a fresh certify of the net read back from its
``lnnet/1`` JSON) times, the precision the certificate used (53: every point decided
by the float64 interval pass), the depth,
whether ``runs`` gave way to ``pma``, float64 and float32 points right, and the
peak memory (``tracemalloc``, Python allocations incl. NumPy).  Wall and CPU
seconds are both shown (``certify`` in one process): on a shared machine the CPU
time is what the same run takes on an idle core. Then the growth
exponents fitted by least squares on log time against log m.

Figures, not assertions: run it and read it.

    PYTHONPATH=. python benchmarks/bench_scale.py                 # 500 ... 20000
    PYTHONPATH=. python benchmarks/bench_scale.py --sizes 500 2000 --no-verify
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from bench_methods import random_set

from lncapacity import build, certify
from lncapacity.fileformat import from_dict, to_dict
from lncapacity.floats import check

SIZES = (500, 1000, 2000, 5000, 10000, 20000)


def measure(m: int, verify: bool) -> dict[str, object]:
    points = random_set(m, 0)
    tracemalloc.start()
    t0, c0 = time.perf_counter(), time.process_time()
    net = build(points, method="runs")
    t1, c1 = time.perf_counter(), time.process_time()
    cert = certify(net, points, workers=1)
    t2, c2 = time.perf_counter(), time.process_time()
    row: dict[str, object] = {"m": m, "build": t1 - t0, "certify": t2 - t1}
    row |= {"build_cpu": c1 - c0, "certify_cpu": c2 - c1}
    if verify:
        again = from_dict(to_dict(net))
        t3, c3 = time.perf_counter(), time.process_time()
        row["verify_ok"] = certify(again, points, workers=1).all_certified
        row["verify"] = time.perf_counter() - t3
        row["verify_cpu"] = time.process_time() - c3
    f64, f32 = check(net, points, "float64"), check(net, points, "float32")
    row["peak_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    row |= {
        "depth": net.depth,
        "fallback": net.meta.get("method") != "runs",
        "certified": cert.all_certified,
        "bits": cert.precision,
        "float64": f"{f64.agree}/{f64.total}",
        "float32": f"{f32.agree}/{f32.total}",
    }
    return row


def exponent(rows: list[dict[str, object]], key: str) -> float:
    pts = [(math.log(r["m"]), math.log(r[key])) for r in rows if key in r and r[key] > 0]
    if len(pts) < 2:
        return math.nan
    x, y = np.array(pts).T
    return float(np.polyfit(x, y, 1)[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    ap.add_argument("--no-verify", action="store_true")
    args = ap.parse_args()
    head = (
        f"{'m':>6} {'build s':>8} {'(cpu)':>7} {'certify s':>9} {'(cpu)':>7} "
        f"{'verify s':>8} {'(cpu)':>7} {'bits':>4} {'depth':>6} "
        f"{'pma?':>4} {'cert':>4} {'float64':>11} {'float32':>11} {'peak MB':>8}"
    )
    print(head, flush=True)
    rows = []
    for m in args.sizes:
        r = measure(m, not args.no_verify)
        rows.append(r)
        v = f"{r['verify']:8.1f} {r['verify_cpu']:7.1f}" if "verify" in r else f"{'-':>8} {'-':>7}"
        print(
            f"{m:>6} {r['build']:8.1f} {r['build_cpu']:7.1f} {r['certify']:9.1f} "
            f"{r['certify_cpu']:7.1f} {v} {r['bits']:>4} {r['depth']:>6} "
            f"{'yes' if r['fallback'] else 'no':>4} {'yes' if r['certified'] else 'NO':>4} "
            f"{r['float64']:>11} {r['float32']:>11} {r['peak_mb']:8.0f}",
            flush=True,
        )
    print(
        "growth exponents (time ~ m^k): "
        + ", ".join(
            f"{k} {exponent(rows, k):.2f}"
            for k in ("build", "build_cpu", "certify", "certify_cpu", "verify", "verify_cpu")
        )
    )


if __name__ == "__main__":
    main()
