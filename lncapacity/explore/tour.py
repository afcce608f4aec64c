"""The guided tour: one sentence per step, taken from :func:`lncapacity.explain.explain`.

Step 0 says what the net reads (one value per point, its label runs and smallest label
gap); each layer's step says what kind of fold it is, which end it folds, which runs join
and which values merge, and how the smallest gap between two labels changes; the last adds
how the readout decides.  The account is computed on the points drawn, with their
certificate, when its ball arithmetic is within the picture's budget (:func:`account`);
otherwise each step names its layer only.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

from flint import fmpq

from ..certify import Certificate
from ..data import PointSet
from ..errors import InputError
from ..explain import KINDS, explain
from ..model import LNNet
from ..plot.budget import CERTIFY_WORK
from .markup import literal

__all__ = ["NOTICE", "account", "sentences"]

NOTICE = (
    "<b>The ladder</b> (top): each line is a point, each column a step. Lines of one colour "
    "that meet are values the net has merged; the net is done when every column of one "
    "class is apart from the others, and the dashed threshold at the last column splits them.",
    "<b>The fold map</b>: the layer's map from the value it reads to the value the next map "
    "reads. Points on the two sides of the fold point (dotted) land at the same height: "
    "that is the fold, and why two runs of one label join.",
    "<b>The circle</b>: LayerNorm puts every output on a circle; the arrow is the direction "
    "the next map reads, so the value is the shadow of the point on the arrow.",
    "<b>The plane</b> (2-D data): the whole plane through the net, shaded by the value after "
    "the step. A fold shows as a mirror: two bands take the same shades. The last step shows "
    "the classes the readout gives.",
)
"""What to notice, a line per panel (the page's own markup)."""


def account(net: LNNet[fmpq], points: PointSet, cert: Certificate | None) -> dict[str, Any] | None:
    """:func:`~lncapacity.explain.explain` of the drawn points, or None when there is no
    certificate of them or its ball arithmetic (a ball a point and layer, at about
    ``128 + 2 L`` bits) is beyond :data:`~lncapacity.plot.budget.CERTIFY_WORK`, or the net is
    one explain does not read (algebraic weights)."""
    words = 1 + (128 + 2 * net.depth) // 64
    if cert is None or points.m * max(net.depth, 1) * words > CERTIFY_WORK:
        return None
    try:
        return explain(net, points, certificate=cert)
    except InputError:
        return None


def _g(x: float | None) -> str:
    return "none" if x is None else f"{x:.3g}"


def _input_words(acc: Mapping[str, Any] | None, mode: str) -> str:
    if mode != "value":
        return (
            "The net's maps have rank above one: there is no single value per point, so "
            "the ladder shows each step's first principal coordinate. Press Play to follow "
            "the layers."
        )
    head = "The net reads each point as one number, its projection (ladder column 0)"
    first = (acc or {}).get("input")
    if not first:
        return head + ". Each layer folds this line: press Play."
    return (
        f"{head}: sorted along it, the labels form {first['runs']} runs, and the closest two "
        f"points of different labels are {_g(first['label_gap'])} of the half-span apart. Each "
        "layer folds this line: press Play."
    )


def _kind_words(kind: Any) -> str:
    if kind is None:
        return "a layer without construction notes"
    return KINDS.get(kind, f"a layer of kind {kind}")


def _layer_words(e: Mapping[str, Any]) -> str:
    """What layer entry ``e`` of the account does, in one or two sentences."""
    clauses = []
    folded = e.get("folded")
    if folded and folded["end"] == "none":
        clauses.append("every value lies on one side of its fold point, so their order reverses")
    elif folded:
        n = folded[folded["end"]]
        clauses.append(
            f"it folds the {folded['end']} end ({n} value{'s' * (n != 1)} beyond the fold "
            "point) over the rest"
        )
    joins = e.get("joined_runs") or []
    if joins:
        j = joins[0]
        runs = " and ".join(str(r) for r in j["runs_before"])
        more = f" ({len(joins) - 1} more joins)" if len(joins) > 1 else ""
        clauses.append(f"runs {runs} of label {j['label']} join{more}")
    merged = e.get("merged_values") or []
    if merged:
        sizes = ", ".join(str(len(g)) for g in merged[:3])
        more = ", ..." if len(merged) > 3 else ""
        clauses.append(f"values merge (groups of {sizes}{more})")
    b, a = e.get("before"), e.get("after")
    text = "; ".join(clauses)
    text = text[:1].upper() + text[1:] + "." if text else ""
    if b and a:
        gb, ga = b["label_gap"], a["label_gap"]
        change = (
            "stays"
            if gb is None or ga is None or gb == ga
            else "shrinks from"
            if ga < gb
            else "grows from"
        )
        gap = f"{change} {_g(gb)} to {_g(ga)}" if change != "stays" else f"stays {_g(ga)}"
        text += (
            f" Label runs {b['runs']} → {a['runs']}; the smallest gap between two labels "
            f"{gap} of the amplitude."
        )
    return text.strip()


def sentences(
    net: LNNet[fmpq], acc: Mapping[str, Any] | None, steps: Sequence[int], mode: str
) -> dict[int, str]:
    """The title of each step (Plotly markup, every user string made literal): what the step
    shows, from the account ``acc`` (:func:`account`) when there is one."""
    out = {}
    entries = {e["layer"]: e for e in (acc or {}).get("layers", [])}
    for s in steps:
        if s == 0 and not net.layers:
            head = "The net has no LayerNorm layers: its readout reads the input directly"
            body = str(acc["readout"]["words"]) if acc is not None else ""
        elif s == 0:
            head, body = "Step 0: the input", _input_words(acc, mode)
        else:
            layer = net.layers[s - 1]
            head = f"Layer {s} of {net.depth}: {_kind_words(layer.meta.get('kind'))}"
            body = _layer_words(entries[s]) if s in entries else ""
            if s == net.depth and acc is not None:
                words = str(acc["readout"]["words"]).removeprefix("readout: ")
                body += f" Readout: {words}"
        lines = textwrap.wrap(body.strip(), 150) if body.strip() else []
        head_lines = textwrap.wrap(head, 150) or [""]
        out[s] = "<br>".join(
            [f"<b>{literal(line)}</b>" for line in head_lines] + [literal(x) for x in lines]
        )
    return out
