"""Shattering timings: certify every labeling of L + 2 points at depth L, then verify.

Usage: python benchmarks/bench_shatter.py [--depths 8 10 12 16] [--workers N] [--markdown PATH]
The manual's table: python benchmarks/bench_shatter.py --depths 4 6 8 --markdown
docs/tables/shatter.md (about half a minute).
Prints, per depth: labelings, seconds to shatter (build + certify + write), seconds
to verify, labelings per second, certificate size, min certified margin.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

from markdown_table import Markdown, add_option

from lncapacity.shatter import shatter, verify_shatter


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--depths", type=int, nargs="*", default=[8, 10, 12, 16])
    ap.add_argument("--workers", type=int, default=os.cpu_count())
    add_option(ap)
    args = ap.parse_args()
    md = Markdown(args.markdown)
    md.add("| L | labelings | shatter s | verify s | labelings per s | MB (gz) | min margin |")
    md.add("|---|---|---|---|---|---|---|")
    print(f"workers: {args.workers}")
    print(
        f"{'L':>3} {'labelings':>10} {'shatter s':>10} {'verify s':>9} {'per s':>8}"
        f" {'MB (gz)':>8} {'min margin':>11}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for L in args.depths:
            out = os.path.join(tmp, f"shatter-L{L}.jsonl.gz")
            t0 = time.perf_counter()
            s = shatter(None, L, out=out, workers=args.workers)
            t1 = time.perf_counter()
            v, problems = verify_shatter(out, workers=args.workers)
            t2 = time.perf_counter()
            assert s.all_certified and v.all_certified and not problems
            size = os.path.getsize(out) / 2**20
            print(
                f"{L:>3} {s.labelings:>10} {t1 - t0:>10.1f} {t2 - t1:>9.1f}"
                f" {s.labelings / (t1 - t0):>8.0f} {size:>8.2f} {s.min_margin:>11.3g}",
                flush=True,
            )
            md.add(
                f"| {L} | {s.labelings} | {t1 - t0:.1f} | {t2 - t1:.1f} "
                f"| {s.labelings / (t1 - t0):.0f} | {size:.2f} | {s.min_margin:.3g} |"
            )
    md.add()
    md.add(f"Points `0, 1, ..., L + 1` on a line, {args.workers} workers.")
    md.save()


if __name__ == "__main__":
    main()
