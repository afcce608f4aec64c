"""``lncapacity import``: read a PyTorch LN-Net as an exact net and write it as an lnnet file.

(The module is ``import_``: ``import`` is a keyword.)"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import warnings
from typing import Any

from .. import fileformat
from ..arith import json_float, printable, to_float
from ..errors import InputError
from .common import EXIT_OK


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    im = sub.add_parser(
        "import",
        help="read a PyTorch LN-Net (nn.Sequential of Linear and LayerNorm) as an exact net",
        description="Read MODEL (torch.save of an nn.Sequential of Linear and LayerNorm "
        "(or GroupNorm, RMSNorm) modules, or of its state_dict) with "
        "torch.load(weights_only=True), convert every weight exactly, and write it as an "
        "lnnet file (lnnet/1, or lnnet/1.1 when it has LayerNorm gains or biases, layers of "
        "different widths, in groups or RMSNorms).",
    )
    im.add_argument("model", metavar="MODEL.pt")
    im.add_argument("--out", required=True, metavar="NET.json", help="the lnnet file to write")
    im.add_argument(
        "--spec",
        metavar="KINDS",
        help="for a state dict: the module kinds in order, comma-separated (Linear, LayerNorm, "
        "GroupNorm:G for a GroupNorm of G groups, RMSNorm, ParallelLN:K and ParallelLS:K for "
        "the parallel normalisations of groups of K features, centred and not, Dropout, "
        "Identity); default: read off the weights' shapes",
    )
    im.add_argument(
        "--eps", type=float, default=1e-5, help="for a state dict: the normalisers' eps (1e-5)"
    )
    im.add_argument("--classes", metavar="C1,C2", help="names of the outputs (default 0, 1, ...)")
    im.add_argument("--json", action="store_true", help="print a JSON summary instead of text")
    im.set_defaults(handler=cmd_import)


def cmd_import(args: argparse.Namespace) -> int:
    from ..interop import NormKindWarning, load_torch

    fileformat.check_outputs({"--out": args.out}, [args.model])
    spec = None if args.spec is None else [k for k in args.spec.split(",") if k.strip()]
    if args.eps < 0 or not math.isfinite(args.eps):
        raise InputError("--eps must be a finite number >= 0")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", NormKindWarning)
        net = load_torch(args.model, spec=spec, eps=args.eps)
    for w in caught:  # ours as one line each; any other as Python shows it
        if issubclass(w.category, NormKindWarning):
            print(f"lncapacity: warning: {printable(w.message)}", file=sys.stderr)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    if args.classes is not None:
        names = [c.strip() for c in args.classes.split(",")]
        labels: list[Any] = [int(c) for c in names] if all(_is_int(c) for c in names) else names
        if len(labels) != len(net.classes) or len(set(labels)) != len(labels):
            raise InputError(
                f"--classes: the net has {len(net.classes)} outputs; give as many distinct names"
            )
        net = dataclasses.replace(net, classes=tuple(labels))
    doc = fileformat.to_dict(net)
    text = fileformat.dumps(doc)
    size = len(text.encode("utf-8"))
    if size > fileformat.MAX_FILE_BYTES:  # verify could not read it back
        raise InputError(
            f"{args.model}: the net takes {size} bytes in {doc['format']}, beyond the limit of "
            f"{fileformat.MAX_FILE_BYTES >> 20} MiB for a net"
        )
    fileformat.write_all_atomic([(args.out, text)])
    summary = {
        "model": args.model,
        "net": args.out,
        "format": doc["format"],
        "requires": doc.get("requires", []),
        "input_dim": net.input_dim,
        "width": net.width,
        "widths": list(net.widths),
        "depth": net.depth,
        "classes": list(net.classes),
        "eps": str(net.eps),
        "eps_float": json_float(to_float(net.eps)),
        "layernorm_affine": [not net.norm(i).is_identity for i in range(net.depth)],
        "groups": list(net.groups),  # of each LayerNorm (1) or GroupNorm (LN-G)
        "rms": [net.norm(i).rms for i in range(net.depth)],  # RMSNorm (no centring)
        "dtype": net.meta["torch"]["dtype"],
    }
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        widths = "-".join(map(str, net.widths)) or "none"
        affine = sum(summary["layernorm_affine"])
        print(
            f"{args.model}: {len(net.meta['torch']['modules'])} modules, "
            f"{summary['dtype']} weights read exactly\n"
            f"net: input {net.input_dim}, widths {widths}, depth {net.depth}, "
            f"{len(net.classes)} outputs, eps {to_float(net.eps):g}, "
            f"{affine} LayerNorms with gain/bias"
            + (f", groups {'-'.join(map(str, net.groups))}" if net.grouped else "")
            + (f", {sum(summary['rms'])} RMSNorms" if net.rms else "")
            + f" ({doc['format']})\n"
            f"wrote {args.out}"
        )
    return EXIT_OK


def _is_int(text: str) -> bool:
    t = text[1:] if text[:1] in "+-" else text
    return t.isdigit()
