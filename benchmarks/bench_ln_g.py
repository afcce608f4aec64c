"""LN-G at depth 1: ``build(..., arch="ln-g")`` at scale.

The target table: for random points in R^3 (standard normal, ``k``
random labels, every class present), per row the time of each phase (wall seconds, with the
CPU seconds of this process and its workers in brackets: on a shared machine the wall time
also measures the load, printed under the table): ``build``, the library's ``certify`` (the
grouped interval pass in balls, proofs/interval_rounding.md), and the NumPy and PyTorch
float backends in float64 and float32 (points right of ``m``); the peak resident memory of
the row (each row runs in a process of its own, with its workers); and the target: build +
certify + both float64 passes under 30 s (m = 10,000), certify under 5 minutes (m = 100,000,
whose float passes are skipped: ``--floats-up-to``), every point right in float32 (2,000
points, 10 classes).

``--details``: the earlier per-set table as well (random sets, two Gaussian clusters, digits):
label boundaries along the chosen projection (and the median and the most over the
library's candidate directions), groups, width, build time, the margin theorem's certificate
(``certify``, which decides these nets by proofs/ln_g_steps.md Theorem 8), the generic one
(``theorems=False``), the float rooms ``delta / E`` of proofs/ln_g_steps.md §5 (``*``: proved
right by Theorem 6) and the float checks.
Run ``python benchmarks/bench_ln_g.py [--rows 10000:2,10000:10,100000:2,2000:10]
[--markdown docs/tables/ln_g.md] [--details [--sizes 2000,10000] [--ks 2,10] [--no-digits]]``.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from markdown_table import Markdown, add_option

import lncapacity
from lncapacity import floats
from lncapacity.construct.groups import float_boundaries
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
    cert = lncapacity.certify(net, points)  # by the margin theorem
    t2 = time.perf_counter()
    c = lncapacity.certify(net, points, theorems=False)
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
        f"(margin >= {cert.min_margin / 6**0.5:.4f} sqrt6) | {lib} | {rooms[0]} | {rooms[1]} "
        f"| {' | '.join(counts)} | {t4 - t3:.1f} |"
    )


ROWS = "10000:2,10000:10,100000:2,2000:10"
FLOATS_UP_TO = 10**9
"""Points times features up to which a target row runs the float passes."""


def _cpu() -> float:
    own, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _peak_mb() -> int:
    own, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return max(own.ru_maxrss, kids.ru_maxrss) // 1024  # KiB on Linux


def one_target(m: int, k: int, floats_up_to: int) -> dict:
    """One row of the target table, measured in this process (see :func:`main`)."""
    X, y = random_set(m, k, seed=m + k)
    out: dict = {"m": m, "k": k}

    def phase(name: str, f: Callable[[], Any]) -> Any:
        t, c = time.perf_counter(), _cpu()
        value = f()
        out[name] = (time.perf_counter() - t, _cpu() - c)
        return value

    points = phase("read", lambda: lncapacity.points_from_arrays(X, y))
    net = phase("build", lambda: lncapacity.build(points, arch="ln-g"))
    out["groups"], out["width"] = net.meta["groups"], net.widths[0]
    cert = phase("certify", lambda: lncapacity.certify(net, points))
    out["certified"], out["margin"] = cert.certified, cert.min_margin
    backends = floats.available_backends()  # the CUDA ones only where a device is
    for backend in backends if m * net.widths[0] <= floats_up_to else []:
        z = phase(backend, lambda b=backend: floats.forward(net, points, b))
        out[backend + " right"] = right(z, net, points.y)
    out["peak"] = _peak_mb()
    return out


def _time(r: dict, phase: str) -> str:
    if phase not in r:
        return "-"
    wall, cpu = r[phase]
    return f"{wall:.1f} ({cpu:.1f})"


def _right(r: dict, backend: str) -> str:
    return f"{r[backend + ' right']}/{r['m']}" if backend + " right" in r else "-"


def target_table(rows: str, floats_up_to: int, md: Markdown) -> None:
    header = (
        "| m | k | groups | width | build s | certify s | certified (margin >=) "
        "| float64 s: NumPy, PyTorch | float64 right | float32 s: NumPy, PyTorch "
        "| float32 right | peak MB | target | met |"
    )
    lines = [header, "|---" * 14 + "|"]
    print(header, flush=True)
    print(lines[1], flush=True)
    for spec in rows.split(","):
        m, k = map(int, spec.split(":"))
        run = subprocess.run(
            [sys.executable, __file__, "--one", f"{m}:{k}", "--floats-up-to", str(floats_up_to)],
            capture_output=True,
            text=True,
            check=True,
        )
        r = json.loads(run.stdout.strip().splitlines()[-1])

        every = "float64" in r and all(
            r.get(b + " right", m) == m for b in ("float64", "torch-float64")
        )
        if m >= 100_000:
            phases = ("certify",)
            goal, limit, ok = "certify < 300 s", 300, r["certified"] == m
        elif m == 2000:
            phases, limit = (), 0
            goal = "float32 right on every point"
            ok = all(r.get(b + " right") == m for b in ("float32", "torch-float32"))
        else:
            phases = ("read", "build", "certify", "float64", "torch-float64")
            goal, limit, ok = "build + certify + float64 < 30 s", 30, r["certified"] == m and every
        wall, cpu = (sum(r[p][i] for p in phases if p in r) for i in (0, 1))
        if phases:  # on a loaded machine the wall time measures the load: both are shown
            goal += f" (here {wall:.1f} wall, {cpu:.1f} CPU)"
            met = "wall " + ("yes" if ok and wall < limit else "no")
            met += ", CPU " + ("yes" if ok and cpu < limit else "no")
        else:
            met = "yes" if ok else "no"
        cells = [
            str(m),
            str(k),
            str(r["groups"]),
            str(r["width"]),
            _time(r, "build"),
            _time(r, "certify"),
            f"{r['certified']}/{m} ({r['margin']:.3f})",
            f"{_time(r, 'float64')}, {_time(r, 'torch-float64')}",
            f"{_right(r, 'float64')}, {_right(r, 'torch-float64')}",
            f"{_time(r, 'float32')}, {_time(r, 'torch-float32')}",
            f"{_right(r, 'float32')}, {_right(r, 'torch-float32')}",
            str(r["peak"]),
            goal,
            met,
        ]
        line = "| " + " | ".join(cells) + " |"
        print(line, flush=True)
        lines.append(line)
    note = "\nWall seconds (CPU seconds of the process and its workers)."
    print(note)
    for line in (
        "Depth-1 LN-G nets on random points in R^3, each row against a target: time per phase, "
        "points right, peak memory of the row.",
        "",
        *lines,
        note,
    ):
        md.add(line)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default=ROWS, help="m:k pairs of the target table")
    ap.add_argument("--floats-up-to", type=int, default=FLOATS_UP_TO)
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--details", action="store_true")
    add_option(ap)
    ap.add_argument("--sizes", default="2000,10000")
    ap.add_argument("--ks", default="2,10")
    ap.add_argument("--eps", default="0")
    ap.add_argument("--no-digits", action="store_true")
    a = ap.parse_args()
    if a.one:
        m, k = map(int, a.one.split(":"))
        print(json.dumps(one_target(m, k, a.floats_up_to)))
        return
    md = Markdown(a.markdown)
    target_table(a.rows, a.floats_up_to, md)
    md.save()
    if not a.details:
        return
    print(
        "| set | m | k | boundaries (candidates: median, most) | groups | width | build s "
        "| theorem certificate s | generic certificate s | room64 | room32 | float64 right "
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
