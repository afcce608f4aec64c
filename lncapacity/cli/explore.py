"""``lncapacity explore``: one self-contained HTML page to move through a net at work."""

from __future__ import annotations

import argparse
import json
import os
import time

from .. import fileformat
from ..data import load_points
from ..errors import InputError
from ..explore import EXAMPLES, MAX_LAYERS, MAX_POINTS
from .common import EXIT_OK, add_max_points, add_output_options, int_in, run


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ex = sub.add_parser(
        "explore",
        help="an interactive HTML page: a guided tour of the layers, a fold playground",
        description="Write one self-contained HTML page (works offline, no server, fetches "
        "nothing) that shows a saved net at work on the points of DATA, or a bundled example: "
        "a tour of the layers (a Play button and a slider; each step's title says what the "
        "layer does) that moves the ladder, LayerNorm's circle, the fold map and, for 2-D "
        "data, the plane through the net together, hovering a point for its value and "
        "certified margin; and a fold playground (sliders for the centre, the offset beta and "
        "the read gamma). Needs Plotly: pip install 'lncapacity[explore]'.",
    )
    ex.add_argument("net", metavar="NET.json", nargs="?")
    ex.add_argument("data", metavar="DATA", nargs="?")
    ex.add_argument(
        "--example",
        choices=EXAMPLES,
        help="build a net for a bundled point set instead of reading NET.json and DATA",
    )
    ex.add_argument("--out", default="explore.html", metavar="PAGE.html", help="the page")
    ex.add_argument(
        "--max-layers",
        type=int_in(1),
        default=MAX_LAYERS,
        metavar="N",
        help=f"layers the tour shows at most, evenly spaced beyond (default {MAX_LAYERS})",
    )
    add_max_points(ex, MAX_POINTS, "the page")
    add_output_options(ex)
    ex.set_defaults(handler=cmd_explore)


def _output_file(path: str) -> None:
    """Fail now, in one line, if ``path`` cannot become the page."""
    if os.path.isdir(path):
        raise InputError(f"{path}: is a folder")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise InputError(f"{path}: no such folder {os.path.dirname(path) or '.'!r}")
    if not os.access(parent, os.W_OK):
        raise InputError(f"{path}: folder not writable")


def cmd_explore(args: argparse.Namespace) -> int:
    from .. import explore

    if args.example is not None and (args.net or args.data):
        raise InputError("give NET.json and DATA, or --example, not both")
    if args.example is None and not (args.net and args.data):
        raise InputError(f"give NET.json and DATA (or --example {'|'.join(EXAMPLES)})")
    _output_file(args.out)
    explore.require_plotly()  # a missing Plotly is a one-line error, before any work
    start = time.perf_counter()
    if args.example is not None:
        net, points = explore.example(args.example)
        title = f"lncapacity explorer: {args.example}"
    else:
        net = fileformat.load(args.net)
        points = load_points(args.data)
        title = f"lncapacity explorer: {os.path.basename(args.net)} on {points.source}"
    text, _ = run(
        "drawing",
        args.quiet,
        lambda bar: explore.page(
            net,
            points,
            max_layers=args.max_layers,
            max_points=args.max_points,
            title=title,
            progress=bar,
        ),
    )
    fileformat.write_atomic(args.out, text)
    seconds = round(time.perf_counter() - start, 3)
    if args.json:
        print(json.dumps({"file": args.out, "depth": net.depth, "seconds": seconds}, indent=1))
    else:
        print(args.out)
    return EXIT_OK
