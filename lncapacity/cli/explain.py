"""``lncapacity explain``: the construction of a saved net, layer by layer, in words."""

from __future__ import annotations

import argparse
import json
from typing import Any

from .. import fileformat
from ..arith import printable
from ..certify import certify
from ..data import PointSet, load_points
from .common import EXIT_BAD, EXIT_OK, add_output_options, run
from .report import decided_by, gave_way


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ex = sub.add_parser(
        "explain",
        help="the construction of a saved net, layer by layer, in words",
        description="Read a saved net back on the points of DATA: per layer its kind, centre, "
        "offset and fold point, which end it folds, which label runs join and which values "
        "merge, the smallest label gap before and after; the readout; the certified margin.",
    )
    ex.add_argument("net", metavar="NET.json")
    ex.add_argument("data", metavar="DATA")
    add_output_options(ex)
    ex.set_defaults(handler=cmd_explain)


def cmd_explain(args: argparse.Namespace) -> int:
    from ..explain import explain

    net = fileformat.load(args.net)
    points = load_points(args.data)
    cert, _ = run("certifying", args.quiet, lambda bar: certify(net, points, progress=bar))
    account = explain(net, points, certificate=cert)
    if args.json:
        print(json.dumps(account, indent=1))
        return EXIT_OK
    print("\n".join(explain_lines(account, points)))
    return EXIT_OK if account["certificate"]["all_certified"] else EXIT_BAD


def explain_lines(account: dict[str, Any], points: PointSet) -> list[str]:
    """The text of ``lncapacity explain`` (and of ``certify --explain``)."""
    n, c = account["net"], account["certificate"]
    first = account["input"]
    lines = [
        f"{points.source}: {points.m} points; net of depth {n['depth']}, width {n['width']}, "
        f"eps {n['eps']}, classes {', '.join(map(str, n['classes']))}"
        + (f", method {n['method']}" if n["method"] else ""),
    ]
    if n["meta"].get("fallback"):
        lines.append(gave_way(n["method"], n["meta"]["fallback"], named=True))
    if first:
        gap = first["label_gap"]  # None: beyond the float range
        lines.append(
            f"input projection: {first['runs']} label runs, smallest label gap "
            + ("none" if gap is None else f"{gap:.3g}")
            + " (of the amplitude)"
        )
    lines += [e["words"] for e in account["layers"]]
    lines.append(account["readout"]["words"])
    margin = c["min_margin"]
    lines.append(
        f"certificate: {c['certified']}/{c['points']} points certified"
        + (f", min certified margin {margin:.4g}" if margin is not None else "")
        + f" ({decided_by(c)})"
    )
    return [printable(line) for line in lines]  # labels from the data: no terminal controls
