"""The width-3 fold gadget and the scalar chain it induces.

Let ``u = (1, -1, 0)`` and ``v = (1, 1, -2)``: both orthogonal to ``1`` and to
each other, ``|u|^2 = 2``, ``|v|^2 = 6``.  A fold layer with centre ``c``,
offset ``beta > 0`` and scale ``S > 0`` maps a scalar ``p`` (a linear read of
the previous layer) to ``y = S((p - c) u + beta v)``.  Since ``mean y = 0`` and
``var y = S^2 (2 (p - c)^2 + 6 beta^2) / 3``, the next layer's read
``a = alpha v + gamma u`` of ``LN(y)`` is (proofs/fold_lemma.md, proofs/runs_fold.md)::

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

import numpy as np
from flint import arb, fmpq

from .. import interval as iv
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

    def scalar(self, eps: fmpq) -> tuple[fmpq, fmpq, fmpq, fmpq, fmpq]:
        """``(c, g, k, a1, a2)``, exact, with ``p' = (a1 + a2 s) / sqrt(g s^2 + k)``,
        ``s = p - c`` (the formula in the module doc)."""
        S, beta = self.scale, self.offset
        alpha, gamma = self.read
        return (
            self.centre,
            2 * S * S / 3,
            2 * S * S * beta * beta + eps,
            6 * alpha * beta * S,
            2 * gamma * S,
        )

    def ball_map(self, eps: fmpq) -> Callable[[arb], arb]:
        """``p -> p'`` on balls at the current precision, the constants rounded once, so
        each point costs a handful of ball operations."""
        c, g, k, a1, a2 = (ball(v) for v in self.scalar(eps))
        if self.read[1] == 0:
            return lambda p: a1 / (g * (p - c) ** 2 + k).sqrt()
        return lambda p: (a1 + a2 * (p - c)) / (g * (p - c) ** 2 + k).sqrt()

    def interval_map(self, eps: fmpq) -> Callable[[iv.Interval], iv.Interval]:
        """``p -> p'`` on float64 interval arrays, rigorously (:func:`.interval.scalar_range`)."""
        return iv.scalar_range(*self.scalar(eps))

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
    """The affine map ``h -> S ((a^T h - c) u + beta v)`` of one gadget layer."""
    return gadget_affine(a, step.centre, step.offset, step.scale, step.meta())


def reversal(chain: Chain, kind: str = "pad") -> FoldStep:
    """An injective fold: centre left of every value, so the order just reverses.

    (proofs/depth_and_padding.md, padding lemma.)
    """
    lo, hi = chain.bounds()
    span = max(hi - lo, fmpq(1, 2**20))
    centre = dyadic_between(lo - 2 * span, lo - span)
    return FoldStep(centre, dyadic_between(span / 2, span), kind=kind)


TIGHT = arb(2) ** -80
"""Radius the start balls of a :class:`Chain` given ``start`` must reach (values near 1)."""


class Chain:
    """The scalars ``p_k`` of every point through a list of fold steps.

    Starts from exact rationals ``t`` (the projected points).  Two rigorous
    enclosures of every value are kept: ``intervals``, float64 interval
    arrays updated at every :meth:`push` (vectorised, :func:`~lncapacity.interval.scalar_range`),
    and :attr:`values`, ``arb`` balls at the working precision :attr:`prec`,
    computed only when read (then kept up to date); :meth:`refine` doubles the
    precision and replays every step from the exact start, so radii shrink as
    needed.
    """

    def __init__(
        self,
        t: Sequence[fmpq],
        eps: fmpq,
        prec: int = 96,
        start: Callable[[int], list[arb]] | None = None,
        slack: Sequence[float] | None = None,
    ) -> None:
        self.t = list(t)
        self.eps = eps
        self.steps: list[FoldStep] = []
        self.prec = prec
        """The working precision of :attr:`values`, in bits (doubled by :meth:`refine`)."""
        self.start = start
        """When given, the true start values are not ``t`` but known only as balls:
        ``start(prec)`` encloses them at ``prec`` bits (``t`` then only counts the points)."""
        self.slack = slack
        """With ``start``: how far (per point) the values a float64 forward pass computes
        may lie from the true ones.  The chain then keeps apart, and certifies, the start
        values widened by it (:meth:`start_balls`), so float64 runs of the layers before
        and the folds after still order the points as the true values do."""
        self.refresh()

    def start_balls(self, prec: int) -> list[arb]:
        """Balls at ``prec`` bits around the start values, widened by :attr:`slack`."""
        return [ball(x) for x in self.t] if self.start is None else self._widen(self.start(prec))

    def _widen(self, balls: list[arb]) -> list[arb]:
        if self.slack is None:
            return balls
        return [b + arb(0, float(r)) for b, r in zip(balls, self.slack, strict=True)]

    def reset(self) -> None:
        """Drop every step: back to the exact projected values."""
        self.steps.clear()
        self.refresh()

    def refresh(self) -> None:
        """Recompute every value from the exact start (also after editing ``steps``)."""
        self._balls: list[arb] = []
        self._done = -1  # steps the balls have been through; -1: not started
        if not self.t:
            self._start = (np.empty(0), np.empty(0))
        elif self.start is None:
            self._start = iv.enclose(self.t)
        else:
            # the start balls lose bits through the layers before: enough precision for
            # float64 intervals, which is then the working precision too
            self.prec = max(self.prec, 128)
            while True:
                with precision(self.prec):
                    balls = self.start(self.prec)
                    if all(b.is_finite() and b.rad() <= TIGHT for b in balls):
                        balls = self._widen(balls)
                        lo = iv.enclose([arb_to_fmpq(b.lower()) for b in balls])[0]
                        hi = iv.enclose([arb_to_fmpq(b.upper()) for b in balls])[1]
                        break
                if self.prec >= 1 << 16:
                    raise ArithmeticError("the start values need more than 65536 bits")
                self.prec *= 2
            self._start = (lo, hi)
        self._undo: list[iv.Interval] = []
        p = self._start
        with np.errstate(all="ignore"):
            for step in self.steps:
                p = step.interval_map(self.eps)(p)
        self.intervals: iv.Interval = p

    @property
    def values(self) -> list[arb]:
        """The balls of every value after every step, at :attr:`prec` bits (computed lazily)."""
        with precision(self.prec):
            if self._done < 0:
                self._balls = self.start_balls(self.prec)
                self._done = 0
            for step in self.steps[self._done :]:
                f = step.ball_map(self.eps)
                self._balls = [f(p) for p in self._balls]
            self._done = len(self.steps)
        return self._balls

    def push(self, step: FoldStep) -> None:
        """Append a step and move every value through it."""
        self.steps.append(step)
        self._undo = [*self._undo[-1:], self.intervals]
        with np.errstate(all="ignore"):
            self.intervals = step.interval_map(self.eps)(self.intervals)

    def holds(self, n: int, last: FoldStep | None) -> bool:
        """Whether the first ``n`` steps are those of a moment when the ``n``-th was
        ``last`` (None for ``n = 0``): steps only change at the end (:meth:`push`,
        :meth:`pop`, :meth:`reset`), so when the ``n``-th is still in place, so are all
        before it."""
        return n <= len(self.steps) and (n == 0 or self.steps[n - 1] is last)

    def pop(self) -> FoldStep:
        """Remove the last step."""
        step = self.steps.pop()
        if self._done > len(self.steps):
            self._done = -1
        if self._undo:
            self.intervals = self._undo.pop()
        else:
            balls, done = self._balls, self._done
            self.refresh()
            self._balls, self._done = balls, done
        return step

    def lower(self, groups: Sequence[Sequence[int]]) -> fmpq:
        """An exact rational ``<=`` every value of the points in ``groups``."""
        with precision(self.prec):
            vals = self.values
            return arb_to_fmpq(min(vals[k].lower() for g in groups for k in g))

    def upper(self, groups: Sequence[Sequence[int]]) -> fmpq:
        """An exact rational ``>=`` every value of the points in ``groups``."""
        with precision(self.prec):
            vals = self.values
            return arb_to_fmpq(max(vals[k].upper() for g in groups for k in g))

    def radius(self, groups: Sequence[Sequence[int]]) -> fmpq:
        """An exact rational ``>=`` the radius of every ball of the points in ``groups``."""
        with precision(self.prec):
            vals = self.values
            return arb_to_fmpq(max(vals[k].rad() for g in groups for k in g))

    def bounds(self) -> tuple[fmpq, fmpq]:
        """Exact rationals ``lo <= every value <= hi``, from the intervals when finite."""
        lo, hi = self.intervals
        if len(lo) and np.isfinite(lo).all() and np.isfinite(hi).all():
            return exact_float(float(lo.min())), exact_float(float(hi.max()))
        everything = [list(range(len(self.t)))]
        return self.lower(everything), self.upper(everything)

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
        self._done = -1


def exact_float(x: float) -> fmpq:
    """A float as the exact dyadic rational it is."""
    return fmpq(*x.as_integer_ratio())
