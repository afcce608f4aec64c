"""Multiclass construction, the three methods side by side (issue: multiclass LN-Nets).

For random points in R^3 with k random labels, and scikit-learn's digits (1797
points, 64 dimensions, 10 classes): depth against m - 2 and against the proved
bounds (runs: line runs after the projection minus k, plus warps; pma: m - k
plus warps; circle: used only when shallower than runs; peel: 2 n_c - 1 per class
peeled), build and certify time, and how many points float64 (NumPy and PyTorch) /
float32 get right.  ``method``: the one asked for, ``→`` the one used when it gave
way (circle → runs → peel → pma).  Run
``python benchmarks/bench_multiclass.py [--sizes 200,1000] [--ks 3,5,10] [--seeds 1]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import lncapacity
from lncapacity import floats
from lncapacity.construct.project import project, runs


def random_set(m: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, 3))
    y = rng.integers(0, k, m)
    y[:k] = np.arange(k)  # every class present
    return X, y


def digits() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    d = load_digits()
    return d.data, d.target


def row(name: str, X: np.ndarray, y: np.ndarray, method: str, eps: str) -> str:
    points = lncapacity.points_from_arrays(X, y)
    t0 = time.perf_counter()
    net = lncapacity.build(points, method=method, eps=eps)
    t1 = time.perf_counter()
    cert = lncapacity.certify(net, points)
    t2 = time.perf_counter()
    k = len(points.classes)
    yk = [points.classes.index(label) for label in points.y]
    _, t = project(points.X, yk)
    order = sorted(range(points.m), key=lambda i: t[i])
    r = runs([yk[i] for i in order])
    warps = net.meta.get("warps", 0)
    used = net.meta["method"]
    if used == "peel":  # at most 2 n_c - 1 layers per phase (proofs/multiclass.md §8)
        bound = sum(2 * points.y.count(c) - 1 for c in net.meta["phases"])
    else:  # circle: used only when shallower than runs, so runs' bound holds for it too
        bound = (r - k if used in ("runs", "circle") else points.m - k) + warps
    f64 = floats.check(net, points, "float64")
    f32 = floats.check(net, points, "float32")
    t64 = (
        f"{(c := floats.check(net, points, 'torch-float64')).agree}/{c.total}"
        if floats.have_torch()
        else "-"
    )
    return (
        f"| {name} | {points.m} | {k} | {method if used == method else f'{method} → {used}'} "
        f"| {eps} | {net.depth} | {net.depth / max(points.m - 2, 1):.2f} | {bound} | {warps} "
        f"| {cert.certified}/{points.m} | {f64.agree}/{f64.total} | {t64} "
        f"| {f32.agree}/{f32.total} "
        f"| {t1 - t0:.2f} | {t2 - t1:.2f} |"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="200,1000")
    ap.add_argument("--ks", default="3,5,10")
    ap.add_argument("--methods", default="circle,runs,pma")
    ap.add_argument("--eps", default="0")
    ap.add_argument("--no-digits", action="store_true")
    ap.add_argument("--seeds", type=int, default=1, help="random sets per (m, k)")
    a = ap.parse_args()
    print(
        "| set | m | k | method | eps | depth | depth/(m-2) | proved bound | warps "
        "| certified | float64 right | torch float64 right | float32 right | build s | certify s |"
    )
    print("|---" * 15 + "|")
    for m in map(int, a.sizes.split(",")):
        for k in map(int, a.ks.split(",")):
            for s in range(a.seeds):
                X, y = random_set(m, k, seed=m + k + s)
                name = "random R^3" + (f" (seed {m + k + s})" if a.seeds > 1 else "")
                for method in a.methods.split(","):
                    print(row(name, X, y, method, a.eps), flush=True)
    if not a.no_digits:
        X, y = digits()
        for method in a.methods.split(","):
            print(row("digits", X, y, method, a.eps), flush=True)


if __name__ == "__main__":
    main()
