"""The depth objective's search settings (issue 33 §2): beam width and gap weight.

The depth objective (``--objective depth``, :mod:`lncapacity.construct.circle.precise`)
ranks a state by its boundaries plus ``LAMBDA`` per halving of its rigorous label gap below
``COMFORT``, and keeps ``beam`` states per layer.  This script measures the depth the search
reaches on one set (``bench_circle.r3_set(m, seed)``: random labels on random points in R^3)
for each setting asked, with everything else as ``build`` uses it (``precise.CANDIDATES``
poles per state, the trained starts).  The depth is the search's: the layers ``build`` would
certify (the readout follows them).  Each setting is one run of the deterministic search.

    nice -n 5 python benchmarks/bench_depth_settings.py --m 500 \\
        --settings 4:0 4:0.25 4:0.5 4:1 2:0.25 8:0.25 --markdown docs/tables/depth_settings.md
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from bench_circle import r3_set
from bench_depth_frontier import search_settings
from markdown_table import Markdown, add_option

from lncapacity.construct.circle import circle_state, precise


def depth(m: int, seed: int, beam: int, gap_weight: float) -> tuple[int | None, float]:
    """The depth the depth objective's search reaches with ``beam`` and ``LAMBDA =
    gap_weight`` (None: not finished within ``m`` layers), and its process seconds."""
    points = r3_set(m, seed)
    labels = sorted(set(points.y))
    y = np.array([labels.index(v) for v in points.y])
    t0 = time.process_time()
    with search_settings(gap_weight=gap_weight):
        st = circle_state(
            points.floats(),
            y,
            0.0,
            max_depth=m,
            seed=seed,
            beam=beam,
            objective="depth",
            exact=points.X,
        )
    return (None if st is None else len(st.layers)), time.process_time() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--m", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--settings",
        nargs="+",
        default=["4:0", "4:0.25", "4:0.5", "4:1", "2:0.25", "8:0.25"],
        metavar="BEAM:LAMBDA",
        help="beam widths and gap weights to measure (default: around the shipped 4:0.25)",
    )
    add_option(parser)
    args = parser.parse_args()
    md = Markdown(args.markdown)
    md.out("| m | beam | gap weight (LAMBDA) | depth | / (m - 2) | CPU s |")
    md.out("|---|---|---|---|---|---|")
    for s in args.settings:
        beam, lam = s.split(":")
        d, cpu = depth(args.m, args.seed, int(beam), float(lam))
        shipped = " (shipped)" if (int(beam), float(lam)) == (4, precise.LAMBDA) else ""
        ratio = "—" if d is None else f"{d / (args.m - 2):.3f}"
        md.out(f"| {args.m} | {beam} | {lam}{shipped} | {d} | {ratio} | {cpu:.0f} |")
        print(f"  {s}: depth {d}, {cpu:.0f} s", file=sys.stderr, flush=True)
    md.save()


if __name__ == "__main__":
    main()
