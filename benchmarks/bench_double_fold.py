"""Depth L shatters 2L + 1 points on a line and 2L + 3 on a circle (proofs/double_fold.md).

For each depth, every labeling of the point set gets a net from
``lncapacity.construct.double_fold.double_fold_net`` (certified as it is built);
the nets go into an ``lnnet-shatter/1`` certificate (one record per pair of
complementary labelings, the complement by swapping the readout rows, as
``shatter`` writes them; ``lnnet`` records carry ``"folds": "search"``, the
format's tag for nets that are not gadgets), and ``verify_shatter`` re-certifies
the file from scratch.  Line: ``0, 1, ..., 2L``; circle: the points of the unit
circle with half-angle coordinates ``1, 4, 9, ..., (2L + 3)^2`` (no three chords
concurrent up to 11 points).

    python benchmarks/bench_double_fold.py --depths 1 2 3 4 --out /tmp
    python benchmarks/bench_double_fold.py --depths 1 2 3 --out /tmp \
        --markdown docs/tables/double_fold.md          # the manual's table (~20 s)
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from flint import fmpq
from markdown_table import Markdown, add_option

from lncapacity.arith import format_rational, json_float
from lncapacity.construct.double_fold import double_fold_net
from lncapacity.fileformat import to_dict
from lncapacity.shatter import (
    FORMAT,
    ShatterSummary,
    _margins,
    _point_set,
    _swapped,
    _tally,
    _writer,
    labels_of,
    verify_shatter,
)


def circle(n: int) -> list[tuple[fmpq, fmpq]]:
    out = []
    for i in range(1, n + 1):
        u = fmpq(i * i)
        out.append(((1 - u * u) / (1 + u * u), 2 * u / (1 + u * u)))
    return out


def write(X: list, depth: int, out: Path) -> ShatterSummary:
    m, mask = len(X), (1 << len(X)) - 1
    summary = ShatterSummary(m, depth, 1 << m)
    header = {
        "format": FORMAT,
        "points": [[format_rational(v) for v in x] for x in X],
        "input_dim": len(X[0]),
        "eps": "0",
        "depth": depth,
        "labelings": 1 << m,
        "classes": [0, 1],
    }
    start = time.perf_counter()
    with _writer(out) as (emit, _):
        emit(header)
        for k in range(0, 1 << m, 2):
            y = labels_of(k, m)
            net = double_fold_net(_point_set(X, y), depth)
            comp = k ^ mask
            mk, mc = _margins(net, X, y), _margins(_swapped(net), X, labels_of(comp, m))
            emit(
                {
                    "labeling": k,
                    "folds": "search",
                    "lnnet": to_dict(net),
                    "margins": [json_float(v) for v in mk],
                    "complement": {"labeling": comp, "margins": [json_float(v) for v in mc]},
                }
            )
            summary.folds["search"] += 2
            _tally(summary, k, mk)
            _tally(summary, comp, mc)
        summary.seconds = time.perf_counter() - start
        emit({"summary": summary.to_dict()})
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depths", type=int, nargs="*", default=[1, 2, 3, 4])
    parser.add_argument("--out", default=".", help="where the certificates go")
    add_option(parser)
    args = parser.parse_args()
    md = Markdown(args.markdown)

    def out(line: str) -> None:
        print(line, flush=True)
        md.add(line)

    out("| points | L | n | labelings certified | re-verified | min margin | s |")
    out("|---|---|---|---|---|---|---|")
    for kind in ("line", "circle"):
        for L in args.depths:
            n = 2 * L + (1 if kind == "line" else 3)
            X = [(fmpq(k),) for k in range(n)] if kind == "line" else circle(n)
            path = Path(args.out) / f"double-fold-{kind}-L{L}-n{n}.jsonl.gz"
            t = time.perf_counter()
            summary = write(X, L, path)
            again, problems = verify_shatter(path, workers=1)
            ok = f"{again.certified}/{again.labelings}" + (" PROBLEMS" if problems else "")
            out(
                f"| {kind} | {L} | {n} | {summary.certified}/{summary.labelings} | {ok} "
                f"| {summary.min_margin:.2g} | {time.perf_counter() - t:.0f} |"
            )
    md.save()


if __name__ == "__main__":
    main()
