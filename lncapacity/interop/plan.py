"""What an import from PyTorch reads, checked before any weight is: the modules in order
(nested Sequentials flattened), their types, attributes and tensors' shapes, the chain of
dimensions, and the limits of a net that can be read back (``_plan``)."""

from __future__ import annotations

import math
from typing import Any

from ..errors import InputError
from ..floats import import_torch

TORCH_DTYPES = ("float64", "float32", "bfloat16", "float16")
"""The dtypes :func:`~lncapacity.interop.torch_out.to_torch` writes (weights rounded from the
exact values, through float64)."""


MAX_MODULES = 100_000
"""Most modules :func:`~lncapacity.interop.torch_in.from_torch` reads (nested Sequentials
flattened), and the largest module index + 1 of a state dict (a depth-10,000 net has 20,001
modules, with dropouts 30,001)."""


MAX_IMPORT_NUMBERS = 1 << 22
"""Most numbers (weights, biases, LayerNorm gains and biases) of an imported net, counted from the
tensors' shapes before any is read: 4,194,304.  A float32 weight takes about 20 bytes in
``lnnet/1``, so a net with more could not be read back anyway
(:data:`~lncapacity.fileformat.MAX_FILE_BYTES`)."""


MAX_COMPOSE_PRODUCTS = 10**7
"""Most exact products spent composing consecutive ``Linear`` maps (about 10 s)."""


def _limits() -> tuple[int, int, int, int]:
    from ..fileformat import MAX_DEPTH, MAX_GROUPED_WIDTH, MAX_INPUT_DIM, MAX_WIDTH

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


def _normalized_width(m: Any, where: str) -> int:
    """The one dimension a LayerNorm or RMSNorm normalises over (its ``normalized_shape``)."""
    shape = _attr(m, "normalized_shape", where)
    if not isinstance(shape, (tuple, list)) or not all(
        isinstance(s, int) and not isinstance(s, bool) for s in shape
    ):
        raise InputError(f"{where}: normalized_shape {_shown(shape)} is not integers")
    if len(shape) != 1:
        raise InputError(f"{where}: normalizes over {len(shape)} dimensions; only 1 fits")
    return int(shape[0])


def _parallel(m: Any) -> bool:
    """Whether ``m`` is a ``ParallelLN`` (the authors' class or lncapacity's), by its name and
    the attributes it is read by."""
    names = ("num_features", "num_per_group", "eps", "centering", "affine", "dim")
    return type(m).__name__ == "ParallelLN" and all(hasattr(m, a) for a in names)


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
    """Check everything :func:`~lncapacity.interop.torch_in.from_torch` reads, before reading
    any weight.

    Types, shapes and values of the modules' attributes, the chain of dimensions, and the limits
    (:data:`~lncapacity.fileformat.MAX_WIDTH`, ``MAX_INPUT_DIM``, ``MAX_DEPTH``,
    :data:`MAX_IMPORT_NUMBERS`, :data:`MAX_COMPOSE_PRODUCTS`; with GroupNorm or parallel
    modules, widths up to ``MAX_GROUPED_WIDTH``, each group at most ``MAX_WIDTH``) from the
    tensors' shapes alone.  Returns ``(where, module, kind, checked attributes)`` for the
    Linear, LayerNorm, GroupNorm, RMSNorm and ParallelLN modules and the skipped ones, in
    order.  ``nn.RMSNorm`` (an RMSNorm layer) is read with its ``eps``, or with ``eps=None``
    PyTorch's: ``torch.finfo`` of its input's dtype, the dtype of the Linear before it.  A
    ``ParallelLN`` (Ni et al., "Parallel Layer Normalization for Universal Approximation":
    the authors' class or :class:`lncapacity.parallel_norm.ParallelLN`, recognised by its name
    and attributes) on ``(batch, n)`` inputs (``dim=2``) is LN-G (``centering=True``) or
    RMSNorm in groups (``centering=False``).
    """
    torch = import_torch()
    nn = torch.nn
    max_depth, max_input_dim, max_width, max_grouped = _limits()
    mods = _modules(model, name) if isinstance(model, nn.Sequential) else [("", model)]
    # a net with LN-G layers may be wider (as its file may): each group is a LayerNorm
    wide = any(isinstance(m, nn.GroupNorm) or _parallel(m) for _, m in mods)
    max_features = max_grouped if wide else max_width
    dtype: Any = None  # of the last Linear's weight: an RMSNorm's input
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
        """A LayerNorm, GroupNorm, RMSNorm or ParallelLN of ``n`` features (its ``eps``, weight
        and bias) in its place: after the affine map since the last one."""
        nonlocal depth, pending
        shape = (1, n) if kind == "ParallelLN" else (n,)
        for part, t in (("weight", gain), ("bias", bias)):
            if t is not None and _shape(t, f"{where}.{part}", len(shape)) != shape:
                raise InputError(
                    f"{where}.{part}: shape {list(t.shape)}, but {list(shape)} is needed"
                )
        need(n, where)
        depth += 1
        if depth > max_depth:
            raise InputError(f"{where}: more than {max_depth} LayerNorms, beyond the limit")
        rows, cols = pending if pending is not None else (n, n)
        count(rows, cols, 2 * n, where)
        eps.add(e)
        pending = None
        plan.append((where, m, kind, {"weight": gain, "bias": bias, "n": n, "eps": e, **more}))

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
            dtype = W.dtype
            plan.append((where, m, "Linear", {"weight": W, "bias": b}))
        elif isinstance(m, nn.LayerNorm):
            n = _normalized_width(m, where)
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
            n = _normalized_width(m, where)
            width(n, where, "width")
            if _attr(m, "eps", where) is not None:
                e = _real_attr(m, "eps", where, 0.0)
            elif dtype is not None:  # PyTorch's default: the resolution of its input's dtype
                e = float(torch.finfo(dtype).eps)
            else:
                raise InputError(f"{where}: eps=None with no Linear before it: set its eps")
            normalizer(where, m, "RMSNorm", n, e, _attr(m, "weight", where), None, rms=True)
        elif _parallel(m):
            n = _int_attr(m, "num_features", where)
            k = _int_attr(m, "num_per_group", where)
            width(n, where, "num_features", max_features)
            if k < 1 or n % k:
                raise InputError(f"{where}: groups of {k} do not divide {n} features evenly")
            centering, affine = _attr(m, "centering", where), _attr(m, "affine", where)
            if not isinstance(centering, bool) or not isinstance(affine, bool):
                raise InputError(f"{where}: centering and affine must be True or False")
            if centering and k < 2:
                raise InputError(f"{where}: normalizes groups of a single feature (always 0)")
            if _attr(m, "dim", where) != 2:
                raise InputError(f"{where}: dim {_shown(m.dim)}; (batch, features) inputs: dim=2")
            width(k, where, "group width")
            e = _real_attr(m, "eps", where, 0.0)
            gain, bias = _attr(m, "weight", where), _attr(m, "bias", where)
            if affine != (gain is not None) or affine != (bias is not None):
                raise InputError(f"{where}: affine is {affine}, its weight and bias disagree")
            more = {"groups": n // k, "rms": not centering}
            normalizer(where, m, "ParallelLN", n, e, gain, bias, **more)
        else:
            raise InputError(
                f"{where}: not supported (an LN-Net has Linear and LayerNorm (or GroupNorm, "
                "RMSNorm, ParallelLN) modules only)"
            )
    if dim is None:
        raise InputError(f"{name}: no Linear or LayerNorm module to read")
    if len(eps) > 1:
        raise InputError(f"{name}: LayerNorms with different eps {sorted(eps)}; one eps is needed")
    rows, cols = pending if pending is not None else (dim, dim)
    count(rows, cols, 0, f"{name}: the readout")
    width(rows, f"{name}: the readout", "outputs")  # the classes of a file: at most MAX_WIDTH
    return plan
