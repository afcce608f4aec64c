"""Construct + certify timings for the binary PMA, and a naive exact SymPy baseline.

Prints two tables:

1. random binary point sets in R^3 (m = 10, 100, 1000 by default): depth used,
   build and certify seconds, certificate precision, float64/float32 agreement;
2. the same construction done naively in exact arithmetic with nested SymPy
   radicals (the paper's fold with exact midpoints, exact equality tests), for
   m = 5, 6, 7 with a timeout, side by side with lncapacity on the same points,
   and the ratio of the two times.

Usage: python benchmarks/bench_construct.py [--sizes 10 100 1000] [--sympy 5 6 7]
       [--timeout 120] [--seed 0]
"""

from __future__ import annotations

import argparse
import multiprocessing
import time

import numpy as np
import sympy as sp

from lncapacity import build, certify, points_from_arrays
from lncapacity.construct import project, runs
from lncapacity.floats import check


def random_set(m: int, seed: int):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, 3))
    y = rng.integers(0, 2, m)
    y[:2] = [0, 1]
    return points_from_arrays(X, y)


def alternating(m: int):
    """The worst case: m collinear points with alternating labels (m - 2 folds)."""
    return points_from_arrays([[k] for k in range(m)], [k % 2 for k in range(m)])


def ours(points) -> tuple[float, float, object, object]:
    t0 = time.perf_counter()
    net = build(points, method="runs")
    t1 = time.perf_counter()
    cert = certify(net, points)
    t2 = time.perf_counter()
    assert cert.all_certified
    return t1 - t0, t2 - t1, net, cert


def sympy_pma(t: list, y: list[int]) -> int:
    """The paper's binary PMA in exact arithmetic: nested radicals, exact merges.

    Fold at the exact midpoint c of the smallest value and its nearest distinct
    same-label value, with the paper's normalisation p -> D / sqrt((p - c)^2 + D^2);
    equal values are detected exactly.  Returns the number of folds.
    """
    vals = [sp.Rational(int(q.p), int(q.q)) for q in t]
    folds = 0
    while True:
        order = sorted(range(len(vals)), key=lambda k: sp.N(vals[k], 80))
        groups: list[list[int]] = []
        for k in order:
            if groups and sp.simplify(vals[k] - vals[groups[-1][0]]) == 0:
                groups[-1].append(k)
            else:
                groups.append([k])
        labels = [y[g[0]] for g in groups]
        if runs(labels) <= 2:
            return folds
        j = next(i for i in range(1, len(groups)) if labels[i] == labels[0])
        p_i, p_j = vals[groups[0][0]], vals[groups[j][0]]
        c, D = (p_i + p_j) / 2, (p_j - p_i) / 2
        vals = [D / sp.sqrt((v - c) ** 2 + D**2) for v in vals]
        folds += 1


def _sympy_worker(t, y, queue) -> None:
    start = time.perf_counter()
    folds = sympy_pma(t, y)
    queue.put((time.perf_counter() - start, folds))


def timed_sympy(points, timeout: float) -> tuple[float | None, int | None]:
    y = list(points.y)
    _, t = project(points.X, y)
    queue: multiprocessing.Queue = multiprocessing.Queue()
    proc = multiprocessing.Process(target=_sympy_worker, args=(t, y, queue))
    proc.start()
    proc.join(timeout)
    if proc.is_alive():
        proc.terminate()
        proc.join()
        return None, None
    return queue.get()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[10, 100, 1000])
    ap.add_argument("--sympy", type=int, nargs="*", default=[5, 6, 7])
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    print("Random binary sets in R^3 (lncapacity, method pma, eps 0)")
    print(
        f"{'m':>6} {'depth':>6} {'m-2':>6} {'build s':>9} {'certify s':>10} {'total s':>8}"
        f" {'bits':>6} {'f64 ok':>8} {'f32 ok':>8}"
    )
    for m in args.sizes:
        points = random_set(m, args.seed + m)
        tb, tc, net, cert = ours(points)
        f64, f32 = check(net, points, "float64"), check(net, points, "float32")
        print(
            f"{m:>6} {net.depth:>6} {m - 2:>6} {tb:>9.3f} {tc:>10.3f} {tb + tc:>8.3f}"
            f" {cert.precision:>6} {f64.agree:>4}/{m:<3} {f32.agree:>4}/{m:<3}",
            flush=True,
        )

    print(
        "\nNaive exact SymPy construction vs lncapacity (build + certify),"
        f" timeout {args.timeout:g} s"
    )
    print(f"{'set':>22} {'m':>3} {'folds':>6} {'sympy s':>10} {'ours s':>9} {'ratio':>10}")
    cases = [("random in R^3", random_set(m, args.seed + 1000 + m)) for m in args.sympy]
    cases += [("collinear alternating", alternating(m)) for m in args.sympy]
    for name, points in cases:
        m = points.m
        tb, tc, net, _ = ours(points)
        ts, _ = timed_sympy(points, args.timeout)
        mine = tb + tc
        shown = f">{args.timeout:g}" if ts is None else f"{ts:.3f}"
        ratio = f">{args.timeout / mine:.0f}x" if ts is None else f"{ts / mine:.0f}x"
        print(f"{name:>22} {m:>3} {net.depth:>6} {shown:>10} {mine:>9.4f} {ratio:>10}", flush=True)


if __name__ == "__main__":
    main()
