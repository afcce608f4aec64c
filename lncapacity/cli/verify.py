"""``lncapacity verify``: re-certify a saved net on labelled points, from scratch."""

from __future__ import annotations

import argparse

from .. import fileformat
from ..data import load_points
from .common import add_output_options, check_scheduler
from .report import check_and_report, check_float_options


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    v = sub.add_parser(
        "verify",
        help="independently re-certify a saved net on labelled points",
        description="Load an lnnet/1 file and certify, from scratch, that it classifies every "
        "point of DATA (and check it in float64 and float32, as certify does); exit 2 if any "
        "point is not certified.",
    )
    v.add_argument("net", metavar="NET.json")
    v.add_argument("data", metavar="DATA")
    add_output_options(v, certificate=True, workers=True)
    v.set_defaults(handler=cmd_verify)


def cmd_verify(args: argparse.Namespace) -> int:
    fileformat.check_outputs({"--certificate": args.certificate}, [args.net, args.data])
    check_float_options(args)
    check_scheduler(args)
    net = fileformat.load(args.net)
    points = load_points(args.data)
    return check_and_report(args, net, points, {}, out=None)
