"""``lncapacity plot``: draw a net at work on its points, into a folder of figures."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from .. import fileformat
from ..certify import certify
from ..data import PointSet, load_points
from ..errors import InputError
from ..explain import float_trace
from ..model import LNNet
from ..plot.budget import MAX_POINTS, affordable_points, certificate_affordable, sample_points
from .common import EXIT_OK, add_max_points, add_output_options, run


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    pl = sub.add_parser(
        "plot",
        help="draw a net at work: ladder, fold maps, circles, regions, merge tree",
        description="Draw how a saved net moves the points of DATA, layer by layer (ladder, "
        "fold maps, LayerNorm's circle, decision regions for 2-D data, merge tree), and write "
        "the figures and the merge tree (GraphML) into a folder. Needs Matplotlib and NetworkX: "
        "pip install 'lncapacity[plot]'.",
    )
    pl.add_argument("net", metavar="NET.json")
    pl.add_argument("data", metavar="DATA")
    pl.add_argument("--out", default="figs", metavar="DIR", help="folder (default figs; made)")
    pl.add_argument(
        "--format", default="png,svg", metavar="F1,F2", help="image formats (default png,svg)"
    )
    pl.add_argument(
        "--merge-by",
        default="auto",
        choices=["auto", "runs", "values"],
        help="merge tree of label runs or of merged values (auto: values for pma nets)",
    )
    pl.add_argument(
        "--animate",
        metavar="FOLDS.gif",
        help="write an animated GIF of the folds instead (one frame per layer: the fold map "
        "and LayerNorm's circle)",
    )
    add_max_points(pl, MAX_POINTS, "every figure")
    add_output_options(pl)
    pl.set_defaults(handler=cmd_plot)


def _output_folder(path: str) -> None:
    """Fail now, in one line, if ``path`` cannot become a folder of figures."""
    folder = os.path.abspath(path)
    if os.path.exists(folder):
        if not os.path.isdir(folder):
            raise InputError(f"{path}: exists and is not a folder")
        if not os.access(folder, os.W_OK):
            raise InputError(f"{path}: folder not writable")
        return
    parent = os.path.dirname(folder)
    if not os.path.isdir(parent):
        raise InputError(f"{path}: no such folder {os.path.dirname(path) or '.'!r}")
    if not os.access(parent, os.W_OK):
        raise InputError(f"{path}: cannot create the folder (parent not writable)")


def _drawn(args: argparse.Namespace) -> tuple[LNNet, PointSet, int]:
    """The net, the points drawn (a sample of a large set, :mod:`lncapacity.plot.budget`)
    and how many points the data has."""
    net = fileformat.load(args.net)
    points = load_points(args.data)
    drawn, _ = sample_points(points, affordable_points(net, args.max_points))
    return net, drawn, points.m


def _animate(args: argparse.Namespace) -> int:
    """``plot --animate FOLDS.gif``: the folds as an animated GIF, one frame per layer."""
    if os.path.isdir(args.animate):
        raise InputError(f"{args.animate}: is a folder")
    if not os.path.isdir(os.path.dirname(os.path.abspath(args.animate))):
        raise InputError(f"{args.animate}: no such folder {os.path.dirname(args.animate)!r}")
    from ..plot import animate, require_matplotlib

    require_matplotlib()
    net, points, total = _drawn(args)
    start = time.perf_counter()
    layers = animate.save_animation(net, points, out=args.animate, sample_of=total)
    seconds = round(time.perf_counter() - start, 3)
    if args.json:
        print(json.dumps({"file": args.animate, "frames": layers, "seconds": seconds}, indent=1))
    else:
        print(args.animate)
    return EXIT_OK


def cmd_plot(args: argparse.Namespace) -> int:
    if args.animate is not None:
        return _animate(args)
    formats = [f.strip().lower() for f in args.format.split(",") if f.strip()]
    if not formats or any(f not in ("png", "svg", "pdf") for f in formats):
        raise InputError(f"--format: choose from png, svg, pdf, got {args.format!r}")
    _output_folder(args.out)
    from .. import plot

    plot.require_matplotlib()  # a missing Matplotlib is a one-line error, before any work
    net, points, total = _drawn(args)
    start = time.perf_counter()
    cert = None
    if points.d == 2 and certificate_affordable(net, points.m):
        cert, _ = run("certifying", args.quiet, lambda bar: certify(net, points, progress=bar))
    created = not os.path.isdir(args.out)
    try:
        os.makedirs(args.out, exist_ok=True)
    except OSError as e:
        raise InputError(f"{args.out}: cannot create the folder: {e.strerror}") from None
    try:
        trace = float_trace(net, points)
        paths = plot.save_figures(
            net,
            points,
            out=args.out,
            formats=formats,
            certificate=cert,
            by=args.merge_by,
            trace=trace,
            sample_of=total,
        )
    except BaseException:
        if created:  # leave nothing behind, not even the empty folder
            try:
                os.rmdir(args.out)
            except OSError:
                pass
        raise
    seconds = round(time.perf_counter() - start, 3)
    skipped = plot.skipped_figures(net, points, trace, cert)
    if args.json:
        print(
            json.dumps(
                {"files": [str(p) for p in paths], "skipped": skipped, "seconds": seconds},
                indent=1,
            )
        )
    else:
        print("\n".join(str(p) for p in paths))
        if not args.quiet:
            for name, why in skipped.items():
                print(f"skipped {name}: {why}", file=sys.stderr)
    return EXIT_OK
