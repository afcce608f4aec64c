"""Forgery hunt: mutated nets and shattering certificates against the verifiers.

Usage: python benchmarks/bench_soundness.py [--nets 6000] [--certificates 4500]
       [--grouped-nets 2000] [--theorem-nets 2000] [--seed 2024]
       [--markdown PATH]   (the manual's table: the default counts, under a minute)
Prints, per artefact and per kind of mutation: mutations tried, rejected, accepted and true
(the oracle's verdict: mpmath at 300 digits, its own grammar and gadget decoder), and accepted
forgeries (the goal: 0).  The forger and the oracle are in tests/forgery.py.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import forgery  # noqa: E402
import forgery_theorems  # noqa: E402
from markdown_table import Markdown, add_option  # noqa: E402

MD = Markdown(None)


def table(name: str, tally: forgery.Tally, sink: list, accepted_at: int, seconds: float) -> None:
    per_kind: dict[str, Counter[str]] = {}
    forged = Counter(tally.forgeries)
    for item in sink:
        kind, accepted = item[-1], item[accepted_at]
        c = per_kind.setdefault(kind, Counter())
        c["tried"] += 1
        c["accepted" if accepted else "rejected"] += 1
    print(f"\n{name} ({seconds:.1f} s)")
    print(f"{'mutation':<16} {'tried':>7} {'rejected':>9} {'accepted+true':>14} {'forgeries':>10}")
    for kind in sorted(per_kind):
        c = per_kind[kind]
        print(
            f"{kind:<16} {c['tried']:>7} {c['rejected']:>9} "
            f"{c['accepted'] - forged[kind]:>14} {forged[kind]:>10}"
        )
    print(
        f"{'total':<16} {tally.tried:>7} {tally.rejected:>9} {tally.accepted_true:>14} "
        f"{len(tally.forgeries):>10}"
    )
    MD.add(f"**{name}** ({seconds:.1f} s)")
    MD.add()
    MD.add("| mutation | tried | rejected | accepted and true | forgeries |")
    MD.add("|---|---|---|---|---|")
    for kind in sorted(per_kind):
        c = per_kind[kind]
        MD.add(
            f"| {kind} | {c['tried']} | {c['rejected']} | {c['accepted'] - forged[kind]} "
            f"| {forged[kind]} |"
        )
    MD.add(
        f"| **total** | {tally.tried} | {tally.rejected} | {tally.accepted_true} "
        f"| {len(tally.forgeries)} |"
    )
    MD.add()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nets", type=int, default=6000)
    ap.add_argument("--certificates", type=int, default=4500)
    ap.add_argument("--grouped-nets", type=int, default=2000, help="LN-G nets")
    ap.add_argument(
        "--theorem-nets", type=int, default=2000, help="LN-G nets certified by their theorems"
    )
    ap.add_argument("--seed", type=int, default=2024)
    add_option(ap)
    args = ap.parse_args()
    MD.path = args.markdown
    sink_n: list = []
    t0 = time.perf_counter()
    nets = forgery.net_campaign(args.nets, seed=args.seed, sink=sink_n)
    t1 = time.perf_counter()
    sink_c: list = []
    certs = forgery.shatter_campaign(args.certificates, seed=args.seed, sink=sink_c)
    t2 = time.perf_counter()
    sink_g: list = []
    grouped = forgery.net_campaign(args.grouped_nets, seed=args.seed, sink=sink_g, grouped=True)
    t3 = time.perf_counter()
    sink_t: list = []
    theorem, by_theorem = forgery_theorems.theorem_campaign(
        args.theorem_nets, seed=args.seed, sink=sink_t
    )
    t4 = time.perf_counter()
    table("lnnet/1 nets (verify)", nets, sink_n, 3, t1 - t0)
    table("shattering certificates (verify-shatter)", certs, sink_c, 2, t2 - t1)
    table("LN-G nets, lnnet/1.1 with groups (verify)", grouped, sink_g, 3, t3 - t2)
    table(
        f"LN-G step and block nets and their data, certified by the margin theorems (verify; "
        f"the theorem decided points in {by_theorem} of {theorem.tried})",
        theorem,
        sink_t,
        3,
        t4 - t3,
    )
    total = nets.tried + certs.tried + grouped.tried + theorem.tried
    forged = sum(len(t.forgeries) for t in (nets, certs, grouped, theorem))
    print(f"\n{total} mutations tried, {forged} forgeries accepted")
    MD.add(f"{total} mutations tried, {forged} forgeries accepted.")
    MD.save()
    sys.exit(1 if forged else 0)


if __name__ == "__main__":
    main()
