"""The verdicts of a certificate: one per point (:class:`PointResult`) and for the point set
(:class:`Certificate`), with the JSON form the command line writes."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ..arith import json_float
from ..model import Label

THEOREM_PRECISION = 0
"""The ``precision`` of a point decided by a margin theorem (no finite-precision evaluation of
the net: the theorem's hypotheses checked exactly, its bound in float64 rounded outwards)."""


@dataclass(frozen=True)
class PointResult:
    """The verdict on one point."""

    index: int
    label: Label
    certified: bool
    margin: float
    """A lower bound on ``z_label - max_other z`` (rounded down) when certified; ``inf``
    with one class, ``-inf`` when the point is not certified (see ``margin_interval``)."""
    precision: int
    """The bits of the arithmetic that decided: 53 for the float64 interval pass, 128 and
    more for ``arb`` balls, :data:`THEOREM_PRECISION` (0) for a margin theorem
    (:mod:`lncapacity.certify.theorems`: its hypotheses checked exactly, its bound evaluated in
    float64 rounded outwards)."""
    margin_interval: tuple[float, float] = (-math.inf, math.inf)
    """Floats ``lo <= z_label - max_other z <= hi``, for every verdict."""

    @property
    def verdict(self) -> str:
        """``"right"`` (certainly predicts its label), ``"wrong"`` (certainly does not: some
        other score is certainly larger) or ``"undecided"`` (at the precision cap; the
        margin interval contains 0, e.g. a point on the decision boundary)."""
        if self.certified:
            return "right"
        return "wrong" if self.margin_interval[1] < 0 else "undecided"


@dataclass(frozen=True)
class Certificate:
    """Per-point certified margins for one net on one point set."""

    points: tuple[PointResult, ...]
    scores: Any = field(default=None, compare=False, repr=False)
    """``(lo, hi)``: float64 arrays ``(m, len(classes))`` enclosing every exact score
    (rigorous, not always tight), or None."""
    origins: tuple[tuple[int, ...], ...] | None = field(default=None, compare=False, repr=False)
    """The row map: ``origins[k]`` lists the input rows merged into point ``k`` (equal rows
    with equal labels are one point; :class:`~lncapacity.data.PointSet`), or None."""
    theorem: str | None = None
    """The margin theorem that decided points (``precision`` :data:`THEOREM_PRECISION`), as
    ``"proofs/ln_g_steps.md, Theorem 8"``; None when none did."""

    @property
    def merged(self) -> int:
        """Input rows merged away as duplicates (so ``len(points) + merged`` rows were given)."""
        return 0 if self.origins is None else sum(len(o) - 1 for o in self.origins)

    @property
    def worst_margin(self) -> tuple[float, float]:
        """An enclosure ``(lo, hi)`` of the smallest margin ``min_k (z_label - max_other z)``
        over the points, whatever the verdicts (``min_margin`` is ``-inf`` as soon as one
        point is not certified; this says by how much it fails): the minimum of the points'
        margin intervals, end by end.  ``(inf, inf)`` with no points or one class."""
        if not self.points:
            return (math.inf, math.inf)
        return (
            min(p.margin_interval[0] for p in self.points),
            min(p.margin_interval[1] for p in self.points),
        )

    @property
    def certified(self) -> int:
        return sum(p.certified for p in self.points)

    @property
    def all_certified(self) -> bool:
        return self.certified == len(self.points)

    @property
    def right(self) -> int:
        """Points certainly classified right (the same as :attr:`certified`)."""
        return self.certified

    @property
    def wrong(self) -> int:
        """Points certainly misclassified."""
        return sum(p.verdict == "wrong" for p in self.points)

    @property
    def undecided(self) -> int:
        """Points undecided at the precision cap (on or within rounding of a boundary)."""
        return sum(p.verdict == "undecided" for p in self.points)

    @property
    def min_margin(self) -> float:
        """The smallest certified margin (a lower bound), ``-inf`` when some point is not
        certified (see :attr:`worst_margin` for its enclosure then)."""
        return min((p.margin for p in self.points), default=math.inf)

    @property
    def precision(self) -> int:
        return max((p.precision for p in self.points), default=0)

    @property
    def failures(self) -> list[PointResult]:
        return [p for p in self.points if not p.certified]

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": "lnnet-certificate/1",
            "arithmetic": "python-flint arb balls or float64 intervals rounded outwards, or a "
            "margin theorem's bound (precision 0); margins are lower bounds, rounded down",
            "all_certified": self.all_certified,
            "certified": self.certified,
            "certainly_right": self.right,
            "certainly_wrong": self.wrong,
            "undecided": self.undecided,
            "points": len(self.points),
            "min_margin": json_float(self.min_margin),
            "worst_margin_interval": [json_float(v) for v in self.worst_margin],
            "merged_rows": self.merged,
            "precision_bits": self.precision,
            "theorem": self.theorem,
            "results": [
                {
                    "point": p.index,
                    "label": p.label,
                    "certified": p.certified,
                    "verdict": p.verdict,
                    "margin_lower": json_float(p.margin),
                    "margin_interval": [json_float(v) for v in p.margin_interval],
                    "precision_bits": p.precision,
                }
                for p in self.points
            ],
        }
