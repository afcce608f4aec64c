"""The default for two classes (issue 33, section 1): ``auto``, the shallower of ``runs`` and a
circle search within :func:`lncapacity.construct.auto_budget` seconds, against ``runs``.

Held-out sets (seeds the circle benchmark does not use, ``--seed0``), each row with its
target marked met or missed:

- 48 collinear points with random labels: the default's median depth at most 1.5 times
  the break-point bound ``ceil(log2 B)``, ``B`` the label changes along the line
  (:func:`lncapacity.theory.vc.break_bound`, a proof on a line: proofs/circle_maps.md §3.1;
  the issue's target was set against the older, weaker fold count ``ceil(log2(B + 2)) - 1``
  of the cyclic boundaries, usually one less);
- scikit-learn's digits, even against odd (1797 points): at most 30 layers;
- 300 random points in R^3: median depth at most 0.15 of ``m - 2``;
- ``m >= 2000`` (random points in R^3, make_moons with noise 0.1): the default's build
  at most twice ``runs``' in CPU seconds of the process (what the budget counts; measured
  in the same process, one after the other; the wall-clock times are shown too).

Every net is certified and checked in float64; the load (``os.getloadavg``) is recorded
under the table: the budget counts the process's CPU time (``time.process_time``), the
table's times are wall-clock, and the machine may be shared.

    python benchmarks/bench_auto.py                      # everything (~15 min on 2 cores)
    python benchmarks/bench_auto.py --seeds 3 --skip digits large   # quick
    python benchmarks/bench_auto.py --markdown docs/tables/auto.md
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import numpy as np
from bench_circle import line_changes, line_set, r3_set, real_sets
from markdown_table import Markdown, add_option

from lncapacity import build, certify, points_from_arrays
from lncapacity.data import PointSet
from lncapacity.floats import check
from lncapacity.theory.vc import break_bound


def timed(points: PointSet, **kw: Any) -> tuple[Any, float, float]:
    """The net, and the wall-clock and CPU seconds its build took."""
    t, c = time.perf_counter(), time.process_time()
    net = build(points, **kw)
    return net, time.perf_counter() - t, time.process_time() - c


def verified(net: Any, points: PointSet) -> bool:
    return certify(net, points).all_certified and check(net, points, "float64").all_agree


def moons(m: int) -> PointSet:
    from sklearn.datasets import make_moons

    X, y = make_moons(m, noise=0.1, random_state=0)
    return points_from_arrays(X, y)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10, help="held-out labelings per family")
    parser.add_argument("--seed0", type=int, default=100, help="first held-out seed")
    parser.add_argument("--skip", nargs="*", default=[], help="line, r3, digits, large")
    add_option(parser)
    args = parser.parse_args()
    md = Markdown(args.markdown)
    out = md.out
    out(
        "| set | m | runs depth (median) | default depth (median / worst) | circle chosen "
        "| target | measured | met | certified + float64 | default s | runs s |"
    )
    out("|---" * 11 + "|")
    seeds = range(args.seed0, args.seed0 + args.seeds)

    def family(name: str, sets: list[PointSet], target: str, value: Any, ok: Any) -> None:
        rows = []
        for points in sets:
            runs, t_runs, c_runs = timed(points, method="runs")
            net, t_auto, c_auto = timed(points)
            rows.append((points, runs, net, t_runs, t_auto, c_runs, c_auto))
        depths = [r[2].depth for r in rows]
        measured = value(rows)
        out(
            f"| {name} | {rows[0][0].m} | {statistics.median(r[1].depth for r in rows):g} "
            f"| {statistics.median(depths):g} / {max(depths)} "
            f"| {sum(r[2].meta['method'] == 'circle' for r in rows)}/{len(rows)} "
            f"| {target} | {measured} | {'met' if ok(rows) else 'missed'} "
            f"| {sum(verified(r[2], r[0]) for r in rows)}/{len(rows)} "
            f"| {statistics.median(r[4] for r in rows):.1f} "
            f"| {statistics.median(r[3] for r in rows):.1f} |"
        )

    if "line" not in args.skip:
        sets = [line_set(48, s) for s in seeds]

        def ratio(rows: list[Any]) -> float:
            return statistics.median(r[2].depth for r in rows) / statistics.median(
                break_bound(line_changes(r[0])) for r in rows
            )

        family(
            "random labels, line",
            sets,
            "median <= 1.5 x break-point bound",
            lambda rows: f"{ratio(rows):.2f} x",
            lambda rows: ratio(rows) <= 1.5,
        )
    if "r3" not in args.skip:

        def share(rows: list[Any]) -> float:
            return statistics.median(r[2].depth for r in rows) / (rows[0][0].m - 2)

        family(
            "random labels, R^3",
            [r3_set(300, s) for s in seeds],
            "median <= 0.15 (m - 2)",
            lambda rows: f"{share(rows):.3f}",
            lambda rows: share(rows) <= 0.15,
        )
    if "digits" not in args.skip:
        family(
            "digits even/odd",
            [real_sets()["digits even/odd"]],
            "<= 30 layers",
            lambda rows: f"{rows[0][2].depth}",
            lambda rows: rows[0][2].depth <= 30,
        )
    if "large" not in args.skip:

        def cost(rows: list[Any]) -> float:  # CPU seconds: what the budget counts
            return max(r[6] / r[5] for r in rows)

        for name, points in (
            ("random labels, R^3", r3_set(2000, args.seed0)),
            ("moons, noise 0.1", moons(2000)),
        ):
            family(
                name,
                [points],
                "default <= 2 x runs (CPU s)",
                lambda rows: f"{cost(rows):.2f} x ({rows[0][6]:.1f} / {rows[0][5]:.1f} CPU s)",
                lambda rows: cost(rows) <= 2,
            )
    md.save()


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
