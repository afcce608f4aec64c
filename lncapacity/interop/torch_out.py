"""PyTorch out: any net as PyTorch's own modules (:func:`to_torch`), and as plain data that
``torch.load`` reads by default (:func:`torch_export`, :func:`module_from_export`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import InputError
from ..floats import import_torch, torch_sequential
from ..model import LNNet
from .plan import TORCH_DTYPES
from .torch_in import sequential_from_state_dict

if TYPE_CHECKING:  # pragma: no cover
    import torch


def default_dtype(net: LNNet[Any]) -> str:
    """The dtype a net imported from PyTorch was trained in, else ``"float64"``."""
    torch_meta = net.meta.get("torch") if isinstance(net.meta, dict) else None
    dt = torch_meta.get("dtype") if isinstance(torch_meta, dict) else None
    return dt if dt in TORCH_DTYPES else "float64"


def to_torch(
    net: LNNet[Any], dtype: str | None = None, *, finite: bool = True
) -> torch.nn.Sequential:
    """``net`` as a ``torch.nn.Sequential`` of PyTorch's own modules, in ``dtype``.

    One ``torch.nn.Linear`` per affine map, each followed (except the readout) by
    ``torch.nn.LayerNorm(n_l, eps=float(net.eps))``, with ``elementwise_affine``
    and ``bias`` set as the layer's :class:`~lncapacity.model.Norm` has them;
    so ``2 * net.depth + 1`` modules.  ``dtype`` is one of
    :data:`~lncapacity.interop.plan.TORCH_DTYPES` (default: the dtype a PyTorch import
    recorded, else float64); the weights are the exact ones rounded to float64 and then to
    ``dtype`` (exact for weights that came from that dtype).  On the CPU, in eval mode, without
    gradients; the global random state is left untouched.
    The module maps a ``(m, input_dim)`` tensor to the ``(m, len(classes))`` scores.
    A weight or ``eps`` beyond the range of ``dtype`` is an :class:`InputError` naming it
    (``finite=False``: it becomes ``±inf``, as the float backends run it).
    """
    import_torch()
    dtype = default_dtype(net) if dtype is None else dtype
    if dtype not in TORCH_DTYPES:
        raise InputError(f"unknown dtype {dtype!r} (choose from {', '.join(TORCH_DTYPES)})")
    return torch_sequential(net, dtype, finite)


TORCH_EXPORT_FORMAT = "lncapacity-torch/1"
"""The ``"format"`` of what :func:`~lncapacity.interop.torch_files.save_torch` writes
(:func:`torch_export`)."""


def torch_export(net: LNNet[Any], dtype: str | None = None) -> dict[str, Any]:
    """``net`` as plain data that ``torch.load`` reads by default (``weights_only=True``,
    PyTorch >= 2.6), with no class pickled: ``{"format": "lncapacity-torch/1", "modules":
    [...], "eps": float, "classes": [...], "state_dict": {...}}``.

    ``modules`` lists the kinds of :func:`to_torch`'s modules in order (``"Linear"``,
    ``"LayerNorm"``, ``"GroupNorm:G"`` for ``G`` groups, ``"RMSNorm"``, ``"ParallelLS:K"`` for
    RMSNorm in groups of ``K``), ``eps`` is their normalisers' eps
    and ``state_dict`` the Sequential's own (``"0.weight"``, ``"0.bias"``, ...), so
    :func:`module_from_export` (or the few lines of docs/guide/trained.md) rebuilds the very
    modules.
    """
    torch = import_torch()
    model = to_torch(net, dtype)
    kinds = [_kind(torch, m) for m in model]
    norms = [m for m in model if not isinstance(m, torch.nn.Linear)]
    return {
        "format": TORCH_EXPORT_FORMAT,
        "modules": kinds,
        "eps": float(norms[0].eps) if norms else 1e-5,
        "classes": list(net.classes),
        "state_dict": model.state_dict(),
    }


def _kind(torch: Any, m: Any) -> str:
    """A module's kind as :func:`torch_export` lists it (a ``--spec`` entry)."""
    if isinstance(m, torch.nn.GroupNorm):
        return f"GroupNorm:{m.num_groups}"
    if type(m).__name__ == "ParallelLN":
        return f"{'ParallelLN' if m.centering else 'ParallelLS'}:{m.num_per_group}"
    return type(m).__name__


def module_from_export(obj: Any, name: str = "export") -> torch.nn.Sequential:
    """The ``nn.Sequential`` (eval mode) of :func:`torch_export`'s data, as ``torch.load``
    gives it back::

        model = module_from_export(torch.load("model.pt"))
        scores = model(X)  # (m, len(classes)); classes: torch.load("model.pt")["classes"]

    Its modules hold the file's tensors
    (:func:`~lncapacity.interop.torch_in.sequential_from_state_dict`).
    """
    if not isinstance(obj, dict) or obj.get("format") != TORCH_EXPORT_FORMAT:
        raise InputError(f"{name}: not an lncapacity export ({TORCH_EXPORT_FORMAT})")
    kinds, eps, classes = obj.get("modules"), obj.get("eps"), obj.get("classes")
    if not isinstance(kinds, list) or not all(isinstance(k, str) for k in kinds):
        raise InputError(f"{name}: 'modules' is not a list of module kinds")
    if not isinstance(classes, list):
        raise InputError(f"{name}: 'classes' is not a list")
    if isinstance(eps, bool) or not isinstance(eps, (int, float)):
        raise InputError(f"{name}: 'eps' is not a number")
    return sequential_from_state_dict(obj.get("state_dict"), kinds, float(eps), name=name)
