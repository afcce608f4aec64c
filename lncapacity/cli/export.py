"""``lncapacity export``: write a net as a PyTorch module and/or an ONNX model."""

from __future__ import annotations

import argparse

from .. import fileformat
from ..errors import InputError
from .common import EXIT_OK


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ex = sub.add_parser(
        "export",
        help="write a net as a PyTorch module (torch.save) and/or an ONNX model",
        description="Write an lnnet file as PyTorch's own modules (an nn.Sequential of Linear "
        "and LayerNorm, GroupNorm for a layer in groups, RMSNorm for an RMSNorm layer, "
        "lncapacity's ParallelLN for one in groups or with a bias: its state dict and module "
        "kinds, saved with torch.save as plain data that torch.load reads by default; "
        "lncapacity.interop.module_from_export(torch.load(path)) rebuilds the modules) "
        "and/or as an ONNX model (Gemm and LayerNormalization, opset 17; RMSNorm as "
        "primitive operators; needs the onnx package).",
    )
    ex.add_argument("net", metavar="NET.json")
    ex.add_argument("--torch", metavar="MODEL.pt", help="write the PyTorch module here")
    ex.add_argument("--onnx", metavar="MODEL.onnx", help="write the ONNX model here")
    ex.add_argument(
        "--dtype",
        help="float64, float32 or bfloat16 (ONNX: float64 or float32); default: the dtype "
        "a PyTorch import recorded, else float64 (ONNX: float32)",
    )
    ex.set_defaults(handler=cmd_export)


def cmd_export(args: argparse.Namespace) -> int:
    from ..interop import TORCH_DTYPES, default_dtype, to_onnx, torch_bytes

    if not args.torch and not args.onnx:
        raise InputError("export: give --torch MODEL.pt and/or --onnx MODEL.onnx")
    fileformat.check_outputs({"--torch": args.torch, "--onnx": args.onnx}, [args.net])
    if args.dtype is not None and args.dtype not in TORCH_DTYPES:
        raise InputError(f"--dtype: choose from {', '.join(TORCH_DTYPES)}")
    net = fileformat.load(args.net)
    files: list[tuple[str, bytes]] = []
    if args.torch:
        files.append((args.torch, torch_bytes(net, args.dtype)))
    if args.onnx:
        dt = args.dtype or ("float64" if default_dtype(net) == "float64" else "float32")
        if dt not in ("float32", "float64"):
            raise InputError(f"--dtype {dt}: ONNX export writes float32 or float64")
        files.append((args.onnx, to_onnx(net, dt)))
    fileformat.write_all_atomic(files)
    for path, _ in files:
        print(f"wrote {path}")
    return EXIT_OK
