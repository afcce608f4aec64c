"""PyTorch in: the exact LN-Net of an ``nn.Sequential`` (:func:`from_torch`) or of its state
dict (:func:`from_state_dict`), every weight read as the dyadic rational it is."""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np
from flint import fmpq

from ..errors import InputError
from ..floats import import_torch
from ..model import Affine, Label, LNNet, Norm
from .plan import MAX_MODULES, TORCH_DTYPES, _plan, _shape, _shown

if TYPE_CHECKING:  # pragma: no cover
    import torch


class NormKindWarning(UserWarning):
    """A state dict's 1-D weights were read as a LayerNorm's, but a GroupNorm of the same
    width has the same tensors: the kinds cannot be told from the shapes."""


def _warn_if_groups_possible(
    kinds: list[str], entries: dict[int, dict[str, Any]], name: str
) -> None:
    """A :class:`NormKindWarning` when a module read as a LayerNorm could be a GroupNorm (its
    width ``n`` has groups of 2 or more: ``n = g k`` with ``g, k >= 2``), naming ``--spec``."""
    for i, kind in enumerate(kinds):
        n = int(entries[i]["weight"].shape[0]) if kind == "LayerNorm" else 0
        if any(n % g == 0 for g in range(2, math.isqrt(n) + 1)):
            spec = ",".join("GroupNorm:G" if k == "LayerNorm" else k for k in kinds)
            warnings.warn(
                f"{name}: module {i} ({n} features) is read as a LayerNorm, which a GroupNorm's "
                f"state dict cannot be told from: if it is a GroupNorm of G groups, give the kinds "
                f"(--spec {spec}, or spec=[...] in Python)",
                NormKindWarning,
                stacklevel=3,
            )
            return


def _exact_tensor(t: Any, where: str) -> list[Any]:
    """The exact rationals of a floating-point tensor (nested lists), or InputError."""
    torch = import_torch()
    if not t.is_floating_point():
        raise InputError(f"{where}: weights of dtype {t.dtype} are not floating point")
    a = t.detach().to("cpu", torch.float64).numpy()  # exact for float16/bfloat16/float32/64
    if not np.all(np.isfinite(a)):
        raise InputError(f"{where}: has NaN or infinite weights")
    return _exact_nested(a)


def _vector(t: Any, where: str) -> tuple[Any, ...]:
    """The exact rationals of a normaliser's weight or bias (``[n]``, or ``ParallelLN``'s
    ``[1, n]``), as one tuple."""
    values = _exact_tensor(t, where)
    return tuple(values[0] if t.dim() == 2 else values)


def _exact_nested(a: np.ndarray) -> Any:
    """The dyadic rational of each entry of a float64 array, as nested lists (a row at a
    time at C speed)."""
    if a.ndim == 0:
        return fmpq(*float(a).as_integer_ratio())
    if a.ndim > 1:
        return [_exact_nested(row) for row in a]
    if not a.size:
        return []
    nums, dens = zip(*map(float.as_integer_ratio, a.tolist()), strict=True)
    return list(map(fmpq, nums, dens))


def from_torch(
    model: Any, *, classes: Sequence[Label] | None = None, name: str = "model"
) -> LNNet[fmpq]:
    """The exact LN-Net of a PyTorch ``nn.Sequential`` of ``Linear`` and ``LayerNorm``.

    See the module doc for the normal form and what is refused (one line,
    :class:`~lncapacity.errors.InputError`, naming the module as
    ``model[i]: Kind``).  Everything is checked before any weight is read:
    the modules' types and attributes, the tensors' dtypes (float16, bfloat16,
    float32, float64) and shapes, and the limits of a net that can be read back
    (:data:`~lncapacity.fileformat.MAX_WIDTH`, ``MAX_INPUT_DIM``, ``MAX_DEPTH``,
    :data:`~lncapacity.interop.plan.MAX_IMPORT_NUMBERS`,
    :data:`~lncapacity.interop.plan.MAX_COMPOSE_PRODUCTS`).
    ``classes`` name the outputs (default ``0 .. k-1``).
    The net's ``meta["torch"]`` records the weights' dtype (the default of
    :func:`~lncapacity.interop.torch_out.to_torch`) and the modules read.
    """
    torch = import_torch()
    nn = torch.nn
    if not isinstance(model, nn.Module):
        raise InputError(f"{name}: not a torch.nn.Module (got {type(model).__name__})")
    plan = _plan(model, name)
    dim: int | None = None
    pending: Affine[fmpq] | None = None  # the affine map read since the last LayerNorm
    layers: list[Affine[fmpq]] = []
    norms: list[Norm[fmpq]] = []
    eps: set[float] = set()
    dtypes: set[str] = set()
    read: list[str] = []
    for where, m, kind, parts in plan:
        if kind == "Linear":
            W = _exact_tensor(parts["weight"], f"{where}.weight")
            b = (
                _exact_tensor(parts["bias"], f"{where}.bias")
                if parts["bias"] is not None
                else [fmpq(0)] * len(W)
            )
            dtypes.add(str(parts["weight"].dtype).removeprefix("torch."))
            a = Affine(tuple(map(tuple, W)), tuple(b))
            pending = a if pending is None else _compose(a, pending)
            dim = len(W)
        elif kind != "skip":  # LayerNorm, GroupNorm, RMSNorm, ParallelLN
            n = parts["n"]
            eps.add(parts["eps"])
            gain = bias = None
            if parts["weight"] is not None:
                gain = _vector(parts["weight"], f"{where}.weight")
                dtypes.add(str(parts["weight"].dtype).removeprefix("torch."))
                gain = None if all(g == 1 for g in gain) else gain
            if parts["bias"] is not None:
                bias = _vector(parts["bias"], f"{where}.bias")
                bias = None if all(c == 0 for c in bias) else bias
            layers.append(pending if pending is not None else _identity(n))
            norms.append(Norm(gain, bias, parts.get("groups", 1), parts.get("rms", False)))
            pending = None
            dim = n
        read.append(type(m).__name__)
    assert dim is not None  # _plan refuses a model without Linear and LayerNorm
    readout = pending if pending is not None else _identity(dim)
    k = len(readout.b)
    cls = tuple(range(k)) if classes is None else tuple(classes)
    if len(cls) != k:
        raise InputError(f"{name}: {k} outputs but {len(cls)} classes")
    input_dim = len(layers[0].W[0]) if layers else len(readout.W[0])
    widths = {len(a.b) for a in layers}
    eps_q = _exact_float(eps.pop()) if eps else fmpq(0)
    dtype = next((d for d in TORCH_DTYPES if d in dtypes), "float32")  # the widest one used
    meta = {"source": "torch", "torch": {"dtype": dtype, "modules": read}}
    return LNNet(
        input_dim,
        widths.pop() if len(widths) == 1 else None,
        eps_q,
        tuple(layers),
        readout,
        cls,
        meta,
        tuple(norms),
    )


def _exact_float(x: float) -> fmpq:
    f = Fraction(x)
    return fmpq(f.numerator, f.denominator)


def _identity(n: int) -> Affine[fmpq]:
    one, zero = fmpq(1), fmpq(0)
    return Affine(
        tuple(tuple(one if i == j else zero for j in range(n)) for i in range(n)), (zero,) * n
    )


def _compose(outer: Affine[fmpq], inner: Affine[fmpq]) -> Affine[fmpq]:
    """``x -> outer(inner(x))``, exactly."""
    cols = list(zip(*inner.W, strict=True))
    W = tuple(
        tuple(sum((w * c for w, c in zip(row, col, strict=True)), fmpq(0)) for col in cols)
        for row in outer.W
    )
    return Affine(W, tuple(outer(list(inner.b))))


_INDEX = re.compile(r"(0|[1-9][0-9]*)\.(weight|bias)")


def from_state_dict(
    state: Any, spec: Sequence[str] | None = None, eps: float = 1e-5, name: str = "state dict"
) -> LNNet[fmpq]:
    """The net of a ``state_dict`` of an ``nn.Sequential`` of Linear and LayerNorm modules.

    Keys are ``"<i>.weight"`` and ``"<i>.bias"`` (``i < MAX_MODULES``).  ``spec`` lists the
    module kinds in order (``"Linear"``, ``"LayerNorm"``, ``"GroupNorm:G"`` for a GroupNorm of
    ``G`` groups, ``"RMSNorm"`` for an ``nn.RMSNorm``, ``"ParallelLN:K"`` and
    ``"ParallelLS:K"`` for the authors' ``ParallelLN(n, K, centering=True)`` and
    ``centering=False`` of Ni et al. (weight and bias ``[1, n]``), ``"Dropout"``,
    ``"Identity"``); without it the kinds are read off the tensors (a 2-D weight is a Linear,
    a 1-D one a LayerNorm), which needs every module to have weights; a GroupNorm has a
    LayerNorm's tensors, so a :class:`NormKindWarning` is issued when a width read as a
    LayerNorm's could be split into groups of 2 or more.  ``eps`` is the normalisers' (a state
    dict does not hold it; torch's default is ``1e-5``).
    Keys, dtypes and shapes are checked first, and the modules are built around the
    tensors themselves (no weights are allocated), so :func:`from_torch` checks the limits
    before any weight is read.
    """
    return from_torch(sequential_from_state_dict(state, spec, eps, name), name=name)


def sequential_from_state_dict(
    state: Any, spec: Sequence[str] | None = None, eps: float = 1e-5, name: str = "state dict"
) -> torch.nn.Sequential:
    """The ``nn.Sequential`` (eval mode) of a state dict, as :func:`from_state_dict` reads it:
    its modules hold the state dict's tensors themselves."""
    torch = import_torch()
    nn = torch.nn
    if not isinstance(state, dict) or not all(
        isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in state.items()
    ):
        raise InputError(f"{name}: not a state dict (a mapping of names to tensors)")
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not 0 <= eps < math.inf:
        raise InputError(f"{name}: eps {_shown(eps)} is not a finite number >= 0")
    if spec is not None and len(spec) > MAX_MODULES:
        raise InputError(f"{name}: {len(spec)} module kinds, beyond the limit of {MAX_MODULES}")
    entries: dict[int, dict[str, Any]] = {}
    for key, t in state.items():
        match = _INDEX.fullmatch(key)
        if match is None:
            raise InputError(
                f"{name}: key {_shown(key)} is not <index>.weight or <index>.bias "
                "(index a number without leading zeros)"
            )
        if len(match[1]) > len(str(MAX_MODULES)) or int(match[1]) >= MAX_MODULES:
            raise InputError(
                f"{name}: key {_shown(key)}: module index {_shown(match[1])}, beyond the limit "
                f"of {MAX_MODULES} modules"
            )
        i = int(match[1])
        part = match[2]
        where = f"{name}: {key}"
        dims = t.dim() if isinstance(t, torch.Tensor) else 0
        if part == "bias" and dims == 2 and t.shape[0] == 1:  # a ParallelLN's, [1, n]
            _shape(t, where, 2)
        elif part == "bias" or dims != 2:  # a LayerNorm's gain, or a bias: 1-D
            if part == "weight" and dims != 1:
                raise InputError(
                    f"{where}: a {dims}-D weight of shape {list(t.shape)}; a Linear's is 2-D, "
                    "a LayerNorm's 1-D"
                )
            _shape(t, where, 1)
        else:
            _shape(t, where, 2)
        entries.setdefault(i, {})[part] = t
    if spec is None:
        count = max(entries, default=-1) + 1
        if missing := [i for i in range(count) if i not in entries]:
            raise InputError(
                f"{name}: no weights for module {missing[0]} (a LayerNorm without affine part, "
                "or an activation?): give the module kinds with --spec"
            )
        if no_weight := [i for i in range(count) if "weight" not in entries[i]]:
            raise InputError(f"{name}: module {no_weight[0]} has a bias but no weight")
        kinds = ["Linear" if entries[i]["weight"].dim() == 2 else "LayerNorm" for i in range(count)]
        _warn_if_groups_possible(kinds, entries, name)
    else:
        kinds = [s.strip() for s in spec]
        if extra := sorted(set(entries) - set(range(len(kinds)))):
            raise InputError(f"{name}: weights for module {extra[0]}, but --spec has {len(kinds)}")
    modules: list[Any] = []
    dim: int | None = None
    for i, kind in enumerate(kinds):
        e = entries.get(i, {})
        where = f"{name}: module {i} ({kind})"
        # modules on the meta device hold no weights; load_state_dict(assign=True) puts the
        # file's tensors in their place, so nothing is allocated whatever the shapes say
        if kind == "Linear":
            if "weight" not in e or e["weight"].dim() != 2:
                raise InputError(f"{where}: needs a 2-D weight")
            out_f, in_f = e["weight"].shape
            dt = e["weight"].dtype
            m = nn.Linear(in_f, out_f, bias="bias" in e, dtype=dt, device="meta")
            dim = out_f
        elif kind == "LayerNorm":
            n, dt = _norm_entries(e, dim, where, "LayerNorm")
            m = nn.LayerNorm(
                n,
                eps=eps,
                elementwise_affine="weight" in e,
                bias="bias" in e,
                dtype=dt,
                device="meta",
            )
            dim = n
        elif kind == "RMSNorm":
            n, dt = _norm_entries(e, dim, where, "RMSNorm")
            if "bias" in e:
                raise InputError(f"{where}: a bias: nn.RMSNorm has none (ParallelLS:{n} has)")
            m = nn.RMSNorm(n, eps=eps, elementwise_affine="weight" in e, dtype=dt, device="meta")
            dim = n
        elif kind.startswith(("ParallelLN", "ParallelLS")):
            from ..parallel_norm import ParallelLN

            k = _spec_groups(kind, where)
            n, dt = _parallel_entries(e, dim, where)
            if n % k or (kind.startswith("ParallelLN") and k < 2):
                raise InputError(f"{where}: groups of {k} of {n} features (ParallelLN: 2 or more)")
            centering = kind.startswith("ParallelLN")
            m = ParallelLN(n, k, eps, centering, "weight" in e, dtype=dt, device="meta")
            dim = n
        elif kind.startswith("GroupNorm"):
            g = _spec_groups(kind, where)
            n, dt = _norm_entries(e, dim, where, "GroupNorm")
            if n % g or n // g < 2:
                raise InputError(f"{where}: {g} groups of {n} channels (groups of 2 or more)")
            # newer PyTorch has GroupNorm(bias=False); in older ones a GroupNorm has both or neither
            no_bias = {"bias": False} if "weight" in e and "bias" not in e else {}
            try:
                m = nn.GroupNorm(
                    g, n, eps=eps, affine="weight" in e, dtype=dt, device="meta", **no_bias
                )
            except TypeError:
                raise InputError(f"{where}: a weight without a bias (not in this torch)") from None
            dim = n
        elif kind in ("Dropout", "Identity"):
            m = nn.Identity()
            if e:
                raise InputError(f"{where}: has weights")
        else:
            raise InputError(
                f"{where}: not supported (an LN-Net has Linear and LayerNorm modules only; "
                "GroupNorm:G for a GroupNorm of G groups, RMSNorm, ParallelLN:K and ParallelLS:K "
                "for the parallel normalisations of groups of K, centred and not)"
            )
        try:
            m.load_state_dict(e, strict=True, assign=True)
        except RuntimeError as err:
            first = str(err).strip().splitlines()[-1].strip()
            raise InputError(f"{where}: {first}") from None
        modules.append(m)
    return nn.Sequential(*modules).eval()


_SPEC_GROUPS = re.compile(r"(?:GroupNorm|ParallelLN|ParallelLS):([1-9][0-9]{0,6})")


def _norm_entries(e: dict[str, Any], dim: int | None, where: str, kind: str) -> tuple[int, Any]:
    """The width and dtype of a state dict's LayerNorm or GroupNorm entries ``e`` (its 1-D
    weight and bias; without them, the width ``dim`` of what comes before)."""
    w = e.get("weight", e.get("bias"))
    if w is not None and w.dim() != 1:
        raise InputError(f"{where}: needs a 1-D weight")
    n = w.shape[0] if w is not None else dim
    if n is None:
        raise InputError(f"{where}: its width is unknown (no weights, nothing before)")
    if "bias" in e and "weight" not in e:
        raise InputError(f"{where}: a bias without a gain: not a torch {kind}")
    return int(n), (w.dtype if w is not None else import_torch().float32)


def _spec_groups(kind: str, where: str) -> int:
    """The ``G`` of a ``--spec`` kind ``GroupNorm:G`` (the ``K`` of ``ParallelLN:K``)."""
    match = _SPEC_GROUPS.fullmatch(kind)
    if match is None:
        name = kind.partition(":")[0]
        n, what = ("G", "its number of groups") if name == "GroupNorm" else ("K", "a group's size")
        raise InputError(f"{where}: a {name} is given as {name}:{n}, {n} {what}")
    return int(match[1])


def _parallel_entries(e: dict[str, Any], dim: int | None, where: str) -> tuple[int, Any]:
    """The width and dtype of a state dict's ParallelLN entries (weight and bias ``[1, n]``,
    both or neither; without them the width ``dim`` of what comes before)."""
    if set(e) not in (set(), {"weight", "bias"}):
        raise InputError(f"{where}: a ParallelLN has a weight and a bias, or neither")
    w = e.get("weight")
    if w is not None and (w.dim() != 2 or w.shape[0] != 1 or e["bias"].shape != w.shape):
        raise InputError(f"{where}: weight and bias of shape [1, n] are needed (dim=2)")
    n = w.shape[1] if w is not None else dim
    if n is None:
        raise InputError(f"{where}: its width is unknown (no weights, nothing before)")
    return int(n), (w.dtype if w is not None else import_torch().float32)
