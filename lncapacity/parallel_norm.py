"""``ParallelLN``: the parallel layer normalisation of Ni et al. as a PyTorch module (needs the
optional ``torch`` extra; imported only where a net's modules are built).

Yunhao Ni et al., "Parallel Layer Normalization for Universal Approximation" (arXiv:2505.13142,
2025) normalise the features in groups of ``num_per_group``: with ``centering=True`` (PLN)
LayerNorm in each group, which is LN-G (``nn.GroupNorm(num_features // num_per_group,
num_features)`` on ``(batch, n)`` inputs); with ``centering=False`` (PLS, parallel layer
scaling) RMSNorm in each group, which PyTorch has no module for.  This class is the authors'
``ParallelLN(num_features, num_per_group, eps, centering, affine, dim=2)`` (public repository
Musicath/Parallel-LN) for ``(batch, num_features)`` inputs: the same operations in the same
order, and the same state dict (``weight`` and ``bias`` of shape ``[1, num_features]``), so
either loads the other's weights.  ``lncapacity`` writes a net's grouped RMSNorm layers (and an
RMSNorm with a bias, which ``nn.RMSNorm`` has not) as this module, and reads it back, or the
authors' own, by its attributes.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["ParallelLN"]


class ParallelLN(nn.Module):
    """Normalisation in contiguous groups of ``num_per_group`` features, centred or not, then
    ``x * weight + bias`` when ``affine``."""

    def __init__(
        self,
        num_features: int,
        num_per_group: int,
        eps: float = 1e-5,
        centering: bool = True,
        affine: bool = True,
        dim: int = 2,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        if dim != 2:
            raise ValueError("only (batch, features) inputs: dim=2")
        if num_per_group < 1 or num_features % num_per_group:
            raise ValueError(f"groups of {num_per_group} do not divide {num_features} features")
        self.num_features, self.num_per_group = num_features, num_per_group
        self.eps, self.centering, self.affine, self.dim = eps, centering, affine, dim
        if affine:
            self.weight = nn.Parameter(torch.ones(1, num_features, dtype=dtype, device=device))
            self.bias = nn.Parameter(torch.zeros(1, num_features, dtype=dtype, device=device))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        size = x.size()
        x = x.reshape(-1, self.num_features // self.num_per_group, self.num_per_group)
        xc = x - x.mean(dim=2, keepdim=True) if self.centering else x
        std = torch.mean(xc * xc, dim=2, keepdim=True)
        xn = (xc * (1 / (std + self.eps).sqrt())).reshape(size)
        if self.affine:
            xn = xn * self.weight + self.bias
        return xn

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, {self.num_per_group}, eps={self.eps}, affine={self.affine}, "
            f"centering={self.centering}"
        )
