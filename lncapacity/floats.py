"""Floating-point backends: what a NumPy or PyTorch user of an exact net actually gets.

The same forward pass as :meth:`lncapacity.model.LNNet.forward` in floating
point, with every weight rounded to the backend's precision:

* ``"float64"``, ``"float32"``: vectorised NumPy (LayerNorm with the biased
  variance, as in ``torch.nn.LayerNorm``);
* ``"torch-float64"``, ``"torch-float32"``: PyTorch's own modules, the net as
  :func:`to_torch` gives it (``torch.nn.Linear`` for each affine map,
  ``torch.nn.LayerNorm(n_l, eps)`` for each LayerNorm, with the layer's gain
  and bias if it has them; ``torch.nn.GroupNorm(g, n_l, eps)`` for an LN-G layer
  of ``g`` groups, which on ``(batch, n_l)`` inputs is exactly LN-G;
  ``torch.nn.RMSNorm(n_l, eps)`` for an RMSNorm layer, and
  :class:`lncapacity.parallel_norm.ParallelLN` for one in groups or with a bias), available
  when ``import torch`` works;
* ``"torch-cuda-float32"``, ``"torch-cuda-tf32"``, ``"torch-cuda-bfloat16"``: the same modules
  on a CUDA device, in float32 with TF32 matrix products off, on
  (``torch.backends.cuda.matmul.allow_tf32``), and under ``torch.autocast`` to bfloat16 (its
  matrix products in bfloat16, its normalisations in float32, the scores bfloat16):
  what a certified net meets on a GPU.  Available where ``torch.cuda.is_available()``; elsewhere
  :func:`unavailable` says why, :func:`available_backends` leaves them out, and running one
  is an :class:`~lncapacity.errors.InputError` saying so.

Overflow or NaN in a forward pass makes the affected points wrong (a NaN or
infinite score is not the net's value) and raises no warning, NumPy's or
PyTorch's.  These checks *confirm* a net;
they never certify one.  PyTorch is optional (``pip install
'lncapacity[torch]'``) and imported only when a torch backend is used.
"""

from __future__ import annotations

import inspect
import math
import os
import warnings
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING, Any

import numpy as np

from .arith import FLOAT_MAX, finite_float, to_float, to_floats
from .data import PointSet
from .errors import InputError
from .model import Affine, LNNet, Norm, register_predictor
from .parallel import imap
from .reproducible import blas_one_thread, matmul, torch_one_thread

if TYPE_CHECKING:  # pragma: no cover
    import torch

DTYPES = {"float64": np.float64, "float32": np.float32}
"""The NumPy backends: name -> dtype.  Their names are the precisions themselves."""

CUDA_BACKENDS = {
    "torch-cuda-float32": "float32",
    "torch-cuda-tf32": "float32",
    "torch-cuda-bfloat16": "bfloat16",
}
"""The PyTorch backends on a CUDA device: name -> precision of the scores (TF32 rounds the
products' inputs to 10-bit mantissas, bfloat16 autocast to 8 bits)."""

TORCH_BACKENDS = {"torch-float64": "float64", "torch-float32": "float32", **CUDA_BACKENDS}
"""The PyTorch backends (on the CPU, then on CUDA): name -> precision."""

BACKENDS = (*DTYPES, *TORCH_BACKENDS)
"""Every backend name, whether or not PyTorch is installed here."""

FIXED_ORDER_FAN_IN = 128
"""Layers with at most this many inputs are run by :func:`lncapacity.reproducible.matmul`
(every sum in one fixed order: the same bits under any BLAS kernel and thread count, as the
searches that built the net computed them); wider ones by NumPy's ``@`` (BLAS: fast)."""


def product(h: np.ndarray, W: np.ndarray) -> np.ndarray:
    """``h @ W.T``, in a fixed order for fan-in up to :data:`FIXED_ORDER_FAN_IN`."""
    return matmul(h, W.T) if W.shape[1] <= FIXED_ORDER_FAN_IN else h @ W.T


MARGIN_WARNING_RATIO = 1e-6
"""A float margin below this fraction of the largest absolute score is "near float resolution"."""

_NO_TORCH = "PyTorch is not installed: pip install 'lncapacity[torch]'"


def import_torch() -> Any:
    """The ``torch`` module, imported now; :class:`InputError` saying how to install it when
    it is not installed."""
    try:
        import torch
    except ImportError:
        raise InputError(_NO_TORCH) from None
    return torch


def have_torch() -> bool:
    """Whether ``import torch`` works here (it is imported by this call)."""
    try:
        import_torch()
    except Exception:  # InputError, or a broken installation: either way no torch backends
        return False
    return True


def available_backends() -> tuple[str, ...]:
    """The backends this machine can run: the NumPy ones, the PyTorch ones if torch imports,
    and the CUDA ones if a CUDA device is there too."""
    return tuple(b for b in BACKENDS if unavailable(b) is None)


def unavailable(backend: str) -> str | None:
    """Why ``backend`` cannot run here (PyTorch not installed, no CUDA device), or None."""
    _check_backend(backend)
    if backend in DTYPES:
        return None
    if not have_torch():
        return "PyTorch is not installed"
    if backend in CUDA_BACKENDS and not import_torch().cuda.is_available():
        return "no CUDA device here: torch.cuda.is_available() is False"
    return None


def precision(backend: str) -> str:
    """``"float64"``, ``"float32"`` or ``"bfloat16"``: the dtype of ``backend``'s scores."""
    _check_backend(backend)
    return TORCH_BACKENDS.get(backend, backend)


def _check_backend(backend: str) -> None:
    if backend not in BACKENDS:
        raise InputError(f"unknown float backend {backend!r} (choose from {', '.join(BACKENDS)})")


def _vector(values: Any, dt: type) -> np.ndarray:
    """Exact numbers correctly rounded to float64 (``±inf`` beyond the range), then ``dt``."""
    with np.errstate(all="ignore"):  # float64 -> float32 overflows to inf, which check() counts
        return np.array(to_floats(values), dtype=np.float64).astype(dt)


def affine_arrays(a: Affine[Any], dt: type = np.float64) -> tuple[np.ndarray, np.ndarray]:
    """``(W, b)`` of an affine map as the NumPy backends hold them, in ``dt``."""
    W = _vector(list(chain.from_iterable(a.W)), dt)
    return W.reshape(a.shape), _vector(a.b, dt)


Layer = tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None, int, bool]
"""A layer's ``(W, b, gain, bias, groups, centre)`` in floats (:func:`layer_arrays`)."""


def layer_arrays(net: LNNet[Any], i: int, dt: type = np.float64) -> Layer:
    """Layer ``i``'s (0-based) weights and bias, its LayerNorm's gain and bias (None
    where absent), in ``dt``, its number of groups (1: LayerNorm) and whether it centres
    (False: RMSNorm)."""
    norm = net.norm(i)
    gain, bias = (None if v is None else _vector(v, dt) for v in (norm.gain, norm.bias))
    return (*affine_arrays(net.layers[i], dt), gain, bias, norm.groups, not norm.rms)


def run_layer(h: np.ndarray, layer: Layer, eps: Any) -> np.ndarray:
    """One layer as the NumPy backends run it: ``LN(W h + b)`` (in groups for LN-G; RMSNorm
    when it does not centre), then the gain and the bias."""
    W, b, gain, bias, groups, centre = layer
    h = layer_norm(product(h, W) + b, eps, groups, centre)
    if gain is not None:
        h = h * gain
    if bias is not None:
        h = h + bias
    return h


def export_floats(values: Any, where: str, dtype: str, finite: bool) -> np.ndarray:
    """Exact numbers (a vector or a matrix) as float64, each rounded by :func:`to_float`;
    with ``finite``, :class:`InputError` naming ``where`` for one beyond the ``dtype`` range."""
    rows = values if values and isinstance(values[0], (list, tuple)) else [values]
    a = np.array([to_floats(row) for row in rows], dtype=np.float64)
    if finite:
        beyond = ~(np.abs(a) <= FLOAT_MAX[dtype])  # NaN is beyond too
        if beyond.any():
            i, j = (int(k) for k in np.argwhere(beyond)[0])
            name = f"{where}[{i}][{j}]" if rows is values else f"{where}[{j}]"
            finite_float(rows[i][j], f"export: {name}", dtype)  # raises
    return a if rows is values else a[0]


def torch_sequential(net: LNNet[Any], dtype: str, finite: bool = True) -> torch.nn.Sequential:
    """``net`` as a ``torch.nn.Sequential`` of PyTorch's own modules, in the torch dtype named
    ``dtype`` (the callers, :func:`to_torch` and :func:`lncapacity.interop.torch_out.to_torch`,
    check it).

    One ``torch.nn.Linear`` per affine map, each followed (except the readout) by
    ``torch.nn.LayerNorm(n_l, eps=float(net.eps))``, with ``elementwise_affine`` and ``bias``
    set as the layer's :class:`~lncapacity.model.Norm` has them; an LN-G layer of ``g``
    groups by ``torch.nn.GroupNorm(g, n_l, eps=float(net.eps))`` (``affine`` when the layer
    has a gain or a bias; a missing gain is written as ones, a missing bias as
    ``bias=False`` where this PyTorch's GroupNorm takes it, else as zeros); an RMSNorm layer
    by ``torch.nn.RMSNorm(n_l, eps=float(net.eps))`` (``elementwise_affine`` when it has a
    gain), or, in ``g`` groups or with a bias, by
    :class:`~lncapacity.parallel_norm.ParallelLN` ``(n_l, n_l / g, eps, centering=False)``
    (``affine`` as GroupNorm's).  The weights are
    the exact ones rounded to float64 and then to ``dtype``; on the CPU, in eval mode, without
    gradients; the global random state is left untouched.  A weight or ``eps`` beyond the
    range of ``dtype`` is an :class:`InputError` naming it (``finite=False``: it becomes
    ``±inf``, as the float backends run it).
    """
    torch = import_torch()
    tdt = getattr(torch, dtype)
    nn = torch.nn

    def tensor(values: Any, where: str) -> Any:
        return torch.from_numpy(export_floats(values, where, dtype, finite)).to(tdt)

    def linear(a: Affine[Any], where: str) -> torch.nn.Linear:
        rows, cols = a.shape
        lin = nn.Linear(cols, rows, dtype=tdt)  # its random start is overwritten
        with torch.no_grad():
            lin.weight.copy_(tensor(a.W, f"{where}.W").reshape(rows, cols))
            lin.bias.copy_(tensor(a.b, f"{where}.b"))
        return lin

    def group_norm(n: int, norm: Norm[Any], where: str) -> torch.nn.GroupNorm:
        affine = not norm.is_identity
        # a gain alone: GroupNorm(bias=False) where this torch has it, else a zero bias
        no_bias = {"bias": False} if affine and norm.bias is None and _group_norm_bias(nn) else {}
        gn = nn.GroupNorm(norm.groups, n, eps=eps, affine=affine, dtype=tdt, **no_bias)
        if affine:
            with torch.no_grad():
                gn.weight.copy_(tensor(norm.gain or [1] * n, f"{where}.ln.gain"))
                if gn.bias is not None:
                    gn.bias.copy_(tensor(norm.bias or [0] * n, f"{where}.ln.bias"))
        return gn

    def rms_norm(n: int, norm: Norm[Any], where: str) -> torch.nn.Module:
        affine = not norm.is_identity
        if norm.groups == 1 and norm.bias is None:
            rms = nn.RMSNorm(n, eps=eps, elementwise_affine=affine, dtype=tdt)
            if affine:
                with torch.no_grad():
                    rms.weight.copy_(tensor(norm.gain, f"{where}.ln.gain"))
            return rms
        from .parallel_norm import ParallelLN

        pls = ParallelLN(n, n // norm.groups, eps, centering=False, affine=affine, dtype=tdt)
        if affine:
            with torch.no_grad():
                pls.weight.copy_(tensor(norm.gain or [1] * n, f"{where}.ln.gain")[None, :])
                pls.bias.copy_(tensor(norm.bias or [0] * n, f"{where}.ln.bias")[None, :])
        return pls

    def layer_norm(n: int, norm: Norm[Any], where: str) -> torch.nn.Module:
        if norm.rms:
            return rms_norm(n, norm, where)
        if norm.groups != 1:
            return group_norm(n, norm, where)
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


def _group_norm_bias(nn: Any) -> bool:
    """Whether this PyTorch's ``nn.GroupNorm`` takes ``bias=False`` (an affine part without
    a bias, as ``nn.LayerNorm`` has it)."""
    return "bias" in inspect.signature(nn.GroupNorm).parameters


def to_torch(net: LNNet[Any], dtype: str = "float64", finite: bool = True) -> torch.nn.Sequential:
    """``net`` as a ``torch.nn.Sequential`` of PyTorch's own modules, in ``dtype``.

    One ``torch.nn.Linear`` per affine map, each followed (except the readout) by
    ``torch.nn.LayerNorm(n_l, eps=float(net.eps))`` (``elementwise_affine`` only
    when the layer has a gain or bias), or ``torch.nn.GroupNorm(g, n_l, eps)`` for an
    LN-G layer; so ``2 * net.depth + 1`` modules.  The
    weights are the exact ones rounded to ``dtype`` (``"float64"`` or
    ``"float32"``; through float64, exactly as the NumPy backend rounds them), on
    the CPU; the global random state is left untouched.  The module maps a
    ``(m, input_dim)`` tensor to the ``(m, len(classes))`` scores.  This is
    :func:`lncapacity.interop.torch_out.to_torch` restricted to the NumPy backends' dtypes
    (``finite=False``: weights beyond the range become ``±inf``, as the backends run them;
    by default :class:`~lncapacity.errors.InputError`).
    """
    import_torch()
    if dtype not in DTYPES:
        raise InputError(f"unknown dtype {dtype!r} (choose from {', '.join(DTYPES)})")
    return torch_sequential(net, dtype, finite)


def forward(
    net: LNNet[Any], X: Any, backend: str = "float64", workers: int | None = None
) -> np.ndarray:
    """The readout scores by ``backend``: a NumPy array of its dtype, ``(m, len(classes))``.

    Overflow gives infinite or NaN scores, silently.  The NumPy backends run blocks of
    :data:`FLOAT_CHUNK` points times features over ``workers`` processes (default: every core
    from :data:`FLOAT_PARALLEL` points times features; the same blocks, so the same scores,
    however many).
    """
    _check_backend(backend)
    if isinstance(X, PointSet):
        h = X.floats()  # exact coordinates beyond the float range become inf: wrong points
    else:
        try:
            with np.errstate(all="ignore"):
                h = np.asarray(X, dtype=np.float64)
        except (TypeError, ValueError, OverflowError) as e:
            raise InputError(f"X must be an array of finite numbers ({e})") from None
        if not np.isfinite(h).all():
            raise InputError("X has NaN or infinite values: a net classifies finite points")
    if h.ndim != 2 or h.shape[1] != net.input_dim:
        raise InputError(f"expected an array of shape (m, {net.input_dim}), got {h.shape}")
    rows = max(1, FLOAT_CHUNK // max((net.input_dim, *net.widths)))
    if backend in CUDA_BACKENDS:
        return _forward_cuda(net, h, backend, rows)
    if backend in TORCH_BACKENDS:
        return _forward_torch(net, h, TORCH_BACKENDS[backend], rows)
    dt = DTYPES[backend]
    layers = [layer_arrays(net, i, dt) for i in range(net.depth)]
    R, r = affine_arrays(net.readout, dt)
    eps = dt(to_float(net.eps))
    out = np.empty((len(h), len(net.classes)), dtype=dt)
    starts = range(0, len(h), rows)
    if workers is None:
        workers = (os.cpu_count() or 1) if large(net, len(h)) else 1
    blocks = imap(_forward_block, starts, min(workers, len(starts)), (layers, R, r, eps, h, rows))
    # a block's products are small: BLAS on one thread here (the pool's workers have one)
    with closing(blocks), blas_one_thread():
        for start, block in zip(starts, blocks, strict=True):
            out[start : start + rows] = block
    return out


def _forward_block(net: tuple[Any, ...], start: int) -> np.ndarray:
    """The scores of the ``rows`` points from ``start`` by the NumPy backends, ``net`` as
    ``(layers, R, r, eps, points, rows)`` in floats: the same for every number of processes."""
    layers, R, r, eps, h, rows = net
    with np.errstate(all="ignore"):  # overflow and NaN make points wrong; check() counts them
        part = h[start : start + rows].astype(R.dtype)
        for layer in layers:
            part = run_layer(part, layer, eps)
        return product(part, R) + r


FLOAT_PARALLEL = 1 << 24
"""Points times features (of every layer) from which :func:`forward` spreads its blocks over
processes by default (:func:`large`)."""


def large(net: LNNet[Any], m: int) -> bool:
    """Whether a float pass of ``net`` over ``m`` points is worth processes of its own: at
    least :data:`FLOAT_PARALLEL` points times features, summed over the layers."""
    return m * sum((net.input_dim, *net.widths)) >= FLOAT_PARALLEL


def forwards(
    net: LNNet[Any], X: Any, backends: tuple[str, ...] | None = None, workers: int | None = None
) -> dict[str, np.ndarray]:
    """Each backend's scores by :func:`forward`, by name; ``backends`` None: every backend
    this machine has (:func:`available_backends`, which imports PyTorch)."""
    names = available_backends() if backends is None else backends
    return {backend: forward(net, X, backend, workers) for backend in names}


FLOAT_CHUNK = 1 << 16
"""Points times features (of the widest layer) that :func:`forward` runs at once: its memory
stays a few tens of MiB however many points (a point's floats do not depend on the others';
a BLAS product, for fan-in above :data:`FIXED_ORDER_FAN_IN`, may round the last bits
differently with another number of rows).  Products of that size run BLAS on one thread
(:func:`lncapacity.reproducible.blas_one_thread`): two threads took seven times the CPU
for the float64 and float32 passes of a 30,000-point LN-G net (1.1 s against 7.6 s)."""


def _predict(net: LNNet[Any], X: Any, backend: str) -> np.ndarray:
    """``LNNet.predict(X, backend)`` for every backend but ``"exact"``: the argmax of the
    scores by :func:`forward` (which checks ``backend``)."""
    return np.argmax(forward(net, X, backend), axis=1)


register_predictor("float", _predict)


def layer_norm(Y: np.ndarray, eps: Any, groups: int = 1, centre: bool = True) -> np.ndarray:
    """LayerNorm over the last axis of ``Y`` as the NumPy backends compute it (biased
    variance, ``eps`` inside the square root), in ``Y``'s dtype; with ``groups > 1``
    (LN-G) over each of ``groups`` contiguous groups of the last axis, each group's mean and
    variance summed left to right (NumPy's reductions over many short groups are slow).
    ``centre=False``: RMSNorm, ``Y / sqrt(mean(Y^2) + eps)`` (in each group)."""
    if groups != 1:  # each group's sums left to right, vectorised over points and groups
        shape = Y.shape
        k = shape[-1] // groups
        Z = Y.reshape(*shape[:-1], groups, k)
        if centre:
            total = Z[..., 0].copy()
            for j in range(1, k):
                total += Z[..., j]
            C = Z - (total / k)[..., None]
        else:
            C = Z
        sq = C[..., 0] * C[..., 0]
        for j in range(1, k):
            sq += C[..., j] * C[..., j]
        return (C / np.sqrt(sq / k + eps)[..., None]).reshape(shape)
    if centre:
        Y = Y - Y.mean(axis=-1, keepdims=True)
    return Y / np.sqrt((Y * Y).mean(axis=-1, keepdims=True) + eps)


def _forward_torch(net: LNNet[Any], h: np.ndarray, dtype: str, rows: int) -> np.ndarray:
    """The scores by PyTorch's modules (:func:`to_torch`), ``rows`` points at a time."""
    torch = import_torch()
    # One thread, then the caller's count again: once PyTorch's OpenMP pool has run in this
    # process, a worker fork()ed later (lncapacity.parallel, as shatter uses) hangs in its first
    # parallel kernel.  Width-3 layers gain nothing from threads anyway.
    with torch_one_thread(torch):
        # overflow in the cast or the modules gives inf/NaN scores, which check() counts as
        # wrong points: no warning reaches stderr (NumPy's cast, PyTorch's own)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = to_torch(net, dtype, finite=False)
            out = np.empty((len(h), len(net.classes)), dtype=DTYPES[dtype])
            with torch.no_grad():
                for start in range(0, len(h), rows):
                    part = torch.from_numpy(h[start : start + rows].astype(DTYPES[dtype]))
                    out[start : start + rows] = model(part).numpy()
            return out


def _forward_cuda(net: LNNet[Any], h: np.ndarray, backend: str, rows: int) -> np.ndarray:
    """The scores by PyTorch's modules (float32) on a CUDA device, as ``backend`` says: TF32
    matrix products off or on, or bfloat16 autocast; returned as float32."""
    if (why := unavailable(backend)) is not None:
        raise InputError(f"{backend}: {why}")
    torch = import_torch()
    matmul = torch.backends.cuda.matmul
    before = matmul.allow_tf32
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = to_torch(net, "float32", finite=False).to("cuda")
        out = np.empty((len(h), len(net.classes)), dtype=np.float32)
        bf16 = backend == "torch-cuda-bfloat16"
        try:
            matmul.allow_tf32 = backend == "torch-cuda-tf32"
            with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16):
                for start in range(0, len(h), rows):
                    part = torch.from_numpy(h[start : start + rows].astype(np.float32))
                    z = model(part.to("cuda"))
                    out[start : start + rows] = z.float().cpu().numpy()
        finally:
            matmul.allow_tf32 = before
    return out


BFLOAT16_SPACING = 2.0**16
"""bfloat16 has 8 significant bits, float32 24: its spacing is float32's times ``2^16``."""


def spacing(values: np.ndarray, dtype: str) -> np.ndarray:
    """The spacing of the floats of ``dtype`` in the binade of each of ``values`` (``>= 0``,
    float64): ``np.spacing`` at the value rounded down to ``dtype`` (so never coarser than the
    value's own), capped at the largest float; bfloat16, which NumPy lacks, by float32's
    times :data:`BFLOAT16_SPACING` (the same exponents)."""
    base = np.float32 if dtype == "bfloat16" else np.dtype(dtype).type
    mag = np.minimum(values, np.finfo(base).max)
    low = mag.astype(base)
    low = np.where(low > mag, np.nextafter(low, np.zeros_like(low)), low)
    ulp = np.spacing(low).astype(np.float64)
    return ulp * BFLOAT16_SPACING if dtype == "bfloat16" else ulp


@dataclass(frozen=True)
class FloatCheck:
    """How a float backend fares on labelled points."""

    backend: str
    agree: int
    """How many points the backend classifies right (its prediction is the point's label)."""
    total: int
    min_margin: float
    """``min_k (z[label_k] - max_{j != label_k} z[j])`` in the backend; negative if any point is
    wrong (``-inf`` for a NaN score), ``inf`` with a single class or no points."""
    max_abs_score: float = math.nan
    """The largest finite ``|z[j]|`` over all points and classes (NaN if there is none): the scale
    against which ``min_margin`` is small or not."""
    max_ulps: float = math.nan
    """The worst disagreement of a float score with the exact one, in units in the last place
    of the backend's dtype (see :func:`ulp_disagreement`); NaN when not computed."""
    max_abs_error: float = math.nan
    """An upper bound on ``|z - t|`` over every score, ``z`` the backend's and ``t`` the exact
    one (:func:`abs_disagreement`); NaN when not computed.  It goes with ``max_ulps``, which
    is relative to each dtype's resolution (so float32's few ulps can be a larger error than
    float64's many)."""

    @property
    def dtype(self) -> str:
        """``"float64"``, ``"float32"`` or ``"bfloat16"``: the precision of the backend."""
        return precision(self.backend)

    @property
    def all_agree(self) -> bool:
        return self.agree == self.total

    @property
    def wrong(self) -> int:
        return self.total - self.agree

    @property
    def near_resolution(self) -> bool:
        """Every point agrees, but the smallest margin is below :data:`MARGIN_WARNING_RATIO`
        times the largest absolute score: a slightly different float evaluation could flip it."""
        return (
            self.all_agree
            and math.isfinite(self.min_margin)
            and math.isfinite(self.max_abs_score)
            and self.min_margin < MARGIN_WARNING_RATIO * self.max_abs_score
        )


REFINE_DEPTH = 64
"""Nets up to this depth get their worst float rows re-bounded in balls (``max_ulps``)."""

REFINE_WEIGHTS = 10_000
"""... and up to this many weights: the balls evaluate a row with a Python operation per
weight (about 0.2 s a row at 45,000 weights, and the refinement takes up to 256 rows per
backend), so wider nets, LN-G ones at thousands of points say, keep the bound of the
certificate's interval enclosures (rigorous, looser where the enclosures are)."""


def worth_refining(net: LNNet[Any]) -> bool:
    """Whether :func:`check`'s ``refine`` pays for ``net``: balls at 128 bits tighten the ulp
    count of shallow nets with few weights (:data:`REFINE_DEPTH`, :data:`REFINE_WEIGHTS`);
    deep nets' interval scores are already tight (``interval.scalar_range``) and balls would
    cost more than they gain, and so would wide nets' (their cost, not the certificate's,
    would be most of a ``verify``)."""
    weights = sum(rows * cols for rows, cols in (a.shape for a in (*net.layers, net.readout)))
    return net.depth <= REFINE_DEPTH and weights <= REFINE_WEIGHTS


def ulp_disagreement(
    z: np.ndarray,
    exact: tuple[np.ndarray, np.ndarray],
    dtype: str,
    refine: Callable[[list[int]], tuple[np.ndarray, np.ndarray]] | None = None,
) -> float:
    """The worst ``|z - t| / ulp`` over all scores: ``z`` float scores, ``t`` the exact ones.

    An upper bound, rigorous: ``exact = (lo, hi)`` encloses every ``t`` (the certificate's
    interval pass or balls, rounded outwards), so ``|z - t| <= max(|z - lo|, |z - hi|)``;
    each difference is rounded up (``_distance_up``), and ``ulp``, a power of two,
    divides it exactly.  Tight when the enclosure is: the certificate's float64 intervals are
    far narrower than a float32 ulp, but may span many float64 ulps (thousands for wide LN-G
    layers), and ``refine`` narrows them.  ``ulp`` is ``np.spacing`` in ``dtype`` at the
    point's largest score, ``max_j max(|z_j|, |t_j|)``: the resolution at which the argmax
    is taken (a score near 0 has tiny ulps of its own, so its rounding errors would look
    huge by them); each ``|t_j|`` is taken at its least over ``[lo_j, hi_j]``, so the ulp
    is never coarser than the exact scores' and the count never smaller.  ``refine(rows)``
    returns tighter enclosures for some rows (points); rows are refined, worst first, until
    the worst row is a refined one (at most 8 rounds of 32).  Infinite or NaN float scores
    give ``inf``.
    """
    if z.size == 0:
        return 0.0
    lo, hi = exact[0].copy(), exact[1].copy()
    zz = z.astype(np.float64)
    if not np.all(np.isfinite(zz)):
        return math.inf

    def per_row() -> np.ndarray:
        with np.errstate(all="ignore"):
            # |t| at its least over the enclosure: the ulp is never coarser than t's own
            least = np.where((lo <= 0) & (hi >= 0), 0.0, np.minimum(np.abs(lo), np.abs(hi)))
            ulp = spacing(np.maximum(np.abs(zz), least).max(axis=1), dtype)[:, None]
            err = np.maximum(_distance_up(zz, lo), _distance_up(zz, hi)) / ulp
        return np.where(np.isnan(err), np.inf, err).max(axis=1)

    err = per_row()
    if refine is not None:
        done = np.zeros(len(err), dtype=bool)
        for _ in range(8):
            order = np.argsort(-np.where(done, -np.inf, err))
            worst_left = err[order[0]] if not done[order[0]] else -np.inf
            if worst_left <= err[done].max(initial=-np.inf):
                break
            rows = [int(i) for i in order[:32] if not done[i]]
            lo[rows], hi[rows] = refine(rows)
            done[rows] = True
            err = per_row()
    return float(err.max())


def check(
    net: LNNet[Any],
    points: PointSet,
    backend: str = "float64",
    exact: tuple[np.ndarray, np.ndarray] | None = None,
    refine: Callable[[list[int]], tuple[np.ndarray, np.ndarray]] | None = None,
    workers: int | None = None,
    scores: np.ndarray | None = None,
) -> FloatCheck:
    """Run ``net`` on ``points`` with ``backend`` (over ``workers`` processes: :func:`forward`;
    or take its ``scores`` from a :func:`forward` already run) and compare with their labels.

    With ``exact`` (bounds on the exact scores, as
    :attr:`~lncapacity.certify.verdicts.Certificate.scores` has them) also the worst
    disagreement in ulps (:func:`ulp_disagreement`, ``refine`` narrowing the bounds of some
    rows) and in absolute terms (:func:`abs_disagreement`).
    """
    z = (forward(net, points, backend, workers) if scores is None else scores).astype(np.float64)
    ulps = abs_error = math.nan
    if exact is not None:
        ulps = ulp_disagreement(z, exact, precision(backend), refine)
        abs_error = abs_disagreement(z, exact)
    with np.errstate(all="ignore"):  # inf - inf is NaN, which counts as wrong
        finite = np.abs(z[np.isfinite(z)])
        scale = float(finite.max()) if finite.size else math.nan
        target = np.array([net.classes.index(label) for label in points.y], dtype=np.intp)
        rows = np.arange(len(target))
        overflowed = ~np.isfinite(z).all(axis=1)  # before the own scores are masked below
        own = z[rows, target]
        z[rows, target] = -np.inf
        margins = own - z.max(axis=1) if z.shape[1] > 1 else np.full(len(target), np.inf)
        # a NaN score decides nothing, and an overflowed (infinite) one is not the net's value
        margins = np.where(np.isnan(margins) | overflowed, -np.inf, margins)
    agree = int(np.sum(margins > 0))
    margin = float(margins.min(initial=np.inf))
    return FloatCheck(backend, agree, len(target), margin, scale, ulps, abs_error)


def abs_disagreement(z: np.ndarray, exact: tuple[np.ndarray, np.ndarray]) -> float:
    """An upper bound on ``|z - t|`` over every score: ``z`` float scores (float64), ``t``
    the exact ones, enclosed by ``exact = (lo, hi)`` (the distance counted is to the farther
    end); ``inf`` for a NaN or infinite score, 0 with no scores."""
    if z.size == 0:
        return 0.0
    lo, hi = exact
    with np.errstate(all="ignore"):
        err = np.maximum(_distance_up(z, lo), _distance_up(z, hi))
    return float(np.where(np.isnan(err), np.inf, err).max())


def _distance_up(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``|a - b|`` rounded up: the float difference, one ulp further where it was rounded
    (Knuth's TwoSum gives the rounding error of ``a + (-b)`` exactly); ``inf`` on overflow."""
    s = a - b
    bb = s - a
    e = (a - (s - bb)) + (-b - bb)
    d = np.abs(s)
    return np.where(e == 0, d, np.nextafter(d, np.inf))
