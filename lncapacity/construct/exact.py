"""The paper's binary PMA to the letter: fold centres at the true midpoints.

Algorithm 1 of Ni et al. (2024): on the projected scalars, take the smallest value
``p_i`` and the nearest larger value ``p_j`` of its label, fold at
``c = (p_i + p_j) / 2`` so that they merge, and repeat until a single
threshold separates the labels.  After the first layer ``c`` is an algebraic
number of rapidly growing degree; here every value and every centre is a node
of one :class:`~lncapacity.algebraic.RadicalProgram` (a straight-line program
of exact arithmetic and square roots), never a float and never a nested
radical to simplify.  The claims, proved in proofs/exact_merges.md:

* **Designed merges are equalities, by construction.**  A fold maps ``p`` to
  ``F(d^2)`` with ``d = p - c`` (fold lemma).  With ``c = (p_i + p_j) / 2``,
  ``p_j - c = -(p_i - c)`` is an identity, so ``F((p_i - c)^2)`` and
  ``F((p_j - c)^2)`` are the same number: the construction gives both points
  the *same* node.
* **Every other pair of values is proven distinct and ordered** by ball
  arithmetic (disjoint balls at a precision raised as needed).
* **Coincidences that were not designed** (mirror images about a centre) are
  decided exactly when they can be (values whose squared distances to the
  centre are rationals: every coincidence of the first fold), and the
  construction refuses (``ConstructionError``) rather than guess when they
  cannot; merged values of one label are what the paper's algorithm merges.

So the algorithm takes exactly the paper's steps, and at most ``m - 2`` folds
for ``m`` distinct points.  Offsets and scales are rationals (the fold lemma
holds for any ``beta > 0``, ``S > 0``), as is the readout's threshold; only
the centres (in the layers' biases) are algebraic.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from flint import arb, fmpq

from ..algebraic import Radical, RadicalProgram
from ..arith import arb_to_fmpq, dyadic_between, format_rational, precision
from ..errors import ConstructionError
from ..fileformat import V
from ..model import Affine
from .pma import power_of_two_near
from .project import runs

Number = fmpq | Radical
Progress = Callable[[int, int], None]

START_PRECISION = 128
MAX_PRECISION = 1 << 16
"""Bits beyond which two values whose balls still overlap count as undecidable."""


@dataclass
class ExactStep:
    """One fold: ``y = S ((p - centre) u + offset v)``, read back with ``v``."""

    centre: Number
    offset: fmpq
    scale: fmpq
    kind: str = "pma"
    merged: tuple[int, int] | None = None
    """The points (first of each group) whose values this fold makes equal."""


@dataclass
class ExactChain:
    """The values of every point through the folds, exactly, as program nodes."""

    t: list[fmpq]
    y: list[int]
    eps: fmpq
    program: RadicalProgram = field(default_factory=RadicalProgram)
    steps: list[ExactStep] = field(default_factory=list)
    groups: list[list[int]] = field(default_factory=list)
    values: list[Number] = field(default_factory=list)
    """One exact value per group (every point of a group has it)."""
    keys: list[fmpq | None] = field(default_factory=list)
    """Per group: the rational ``(p - c)^2`` its value is ``F`` of at the last fold, if rational."""
    prec: int = START_PRECISION

    def __post_init__(self) -> None:
        self.groups = [[k] for k in range(len(self.t))]
        self.values = list(self.t)
        self.keys = [None] * len(self.t)

    # balls ----------------------------------------------------------------------

    def ball(self, x: Number) -> arb:
        return x.ball(self.prec) if isinstance(x, Radical) else arb(x)

    def balls(self) -> list[arb]:
        with precision(self.prec):
            return [self.ball(v) for v in self.values]

    # the paper's loop -----------------------------------------------------------------

    def order(self) -> None:
        """Sort the groups by value; merge groups proven equal; every other pair proven apart."""
        while True:
            with precision(self.prec):
                balls = self.balls()
                idx = sorted(range(len(self.groups)), key=lambda g: balls[g].mid())
                unsure = [
                    (a, b)
                    for a, b in itertools.pairwise(idx)
                    if not balls[a].upper() < balls[b].lower()
                ]
            undecided = []
            merges = []
            for a, b in unsure:
                eq = self._equal(a, b)
                if eq is None:
                    undecided.append((a, b))
                elif eq:
                    if self.y[self.groups[a][0]] != self.y[self.groups[b][0]]:
                        raise ConstructionError(  # pragma: no cover - excluded by the lemma
                            "values of different labels coincide"
                        )
                    merges.append((a, b))
            if undecided:
                if self.prec >= MAX_PRECISION:
                    a, b = undecided[0]
                    raise ConstructionError(
                        f"fold {len(self.steps)}: cannot decide whether the values of points "
                        f"{self.groups[a][0]} and {self.groups[b][0]} coincide "
                        f"(equal to {MAX_PRECISION} bits)"
                    )
                self.prec *= 2
                continue
            if merges:
                self._merge(merges)
                continue
            self.groups = [self.groups[g] for g in idx]
            self.values = [self.values[g] for g in idx]
            self.keys = [self.keys[g] for g in idx]
            return

    def _equal(self, a: int, b: int) -> bool | None:
        """Whether the values of groups ``a`` and ``b`` are equal, decided exactly, or None."""
        va, vb = self.values[a], self.values[b]
        if isinstance(va, fmpq) and isinstance(vb, fmpq):
            return va == vb
        ka, kb = self.keys[a], self.keys[b]
        if ka is not None and kb is not None:
            # both are F(key) for the same strictly decreasing F of the last fold
            return ka == kb
        return None

    def _merge(self, pairs: list[tuple[int, int]]) -> None:
        """Join groups whose values were proven equal (one node for both)."""
        gone = set()
        for a, b in pairs:
            self.groups[a] = self.groups[a] + self.groups[b]
            gone.add(b)
        keep = [g for g in range(len(self.groups)) if g not in gone]
        self.groups = [self.groups[g] for g in keep]
        self.values = [self.values[g] for g in keep]
        self.keys = [self.keys[g] for g in keep]

    def labels(self) -> list[int]:
        return [self.y[g[0]] for g in self.groups]

    def fold(self, centre: Number, offset: fmpq, scale: fmpq, same: tuple[int, int] | None) -> None:
        """Apply ``p -> F((p - c)^2) = 6 beta S / sqrt(2 S^2 (p - c)^2 / 3 + 2 S^2 beta^2 + eps)``.

        ``same = (i, j)``: groups ``i`` and ``j`` with ``c`` their exact midpoint get
        the same node, ``F((p_i - c)^2)``, and become one group.
        """
        S, beta = scale, offset
        g = 2 * S * S / 3
        k = 2 * S * S * beta * beta + self.eps
        num = 6 * beta * S
        prog = self.program

        def F(d: Number) -> tuple[Number, fmpq | None]:
            sq = d * d
            inner = g * sq + k
            if isinstance(inner, fmpq):
                root = prog.sqrt(prog.const(inner))
                return num / root, sq  # type: ignore[return-value]
            return num / prog.sqrt(inner), None

        new_values: list[Number] = []
        new_keys: list[fmpq | None] = []
        for idx, v in enumerate(self.values):
            if same is not None and idx == same[1]:
                new_values.append(new_values[same[0]])  # the identity p_j - c = -(p_i - c)
                new_keys.append(new_keys[same[0]])
                continue
            value, key = F(v - centre)
            new_values.append(value)
            new_keys.append(key)
        self.values, self.keys = new_values, new_keys
        if same is not None:
            i, j = same
            self.groups[i] = self.groups[i] + self.groups[j]
            del self.groups[j], self.values[j], self.keys[j]

    def bounds(self, groups: Sequence[int]) -> tuple[fmpq, fmpq]:
        """Exact rationals below and above the values of ``groups``."""
        with precision(self.prec):
            balls = self.balls()
            lo = min(balls[g].lower() for g in groups)
            hi = max(balls[g].upper() for g in groups)
            return arb_to_fmpq(lo), arb_to_fmpq(hi)


def exact_pma(
    t: Sequence[fmpq], y: Sequence[int], eps: fmpq, progress: Progress | None = None
) -> ExactChain:
    """The paper's folds on the projected values ``t`` (labels 0/1) with exact merges.

    Returns the chain after the last fold: at most two label runs remain.
    """
    chain = ExactChain(list(t), list(y), eps)
    while True:
        chain.order()
        labels = chain.labels()
        if progress:
            progress(len(chain.steps), len(chain.steps) + max(0, len(labels) - 2))
        if runs(labels) <= 2:
            return chain
        j = next(k for k in range(1, len(labels)) if labels[k] == labels[0])
        pi, pj = chain.values[0], chain.values[j]
        centre = (pi + pj) / 2
        lo_i, hi_i = chain.bounds([0])
        lo_j, hi_j = chain.bounds([j])
        half = (lo_j + hi_j - lo_i - hi_i) / 4  # about (p_j - p_i) / 2 > 0: balls are apart
        # the paper's normalisation D = (p_j - p_i) / 2 is offset D / sqrt(3) in the gadget;
        # any rational offset > 0 keeps the fold lemma, so a short one near it
        offset = dyadic_between(half * fmpq(5772, 10000), half * fmpq(5775, 10000))
        scale = power_of_two_near(1 / offset)
        step = ExactStep(centre, offset, scale, merged=(chain.groups[0][0], chain.groups[j][0]))
        chain.steps.append(step)
        chain.fold(centre, offset, scale, (0, j))
        assert len(chain.steps) <= len(t) - 2


def pad(chain: ExactChain, count: int) -> None:
    """Append ``count`` injective folds (centre left of every value: the order reverses).

    proofs/depth_and_padding.md, padding lemma; the centre is rational.
    """
    for _ in range(count):
        chain.order()
        lo, hi = chain.bounds(range(len(chain.groups)))
        span = max(hi - lo, fmpq(1, 2**20))
        centre = dyadic_between(lo - 2 * span, lo - span)
        offset = dyadic_between(span / 2, span)
        chain.steps.append(ExactStep(centre, offset, fmpq(1), kind="pad"))
        chain.fold(centre, offset, fmpq(1), None)
    chain.order()


def threshold(chain: ExactChain) -> tuple[fmpq, int]:
    """A rational strictly between the two label runs, and the left run's label."""
    chain.order()
    labels = chain.labels()
    assert runs(labels) == 2, "the construction must end with two runs"
    split = next(k for k in range(len(labels)) if labels[k] != labels[0])
    _, lo = chain.bounds(range(split))
    hi, _ = chain.bounds(range(split, len(labels)))
    return dyadic_between(lo, hi), labels[0]


def exact_layer(read: Sequence[fmpq], step: ExactStep) -> Affine[Any]:
    """``h -> S ((read^T h - c) u + beta v)``: ``W = S u read^T``, ``b = S (beta v - c u)``.

    ``b = (S (beta - c), S (beta + c), -2 S beta)``: algebraic in its first two entries
    when the centre is.
    """
    S, beta, c = step.scale, step.offset, step.centre
    W = tuple(tuple(S * ui * a for a in read) for ui in (fmpq(1), fmpq(-1), fmpq(0)))
    if isinstance(c, Radical):
        b: tuple[Any, ...] = (S * (beta - c), S * (beta + c), -2 * S * beta)
    else:
        b = (S * (beta - c), S * (beta + c), -2 * S * beta)
    meta: dict[str, Any] = {
        "kind": step.kind,
        "offset": format_rational(beta),
        "scale": format_rational(S),
    }
    if isinstance(c, fmpq):
        meta["centre"] = format_rational(c)
    if step.merged is not None:
        meta["exact_merge"] = list(step.merged)
    return Affine(W, b, meta)


FOLD_READ_VECTOR = V
"""Every layer after the first reads the previous LayerNorm output with ``v = (1, 1, -2)``."""


def compact(layers: list[Affine[Any]]) -> list[Affine[Any]]:
    """The layers with their algebraic biases moved to a program of just what they need.

    (The construction's program also holds every point's value at every layer.)
    """
    radicals = [v for a in layers for v in a.b if isinstance(v, Radical)]
    if not radicals:
        return layers
    moved = dict(zip(map(id, radicals), radicals[0].program.compact(radicals), strict=True))
    return [Affine(a.W, tuple(moved.get(id(v), v) for v in a.b), a.meta) for a in layers]
