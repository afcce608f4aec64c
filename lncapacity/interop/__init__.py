"""PyTorch and ONNX in and out: the LN-Nets people train, as exact nets, and back.

* :func:`~lncapacity.interop.torch_in.from_torch` reads an ``nn.Sequential`` of ``nn.Linear`` and
  ``nn.LayerNorm`` modules (any widths, with or without the elementwise gain
  and bias, any ``eps``) as an exact :class:`~lncapacity.model.LNNet`, and
  ``nn.GroupNorm(g, n)`` modules too: on ``(batch, n)`` inputs GroupNorm is exactly
  LN-G (LayerNorm in ``g`` groups, per-feature affine; :mod:`lncapacity.model`).  Every
  float32, float64, bfloat16 or float16 weight is a dyadic rational, and it is
  read as exactly that rational (through float64, which holds every value of
  those formats exactly), so the imported net is the trained net's function in
  exact real arithmetic: what :func:`lncapacity.certify` then proves is about
  the net that was trained.
* :func:`~lncapacity.interop.torch_out.to_torch` writes any net back as PyTorch's own
  modules.  A net imported from PyTorch comes back as the modules it came from, with the
  same weights bit for bit, so the same float outputs.
* :func:`~lncapacity.interop.onnx.to_onnx` writes an ONNX model (``Gemm`` and
  ``LayerNormalization``, opset 17; an LN-G layer as ``Reshape``, ``LayerNormalization``,
  ``Reshape``, then its gain and bias as ``Mul`` and ``Add``), checked with onnxruntime in
  the tests (``pip install 'lncapacity[onnx]'``).

Normal form.  The model is ``h_l = g_l * LN(W_l h_{l-1} + b_l) + beta_l`` and
a readout (:mod:`lncapacity.model`), so a Sequential is read as follows:
consecutive ``Linear`` maps are composed (exactly; the export then has one
``Linear`` in their place: the same function, not the same float
computation); a ``LayerNorm`` with no ``Linear`` before it gets the identity
map (``W = I``, ``b = 0``, which floats compute exactly), and so does the
readout after a final ``LayerNorm``.  ``nn.Identity``, ``nn.Flatten`` of 2-D
inputs and ``nn.Dropout`` in eval mode are identities and are skipped; a
``Dropout`` in training mode is random and is refused (call ``model.eval()``).
Anything else (ReLU, ...) is refused with one line naming it: an LN-Net has no
other nonlinearity.  A ``GroupNorm`` reads as an LN-G layer (``GroupNorm(1, n)`` as a
LayerNorm, which :func:`~lncapacity.interop.torch_out.to_torch` writes as
``nn.LayerNorm``: the same function with the same weights); its input is ``(batch, n)``,
as a Linear gives it.  ``nn.RMSNorm`` reads as an RMSNorm layer (``Norm.rms``; with
``eps=None``, PyTorch's ``finfo(dtype).eps`` of the Linear before it), and a ``ParallelLN``
of Ni et al., "Parallel Layer Normalization for Universal Approximation" (the authors' class
or :class:`lncapacity.parallel_norm.ParallelLN`, ``dim=2``) as LN-G (``centering=True``)
or RMSNorm in groups (``centering=False``, parallel layer scaling); ``to_torch`` writes
RMSNorm layers back as ``nn.RMSNorm``, or as ``ParallelLN`` in groups or with a bias.

LayerNorm gains and biases are kept as they are (``Norm``): folding them into
the next map is exact in rationals (:meth:`~lncapacity.model.LNNet.folded`,
which the certificate uses) but not in floats, so keeping them is what lets
:func:`~lncapacity.interop.torch_out.to_torch` give back the trained float computation.  A
gain of all ones and a bias of all zeros are dropped (exact in floats too: ``1 * u + 0 = u``).

**Modules**, one per idea, each importing only from those below it
(``[tool.importlinter]`` in pyproject.toml):

* :mod:`~lncapacity.interop.torch_files`: PyTorch files, loaded safely and saved;
* :mod:`~lncapacity.interop.torch_out` (PyTorch out: modules and the export format) and
  :mod:`~lncapacity.interop.onnx` (ONNX out);
* :mod:`~lncapacity.interop.torch_in`: PyTorch in, from modules or a state dict;
* :mod:`~lncapacity.interop.plan`: what an import reads, checked before any weight is.

What the rest of the package, the tests and the manual use is importable from
``lncapacity.interop`` itself.
"""

from __future__ import annotations

from .onnx import ONNX_OPSET as ONNX_OPSET
from .onnx import run_onnx as run_onnx
from .onnx import save_onnx, to_onnx
from .plan import MAX_COMPOSE_PRODUCTS as MAX_COMPOSE_PRODUCTS
from .plan import MAX_IMPORT_NUMBERS as MAX_IMPORT_NUMBERS
from .plan import MAX_MODULES as MAX_MODULES
from .plan import TORCH_DTYPES
from .torch_files import MAX_TORCH_FILE_BYTES as MAX_TORCH_FILE_BYTES
from .torch_files import SAFE_MODULES as SAFE_MODULES
from .torch_files import load_torch, save_torch, torch_bytes
from .torch_files import shown_line as shown_line
from .torch_in import NormKindWarning, from_state_dict, from_torch
from .torch_in import sequential_from_state_dict as sequential_from_state_dict
from .torch_out import TORCH_EXPORT_FORMAT as TORCH_EXPORT_FORMAT
from .torch_out import default_dtype as default_dtype
from .torch_out import module_from_export, to_torch, torch_export

__all__ = [
    "TORCH_DTYPES",
    "NormKindWarning",
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
