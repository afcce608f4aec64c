"""``lncapacity vc``: the VC dimension's sandwich, every bound with its source."""

from __future__ import annotations

import argparse
import json
import sys

from .. import fileformat
from ..arith import format_rational
from .common import EXIT_BAD, EXIT_OK, int_in, positive_int


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    v = sub.add_parser(
        "vc",
        help="lower and upper bounds on the VC dimension, with their sources",
        description="The VC dimension of depth-L nets on R^d with LayerNorm's eps: the best "
        "proved or certified lower bound (a theorem in proofs/, or a shattering certificate "
        "shipped in certificates/; with eps > 0 too, proofs/sector_theorem.md section 7) and "
        "the best upper bound (the line bound for d = 1, any eps; the sector count for d >= 2, "
        "eps = 0 only, proofs/sector_theorem.md; Warren's counting bound, any eps, "
        "proofs/vc_upper.md), and the gap. Each bound says for which eps it holds.",
    )
    v.add_argument("--depth", type=int_in(1, 4096), required=True, metavar="L")
    v.add_argument(
        "--dim", type=int_in(1, fileformat.MAX_INPUT_DIM), default=1, help="input dimension (1)"
    )
    v.add_argument(
        "--arch",
        choices=("ln3", "ln-g", "rms", "rms-g"),
        default="ln3",
        help="ln3: width-3 LN-Net (default); ln-g: groups of 3 per layer; rms, rms-g: their "
        "RMSNorm twins (width 2, groups of 2), the same bounds (proofs/rmsnorm.md)",
    )
    v.add_argument("--groups", type=positive_int, help="groups per layer (--arch ln-g or rms-g)")
    v.add_argument(
        "--eps",
        default="0",
        help="LayerNorm epsilon, exact (default 0; every eps > 0 gives the same bounds)",
    )
    v.add_argument(
        "--verify",
        action="store_true",
        help="re-check a certificate lower bound with verify-shatter (exit 2 if it fails)",
    )
    v.add_argument("--json", action="store_true", help="print a JSON summary instead of text")
    v.set_defaults(handler=cmd_vc)


def cmd_vc(args: argparse.Namespace) -> int:
    from ..errors import InputError
    from ..theory.vc import repo_root, sandwich

    if args.arch in ("ln3", "rms") and args.groups not in (None, 1):
        raise InputError(f"--groups is for --arch ln-g or rms-g ({args.arch} is one group)")
    if args.arch in ("ln-g", "rms-g") and args.groups is None:
        raise InputError(f"--arch {args.arch} needs --groups")
    s = sandwich(args.arch, args.depth, args.dim, args.groups or 1, args.eps)
    report = s.to_dict()
    if args.verify and s.lower.kind == "certificate":
        from ..shatter import verify_shatter

        summary, problems = verify_shatter(repo_root() / s.lower.source)
        ok = summary.all_certified and not problems and summary.points == s.lower.value
        report["lower"]["verified"] = ok
        if not ok:
            print(
                f"lncapacity: error: {s.lower.source}: {'; '.join(problems[:3])}", file=sys.stderr
            )
            return EXIT_BAD
    if args.json:
        print(json.dumps(report, indent=1))
        return EXIT_OK
    arch = {
        "ln3": "width-3 LN-Net",
        "ln-g": f"LN-G, {s.groups} groups of 3 per layer",
        "rms": "width-2 RMSNorm net",
        "rms-g": f"RMSNorm in groups, {s.groups} groups of 2 per layer",
    }[args.arch]
    eps = format_rational(s.eps)
    print(f"VC dimension, {arch}, depth {s.depth}, inputs in R^{s.dim} (eps = {eps}):")
    print(f"  {s.lower.value} <= VC <= {s.upper.value}   (gap {s.gap})")
    print(f"  lower {s.lower.value}: {s.lower.name} [{s.lower.source}]")
    print(f"  upper {s.upper.value}: {s.upper.name} [{s.upper.source}; holds for {s.upper.holds}]")
    others = [b for b in s.uppers if b is not s.upper]
    for b in others:
        print(f"  (also upper {b.value}: {b.name} [{b.source}; holds for {b.holds}])")
    if s.eps != 0 and s.dim >= 2 and args.arch in ("ln3", "rms"):
        print("  (the sector count holds for eps = 0 only: with eps > 0 a disc, not a circle)")
    return EXIT_OK
