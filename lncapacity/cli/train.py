"""``lncapacity train``: train an LN-Net with Adam in PyTorch, read it exactly, certify it."""

from __future__ import annotations

import argparse
from typing import Any

from .. import fileformat
from ..data import load_points
from ..errors import InputError
from .common import add_output_options, run
from .report import check_and_report, check_float_options


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    t = sub.add_parser(
        "train",
        help="train an LN-Net with Adam (PyTorch), read it exactly and certify it",
        description="Train an LN-Net (Linear, then LayerNorm or GroupNorm and Linear per "
        "layer, then a linear readout) on DATA with full-batch Adam in PyTorch (float32, "
        "deterministic given --seed), read the trained module as the exact net it is, certify "
        "it on DATA with rigorous ball arithmetic, and check it in float64 and float32, as "
        "certify does.  Exit 2, writing nothing, when some point is not certified right (or "
        "a --require-float backend misclassifies one).  Needs PyTorch: pip install "
        "'lncapacity[torch]'.",
    )
    t.add_argument("data", metavar="DATA")
    t.add_argument("--out", metavar="NET.json", help="write the net (lnnet/1)")
    # ranges: train.check_parameters, the one place for them (an error names the option)
    t.add_argument("--width", type=int, default=16, help="default 16")
    t.add_argument("--depth", type=int, default=1, help="layers (default 1)")
    t.add_argument(
        "--groups",
        type=int,
        default=1,
        help="GroupNorm(G, width) layers (LN-G) instead of LayerNorm (default 1: LayerNorm)",
    )
    t.add_argument(
        "--norm",
        choices=("ln", "rms"),
        default="ln",
        help="ln: LayerNorm or GroupNorm (default); rms: RMSNorm in --groups groups, with a "
        "gain and a bias (ParallelLN(width, width / G, centering=False): LayerNorm's "
        "parameters, one for one)",
    )
    t.add_argument("--seed", type=int, default=0, help="initial weights' seed")
    t.add_argument("--max-iter", type=int, default=2000, help="Adam steps at most (2000)")
    t.add_argument("--lr", type=float, default=None, help="Adam's step size (default 0.01)")
    add_output_options(t, certificate=True)
    t.set_defaults(handler=cmd_train)


OPTIONS = {"random_state": "--seed", "max_iter": "--max-iter"}
"""The options of train()'s parameters whose names differ."""


def cmd_train(args: argparse.Namespace) -> int:
    from ..train import DEFAULT_LR, check_parameters, train

    fileformat.check_outputs({"--out": args.out, "--certificate": args.certificate}, [args.data])
    check_float_options(args)
    params: dict[str, Any] = {
        "width": args.width,
        "depth": args.depth,
        "groups": args.groups,
        "random_state": args.seed,
        "max_iter": args.max_iter,
        "lr": DEFAULT_LR if args.lr is None else args.lr,
        "norm": args.norm,
    }
    try:
        check_parameters(**params)
    except InputError as e:  # "max_iter: ..." as "--max-iter: ..."
        name, _, why = str(e).partition(": ")
        raise InputError(f"{OPTIONS.get(name, '--' + name)}: {why}") from None
    points = load_points(args.data)
    result, seconds = run("training", args.quiet, lambda bar: train(points, **params, progress=bar))
    training = {
        "iterations": result.iterations,
        "max_iter": args.max_iter,
        "converged": result.converged,
        "train_accuracy_float32": result.train_accuracy,
        "loss": result.loss,
        "seed": args.seed,
    }
    return check_and_report(
        args, result.net, points, {"train": seconds}, out=args.out, extra={"training": training}
    )
