"""``lncapacity trace``: SSR and LSSR of labelled points after every layer of a net."""

from __future__ import annotations

import argparse
import json
from typing import Any

from .. import fileformat
from ..data import load_points
from .common import EXIT_OK, add_output_options, run


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    t = sub.add_parser(
        "trace",
        help="SSR and LSSR of labelled points after every layer of a net, certified",
        description="For NET.json and labelled POINTS, print the within-class over total sum of "
        "squares (SSR) and its lowest value under linear maps (LSSR) of the points before the "
        "first layer (exact), after every LayerNorm layer and of the readout scores (rigorous "
        "[lo, hi] bounds from ball arithmetic). A certified drop of LSSR shows a layer is not "
        "affine (proofs/lssr.md). Labels may be any classes, not only the net's.",
    )
    t.add_argument("net", metavar="NET.json")
    t.add_argument("data", metavar="POINTS")
    add_output_options(t)
    t.set_defaults(handler=cmd_trace)


def cmd_trace(args: argparse.Namespace) -> int:
    from ..theory.net_trace import trace

    net = fileformat.load(args.net)
    points = load_points(args.data)
    layers, seconds = run("tracing", args.quiet, lambda bar: trace(net, points, progress=bar))
    rows = [s.to_dict() for s in layers]
    hidden = layers[1:-1] if net.depth else []
    drops = [
        b.name
        for a, b in zip(layers[:-1], hidden, strict=False)
        if a.lssr is not None and b.lssr is not None and b.lssr.hi < a.lssr.lo
    ]
    summary = {
        "data": points.source,
        "net": args.net,
        "points": points.m,
        "classes": sorted({str(c) for c in points.y}),
        "depth": net.depth,
        "layers": rows,
        "lssr_drops": drops,
        "seconds": round(seconds, 3),
    }
    if args.json:
        print(json.dumps(summary, indent=1))
        return EXIT_OK
    print(
        f"{points.source}: {points.m} points, {len(summary['classes'])} classes; "
        f"net depth {net.depth}"
    )
    print(f"{'layer':<9} {'dim':>3}  {'SSR':<48} LSSR")
    for s in layers:
        print(f"{s.name:<9} {s.dim:>3}  {_certified_text(s.ssr):<48} {_certified_text(s.lssr)}")
    print(
        f"LSSR certified lower than before at {len(drops)} of {net.depth} LN layers "
        "(no affine map can lower it)"
        + (f": {', '.join(drops[:8])}" if drops else "")
        + (" ..." if len(drops) > 8 else "")
    )
    return EXIT_OK


def _certified_text(x: Any) -> str:
    """An exact value when short, else its certified decimal enclosure; never a bare float."""
    if x is None:
        return "undefined (all points equal)"
    text = str(x)
    if len(text) <= 34:
        return text
    lo, hi = x.printable_interval() if not x.is_exact else _enclosure(x)
    return f"[{lo}, {hi}]" + (" exact in --json" if x.is_exact else "")


def _enclosure(x: Any) -> tuple[str, str]:
    from ..theory.reals import decimal

    return decimal(x.lo, 10, up=False), decimal(x.hi, 10, up=True)
