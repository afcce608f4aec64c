"""``GroupLayerNorm``: LN-G as a PyTorch module (needs the optional ``torch`` extra).

``GroupLayerNorm(num_features, groups)`` splits the last axis into ``groups``
contiguous groups of ``num_features // groups`` and applies LayerNorm inside
each (``centre=False``: RMS normalisation inside each), then an optional
elementwise affine map, like ``torch.nn.LayerNorm``.  ``groups=1`` equals
``torch.nn.LayerNorm(num_features)``.  Ni et al. (ICML 2024) report that LN-G
amplifies LayerNorm's nonlinearity; :mod:`lncapacity.theory.hessian` has the
measure and the proposition (proofs/ln_g_hessian.md).

Import it as ``lncapacity.theory.GroupLayerNorm`` (loaded, with PyTorch, on
first use).
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["GroupLayerNorm"]


class GroupLayerNorm(nn.Module):
    """LayerNorm within ``groups`` groups of the last axis (LN-G), with an optional affine part."""

    def __init__(
        self,
        num_features: int,
        groups: int,
        eps: float = 1e-5,
        centre: bool = True,
        elementwise_affine: bool = True,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        if groups < 1 or num_features % groups:
            raise ValueError(f"{groups} groups do not divide {num_features} features evenly")
        self.num_features, self.groups, self.eps, self.centre = num_features, groups, eps, centre
        if elementwise_affine:
            self.weight = nn.Parameter(torch.ones(num_features, dtype=dtype))
            self.bias = nn.Parameter(torch.zeros(num_features, dtype=dtype))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        k = self.num_features // self.groups
        z = x.reshape(*x.shape[:-1], self.groups, k)
        if self.centre:
            z = z - z.mean(-1, keepdim=True)
        y = (z * torch.rsqrt((z * z).mean(-1, keepdim=True) + self.eps)).reshape(x.shape)
        if self.weight is not None:
            y = y * self.weight + self.bias
        return y

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, groups={self.groups}, eps={self.eps}, centre={self.centre}, "
            f"elementwise_affine={self.weight is not None}"
        )
