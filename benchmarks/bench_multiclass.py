"""Multiclass construction, the three methods side by side (issue: multiclass LN-Nets).

For random points in R^3 with k random labels, and scikit-learn's digits (1797
points, 64 dimensions, 10 classes): depth against m - 2 and against the proved
bounds (runs: line runs after the projection minus k, plus warps; pma: m - k
plus warps; circle: used only when shallower than runs; peel: 2 n_c - 1 per class
peeled), build and certify time, and how many points float64 (NumPy and PyTorch) /
float32 get right.  ``method``: the one asked for, ``→`` the one used when it gave
way (circle → runs → peel → pma).  Run
``python benchmarks/bench_multiclass.py [--sizes 200,1000] [--ks 3,5,10] [--seeds 1]``.

``--targets`` prints issue 33 §3's targets instead, each marked met or missed: by default
(``build`` without a method) a float64-faithful net for random sets with ``k = 10`` at
``m = 200`` and ``k = 3`` at ``m = 1000``, and a certified net of at most 300 layers for
digits' 10 classes; with the circle readout (``arcs``: every class one arc; ``arcs-lp``: the
linear program's, proofs/multiclass.md §9) and the boundaries left; ``--markdown`` adds
the provenance line of docs/tables/multiclass_arcs.md.  ``--readouts``: the circle search's
depth on the random sets of ``--sizes``/``--ks`` with and without the LP readout.
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


TARGETS = (("random R^3", 200, 10), ("random R^3", 1000, 3), ("digits", 1797, 10))
DIGITS_DEPTH = 300
"""Issue 33 §3: digits' 10 classes with a width-3 net of at most this many layers."""


def target_row(name: str, X: np.ndarray, y: np.ndarray, seed: str) -> str:
    """One target set built by default: depth, method, readout, certified, float64, met."""
    points = lncapacity.points_from_arrays(X, y)
    t0 = time.process_time()
    net = lncapacity.build(points)
    t1 = time.process_time()
    cert = lncapacity.certify(net, points)
    f64 = floats.check(net, points, "float64")
    t64 = floats.check(net, points, "torch-float64") if floats.have_torch() else f64
    faithful = f64.all_agree and t64.all_agree
    if name == "digits":
        met = cert.all_certified and net.depth <= DIGITS_DEPTH
        target = f"certified, depth <= {DIGITS_DEPTH}"
    else:
        met = cert.all_certified and faithful
        target = "float64-faithful"
    bounds = net.meta.get("circle_boundaries") or [None]
    return (
        f"| {name} | {seed} | {points.m} | {len(points.classes)} | {net.meta['method']} "
        f"| {net.readout.meta.get('kind', '-')} | {bounds[-1] if bounds[-1] is not None else '-'} "
        f"| {net.depth} | {cert.certified}/{points.m} | {f64.agree}/{f64.total} "
        f"| {t64.agree}/{t64.total} | {t1 - t0:.0f} | {target} | {'met' if met else 'missed'} |"
    )


def targets(seeds: int, markdown: bool) -> None:
    if markdown:
        import os
        import subprocess

        commit = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
        print(
            "<!-- recorded table: not regenerated by the docs build -->\n"
            f"*Recorded:* `PYTHONPATH=. python benchmarks/bench_multiclass.py --targets "
            f"--seeds {seeds} --markdown` at commit `{commit}`, load average "
            f"{os.getloadavg()[0]:.1f} at the start (a shared 2-core machine: CPU seconds "
            "under load). Data seeds `m + k + s`.\n"
        )
    print(
        "| set | data seed | m | k | method used | readout | boundaries left | depth "
        "| certified | float64 right | torch float64 right | build CPU s | target | |"
    )
    print("|---" * 14 + "|")
    for name, m, k in TARGETS:
        if name == "digits":
            print(target_row(name, *digits(), "-"), flush=True)
            continue
        for s in range(seeds):
            X, y = random_set(m, k, seed=m + k + s)
            print(target_row(name, X, y, str(m + k + s)), flush=True)


def readouts(sizes: list[int], ks: list[int], seeds: int) -> None:
    """The circle search's depth with and without the LP readout (proofs/multiclass.md §9)
    on the same random sets: where it finishes, how many layers stopping at the first state
    the LP reads saves."""
    from lncapacity.construct.circle import circle_state

    print("| m | k | data seed | one arc a class: depth | LP readout: depth (boundaries) |")
    print("|---" * 5 + "|")
    for m in sizes:
        for k in ks:
            for s in range(seeds):
                X, y = random_set(m, k, seed=m + k + s)
                got = []
                for arcs in (False, True):
                    st = circle_state(X, y, 0.0, max_depth=m, seed=0, arcs=arcs)
                    got.append("none" if st is None else f"{len(st.layers)} ({st.boundaries})")
                print(f"| {m} | {k} | {m + k + s} | {got[0].split()[0]} | {got[1]} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="200,1000")
    ap.add_argument("--ks", default="3,5,10")
    ap.add_argument("--methods", default="circle,runs,pma")
    ap.add_argument("--eps", default="0")
    ap.add_argument("--no-digits", action="store_true")
    ap.add_argument("--seeds", type=int, default=1, help="random sets per (m, k)")
    ap.add_argument("--targets", action="store_true", help="issue 33 §3's targets, met or not")
    ap.add_argument("--markdown", action="store_true", help="with --targets: the recorded table")
    ap.add_argument(
        "--readouts", action="store_true", help="circle depth with and without the LP readout"
    )
    a = ap.parse_args()
    if a.readouts:
        readouts(list(map(int, a.sizes.split(","))), list(map(int, a.ks.split(","))), a.seeds)
        return
    if a.targets:
        targets(a.seeds, a.markdown)
        return
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
