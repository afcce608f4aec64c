"""``lncapacity verify-shatter``: re-check a shattering certificate, from scratch."""

from __future__ import annotations

import argparse
import json
import sys

from .common import EXIT_BAD, EXIT_OK, add_output_options, check_scheduler, run


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    vs = sub.add_parser(
        "verify-shatter",
        help="independently re-check a shattering certificate",
        description="Decode every net of a shattering certificate, certify both labelings it "
        "covers from scratch, and check that every labeling appears exactly once; exit 2 on any "
        "problem.",
    )
    vs.add_argument("certificate", metavar="CERT.jsonl")
    add_output_options(vs, workers=True)
    vs.set_defaults(handler=cmd_verify_shatter)


def cmd_verify_shatter(args: argparse.Namespace) -> int:
    from ..shatter import verify_shatter

    check_scheduler(args)
    (summary, problems), _ = run(
        "verifying",
        args.quiet,
        lambda bar: verify_shatter(
            args.certificate, workers=args.workers, progress=bar, scheduler=args.scheduler
        ),
    )
    ok = summary.all_certified and not problems
    # only what was re-derived: the folds (construction metadata, not certified) are left out
    report = {k: v for k, v in summary.to_dict().items() if k != "folds_histogram"}
    report |= {"valid": ok, "problems": problems[:20]}
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        print(
            f"{args.certificate}: {summary.certified}/{summary.labelings} labelings of "
            f"{summary.points} points certified at depth {summary.depth} "
            f"({summary.seconds:.1f} s)"
        )
    if not ok:
        more = f" and {len(problems) - 3} more" if len(problems) > 3 else ""
        print(f"lncapacity: error: {'; '.join(problems[:3])}{more}", file=sys.stderr)
        return EXIT_BAD
    return EXIT_OK
