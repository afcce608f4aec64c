"""The reports several commands share: the summary of ``certify`` and ``verify`` (checks,
files, JSON and text), and phrases ``shatter`` and ``explain`` use too."""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

import numpy as np

from .. import fileformat, floats, parallel
from ..arith import json_float, printable
from ..certify import Certificate, certify, exact_scores
from ..data import PointSet
from ..errors import InputError
from ..model import LNNet
from .common import EXIT_BAD, EXIT_OK, run

NOT_RIGHT_SHOWN, NOT_RIGHT_PRINTED = 1000, 20
"""How many points not certainly right the JSON summary lists, and the text prints."""


def float_backends(option: str | None) -> tuple[str, ...]:
    """The backends ``--float`` asks for (checked before any long computation), or all there are
    (a CUDA backend named where no CUDA device is, is reported skipped, with the reason)."""
    if option is None:
        return floats.available_backends()
    names = tuple(dict.fromkeys(name.strip() for name in option.split(",") if name.strip()))
    if not names:
        raise InputError(f"--float: name one or more of {', '.join(floats.BACKENDS)}")
    for name in names:
        if name not in floats.BACKENDS:
            raise InputError(
                f"--float: unknown backend {name!r} (choose from {', '.join(floats.BACKENDS)})"
            )
    torch = [name for name in names if name in floats.TORCH_BACKENDS]
    if torch and not floats.have_torch():
        raise InputError(f"--float {torch[0]} needs PyTorch: pip install 'lncapacity[torch]'")
    return names


def check_float_options(args: argparse.Namespace) -> None:
    """``--float`` and ``--require-float``, checked before any long computation (the default,
    every backend there is, imports PyTorch: later)."""
    if args.float is not None:
        float_backends(args.float)
    if args.require_float is not None:
        for name in float_backends(args.require_float):
            if (why := floats.unavailable(name)) is not None:
                raise InputError(f"--require-float {name}: {why}")


def check_and_report(
    args: argparse.Namespace,
    net: LNNet[Any],
    points: PointSet,
    seconds: dict[str, float],
    out: str | None,
    extra: dict[str, Any] | None = None,
) -> int:
    """Certify ``net`` on ``points``, check it in floats, write ``out`` and ``--certificate``
    when every point is certified and every ``--require-float`` backend is right on every
    point (a run that exits 2 writes nothing), and print the summary (with ``extra``'s keys):
    the end of certify, verify and train."""
    workers = getattr(args, "workers", None)
    spread = {"workers": workers, "scheduler": getattr(args, "scheduler", None)}
    required = float_backends(args.require_float) if args.require_float else ()
    wanted = None  # every backend there is (the default, --float omitted), which includes required
    skipped: dict[str, str] = {}  # asked for, but not runnable here (a CUDA one, no device)
    if args.float is not None:
        wanted = tuple(dict.fromkeys((*float_backends(args.float), *required)))
        skipped = {b: why for b in wanted if (why := floats.unavailable(b)) is not None}
        wanted = tuple(b for b in wanted if b not in skipped)
    # A large float pass (and PyTorch's import) runs in a process of its own while this one
    # certifies: on a core the certificate leaves idle.  Not after PyTorch has run here (a
    # process forked then can hang in its first parallel kernel): then, and for small
    # passes, here after the certificate.
    beside = floats.large(net, points.m) and "torch" not in sys.modules
    forward_workers = 1 if workers is None and beside else workers
    with parallel.beside(
        floats.forwards, net, points, wanted, forward_workers, alone=beside
    ) as float_scores:
        cert, seconds["certify"] = run(
            "certifying",
            args.quiet,
            lambda bar: certify(net, points, progress=bar, scores=True, **spread),
        )
        scores = float_scores()
    exact = cert.scores if cert.scores is not None and len(points.X) else None
    tighten = _refiner(net, points) if floats.worth_refining(net) else None
    checks = [floats.check(net, points, b, exact, tighten, scores=z) for b, z in scores.items()]
    failing = [c for c in checks if c.backend in required and not c.all_agree]
    written = cert.all_certified and not failing
    if written and (out or args.certificate):
        net_json = fileformat.to_dict(net)
        files = []
        if args.certificate:
            cert_json = _certificate_json(cert, net_json, points)
            files.append((args.certificate, fileformat.dumps(cert_json)))
        if out:
            files.append((out, fileformat.dumps(net_json)))
        fileformat.write_all_atomic(files)
    summary = _summary(net, points, cert, checks, seconds, out, args.certificate, written)
    for backend, why in skipped.items():  # said so
        summary["float"][backend] = {"skipped": why, "library": "torch"}
    summary |= extra or {}
    summary["torch_skipped"] = args.float is None and not set(scores) & set(floats.TORCH_BACKENDS)
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        print(_text(summary))
    if failing:
        print(
            "lncapacity: error: --require-float: "
            + "; ".join(f"{c.backend} misclassifies {c.wrong} of {c.total} points" for c in failing)
            + ("; nothing written" if out or args.certificate else ""),
            file=sys.stderr,
        )
        return EXIT_BAD
    if not cert.all_certified:
        bad = ", ".join(_where(points, p.index) for p in cert.failures[:5])
        more = len(cert.failures) - 5
        print(
            f"lncapacity: error: certificate fails at {bad}"
            + (f" and {more} more" if more > 0 else "")
            + f" ({cert.wrong} certainly wrong, {cert.undecided} undecided)"
            + ("; nothing written" if out or args.certificate else ""),
            file=sys.stderr,
        )
        return EXIT_BAD
    return EXIT_OK


def decided_by(summary: dict[str, Any]) -> str:
    """How the certificate decided, in words: ``"53 bits"``, or ``"by proofs/ln_g_steps.md,
    Theorem 8"`` (and the bits of the points the theorem left to the generic passes)."""
    bits, theorem = summary["precision_bits"], summary.get("theorem")
    if not theorem:
        return f"{bits} bits"
    return f"by {theorem}" + (f"; the rest at {bits} bits" if bits else "")


def _where(points: PointSet, k: int) -> str:
    rows = points.origins[k]
    return f"point {k} ({points.unit} {rows[0]})"


def _refiner(net: LNNet[Any], points: PointSet) -> Any:
    """``refine(rows)`` for :func:`lncapacity.floats.check`: 128-bit ball bounds on the exact
    scores of some points, each point's computed once for all the backends."""
    known: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def refine(rows: list[int]) -> tuple[np.ndarray, np.ndarray]:
        new = [k for k in rows if k not in known]
        if new:
            lo, hi = exact_scores(net, [points.X[k] for k in new])
            known.update((k, (lo[i], hi[i])) for i, k in enumerate(new))
        return np.array([known[k][0] for k in rows]), np.array([known[k][1] for k in rows])

    return refine


def _certificate_json(
    cert: Certificate, net_json: dict[str, Any], points: PointSet
) -> dict[str, Any]:
    import hashlib

    digest = hashlib.sha256(json.dumps(net_json, sort_keys=True).encode()).hexdigest()
    d = cert.to_dict()
    d["net_sha256"] = digest
    d["data"] = points.source
    for r in d["results"]:
        r[points.unit + "s"] = list(points.origins[r["point"]])
    return d


def _summary(
    net: LNNet[Any],
    points: PointSet,
    cert: Certificate,
    checks: list[floats.FloatCheck],
    seconds: dict[str, float],
    out: str | None,
    cert_path: str | None,
    written: bool,
) -> dict[str, Any]:
    return {
        "data": points.source,
        "points": points.m,
        "duplicates_merged": points.duplicates,
        "dim": points.d,
        "classes": list(net.classes),
        "method": net.meta.get("method"),
        "fallback": net.meta.get("fallback"),  # why runs gave way to pma, if it did
        # every link, in order: [{"from": "circle", "to": "runs", "why": ...}, ...]
        "fallback_chain": net.meta.get("fallback_chain"),
        "eps": str(net.eps),
        "depth": net.depth,
        "folds": net.meta.get("folds"),
        "depth_bound": max(points.m - 2, 0),
        "trained": net.meta.get("source") == "torch",  # imported from PyTorch
        "width": net.width,  # null when the layers' widths differ
        "widths": list(net.widths),
        "norm": norm_kind(net),  # "ln", "rms" (RMSNorm) or "mixed"
        "certified": cert.certified,
        "all_certified": cert.all_certified,
        # every point is certainly right, certainly wrong, or undecided at the precision cap
        "certainly_right": cert.right,
        "certainly_wrong": cert.wrong,
        "undecided": cert.undecided,
        # the points not certainly right (the first NOT_RIGHT_SHOWN), with their verdicts
        "not_right": [
            {
                "point": p.index,
                "where": _where(points, p.index),
                "verdict": p.verdict,
                "margin_interval": [json_float(v) for v in p.margin_interval],
            }
            for p in cert.failures[:NOT_RIGHT_SHOWN]
        ],
        # null with a single class (nothing to separate) or when some point fails
        "min_certified_margin": json_float(cert.min_margin) if cert.all_certified else None,
        # the same as text when a certified margin is below the float range (never "0.0" alone)
        "min_certified_margin_text": margin_text(cert.min_margin) if cert.all_certified else None,
        "precision_bits": cert.precision,
        # the margin theorem that decided points (their precision_bits 0), or null
        "theorem": cert.theorem,
        # one entry per backend run here: "float64", "float32" (NumPy), and "torch-float64",
        # "torch-float32" when PyTorch is installed
        "float": {
            c.backend: {
                # points whose float prediction is their label ("agree": the same count, by
                # its older name, kept for the scripts that read it)
                "right": c.agree,
                "agree": c.agree,
                "total": c.total,
                "min_margin": json_float(c.min_margin),
                "library": "torch" if c.backend in floats.TORCH_BACKENDS else "numpy",
                "dtype": c.dtype,
                "max_abs_score": json_float(c.max_abs_score),
                # worst |float score - exact score| in ulps of the dtype (an upper bound)
                "max_ulps": None if c.max_ulps != c.max_ulps else json_float(c.max_ulps),
                "warning": _float_warning(c, cert.all_certified),
                # ... and as a number (an upper bound)
                "max_abs_error": (
                    None if c.max_abs_error != c.max_abs_error else json_float(c.max_abs_error)
                ),
            }
            for c in checks
        },
        "net": out if written else None,
        "certificate": cert_path if written else None,
        "seconds": {k: round(v, 3) for k, v in seconds.items()},
    }


def margin_text(x: float) -> str | None:
    """A certified margin as text: ``"> 0 (below 1e-308)"`` or ``">= 1.797...e+308 (beyond
    float64)"`` for one the float range cannot show (lower bounds are clamped to it)."""
    if x == math.inf:
        return None
    if x == sys.float_info.max:
        return f">= {x:.17g} (beyond float64)"
    return "> 0 (below 1e-308)" if x == 0 else f"{x:.17g}"


def _float_warning(c: floats.FloatCheck, certified: bool) -> str | None:
    """What a user should know about a float backend's result, in one phrase (or None)."""
    if not c.all_agree:
        why = (
            " (the exact certificate still holds; the net is too deep/too fine for this precision)"
            if certified
            else ""
        )
        return f"{c.backend} misclassifies {c.wrong} of {c.total} points{why}"
    if c.near_resolution:
        ratio = c.min_margin / c.max_abs_score
        return (
            f"{c.backend} margin near float resolution ({ratio:.1e} of the largest |score|; "
            "rounding may flip points)"
        )
    return None


def _eps_text(eps: str) -> str:
    """``eps`` as written in the file, or about it when that is long (a float's exact value)."""
    if len(eps) <= 16:
        return eps
    p, _, q = eps.partition("/")
    return f"{int(p) / int(q or 1):.6g} (exactly {eps})"


def _width_text(s: dict[str, Any]) -> str:
    kind = {"rms": " RMSNorm", "mixed": " (LayerNorm and RMSNorm)"}.get(s.get("norm", "ln"), "")
    if s["width"] is not None or not s["widths"]:
        return str(s["width"] if s["width"] is not None else "-") + kind
    return "-".join(map(str, s["widths"])) + kind


def norm_kind(net: LNNet[Any]) -> str:
    """``"ln"`` when every layer is a LayerNorm, ``"rms"`` when every one is an RMSNorm (in
    groups or not), else ``"mixed"``."""
    rms = {net.norm(i).rms for i in range(net.depth)}
    return "mixed" if len(rms) > 1 else "rms" if rms == {True} else "ln"


def _text(s: dict[str, Any]) -> str:
    def num(x: float | None) -> str:
        if x is None:
            return "none (one class)" if len(s["classes"]) == 1 else "none"
        return "> 0 (below 1e-308)" if x == 0 else f"{x:.4g}"

    n_dup = s["duplicates_merged"]
    dup = f" ({n_dup} duplicate row{'s' * (n_dup != 1)} merged)" if n_dup else ""
    classes = ", ".join(map(str, s["classes"]))
    lines = [
        f"{s['data']}: {s['points']} points in R^{s['dim']}{dup}, classes {classes}",
        f"net: width {_width_text(s)}, depth {s['depth']}"
        # PMA's bound is for width-3 nets; LN-G nets (steps, blocks) have their own
        + (
            f" (bound m - 2 = {s['depth_bound']})"
            if s["method"] and s["width"] == (2 if s.get("norm") == "rms" else 3)
            else ""
        )
        + (
            f", {s['folds']} before padding"
            if s["folds"] is not None and s["folds"] != s["depth"]
            else ""
        )
        + (f", method {s['method']}" if s["method"] else "")
        + (f" ({_fallback_text(s)})" if s.get("fallback") else "")
        + f", eps {_eps_text(s['eps'])}",
        f"certified: {s['certified']}/{s['points']} points"
        + (
            f", min certified margin {num(s['min_certified_margin'])}"
            if s["all_certified"]
            else f"  FAILS: {s['certainly_wrong']} certainly wrong, {s['undecided']} undecided"
        )
        + f" ({decided_by(s)})",
    ]
    if t := s.get("training"):
        stop = "every margin >= 1" if t["converged"] else f"max_iter {t['max_iter']}"
        lines.insert(
            2,
            f"trained: {t['iterations']} Adam steps (stopped at {stop}), float32 right on "
            f"{t['train_accuracy_float32']:.2%} of the points, loss {t['loss']:.3g}",
        )
    shown = s.get("not_right", [])[:NOT_RIGHT_PRINTED]
    for p in shown:
        lo, hi = p["margin_interval"]
        lo, hi = -math.inf if lo is None else lo, math.inf if hi is None else hi
        lines.append(f"  {p['where']}: {p['verdict']}, margin in [{lo:.4g}, {hi:.4g}]")
    if s["points"] - s["certified"] > len(shown):
        lines.append(f"  ... and {s['points'] - s['certified'] - len(shown)} more")
    for name, c in s["float"].items():
        if "skipped" in c:
            lines.append(f"{name}: skipped ({c['skipped']})")
            continue
        x = c["min_margin"]  # a float margin of 0 is a tie, not a tiny certified bound
        if x is None:  # infinite: +inf with one class, -inf (a NaN or infinite score) if wrong
            margin = "-inf (overflow or NaN)" if c["right"] < c["total"] else num(x)
        else:
            margin = f"{x:.4g}"
        flag = f"  WARNING: {c['warning']}" if c["warning"] else ""
        ulps = c.get("max_ulps")  # in the text for trained nets only (built ones are exact)
        abs_err = c.get("max_abs_error")
        dist = (
            ""
            if ulps is None or not s.get("trained")
            else f", max {ulps:.3g} ulp from exact"
            + ("" if abs_err is None else f" (|error| <= {abs_err:.3g})")
        )
        lines.append(f"{name}: {c['right']}/{c['total']} right, min margin {margin}{dist}{flag}")
    if s.get("torch_skipped"):
        lines.append("torch-float64, torch-float32: skipped (PyTorch is not installed)")
    for key in ("net", "certificate"):
        if s[key]:
            lines.append(f"wrote {s[key]}")
    return "\n".join(map(printable, lines))  # labels from the data: no terminal controls


def _fallback_text(s: dict[str, Any]) -> str:
    """The fallback in words: a chain of more than one link as ``circle → runs → pma:``
    and each link's reason; one link as :func:`gave_way` says it."""
    chain = s.get("fallback_chain") or []
    if len(chain) < 2:
        return gave_way(s["method"], s["fallback"])
    path = " → ".join([chain[0]["from"], *(c["to"] for c in chain)])
    return f"{path}: " + "; ".join(f"{c['from']}: {c['why']}" for c in chain)


def gave_way(method: str | None, why: str, named: bool = False) -> str:
    """A fallback note: ``why``, after "runs gave way (to pma or peel)" unless it names
    itself (circle's notes, and peel's when peel was asked for)."""
    if method not in ("pma", "peel") or why.startswith("peel"):
        return why
    return f"runs gave way to {method}: {why}" if named else f"runs gave way: {why}"
