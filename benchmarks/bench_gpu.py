"""What a certified net meets on a GPU: points right in the CUDA float backends.

For random points in R^3 with random labels, the LN-G net (``arch="ln-g"``, depth 1), the
circle net (``method="circle"``, its search given 30 CPU seconds) and the width-2 RMSNorm
net (``arch="rms"``) are built and certified; then every float backend (NumPy and PyTorch
on the CPU, and the CUDA ones: ``torch-cuda-float32``, ``torch-cuda-tf32`` with TF32
matrix products, ``torch-cuda-bfloat16`` under bfloat16 autocast) counts the points it
classifies right.  A backend that cannot run here says why in its cell ("not measured: no
GPU" where ``torch.cuda.is_available()`` is False).
Run ``python benchmarks/bench_gpu.py [--m 300] [--markdown docs/tables/gpu.md]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from markdown_table import Markdown, add_option

import lncapacity
from lncapacity import floats

NETS = {
    "LN-G, depth 1": {"arch": "ln-g"},
    "circle (ln3)": {"method": "circle", "budget": 30.0},  # 30 CPU s of search, then runs
    "RMSNorm, width 2": {"arch": "rms"},
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--m", type=int, default=300, help="points (default 300)")
    ap.add_argument("--seed", type=int, default=0)
    add_option(ap)
    args = ap.parse_args()
    md = Markdown(args.markdown)
    rng = np.random.default_rng(args.seed)
    X, y = rng.standard_normal((args.m, 3)), rng.integers(0, 2, args.m)
    points = lncapacity.points_from_arrays(X, y)
    backends = floats.BACKENDS
    md.out(f"Points right of {points.m} random points in R^3 (two random labels), per backend\n")
    md.out("| net | depth | certified | build s | " + " | ".join(backends) + " |")
    md.out("|---|---|---|---|" + "---|" * len(backends))
    for name, kwargs in NETS.items():
        start = time.perf_counter()
        net = lncapacity.build(points, **kwargs)
        seconds = time.perf_counter() - start
        cert = lncapacity.certify(net, points)
        cells = []
        for b in backends:
            why = floats.unavailable(b)
            if why is not None:
                cells.append("not measured: no GPU" if b in floats.CUDA_BACKENDS else why)
                continue
            cells.append(str(floats.check(net, points, b).agree))
        md.out(
            f"| {name} | {net.depth} | {cert.certified}/{points.m} | {seconds:.1f} | "
            + " | ".join(cells)
            + " |"
        )
    md.save()


if __name__ == "__main__":
    main()
