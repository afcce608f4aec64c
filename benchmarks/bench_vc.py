"""The VC sandwich (``lncapacity vc``) as tables, and the rates that decide what a cluster buys.

    python benchmarks/bench_vc.py                                   # the sandwich tables
    python benchmarks/bench_vc.py --rates 8 --markdown docs/tables/vc.md   # + measured rates
    python benchmarks/bench_vc.py --regenerate DIR      # the shipped certificates, again

Tables 1 and 2: width-3 LN-Nets, ``L = 1..8``, ``d = 1, 2, 3``, with ``eps = 0`` and with
``eps > 0`` (every ``eps > 0`` gives the same bounds): the best lower bound (a theorem or a
shipped certificate) and the best upper bound, each with its source.  Table 3: width-2 RMSNorm
nets (the same bounds, by the correspondence of proofs/rmsnorm.md).  Table 4: LN-G nets with
``g`` groups of 3 on a line (any ``eps``).  ``--rates N``: for the rows that would push the
certified lower bounds next (plane ``L = 4`` with 17 points, line ``L = 4`` with 16, plane
``L = 2`` with 14), ``N`` random pairs of labelings are built (the sector construction in the
plane, the circle search otherwise) and certified on one process; the rate and the projected
time of the whole row, on one process and on a cluster of ``W`` workers (``2^n / rate / W``),
are printed.  The projection assumes the sampled labelings are typical.
"""

from __future__ import annotations

import argparse
import os
import random
import time

from markdown_table import Markdown, add_option

from lncapacity.arith import epsilon
from lncapacity.shatter import _shatter_chunk, random_points
from lncapacity.shatter.records import _Header
from lncapacity.theory.vc import CERTIFIED, sandwich

MD = Markdown(None)


def out(text: str) -> None:
    print(text, flush=True)
    for line in text.split("\n"):
        MD.add(f"**{line[3:]}**" if line.startswith("## ") else line)


def _cell(b) -> str:
    return f"{b.value} (`{b.source}`)"


def sandwich_tables(depths: list[int], groups: list[int]) -> None:
    for eps, regime in (("0", "eps = 0"), (POSITIVE, "eps > 0")):
        out(f"\n## VC dimension of width-3 LN-Nets ({regime}): lower / upper bound, with sources\n")
        out("| L | d = 1 | d = 2 | d = 3 |")
        out("|---|---|---|---|")
        for L in depths:
            cells = []
            for d in (1, 2, 3):
                s = sandwich("ln3", L, d, eps=eps)
                cells.append(f"{_cell(s.lower)} .. {_cell(s.upper)}")
            out(f"| {L} | " + " | ".join(cells) + " |")
    out(
        "\nWith eps > 0 the lower bounds are those of eps = 0 (a net that classifies finitely "
        "many points with eps = 0 still does with a small eps, and every eps > 0 is the same "
        "class: `proofs/sector_theorem.md`, section 7); the sector count holds for eps = 0 only."
    )
    out("\n## VC dimension of width-2 RMSNorm nets (eps = 0): lower / upper bound, with sources\n")
    out("| L | d = 1 | d = 2 | d = 3 |")
    out("|---|---|---|---|")
    for L in depths:
        cells = []
        for d in (1, 2, 3):
            s = sandwich("rms", L, d)
            cells.append(f"{_cell(s.lower)} .. {_cell(s.upper)}")
        out(f"| {L} | " + " | ".join(cells) + " |")
    out(
        "\nThe width-3 LN-Net's bounds, every one, by the correspondence (`proofs/rmsnorm.md`, "
        "Corollary 2: width-2 RMSNorm nets compute the same functions, RMSNorm's eps 3/2 of "
        "LayerNorm's); so are RMSNorm nets in groups of 2 (`vc --arch rms-g`) the LN-G "
        "nets' below (Corollary 3)."
    )
    out("\n## VC dimension of LN-G nets, g groups of 3 per layer, on a line (any eps)\n")
    out("| g | L = 1 | L = 2 | L = 3 |")
    out("|---|---|---|---|")
    for g in groups:
        cells = []
        for L in (1, 2, 3):
            s = sandwich("ln-g", L, 1, g)
            cells.append(f"{_cell(s.lower)} .. {s.upper.value}")
        out(f"| {g} | " + " | ".join(cells) + " |")


POSITIVE = "1/100000"
"""The ``eps > 0`` of table 2 (any other positive value gives the same bounds)."""
ROWS = [("plane", 4, 17), ("line", 4, 16), ("plane", 2, 14)]


def rates(pairs: int, cluster: list[int]) -> None:
    out(
        f"\n## Measured rate of shattering (one process, {pairs} random pairs of labelings "
        "per row) and the projected time of the whole row\n"
    )
    heads = " | ".join(f"{w} workers" for w in cluster)
    out(f"| points | L | n | labelings | s per labeling | one process | {heads} |")
    out("|---|---|---|---|---|---|" + "---|" * len(cluster))
    rng = random.Random(0)
    for kind, L, n in ROWS:
        X = [(epsilon(k),) for k in range(n)] if kind == "line" else random_points(n, 2, 0)
        ks = sorted(rng.sample(range(0, 1 << n, 2), pairs))
        method = "circle" if kind == "line" else "sector"
        t = time.perf_counter()
        header = _Header(tuple(X), L, epsilon(0))
        records = _shatter_chunk((header, ks, {"method": method, "restarts": 6}))
        per = (time.perf_counter() - t) / (2 * pairs)
        found = sum(2 for r in records if "error" not in r)
        total = 1 << n

        def hours(workers: int, per=per, total=total) -> str:
            seconds = total * per / workers
            return f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{seconds / 60:.0f} min"

        cells = " | ".join(hours(w) for w in cluster)
        out(
            f"| {kind} | {L} | {n} | {total} ({found}/{2 * pairs} sampled found) | {per:.2f} "
            f"| {hours(1)} | {cells} |"
        )


def regenerate(folder: str, workers: int) -> None:
    """Write every certificate of :data:`CERTIFIED` again into ``folder`` (same name): ln3 on
    the shipped certificate's points by its search (:attr:`Certified.search`, 6 restarts; the
    Chebyshev chains of ``shatter_line_chain.py`` for ``"chain"``), LN-G
    by the bumps; each re-verified.  ``cmp`` them with ``certificates/`` (after ``gunzip``)."""
    from pathlib import Path

    from lncapacity.shatter import _lines, _read_header, shatter, verify_shatter
    from lncapacity.theory.vc import repo_root

    out("\n## The shipped certificates, regenerated\n")
    out("| certificate | labelings | re-verified | s |")
    out("|---|---|---|---|")
    for c in CERTIFIED:
        path = Path(folder) / Path(c.path).name
        t = time.perf_counter()
        if c.arch == "ln-g":
            s = shatter(None, c.depth, out=path, workers=workers, groups=c.groups)
        elif c.search == "chain":  # on its own points: Chebyshev chains, then the certificate
            from shatter_line_chain import chain_shatter

            s = chain_shatter(c.points, c.depth, str(path), workers)[0]
        else:
            shipped = repo_root() / c.path
            X = _read_header(next(_lines(shipped))[1], shipped).points
            search = {"method": c.search, "restarts": 6}
            s = shatter(X, c.depth, out=path, workers=workers, search=search)
        seconds = time.perf_counter() - t
        again, problems = verify_shatter(path, workers=workers)
        ok = s.all_certified and not problems and again.certified == 2**c.points
        out(f"| `{c.path}` | {s.certified}/{s.labelings} | {ok} | {seconds:.0f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--depths", type=int, nargs="*", default=list(range(1, 9)))
    ap.add_argument("--groups", type=int, nargs="*", default=[1, 2, 3, 4, 8, 16])
    ap.add_argument("--rates", type=int, default=0, metavar="N", help="pairs sampled per row")
    ap.add_argument("--cluster", type=int, nargs="*", default=[16, 64, 256])
    ap.add_argument("--regenerate", metavar="DIR", help="write the shipped certificates again")
    ap.add_argument("--workers", type=int, default=1)
    add_option(ap)
    args = ap.parse_args()
    MD.path = args.markdown
    sandwich_tables(args.depths, args.groups)
    if args.rates:
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        rates(args.rates, args.cluster)
        out(f"\nLoad average when measured: {load:.1f} (2 shared cores): rates are pessimistic.")
    if args.regenerate:
        regenerate(args.regenerate, args.workers)
    MD.save()


if __name__ == "__main__":
    main()
