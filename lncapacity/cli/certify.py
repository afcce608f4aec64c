"""``lncapacity certify``: build a net for labelled points, certify it, check it in floats."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math

from .. import fileformat
from ..construct import ARCHS, CHOICES, DEFAULT_ARCH, DEFAULT_METHOD, build
from ..construct.circle import OBJECTIVES
from ..data import load_points
from ..errors import InputError
from .common import add_output_options, check_scheduler, run, seed_int
from .explain import explain_lines
from .report import check_and_report, check_float_options


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    c = sub.add_parser(
        "certify",
        help="build a width-3 LN-Net (or an LN-G or RMSNorm net) for labelled points and "
        "certify it",
        description="Build a width-3 LN-Net (--arch ln-g: an LN-G net; rms, rms-g: their "
        "RMSNorm twins) that classifies "
        "every point of DATA (CSV with a 'label' column, .npy with labels in the last column, "
        "or .npz with X and y), certify it with rigorous ball arithmetic, and check it in "
        "float64 and float32 (NumPy, and PyTorch's own modules when torch is installed).",
    )
    c.add_argument("data", metavar="DATA")
    c.add_argument("--out", metavar="NET.json", help="write the net (lnnet/1)")
    c.add_argument(
        "--eps",
        default="0",
        help="LayerNorm (RMSNorm) epsilon, exact (default 0; 1e-5 as torch)",
    )
    c.add_argument(
        "--arch",
        default=DEFAULT_ARCH,
        choices=list(ARCHS),
        help="ln3 (default: the width-3 LN-Net, every --method) or ln-g (groups of 3, any "
        "number of classes: depth 1, one group per label boundary of a projection; --depth 2: "
        "about 2 sqrt(boundaries) groups; --depth 3 or more: the depth-2 net re-stepped); "
        "rms, rms-g: the RMSNorm twin of the ln3 or ln-g net (width 2, or RMSNorm in groups "
        "of 2: parallel layer scaling), its weights rounded to rationals and certified on its "
        "own (proofs/rmsnorm.md)",
    )
    c.add_argument("--depth", type=int, metavar="L", help="pad to exactly L LayerNorm layers")
    c.add_argument(
        "--method",
        default=DEFAULT_METHOD,
        choices=list(CHOICES),
        help="construction: auto (default: circle for three or more classes; for two, the "
        "shallower of runs and a circle search within --budget), "
        "runs (one label run fewer per layer, float-faithful), pma (the paper's algorithm), "
        "circle (whole circle maps per layer, searched, far shallower; runs when not) or "
        "peel (three or more classes: one class at a time against the rest, by the binary "
        "runs folds; runs gives way to it)",
    )
    c.add_argument(
        "--budget",
        type=seconds,
        metavar="SECONDS",
        help="CPU time the circle search for two classes may take (auto: default m/10 s, "
        "10 to 120, for m < 2000 points, else no search; circle: default no "
        "limit; 0: no search)",
    )
    c.add_argument(
        "--objective",
        default=OBJECTIVES[0],
        choices=list(OBJECTIVES),
        help="with --method circle: faithful (default: a net float64 runs right) or depth "
        "(the search in ball arithmetic: the shallowest net it finds, certified; float64 "
        "reported, not required)",
    )
    c.add_argument("--seed", type=seed_int, default=0, help="seed for the choice of projection")
    c.add_argument(
        "--exact",
        action="store_true",
        help="with --method pma: fold at the true midpoints (algebraic weights, merged values "
        "equal; the net is written as lnnet/1.1 with requires algebraic)",
    )
    c.add_argument(
        "--explain",
        action="store_true",
        help="then the net layer by layer, as `lncapacity explain` prints it (with --json: an "
        "'explain' key); certifies once more for it",
    )
    add_output_options(c, certificate=True, workers=True)
    c.set_defaults(handler=cmd_certify)


def cmd_certify(args: argparse.Namespace) -> int:
    fileformat.check_outputs({"--out": args.out, "--certificate": args.certificate}, [args.data])
    check_float_options(args)
    check_scheduler(args)
    if args.depth is not None and args.depth > fileformat.MAX_DEPTH:
        raise InputError(f"--depth {args.depth}: beyond the limit of {fileformat.MAX_DEPTH} layers")
    if args.arch in ("ln-g", "rms-g"):
        ln_g_arguments(args)
    if args.exact and args.arch != "ln3":
        raise InputError(f"--arch {args.arch}: --exact builds ln3 nets (algebraic weights)")
    if args.exact and args.method != "pma":
        raise InputError("--exact: exact merges are the paper's algorithm; add --method pma")
    if args.objective != OBJECTIVES[0] and args.method != "circle":
        raise InputError(f"--objective {args.objective}: the circle search's; add --method circle")
    points = load_points(args.data)
    if points.d > fileformat.MAX_INPUT_DIM:
        raise InputError(
            f"{points.source}: {points.d} features, beyond the limit of {fileformat.MAX_INPUT_DIM}"
        )
    net, t_build = run(
        "folding",
        args.quiet,
        lambda bar: build(
            points,
            eps=args.eps,
            depth=args.depth,
            method=args.method,
            seed=args.seed,
            progress=bar,
            exact=args.exact,
            arch=args.arch,
            budget=args.budget,
            objective=args.objective,
        ),
    )
    if not args.explain:
        return check_and_report(args, net, points, {"build": t_build}, out=args.out)
    from ..explain import explain

    # check_and_report prints the summary; the account follows it (text), or joins it (JSON)
    with contextlib.redirect_stdout(io.StringIO()) as report:
        code = check_and_report(args, net, points, {"build": t_build}, out=args.out)
    account = explain(net, points)
    if args.json:
        print(json.dumps(json.loads(report.getvalue()) | {"explain": account}, indent=1))
    else:
        print(report.getvalue() + "\n".join(explain_lines(account, points)))
    return code


def seconds(text: str) -> float:
    """An argparse type: a finite number of seconds ``>= 0``, else one line."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"expected seconds >= 0, got {text[:40]!r}")
    return value


def ln_g_arguments(args: argparse.Namespace) -> None:
    """:class:`InputError` for options ``--arch ln-g`` (and ``rms-g``) does not take (before
    any work)."""
    if args.method != DEFAULT_METHOD:
        raise InputError(
            f"--arch {args.arch}: --method {args.method} builds ln3 nets; ln-g nets are built by "
            "steps, one group per label boundary (drop --method)"
        )
    if args.depth is not None and args.depth < 0:
        raise InputError(f"--arch {args.arch}: --depth {args.depth}: a depth is at least 1")
    if args.depth == 0:
        raise InputError(
            f"--arch {args.arch}: --depth 0 has no LayerNorm; ln-g nets have depth 1 or more"
        )
    if args.exact:
        raise InputError(f"--arch {args.arch}: --exact is the paper's algorithm for ln3 nets")
    if args.budget is not None:
        raise InputError(
            f"--arch {args.arch}: --budget limits the circle search of ln3 nets (drop it)"
        )
