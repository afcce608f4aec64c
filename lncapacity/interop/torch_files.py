"""PyTorch files: :func:`load_torch` reads what ``torch.save`` wrote, bounded and without
running any of the file's code; :func:`save_torch` writes the export format."""

from __future__ import annotations

import io
import os
import re
import zipfile
from collections.abc import Sequence
from typing import Any

from flint import fmpq

from ..errors import InputError
from ..floats import import_torch
from ..model import LNNet
from .torch_in import from_state_dict, from_torch
from .torch_out import TORCH_EXPORT_FORMAT, module_from_export, torch_export

SAFE_MODULES = (
    "Sequential",
    "Linear",
    "LayerNorm",
    "GroupNorm",
    "RMSNorm",
    "Identity",
    "Dropout",
    "Flatten",
)
"""The ``torch.nn`` classes :func:`load_torch` lets ``torch.load(weights_only=True)`` rebuild."""


MAX_TORCH_FILE_BYTES = 128 << 20
"""Largest file :func:`load_torch` reads, and the most its zip entries may expand to (128 MiB;
a net of :data:`~lncapacity.interop.plan.MAX_IMPORT_NUMBERS` float64 weights takes 32 MiB)."""


def load_torch(
    path: str | os.PathLike[str], spec: Sequence[str] | None = None, eps: float = 1e-5
) -> LNNet[fmpq]:
    """The net saved in ``path`` by ``torch.save``: an ``nn.Sequential`` or a state dict.

    Loaded with ``torch.load(weights_only=True)`` only: no code in the file is
    run.  Besides tensors and containers it may rebuild the ``torch.nn`` classes
    :data:`SAFE_MODULES` (so ``torch.save(model)`` of an LN-Net loads); a file
    pickling any other class (a ReLU, a custom Module) is refused, naming it.
    A state dict is read by :func:`~lncapacity.interop.torch_in.from_state_dict` (``spec``,
    ``eps``).

    A file beyond :data:`MAX_TORCH_FILE_BYTES`, or whose zip entries would expand beyond it,
    is refused before loading.  A file in ``torch.save``'s (uncompressed) zip format is loaded
    with ``mmap=True``: the tensors' shapes are checked against the limits
    (:func:`~lncapacity.interop.torch_in.from_torch`) before their data is read at all.
    """
    torch = import_torch()
    p = str(path)
    if not os.path.isfile(p):
        raise InputError(f"{p}: no such file")
    size = os.path.getsize(p)
    limit = f"the limit of {MAX_TORCH_FILE_BYTES >> 20} MiB for a PyTorch file"
    if size > MAX_TORCH_FILE_BYTES:
        raise InputError(f"{p}: {size} bytes, beyond {limit}")
    infos: list[zipfile.ZipInfo] = []
    try:
        if zipfile.is_zipfile(p):
            with zipfile.ZipFile(p) as z:
                infos = z.infolist()
    except (OSError, zipfile.BadZipFile, ValueError):
        pass  # torch.load says what is wrong
    expanded = sum(i.file_size for i in infos)
    if expanded > MAX_TORCH_FILE_BYTES:
        raise InputError(f"{p}: its zip entries expand to {expanded} bytes, beyond {limit}")
    # torch.save's zip format stores the tensors uncompressed: mapped, not read
    mmap = bool(infos) and all(i.compress_type == zipfile.ZIP_STORED for i in infos)
    allowed = [getattr(torch.nn, n) for n in SAFE_MODULES if hasattr(torch.nn, n)]
    safe_globals = getattr(torch.serialization, "safe_globals", None)  # torch >= 2.5
    try:
        if safe_globals is None:  # older torch: tensors and containers only (state dicts)
            obj = torch.load(p, map_location="cpu", weights_only=True, mmap=mmap)
        else:
            with safe_globals(allowed):
                obj = torch.load(p, map_location="cpu", weights_only=True, mmap=mmap)
    except Exception as err:  # UnpicklingError, RuntimeError, EOFError, zipfile errors, ...
        raise InputError(f"{p}: cannot load: {_unpickling_reason(err)}") from None
    if isinstance(obj, torch.nn.Module):
        return from_torch(obj, name=p)
    if isinstance(obj, dict) and obj.get("format") == TORCH_EXPORT_FORMAT:
        return from_torch(module_from_export(obj, name=p), classes=obj["classes"], name=p)
    return from_state_dict(obj, spec, eps, name=p)


_REFUSED = (
    # torch.load(weights_only=True)'s unpickler, as PyTorch 2.4 to 2.13 word it
    r"GLOBAL (\S+) was not an allowed global",
    r"unsupported GLOBAL (\S+) whose module \S+ is blocked",
    r"Trying to call reduce for unrecognized function (.+?)(?: which belongs to .*)?$",
    r"Can only create new object .* but got (.+)$",
    r"Can only build .* but got (.+)$",
)


def _unpickling_reason(err: Exception) -> str:
    """One line on why ``torch.load(weights_only=True)`` refused a file, naming the class.

    PyTorch wraps its unpickler's message in advice to load with ``weights_only=False``,
    which would run the file's code: this tool never does, so the advice is dropped.
    """
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(err))
    for pattern in _REFUSED:
        for line in text.splitlines():
            if found := re.search(pattern, line.strip()):
                glob = found[1].strip().strip("`'\"<>").removeprefix("class ").strip("'")
                return (
                    f"it pickles {glob}, which is not an LN-Net module (this tool loads only "
                    "tensors, Sequential, Linear, LayerNorm, GroupNorm, RMSNorm, Identity, Dropout "
                    "and Flatten, "
                    "and never runs a file's code)"
                )
    lines = [
        s.strip()
        for s in text.strip().splitlines()
        if s.strip() and "weights_only" not in s and "torch.load" not in s
    ]
    lines = [s.removeprefix("WeightsUnpickler error:").strip() for s in lines]
    lines = [s for s in lines if s]
    return shown_line(lines[0]) if lines else type(err).__name__


def shown_line(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def save_torch(net: LNNet[Any], path: str | os.PathLike[str], dtype: str | None = None) -> None:
    """``torch.save(torch_export(net, dtype), path)``, atomically.

    Plain ``torch.load(path)`` reads the file (it holds tensors, lists, numbers and strings
    only); :func:`~lncapacity.interop.torch_out.module_from_export` rebuilds the modules, and
    :func:`load_torch` reads it as the exact net again.
    """
    from ..fileformat import write_all_atomic

    write_all_atomic([(path, torch_bytes(net, dtype))])


def torch_bytes(net: LNNet[Any], dtype: str | None = None) -> bytes:
    """What :func:`save_torch` writes: ``torch.save`` of
    :func:`~lncapacity.interop.torch_out.torch_export`."""
    torch = import_torch()
    buf = io.BytesIO()
    torch.save(torch_export(net, dtype), buf)
    return buf.getvalue()
