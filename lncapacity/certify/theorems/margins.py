"""What a certificate by a margin theorem says about each point: an enclosure of its margin."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Margins:
    """``lo[i] <= z_label - max_other z <= hi[i]`` for every point ``i`` (float64, rigorous;
    ``-inf, inf`` where the theorem decides nothing about the point), by ``theorem``."""

    lo: np.ndarray
    hi: np.ndarray
    theorem: str

    @classmethod
    def of(cls, lo: np.ndarray, hi: np.ndarray, undecided: np.ndarray, theorem: str) -> Margins:
        """The enclosures ``lo, hi``, made ``-inf, inf`` where ``undecided`` or NaN."""
        lost = undecided | np.isnan(lo) | np.isnan(hi)
        return cls(np.where(lost, -np.inf, lo), np.where(lost, np.inf, hi), theorem)

    @property
    def decided(self) -> np.ndarray:
        """The points certainly right (``lo > 0``) or certainly wrong (``hi < 0``)."""
        return (self.lo > 0) | (self.hi < 0)
