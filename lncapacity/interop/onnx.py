"""ONNX out: any net as an ONNX model (:func:`to_onnx`), written atomically
(:func:`save_onnx`) and run with onnxruntime (:func:`run_onnx`)."""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from ..arith import finite_float
from ..errors import InputError
from ..floats import export_floats
from ..model import Affine, LNNet, Norm

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
    attribute, so a float64 model adds ``float32(eps)``, not ``eps``.  An RMSNorm layer (opset
    17 has no ``RMSNormalization``, an operator from opset 23 on) is primitive operators in
    each of its ``g`` groups: ``Reshape`` to ``(m, g, n / g)``, ``Mul`` (the squares),
    ``ReduceMean`` over the last axis, ``Add`` of ``eps`` (a constant of the model's dtype:
    ``float64(eps)`` in a float64 model), ``Sqrt``, ``Div``, ``Reshape`` back, then its gain and
    bias.
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

    def in_groups(i: int, n: int, norm: Norm[Any], y: str, body: Callable[[str], str]) -> str:
        """A layer normalised in its groups: ``Reshape`` to ``(m, g, n / g)``, ``body`` (the
        name of its input to the name of its output), ``Reshape`` back, gain and bias."""
        g, k = norm.groups, n // norm.groups
        nodes.append(helper.make_node("Reshape", [y, shape(f"g{i}_in", [-1, g, k])], [f"{y}_g"]))
        out = f"u{i}"
        nodes.append(
            helper.make_node("Reshape", [body(f"{y}_g"), shape(f"g{i}_out", [-1, n])], [out])
        )
        for op, part in (("Mul", "gain"), ("Add", "bias")):
            v = getattr(norm, part)
            if v is not None:
                c = const(f"ln{i}_{part}", list(v), f"layers[{i - 1}].ln.{part}")
                nodes.append(helper.make_node(op, [out, c], [f"{out}_{part}"]))
                out = f"{out}_{part}"
        return out

    def ln_g(i: int, k: int, y: str) -> str:
        """LayerNormalization over the last axis (each group of ``k``), no gain or bias."""
        one = const(f"g{i}_one", [1] * k, f"layers[{i - 1}].ln")
        zero = const(f"g{i}_zero", [0] * k, f"layers[{i - 1}].ln")
        nodes.append(
            helper.make_node(
                "LayerNormalization", [y, one, zero], [f"{y}_ln"], axis=-1, epsilon=eps
            )
        )
        return f"{y}_ln"

    def rms(i: int, y: str) -> str:
        """RMSNorm over the last axis: ``Div(y, Sqrt(ReduceMean(Mul(y, y)) + eps))``, ``eps`` a
        constant of the model's dtype."""
        nodes.append(helper.make_node("Mul", [y, y], [f"{y}_sq"]))
        nodes.append(helper.make_node("ReduceMean", [f"{y}_sq"], [f"{y}_ms"], axes=[-1]))
        e = const(f"r{i}_eps", [net.eps], "eps")
        nodes.append(helper.make_node("Add", [f"{y}_ms", e], [f"{y}_var"]))
        nodes.append(helper.make_node("Sqrt", [f"{y}_var"], [f"{y}_root"]))
        nodes.append(helper.make_node("Div", [y, f"{y}_root"], [f"{y}_rms"]))
        return f"{y}_rms"

    x = "x"
    for i, layer in enumerate(net.layers):
        n = len(layer.b)
        gemm(layer, x, f"y{i + 1}", f"layers[{i}]")
        norm = net.norm(i)
        if norm.rms or norm.groups != 1:
            k = n // norm.groups
            body = partial(rms, i + 1) if norm.rms else partial(ln_g, i + 1, k)
            x = in_groups(i + 1, n, norm, f"y{i + 1}", body)
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
    from ..fileformat import write_all_atomic

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
