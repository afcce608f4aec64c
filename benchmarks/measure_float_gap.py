"""The measurements quoted in proofs/float_gap.md (not collected by pytest: it takes minutes).

Usage: python benchmarks/measure_float_gap.py [--quick]   (with lncapacity importable)

1. The paper's exact PMA on ``m`` equally spaced points with alternating labels
   (exact midpoints, offset ``D / sqrt 3``; values as ``arb`` balls): the smallest
   different-label gap after each layer relative to the layer's amplitude, and
   the same for the package's constructions (``method="pma"``, ``"runs"``).
2. Where float64 / float32 start to misclassify: ``lncapacity.floats.check`` on
   nets built with ``lncapacity.build``, against the prediction "fails when the
   smallest relative gap reaches ``L u``".
"""

from __future__ import annotations

import itertools
import math
import sys
import time

import numpy as np
from flint import arb, ctx, fmpq

from lncapacity import build, points_from_arrays
from lncapacity.arith import precision
from lncapacity.construct import Chain, fold_layer
from lncapacity.construct.build import METHODS
from lncapacity.fileformat import read_vector
from lncapacity.floats import check

UNIT = {"float64": 53, "float32": 24}  # -log2 of the unit roundoff


def exact_pma(m: int) -> list[arb]:
    """Relative gaps of the paper's PMA on 0..m-1, alternating labels (index 0: the input)."""
    old, ctx.prec = ctx.prec, 4 * m + 160
    try:
        vals = [arb(k) for k in range(m)]  # sorted, alternating labels
        rel = [min(b - a for a, b in itertools.pairwise(vals)) / (m - 1)]
        amplitude = 3 * arb(2).sqrt()
        while len(vals) > 2:
            c, half = (vals[0] + vals[2]) / 2, (vals[2] - vals[0]) / 2
            beta = half / arb(3).sqrt()
            new = [6 * beta / ((2 * (p - c) ** 2 + 6 * beta**2) / 3).sqrt() for p in vals]
            # the new order: the far values reversed, the merged pair, the between value
            vals = [new[k] for k in range(len(vals) - 1, 2, -1)] + [new[0], new[1]]
            assert all(a < b for a, b in itertools.pairwise(vals))  # certified, still alternating
            rel.append(min(b - a for a, b in itertools.pairwise(vals)) / amplitude)
        return rel
    finally:
        ctx.prec = old


def chain_gaps(method: str, m: int) -> list[float]:
    """log2 of the relative gaps of the package's construction (index 0: the input)."""
    y = [k % 2 for k in range(m)]
    t = [fmpq(k) for k in range(m)]
    chain = Chain(t, fmpq(0))
    METHODS[method](chain, y, None)
    out = []
    with precision(max(chain.prec, 8 * m + 160)):
        vals = [arb(x) for x in t]
        amplitude = arb(m - 1)
        for step in [None, *chain.steps]:
            if step is not None:
                f = step.ball_map(fmpq(0))
                vals = [f(p) for p in vals]
                alpha, gamma = (arb(x) for x in step.read)
                amplitude = (18 * alpha**2 + 6 * gamma**2).sqrt()
            order = sorted(range(m), key=lambda k: vals[k].mid())
            gap = min(vals[j] - vals[i] for i, j in itertools.pairwise(order) if y[i] != y[j])
            assert gap > 0
            out.append(math.log2(float((gap / amplitude).mid())))
    return out


def error_over_gap(method: str, dtype: str, m: int) -> tuple[list[float], list[float]]:
    """Per layer: log2 max_i |float error of p_i| / (distance of p_i to the other label),
    and log2(u / g) with g the smallest relative gap of that layer."""
    y = [k % 2 for k in range(m)]
    t = [fmpq(k) for k in range(m)]
    chain = Chain(t, fmpq(0))
    METHODS[method](chain, y, None)
    dt = {"float64": np.float64, "float32": np.float32}[dtype]
    h = np.array([[float(x)] for x in t], dtype=dt)
    read = [fmpq(1)]
    ratio, expected = [], []
    with precision(max(chain.prec, 8 * m + 160)):
        vals = [arb(x) for x in t]
        for step in chain.steps:
            # the layer in floats, exactly as lncapacity.floats does it
            layer = fold_layer(read, step)
            W = np.array([[float(w) for w in row] for row in layer.W], dtype=dt)
            b = np.array([float(v) for v in layer.b], dtype=dt)
            z = h @ W.T + b
            z = z - z.mean(axis=1, keepdims=True)
            h = z / np.sqrt((z * z).mean(axis=1, keepdims=True))
            read = list(read_vector(step.read))
            p = (h @ np.array([float(a) for a in read], dtype=dt)).astype(np.float64)
            f = step.ball_map(fmpq(0))
            vals = [f(v) for v in vals]
            exact = np.array([float(v.mid()) for v in vals])
            alpha, gamma = (float(x) for x in step.read)
            amplitude = math.sqrt(18 * alpha**2 + 6 * gamma**2)
            dist = np.array(
                [
                    min(abs(float((vals[j] - vals[i]).mid())) for j in range(m) if y[j] != y[i])
                    for i in range(m)
                ]
            )
            ratio.append(math.log2(float(np.max(np.abs(p - exact) / dist))))
            expected.append(-UNIT[dtype] - math.log2(dist.min() / amplitude))
    return ratio, expected


def slope(ys: list[float]) -> float:
    """Least-squares slope of ys against 0, 1, 2, ..."""
    n = len(ys)
    xm, ym = (n - 1) / 2, sum(ys) / n
    return sum((k - xm) * (v - ym) for k, v in enumerate(ys)) / sum((k - xm) ** 2 for k in range(n))


def float_sweep(method: str, dtype: str, ms: list[int]) -> list[tuple[int, int]]:
    out = []
    for m in ms:
        X, y = [[k] for k in range(m)], [k % 2 for k in range(m)]
        net = build(X, y, method=method)
        out.append((m, check(net, points_from_arrays(X, y), dtype).agree))
    return out


def show_sweep(method: str, dtype: str, ms: list[int]) -> None:
    res = float_sweep(method, dtype, ms)
    bad = [m for m, ok in res if ok < m]
    print(f"  {method} {dtype}: " + " ".join(f"{m}:{ok}" for m, ok in res))
    print(
        f"    first failure m = {min(bad) if bad else None}; passes: "
        f"{[m for m, ok in res if ok == m and bad and m > min(bad)]} beyond it"
    )


def main(quick: bool) -> None:
    t0 = time.time()
    print("1. exact PMA, alternating labels: log2(smallest relative gap)")
    print("   m    L  input  layer1  min(layer)  loss in layers 2..L-2 (bits/layer)  log2(L/min)")
    sizes = [12, 20, 40, 60, 80, 100, 120, 140, 160, 200] + ([] if quick else [300])
    mins = {}
    for m in sizes:
        lg = [math.log2(float(g.mid())) for g in exact_pma(m)]
        L = len(lg) - 1
        k = min(range(1, L + 1), key=lg.__getitem__)
        mins[m] = lg[k]
        mid = slope(lg[2 : L - 1]) if L > 5 else float("nan")
        print(
            f"  {m:4d} {L:4d} {lg[0]:6.2f} {lg[1]:7.2f} {lg[k]:7.2f} ({k:3d}) {-mid:9.3f}"
            f" {math.log2(L) - lg[k]:14.2f}"
        )
    fit = [(m, mins[m]) for m in sizes if m >= 60]
    n = len(fit)
    xm, ym = sum(m for m, _ in fit) / n, sum(v for _, v in fit) / n
    kappa = sum((m - xm) * (v - ym) for m, v in fit) / sum((m - xm) ** 2 for m, _ in fit)
    icpt = ym - kappa * xm
    print(f"   fit (m >= 60): min log2 gap = {kappa:.4f} m {icpt:+.2f}")
    for dtype, bits in UNIT.items():
        # fails when min gap = C (m - 2) u: kappa m + icpt = log2 C + log2(m - 2) - bits
        for logc in (0, 2.6):
            m = next(m for m in range(4, 2000) if kappa * m + icpt < logc + math.log2(m - 2) - bits)
            print(f"   predicted {dtype} frontier (C = 2^{logc}): m = {m}")

    print("2. package PMA vs exact PMA, m = 40: largest |difference| of log2 gaps")
    a = chain_gaps("pma", 40)
    b = [math.log2(float(g.mid())) for g in exact_pma(40)]
    print(
        f"   {max(abs(x - z) for x, z in zip(a, b, strict=True)):.4f} bits over {len(a) - 1} layers"
    )

    print("3. runs (default): log2(smallest relative gap)")
    print("   m    L  input  layers 1-6 ...  min  slope of layers 10..L-5 (+ = gaining)  last")
    for m in [12, 50, 100, 150, 200] + ([] if quick else [300]):
        lg = chain_gaps("runs", m)
        L = len(lg) - 1
        later = slope(lg[10 : L - 5]) if L > 20 else float("nan")
        print(
            f"  {m:4d} {L:4d} {lg[0]:6.2f} {[round(v, 1) for v in lg[1:7]]} {min(lg):7.2f}"
            f" {later:+8.4f} {lg[-1]:7.2f}"
        )

    print("4. float frontiers (agreeing points out of m)")
    show_sweep("pma", "float32", list(range(24, 45)))
    show_sweep("pma", "float64", list(range(110, 141)))
    show_sweep("runs", "float32", [50, 100, 110, 120, 130, 140, 150, 160, 170, 180, 190, 200])
    show_sweep("runs", "float64", [50, 100, 200, 300] + ([] if quick else [400, 600]))
    print("5. float error / distance to the other label, per layer (log2), vs log2(u / g)")
    for method, dtype, m in (("pma", "float32", 36), ("runs", "float32", 150)):
        ratio, expected = error_over_gap(method, dtype, m)
        k = max(range(len(expected)), key=expected.__getitem__)
        print(
            f"  {method} {dtype} m = {m}: after layer 1 {ratio[0]:.1f} (u/g {expected[0]:.1f});"
            f" at the smallest gap (layer {k + 1}) {ratio[k]:.1f} (u/g {expected[k]:.1f});"
            f" largest {max(ratio):.1f}"
        )

    print(f"({time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main("--quick" in sys.argv[1:])
