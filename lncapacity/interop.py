"""PyTorch and ONNX in and out: the LN-Nets people train, as exact nets, and back.

* :func:`from_torch` reads an ``nn.Sequential`` of ``nn.Linear`` and
  ``nn.LayerNorm`` modules (any widths, with or without the elementwise gain
  and bias, any ``eps``) as an exact :class:`~lncapacity.model.LNNet`, and
  ``nn.GroupNorm(g, n)`` modules too: on ``(batch, n)`` inputs GroupNorm is exactly
  LN-G (LayerNorm in ``g`` groups, per-feature affine; :mod:`lncapacity.model`).  Every
  float32, float64, bfloat16 or float16 weight is a dyadic rational, and it is
  read as exactly that rational (through float64, which holds every value of
  those formats exactly), so the imported net is the trained net's function in
  exact real arithmetic: what :func:`lncapacity.certify` then proves is about
  the net that was trained.
* :func:`to_torch` writes any net back as PyTorch's own modules.  A net
  imported from PyTorch comes back as the modules it came from, with the same
  weights bit for bit, so the same float outputs.
* :func:`to_onnx` writes an ONNX model (``Gemm`` and ``LayerNormalization``,
  opset 17; an LN-G layer as ``Reshape``, ``LayerNormalization``, ``Reshape``, then its
  gain and bias as ``Mul`` and ``Add``), checked with onnxruntime in the tests (``pip
  install 'lncapacity[onnx]'``).

Normal form.  The model is ``h_l = g_l * LN(W_l h_{l-1} + b_l) + beta_l`` and
a readout (:mod:`lncapacity.model`), so a Sequential is read as follows:
consecutive ``Linear`` maps are composed (exactly; the export then has one
``Linear`` in their place: the same function, not the same float
computation); a ``LayerNorm`` with no ``Linear`` before it gets the identity
map (``W = I``, ``b = 0``, which floats compute exactly), and so does the
readout after a final ``LayerNorm``.  ``nn.Identity``, ``nn.Flatten`` of 2-D
inputs and ``nn.Dropout`` in eval mode are identities and are skipped; a
``Dropout`` in training mode is random and is refused (call ``model.eval()``).
Anything else (ReLU, RMSNorm, ...) is refused with one line naming it: an
LN-Net has no other nonlinearity.  ``RMSNorm`` does not centre, and no
LayerNorm computes it, so it does not fit the model.  A ``GroupNorm`` reads as an
LN-G layer (``GroupNorm(1, n)`` as a LayerNorm, which :func:`to_torch` writes as
``nn.LayerNorm``: the same function with the same weights); its input is ``(batch, n)``,
as a Linear gives it.

LayerNorm gains and biases are kept as they are (``Norm``): folding them into
the next map is exact in rationals (:meth:`~lncapacity.model.LNNet.folded`,
which the certificate uses) but not in floats, so keeping them is what lets
:func:`to_torch` give back the trained float computation.  A gain of all ones
and a bias of all zeros are dropped (exact in floats too: ``1 * u + 0 = u``).
"""

from __future__ import annotations

import io
import math
import os
import re
import zipfile
from collections.abc import Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np
from flint import fmpq

from .arith import finite_float
from .errors import InputError
from .floats import export_floats, import_torch, torch_sequential
from .model import Affine, Label, LNNet, Norm

if TYPE_CHECKING:  # pragma: no cover
    import torch

__all__ = [
    "TORCH_DTYPES",
    "from_state_dict",
    "from_torch",
    "load_torch",
    "module_from_export",
    "save_onnx",
    "save_torch",
    "to_onnx",
    "to_torch",
    "torch_bytes",
    "torch_export",
]

TORCH_DTYPES = ("float64", "float32", "bfloat16", "float16")
"""The dtypes :func:`to_torch` writes (weights rounded from the exact values, through float64)."""

SAFE_MODULES = ("Sequential", "Linear", "LayerNorm", "GroupNorm", "Identity", "Dropout", "Flatten")
"""The ``torch.nn`` classes :func:`load_torch` lets ``torch.load(weights_only=True)`` rebuild."""


# ---------------------------------------------------------------------------
# PyTorch -> LNNet


MAX_MODULES = 100_000
"""Most modules :func:`from_torch` reads (nested Sequentials flattened), and the largest module
index + 1 of a state dict (a depth-10,000 net has 20,001 modules, with dropouts 30,001)."""

MAX_IMPORT_NUMBERS = 1 << 22
"""Most numbers (weights, biases, LayerNorm gains and biases) of an imported net, counted from the
tensors' shapes before any is read: 4,194,304.  A float32 weight takes about 20 bytes in
``lnnet/1``, so a net with more could not be read back anyway
(:data:`~lncapacity.fileformat.MAX_FILE_BYTES`)."""

MAX_COMPOSE_PRODUCTS = 10**7
"""Most exact products spent composing consecutive ``Linear`` maps (about 10 s)."""


def _limits() -> tuple[int, int, int, int]:
    from .fileformat import MAX_DEPTH, MAX_GROUPED_WIDTH, MAX_INPUT_DIM, MAX_WIDTH

    return MAX_DEPTH, MAX_INPUT_DIM, MAX_WIDTH, MAX_GROUPED_WIDTH


def _shape(t: Any, where: str, dims: int) -> tuple[int, ...]:
    """The shape of a weight tensor, after checking its type, dtype and number of dimensions.

    Reads no data: a tensor of any claimed size (a memory map, a stride-0 view) costs nothing.
    """
    torch = import_torch()
    if not isinstance(t, torch.Tensor):
        raise InputError(f"{where}: not a tensor (got {type(t).__name__})")
    dtype = str(t.dtype).removeprefix("torch.")
    if dtype not in TORCH_DTYPES:
        raise InputError(
            f"{where}: weights of dtype {dtype}; only float16, bfloat16, float32 and float64 "
            "are read"
        )
    if t.layout != torch.strided or t.device.type != "cpu":
        raise InputError(f"{where}: a {t.layout} tensor on {t.device}; only dense CPU tensors")
    shape = tuple(t.shape)
    if len(shape) != dims:
        raise InputError(
            f"{where}: a {len(shape)}-D tensor of shape {list(shape)}; a {dims}-D one is needed"
        )
    if 0 in shape:
        raise InputError(f"{where}: an empty tensor of shape {list(shape)}")
    return shape


def _int_attr(m: Any, attr: str, where: str) -> int:
    v = _attr(m, attr, where)
    if not isinstance(v, int) or isinstance(v, bool):
        raise InputError(f"{where}: {attr} is {type(v).__name__} {_shown(v)}, not an integer")
    return v


def _real_attr(m: Any, attr: str, where: str, lo: float, hi: float = math.inf) -> float:
    v = _attr(m, attr, where)
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        raise InputError(f"{where}: {attr} is {type(v).__name__} {_shown(v)}, not a number")
    if not (math.isfinite(v) and lo <= v <= hi):
        bound = f"in [{lo:g}, {hi:g}]" if math.isfinite(hi) else f">= {lo:g}"
        raise InputError(f"{where}: {attr} is {v!r}; a finite number {bound} is needed")
    return float(v)


def _attr(m: Any, attr: str, where: str) -> Any:
    try:
        return getattr(m, attr)
    except Exception:  # a pickled module's state is whatever the file says
        raise InputError(f"{where}: has no {attr}") from None


def _shown(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def _modules(model: Any, name: str = "model") -> list[tuple[str, Any]]:
    """``(key, module)`` in execution order, nested Sequentials flattened.

    Refuses a container that contains itself, children that are not modules, and more than
    :data:`MAX_MODULES` modules (so a Sequential holding the same child twice, nested 40 deep,
    is refused, not walked 2^40 times).
    """
    torch = import_torch()
    nn = torch.nn
    out: list[tuple[str, Any]] = []
    on_path: set[int] = set()

    def children(m: Any, key: str) -> list[tuple[str, Any]]:
        mods = vars(m).get("_modules") if hasattr(m, "__dict__") else None
        if not isinstance(mods, dict):
            raise InputError(f"{name}[{key}]: a Sequential without its list of modules")
        kids = []
        for k, c in mods.items():
            where = f"{key}.{k}" if key else str(k)
            if not isinstance(k, str):
                raise InputError(f"{name}[{key}]: a module named {_shown(k)}, not a string")
            if c is None:
                continue
            if not isinstance(c, nn.Module):
                raise InputError(f"{name}[{where}]: not a torch.nn.Module ({type(c).__name__})")
            kids.append((where, c))
        return kids

    # depth first, iteratively (no recursion limit), with the containers on the path
    stack: list[tuple[str, Any, bool]] = [("", model, False)]
    while stack:
        key, m, leaving = stack.pop()
        if leaving:
            on_path.discard(id(m))
            continue
        if not isinstance(m, nn.Sequential):
            out.append((key, m))
            if len(out) > MAX_MODULES:
                raise InputError(f"{name}: more than {MAX_MODULES} modules, beyond the limit")
            continue
        if id(m) in on_path:
            raise InputError(f"{name}[{key}]: a Sequential that contains itself")
        on_path.add(id(m))
        stack.append((key, m, True))
        stack.extend((k, c, False) for k, c in reversed(children(m, key)))
    return out


def _plan(model: Any, name: str) -> list[tuple[str, Any, str, dict[str, Any]]]:
    """Check everything :func:`from_torch` reads, before reading any weight.

    Types, shapes and values of the modules' attributes, the chain of dimensions, and the limits
    (:data:`~lncapacity.fileformat.MAX_WIDTH`, ``MAX_INPUT_DIM``, ``MAX_DEPTH``,
    :data:`MAX_IMPORT_NUMBERS`, :data:`MAX_COMPOSE_PRODUCTS`; with GroupNorm modules, widths
    up to ``MAX_GROUPED_WIDTH``, each group at most ``MAX_WIDTH``) from the tensors' shapes
    alone.  Returns ``(where, module, kind, checked attributes)`` for the Linear, LayerNorm and
    GroupNorm modules and the skipped ones, in order.
    """
    torch = import_torch()
    nn = torch.nn
    max_depth, max_input_dim, max_width, max_grouped = _limits()
    mods = _modules(model, name) if isinstance(model, nn.Sequential) else [("", model)]
    # a net with LN-G layers may be wider (as its file may): each group is a LayerNorm
    max_features = max_grouped if any(isinstance(m, nn.GroupNorm) for _, m in mods) else max_width
    plan: list[tuple[str, Any, str, dict[str, Any]]] = []
    dim: int | None = None
    input_dim: int | None = None
    pending: tuple[int, int] | None = None  # the shape of the affine map since the last LayerNorm
    depth = numbers = products = 0
    eps: set[float] = set()

    def here(key: str, m: Any) -> str:
        return f"{name}[{key}]: {type(m).__name__}" if key else f"{name}: {type(m).__name__}"

    def need(n: int, where: str) -> None:
        nonlocal dim, input_dim
        if dim is not None and n != dim:
            raise InputError(f"{where}: expects {n} features, but the module before gives {dim}")
        if input_dim is None:
            if n > max_input_dim:
                raise InputError(
                    f"{where}: {n} input features, beyond the limit of {max_input_dim}"
                )
            input_dim = n
        dim = n

    def width(n: int, where: str, what: str, limit: int = max_width) -> None:
        if n < 1:
            raise InputError(f"{where}: {what} {n}; at least 1 is needed")
        if n > limit:
            raise InputError(f"{where}: {what} {n}, beyond the limit of {limit}")

    def count(rows: int, cols: int, extra: int, where: str) -> None:
        nonlocal numbers
        numbers += rows * cols + rows + extra
        if numbers > MAX_IMPORT_NUMBERS:
            raise InputError(
                f"{where}: the net would have more than {MAX_IMPORT_NUMBERS} numbers, "
                "beyond the limit for an import"
            )

    def normalizer(
        where: str, m: Any, kind: str, n: int, e: float, gain: Any, bias: Any, **more: Any
    ) -> None:
        """A LayerNorm or GroupNorm of ``n`` features (its ``eps``, weight and bias) in its
        place: after the affine map since the last one."""
        nonlocal depth, pending
        for part, t in (("weight", gain), ("bias", bias)):
            if t is not None and _shape(t, f"{where}.{part}", 1) != (n,):
                raise InputError(f"{where}.{part}: shape {list(t.shape)}, but [{n}] is needed")
        need(n, where)
        depth += 1
        if depth > max_depth:
            raise InputError(f"{where}: more than {max_depth} LayerNorms, beyond the limit")
        rows, cols = pending if pending is not None else (n, n)
        count(rows, cols, 2 * n, where)
        eps.add(e)
        pending = None
        plan.append((where, m, kind, {"weight": gain, "bias": bias, "n": n, **more}))

    for key, m in mods:
        where = here(key, m)
        if isinstance(m, nn.Linear):
            in_f = _int_attr(m, "in_features", where)
            out_f = _int_attr(m, "out_features", where)
            width(out_f, where, "out_features", max_features)
            if in_f < 1:
                raise InputError(f"{where}: in_features {in_f}; at least 1 is needed")
            W = _attr(m, "weight", where)
            if _shape(W, f"{where}.weight", 2) != (out_f, in_f):
                raise InputError(
                    f"{where}.weight: shape {list(W.shape)}, but out_features {out_f} and "
                    f"in_features {in_f} need [{out_f}, {in_f}]"
                )
            b = _attr(m, "bias", where)
            if b is not None and _shape(b, f"{where}.bias", 1) != (out_f,):
                raise InputError(f"{where}.bias: shape {list(b.shape)}, but [{out_f}] is needed")
            need(in_f, where)
            if pending is None:
                pending = (out_f, in_f)
            else:
                products += out_f * in_f * (pending[1] + 1)
                if products > MAX_COMPOSE_PRODUCTS:
                    raise InputError(
                        f"{where}: composing the consecutive Linear maps would take more than "
                        f"{MAX_COMPOSE_PRODUCTS} exact products, beyond the limit"
                    )
                pending = (out_f, pending[1])
            dim = out_f
            plan.append((where, m, "Linear", {"weight": W, "bias": b}))
        elif isinstance(m, nn.LayerNorm):
            shape = _attr(m, "normalized_shape", where)
            if not isinstance(shape, (tuple, list)) or not all(
                isinstance(s, int) and not isinstance(s, bool) for s in shape
            ):
                raise InputError(f"{where}: normalized_shape {_shown(shape)} is not integers")
            if len(shape) != 1:
                raise InputError(f"{where}: normalizes over {len(shape)} dimensions; only 1 fits")
            n = shape[0]
            if n < 2:
                raise InputError(f"{where}: normalizes a single feature (always 0)")
            width(n, where, "width")
            e = _real_attr(m, "eps", where, 0.0)
            gain, bias = _attr(m, "weight", where), _attr(m, "bias", where)
            normalizer(where, m, "LayerNorm", n, e, gain, bias)
        elif isinstance(m, nn.GroupNorm):
            g = _int_attr(m, "num_groups", where)
            n = _int_attr(m, "num_channels", where)
            width(n, where, "num_channels", max_features)
            if g < 1 or n % g:
                raise InputError(f"{where}: {g} groups do not divide {n} channels evenly")
            if n // g < 2:
                raise InputError(f"{where}: normalizes groups of a single feature (always 0)")
            width(n // g, where, "group width")
            e = _real_attr(m, "eps", where, 0.0)
            affine = _attr(m, "affine", where)
            if not isinstance(affine, bool):
                raise InputError(f"{where}: affine is {_shown(affine)}, not True or False")
            gain, bias = _attr(m, "weight", where), _attr(m, "bias", where)
            if affine and gain is None:  # a bias may be missing: GroupNorm(..., bias=False)
                raise InputError(f"{where}: affine, but without its weight")
            if not affine and (gain is not None or bias is not None):
                raise InputError(f"{where}: not affine, but with a weight or a bias")
            normalizer(where, m, "GroupNorm", n, e, gain, bias, groups=g)
        elif isinstance(m, nn.Identity):
            plan.append((where, m, "skip", {}))
        elif isinstance(m, nn.Flatten):
            ends = [_int_attr(m, a, where) for a in ("start_dim", "end_dim")]
            if any(not -2 <= d <= 1 for d in ends) or ends[0] % 2 != ends[1] % 2:
                raise InputError(
                    f"{where}: start_dim {ends[0]}, end_dim {ends[1]} do not leave a "
                    "(rows, features) input as it is"
                )
            plan.append((where, m, "skip", {}))
        elif isinstance(m, nn.Dropout):
            p = _real_attr(m, "p", where, 0.0, 1.0)
            training = _attr(m, "training", where)
            if not isinstance(training, bool):
                raise InputError(f"{where}: training is {_shown(training)}, not True or False")
            if training and p > 0:
                raise InputError(
                    f"{where}: in training mode it zeroes features at random; call model.eval()"
                )
            plan.append((where, m, "skip", {}))
        elif isinstance(m, getattr(nn, "RMSNorm", ())):
            raise InputError(
                f"{where}: not supported (it does not centre, so it is no LayerNorm; "
                "an LN-Net has Linear and LayerNorm only)"
            )
        else:
            raise InputError(
                f"{where}: not supported (an LN-Net has Linear and LayerNorm (or GroupNorm) "
                "modules only)"
            )
    if dim is None:
        raise InputError(f"{name}: no Linear or LayerNorm module to read")
    if len(eps) > 1:
        raise InputError(f"{name}: LayerNorms with different eps {sorted(eps)}; one eps is needed")
    rows, cols = pending if pending is not None else (dim, dim)
    count(rows, cols, 0, f"{name}: the readout")
    width(rows, f"{name}: the readout", "outputs")  # the classes of a file: at most MAX_WIDTH
    return plan


def _exact_tensor(t: Any, where: str) -> list[Any]:
    """The exact rationals of a floating-point tensor (nested lists), or InputError."""
    torch = import_torch()
    if not t.is_floating_point():
        raise InputError(f"{where}: weights of dtype {t.dtype} are not floating point")
    a = t.detach().to("cpu", torch.float64).numpy()  # exact for float16/bfloat16/float32/64
    if not np.all(np.isfinite(a)):
        raise InputError(f"{where}: has NaN or infinite weights")
    return _fmpq_nested(a.tolist())


def _fmpq_nested(v: Any) -> Any:
    if isinstance(v, list):
        return [_fmpq_nested(x) for x in v]
    p, q = float(v).as_integer_ratio()
    return fmpq(p, q)


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
    :data:`MAX_IMPORT_NUMBERS`, :data:`MAX_COMPOSE_PRODUCTS`).
    ``classes`` name the outputs (default ``0 .. k-1``).
    The net's ``meta["torch"]`` records the weights' dtype (the default of
    :func:`to_torch`) and the modules read.
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
        elif kind in ("LayerNorm", "GroupNorm"):
            n = parts["n"]
            eps.add(float(m.eps))
            gain = bias = None
            if parts["weight"] is not None:
                gain = tuple(_exact_tensor(parts["weight"], f"{where}.weight"))
                dtypes.add(str(parts["weight"].dtype).removeprefix("torch."))
                gain = None if all(g == 1 for g in gain) else gain
            if parts["bias"] is not None:
                bias = tuple(_exact_tensor(parts["bias"], f"{where}.bias"))
                bias = None if all(c == 0 for c in bias) else bias
            layers.append(pending if pending is not None else _identity(n))
            norms.append(Norm(gain, bias, parts.get("groups", 1)))
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
    ``G`` groups, ``"Dropout"``, ``"Identity"``); without
    it the kinds are read off the tensors (a 2-D weight is a Linear, a 1-D one a
    LayerNorm), which needs every module to have weights.  ``eps`` is the
    LayerNorms' (a state dict does not hold it; torch's default is ``1e-5``).
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
        if part == "bias" or dims != 2:  # a LayerNorm's gain, or a bias: 1-D
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
                "GroupNorm:G for a GroupNorm of G groups)"
            )
        try:
            m.load_state_dict(e, strict=True, assign=True)
        except RuntimeError as err:
            first = str(err).strip().splitlines()[-1].strip()
            raise InputError(f"{where}: {first}") from None
        modules.append(m)
    return nn.Sequential(*modules).eval()


_SPEC_GROUPS = re.compile(r"GroupNorm:([1-9][0-9]{0,6})")


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
    """The ``G`` of a ``--spec`` kind ``GroupNorm:G``."""
    match = _SPEC_GROUPS.fullmatch(kind)
    if match is None:
        raise InputError(f"{where}: a GroupNorm is given as GroupNorm:G, G its number of groups")
    return int(match[1])


MAX_TORCH_FILE_BYTES = 128 << 20
"""Largest file :func:`load_torch` reads, and the most its zip entries may expand to (128 MiB;
a net of :data:`MAX_IMPORT_NUMBERS` float64 weights takes 32 MiB)."""


def load_torch(
    path: str | os.PathLike[str], spec: Sequence[str] | None = None, eps: float = 1e-5
) -> LNNet[fmpq]:
    """The net saved in ``path`` by ``torch.save``: an ``nn.Sequential`` or a state dict.

    Loaded with ``torch.load(weights_only=True)`` only: no code in the file is
    run.  Besides tensors and containers it may rebuild the ``torch.nn`` classes
    :data:`SAFE_MODULES` (so ``torch.save(model)`` of an LN-Net loads); a file
    pickling any other class (a ReLU, a custom Module) is refused, naming it.
    A state dict is read by :func:`from_state_dict` (``spec``, ``eps``).

    A file beyond :data:`MAX_TORCH_FILE_BYTES`, or whose zip entries would expand beyond it,
    is refused before loading.  A file in ``torch.save``'s (uncompressed) zip format is loaded
    with ``mmap=True``: the tensors' shapes are checked against the limits (:func:`from_torch`)
    before their data is read at all.
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
    allowed = [getattr(torch.nn, n) for n in SAFE_MODULES]
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
                    "tensors, Sequential, Linear, LayerNorm, GroupNorm, Identity, Dropout and "
                    "Flatten, "
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


# ---------------------------------------------------------------------------
# LNNet -> PyTorch


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
    so ``2 * net.depth + 1`` modules.  ``dtype`` is one of :data:`TORCH_DTYPES`
    (default: the dtype a PyTorch import recorded, else float64); the weights
    are the exact ones rounded to float64 and then to ``dtype`` (exact for
    weights that came from that dtype).  On the CPU, in eval mode, without
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
"""The ``"format"`` of what :func:`save_torch` writes (:func:`torch_export`)."""


def torch_export(net: LNNet[Any], dtype: str | None = None) -> dict[str, Any]:
    """``net`` as plain data that ``torch.load`` reads by default (``weights_only=True``,
    PyTorch >= 2.6), with no class pickled: ``{"format": "lncapacity-torch/1", "modules":
    [...], "eps": float, "classes": [...], "state_dict": {...}}``.

    ``modules`` lists the kinds of :func:`to_torch`'s modules in order (``"Linear"``,
    ``"LayerNorm"``, ``"GroupNorm:G"`` for ``G`` groups), ``eps`` is their normalisers' eps
    and ``state_dict`` the Sequential's own (``"0.weight"``, ``"0.bias"``, ...), so
    :func:`module_from_export` (or the few lines of docs/guide/trained.md) rebuilds the very
    modules.
    """
    torch = import_torch()
    model = to_torch(net, dtype)
    kinds = [
        f"GroupNorm:{m.num_groups}" if isinstance(m, torch.nn.GroupNorm) else type(m).__name__
        for m in model
    ]
    norms = [m for m in model if not isinstance(m, torch.nn.Linear)]
    return {
        "format": TORCH_EXPORT_FORMAT,
        "modules": kinds,
        "eps": float(norms[0].eps) if norms else 1e-5,
        "classes": list(net.classes),
        "state_dict": model.state_dict(),
    }


def module_from_export(obj: Any, name: str = "export") -> torch.nn.Sequential:
    """The ``nn.Sequential`` (eval mode) of :func:`torch_export`'s data, as ``torch.load``
    gives it back::

        model = module_from_export(torch.load("model.pt"))
        scores = model(X)  # (m, len(classes)); classes: torch.load("model.pt")["classes"]

    Its modules hold the file's tensors (:func:`sequential_from_state_dict`).
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


def save_torch(net: LNNet[Any], path: str | os.PathLike[str], dtype: str | None = None) -> None:
    """``torch.save(torch_export(net, dtype), path)``, atomically.

    Plain ``torch.load(path)`` reads the file (it holds tensors, lists, numbers and strings
    only); :func:`module_from_export` rebuilds the modules, and :func:`load_torch` reads it
    as the exact net again.
    """
    from .fileformat import write_all_atomic

    write_all_atomic([(path, torch_bytes(net, dtype))])


def torch_bytes(net: LNNet[Any], dtype: str | None = None) -> bytes:
    """What :func:`save_torch` writes: ``torch.save`` of :func:`torch_export`."""
    torch = import_torch()
    buf = io.BytesIO()
    torch.save(torch_export(net, dtype), buf)
    return buf.getvalue()


# ---------------------------------------------------------------------------
# LNNet -> ONNX

ONNX_OPSET = 17
"""``LayerNormalization`` is an ONNX operator from opset 17 on."""

_NO_ONNX = "ONNX export needs the onnx package: pip install 'lncapacity[onnx]'"


def to_onnx(net: LNNet[Any], dtype: str = "float32") -> bytes:
    """``net`` as a serialized ONNX model: input ``x`` ``(m, input_dim)``, output ``z``.

    Each affine map is a ``Gemm`` (``x W^T + b``), each LayerNorm a
    ``LayerNormalization`` (over the last axis, ``epsilon = float(eps)``, scale and
    bias from the layer's :class:`~lncapacity.model.Norm`, ones and zeros when
    it has none).  An LN-G layer of ``g`` groups (opset 17 has no
    ``GroupNormalization``, and opset 18's scales each group, not each feature) is
    ``Reshape`` to ``(m, g, n / g)``, ``LayerNormalization`` over the last axis (scale one,
    bias zero), ``Reshape`` back to ``(m, n)``, then ``Mul`` by its gain and ``Add`` of its
    bias (each only when the layer has it).  ``dtype``: ``"float32"`` or ``"float64"``; the
    weights are the exact ones rounded to it.  ONNX stores ``epsilon`` as a float32
    attribute, so a float64 model adds ``float32(eps)``, not ``eps``.
    """
    try:
        import onnx
        from onnx import TensorProto, helper, numpy_helper
    except ImportError:
        raise InputError(_NO_ONNX) from None
    if dtype not in ("float32", "float64"):
        raise InputError(f"unknown ONNX dtype {dtype!r} (choose from float32, float64)")
    npdt = np.dtype(dtype)
    elem = TensorProto.FLOAT if dtype == "float32" else TensorProto.DOUBLE
    inits: list[Any] = []
    nodes: list[Any] = []

    def const(name: str, values: Any, where: str) -> str:
        a = export_floats(values, where, dtype, True)
        inits.append(numpy_helper.from_array(a.astype(npdt), name))
        return name

    def gemm(a: Affine[Any], x: str, out: str, where: str) -> None:
        w = const(f"{out}_W", [list(row) for row in a.W], f"{where}.W")  # rows x cols
        b = const(f"{out}_b", list(a.b), f"{where}.b")
        nodes.append(helper.make_node("Gemm", [x, w, b], [out], transB=1))

    # ONNX stores epsilon as a float32 attribute
    eps = finite_float(net.eps, "export: eps", "float32")

    def shape(name: str, dims: list[int]) -> str:
        inits.append(numpy_helper.from_array(np.array(dims, dtype=np.int64), name))
        return name

    def groups(i: int, n: int, norm: Norm[Any], y: str) -> str:
        """LN-G: Reshape, LayerNormalization in each group, Reshape, gain and bias."""
        g, k = norm.groups, n // norm.groups
        nodes.append(helper.make_node("Reshape", [y, shape(f"g{i}_in", [-1, g, k])], [f"{y}_g"]))
        one = const(f"g{i}_one", [1] * k, f"layers[{i - 1}].ln")
        zero = const(f"g{i}_zero", [0] * k, f"layers[{i - 1}].ln")
        ln = helper.make_node(
            "LayerNormalization", [f"{y}_g", one, zero], [f"u{i}_g"], axis=-1, epsilon=eps
        )
        nodes.append(ln)
        out = f"u{i}"
        nodes.append(helper.make_node("Reshape", [f"u{i}_g", shape(f"g{i}_out", [-1, n])], [out]))
        for op, part in (("Mul", "gain"), ("Add", "bias")):
            v = getattr(norm, part)
            if v is not None:
                c = const(f"ln{i}_{part}", list(v), f"layers[{i - 1}].ln.{part}")
                nodes.append(helper.make_node(op, [out, c], [f"{out}_{part}"]))
                out = f"{out}_{part}"
        return out

    x = "x"
    for i, layer in enumerate(net.layers):
        n = len(layer.b)
        gemm(layer, x, f"y{i + 1}", f"layers[{i}]")
        norm = net.norm(i)
        if norm.groups != 1:
            x = groups(i + 1, n, norm, f"y{i + 1}")
            continue
        scale = const(f"ln{i + 1}_gain", list(norm.gain or [1] * n), f"layers[{i}].ln.gain")
        bias = const(f"ln{i + 1}_bias", list(norm.bias or [0] * n), f"layers[{i}].ln.bias")
        nodes.append(
            helper.make_node(
                "LayerNormalization",
                [f"y{i + 1}", scale, bias],
                [f"h{i + 1}"],
                axis=-1,
                epsilon=eps,
            )
        )
        x = f"h{i + 1}"
    gemm(net.readout, x, "z", "readout")
    graph = helper.make_graph(
        nodes,
        "lnnet",
        [helper.make_tensor_value_info("x", elem, ["m", net.input_dim])],
        [helper.make_tensor_value_info("z", elem, ["m", len(net.classes)])],
        inits,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", ONNX_OPSET)], producer_name="lncapacity"
    )
    model.ir_version = min(model.ir_version, 8)  # readable by older runtimes too
    onnx.checker.check_model(model)
    return model.SerializeToString()


def save_onnx(net: LNNet[Any], path: str | os.PathLike[str], dtype: str = "float32") -> None:
    """Write :func:`to_onnx` to ``path``, atomically."""
    from .fileformat import write_all_atomic

    write_all_atomic([(path, to_onnx(net, dtype))])


def run_onnx(model: bytes, X: Any, dtype: str = "float32") -> np.ndarray:
    """Run a model from :func:`to_onnx` with onnxruntime on the rows of ``X``."""
    try:
        import onnxruntime
    except ImportError:
        raise InputError("running ONNX needs onnxruntime: pip install 'lncapacity[onnx]'") from None
    opts = onnxruntime.SessionOptions()
    opts.intra_op_num_threads = opts.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
    x = np.asarray(X, dtype=np.float64).astype(dtype)
    return session.run(["z"], {"x": x})[0]
