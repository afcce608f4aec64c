"""The two constructions side by side: depth, float agreement, time, float frontier.

For ``--method pma`` (the paper's Projection Merge Algorithm) and the default
``runs`` method, on random binary sets in R^3 and on equally spaced collinear
points with alternating labels (the worst case, depth m - 2), this prints:

- depth / (m - 2), median and worst over seeded labelings;
- float64 and float32 points right (NumPy forward pass) and the smallest float
  margin, over those labelings;
- build and certify time (median);
- the float64 frontier of each method: the largest m for which float64 gets
  every point right, by bisection over m (one seeded set per m; nets are not
  certified during the bisection, only built and run in float64).

Figures, not assertions: run it and read it (issue 9 asks for the table).

    python benchmarks/bench_methods.py                 # the full table (~20 min)
    python benchmarks/bench_methods.py --quick         # m <= 200, no frontier
    python benchmarks/bench_methods.py --sizes --cap 3000   # the frontier only
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from lncapacity import build, certify, points_from_arrays
from lncapacity.data import PointSet
from lncapacity.floats import check

METHODS = ("pma", "runs")


def random_set(m: int, seed: int) -> PointSet:
    """``m`` random points in R^3 (coordinates multiples of 2^-18), random binary labels."""
    rng = np.random.default_rng([m, seed])
    X = rng.integers(-(2**20), 2**20, size=(m, 3)) / 2**18
    y = rng.integers(0, 2, m)
    y[:2] = (0, 1)
    return points_from_arrays(X, y)


def alternating(m: int, seed: int = 0) -> PointSet:
    """``0, 1, ..., m - 1`` on a line, labels ``0, 1, 0, 1, ...``."""
    return points_from_arrays(np.arange(m).reshape(-1, 1), np.arange(m) % 2)


FAMILIES: dict[str, Callable[[int, int], PointSet]] = {
    "random R^3": random_set,
    "alternating line": alternating,
}


def measure(points: PointSet, method: str, eps: str, do_certify: bool = True) -> dict[str, Any]:
    t0 = time.perf_counter()
    net = build(points, method=method, eps=eps)
    t1 = time.perf_counter()
    certified = certify(net, points).all_certified if do_certify else None
    t2 = time.perf_counter()
    f64, f32 = check(net, points, "float64"), check(net, points, "float32")
    return {
        "ratio": net.depth / max(points.m - 2, 1),
        "f64": f64.agree,
        "f32": f32.agree,
        "m64": f64.min_margin,
        "m32": f32.min_margin,
        "build": t1 - t0,
        "certify": t2 - t1,
        "certified": certified,
    }


def table(sizes: list[int], seeds: int, eps: str) -> None:
    print(f"\n## eps = {eps}\n")
    print(
        "| set | m | method | depth/(m-2) median | worst | float64 right | float32 right "
        "| min float64 margin | build s | certify s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for family, make in FAMILIES.items():
        for m in sizes:
            n = seeds if family.startswith("random") else 1
            for method in METHODS:
                rows = [measure(make(m, s), method, eps) for s in range(n)]
                assert all(r["certified"] for r in rows), "a net failed its certificate"
                ratios = [r["ratio"] for r in rows]
                print(
                    f"| {family} | {m} | {method} | {statistics.median(ratios):.2f} "
                    f"| {max(ratios):.2f} | {_worst(rows, 'f64', m)} | {_worst(rows, 'f32', m)} "
                    f"| {min(r['m64'] for r in rows):.2g} "
                    f"| {statistics.median(r['build'] for r in rows):.2f} "
                    f"| {statistics.median(r['certify'] for r in rows):.2f} |",
                    flush=True,
                )


def _worst(rows: list[dict[str, Any]], key: str, m: int) -> str:
    """The worst labeling's count, and how many labelings were all right."""
    right = sum(r[key] == m for r in rows)
    return f"{min(r[key] for r in rows)}/{m} ({right}/{len(rows)} all)"


def frontier(make: Callable[[int, int], PointSet], method: str, eps: str, cap: int) -> str:
    """Largest m in [4, cap] with every float64 point right (bisection, assumes monotone)."""

    def ok(m: int) -> bool:
        points = make(m, 0)
        return check(build(points, method=method, eps=eps), points, "float64").all_agree

    if ok(cap):
        return f">= {cap}"
    lo, hi = 4, cap  # ok(lo) assumed (every labeling of m <= 10 is tested), not ok(hi)
    while hi - lo > max(1, lo // 20):  # to 5 %
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return f"{lo}" if hi - lo == 1 else f"{lo} (fails at {hi})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[50, 100, 200, 500, 1000])
    parser.add_argument("--seeds", type=int, default=3, help="labelings per random size")
    parser.add_argument("--eps", nargs="+", default=["0", "1e-5"])
    parser.add_argument("--cap", type=int, default=1000, help="largest m the frontier tries")
    parser.add_argument("--no-frontier", action="store_true")
    parser.add_argument("--quick", action="store_true", help="m <= 200, 2 seeds, no frontier")
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.seeds, args.no_frontier = [50, 100, 200], 2, True
    for eps in args.eps if args.sizes else ():
        table(args.sizes, args.seeds, eps)
    if args.no_frontier:
        return
    print("\n## float64 frontier (largest m with every point right)\n")
    print("| set | eps | " + " | ".join(METHODS) + " |")
    print("|---|---|" + "---|" * len(METHODS))
    for family, make in FAMILIES.items():
        for eps in args.eps:
            cells = [frontier(make, method, eps, args.cap) for method in METHODS]
            print(f"| {family} | {eps} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
