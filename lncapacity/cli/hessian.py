"""``lncapacity hessian``: the Hessian measure of LN and LN-G (group LayerNorm), exactly."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from .. import fileformat
from ..errors import InputError
from .common import EXIT_OK, int_in, positive_int, seed_int

MAX_SAMPLES = 1000
"""``hessian --samples``: inputs of each kind (1,000 of each at d = 64: about 30 s)."""


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    h = sub.add_parser(
        "hessian",
        help="the Hessian measure of LN and LN-G (group LayerNorm) and their ratio",
        description="H(f; x) = sum_i ||d^2 y_i/dx^2||_F^2 for LayerNorm and LN-G at seeded "
        "inputs (Gaussian, sparse, adversarial), computed exactly from the closed form "
        "(proofs/ln_g_hessian.md), with the proposition's bound g (d - 2g)/(d - 2).",
    )
    h.add_argument(
        "--d", type=int_in(3, fileformat.MAX_INPUT_DIM), default=64, help="features (default 64)"
    )
    h.add_argument(
        "--groups", type=positive_int, default=16, help="LN-G groups, dividing d (default 16)"
    )
    h.add_argument("--eps", default="0", help="LayerNorm epsilon, exact (default 0)")
    h.add_argument("--no-centre", action="store_true", help="LN-G without centring (RMS groups)")
    h.add_argument(
        "--samples",
        type=int_in(1, MAX_SAMPLES),
        default=3,
        help=f"inputs of each kind (default 3, at most {MAX_SAMPLES})",
    )
    h.add_argument("--seed", type=seed_int, default=0)
    h.add_argument("--json", action="store_true", help="print a JSON summary instead of text")
    h.set_defaults(handler=cmd_hessian)


def cmd_hessian(args: argparse.Namespace) -> int:
    import numpy as np

    from ..arith import epsilon, format_rational
    from ..theory.hessian import KINDS, ln_hessian, ratio_lower_bound, sample_input
    from ..theory.reals import decimal

    d, g = args.d, args.groups
    if d % g:
        raise InputError(f"--groups {g} must divide --d {d}")
    try:
        eps = epsilon(args.eps)
    except ValueError as e:
        raise InputError(f"--eps: {e}") from None
    centre = not args.no_centre
    bound = ratio_lower_bound(d, g) if d // g >= 3 else None
    rng = np.random.default_rng([args.seed, d, g])
    samples = []
    for kind in KINDS:
        for i in range(args.samples):
            xq = sample_input(kind, d, g, rng, float(eps), centre)
            try:
                h_ln = ln_hessian(xq, 1, eps, True)
                h_g = ln_hessian(xq, g, eps, centre)
            except ValueError as e:  # a constant group with eps = 0: outside the assumption
                samples.append({"kind": kind, "index": i, "undefined": str(e)})
                continue
            ratio = h_g / h_ln if h_ln else None
            ok = None if ratio is None or bound is None else ratio >= bound
            samples.append(
                {
                    "kind": kind,
                    "index": i,
                    "H_LN": _bounds_json(h_ln, decimal),
                    "H_LNG": _bounds_json(h_g, decimal),
                    "ratio": None if ratio is None else _bounds_json(ratio, decimal),
                    "ratio_ge_bound": ok,
                    # a counterexample's input, exactly (the float's dyadic value per entry)
                    "x": [format_rational(v) for v in xq] if ok is False else None,
                }
            )
    summary = {
        "d": d,
        "groups": g,
        "group_size": d // g,
        "eps": str(eps),
        "centre": centre,
        "bound": None if bound is None else str(bound),
        "bound_applies": bound is not None and eps == 0 and centre,
        "samples": samples,
    }
    if args.json:
        print(json.dumps(summary, indent=1))
        return EXIT_OK
    print(
        f"H(LN) and H(LN-G) at seeded inputs: d = {d}, {g} groups of {d // g}, eps {eps}, "
        + ("centred" if centre else "uncentred (RMS groups)")
    )
    if bound is not None:
        applies = "" if summary["bound_applies"] else " (proved for eps = 0, centred LN-G only)"
        print(f"bound: ratio >= g (d - 2g)/(d - 2) = {bound} ~ {float(bound):.6g}{applies}")
    print(f"{'input':<14} {'H(LN)':>12} {'H(LN-G)':>12} {'ratio':>12}  >= bound")
    for s in samples:
        name = f"{s['kind']} {s['index']}"
        if "undefined" in s:
            print(f"{name:<14} undefined: {s['undefined']}")
            continue
        mark = {True: "yes", False: "NO", None: "-"}[s["ratio_ge_bound"]]
        cells = [s["H_LN"][0], s["H_LNG"][0], s["ratio"][0] if s["ratio"] else "undefined"]
        print(f"{name:<14} " + " ".join(f"{c:>12}" for c in cells) + f"  {mark}")
    print("values are exact rationals shown rounded down to 6 digits (--json: [lo, hi])")
    if any(s.get("ratio_ge_bound") is False for s in samples):
        print("NO: below the bound (outside its assumptions); --json gives those inputs exactly")
    return EXIT_OK


def _bounds_json(q: Any, decimal: Callable[..., str]) -> list[str]:
    """An exact rational as a certified decimal enclosure ``[lo, hi]`` (6 significant digits)."""
    return [decimal(q, 6, up=False), decimal(q, 6, up=True)]
