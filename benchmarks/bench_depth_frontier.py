"""The exact depth frontier (issue 33 §2): how shallow a width-3 LN-Net the circle search
finds for ``m`` random labels when float64 need not run it.

Random binary labels on ``m`` random points in R^3 (``bench_circle.r3_set``, the sets of
the circle table; seeds ``--seeds``).  Per ``m`` (median over the seeds):

- ``depth``: ``--method circle --objective depth`` (the search in ball arithmetic,
  :mod:`lncapacity.construct.circle.precise`), certified by ``build``; its time, the bits
  its balls needed at the end, and how many points NumPy float64 gets right (reported, not
  required);
- ``faithful``: ``--method circle`` (the default objective: float64-faithful, with its
  hand-over to ``runs``), and ``auto`` (the default method: ``runs``, or ``circle`` within
  its budget when shallower);
- the counting bound on the median depth of random labels (Warren, proofs/circle_maps.md
  §4, for data in R^3) and the break-point bound ``ceil(log2 B_1)``
  (:func:`lncapacity.theory.vc.break_bound`, §3.1) with the ``B_1`` cyclic boundaries the
  depth objective's first layer reached (``~``: an estimate, not a proof in R^3).

The target (issue 33): depth at most ``0.1 (m - 2)`` at ``m = 1000``, marked met or missed.
With ``--cache FILE`` each measured row is kept in FILE (JSON) and not measured again, so
that long rows can be added by later runs; the table and ``--figure`` are made from every
kept row of the sizes asked.

    nice -n 5 python benchmarks/bench_depth_frontier.py --cache /tmp/frontier.json \\
        --markdown docs/tables/depth_frontier.md --figure docs/_static/depth_frontier.png
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import math
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench_circle import r3_set
from markdown_table import Markdown, add_option

from lncapacity import build
from lncapacity.construct import circle
from lncapacity.construct.circle import precise
from lncapacity.floats import check
from lncapacity.theory.vc import break_bound, eliminated, parameters

TARGET = (1000, 0.1)
"""At ``m = 1000`` the depth objective's median depth at most ``0.1 (m - 2)``."""
DIM = 3


def counting_depth(m: int, d: int = DIM) -> int:
    """The least ``L`` at which Warren's bound on the labelings a depth-``L`` net realises
    on ``m`` points in ``R^d`` reaches ``2^(m - 1)`` (proofs/circle_maps.md §4: the median
    depth of random labels is at least this); the parameter count and the eliminated
    polynomials from :mod:`lncapacity.theory.vc`."""
    L = 1
    while True:
        P = parameters(L, d)
        K, D = eliminated(L)
        bits = m * K if m * K < P else P * math.log2(4 * math.e * D * m * K / P)
        if bits >= m - 1:
            return L
        L += 1


def measure(
    m: int,
    seed: int,
    note: Any,
    settings: dict[str, Any] | None = None,
    depth_only: bool = False,
) -> dict[str, Any]:
    """One row: the depth objective's certified net (``settings``: :func:`search_settings`'
    keywords, its search's width, poles per state and gap weight; none: as shipped), and
    unless ``depth_only`` the default objective's and ``auto``'s depths."""
    points = r3_set(m, seed)
    t0 = time.perf_counter()
    with search_settings(**(settings or {})):
        net = build(points, method="circle", objective="depth", progress=note)
    t1 = time.perf_counter()
    row: dict[str, Any] = {
        "m": m,
        "seed": seed,
        "depth": net.depth,
        "method": net.meta.get("method"),
        "seconds": round(t1 - t0, 1),
        "float64_right": check(net, points, "float64").agree,
        "b1": (net.meta.get("circle_boundaries") or [None])[0],
    }
    if settings:
        row["settings"] = settings
    if not depth_only:
        row["faithful"] = build(points, method="circle").depth
        row["auto"] = build(points).depth
    return row


@contextlib.contextmanager
def search_settings(
    beam: int | None = None, candidates: int | None = None, gap_weight: float | None = None
) -> Iterator[None]:
    """The depth objective's search with another beam width, candidate count or gap weight
    (narrower and cheaper for the largest sets).  ``build`` takes none of them: they are the
    search's constants (``circle_state``'s ``beam`` default, ``precise.CANDIDATES``,
    ``precise.LAMBDA``), set here for the measurement and restored."""
    saved = (circle.circle_state, precise.CANDIDATES, precise.LAMBDA)
    if beam is not None:
        circle.circle_state = functools.partial(saved[0], beam=beam)
    if candidates is not None:
        precise.CANDIDATES = candidates
    if gap_weight is not None:
        precise.LAMBDA = gap_weight
    try:
        yield
    finally:
        circle.circle_state, precise.CANDIDATES, precise.LAMBDA = saved


class Note:
    """Progress on stderr: the layer the search reached, at most every 30 seconds."""

    def __init__(self, m: int) -> None:
        self.m, self.last = m, 0.0

    def __call__(self, done: int, total: int) -> None:
        if time.perf_counter() - self.last > 30:
            self.last = time.perf_counter()
            print(f"  m = {self.m}: layer {done} of at most {total}", file=sys.stderr, flush=True)


def _median(rows: list[dict[str, Any]], key: str) -> float | None:
    """The median of ``key`` over the rows that have it (None: none has)."""
    values = [r[key] for r in rows if key in r]
    return statistics.median(values) if values else None


def _settings(s: dict[str, Any]) -> str:
    names = {"beam": "beam", "candidates": "poles", "gap_weight": "LAMBDA"}
    return ", ".join(f"{names[key]} {v:g}" for key, v in s.items())


def _cell(value: float | None) -> str:
    return "—" if value is None else f"{value:g}"


def table(rows: dict[int, list[dict[str, Any]]], md: Markdown) -> None:
    md.out(
        "| m | seeds | depth (objective depth) | / (m - 2) | float64 right | build s | "
        "circle, faithful | auto | counting bound | break-point bound | target |"
    )
    md.out("|---|---|---|---|---|---|---|---|---|---|---|")
    for m, rs in sorted(rows.items()):
        depth = _median(rs, "depth")
        ratio = depth / (m - 2)
        b1 = [break_bound(r["b1"]) for r in rs if r["b1"] is not None]
        breaks = f"~{statistics.median(b1):g}" if b1 else "—"
        target = ""
        if m == TARGET[0]:
            target = f"<= {TARGET[1]} (m - 2): " + ("met" if ratio <= TARGET[1] else "missed")
        fell = sum(r["method"] != "circle" for r in rs)
        right = ", ".join(f"{r['float64_right']}/{m}" for r in rs)
        narrow = {_settings(s) for r in rs if (s := r.get("settings"))}
        md.out(
            f"| {m} | {len(rs)} | {depth:g}{f' ({fell} fb)' if fell else ''}"
            f"{''.join(f' ({n})' for n in sorted(narrow))} | {ratio:.3f} "
            f"| {right} | {_median(rs, 'seconds'):.0f} | {_cell(_median(rs, 'faithful'))} "
            f"| {_cell(_median(rs, 'auto'))} | {counting_depth(m)} | {breaks} | {target} |"
        )


def searched(rows: dict[int, list[dict[str, Any]]]) -> dict[int, list[dict[str, Any]]]:
    """The rows whose depth objective built a circle net (not those that gave way to
    ``runs``: their depth is runs', not the search's)."""
    kept = {m: [r for r in rs if r["method"] == "circle"] for m, rs in rows.items()}
    return {m: rs for m, rs in kept.items() if rs}


def exponent(rows: dict[int, list[dict[str, Any]]], key: str) -> float | None:
    """``a`` of the least-squares fit ``depth ~ m^a`` (log-log) over the rows' medians
    (for ``depth``, only the :func:`searched` rows)."""
    if key == "depth":
        rows = searched(rows)
    ms = [m for m in sorted(rows) if _median(rows[m], key) is not None]
    if len(ms) < 2:
        return None
    x = [math.log(m) for m in ms]
    y = [math.log(_median(rows[m], key)) for m in ms]  # type: ignore[arg-type]
    mx, my = statistics.fmean(x), statistics.fmean(y)
    return sum((a - mx) * (b - my) for a, b in zip(x, y, strict=True)) / sum(
        (a - mx) ** 2 for a in x
    )


def figure(rows: dict[int, list[dict[str, Any]]], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    ms = sorted(rows)
    grid = np.linspace(min(ms), max(ms), 200)
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for key, label, style in (
        ("depth", "circle, objective depth (certified)", "o-"),
        ("faithful", "circle, float64-faithful", "s--"),
        ("auto", "auto (default)", "^:"),
    ):
        part = searched(rows) if key == "depth" else rows
        have = [m for m in ms if m in part and _median(part[m], key) is not None]
        ax.plot(have, [_median(part[m], key) for m in have], style, label=label)
    fell = [r for rs in rows.values() for r in rs if r["method"] != "circle"]
    if fell:
        ax.plot(
            [r["m"] for r in fell],
            [r["depth"] for r in fell],
            "rx",
            ms=8,
            label="objective depth stalled: runs' net",
        )
    ax.plot(ms, [counting_depth(m) for m in ms], "k-", lw=1, label="counting bound (R^3)")
    breaks = [[break_bound(r["b1"]) for r in rows[m] if r["b1"] is not None] for m in ms]
    ax.plot(
        [m for m, f in zip(ms, breaks, strict=True) if f],
        [statistics.median(f) for f in breaks if f],
        "k--",
        lw=1,
        label="break-point bound (~, first layer)",
    )
    ax.plot(grid, 0.1 * (grid - 2), color="gray", lw=0.8, label="0.1 (m - 2) (target at 1000)")
    ax.set_xlabel("m (random labels, points in R^3)")
    ax.set_ylabel("depth (LayerNorm layers)")
    ax.set_yscale("log")
    ax.set_xscale("log")
    ax.legend(fontsize=8)
    ax.grid(True, which="both", lw=0.3)
    ax.set_title("Width-3 LN-Nets for m random labels: the depth frontier")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path}", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 200, 300, 500, 1000])
    parser.add_argument("--seeds", type=int, default=1, help="labelings per size (seeds 0 on)")
    parser.add_argument(
        "--cache", metavar="JSON", help="keep the measured rows in this file, across runs"
    )
    parser.add_argument("--figure", metavar="PNG", help="also plot depth against m to PNG")
    parser.add_argument("--only-cached", action="store_true", help="measure nothing new")
    parser.add_argument("--beam", type=int, help="the depth objective's beam width (default 4)")
    parser.add_argument(
        "--candidates", type=int, help="its candidate poles per state (precise.CANDIDATES)"
    )
    parser.add_argument("--gap-weight", type=float, help="its LAMBDA (precise.LAMBDA, 0.25)")
    parser.add_argument(
        "--depth-only", action="store_true", help="not the faithful and auto builds (m >= 2000)"
    )
    add_option(parser)
    args = parser.parse_args()
    cache = Path(args.cache) if args.cache else None
    done: list[dict[str, Any]] = json.loads(cache.read_text()) if cache and cache.exists() else []
    for m in args.sizes:
        for seed in range(args.seeds):
            if args.only_cached or any(r["m"] == m and r["seed"] == seed for r in done):
                continue
            asked = {
                "beam": args.beam,
                "candidates": args.candidates,
                "gap_weight": args.gap_weight,
            }
            settings = {key: v for key, v in asked.items() if v is not None}
            row = measure(m, seed, Note(m), settings, args.depth_only)
            print(f"  measured {row}", file=sys.stderr, flush=True)
            done.append(row)
            if cache:
                cache.write_text(json.dumps(done, indent=1) + "\n")
    rows: dict[int, list[dict[str, Any]]] = {}
    for r in done:
        if r["m"] in args.sizes and r["seed"] < args.seeds:
            rows.setdefault(r["m"], []).append(r)
    md = Markdown(args.markdown)
    table(rows, md)
    growth = {key: exponent(rows, key) for key in ("depth", "faithful")}
    if growth["depth"] is not None and growth["faithful"] is not None:
        md.out()
        md.out(
            f"Growth over these sizes (least squares on log-log): depth ~ m^{growth['depth']:.2f} "
            "(objective depth, where it built a circle net), "
            f"m^{growth['faithful']:.2f} (float-faithful circle); the "
            "counting bound grows like 0.254 sqrt(m) for large m, the break-point bound like "
            "log2(m)."
        )
    md.save()
    if args.figure and rows:
        figure(rows, args.figure)


if __name__ == "__main__":
    main()
