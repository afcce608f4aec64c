"""PyTorch and ONNX in and out: the LN-Nets people train, as exact nets, and back.

* :func:`from_torch` reads an ``nn.Sequential`` of ``nn.Linear`` and
  ``nn.LayerNorm`` modules (any widths, with or without the elementwise gain
  and bias, any ``eps``) as an exact :class:`~lncapacity.model.LNNet`.  Every
  float32, float64, bfloat16 or float16 weight is a dyadic rational, and it is
  read as exactly that rational (through float64, which holds every value of
  those formats exactly), so the imported net is the trained net's function in
  exact real arithmetic: what :func:`lncapacity.certify` then proves is about
  the net that was trained.
* :func:`to_torch` writes any net back as PyTorch's own modules.  A net
  imported from PyTorch comes back as the modules it came from, with the same
  weights bit for bit, so the same float outputs.
* :func:`to_onnx` writes an ONNX model (``Gemm`` and ``LayerNormalization``,
  opset 17), checked with onnxruntime in the tests (``pip install
  'lncapacity[onnx]'``).

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
LayerNorm computes it, so it does not fit the model.

LayerNorm gains and biases are kept as they are (``Norm``): folding them into
the next map is exact in rationals (:meth:`~lncapacity.model.LNNet.folded`,
which the certificate uses) but not in floats, so keeping them is what lets
:func:`to_torch` give back the trained float computation.  A gain of all ones
and a bias of all zeros are dropped (exact in floats too: ``1 * u + 0 = u``).
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np
from flint import fmpq

from .arith import FLOAT_MAX, finite_float, to_float
from .errors import InputError
from .model import Affine, Label, LNNet, Norm

if TYPE_CHECKING:  # pragma: no cover
    import torch

__all__ = [
    "TORCH_DTYPES",
    "from_state_dict",
    "from_torch",
    "load_torch",
    "save_onnx",
    "save_torch",
    "to_onnx",
    "to_torch",
    "torch_bytes",
]

TORCH_DTYPES = ("float64", "float32", "bfloat16", "float16")
"""The dtypes :func:`to_torch` writes (weights rounded from the exact values, through float64)."""

SAFE_MODULES = ("Sequential", "Linear", "LayerNorm", "Identity", "Dropout", "Flatten")
"""The ``torch.nn`` classes :func:`load_torch` lets ``torch.load(weights_only=True)`` rebuild."""


def _torch() -> Any:
    from .floats import _torch as imported

    return imported()


# ---------------------------------------------------------------------------
# PyTorch -> LNNet


def _exact_tensor(t: Any, where: str) -> list[Any]:
    """The exact rationals of a floating-point tensor (nested lists), or InputError."""
    torch = _torch()
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


def _modules(model: Any) -> list[tuple[str, Any]]:
    """``(name, module)`` in execution order, nested Sequentials flattened."""
    torch = _torch()
    if isinstance(model, torch.nn.Sequential):
        out = []
        for name, m in model.named_children():
            for sub, mm in _modules(m):
                out.append((f"{name}.{sub}" if sub else name, mm))
        return out
    return [("", model)]


def from_torch(
    model: Any, *, classes: Sequence[Label] | None = None, name: str = "model"
) -> LNNet[fmpq]:
    """The exact LN-Net of a PyTorch ``nn.Sequential`` of ``Linear`` and ``LayerNorm``.

    See the module doc for the normal form and what is refused (one line,
    :class:`~lncapacity.errors.InputError`, naming the module as
    ``model[i]: Kind``).  ``classes`` name the outputs (default ``0 .. k-1``).
    The net's ``meta["torch"]`` records the weights' dtype (the default of
    :func:`to_torch`) and the modules read.
    """
    torch = _torch()
    nn = torch.nn
    if not isinstance(model, nn.Module):
        raise InputError(f"{name}: not a torch.nn.Module (got {type(model).__name__})")
    mods = _modules(model) if isinstance(model, nn.Sequential) else [("", model)]
    dim: int | None = None
    pending: Affine[fmpq] | None = None  # the affine map read since the last LayerNorm
    layers: list[Affine[fmpq]] = []
    norms: list[Norm[fmpq]] = []
    eps: set[float] = set()
    dtypes: set[str] = set()
    read: list[str] = []

    def here(key: str, m: Any) -> str:
        return f"{name}[{key}]: {type(m).__name__}" if key else f"{name}: {type(m).__name__}"

    def need(n: int, where: str) -> None:
        nonlocal dim
        if dim is not None and n != dim:
            raise InputError(f"{where}: expects {n} features, but the module before gives {dim}")
        dim = n

    for key, m in mods:
        where = here(key, m)
        if isinstance(m, nn.Linear):
            need(m.in_features, where)
            W = _exact_tensor(m.weight, f"{where}.weight")
            b = (
                _exact_tensor(m.bias, f"{where}.bias")
                if m.bias is not None
                else [fmpq(0)] * m.out_features
            )
            dtypes.add(str(m.weight.dtype).removeprefix("torch."))
            a = Affine(tuple(map(tuple, W)), tuple(b))
            pending = a if pending is None else _compose(a, pending)
            dim = m.out_features
        elif isinstance(m, nn.LayerNorm):
            shape = tuple(m.normalized_shape)
            if len(shape) != 1:
                raise InputError(f"{where}: normalizes over {len(shape)} dimensions; only 1 fits")
            need(shape[0], where)
            if shape[0] < 2:
                raise InputError(f"{where}: normalizes a single feature (always 0)")
            eps.add(float(m.eps))
            gain = bias = None
            if m.weight is not None:
                gain = tuple(_exact_tensor(m.weight, f"{where}.weight"))
                dtypes.add(str(m.weight.dtype).removeprefix("torch."))
                gain = None if all(g == 1 for g in gain) else gain
            if m.bias is not None:
                bias = tuple(_exact_tensor(m.bias, f"{where}.bias"))
                bias = None if all(c == 0 for c in bias) else bias
            layers.append(pending if pending is not None else _identity(shape[0]))
            norms.append(Norm(gain, bias))
            pending = None
        elif isinstance(m, (nn.Identity, nn.Flatten)):
            pass
        elif isinstance(m, nn.Dropout):
            if m.training and m.p > 0:
                raise InputError(
                    f"{where}: in training mode it zeroes features at random; call model.eval()"
                )
        elif isinstance(m, getattr(nn, "RMSNorm", ())):
            raise InputError(
                f"{where}: not supported (it does not centre, so it is no LayerNorm; "
                "an LN-Net has Linear and LayerNorm only)"
            )
        else:
            raise InputError(
                f"{where}: not supported (an LN-Net has Linear and LayerNorm modules only)"
            )
        read.append(type(m).__name__)
    if dim is None:
        raise InputError(f"{name}: no Linear or LayerNorm module to read")
    if len(eps) > 1:
        raise InputError(f"{name}: LayerNorms with different eps {sorted(eps)}; one eps is needed")
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


def from_state_dict(
    state: Any, spec: Sequence[str] | None = None, eps: float = 1e-5, name: str = "state dict"
) -> LNNet[fmpq]:
    """The net of a ``state_dict`` of an ``nn.Sequential`` of Linear and LayerNorm modules.

    Keys are ``"<i>.weight"`` and ``"<i>.bias"``.  ``spec`` lists the module kinds
    in order (``"Linear"``, ``"LayerNorm"``, ``"Dropout"``, ``"Identity"``); without
    it the kinds are read off the tensors (a 2-D weight is a Linear, a 1-D one a
    LayerNorm), which needs every module to have weights.  ``eps`` is the
    LayerNorms' (a state dict does not hold it; torch's default is ``1e-5``).
    """
    torch = _torch()
    nn = torch.nn
    if not isinstance(state, dict) or not all(
        isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in state.items()
    ):
        raise InputError(f"{name}: not a state dict (a mapping of names to tensors)")
    entries: dict[int, dict[str, Any]] = {}
    for key, t in state.items():
        head, _, part = key.partition(".")
        if not head.isdigit() or part not in ("weight", "bias"):
            raise InputError(f"{name}: key {key!r} is not <index>.weight or <index>.bias")
        entries.setdefault(int(head), {})[part] = t
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
    with torch.random.fork_rng(devices=[]):
        for i, kind in enumerate(kinds):
            e = entries.get(i, {})
            where = f"{name}: module {i} ({kind})"
            if kind == "Linear":
                if "weight" not in e or e["weight"].dim() != 2:
                    raise InputError(f"{where}: needs a 2-D weight")
                out_f, in_f = e["weight"].shape
                m = nn.Linear(in_f, out_f, bias="bias" in e, dtype=e["weight"].dtype)
                dim = out_f
            elif kind == "LayerNorm":
                w = e.get("weight", e.get("bias"))
                n = w.shape[0] if w is not None else dim
                if n is None:
                    raise InputError(f"{where}: its width is unknown (no weights, nothing before)")
                dt = w.dtype if w is not None else torch.float32
                m = nn.LayerNorm(
                    n, eps=eps, elementwise_affine="weight" in e, bias="bias" in e, dtype=dt
                )
                if "bias" in e and "weight" not in e:
                    raise InputError(f"{where}: a bias without a gain: not a torch LayerNorm")
            elif kind in ("Dropout", "Identity"):
                m = nn.Identity()
                if e:
                    raise InputError(f"{where}: has weights")
            else:
                raise InputError(
                    f"{where}: not supported (an LN-Net has Linear and LayerNorm modules only)"
                )
            try:
                m.load_state_dict(e, strict=True)
            except RuntimeError as err:
                first = str(err).strip().splitlines()[-1].strip()
                raise InputError(f"{where}: {first}") from None
            modules.append(m)
    return from_torch(nn.Sequential(*modules).eval(), name=name)


def load_torch(
    path: str | os.PathLike[str], spec: Sequence[str] | None = None, eps: float = 1e-5
) -> LNNet[fmpq]:
    """The net saved in ``path`` by ``torch.save``: an ``nn.Sequential`` or a state dict.

    Loaded with ``torch.load(weights_only=True)`` only: no code in the file is
    run.  Besides tensors and containers it may rebuild the ``torch.nn`` classes
    :data:`SAFE_MODULES` (so ``torch.save(model)`` of an LN-Net loads); a file
    pickling any other class (a ReLU, a custom Module) is refused, naming it.
    A state dict is read by :func:`from_state_dict` (``spec``, ``eps``).
    """
    torch = _torch()
    p = str(path)
    if not os.path.isfile(p):
        raise InputError(f"{p}: no such file")
    allowed = [getattr(torch.nn, n) for n in SAFE_MODULES]
    safe_globals = getattr(torch.serialization, "safe_globals", None)  # torch >= 2.5
    try:
        if safe_globals is None:  # older torch: tensors and containers only (state dicts)
            obj = torch.load(p, map_location="cpu", weights_only=True)
        else:
            with safe_globals(allowed):
                obj = torch.load(p, map_location="cpu", weights_only=True)
    except Exception as err:  # UnpicklingError, RuntimeError, EOFError, zipfile errors, ...
        raise InputError(f"{p}: cannot load: {_unpickling_reason(err)}") from None
    if isinstance(obj, torch.nn.Module):
        return from_torch(obj, name=p)
    return from_state_dict(obj, spec, eps, name=p)


def _unpickling_reason(err: Exception) -> str:
    text = str(err)
    marker = "Unsupported global: GLOBAL "
    if marker in text:
        glob = text.split(marker, 1)[1].split()[0]
        return (
            f"it pickles {glob}, which is not an LN-Net module (torch.load runs with "
            "weights_only=True: only tensors, Sequential, Linear, LayerNorm, Identity, Dropout, "
            "Flatten)"
        )
    lines = [s.strip() for s in text.strip().splitlines() if s.strip()]
    return lines[0] if lines else type(err).__name__


# ---------------------------------------------------------------------------
# LNNet -> PyTorch


def default_dtype(net: LNNet[Any]) -> str:
    """The dtype a net imported from PyTorch was trained in, else ``"float64"``."""
    torch_meta = net.meta.get("torch") if isinstance(net.meta, dict) else None
    dt = torch_meta.get("dtype") if isinstance(torch_meta, dict) else None
    return dt if dt in TORCH_DTYPES else "float64"


def _floats(values: Any, where: str, dtype: str, finite: bool) -> np.ndarray:
    """Exact numbers (a vector or a matrix) as float64, each rounded by :func:`to_float`;
    with ``finite``, :class:`InputError` naming ``where`` for one beyond the ``dtype`` range."""
    rows = values if values and isinstance(values[0], (list, tuple)) else [values]
    out = []
    for i, row in enumerate(rows):
        fs = [to_float(v) for v in row]
        if finite and not all(abs(f) <= FLOAT_MAX[dtype] for f in fs):  # NaN fails too
            j = next(j for j, f in enumerate(fs) if not abs(f) <= FLOAT_MAX[dtype])
            name = f"{where}[{i}][{j}]" if rows is values else f"{where}[{j}]"
            finite_float(row[j], f"export: {name}", dtype)  # raises
        out.append(fs)
    a = np.array(out, dtype=np.float64)
    return a if rows is values else a[0]


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
    torch = _torch()
    dtype = default_dtype(net) if dtype is None else dtype
    if dtype not in TORCH_DTYPES:
        raise InputError(f"unknown dtype {dtype!r} (choose from {', '.join(TORCH_DTYPES)})")
    tdt = getattr(torch, dtype)
    nn = torch.nn

    def tensor(values: Any, where: str) -> Any:
        return torch.from_numpy(_floats(values, where, dtype, finite)).to(tdt)

    def linear(a: Affine[Any], where: str) -> torch.nn.Linear:
        rows, cols = a.shape
        lin = nn.Linear(cols, rows, dtype=tdt)  # its random start is overwritten
        with torch.no_grad():
            lin.weight.copy_(tensor(a.W, f"{where}.W").reshape(rows, cols))
            lin.bias.copy_(tensor(a.b, f"{where}.b"))
        return lin

    def layer_norm(n: int, norm: Norm[Any], where: str) -> torch.nn.LayerNorm:
        affine = not norm.is_identity
        ln = nn.LayerNorm(
            n, eps=eps, elementwise_affine=affine, bias=norm.bias is not None, dtype=tdt
        )
        if affine:
            with torch.no_grad():
                ln.weight.copy_(tensor(norm.gain or [1] * n, f"{where}.ln.gain"))
                if norm.bias is not None:
                    ln.bias.copy_(tensor(norm.bias, f"{where}.ln.bias"))
        return ln

    eps = finite_float(net.eps, "export: eps", dtype) if finite else to_float(net.eps)
    modules: list[torch.nn.Module] = []
    # the modules' random initialisation must not move the caller's random state
    # (fork_rng restores it; nn.utils.skip_init would too, but costs 0.5 s on its first call)
    with torch.random.fork_rng(devices=[]):
        for i, layer in enumerate(net.layers):
            modules.append(linear(layer, f"layers[{i}]"))
            modules.append(layer_norm(len(layer.b), net.norm(i), f"layers[{i}]"))
        modules.append(linear(net.readout, "readout"))
    return nn.Sequential(*modules).eval().requires_grad_(False)


def save_torch(net: LNNet[Any], path: str | os.PathLike[str], dtype: str | None = None) -> None:
    """``torch.save(to_torch(net, dtype), path)``, atomically.

    The file loads with ``torch.load(path, weights_only=False)`` or, without
    running any code, with :func:`load_torch` (``weights_only=True`` plus the
    few ``torch.nn`` classes it uses).
    """
    from .fileformat import write_all_atomic

    write_all_atomic([(path, torch_bytes(net, dtype))])


def torch_bytes(net: LNNet[Any], dtype: str | None = None) -> bytes:
    """What :func:`save_torch` writes: ``torch.save`` of :func:`to_torch`."""
    torch = _torch()
    buf = io.BytesIO()
    torch.save(to_torch(net, dtype), buf)
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
    it has none).  ``dtype``: ``"float32"`` or ``"float64"``; the weights are
    the exact ones rounded to it.  ONNX stores ``epsilon`` as a float32
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
        a = _floats(values, where, dtype, True)
        inits.append(numpy_helper.from_array(a.astype(npdt), name))
        return name

    def gemm(a: Affine[Any], x: str, out: str, where: str) -> None:
        w = const(f"{out}_W", [list(row) for row in a.W], f"{where}.W")  # rows x cols
        b = const(f"{out}_b", list(a.b), f"{where}.b")
        nodes.append(helper.make_node("Gemm", [x, w, b], [out], transB=1))

    # ONNX stores epsilon as a float32 attribute
    eps = finite_float(net.eps, "export: eps", "float32")
    x = "x"
    for i, layer in enumerate(net.layers):
        n = len(layer.b)
        gemm(layer, x, f"y{i + 1}", f"layers[{i}]")
        norm = net.norm(i)
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
