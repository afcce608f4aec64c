"""Peel one class at a time off the line with binary ``runs`` folds (``--method peel``).

``runs`` with ``k >= 3`` labels joins a run only to a run of its own label, and
on random labels that costs float resolution fast (proofs/multiclass.md §6).
The binary fold of :mod:`.runfold` costs none, and it needs only that the end run
``R_1`` and the run ``R_3`` share a label.  So the classes are taken one at a
time, as two labels: the class ``c`` against the rest (proofs/multiclass.md §8).

* **Phase 1.** Class ``c_1`` against the rest, folding from either end, until
  two runs remain: ``c_1`` and the rest, one of them at an end (``c_1``, the
  *peeled block*).
* **Phase j.** ``c_j`` is the class next to the peeled block; ``c_j`` against the
  classes not yet peeled, folding only from the *free* end (away from the peeled
  block).  A fold from the free end moves ``R_1, R_2, R_3`` only, so the run
  next to the peeled block keeps its label, ``c_j``: the phase ends with ``c_j``
  one run there, and it joins the peeled block.  After ``k - 1`` phases every
  class is one run.

Each layer is the binary fold (the phase's runs fall by exactly one,
proofs/runs_fold.md), so points of *different* classes of "the rest" in ``R_1`` and
``R_3`` interleave: the float search scores the gaps between neighbours of different
labels, each point's float64 value widened by the float error it may carry (the
spread of randomly perturbed float64 runs, :class:`~.runfold.FloatShadow`), in units
of the largest value (what float64 must resolve), and every layer is certified on the
``k`` labels (each run of one class certainly below the next), so no two labels ever
meet.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from functools import partial

import numpy as np

from ..elementary import atan, sincos
from .fold import Chain, FoldStep
from .pma import Progress
from .project import runs
from .runfold import (
    ANGLES,
    CENTRES,
    OPENING,
    WIDTHS,
    FloatShadow,
    Runs,
    Tightener,
    Unresolvable,
    _first_certified,
    best_first,
    chain_runs,
    cos_sin_atan,
    eighth_power,
    inverse_eighth_root,
    to_steps,
    watch,
)

KEEP = 8
"""Candidate folds tried per layer, best first."""
RESOLVED = 2.0**-44
"""A fold whose smallest new label gap (beyond the float errors so far) is below this
fraction of its largest value, 512 ulps, is not float-faithful: the method gives way (to
``pma``).  (``2^-36`` while the gaps were measured between the chain's intervals; with
the values widened by their float error instead, ``2^-44`` finishes 3 of 3 random sets of
500 points, ``k = 3``, where ``2^-36`` gives way on one at its layer 7.)"""
INNER = 12
"""Runs of the ``k`` labels inside ``R_2`` whose middles are candidate centres (a fold there
folds that run onto itself; elsewhere it may fold two labels of "the rest" together)."""


def merge_peel(
    chain: Chain, y: Sequence[int], progress: Progress | None = None, *, start: int = 0
) -> list[int]:
    """Append layers to ``chain`` until every class is one run, one class at a time; the
    classes whose phases ran, in order (at most ``k - 1``; the depth is at most the sum of
    ``2 n_c - 1`` over them, ``n_c`` the points of class ``c``, proofs/multiclass.md §8).

    ``y``: labels ``0 .. k-1``; ``start``: phase 1 peels the class with the ``start``-th
    fewest runs against the rest (0: the fewest, the shortest phase 1).  Raises
    :class:`~.runfold.Unresolvable` when the label gaps fall below float64 resolution (the
    caller gives way to ``pma``).
    """
    labels = np.asarray(y)
    k = int(labels.max()) + 1
    rs = chain_runs(chain, y, labels)
    peeled: list[int] = []
    tight = Tightener()
    shadow = FloatShadow(chain)
    cls: int | None = None
    while True:
        if rs is None:
            raise Unresolvable("the projected values are not separated")
        order, starts = rs
        kl = labels[order[starts]]  # the label of each run, along the line
        if len(starts) <= k:
            return peeled if cls is None else [*peeled, cls]
        first_peeled = bool(peeled) and kl[0] in peeled
        if cls is None:  # a new phase: the class next to the peeled block
            nxt = len(peeled) if first_peeled else -1 - len(peeled)
            cls = int(kl[nxt]) if peeled else _first_class(kl, k, start)
        binary = _binary(kl, cls, peeled)
        count = runs(binary)
        if count == len(peeled) + 2:  # c one run, next to the peeled block: peeled
            peeled.append(cls)
            cls = None
            continue
        if progress:
            progress(len(chain.steps), len(chain.steps) + count - len(peeled) - 2)
        ends = (0, 1) if not peeled else ((1,) if first_peeled else (0,))
        scored = _candidates(chain, labels, _binary(labels, cls, peeled), ends, shadow)
        if not scored or scored[0][0] < RESOLVED:
            kept = (
                f"keeps label gaps of {scored[0][0]:.1e} of its largest value"
                if scored
                else "keeps no two labels apart"
            )
            raise Unresolvable(
                f"layer {len(chain.steps) + 1}: the best fold peeling label {cls} {kept} "
                "(below float64 resolution)"
            )
        why = f"label {cls} against the rest"  # explain names the class
        steps = [replace(step, kind="peel", why=why) for _, step in scored]
        done = partial(_one_fewer, labels=labels, cls=cls, peeled=peeled, count=count)
        found = _first_certified(chain, steps, rs, labels, None, done)
        if found is None and tight.tighten(chain, rs, labels):
            found = _first_certified(chain, steps, rs, labels, None, done)
        if found is None:  # the last resort: the candidates again, certified in balls
            found = _first_certified(chain, steps, rs, labels, y, done)
        if found is None:
            raise Unresolvable(
                f"layer {len(chain.steps) + 1}: no fold peeling label {cls} certified "
                "(label gaps below float resolution)"
            )
        rs = found


def _first_class(kl: np.ndarray, k: int, start: int) -> int:
    """The class with the ``start``-th fewest runs against the rest (phase 1 is shortest for
    the fewest)."""
    return sorted(range(k), key=lambda c: (runs(kl == c), c))[start % k]


def _binary(kl: np.ndarray, cls: int, peeled: list[int]) -> np.ndarray:
    """Labels as phase ``cls`` sees them: 0 for ``cls``, 1 for the classes not yet peeled,
    and each peeled class its own."""
    out = np.where(kl == cls, 0, 1)
    for i, c in enumerate(peeled):
        out[kl == c] = 2 + i
    return out


def _one_fewer(after: Runs, labels: np.ndarray, cls: int, peeled: list[int], count: int) -> bool:
    """Whether the phase's runs are one fewer than ``count`` after the layer (runs ``after``)."""
    return runs(_binary(labels[after[0][after[1]]], cls, peeled)) == count - 1


def _candidates(
    chain: Chain,
    labels: np.ndarray,
    binary: np.ndarray,
    ends: tuple[int, ...],
    shadow: FloatShadow,
) -> list[tuple[float, FoldStep]]:
    """The :data:`KEEP` best folds ``(score, step)`` of this layer from ``ends``, best first.

    ``labels``, ``binary``: each point's label and its label in the phase; ``shadow``: the
    values as float64 computes them, and how far its rounding may move them."""
    mid, lo, hi = shadow.enclosures(chain)
    order = np.argsort(mid, kind="stable")
    p, lo, hi = mid[order], lo[order], hi[order]
    p0, p1 = p[0], p[-1]
    span = p1 - p0
    scored = []
    for end in ends:
        if end == 0:
            x, xlo, xhi = (p - p0) / span, (lo - p0) / span, (hi - p0) / span
            lab, bl = labels[order], binary[order]
        else:
            x, xlo, xhi = (p1 - p[::-1]) / span, (p1 - hi[::-1]) / span, (p1 - lo[::-1]) / span
            lab, bl = labels[order][::-1], binary[order][::-1]
        with np.errstate(all="ignore"):  # degenerate candidates score -inf
            score, c, w, psi = _scores(x, xlo, xhi, lab, bl)
        best = best_first(score)[:KEEP]
        scored += [(score[t], end, c[t], w[t], psi[t]) for t in best if np.isfinite(score[t])]
    scored.sort(key=lambda s: s[0], reverse=True)
    return to_steps(scored[:KEEP], p0, p1, chain.eps)


def _scores(
    x: np.ndarray, xlo: np.ndarray, xhi: np.ndarray, lab: np.ndarray, bl: np.ndarray
) -> tuple[np.ndarray, ...]:
    """Grid search for the binary fold of ``R_1`` onto ``R_3`` (the runs of the phase's
    labels ``bl``), scored on the ``k`` labels ``lab``.

    ``x``: the points in ``[0, 1]``, increasing from the folding end.  The candidates are
    those of ``runfold._scores`` on the phase's runs, with centres also in the middle
    of the runs of the ``k`` labels inside ``R_2``; the score is the soft minimum
    ``(sum g^-8)^(-1/8)`` of the gaps ``g`` between neighbours of different labels after
    the fold, each point widened to the image of its interval ``[xlo, xhi]``, in units of
    the largest new value (``-inf`` when two of them meet): every such gap among the
    points of ``R_1`` to ``R_3`` (which the fold mixes) and the first of ``R_4``, beyond
    that the watched ones (``_watched``), where the fold keeps the order.
    """
    heads = np.r_[0, np.nonzero(bl[1:] != bl[:-1])[0] + 1, len(x)]  # the phase's runs
    r = len(heads) - 1
    f, a, b0, b1, a1 = x[0], x[heads[1] - 1], x[heads[1]], x[heads[2] - 1], x[heads[2]]
    between = [(a + a1) / 2, (f + a1) / 2, (a + b0) / 2, (b1 + a1) / 2]
    # and inside R_2, where a run of the k labels folds onto itself: its middle
    inner = x[heads[1] : heads[2]]
    cut = np.nonzero(lab[heads[1] + 1 : heads[2]] != lab[heads[1] : heads[2] - 1])[0] + 1
    lo, hi = np.r_[inner[0], inner[cut]], np.r_[inner[cut - 1], inner[-1]]
    middles = (lo + hi) / 2
    if len(middles) > INNER:
        middles = middles[np.linspace(0, len(middles) - 1, INNER).astype(int)]
    cs = np.unique(np.r_[np.linspace(b0, b1, CENTRES - len(between)), between, middles])
    opening = min(b1 - a, x[heads[3]] - b1) if r > 3 else b1 - a  # proofs/runs_fold.md
    ws = np.r_[WIDTHS * (x[heads[3] - 1] - f), opening * OPENING]
    C, W = (g.ravel() for g in np.meshgrid(cs, ws, indexing="ij"))
    K = len(ANGLES)

    def angle(v: float) -> np.ndarray:
        return atan((v - C) / W)

    lo_psi = (angle(a) + angle(b1)) / 2
    hi_psi = (angle(b0) + angle(a1)) / 2
    if r > 3:
        hi_psi = np.minimum(hi_psi, (angle(f) + angle(x[heads[3]])) / 2)
    psi = (lo_psi[:, None] + (hi_psi - lo_psi)[:, None] * ANGLES[None, :]).ravel()
    Cr, Wr = np.repeat(C, K), np.repeat(W, K)
    sp, cp = (v[:, None] for v in sincos(psi))
    tp = sp / cp  # tan psi (|psi| < pi / 2)
    near = heads[3] + 1 if r > 3 else len(x)  # R_1 .. R_3 and the first point of R_4

    def slope(u: np.ndarray) -> np.ndarray:  # candidate x point: tan of the angle
        return (u[None, :] - Cr[:, None]) / Wr[:, None]

    def value(z: np.ndarray) -> np.ndarray:  # cos(atan z - psi), by a square root only
        c, s = cos_sin_atan(z)
        return c * cp + s * sp

    # each point's interval (its value widened by its float error) and its image
    zl, zh = slope(xlo[:near]), slope(xhi[:near])
    vl, vh = value(zl), value(zh)
    top = np.where((zl <= tp) & (zh >= tp), 1.0, np.maximum(vl, vh))  # psi inside: the crest
    gap = _label_gaps(np.minimum(vl, vh), top, lab[:near])
    if r > 3 and near < len(x):  # beyond: monotone, the order kept
        idx = _watched(xlo, xhi, lab, near - 1)
        gap = np.c_[gap, value(slope(xhi[idx])) - value(slope(xlo[idx + 1]))]
    # float64 rounds the new values to ulps of their largest magnitude (the crest, 1 here,
    # or the far end), not of their spread: gaps count in those units
    far = value(slope(np.array([xlo[0], xhi[-1]])))
    scale = np.maximum(1, -far.min(axis=1))
    smallest = gap.min(axis=1)
    ok = np.repeat(hi_psi > lo_psi, K) & (smallest > 0)
    t = np.where(ok, smallest, 1.0)
    total = eighth_power(t[:, None] / np.where(ok[:, None], gap, 1.0)).sum(axis=1)
    score = np.where(ok, t * inverse_eighth_root(total) / scale, -np.inf)
    return score, Cr, Wr, psi


def _watched(xlo: np.ndarray, xhi: np.ndarray, lab: np.ndarray, start: int) -> np.ndarray:
    """The points ``t >= start`` whose gap (between their intervals) to point ``t + 1`` of
    another label the score watches (:func:`.runfold.watch`)."""
    t = start + np.nonzero(lab[start + 1 :] != lab[start:-1])[0]
    return watch(t, xlo[t + 1] - xhi[t])


def _label_gaps(bottom: np.ndarray, top: np.ndarray, lab: np.ndarray) -> np.ndarray:
    """Per candidate row, the space below each interval ``[bottom, top]`` down to the
    highest interval of another label below it (negative: they overlap), the intervals
    taken in order of their bottoms."""
    order = np.argsort(bottom, axis=1, kind="stable")
    b = np.take_along_axis(bottom, order, axis=1)
    t = np.take_along_axis(top, order, axis=1)
    lb = lab[order]
    gaps = np.full(b.shape, np.inf)
    for c in np.unique(lab):  # the highest top of class c so far, against the others' bottoms
        tops = np.maximum.accumulate(np.where(lb == c, t, -np.inf), axis=1)
        below = np.c_[np.full((len(b), 1), -np.inf), tops[:, :-1]]
        gaps = np.where(lb != c, np.minimum(gaps, b - below), gaps)
    return gaps
