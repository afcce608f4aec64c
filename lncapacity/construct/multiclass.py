"""Multiclass LN-Nets: k labels, no two ever confused.

With three or more labels a fold can bring values of *different* labels
together: the values between the two that merge are mirrored about the fold
centre and interleave, and two of them collide exactly when they are mirror
images (the "parallelization" that Ni et al. 2024 break for several classes;
proofs/multiclass.md).  Both methods below
decide this with ball arithmetic, never with a float tolerance, and break the
symmetry with an injective *warp* layer when a fold would confuse two labels.

* :func:`pma_k` is the paper's loop (Algorithm 1 with ``J_i`` over the values
  still active): the smallest value ``p_i`` whose class has another value is
  folded onto the next value ``p_j`` of its class, at a certified-safe rational
  centre (:mod:`.pma`).  If a value of another label lies within the centre's
  tolerance of the mirror image of a third one, the exact algorithm would
  confuse them: a warp is inserted first.  Each fold merges two groups of one
  label, so at most ``m - k`` folds (plus the warps) end with every class one
  run.
* :func:`merge_runs_k` generalises the ``runs`` method: a layer joins an end
  run ``R_1`` to a later run ``R_j`` of the *same* label, every run in between
  kept in order (closer to the fold than ``R_1``), every run beyond it farther,
  so the line has exactly one run fewer (proofs/multiclass.md, the merge
  lemma).  When the first and the last run share a label, ``j`` may be the
  last run: that fold is always admissible.  Parameters come from a float64
  search (the soft minimum of the new label gaps), each layer is certified in
  ball arithmetic; when no merge certifies, a warp squashes an end first.

Both stop when every class is one run along the line; the readout is then an
upper envelope of ``k`` lines in the last read (:func:`envelope`), that is an
argmax of ``k`` affine functions of the last LayerNorm output: parallel strips
cutting its circle into the class arcs.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence

import numpy as np
from flint import arb, fmpq

from ..arith import dyadic_between, precision
from ..elementary import atan, geomspace, sincos
from .fold import Chain, FoldStep
from .pma import (
    NoSafeCentre,
    Progress,
    _fold,
    order_groups,
    power_of_two_near,
    with_tolerances,
)
from .project import runs
from .runfold import (
    ANGLES,
    Unresolvable,
    best_first,
    certified_runs,
    cos_sin_atan,
    eighth_power,
    inverse_eighth_root,
    to_steps,
)

NEAR = arb(2) ** -10
"""Mirror images of different labels closer than this fraction of the smallest label gap
before the fold are a clash: the fold would cost the labels ten bits of separation."""
MAX_WARPS = 3
"""Consecutive warps tried before a construction gives up on a layer."""
TARGETS = 3
"""Same-label runs, counted from each end, that a merge may aim at (and the last run)."""
FIRSTS = 3
"""Runs, counted from each end, that a merge may move (those before it go beyond the far end)."""
WIDTHS = geomspace(1e-4, 30.0, 22)
"""Candidate ``sqrt(3) beta`` relative to the span from ``R_1`` to the run after ``R_j``."""
WATCHED = 48
RESOLVED = 2.0**-36
"""A merge whose smallest new label gap is below this fraction of its amplitude is not
float-faithful: the runs method gives way (to the paper's construction) instead."""


def cyclic_runs(labels: Sequence[object]) -> int:
    """Runs of ``labels`` read around a circle (first and last adjacent)."""
    r = runs(labels)
    return r - 1 if r > 1 and labels[0] == labels[-1] else r


# ---------------------------------------------------------------------------
# the paper's loop, k labels


def pma_k(chain: Chain, y: Sequence[int], progress: Progress | None = None) -> None:
    """Append folds (and warps) to ``chain`` until every class is one run along the line."""
    with_tolerances(_pma_k, chain, y, progress, folds=len(y) - len(set(y)))


def _pma_k(chain: Chain, y: Sequence[int], tolerance: fmpq, progress: Progress | None) -> None:
    k = len(set(y))
    groups = [[i] for i in range(len(y))]
    warps = 0
    while True:
        groups = order_groups(chain, groups, y, steps_ahead=len(groups) - k)
        labels = [y[g[0]] for g in groups]
        if progress:
            progress(len(chain.steps), len(chain.steps) + max(0, len(groups) - k))
        if runs(labels) <= k:
            return
        count = Counter(labels)
        # the paper's p_i: the smallest value still in P (its class has another value)
        i = next(t for t in range(len(groups)) if count[labels[t]] > 1)
        j = next(t for t in range(i + 1, len(groups)) if labels[t] == labels[i])
        step = _fold(chain, groups, j, y, tolerance, len(groups) - k, i=i, precise=True)
        if step is None:
            raise NoSafeCentre(
                f"fold {len(chain.steps) + 1}: no safe centre (merged groups too wide "
                "for their neighbours)"
            )
        clash = _confusion(chain, groups, y, step.centre)
        if clash is not None:
            if warps == MAX_WARPS:
                # a merged group is wider than the gap a mirror image must fit in:
                # centres nearer the exact midpoints (pma's next tolerance) cure that
                raise NoSafeCentre(f"fold {len(chain.steps) + 1}: {clash}, after {warps} warps")
            chain.push(_warp(chain, end=warps % 2, stretch=warps, why=clash))
            warps += 1
            continue
        warps = 0
        chain.push(step)
        groups = [*groups[:i], groups[i] + groups[j], *groups[i + 1 : j], *groups[j + 1 :]]


def _confusion(chain: Chain, groups: list[list[int]], y: Sequence[int], centre: fmpq) -> str | None:
    """Why folding at ``centre`` could confuse two labels, or None if it certainly cannot.

    The fold orders values by distance to the centre.  Two groups of different
    labels whose ranges of distance overlap (in particular mirror images, at
    equal distance) would be merged or interleaved: confusion.  Decided in ball
    arithmetic: a mirror pair whose distances are not certainly apart by
    :data:`NEAR` of the smallest label gap before the fold counts as a clash,
    whatever the precision (a true mirror image is never certainly apart; a near one would
    leave a gap that later layers need ever more bits to see).
    """
    with precision(chain.prec):
        c = arb(centre)
        values = chain.values  # a property that brings the balls up to date: read it once
        spans = []
        for g in groups:
            lo = min(values[t].lower() for t in g)
            hi = max(values[t].upper() for t in g)
            spans.append((lo, hi))
        # the resolution the values have now: the smallest gap between different labels
        gap = min(
            (
                b[0] - a[1]
                for a, b, ga, gb in zip(spans, spans[1:], groups, groups[1:], strict=False)
                if y[ga[0]] != y[gb[0]]
            ),
            key=lambda x: x.mid(),
        )
        slack = gap.lower() * NEAR
        left = [(c - hi, c - lo, t, 0) for t, (lo, hi) in enumerate(spans) if hi < c]
        right = [(lo - c, hi - c, t, 1) for t, (lo, hi) in enumerate(spans) if lo > c]
        if len(left) + len(right) < len(groups):
            return "a value lies at the fold centre"
        # sweep by distance: every group must lie beyond *all* nearer groups of other
        # labels, not only its neighbour in this order (a wide merged group can reach
        # past a same-label neighbour onto the next label)
        reach: dict[tuple[int, int], arb] = {}  # (label, side) -> farthest distance so far
        for b_lo, b_hi, b, sb in sorted(left + right, key=lambda s: s[0].mid()):
            lb = y[groups[b][0]]
            for (la, sa), a_hi in reach.items():
                # mirror images (opposite sides) must stay as far apart as the labels are now
                if la != lb and not (b_lo - a_hi > (slack if sa != sb else 0)):
                    return (
                        f"a value of label {la} and one of label {lb} would be mirror images "
                        "about the fold centre (parallelization)"
                    )
            top = b_hi.upper()  # exact: the maximum below is decided
            reach[(lb, sb)] = max(reach.get((lb, sb), top), top)
    return None


def _warp(chain: Chain, end: int, stretch: int, why: str) -> FoldStep:
    """An injective, non-affine layer: a fold centred beyond one end of the values.

    Every value lies on one side of the centre, so the order is kept (reversed)
    while distances are distorted (proofs/multiclass.md, warp lemma): mirror
    images about a later centre stop being mirror images.
    """
    everything = [list(range(len(chain.t)))]
    lo, hi = chain.lower(everything), chain.upper(everything)
    span = max(hi - lo, fmpq(1, 2**20))
    centre = lo - span / 4 if end == 0 else hi + span / 4
    offset = span * fmpq(2) ** (stretch % 3 - 1)
    return FoldStep(centre, offset, power_of_two_near(1 / offset), kind="warp", why=why)


# ---------------------------------------------------------------------------
# one run fewer per layer, k labels


def merge_runs_k(chain: Chain, y: Sequence[int], progress: Progress | None = None) -> None:
    """Append layers to ``chain`` until every class is one run: each merge removes one run."""
    k = len(set(y))
    warps = 0
    while True:
        rs = certified_runs(chain, y)
        if rs is None:
            raise Unresolvable("the values are not separated")
        if progress:
            progress(len(chain.steps), len(chain.steps) + max(0, len(rs) - k))
        if len(rs) <= k:
            return
        labels = [y[r[0]] for r in rs]
        merges = _merges(chain, rs, labels)
        if merges and merges[0][0] < RESOLVED:
            raise Unresolvable(
                f"layer {len(chain.steps) + 1}: the best merge keeps label gaps of only "
                f"{merges[0][0]:.1e} of its amplitude (below float64 resolution)"
            )
        for _, step in merges:
            chain.push(step)
            after = certified_runs(chain, y)
            if after is not None and len(after) < len(rs):
                warps = 0
                break
            chain.pop()
        else:
            if warps == MAX_WARPS:
                raise Unresolvable(
                    f"layer {len(chain.steps) + 1}: no merge of the float64 search certified, "
                    f"even after {warps} warps"
                )
            chain.push(_best_warp(chain, rs, labels, y))
            warps += 1


def _best_warp(chain: Chain, rs: list[list[int]], labels: list[int], y: Sequence[int]) -> FoldStep:
    """The squash (warp) after which the best merge scores highest."""
    best: tuple[float, int] = (-np.inf, 0)
    why = "no merge admissible: an end run is too wide for the gap it must fill"
    for trial in range(6):
        chain.push(_warp(chain, end=trial % 2, stretch=trial // 2, why=why))
        after = certified_runs(chain, y)
        if after is not None and len(after) == len(rs):
            score = _best_merge_score(chain, after, [y[r[0]] for r in after])
            best = max(best, (score, trial))
        chain.pop()
    trial = best[1]
    return _warp(chain, end=trial % 2, stretch=trial // 2, why=why)


def _run_bounds(chain: Chain, rs: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    with precision(chain.prec):
        p = [float(v.mid()) for v in chain.values]
    lo = np.array([min(p[t] for t in r) for r in rs])
    hi = np.array([max(p[t] for t in r) for r in rs])
    return lo, hi


def _scored(chain: Chain, rs: list[list[int]], labels: list[int]) -> list[tuple]:
    """``(score, end, j, c, w, psi)`` of every admissible merge found, in normalised units."""
    lo, hi = _run_bounds(chain, rs)
    p0, p1 = lo[0], hi[-1]
    span = p1 - p0
    out = []
    for end in (0, 1):
        if end == 0:
            xl, xh, lab = (lo - p0) / span, (hi - p0) / span, labels
        else:
            xl, xh, lab = (p1 - hi[::-1]) / span, (p1 - lo[::-1]) / span, labels[::-1]
        for first in range(min(FIRSTS, len(lab) - 2)):
            same = [t for t in range(first + 2, len(lab)) if lab[t] == lab[first]]
            for j in dict.fromkeys([*same[:TARGETS], *same[-1:]]):
                with np.errstate(all="ignore"):
                    score, c, w, psi = _merge_scores(xl, xh, first, j, lab)
                best = best_first(score)[:8]
                out += [
                    (score[t], end, j, c[t], w[t], psi[t]) for t in best if np.isfinite(score[t])
                ]
    return out


def _best_merge_score(chain: Chain, rs: list[list[int]], labels: list[int]) -> float:
    scored = _scored(chain, rs, labels)
    return max((s[0] for s in scored), default=-np.inf)


def _merges(
    chain: Chain, rs: list[list[int]], labels: list[int], keep: int = 8
) -> list[tuple[float, FoldStep]]:
    """The ``keep`` best admissible merges of this layer with their scores, best first."""
    lo, hi = _run_bounds(chain, rs)
    scored = sorted(_scored(chain, rs, labels), key=lambda s: s[0], reverse=True)
    best = [(score, end, c, w, psi) for score, end, _, c, w, psi in scored[:keep]]
    return to_steps(best, lo[0], hi[-1], chain.eps)


def _merge_scores(
    xl: np.ndarray, xh: np.ndarray, s: int, j: int, labels: Sequence[int]
) -> tuple[np.ndarray, ...]:
    """Grid search for folds joining run ``s`` to run ``j`` (same label), runs between kept.

    Runs are ``[xl, xh]`` in ``[0, 1]`` from the folding end.  For centre ``c``
    and width ``w`` the angles are ``theta = atan((x - c) / w)``; the read at
    angle ``psi`` orders values by ``|theta - psi|``.  The merge lemma
    (proofs/multiclass.md) needs ``psi`` in::

        (th_s + th_{j-1}) / 2 < psi < min((tl_{s+1} + tl_{s+2}) / 2, (tl_s + tl_{j+1}) / 2)

    (run ``s + 1`` may straddle ``psi``; the last bound only when run ``j + 1``
    exists) and, when runs ``0..s-1`` lie before run ``s``, ``psi > (th_{s-1} +
    th_last) / 2``: they land beyond the far end, in reverse.  The new runs,
    innermost first, are ``R_{s+1}, ..., R_{j-1}, R_s + R_j, R_{j+1}, ..., R_last,
    R_{s-1}, ..., R_0``; the score is the soft minimum of the gaps between
    different labels (as fractions of the amplitude; ``-inf`` where inadmissible).
    """
    r = len(xl)
    f, a, b0, b1 = xl[s], xh[s], xl[s + 1], xh[s + 1]
    after = j + 1 < r
    cs = np.unique(
        np.r_[
            a + (b0 - a) * np.array([0.25, 0.5, 0.75]),
            np.linspace(b0, b1, 5),
            (a + xl[s + 2]) / 2,
        ]
    )
    reach = xh[j + 1] if after else xh[j]
    ws = WIDTHS * (reach - f)
    C, W = (g.ravel() for g in np.meshgrid(cs, ws, indexing="ij"))
    far = _watched(xl, xh, j + 1) if after else np.array([], dtype=int)
    cols = np.unique(np.r_[np.arange(min(j + 2, r)), far, far + 1, r - 1]).astype(int)
    pos = {col: t for t, col in enumerate(cols)}
    zl = (xl[cols][None, :] - C[:, None]) / W[:, None]
    zh = (xh[cols][None, :] - C[:, None]) / W[:, None]
    tl, th = atan(zl), atan(zh)
    lo_psi = (th[:, s] + th[:, pos[j - 1]]) / 2
    if s:
        lo_psi = np.maximum(lo_psi, (th[:, s - 1] + th[:, pos[r - 1]]) / 2)
    hi_psi = (tl[:, s + 1] + tl[:, s + 2]) / 2
    if after:
        hi_psi = np.minimum(hi_psi, (tl[:, s] + tl[:, pos[j + 1]]) / 2)
    psi = lo_psi[:, None] + (hi_psi - lo_psi)[:, None] * ANGLES[None, :]
    sp, cp = (v[..., None] for v in sincos(psi))
    (cl, sl), (ch, sh) = cos_sin_atan(zl), cos_sin_atan(zh)
    vl = cl[:, None, :] * cp + sl[:, None, :] * sp
    vh = ch[:, None, :] * cp + sh[:, None, :] * sp
    # the new runs as (top, bottom) of their values, innermost (largest values) first
    tops = [None] + [vl[..., t] for t in range(s + 2, j)]
    bottoms = [np.minimum(vl[..., s + 1], vh[..., s + 1])] + [vh[..., t] for t in range(s + 2, j)]
    tops.append(np.maximum(vh[..., s], vl[..., pos[j]]))
    bottoms.append(np.minimum(vl[..., s], vh[..., pos[j]]))
    gaps = [bottoms[t] - tops[t + 1] for t in range(len(bottoms) - 1)]
    if after:
        gaps.append(bottoms[-1] - vl[..., pos[j + 1]])
        gaps += [vh[..., pos[t]] - vl[..., pos[t + 1]] for t in far]
    if s:
        # runs before s, nearest first, after the last run (joined to it if one label)
        last = bottoms[-1] if not after else vh[..., pos[r - 1]]
        if labels[s - 1] != labels[r - 1]:
            gaps.append(last - vh[..., s - 1])
        gaps += [vl[..., t] - vh[..., t - 1] for t in range(s - 1, 0, -1)]
    smallest = np.minimum.reduce(gaps)
    ok = (hi_psi > lo_psi)[:, None] & (smallest > 0)
    t = np.where(ok, smallest, 1.0)
    total = sum(eighth_power(t / g) for g in gaps)
    score = np.where(ok, t * inverse_eighth_root(total), -np.inf)
    K = psi.shape[1]
    return score.ravel(), np.repeat(C, K), np.repeat(W, K), psi.ravel()


def _watched(xl: np.ndarray, xh: np.ndarray, start: int, count: int = WATCHED) -> np.ndarray:
    """Runs ``t >= start`` whose gap to run ``t + 1`` the score watches (as in :mod:`.runfold`)."""
    t = np.arange(start, len(xl) - 1)
    if len(t) <= 2 * count:
        return t
    smallest = t[np.argsort(xl[t + 1] - xh[t], kind="stable")[:count]]
    return np.union1d(smallest, t[np.linspace(0, len(t) - 1, count).astype(int)])


# ---------------------------------------------------------------------------
# the readout


THRESHOLD_WINDOW = fmpq(1, 64)
"""An envelope threshold lies within this fraction of its gap of the gap's midpoint."""


def middle(lo: fmpq, hi: fmpq) -> fmpq:
    """A short dyadic rational within :data:`THRESHOLD_WINDOW` of the gap ``(lo, hi)`` of its
    midpoint, so at least ``31/64`` of the gap from each side.

    At the readout, ``l_{t+1} - l_t = s - tau_t`` (proofs/multiclass.md, readout lemma):
    the margin of the run's last value is its distance to the threshold, so the
    midpoint is the threshold of largest margin; the shortest dyadic inside the gap
    (the former choice) can sit next to one side (iris: a value at 1.96 and the
    threshold 2).  Still short: ``log2(1 / gap) + 7`` bits or so.
    """
    gap, mid = hi - lo, (lo + hi) / 2
    return dyadic_between(mid - gap * THRESHOLD_WINDOW, mid + gap * THRESHOLD_WINDOW, mid)


def envelope(
    chain: Chain, groups: Sequence[Sequence[int]], y: Sequence[int]
) -> tuple[list[tuple[int, int, fmpq]], fmpq, list[fmpq]]:
    """Lines ``z = t s + iota_t`` whose upper envelope picks the ``t``-th run's label.

    ``groups`` are the runs in increasing order of ``s``, one per label.  Lines
    with slopes ``1, 2, ..., k`` meeting at rational thresholds ``tau_t`` in the
    middle of the gaps between consecutive runs (:func:`middle`) form an upper
    envelope on which line ``t`` is the maximum exactly on ``(tau_{t-1}, tau_t)``
    (proofs/multiclass.md, readout lemma), so the argmax is the run's label.
    Returns ``(label, slope, intercept)`` per run, a constant below the envelope on
    every value (for classes with no point), and the thresholds.
    """
    taus = [middle(chain.upper([a]), chain.lower([b])) for a, b in itertools.pairwise(groups)]
    lines, iota = [], fmpq(0)
    for t, g in enumerate(groups):
        lines.append((y[g[0]], t + 1, iota))
        if t < len(taus):
            iota -= taus[t]
    # line 1 (slope 1, intercept 0) is s itself, so the envelope is >= s >= this + 1
    floor = chain.lower(list(groups)) - 1
    return lines, floor, taus
