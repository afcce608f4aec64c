"""The capacity table: LN against LN-G (and their RMSNorm twins) on random labels, certified.

For m standard normal points in R^3 with k uniformly random labels (``lncapacity capacity``'s
sets: ``theory.capacity.random_labels``), one row per architecture: the width-3 LN-Net
(``ln3``, the default construction) and LN-G at depth 1, 2, 3 (``build(arch="ln-g",
depth=d)``; a depth not built yet shows as such), and the RMSNorm twin of each (``rms``,
width 2; ``rms-g``, groups of 2; proofs/rmsnorm.md), each built and certified by
``lncapacity.certify``: depth, total width, groups, parameters, certified points, build +
certify time (a twin's: rounding the LayerNorm net's twin, and certifying it). Per (m, k):
the counting lower bound on 64-bit parameters and the train accuracy of a least-squares
linear model; with ``--train``, Adam's train accuracy on the same architectures and on
LayerNorm, RMSNorm, GroupNorm and RMSNorm in groups of equal parameter count
(``lncapacity.train``, when installed; a float measurement, never a certificate). Then, per
m, the rank of each layer's LayerNorm output of untrained width-64 nets, LN against LN-G with
16 groups of 4, depth 1 to 6 (proved ranks: proofs/ln_rank.md).

    python benchmarks/bench_capacity.py                              # m = 100, 1000
    python benchmarks/bench_capacity.py --sizes 100 1000 10000 \\
        --markdown docs/tables/capacity.md                           # the manual's table

The width-3 net is skipped (noted in the table) from ``--ln3-max`` points (default 10,000:
depth about m/2, hours) and, with more than two classes, from ``--ln3-multiclass-max``
(default 10,000; at 1,000 points and 10 classes it took 285 s to build and certify, depth
989, in docs/tables/capacity.md, at a load average of 15 to 30 on 2 cores).
"""

from __future__ import annotations

import argparse
import time

from markdown_table import Markdown, add_option

from lncapacity.cli.capacity import RANK_DEPTH, capacity_summary

MD = Markdown(None)


def out(text: str = "") -> None:
    print(text, flush=True)
    MD.add(text)


NAMES = {
    "ln3": "ln3",
    "ln-g": "ln-g, depth {depth}",
    "rms": "rms (width 2)",
    "rms-g": "rms-g, depth {depth}",
}
"""A row's name in the table, by its architecture."""


def cell(v: object) -> str:
    return "-" if v is None else str(v)


def net_rows(summary: dict, k: int, train: bool, skipped: str | None) -> None:
    (r,) = summary["results"]
    m = summary["m"]
    if skipped:
        out(f"| {m:,} | {k} | ln3 | skipped: {skipped} | | | | | | |")
    for n in r["nets"]:
        if skipped and n["arch"] == "rms-g" and n["depth"] == 1:  # ln3 skipped: its twin too
            out(f"| {m:,} | {k} | {NAMES['rms']} | skipped: the twin of ln3 | | | | | | |")
        arch = NAMES[n["arch"]].format(depth=n["depth"])
        acc = n.get("train_accuracy")
        trained = f"{acc:.3f} (Adam)" if acc is not None else n.get("train_note", "not run")
        if n["status"] == "not built":
            why = "not built yet" if "not built yet" in n["note"] else f"not built: {n['note']}"
            out(f"| {m:,} | {k} | {arch} | {why} | | | | | | |")
            continue
        ok = f"{n['certified_points']:,}/{m:,}" + (
            "" if n["status"] == "certified" else " (NOT certified)"
        )
        out(
            f"| {m:,} | {k} | {arch} | {n['depth']} | {n['total_width']:,} | "
            f"{n['groups']:,} | {n['parameters']:,} | {ok} | {n['seconds']:.1f} | {trained} |"
        )
    out(f"| {m:,} | {k} | counting bound | | | | >= {r['counting_bound']} | | | |")
    linear = f"{r['linear_train_accuracy']:.3f}"
    out(f"| {m:,} | {k} | linear (least squares) | | | | {(3 + 1) * k} | | | {linear} |")
    for e in r.get("equal_parameters", []):  # --train: Adam at equal parameter count
        acc = e["train_accuracy"]
        name = f"Adam: {e['norm']} (width {e['width']}, {e['groups']} groups)"
        shown = f"{acc:.3f}" if acc is not None else e.get("note", "")
        params = cell(e.get("parameters"))
        out(f"| {m:,} | {k} | {name} | {e['depth']} | | | {params} | | | {shown} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[100, 1000])
    ap.add_argument("--ks", type=int, nargs="*", default=[2, 10])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--train", action="store_true", help="Adam columns (lncapacity.train)")
    ap.add_argument("--ln3-max", type=int, default=10_000)
    ap.add_argument("--ln3-multiclass-max", type=int, default=10_000)
    add_option(ap)
    args = ap.parse_args()
    MD.path = args.markdown
    out("### Certified nets for random labels: LN (width 3) against LN-G, and RMSNorm")
    out()
    out(
        f"Random points in R^3, uniformly random labels (seed {args.seed}); time = build + "
        "certify, seconds. "
        "Width and groups are totals over the layers; parameters count every weight and bias. "
        "The counting bound (proofs/ln_rank.md, Proposition 4) is the fewest 64-bit "
        "parameters an architecture memorising every labeling can have; the linear model's "
        "parameters are `(d + 1) k`. The rms rows are the RMSNorm twins of the ln3 and ln-g "
        "nets (width 2, groups of 2: proofs/rmsnorm.md), rounded to rationals and certified "
        "on their own; their time is the rounding and the certificate. Train accuracies are "
        "float measurements, never certificates."
    )
    out()
    out(
        "| m | k | net | depth | width | groups | parameters | certified | time (s) "
        "| train accuracy |"
    )
    out("|---" * 10 + "|")
    rank_rows = []
    for m in args.sizes:
        for k in args.ks:
            skipped = None
            if m >= args.ln3_max:
                skipped = f"m >= {args.ln3_max:,} (--ln3-max)"
            elif k > 2 and m >= args.ln3_multiclass_max:
                skipped = f"k > 2 and m >= {args.ln3_multiclass_max:,} (--ln3-multiclass-max)"
            t = time.perf_counter()
            s = capacity_summary(
                m, (k,), 3, args.seed, ln3=skipped is None, ranks=False, train=args.train
            )
            net_rows(s, k, args.train, skipped)
            print(f"  ({time.perf_counter() - t:.0f} s)", flush=True)
        rank_rows.append(capacity_summary(m, (), 3, args.seed, ranks=True)["ranks"] | {"m": m})
    out()
    out("### Rank of each layer's LayerNorm output (untrained width-64 nets, inputs in R^3)")
    out()
    out(
        "Proved ranks (a certified nonzero minor meets the exact upper bound of "
        "proofs/ln_rank.md); LN grows by one per layer, `d + l`, whatever the width; 16 "
        "groups of 4 reach `16 (4 - 1) = 48` at the first layer."
    )
    out()
    layers = range(1, RANK_DEPTH + 1)
    out("| m | net | " + " | ".join(f"layer {i}" for i in layers) + " |")
    out("|---" * (RANK_DEPTH + 2) + "|")
    for rk in rank_rows:
        for key, name in (("ln", "LN (1 group)"), ("ln_g", f"LN-G ({rk['groups']} groups)")):
            cells = [
                cell(row[key]["rank"])
                if row[key]["rank"] is not None
                else f"~{row[key]['numerical_rank']}"
                for row in rk["layers"]
            ]
            out(f"| {rk['m']:,} | {name} | " + " | ".join(cells) + " |")
    MD.save()


if __name__ == "__main__":
    main()
