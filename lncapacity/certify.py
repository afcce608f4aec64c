"""The certificate: a proof, by rigorous ball arithmetic, that a net classifies every point.

For each point ``x`` with label ``c`` the exact forward pass of the net is
enclosed in python-flint ``arb`` balls (every operation rounded outwards, so
the true value of each readout score lies in its ball); the point is
*certified* when every difference ``z_c - z_j`` (``j != c``) is a ball of
strictly positive numbers.  Its lower end is the certified margin.  Precision
starts near what the depth needs and doubles until every point is decided or
the limit is reached; no floating-point comparison is involved.

This module depends on the model only: it shares no code with the
constructions, so :func:`certify` is an independent check of what they built.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from flint import arb, fmpq

from .arith import exact, lower_bound_float, precision
from .data import PointSet, points_from_arrays
from .errors import InputError
from .model import Label, LNNet

MAX_PRECISION = 1 << 16


@dataclass(frozen=True)
class PointResult:
    """The verdict on one point."""

    index: int
    label: Label
    certified: bool
    margin: float
    """A lower bound on ``z_label - max_other z`` (rounded down); ``inf`` with one
    class, ``-inf`` when undecided at the precision limit."""
    precision: int


@dataclass(frozen=True)
class Certificate:
    """Per-point certified margins for one net on one point set."""

    points: tuple[PointResult, ...]

    @property
    def certified(self) -> int:
        return sum(p.certified for p in self.points)

    @property
    def all_certified(self) -> bool:
        return self.certified == len(self.points)

    @property
    def min_margin(self) -> float:
        return min((p.margin for p in self.points), default=math.inf)

    @property
    def precision(self) -> int:
        return max((p.precision for p in self.points), default=0)

    @property
    def failures(self) -> list[PointResult]:
        return [p for p in self.points if not p.certified]

    def to_dict(self) -> dict[str, Any]:
        def number(x: float) -> float | None:
            return x if math.isfinite(x) else None

        return {
            "format": "lnnet-certificate/1",
            "arithmetic": "python-flint arb balls; margins are lower bounds, rounded down",
            "all_certified": self.all_certified,
            "certified": self.certified,
            "points": len(self.points),
            "min_margin": number(self.min_margin),
            "precision_bits": self.precision,
            "results": [
                {
                    "point": p.index,
                    "label": p.label,
                    "certified": p.certified,
                    "margin_lower": number(p.margin),
                    "precision_bits": p.precision,
                }
                for p in self.points
            ],
        }


def certify(
    net: LNNet[fmpq],
    X: Any,
    y: Any = None,
    *,
    max_precision: int = MAX_PRECISION,
    progress: Callable[[int, int], None] | None = None,
) -> Certificate:
    """Certify that ``net`` predicts ``y[k]`` for every point ``X[k]``.

    ``X`` is a :class:`~lncapacity.data.PointSet` or points with labels ``y``;
    coordinates are read exactly.  Never raises for a wrong net: a point that is
    misclassified, or undecided at ``max_precision`` bits, is reported with
    ``certified=False``.
    """
    points = X if isinstance(X, PointSet) else points_from_arrays(X, y)
    _check_compatible(net, points)
    target = [net.classes.index(label) for label in points.y]
    results: dict[int, PointResult] = {}
    pending = list(range(points.m))
    prec = _start_precision(net)
    while pending:
        undecided = []
        for k, z in zip(pending, _scores(net, [points.X[i] for i in pending], prec), strict=True):
            c = target[k]
            diffs = [z[c] - zj for j, zj in enumerate(z) if j != c]
            if all(d > 0 for d in diffs):
                margin = min((lower_bound_float(d) for d in diffs), default=math.inf)
                results[k] = PointResult(k, points.y[k], True, margin, prec)
            elif any(d < 0 for d in diffs) or prec >= max_precision:
                results[k] = PointResult(k, points.y[k], False, -math.inf, prec)
            else:
                undecided.append(k)
            if progress:
                progress(len(results), points.m)
        pending, prec = undecided, min(2 * prec, max_precision)
    return Certificate(tuple(results[k] for k in range(points.m)))


def decide(net: LNNet[fmpq], x: Sequence[object], max_precision: int = MAX_PRECISION) -> int:
    """The index of the class the exact net predicts for ``x``, proven by ball arithmetic.

    Raises :class:`ArithmeticError` when ``x`` is on (or within rounding of) a
    decision boundary at ``max_precision`` bits.
    """
    row = tuple(exact(v) for v in x)
    if len(row) != net.input_dim:
        raise InputError(f"the net takes {net.input_dim} features, got {len(row)}")
    prec = _start_precision(net)
    while True:
        (z,) = _scores(net, [row], prec)
        for c, zc in enumerate(z):
            if all(zc > zj for j, zj in enumerate(z) if j != c):
                return c
        if prec >= max_precision:
            raise ArithmeticError(f"cannot decide the argmax for {list(x)} at {prec} bits")
        prec *= 2


def _start_precision(net: LNNet[fmpq]) -> int:
    # each layer costs a few bits of relative accuracy in the constructions here
    return 64 + 4 * net.depth


def _scores(net: LNNet[fmpq], rows: Sequence[Sequence[fmpq]], prec: int) -> list[list[arb]]:
    with precision(prec):
        balls = net.map(arb)
        return [balls.forward([arb(v) for v in row], arb.sqrt) for row in rows]


def _check_compatible(net: LNNet[fmpq], points: PointSet) -> None:
    if points.d != net.input_dim:
        raise InputError(
            f"{points.source}: points have {points.d} features, the net takes {net.input_dim}"
        )
    if unknown := sorted({label for label in points.y if label not in net.classes}, key=str):
        raise InputError(
            f"{points.source}: labels {unknown} are not classes of the net {list(net.classes)}"
        )
