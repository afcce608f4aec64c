"""The binary Projection Merge Algorithm (Algorithm 1 of Ni et al. 2024), rational centres.

The paper's loop, on the projected scalars: take the smallest value ``p_i`` and
the smallest value ``p_j > p_i`` of the same label, fold at their midpoint so
that they merge, and repeat until a single threshold separates the labels.  All
values strictly between ``p_i`` and ``p_j`` carry the other label, so nothing
of a different label can merge (proofs/merge_and_no_confusion.md).

Exactly, the centre ``(p_i + p_j) / 2`` is an algebraic number after the first
layer.  Here it is a short dyadic rational inside an interval that ball
arithmetic proves *safe* (proofs/rational_centre.md): every value between
``p_i`` and ``p_j`` lands strictly closer to the centre than both of them, every
value of the other label beyond ``p_j`` strictly farther (so, with the fold
lemma, the new label structure is that of the exact fold), and it lies within a
tiny tolerance of the exact midpoint.  ``p_i`` and ``p_j`` then do not merge
exactly but become a *group*: neighbouring values of one label that the exact
algorithm would have merged.  Groups play the part of the paper's equal values:
the algorithm reads groups, not points, so it takes exactly the paper's steps.
(Values that the exact algorithm merges by coincidence, mirror images about the
centre, become one group when their balls cannot be told apart.)  When
``p_j`` is ``p_i``'s neighbour and no safe centre exists, an order-reversing
injective fold gives the exact fold's order; when groups grow wider than a gap
between the labels, the construction restarts with centres nearer the exact
midpoints (:data:`CENTRE_TOLERANCE`).

Each fold merges two groups, and a threshold needs at least two, so ``m``
distinct points need at most ``m - 2`` folds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from flint import arb, fmpq

from ..arith import dyadic_between, precision
from ..errors import ConstructionError
from .fold import Chain, FoldStep, reversal
from .project import runs

Progress = Callable[[int, int], None]

GUARD_BITS = 40
"""Different-label neighbours must be this many bits farther apart than any ball is wide."""

CENTRE_TOLERANCE = (fmpq(1, 2**12), fmpq(1, 2**76), fmpq(1, 2**204), fmpq(1, 2**460))
"""How close the rational centre lies to the exact midpoint, relative to the nearest gap.

Groups stand for values the exact algorithm merges, so their width must stay
small against the gaps they meet.  Later values of the group's own label may
come closer than its width (mirror near-coincidences); they simply join it.
Later values of the other label may too, in data with many exact ties: then
the construction starts again with the next, tighter tolerance (the exact
algorithm, the limit, never fails)."""


FOLDS_PER_BIT = 4
"""The multiclass loop begins with a tolerance of at least its folds over this many bits
(:func:`with_tolerances`)."""
PRECISION_PER_BIT = 2
"""... at this many bits of precision per bit of tolerance."""


class NoSafeCentre(ConstructionError):
    """A group got wider than a gap between the labels: retry with a tighter tolerance."""


def pma(chain: Chain, y: Sequence[int], progress: Progress | None = None) -> None:
    """Append the paper's folds to ``chain`` until at most two label runs remain."""
    with_tolerances(_pma, chain, y, progress)


def with_tolerances(
    loop: Callable[[Chain, Sequence[int], fmpq, Progress | None], None],
    chain: Chain,
    y: Sequence[int],
    progress: Progress | None,
    folds: int = 0,
) -> None:
    """Run a rational-centre ``loop`` at each tolerance of :data:`CENTRE_TOLERANCE` in turn,
    from the empty chain, until one gets through without :class:`NoSafeCentre`.

    ``folds`` (the multiclass loop, whose ``_fold`` is ``precise``): about this
    many folds are expected.  A tolerance of ``b`` bits gets through about ``5 b``
    of them (measured on random sets, ``m = 200 .. 1000``, ``k = 3 .. 10``: ``2^-12``
    fails after 50 to 140 folds, ``2^-76`` after 460 to 520), so the loop begins with
    the first of at least ``folds / FOLDS_PER_BIT`` bits and tries the coarser ones
    last; and each runs at :data:`PRECISION_PER_BIT` bits per bit of tolerance from the
    start (refined later only if needed: a precise centre at low precision refines
    the chain many times over, and a tolerance below the balls' width is none).
    """
    tolerances = list(CENTRE_TOLERANCE)
    if folds:
        least = fmpq(1, 2 ** (folds // FOLDS_PER_BIT))
        enough = [t for t in tolerances if t <= least] or tolerances[-1:]
        tolerances = [*enough, *(t for t in tolerances if t not in enough)]
    for tolerance in tolerances:
        chain.reset()
        if folds:
            chain.prec = max(chain.prec, PRECISION_PER_BIT * tolerance.q.bit_length())
        try:
            return loop(chain, y, tolerance, progress)
        except NoSafeCentre as e:
            failure = e
    raise ConstructionError(f"{failure} (at every tolerance down to 2^-460)")


def _pma(chain: Chain, y: Sequence[int], tolerance: fmpq, progress: Progress | None) -> None:
    groups = [[k] for k in range(len(y))]
    total = len(y) - 2
    while True:
        groups = order_groups(chain, groups, y, steps_ahead=len(groups) - 2)
        labels = [y[g[0]] for g in groups]
        if progress:
            progress(len(chain.steps), len(chain.steps) + max(0, len(groups) - 2))
        if runs(labels) <= 2:
            return
        j = next(k for k in range(1, len(groups)) if labels[k] == labels[0])
        step = _fold(chain, groups, j, y, tolerance, steps_ahead=len(groups) - 2)
        if step is None:
            if j > 1:
                raise NoSafeCentre(
                    f"fold {len(chain.steps) + 1}: no safe centre (merged groups too wide "
                    "for their neighbours)"
                )
            # groups 0 and 1 are neighbours of one label: the exact fold would leave the
            # order (rest reversed, then the merged pair); an order-reversing injective
            # fold gives exactly that order, and the two groups are merged as labels
            step = reversal(chain, kind="pma-reverse")
        chain.push(step)
        groups = [groups[0] + groups[j], *groups[1:j], *groups[j + 1 :]]
        assert len(chain.steps) <= total


def order_groups(
    chain: Chain, groups: list[list[int]], y: Sequence[int], steps_ahead: int = 0
) -> list[list[int]]:
    """Groups sorted by value, same-label neighbours that cannot be told apart merged.

    Raises the chain's precision until every pair of different-label neighbours
    is separated by ``2**GUARD_BITS`` ball radii (so the order is certain).
    """
    while True:
        with precision(chain.prec):
            merged, ok = _merge_neighbours(chain.values, groups, y)
        if ok:
            return [g for _, _, g in merged]
        chain.refine(steps_ahead)


def _merge_neighbours(
    vals: Sequence[arb], groups: list[list[int]], y: Sequence[int]
) -> tuple[list[tuple[arb, arb, list[int]]], bool]:
    """Sort groups by their lowest midpoint and merge; False if a label boundary is unsure."""
    rad = max(v.rad() for v in vals)
    mids = [v.mid() for v in vals]
    spans = [
        (mids[g[0]], mids[g[0]], g)
        if len(g) == 1
        else (min(mids[k] for k in g), max(mids[k] for k in g), g)
        for g in groups
    ]
    spans.sort(key=lambda s: s[0])
    merged = [spans[0]]
    for lo, hi, g in spans[1:]:
        plo, phi, pg = merged[-1]
        gap = lo - phi
        if y[g[0]] == y[pg[0]]:
            if not gap > 2 * rad:  # not certainly apart: one group
                merged[-1] = (plo, max(phi, hi), pg + g)
                continue
        elif not gap > 2 * rad * 2**GUARD_BITS:
            return merged, False
        merged.append((lo, hi, g))
    return merged, True


def _fold(
    chain: Chain,
    groups: list[list[int]],
    j: int,
    y: Sequence[int],
    tolerance: fmpq,
    steps_ahead: int,
    i: int = 0,
    precise: bool = False,
) -> FoldStep | None:
    """The fold merging group ``i`` with group ``j > i``, its centre certified safe.

    Groups left of ``i`` (finished classes, in the multiclass loop) are farther
    from the centre than group ``i`` and need no condition here.  None if there
    is no safe centre: the merged groups are too wide for their neighbours
    (near-coincidences in data with many ties), which no precision cures.
    ``precise``: refine until the two groups' balls are narrower than a quarter of
    the tolerance, so that the centre does lie that close to the exact midpoint (with
    wider balls the midpoint is known only to their width, whatever the tolerance;
    the multiclass loop, whose confusion checks need narrow groups; the binary loop
    keeps its nets).
    """
    while True:
        gi, gj, between, rest = (
            groups[i : i + 1],
            groups[j : j + 1],
            groups[i + 1 : j],
            groups[j + 1 :],
        )
        lo_i, hi_i, lo_j, hi_j = (f(g) for g in (gi, gj) for f in (chain.lower, chain.upper))
        lower, upper = hi_i, lo_j
        gaps = [lo_j - hi_i]
        if between:
            # every between value strictly closer to c than group i and group j
            b_lo, b_hi = chain.lower(between), chain.upper(between)
            lower = max(lower, (hi_i + b_hi) / 2)
            upper = min(upper, (b_lo + lo_j) / 2)
            gaps += [b_lo - hi_i, lo_j - b_hi]
        if rest:
            # every later value of the other label strictly farther from c than group i
            # (so than group j); later values of this label may join the new group
            other = [g for g in rest if y[g[0]] != y[gi[0][0]]]
            if other:
                upper = min(upper, (lo_i + chain.lower(other)) / 2)
            gaps.append(chain.lower(rest) - hi_j)
        if lower < upper:
            # stay this close to the exact midpoint, relative to the nearest neighbours,
            # so that the new group is far narrower than any gap the next folds see
            tol = min([upper - lower, *gaps]) * tolerance
            if not precise or 4 * chain.radius(gi + gj) <= tol:
                break
        elif lower - upper > abs(hi_i) * fmpq(1, 2 ** (chain.prec // 2)):
            return None  # empty by far more than the balls' width
        chain.refine(steps_ahead)
    exact_mid = (lo_i + hi_i + lo_j + hi_j) / 4
    target = min(max(exact_mid, lower + tol), upper - tol)
    centre = dyadic_between(max(lower, target - tol), min(upper, target + tol), target)
    # the paper normalises (p - c, D) with D half the pair's distance; in the
    # width-3 gadget that is offset D / sqrt(3), rounded to a short rational
    half = (lo_j + hi_j - lo_i - hi_i) / 4
    offset = dyadic_between(half * fmpq(5772, 10000), half * fmpq(5775, 10000))
    return FoldStep(centre, offset, scale=power_of_two_near(1 / offset), kind="pma")


def power_of_two_near(x: fmpq) -> fmpq:
    """A power of two within a factor 2 of ``x > 0``.

    Used as the layer's scale ``S`` so that ``S * offset`` is about 1: LayerNorm
    is scale invariant up to ``eps``, so this keeps ``eps`` from swamping the
    pre-activations (the paper's normalisation has no ``eps``).
    """
    k = int(x.p).bit_length() - int(x.q).bit_length()
    return fmpq(2) ** k if k >= 0 else fmpq(1, 2 ** (-k))
