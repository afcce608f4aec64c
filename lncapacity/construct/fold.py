"""The width-3 fold gadget and the scalar chain it induces.

Let ``u = (1, -1, 0)`` and ``v = (1, 1, -2)``: both orthogonal to ``1`` and to
each other, ``|u|^2 = 2``, ``|v|^2 = 6``.  A fold layer with centre ``c``,
offset ``beta > 0`` and scale ``S > 0`` maps a scalar ``p`` (a linear read of
the previous layer) to ``y = S((p - c) u + beta v)``.  Since ``mean y = 0`` and
``var y = S^2 (2 (p - c)^2 + 6 beta^2) / 3``, the next layer's read
``a = alpha v + gamma u`` of ``LN(y)`` is (note math.md section 2)::

    p' = S (6 alpha beta + 2 gamma (p - c)) / sqrt(S^2 (2 (p - c)^2 + 6 beta^2) / 3 + eps).

With ``gamma = 0`` (the fold read) ``p'`` depends on ``p`` only through
``(p - c)^2`` and strictly decreases in ``|p - c|``, for every ``eps >= 0``: the
*fold lemma*.  Points at equal distance from ``c`` merge; order is by distance.

A construction is a list of :class:`FoldStep` over exact rationals; the scalar
values it produces are tracked by :class:`Chain` in rigorous ball arithmetic,
replayed at a higher precision whenever a decision needs it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from flint import arb, fmpq

from ..arith import arb_to_fmpq, ball, dyadic_between, format_rational, precision
from ..fileformat import gadget_affine
from ..model import Affine

ONE = fmpq(1)
FOLD_READ = (ONE, fmpq(0))
"""``(alpha, gamma)`` of the plain fold read ``a = v``."""


@dataclass(frozen=True)
class FoldStep:
    """One LayerNorm layer of the gadget, and how the next map reads its output.

    ``centre``, ``offset``, ``scale``: ``y = scale ((p - centre) u + offset v)``;
    ``read = (alpha, gamma)``: the next layer (or the readout) reads
    ``alpha v + gamma u``.
    """

    centre: fmpq
    offset: fmpq
    scale: fmpq = ONE
    read: tuple[fmpq, fmpq] = FOLD_READ
    kind: str = "fold"
    why: str = ""
    """Why a layer of this kind was needed (warps), recorded in its meta."""

    def __post_init__(self) -> None:
        if not (self.offset > 0 and self.scale > 0):
            raise ValueError("a fold needs offset > 0 and scale > 0")

    def ball_map(self, eps: fmpq) -> Callable[[arb], arb]:
        """``p -> p'`` (formula in the module doc) on balls at the current precision.

        Written as ``(a1 + a2 s) / sqrt(g s^2 + k)`` with ``s = p - c`` and the
        constants rounded once, so each point costs a handful of ball operations.
        """
        S, beta = self.scale, self.offset
        alpha, gamma = self.read
        c, g, k = ball(self.centre), ball(2 * S * S / 3), ball(2 * S * S * beta * beta + eps)
        a1, a2 = ball(6 * alpha * beta * S), ball(2 * gamma * S)
        if gamma == 0:
            return lambda p: a1 / (g * (p - c) ** 2 + k).sqrt()
        return lambda p: (a1 + a2 * (p - c)) / (g * (p - c) ** 2 + k).sqrt()

    def meta(self) -> dict[str, Any]:
        """The layer's record in the gadget encoding (:func:`~lncapacity.fileformat.to_gadget`)."""
        meta: dict[str, Any] = {"kind": self.kind}
        for key in ("centre", "offset", "scale"):
            meta[key] = format_rational(getattr(self, key))
        if self.read != FOLD_READ:
            meta["read"] = [format_rational(x) for x in self.read]
        if self.why:
            meta["why"] = self.why
        return meta


def fold_layer(a: Sequence[fmpq], step: FoldStep) -> Affine[fmpq]:
    """The affine map ``h -> S ((a . h - c) u + beta v)`` of one gadget layer."""
    return gadget_affine(a, step.centre, step.offset, step.scale, step.meta())


def reversal(chain: Chain, kind: str = "pad") -> FoldStep:
    """An injective fold: centre left of every value, so the order just reverses.

    (proofs/depth_and_padding.md, padding lemma.)
    """
    everything = [list(range(len(chain.t)))]
    lo, hi = chain.lower(everything), chain.upper(everything)
    span = max(hi - lo, fmpq(1, 2**20))
    centre = dyadic_between(lo - 2 * span, lo - span)
    return FoldStep(centre, dyadic_between(span / 2, span), kind=kind)


class Chain:
    """The scalars ``p_k`` of every point through a list of fold steps, as balls.

    Starts from exact rationals ``t`` (the projected points) and keeps balls at
    the current working precision; :meth:`refine` doubles the precision and
    replays every step from the exact start, so radii shrink as needed.
    """

    def __init__(self, t: Sequence[fmpq], eps: fmpq, prec: int = 96) -> None:
        self.t = list(t)
        self.eps = eps
        self.steps: list[FoldStep] = []
        self.prec = prec
        self.refresh()

    def reset(self) -> None:
        """Drop every step: back to the exact projected values."""
        self.steps.clear()
        self.refresh()

    def refresh(self) -> None:
        """Recompute every value from the exact start (also after editing ``steps``)."""
        with precision(self.prec):
            self.values = [ball(x) for x in self.t]
            for step in self.steps:
                self._apply(step)

    def _apply(self, step: FoldStep) -> None:
        f = step.ball_map(self.eps)
        self.values = [f(p) for p in self.values]

    def push(self, step: FoldStep) -> None:
        """Append a step and move every value through it."""
        self.steps.append(step)
        with precision(self.prec):
            self._apply(step)

    def pop(self) -> FoldStep:
        """Remove the last step (replaying the rest from the exact start)."""
        step = self.steps.pop()
        self.refresh()
        return step

    def lower(self, groups: Sequence[Sequence[int]]) -> fmpq:
        """An exact rational ``<=`` every value of the points in ``groups``."""
        with precision(self.prec):
            return arb_to_fmpq(min(self.values[k].lower() for g in groups for k in g))

    def upper(self, groups: Sequence[Sequence[int]]) -> fmpq:
        """An exact rational ``>=`` every value of the points in ``groups``."""
        with precision(self.prec):
            return arb_to_fmpq(max(self.values[k].upper() for g in groups for k in g))

    def refine(self, steps_ahead: int = 0, limit: int = 1 << 20) -> None:
        """Raise the working precision (up to ``limit`` bits) and replay.

        At least doubles it; if ``steps_ahead`` more steps are expected, enough
        for them at the rate accuracy has been lost so far, so that one replay
        usually serves the rest of the construction.
        """
        if self.prec >= limit:
            raise ArithmeticError(f"precision limit of {limit} bits reached")
        with precision(self.prec):
            accuracy = min(v.rel_accuracy_bits() for v in self.values)
        per_step = (self.prec - accuracy) / max(len(self.steps), 1)
        projected = int(self.prec + 1.5 * per_step * steps_ahead)
        self.prec = min(max(2 * self.prec, projected), limit)
        self.refresh()
