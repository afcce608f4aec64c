"""The theory toolkit: checkable versions of the claims around LayerNorm's nonlinearity.

* :mod:`~lncapacity.theory.separability`: SSR and LSSR (reconstructed from Ni et al. 2024),
  exact for rational data; :mod:`~lncapacity.theory.net_trace`: both, certified,
  after every layer of an LN-Net (``lncapacity trace``).
* :mod:`~lncapacity.theory.hessian`: the Hessian measure of nonlinearity
  ``H(f; x)``, LN-G (group LayerNorm), closed forms and the proposition of Ni et al. 2024
  (``lncapacity hessian``).
* :mod:`~lncapacity.theory.geometry`: LayerNorm as projection and scaling
  (Brody, Alon and Yahav 2023), its hyperellipsoid image with a gain (Riechers 2024),
  selectable keys, and BatchNorm with fixed or per-batch statistics.
* :mod:`~lncapacity.theory.capacity`: the rank of each layer's LayerNorm output (proved
  bounds, LN against LN-G) and the counting bound on parameters (``lncapacity capacity``).
* ``GroupLayerNorm`` (PyTorch, optional): LN-G as an ``nn.Module``.

Every claim has a Markdown proof and an executable check in ``proofs/``.

>>> from lncapacity.theory import lssr, ln_hessian, ratio_lower_bound
>>> str(lssr([[0, 0], [1, 1], [0, 1], [1, 0]], [0, 0, 1, 1]))  # XOR: no linear map separates
'1'
>>> ln_hessian([1, 2, 4])  # H(LN; x) = 3 d (d - 2) / |P x|^4, exactly
81/196
>>> ratio_lower_bound(64, 16)  # H(LN-G)/H(LN) >= g (d - 2g)/(d - 2) at eps = 0
256/31
"""

from __future__ import annotations

from . import capacity, geometry
from .capacity import LayerRank, counting_bound, layer_ranks
from .hessian import (
    hessian_measure,
    hessian_measure_exact,
    hessian_ratio,
    layer_norm_groups,
    ln_hessian,
    ratio_lower_bound,
)
from .net_trace import LayerStats, trace
from .reals import CertifiedReal
from .separability import lssr, scatter_matrices, ssr

__all__ = [
    "CertifiedReal",
    "GroupLayerNorm",
    "LayerRank",
    "LayerStats",
    "capacity",
    "counting_bound",
    "geometry",
    "hessian_measure",
    "hessian_measure_exact",
    "hessian_ratio",
    "layer_norm_groups",
    "layer_ranks",
    "ln_hessian",
    "lssr",
    "ratio_lower_bound",
    "scatter_matrices",
    "ssr",
    "trace",
]


def __getattr__(name: str) -> object:
    if name == "GroupLayerNorm":  # imports PyTorch: only when asked for
        try:
            from .torch_modules import GroupLayerNorm
        except ImportError as e:  # pragma: no cover - torch is installed in CI
            msg = "GroupLayerNorm needs PyTorch: pip install 'lncapacity[torch]'"
            raise ImportError(msg) from e
        return GroupLayerNorm
    raise AttributeError(f"module 'lncapacity.theory' has no attribute {name!r}")
