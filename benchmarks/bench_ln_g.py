"""LN-G at depth 1 (issue 30, part 2): ``build(..., arch="ln-g")`` at scale.

For random points in R^3 (standard normal, ``k`` random labels, every class present) and
scikit-learn's digits (1797 points, 64 dimensions, 10 classes), and two Gaussian clusters
(structured data): label boundaries along the chosen projection (and the median and the most
over the library's candidate directions), groups of 3 and width, build time, certificate
time (by the margin theorem, ``groups.step_certificate``, exact; and by the library's
``certify``), the float rooms ``delta / E`` of proofs/ln_g_steps.md §5 (``*``: proved right
by Theorem 6), and how many points the library's NumPy and PyTorch backends get right in
float64 and float32.
Run ``python benchmarks/bench_ln_g.py [--sizes 2000,10000] [--ks 2,10] [--no-digits]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import lncapacity
from lncapacity import floats
from lncapacity.construct.groups import float_boundaries, step_certificate
from lncapacity.construct.project import directions
from lncapacity.reproducible import matmul


def random_set(m: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, 3))
    y = rng.integers(0, k, m)
    y[:k] = np.arange(k)  # every class present
    return X, y


def clusters(m: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Two Gaussian clusters 6 apart, a class each, 1% of each cluster relabelled."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, 3))
    y = (np.arange(m) < m // 2).astype(int)
    X[: m // 2, 0] += 3
    X[m // 2 :, 0] -= 3
    flip = rng.choice(m, m // 100, replace=False)
    y[flip] = 1 - y[flip]
    return X, y


def digits() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    d = load_digits()
    return d.data, d.target


def right(z: np.ndarray, net: lncapacity.LNNet, y: np.ndarray) -> int:
    idx = np.array([net.classes.index(label) for label in y])
    own = z[np.arange(len(y)), idx].astype(np.float64)
    zz = z.astype(np.float64)
    zz[np.arange(len(y)), idx] = -np.inf
    return int(((own - zz.max(axis=1)) > 0).sum())


def candidate_boundaries(X: np.ndarray, y: np.ndarray) -> str:
    """The median and the largest number of label boundaries over the library's candidate
    directions."""
    W, _ = directions(X, y)
    P = matmul(X, np.array([[float(v) for v in w] for w in W]).T)
    B = float_boundaries(P, y)[0]
    return f"{int(np.median(B))}, {int(B.max())}"


def row(name: str, X: np.ndarray, y: np.ndarray, eps: str) -> str:
    points = lncapacity.points_from_arrays(X, y)
    t0 = time.perf_counter()
    net = lncapacity.build(points, arch="ln-g", eps=eps)
    t1 = time.perf_counter()
    cert = step_certificate(net, points)
    t2 = time.perf_counter()
    c = lncapacity.certify(net, points)
    lib = f"{c.certified}/{points.m} in {time.perf_counter() - t2:.2f}"
    counts = []
    t3 = time.perf_counter()
    for backend in ("float64", "float32", "torch-float64", "torch-float32"):
        if backend.startswith("torch") and not floats.have_torch():
            counts.append("-")
            continue
        z = floats.forward(net, points, backend)
        counts.append(f"{right(z, net, points.y)}/{points.m}")
    t4 = time.perf_counter()
    rooms = []
    for p in ("float64", "float32"):
        f = net.meta["float"][p]
        rooms.append(f"{f['room']:.3g}{'*' if f['proved'] else ''}")
    return (
        f"| {name} | {points.m} | {len(points.classes)} | {net.meta['boundaries']} "
        f"({candidate_boundaries(X.astype(float), np.asarray(y))}) | {net.meta['groups']} "
        f"| {net.widths[0]} | {t1 - t0:.2f} | {cert.certified}/{points.m} in {t2 - t1:.2f} "
        f"(margin >= {float(cert.margin):.4f} sqrt6) | {lib} | {rooms[0]} | {rooms[1]} "
        f"| {' | '.join(counts)} | {t4 - t3:.1f} |"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="2000,10000")
    ap.add_argument("--ks", default="2,10")
    ap.add_argument("--eps", default="0")
    ap.add_argument("--no-digits", action="store_true")
    a = ap.parse_args()
    print(
        "| set | m | k | boundaries (candidates: median, most) | groups | width | build s "
        "| theorem certificate s | library certify s | room64 | room32 | float64 right "
        "| float32 right | torch float64 right | torch float32 right | floats s |"
    )
    print("|---" * 16 + "|")
    for m in map(int, a.sizes.split(",")):
        for k in map(int, a.ks.split(",")):
            X, y = random_set(m, k, seed=m + k)
            print(row("random R^3", X, y, a.eps), flush=True)
    X, y = clusters(2000, 1)
    print(row("two clusters R^3", X, y, a.eps), flush=True)
    if not a.no_digits:
        X, y = digits()
        print(row("digits", X, y, a.eps), flush=True)


if __name__ == "__main__":
    main()
