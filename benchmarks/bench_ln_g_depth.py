"""LN-G at depth 2 and 3 (issue 30, part 3): ``build(..., arch="ln-g", depth=d)`` at scale.

For random points in R^3 (standard normal, ``k`` random labels, every class present) and
scikit-learn's digits (1797 points, 64 dimensions, 10 classes): label boundaries ``b`` along
the chosen projection (a depth-1 net has ``b + 2`` groups), blocks, groups by layer and in
all (against the issue's target ``4 sqrt(m)``), total width, parameters, build time, the
library's ``certify`` (certified points and time), and how many points the NumPy and
PyTorch backends get right in float64 and float32.  The construction and its margin:
proofs/ln_g_depth.md.
Run ``python benchmarks/bench_ln_g_depth.py [--sizes 100,1000,10000] [--ks 2,10]
[--depths 2,3] [--no-digits] [--markdown docs/tables/ln_g_depth.md]``.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from bench_ln_g import random_set  # the same sets as the depth-1 table
from markdown_table import Markdown, add_option

import lncapacity
from lncapacity import floats
from lncapacity.theory.capacity import parameter_count

BACKENDS = ("float64", "float32", "torch-float64", "torch-float32")


def digits() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    d = load_digits()
    return d.data.astype(int), d.target


def row(name: str, X: np.ndarray, y: np.ndarray, depth: int, eps: str) -> str:
    points = lncapacity.points_from_arrays(X, y)
    t0 = time.perf_counter()
    net = lncapacity.build(points, arch="ln-g", depth=depth, eps=eps)
    t1 = time.perf_counter()
    cert = lncapacity.certify(net, points)
    t2 = time.perf_counter()
    counts = []
    for backend in BACKENDS:
        if backend.startswith("torch") and not floats.have_torch():
            counts.append("-")
            continue
        got = floats.check(net, points, backend)
        counts.append(f"{got.agree}/{got.total}")
    meta = net.meta
    groups = meta["groups"]
    target = 4 * math.sqrt(points.m)
    by_layer = "+".join(map(str, meta["groups_by_layer"]))
    return (
        f"| {name} | {points.m} | {len(points.classes)} | {depth} | {meta['boundaries']} "
        f"| {meta['boundaries'] + 2} | {meta['blocks']} | {by_layer} | {groups} "
        f"({'<=' if groups <= target else '>'} {target:.0f}) | {sum(net.widths)} "
        f"| {parameter_count(net)} | {t1 - t0:.1f} | {cert.certified}/{points.m} in {t2 - t1:.1f} "
        f"(margin {cert.min_margin:.3f}) | {' | '.join(counts)} |"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="100,1000,10000")
    ap.add_argument("--ks", default="2,10")
    ap.add_argument("--depths", default="2,3")
    ap.add_argument("--eps", default="0")
    ap.add_argument("--no-digits", action="store_true")
    add_option(ap)
    a = ap.parse_args()
    md = Markdown(a.markdown)
    head = (
        "| set | m | k | depth | boundaries b | depth-1 groups (b + 2) | blocks B "
        "| groups by layer | groups (target 4 sqrt m) | total width | parameters | build s "
        "| certify s | float64 right | float32 right | torch float64 right "
        "| torch float32 right |"
    )
    lines = [head, "|---" * 17 + "|"]
    for line in lines:
        print(line)

    def emit(line: str) -> None:
        print(line, flush=True)
        lines.append(line)

    depths = list(map(int, a.depths.split(",")))
    for m in map(int, a.sizes.split(",")):
        for k in map(int, a.ks.split(",")):
            X, y = random_set(m, k, seed=m + k)
            for depth in depths:
                emit(row("random R^3", X, y, depth, a.eps))
    if not a.no_digits:
        X, y = digits()
        for depth in depths:
            emit(row("digits", X, y, depth, a.eps))
    note = "\nMargins: proved at least (7/16) sqrt 6 = 1.072 (proofs/ln_g_depth.md, Theorem 3)."
    print(note)
    for line in [*lines, note]:
        md.add(line)
    md.save()


if __name__ == "__main__":
    main()
