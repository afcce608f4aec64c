"""Certifying a trained LN-Net: how long, and which arithmetic decides.

Trains an LN-only MLP (``Linear -> LayerNorm -> ... -> Linear``, PyTorch float32,
seed 0) on two interleaved spirals, imports it exactly with
``lncapacity.from_torch``, and certifies it on ``--points`` points (the issue's
target: width 16, depth 8, 10,000 points in under a minute on 2 cores):

* the float64 interval pass alone (:func:`lncapacity.certify.interval_pass`),
* ``certify`` as shipped (the interval pass, then ``arb`` for what it leaves),
* ``certify`` in ``arb`` balls only (``intervals=False``), on all points,

and prints the verdict counts and the worst disagreement of PyTorch's float32
scores with the exact ones in ulps.

    python benchmarks/bench_trained.py [--points 10000] [--width 16] [--depth 8]
"""

from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np
import torch

from lncapacity import certify, points_from_arrays
from lncapacity.certify import interval_pass
from lncapacity.floats import check
from lncapacity.interop import from_torch


def spirals(m: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two interleaved spirals with a little noise, float32 values."""
    rng = np.random.default_rng(seed)
    t = rng.uniform(0.25, 3.0, m) * math.pi
    label = rng.integers(0, 2, m)
    r = t / (3.0 * math.pi)
    angle = t + math.pi * label
    X = np.stack([r * np.cos(angle), r * np.sin(angle)], axis=1)
    X = X + rng.normal(scale=0.02, size=X.shape)
    return X.astype(np.float32).astype(np.float64), label


def train(X: np.ndarray, y: np.ndarray, width: int, depth: int, steps: int) -> torch.nn.Module:
    torch.manual_seed(0)
    mods: list[torch.nn.Module] = [torch.nn.Linear(2, width)]
    for i in range(depth):
        mods += [torch.nn.LayerNorm(width), torch.nn.Linear(width, 2 if i == depth - 1 else width)]
    model = torch.nn.Sequential(*mods)
    opt = torch.optim.Adam(model.parameters(), lr=0.003)
    Xt, yt = torch.tensor(X, dtype=torch.float32), torch.tensor(y)
    for _ in range(steps):
        batch = torch.randint(0, len(X), (256,))
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(Xt[batch]), yt[batch]).backward()
        opt.step()
    return model.eval().requires_grad_(False)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--points", type=int, default=10_000)
    p.add_argument("--width", type=int, default=16)
    p.add_argument("--depth", type=int, default=8)
    p.add_argument("--steps", type=int, default=1500)
    p.add_argument("--workers", type=int, default=2)
    args = p.parse_args()
    torch.set_num_threads(1)
    X, y = spirals(args.points)
    t0 = time.perf_counter()
    model = train(X, y, args.width, args.depth, args.steps)
    t_train = time.perf_counter() - t0
    net = from_torch(model)
    points = points_from_arrays(X, y)
    print(
        f"net: width {args.width}, depth {args.depth}, trained {args.steps} Adam steps "
        f"({t_train:.1f} s, float32); {points.m} points; {args.workers} workers, "
        f"{os.cpu_count()} cores"
    )
    rows = []

    t0 = time.perf_counter()
    labels = [net.classes.index(v) for v in points.y]
    with np.errstate(all="ignore"):
        mlo, mhi, zlo, zhi = interval_pass(net.folded(), points.X, labels)
    t = time.perf_counter() - t0
    decided = int(np.sum((mlo > 0) | (mhi < 0)))
    width = float(np.median((zhi - zlo) / np.maximum(np.abs(zhi), 1e-300)))
    rows.append(("interval pass only", t, f"{decided} decided, median relative width {width:.1e}"))

    t0 = time.perf_counter()
    cert = certify(net, points, workers=args.workers, scores=True)
    t = time.perf_counter() - t0
    by_arb = sum(p.precision > 53 for p in cert.points)
    rows.append(
        (
            "certify (intervals, then arb)",
            t,
            f"right {cert.right}, wrong {cert.wrong}, undecided {cert.undecided}; {by_arb} by arb",
        )
    )

    t0 = time.perf_counter()
    slow = certify(net, points, workers=args.workers, intervals=False)
    t = time.perf_counter() - t0
    same = [p.verdict for p in slow.points] == [p.verdict for p in cert.points]
    rows.append(("certify, arb balls only", t, f"{slow.precision} bits; same verdicts: {same}"))

    t0 = time.perf_counter()
    c32 = check(net, points, "torch-float32", cert.scores)
    t = time.perf_counter() - t0
    rows.append(
        (
            "torch-float32 vs exact",
            t,
            f"{c32.agree}/{c32.total} agree with labels, worst {c32.max_ulps:.3g} ulp",
        )
    )

    print(f"{'step':<32} {'seconds':>8}  result")
    for name, secs, what in rows:
        print(f"{name:<32} {secs:>8.2f}  {what}")


if __name__ == "__main__":
    main()
