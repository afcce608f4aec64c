"""``lncapacity shatter``: certify that depth-L nets realise every labeling of L + 2 points."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from .. import fileformat
from ..data import load_points
from ..errors import InputError
from .common import (
    EXIT_BAD,
    EXIT_OK,
    add_output_options,
    check_scheduler,
    int_in,
    positive_int,
    run,
    seed_int,
)
from .report import margin_text

STATUS_PERIOD = 30.0
"""Seconds between the status lines of a run (labelings done, certified, left, rate)."""


def status_lines(bar: Any, period: float = STATUS_PERIOD) -> Any:
    """A ``status(summary)`` callback saying every ``period`` seconds how many labelings are
    done, certified and left, and at what rate (those of this run: a resumed run's start
    excluded)."""
    start, last = time.monotonic(), [time.monotonic()]
    first: list[int] = []

    def status(summary: Any) -> None:
        done = summary.certified + len(summary.failures)
        if not first:
            first.append(done)
            return
        now = time.monotonic()
        if now - last[0] < period:
            return
        last[0] = now
        rate = (done - first[0]) / max(now - start, 1e-9)
        left = summary.labelings - done
        eta = f", about {left / rate / 60:.0f} min left" if rate > 0 else ""
        bar.note(
            f"{done}/{summary.labelings} labelings done, {summary.certified} certified, "
            f"{left} left; {rate:.2f} labelings/s{eta}"
        )

    return status


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    s = sub.add_parser(
        "shatter",
        help="certify that depth-L nets realise every labeling of L + 2 points",
        description="For every one of the 2^(L+2) labelings of L + 2 points (default: 0, 1, ..., "
        "L + 1 on a line), build a width-3 LN-Net with exactly L LayerNorm layers and certify it; "
        "write one shattering certificate (JSON Lines; gzip if the name ends in .gz).",
    )
    s.add_argument("--depth", type=int, required=True, metavar="L")
    s.add_argument(
        "--points", metavar="FILE", help="L + 2 points in the DATA format (labels ignored)"
    )
    s.add_argument("--eps", default="0", help="LayerNorm epsilon, exact (default 0)")
    s.add_argument("--out", metavar="CERT.jsonl", help="default: shatter-L<depth>.jsonl")
    s.add_argument(
        "--search",
        action="store_true",
        help="allow more than L + 2 points: labelings the construction cannot do at depth L are "
        "searched for numerically (Adam) and certified; the rest are reported",
    )
    s.add_argument(
        "--random", type=int, metavar="N", help="N random points (default with --search: L + 3)"
    )
    s.add_argument(
        "--dim",
        type=int_in(1, fileformat.MAX_INPUT_DIM),
        default=2,
        help="dimension of --random points (default 2)",
    )
    s.add_argument("--seed", type=seed_int, default=0, help="seed of the --random points")
    s.add_argument("--restarts", type=positive_int, default=16, help="search restarts per labeling")
    s.add_argument(
        "--arch",
        choices=("ln3", "ln-g", "rms", "rms-g"),
        default="ln3",
        help="ln3: width-3 LN-Nets (default); ln-g: LN-G nets with --groups groups of 3 per layer "
        "(one bump per point of the smaller class; default points 0, 1, ..., 2g); rms, rms-g: "
        "their RMSNorm twins (width 2, groups of 2; proofs/rmsnorm.md), each certified",
    )
    s.add_argument(
        "--groups", type=positive_int, metavar="G", help="groups per layer (--arch ln-g, rms-g)"
    )
    s.add_argument(
        "--resume",
        action="store_true",
        help="journal the records in OUT.part (kept if interrupted); a run with --resume "
        "re-certifies a journal's records and continues after the last correct one",
    )
    add_output_options(s, workers=True)
    s.set_defaults(handler=cmd_shatter)


def cmd_shatter(args: argparse.Namespace) -> int:
    from ..shatter import labels_of, random_points, shatter

    grouped = args.arch in ("ln-g", "rms-g")
    if grouped and args.groups is None:
        raise InputError(f"--arch {args.arch} needs --groups")
    if not grouped and args.groups is not None:
        raise InputError("--groups is for --arch ln-g and rms-g")
    rms = args.arch.startswith("rms")
    default = (
        f"shatter-{'rms' if rms else 'ln'}-g{args.groups}-L{args.depth}"
        if args.groups
        else f"shatter-{'rms-' if rms else ''}L{args.depth}"
    )
    out = f"{default}.jsonl" if args.out is None else args.out
    check_scheduler(args)
    fileformat.check_outputs({"--out": out}, [args.points] if args.points else [])
    X = None if args.points is None else load_points(args.points).X
    if args.random is not None or (args.search and X is None):
        if X is not None:
            raise InputError("--points and --random exclude each other")
        X = random_points(args.random or args.depth + 3, args.dim, args.seed)
    search = {"restarts": args.restarts} if args.search else None
    summary, _ = run(
        "shattering",
        args.quiet,
        lambda bar: shatter(
            X,
            args.depth,
            args.eps,
            out=out,
            workers=args.workers,
            progress=bar,
            search=search,
            groups=args.groups,
            rms=rms,
            scheduler=args.scheduler,
            resume=args.resume,
            status=status_lines(bar),
            note=bar.note,
        ),
    )
    written = summary.all_certified
    report = summary.to_dict() | {
        "certificate": out if written else None,
        "seconds": round(summary.seconds, 3),
    }
    # the name certify uses for the same bound (min_margin is kept)
    report["min_certified_margin"] = report["min_margin"]
    margin_value = report["min_margin"]
    report["min_certified_margin_text"] = (
        margin_text(margin_value) if written and margin_value is not None else None
    )
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        hist = ", ".join(f"{k}: {v}" for k, v in report["folds_histogram"].items())
        verdict = "shattered" if written else "NOT shattered"
        margin = report["min_margin"]
        print(
            f"{verdict}: {summary.points} points at depth {summary.depth}, "
            f"{summary.certified}/{summary.labelings} labelings certified"
            + (
                f", min certified margin {'> 0 (below 1e-308)' if margin == 0 else f'{margin:.4g}'}"
                if margin is not None
                else ""
            )
            + f"\nlayers needed before padding (layers: labelings): {hist}\n"
            + f"{summary.seconds:.1f} s; "
            + (f"wrote {out}" if written else "no certificate written")
        )
    if not written:
        shown = ", ".join(
            "".join(map(str, labels_of(k, summary.points))) for k in summary.failures[:8]
        )
        print(
            f"lncapacity: error: {len(summary.failures)} labelings not realised "
            f"(point i has digit i): {shown}",
            file=sys.stderr,
        )
        return EXIT_BAD
    return EXIT_OK
