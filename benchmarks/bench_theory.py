"""Timings of the theory toolkit: ``trace`` on large nets, the Hessian measure to d = 1024.

Prints two Markdown tables:

1. ``trace`` (SSR and LSSR after every layer, certified): random binary sets in
   R^3 (the sets of ``bench_methods.py``), m = 100, 300, 1000 by default, with
   the net's depth, the build time (not part of trace), the trace time, the
   working precision reached, the input's exact LSSR and the certified LSSR
   after the last LayerNorm layer, and how many layers certifiably lowered it.
2. The Hessian measure of LN and LN-G (g = d/4) at a Gaussian input, for
   d = 16 ... 1024: the exact closed form (rational arithmetic at the exact
   input), the float64 closed form, and PyTorch automatic differentiation
   (forward over reverse, O(d^3): up to ``--autodiff-max``, default 256), with
   the largest relative difference between the exact value and each float path.

    python benchmarks/bench_theory.py                      # both tables
    python benchmarks/bench_theory.py --sizes 1000 --dims  # trace only, m = 1000
    python benchmarks/bench_theory.py --dims 16 64 256 1024 --autodiff-max 64 \
        --markdown docs/tables/theory.md              # the manual's table (~1 min)
"""

from __future__ import annotations

import argparse
import itertools
import time

import numpy as np
from bench_methods import random_set  # the same sets (this folder is on sys.path when run)
from markdown_table import Markdown, add_option

from lncapacity import build
from lncapacity.arith import exact
from lncapacity.theory.hessian import ln_hessian, ln_hessian_float
from lncapacity.theory.net_trace import START_PRECISION, trace

MD = Markdown(None)


def out(text: str) -> None:
    """Print a part of the tables, and keep it for ``--markdown`` (headings there in bold)."""
    print(text, flush=True)
    for line in text.split("\n"):
        MD.add(f"**{line[3:]}**" if line.startswith("## ") else line)


def trace_table(sizes: list[int]) -> None:
    out("\n## trace: SSR and LSSR after every layer (random binary sets in R^3, runs nets)\n")
    out(
        "| m | depth | build s | trace s | start bits | input LSSR (exact) "
        "| last LN layer LSSR (certified) | layers lowering LSSR |"
    )
    out("|---|---|---|---|---|---|---|---|")
    for m in sizes:
        points = random_set(m, 0)
        t0 = time.perf_counter()
        net = build(points, method="runs")
        t1 = time.perf_counter()
        layers = trace(net, points)
        t2 = time.perf_counter()
        first, last = layers[0].lssr, layers[-2].lssr
        drops = sum(b.lssr.hi < a.lssr.lo for a, b in itertools.pairwise(layers[:-1]))
        lo, hi = last.printable_interval(6) if not last.is_exact else (str(last), str(last))
        out(
            f"| {m} | {net.depth} | {t1 - t0:.2f} | {t2 - t1:.2f} "
            f"| {START_PRECISION + 2 * net.depth} | {float(first):.6f} "
            f"| [{lo}, {hi}] | {drops} |"
        )


def hessian_table(dims: list[int], autodiff_max: int) -> None:
    out("\n## Hessian measure of LN and LN-G (g = d/4), one Gaussian input\n")
    out(
        "| d | exact closed form s | H(LN-G)/H(LN) | float64 closed form s | rel. diff "
        "| autodiff s | rel. diff |"
    )
    out("|---|---|---|---|---|---|---|")
    for d in dims:
        g = d // 4
        x = np.random.default_rng(d).standard_normal(d)
        xq = [exact(float(v)) for v in x]
        t0 = time.perf_counter()
        h_ln, h_g = ln_hessian(xq, 1), ln_hessian(xq, g)
        t1 = time.perf_counter()
        f_ln, f_g = float(ln_hessian_float(x, 1)), float(ln_hessian_float(x, g))
        t2 = time.perf_counter()
        rel = max(abs(f_ln / float(h_ln) - 1), abs(f_g / float(h_g) - 1))
        auto = "-", "-"
        if d <= autodiff_max:
            try:
                from lncapacity.theory.hessian import hessian_measure, layer_norm_groups

                t3 = time.perf_counter()
                a_g = hessian_measure(lambda t, g=g: layer_norm_groups(t, g, 0.0, True), x)
                t4 = time.perf_counter()
                auto = f"{t4 - t3:.2f}", f"{abs(a_g / float(h_g) - 1):.1e}"
            except ImportError:
                auto = "no torch", "-"
        out(
            f"| {d} | {t1 - t0:.4f} | {float(h_g / h_ln):.4f} | {t2 - t1:.5f} | {rel:.1e} "
            f"| {auto[0]} | {auto[1]} |"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[100, 300, 1000])
    ap.add_argument("--dims", type=int, nargs="*", default=[16, 64, 128, 256, 512, 1024])
    ap.add_argument("--autodiff-max", type=int, default=256)
    add_option(ap)
    args = ap.parse_args()
    MD.path = args.markdown
    if args.sizes:
        trace_table(args.sizes)
    if args.dims:
        hessian_table(args.dims, args.autodiff_max)
    MD.save()


if __name__ == "__main__":
    main()
