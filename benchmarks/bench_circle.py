"""The three constructions side by side: pma, runs and circle (issue 18).

Random binary labels on ``m`` equally spaced points of a line and on ``m``
random points in R^3 (``--seeds`` seeded labelings each), then scikit-learn's
digits (even against odd), breast cancer and make_moons (2000 points, noise
0.1).  Per row:

- depth of ``pma``, ``runs`` and ``circle``: median and worst over the labelings
  (``circle`` falls back to ``runs`` when it cannot beat it: the count of
  fallbacks is shown);
- the break-point lower bound ``ceil(log2 B)`` (:func:`lncapacity.theory.vc.break_bound`,
  proofs/circle_maps.md §3.1, §3.2): a depth-``L`` net changes its label at most ``2^L``
  times along a line, so on a line ``B`` is the label changes along it (not cyclically), a
  proof; in R^d ``B = B_1``, the cyclic label boundaries the circle net's first layer
  reached on its circle, marked ``~`` (an estimate, not a proof);
- ``circle``'s nets checked in float64 (NumPy and PyTorch, eps 0 and, for the
  first ``--eps-seeds`` labelings, 1e-5) and float32 (NumPy, eps 0): labelings
  with every point right;
- ``circle``'s build and certify time (median, eps 0; certification is part of
  the build, and ``certify`` is run once more, as the CLI does).

``pma`` is slow beyond a few hundred points (about ``m`` layers, certified in
ball arithmetic): ``--pma-max`` (default 200) skips it above.  ``runs`` above
``--runs-max`` (default 200) is not built: its depth is the number of label runs
along its projection minus two (it removes exactly one run per layer,
proofs/runs_fold.md), marked ``*``.

    python benchmarks/bench_circle.py                       # everything (~30 min on 2 cores)
    python benchmarks/bench_circle.py --sizes 16 48 --seeds 3 --no-real   # quick
    python benchmarks/bench_circle.py --vc line plane --vc-dir /tmp   # VC beyond L + 2

``--vc``: for each (points, L, n) of :data:`VC_SETS`, ``shatter`` with the circle
search certifies every one of the ``2^n`` labelings at depth ``L``, and
``verify_shatter`` re-checks the certificate from scratch.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import numpy as np

from lncapacity import build, certify, points_from_arrays
from lncapacity.construct.project import project, runs
from lncapacity.data import PointSet
from lncapacity.floats import available_backends, check
from lncapacity.theory.vc import break_bound


def line_set(m: int, seed: int) -> PointSet:
    """``0, 1, ..., m - 1`` with seeded random labels (both present)."""
    y = np.random.default_rng([m, seed, 1]).integers(0, 2, m)
    y[:2] = (0, 1)
    return points_from_arrays(np.arange(m).reshape(-1, 1), y)


def r3_set(m: int, seed: int) -> PointSet:
    """``m`` random points in R^3 (multiples of 2^-18), seeded random labels."""
    rng = np.random.default_rng([m, seed, 3])
    X = rng.integers(-(2**20), 2**20, size=(m, 3)) / 2**18
    y = rng.integers(0, 2, m)
    y[:2] = (0, 1)
    return points_from_arrays(X, y)


def real_sets() -> dict[str, PointSet]:
    from sklearn.datasets import load_breast_cancer, load_digits, make_moons

    X, y = load_digits(return_X_y=True)
    out = {"digits even/odd": (X, y % 2)}
    out["breast cancer"] = load_breast_cancer(return_X_y=True)
    out["moons 2000, 0.1"] = make_moons(2000, noise=0.1, random_state=0)
    sets = {}
    for name, (X, y) in out.items():
        # duplicates with one label count once (data.py); there are none with two here
        Xy = np.unique(np.c_[X, y], axis=0)
        sets[name] = points_from_arrays(Xy[:, :-1], Xy[:, -1].astype(int))
    return sets


def line_changes(points: PointSet) -> int:
    """The label changes of a set on a line, in the points' order along it (not cyclically)."""
    y01 = [points.classes.index(c) for c in points.y]
    order = sorted(range(points.m), key=lambda k: points.X[k][0])
    return runs([y01[k] for k in order]) - 1


def runs_depth_formula(points: PointSet) -> int:
    y01 = [points.classes.index(c) for c in points.y]
    _, t = project(points.X, y01)
    order = sorted(range(len(t)), key=t.__getitem__)
    return max(0, runs([y01[k] for k in order]) - 2)


def measure(points: PointSet, pma: bool, runs_built: bool, with_eps: bool = True) -> dict[str, Any]:
    row: dict[str, Any] = {}
    if pma:
        row["pma"] = build(points, method="pma").depth
    row["runs"] = build(points, method="runs").depth if runs_built else runs_depth_formula(points)
    t0 = time.perf_counter()
    net = build(points, method="circle")
    t1 = time.perf_counter()
    assert certify(net, points).all_certified, "a circle net failed its certificate"
    t2 = time.perf_counter()
    row.update(circle=net.depth, fallback="fallback" in net.meta, build=t1 - t0, cert=t2 - t1)
    if points.d == 1:
        row["bound"], row["exact_bound"] = break_bound(line_changes(points)), 1
    else:
        b1 = (net.meta.get("circle_boundaries") or [None])[0]
        row["bound"], row["exact_bound"] = (break_bound(b1) if b1 is not None else None), 0
    backends = [b for b in ("float64", "torch-float64") if b in available_backends()]
    ok64 = all(check(net, points, b).all_agree for b in backends)
    if with_eps:
        net_eps = build(points, method="circle", eps="1e-5")
        ok64 &= all(check(net_eps, points, b).all_agree for b in backends)
    row["f64"], row["f32"] = ok64, check(net, points, "float32").all_agree
    return row


def _med_worst(values: list[int]) -> str:
    return f"{statistics.median(values):g} / {max(values)}"


def print_row(name: str, m: int, rows: list[dict[str, Any]], runs_built: bool) -> None:
    pma = _med_worst([r["pma"] for r in rows]) if "pma" in rows[0] else "—"
    rn = _med_worst([r["runs"] for r in rows]) + ("" if runs_built else " *")
    fb = sum(r["fallback"] for r in rows)
    circle = _med_worst([r["circle"] for r in rows]) + (f" ({fb} fb)" if fb else "")
    bounds = [r["bound"] for r in rows if r["bound"] is not None]
    bound = (
        ("" if rows[0]["exact_bound"] else "~") + f"{statistics.median(bounds):g}"
        if bounds
        else "—"
    )
    ratio = statistics.median(r["circle"] for r in rows) / max(m - 2, 1)
    n = len(rows)
    print(
        f"| {name} | {m} | {pma} | {rn} | {circle} | {ratio:.3f} | {bound} "
        f"| {sum(r['f64'] for r in rows)}/{n} | {sum(r['f32'] for r in rows)}/{n} "
        f"| {statistics.median(r['build'] for r in rows):.1f} "
        f"| {statistics.median(r['cert'] for r in rows):.2f} |",
        flush=True,
    )


VC_SETS = {
    "line": [(1, 3), (2, 5), (3, 9), (4, 11)],
    "plane": [(1, 6), (2, 10), (3, 12)],
}


def vc_table(out_dir: str, restarts: int, workers: int, which: list[str]) -> None:
    """Certified shattering beyond L + 2 with the circle search, each certificate re-verified.

    Line: ``0, 1, ..., n - 1``; plane: ``shatter.random_points(n, 2, seed=0)``.
    """
    from pathlib import Path

    from lncapacity.shatter import random_points, shatter, verify_shatter

    print("| points | L | n (L + 2) | labelings certified | re-verified | min margin | s |")
    print("|---|---|---|---|---|---|---|")
    for kind in which:
        for L, n in VC_SETS[kind]:
            X = [[k] for k in range(n)] if kind == "line" else random_points(n, 2, 0)
            path = Path(out_dir) / f"shatter-{kind}-L{L}-n{n}.jsonl.gz"
            t = time.perf_counter()
            summary = shatter(
                X, L, search={"method": "circle", "restarts": restarts}, out=path, workers=workers
            )
            seconds = time.perf_counter() - t
            if summary.all_certified:
                again, problems = verify_shatter(path, workers=workers)
                verified = f"{again.certified}/{again.labelings}"
                verified += " PROBLEMS" if problems else ""
            else:
                verified = f"no ({len(summary.failures)} labelings unrealised)"
            print(
                f"| {kind} | {L} | {n} ({L + 2}) | {summary.certified}/{summary.labelings} "
                f"| {verified} | {summary.min_margin:.2g} | {seconds:.0f} |",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[16, 48, 100, 200, 1000])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--pma-max", type=int, default=200)
    parser.add_argument("--runs-max", type=int, default=200)
    parser.add_argument("--no-real", action="store_true")
    parser.add_argument(
        "--eps-seeds", type=int, default=10, help="labelings also built and run with eps 1e-5"
    )
    parser.add_argument("--families", nargs="*", default=["line", "R^3"])
    parser.add_argument("--vc", nargs="*", help="the shattering table instead (line, plane)")
    parser.add_argument("--vc-dir", default=".", help="where the shattering certificates go")
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    if args.vc is not None:
        vc_table(args.vc_dir, 6, args.workers, args.vc or ["line", "plane"])
        return
    print(
        "| set | m | pma depth (median / worst) | runs | circle | circle median/(m-2) "
        "| break-point bound (median) | float64 right (np+torch, eps 0 and 1e-5) "
        "| float32 right | circle build s | certify s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    makers = {"line": line_set, "R^3": r3_set}
    for family in args.families:
        for m in args.sizes:
            rows = [
                measure(
                    makers[family](m, s), m <= args.pma_max, m <= args.runs_max, s < args.eps_seeds
                )
                for s in range(args.seeds)
            ]
            print_row(f"random labels, {family}", m, rows, m <= args.runs_max)
    if not args.no_real:
        for name, points in real_sets().items():
            row = measure(points, False, True)
            print_row(name, points.m, [row], True)


if __name__ == "__main__":
    main()
