"""The account of a net on labelled points: :func:`explain`, as plain data and in words.

Layer by layer, the kind the construction wrote (in words from :data:`KINDS`), the exact
constants, which end is folded, the runs that join and the values that merge, the label
gaps in ball arithmetic, the readout and the certificate (:func:`lncapacity.certify.certify`).
The terms are those of :mod:`lncapacity.explain`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from flint import arb, fmpq

from ..algebraic import refuse_radicals
from ..arith import format_rational, json_float, parse_rational, precision, to_float
from ..certify import Certificate, certify
from ..data import named_labels
from ..model import LNNet
from .readout import class_arcs, class_intervals
from .runs import MERGE_RTOL, column_gaps, float_column_gaps, merge_history
from .scalars import ball_amplitudes, ball_columns, layer_constants, reads
from .trace import as_points, float_trace

__all__ = [
    "KINDS",
    "explain",
    "present_classes",
]


KINDS = {
    "pma": "the paper's fold: the smallest value meets its nearest same-label value",
    "pma-reverse": "an injective fold (order reversed) inside the paper's algorithm",
    "runs": "one label run fewer: an end run is folded onto a later run of its label "
    "(with two classes, the third from that end)",
    "peel": "one run fewer of a class against the rest: an end run is folded onto the third "
    "from that end, the other classes in them may interleave (peel, proofs/multiclass.md §8)",
    "pad": "padding: an injective layer, nothing merges",
    "constant": "one class only: a constant layer",
    "circle-first": "the angle of a 2-D affine image of the input, around a centre "
    "(circle method, proofs/circle_maps.md)",
    "circle": "a whole circle map: the circle folded at the two tangent points from a "
    "pole, its two arcs merged, then re-spaced",
    "trained": "a layer of a small net trained by Adam, kept as exact dyadic weights "
    "(a warm start of the circle search)",
    "fold": "a plain fold",
    "warp": "an injective warp that breaks a mirror symmetry before a fold",
    "rescale": "a rescale: an injective fold (order reversed, nothing merges) that spreads "
    "the values, exactly, over a fixed part of the amplitude, inserted because the label gaps "
    "had fallen below what float64 resolves (the float search found no certified fold)",
}
"""Words for the layer kinds the constructions write; any other kind is named as it is."""


def _show(v: Any) -> str:
    """A metadata value in a few characters: rational strings as decimals."""
    if isinstance(v, str):
        try:
            return f"{to_float(parse_rational(v)):.6g}"
        except (ValueError, OverflowError):
            return v if len(v) <= 40 else v[:37] + "..."
    if isinstance(v, list):
        return "[" + ", ".join(_show(x) for x in v[:6]) + (", ..." if len(v) > 6 else "") + "]"
    return _show(str(v)) if not isinstance(v, (int, float)) else f"{v:g}"


def _describe_kind(kind: str | None, meta: Mapping[str, Any], why: str | None = None) -> str:
    """The kind in words; an unknown kind is named, with its parameters.

    ``why``: the layer's ``meta.why`` with class names for the construction's label
    numbers (``_why``), if already worked out.
    """
    if kind is None:
        return "a layer without construction notes"
    if kind in KINDS:
        words = KINDS[kind]
        if "boundaries" in meta:  # the circle method's count around the circle after it
            words += f"; {meta['boundaries']} label boundaries around the circle after it"
    else:
        params = [f"{k} {_show(v)}" for k, v in meta.items() if k not in ("kind", "why")]
        words = f"a layer of kind {kind!r}" + (f" ({', '.join(params)})" if params else "")
    if why or meta.get("why"):
        words += f" (why: {why or meta['why']})"
    return words


def present_classes(net: LNNet[fmpq]) -> list[Any] | None:
    """The classes the construction numbered ``0..k-1``, for an ``envelope`` readout, else None.

    The multiclass construction numbers the classes present in its data, in the
    order of ``net.classes``, and gives every other class a zero readout row
    (lncapacity/construct/build.py): the classes with a non-zero row, in order.
    """
    if net.readout.meta.get("kind") != "envelope":
        return None
    return [c for c, row in zip(net.classes, net.readout.W, strict=True) if any(row)]


def _why(meta: Mapping[str, Any], present: Sequence[Any] | None) -> str | None:
    """``meta.why`` with the classes named (:func:`~lncapacity.data.named_labels`)."""
    why = meta.get("why")
    if not isinstance(why, str) or not present:
        return None if why is None else str(why)
    return named_labels(why, present)


def explain(
    net: LNNet[fmpq],
    X: Any,
    y: Any = None,
    *,
    certificate: Certificate | None = None,
) -> dict[str, Any]:
    """The layer-by-layer account of ``net`` on labelled points, as plain data.

    Keys: ``net`` (depth, eps, classes, method and the top-level ``meta``),
    ``input`` (the projection column), ``layers`` (one entry per LayerNorm layer:
    ``kind``, the metadata verbatim, the exact ``centre``, ``fold_point`` and
    ``offset_squared`` read from the weights, ``folded`` (which end, and how many
    values lie on that side), runs before and after, which runs joined, merged
    values, smallest label gaps before and after, ``why`` (a warp's reason, with
    class names for the construction's label numbers: :func:`present_classes`) and
    ``words``), ``readout`` (with a rank-one readout: ``lines``, each class's slope
    and intercept in the last value, ``thresholds`` where the upper envelope
    changes class, exact, and ``class_order`` along the line; ``intervals``, and
    ``arcs`` of the circle) and ``certificate`` (certified count, the certified
    minimum margin and precision, from :func:`lncapacity.certify.certify`).
    """
    refuse_radicals(net, "explain")
    points = as_points(net, X, y)
    cert = certificate if certificate is not None else certify(net, points)
    cls_index = [net.classes.index(c) for c in points.y]
    names = list(net.classes)
    rd = reads(net)
    # balls lose about a bit a layer; the certificate may have used float64 intervals (53)
    bits = max(cert.precision, 128 + 2 * net.depth)
    cols = ball_columns(net, points, bits)
    trace = float_trace(net, points)
    if cols is not None:
        amplitudes = ball_amplitudes(net, cols, bits)  # weights beyond floats: finite ratios
        columns = [
            column_gaps(cols[c], cls_index, amplitudes[c]) | {"exact": True}
            for c in range(len(cols))
        ]
    else:
        columns = [
            (float_column_gaps(v, cls_index, trace.amplitude[c]) | {"exact": False})
            if v is not None
            else None
            for c, v in enumerate(trace.values)
        ]

    labels_arr = np.array(cls_index, dtype=np.intp)
    floats_of: list[np.ndarray | None] = list(trace.values)
    if cols is not None:  # merges and folded ends read from the balls' midpoints
        floats_of = [np.array([to_float(b.mid()) for b in c]) for c in cols]
        floats_of += [None] * (len(trace.values) - len(floats_of))
    history = merge_history(net, dataclasses.replace(trace, values=floats_of), labels_arr)

    def column_summary(c: int) -> dict[str, Any] | None:
        col = columns[c] if c < len(columns) else None
        if col is None:
            return None
        return {
            "runs": len(col["runs"]),
            "run_labels": [names[cls_index[r[0]]] for r in col["runs"]],
            "run_sizes": [len(r) for r in col["runs"]],
            "label_gap": json_float(col["label_gap"]),
            "label_gap_certainly_positive": col["label_gap_certain"],
            "computed_in": "arb balls" if col["exact"] else "float64",
        }

    present = present_classes(net)
    layers = []
    for i, layer in enumerate(net.layers, 1):
        meta = dict(layer.meta)
        kind = meta.get("kind")
        entry: dict[str, Any] = {"layer": i, "kind": kind, "meta": meta}
        if "why" in meta:
            entry["why"] = _why(meta, present)
        a, nxt = rd[i - 1], rd[i]
        groups = net.norm(i - 1).groups
        if groups != 1:
            entry["groups"] = groups
        if a is not None and nxt is not None and groups == 1:
            rms = net.norm(i - 1).rms
            s0, g, k, a1, a2 = layer_constants(net, layer.b, a.col, nxt.row, not rms)
            fold = s0 + a2 * k / (a1 * g) if a1 != 0 and g != 0 else None
            offset = (k - net.eps) / (3 * g) if g != 0 and not rms else None  # the gadget's
            entry.update(
                centre=format_rational(s0),
                offset_squared=format_rational(offset) if offset is not None else None,
                fold_point=format_rational(fold) if fold is not None else None,
            )
        before, after = column_summary(i - 1), column_summary(i)
        entry["before"], entry["after"] = before, after
        if before is not None and after is not None:
            rb, ra = columns[i - 1]["runs"], columns[i]["runs"]
            run_of = {k: j for j, r in enumerate(rb) for k in r}
            joined = []
            for run in ra:
                src = sorted({run_of[k] for k in run})
                if len(src) > 1:
                    joined.append(
                        {"label": names[cls_index[run[0]]], "runs_before": [r + 1 for r in src]}
                    )
            entry["joined_runs"] = joined
            entry["merged_values"] = history[i - 1]
            if "fold_point" in entry and entry["fold_point"] is not None:
                fold_point = parse_rational(entry["fold_point"])
                below, above = _sides(cols, floats_of, i - 1, fold_point, bits)
                left = int(np.sum(below))
                right = len(below) - left
                # the folded end: the side of the fold point with fewer whole label runs
                # (then fewer values): runs of R_1.. (or ..R_n) are reflected over the rest
                runs_left = sum(bool(np.all(below[r])) for r in rb)
                runs_right = sum(bool(np.all(above[r])) for r in rb)
                if left == 0 or right == 0:
                    side = "none"
                elif runs_left != runs_right:
                    side = "left" if runs_left < runs_right else "right"
                else:
                    side = "left" if left <= right else "right"
                entry["folded"] = {
                    "end": side,
                    "left": left,
                    "right": right,
                    "runs_left": runs_left,
                    "runs_right": runs_right,
                }
        entry["words"] = _layer_words(entry, names)
        layers.append(entry)

    readout: dict[str, Any] = {"kind": net.readout.meta.get("kind"), "meta": dict(net.readout.meta)}
    intervals = class_intervals(net)
    if intervals is not None and (last := rd[-1]) is not None:
        # z_c = slope_c s + intercept_c in the last value s (the column the readout reads)
        readout["lines"] = [
            {"class": c, "slope": format_rational(a), "intercept": format_rational(b)}
            for c, a, b in zip(names, last.col, net.readout.b, strict=True)
        ]
        readout["thresholds"] = [format_rational(hi) for _, hi, _ in intervals[:-1]]
        readout["class_order"] = [names[c] for _, _, c in intervals]
    if intervals is not None:
        readout["intervals"] = [
            {
                "class": names[c],
                "from": None if lo is None else format_rational(lo),
                "to": None if hi is None else format_rational(hi),
            }
            for lo, hi, c in intervals
        ]
    if net.layers and net.width == 3:
        readout["arcs"] = [
            {"class": names[c], "from": round(s, 6), "to": round(e, 6)}
            for s, e, c in class_arcs(net)
        ]
    readout["words"] = _readout_words(readout, net)

    first = column_summary(0)
    return {
        "net": {
            "depth": net.depth,
            "width": net.width,
            **({"groups": list(net.groups)} if net.grouped else {}),
            **({"norm": "rms"} if net.rms else {}),
            "eps": format_rational(net.eps),
            "classes": names,
            "method": net.meta.get("method"),
            "meta": dict(net.meta),
        },
        "points": points.m,
        "input": first,
        "layers": layers,
        "readout": readout,
        "certificate": {
            "certified": cert.certified,
            "points": len(cert.points),
            "all_certified": cert.all_certified,
            "min_margin": json_float(cert.min_margin) if cert.all_certified else None,
            "precision_bits": cert.precision,
            "theorem": cert.theorem,
        },
        "merge_rtol": MERGE_RTOL,
    }


def _sides(
    cols: list[list[arb]] | None,
    floats_of: list[np.ndarray | None],
    c: int,
    fold: fmpq,
    bits: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Which values of column ``c`` lie certainly below and which certainly above the exact
    ``fold`` point: from the balls where there are balls (values beyond the float range too),
    else in floats."""
    if cols is not None:
        with precision(bits):
            at = arb(fold)
            return np.array([v < at for v in cols[c]]), np.array([v > at for v in cols[c]])
    vals = floats_of[c]
    assert vals is not None
    fp = to_float(fold)
    return vals < fp, vals > fp


def _few(ks: Sequence[int], limit: int = 6) -> str:
    shown = ", ".join(str(k) for k in ks[:limit])
    return shown + (f", ... ({len(ks)} in all)" if len(ks) > limit else "")


def _g(x: Any) -> str:
    return "none" if x is None else f"{x:.3g}"


def _layer_words(e: Mapping[str, Any], names: Sequence[Any]) -> str:
    parts = [f"layer {e['layer']}: {_describe_kind(e['kind'], e['meta'], e.get('why'))}."]
    if "groups" in e:
        parts.append(f"LayerNorm in {e['groups']} groups (LN-G): no single fold.")
    if e.get("centre") is not None:
        c = to_float(parse_rational(e["centre"]))
        off = e.get("offset_squared")
        beta = math.sqrt(to_float(parse_rational(off))) if off is not None else None
        fp = e.get("fold_point")
        s = f"centre {c:.6g}, offset {_g(beta)}"
        if fp is not None and fp != e["centre"]:
            s += f", fold point {to_float(parse_rational(fp)):.6g}"
        parts.append(s + ".")
    folded = e.get("folded")
    if folded:
        if folded["end"] == "none":
            parts.append("Every value lies on one side of the fold point: the order just reverses.")
        else:
            n = folded[folded["end"]]
            parts.append(
                f"Folds the {folded['end']} end ({n} value{'s' * (n != 1)} beyond the fold point)."
            )
    b, a = e.get("before"), e.get("after")
    if b and a:
        parts.append(f"Label runs {b['runs']} -> {a['runs']}.")
        for j in e.get("joined_runs", [])[:4]:
            idx = ", ".join(str(r) for r in j["runs_before"])
            parts.append(f"Runs {idx} (label {j['label']}) join.")
        if len(e.get("joined_runs", [])) > 4:
            parts.append(f"({len(e['joined_runs']) - 4} more joins.)")
        for g in e.get("merged_values", [])[:4]:
            parts.append(f"Values merge: a group of {len(g)} (points {_few(g)}).")
        parts.append(
            f"Smallest label gap {_g(b['label_gap'])} -> {_g(a['label_gap'])} (of the amplitude)."
        )
    return " ".join(parts)


def _readout_words(r: Mapping[str, Any], net: LNNet[fmpq]) -> str:
    if "intervals" in r:
        if len(r["intervals"]) == 1:
            return f"readout: every value gives class {r['intervals'][0]['class']}."
        pieces = []
        for iv in r["intervals"]:
            lo = "-inf" if iv["from"] is None else f"{to_float(parse_rational(iv['from'])):.6g}"
            hi = "+inf" if iv["to"] is None else f"{to_float(parse_rational(iv['to'])):.6g}"
            pieces.append(f"{iv['class']} on ({lo}, {hi})")
        head = "readout: the last value decides: "
        if r.get("kind") == "envelope" and "lines" in r:
            slope = {ln["class"]: ln["slope"] for ln in r["lines"]}
            slopes = ", ".join(f"{slope[iv['class']]} ({iv['class']})" for iv in r["intervals"])
            taus = ", ".join(f"{to_float(parse_rational(t)):.6g}" for t in r["thresholds"])
            head = (
                f"readout: an upper envelope of {len(r['lines'])} lines in the last value, "
                f"slopes {slopes}, meeting at the thresholds {taus}: "
            )
        return head + ", ".join(pieces) + "."
    if "arcs" in r:
        return (
            f"readout: {len(r['arcs'])} arcs of the circle, "
            + ", ".join(f"{a['class']} on ({a['from']:.3f}, {a['to']:.3f}) rad" for a in r["arcs"])
            + "."
        )
    if not net.layers:
        return "readout: an affine map of the input (no LayerNorm layers)."
    n, k = net.widths[-1], len(net.classes)
    last = net.norm(net.depth - 1)
    after = "" if last.is_identity else " (with its gain and bias)"
    kind = "RMSNorm" if last.rms else "LayerNorm"
    if last.groups != 1:
        name = "RMSNorm in groups" if last.rms else "LN-G"
        kind = f"{name} ({last.groups} groups of {n // last.groups})"
    return (
        f"readout: {k} scores, an affine map of layer {net.depth}'s {kind} output{after} "
        f"in R^{n} (rank above one: no single value decides); the highest score wins."
    )
