"""The theory toolkit: checkable versions of the claims around LayerNorm's nonlinearity.

* :mod:`~lncapacity.theory.ssr`: SSR and LSSR (reconstructed from seed 000),
  exact for rational data; :mod:`~lncapacity.theory.trace`: both, certified,
  after every layer of an LN-Net (``lncapacity trace``).
* :mod:`~lncapacity.theory.hessian`: the Hessian measure of nonlinearity
  ``H(f; x)``, LN-G (group LayerNorm), closed forms and the slides' proposition
  (``lncapacity hessian``).
* :mod:`~lncapacity.theory.geometry`: LayerNorm as projection and scaling
  (seed 004), its hyperellipsoid image with a gain (seed 002), selectable
  keys, and BatchNorm with fixed or per-batch statistics (seed 003).
* ``GroupLayerNorm`` (PyTorch, optional): LN-G as an ``nn.Module``.

Every claim has a Markdown proof and an executable check in ``proofs/``.
"""

from __future__ import annotations

from .reals import CertifiedReal
from .ssr import lssr, scatter_matrices, ssr

__all__ = [
    "CertifiedReal",
    "GroupLayerNorm",
    "lssr",
    "scatter_matrices",
    "ssr",
]


def __getattr__(name: str) -> object:
    if name == "GroupLayerNorm":  # imports PyTorch: only when asked for
        from .torch_modules import GroupLayerNorm

        return GroupLayerNorm
    raise AttributeError(f"module 'lncapacity.theory' has no attribute {name!r}")
