"""The page: the figures of a net on its points, and one self-contained HTML page of them.

:func:`figures` decides what is drawn before any work begins: at most ``max_points`` points
(fewer for a net too large to draw that many: :mod:`lncapacity.plot.budget`), a sample
drawn at random with a fixed seed beyond; their certificate when it is within the budget;
the account of :func:`lncapacity.explain.explain` for the tour's sentences (:mod:`.tour`).
:func:`page` lays the figures out with what to notice, how to make a page of one's own data
and the notes on what was left out; every user string on it is escaped.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

from flint import fmpq

from ..certify import Certificate, certify
from ..errors import InputError
from ..explain import as_points, float_trace
from ..model import LNNet
from ..plot.budget import affordable_points, certificate_affordable, sample_note, sample_points
from .layers import LAYERS_GLUE, layer_figure, steps_shown
from .markup import require_plotly
from .playground import PLAYGROUND_GLUE, playground_figure
from .tour import NOTICE, account, sentences

__all__ = ["MAX_LAYERS", "MAX_POINTS", "figures", "page"]

MAX_LAYERS = 40
"""Layers the tour shows at most (evenly spaced beyond, first and last kept)."""
MAX_POINTS = 1_000
"""Points a page draws at most (a sample beyond; fewer for a net too large to draw that many)."""

UNCERTIFIED = (
    "no certified margin here (certifying the points drawn is beyond the page's budget; "
    "lncapacity verify certifies every point)"
)


def _margins(cert: Certificate | None, m: int) -> list[str]:
    if cert is None:
        return [UNCERTIFIED] * m
    return [
        f"margin {p.margin:.4g} (certified)" if p.certified else "NOT certified"
        for p in cert.points
    ]


def figures(
    net: LNNet[fmpq],
    X: Any,
    y: Any = None,
    *,
    certificate: Certificate | None = None,
    max_layers: int = MAX_LAYERS,
    max_points: int = MAX_POINTS,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """The page's Plotly figures by name (``layers``, ``playground``) and notes, each saying
    what is left out, sampled or subsampled, and why.

    ``certificate``: of every point of ``X`` (default: the points drawn are certified when
    the budget allows, with ``progress`` as in :func:`lncapacity.certify.certify`).
    """
    require_plotly()
    points = as_points(net, X, y)
    if certificate is not None and len(certificate.points) != points.m:
        raise InputError(
            f"the certificate has {len(certificate.points)} points, the data {points.m}"
        )
    shown, ids = sample_points(points, affordable_points(net, max_points))
    notes = []
    if sampled := sample_note(shown.m, points.m):
        notes.append(f"The page shows {sampled}.")
    if certificate is not None:
        cert: Certificate | None = Certificate(tuple(certificate.points[i] for i in ids))
    elif certificate_affordable(net, shown.m):
        cert = certify(net, shown, progress=progress)
    else:
        cert = None
        notes.append(
            f"Certifying {shown.m:,} points of this net is beyond the page's budget: the page "
            "shows no certified margins and the tour names each layer only "
            "(lncapacity verify certifies every point)."
        )
    trace = float_trace(net, shown)
    figs: dict[str, Any] = {}
    if not net.layers:
        notes.append("The net has no LayerNorm layers: there is no layer to step through.")
    if trace.has_values or trace.principal:
        steps = steps_shown(net.depth, max_layers)
        mode = "value" if trace.has_values else "principal"
        acc = account(net, shown, cert)
        titles = sentences(net, acc, steps, mode)
        margins = _margins(cert, shown.m) if shown.d == 2 else None
        figs["layers"], more = layer_figure(net, shown, ids, trace, steps, titles, margins)
        notes += more
        if len(steps) - 1 < net.depth:
            notes.append(
                f"The net has {net.depth} layers, too deep to show whole: the tour shows "
                f"{len(steps) - 1} of them, evenly spaced (first and last kept)."
            )
        if net.layers and not trace.on_circle:
            notes.append("Some layer is not of width 3: there is no circle to show.")
    if shown.d != 2:
        notes.append(f"The points have {shown.d} features: the plane needs 2.")
    figs["playground"] = playground_figure()
    return figs, notes


_CAPTIONS = {
    "layers": "<b>Tour and inspector.</b> Press <b>Play</b> to step through the net, from "
    "the input (step 0) to the last layer, or move the slider; the title says what each "
    "step does. Hover a point for its id (its row in the data, from 0), label and value; "
    "points the construction has merged are one larger marker (hover: how many).",
    "playground": "<b>Fold playground.</b> One fold gadget: the input value s draws the line "
    "(s - c) u + beta v in the plane orthogonal to (1, 1, 1); LayerNorm scales it onto the "
    "circle of radius sqrt 3 (grey rays), and the read v + gamma u turns the arc into the next "
    "value s'. Colours follow s. The title is the layer's map with its exact constants "
    "(proofs/fold_lemma.md). Move the three sliders.",
}

OWN_DATA = (
    "<h2>Your own data</h2><p>A CSV file with a <code>label</code> column (or an .npy or "
    ".npz array) is two commands away from a page like this one: build and certify a net "
    "for it, then explore it.</p><pre>lncapacity certify my.csv --out net.json\n"
    "lncapacity explore net.json my.csv --out page.html</pre><p>The net is yours to use "
    "anywhere: <code>lncapacity export net.json --torch model.pt --onnx model.onnx</code> "
    "writes it as PyTorch modules and as an ONNX model.</p>"
)

POLICY = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "img-src data: blob:; font-src data:"
)
"""The page's Content-Security-Policy: its own inline script and styles, images only from
data, nothing fetched from anywhere (a second wall behind the escaping of user text)."""

STYLE = (
    "body{font-family:sans-serif;max-width:1260px;margin:1em auto;color:#222}"
    ".note{background:#fff4d6;padding:.4em .8em;border-left:4px solid #E69F00}"
    "section{margin-bottom:2em}pre{background:#f4f4f4;padding:.6em .8em}"
    "ul.notice li{margin-bottom:.3em}"
)


def page(
    net: LNNet[fmpq],
    X: Any,
    y: Any = None,
    *,
    certificate: Certificate | None = None,
    max_layers: int = MAX_LAYERS,
    max_points: int = MAX_POINTS,
    title: str = "lncapacity explorer",
    progress: Callable[[int, int], None] | None = None,
) -> str:
    """One self-contained HTML page (Plotly's JavaScript inlined, nothing fetched) of
    :func:`figures`."""
    figs, notes = figures(
        net,
        X,
        y,
        certificate=certificate,
        max_layers=max_layers,
        max_points=max_points,
        progress=progress,
    )
    points = as_points(net, X, y)
    parts = []
    first = True
    for name, fig in figs.items():
        div = require_plotly().io.to_html(
            fig,
            validate=False,
            full_html=False,
            include_plotlyjs=first,
            include_mathjax=False,
            div_id=f"explore-{name}",
            auto_play=False,
            post_script={"layers": LAYERS_GLUE, "playground": PLAYGROUND_GLUE}[name],
            config={"displaylogo": False},
        )
        first = False
        extra = ""
        if name == "layers":
            extra = (
                "<p><b>What to notice.</b></p><ul class='notice'>"
                + "".join(f"<li>{line}</li>" for line in NOTICE)
                + "</ul>"
            )
        parts.append(f'<section id="{name}"><p>{_CAPTIONS[name]}</p>{extra}{div}</section>')
        if name == "layers":
            parts.append(f'<section id="own">{OWN_DATA}</section>')
    if "layers" not in figs:
        parts.insert(0, f'<section id="own">{OWN_DATA}</section>')
    note = "".join(f'<p class="note">{html.escape(n)}</p>' for n in notes)
    classes = ", ".join(str(c) for c in net.classes[:12])
    classes += f" and {len(net.classes) - 12} more" if len(net.classes) > 12 else ""
    summary = (
        f"{points.m:,} points, {points.d} features, classes {classes}; a net of depth {net.depth}"
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">'
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>"
        f"<h1>{html.escape(title)}</h1><p>{html.escape(summary)}. Everything drawn here is "
        "float64, a picture of the net; the certificate is the proof.</p>"
        f"{note}{''.join(parts)}</body></html>\n"
    )
