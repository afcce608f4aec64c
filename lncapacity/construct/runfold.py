"""Fold one label run away per layer, keeping the label gaps float-sized (the default method).

A layer with centre ``c``, offset ``beta`` and a general read
``a = alpha v + gamma u`` maps a value ``p`` to (eps = 0;
proofs/runs_fold.md)::

    theta = atan((p - c) / (sqrt(3) beta)),    p' = A cos(theta - psi),
    tan psi = gamma / (sqrt(3) alpha),          A = sqrt(18 alpha^2 + 6 gamma^2).

``p -> theta`` is increasing, and ``p'`` decreases in ``|theta - psi|``: the
layer folds the angle line about ``psi``.  With the runs ``R_1, R_2, ...``
along the line counted from one end, ``f, a`` the first and last angle of
``R_1``, ``b_0, b_1`` of ``R_2``, ``a'`` the first of ``R_3`` and ``x`` the
first of ``R_4``, every ``psi`` with::

    (a + b_1) / 2 < psi < min((b_0 + a') / 2, (f + x) / 2)

puts ``R_2`` nearest ``psi``, then ``R_1`` and ``R_3`` together, then ``R_4,
R_5, ...`` in order: the runs fall by exactly one (the paper's loop may spend a
layer merging two values of one run).  ``(c, beta)`` can always make the
interval non-empty: ``c`` at the top of ``R_2`` and ``sqrt(3) beta`` at most
the distances from there to ``R_1`` and to ``R_4`` (the *opening* choice).

Among the folds from either end, a grid of ``(c, beta, psi)`` (always with the
opening choice and smaller offsets) is searched in float64 for the largest soft
minimum of the gaps between different labels after the layer, in units of the
layer's amplitude ``A``: that is what float arithmetic resolves.  The chosen
parameters are floats, hence exact dyadic rationals; the layer is then applied
in ball arithmetic, and the new runs are certified (each run certainly below
the next).  A candidate that fails gives way to the next best.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from flint import arb, fmpq

from .. import interval as iv
from ..arith import lower_bound_float, precision, to_float
from ..elementary import atan, geomspace, sincos, tan
from ..errors import ConstructionError
from ..fileformat import read_vector
from ..floats import layer_norm
from ..reproducible import matmul
from .fold import Chain, FoldStep, fold_layer, reversal
from .pma import Progress, power_of_two_near

SQRT3 = math.sqrt(3.0)
CENTRES = 9
"""Candidate centres per end: across ``R_2`` and between the first runs."""
WIDTHS = geomspace(1e-2, 30.0, 20)
"""Candidate ``sqrt(3) beta``, relative to the span of ``R_1, R_2, R_3``."""
ANGLES = np.linspace(0.0, 1.0, 8)[1:-1]
"""Candidate ``psi``, as fractions of the admissible interval."""
OPENING = np.array([1.0, 0.5, 0.1])
"""Candidate ``sqrt(3) beta`` as fractions of the opening choice."""
WATCHED = 48
"""How many of the far gaps the score of a candidate looks at (see ``_watched``)."""
MAX_PRECISION = 1 << 12
"""Bits at which two values that balls cannot yet tell apart are given up on."""
MAX_RESCALES = 2
"""Rescaling layers tried in a row before the method gives way (see :func:`merge_runs`)."""
TIGHT_PRECISION = 192
"""Bits of the balls that re-enclose the points at label gaps the float64 intervals no
longer certify (:class:`Tightener`)."""


class Unresolvable(ConstructionError):
    """The float search sees no admissible fold: gaps below float64 resolution."""


def merge_runs(chain: Chain, y: Sequence[int], progress: Progress | None = None) -> None:
    """Append layers to ``chain`` until at most two label runs remain, one run fewer each.

    When no candidate certifies from the chain's float64 intervals, the intervals
    at the label gaps they swallow are narrowed first (:class:`Tightener`: a few
    points re-enclosed in balls) and the candidates tried again.  When that does
    not help either (the label gaps fell below float64 resolution relative to the
    values), an injective *rescale* layer
    (:func:`~.fold.reversal`, kind ``"rescale"``: the order reversed, the values
    spread over a fixed part of the amplitude, exactly) is tried first, at most
    :data:`MAX_RESCALES` in a row and only while the depth stays within ``m - 2``;
    then :class:`Unresolvable` (the caller gives way to ``pma``).
    """
    labels = np.asarray(y)
    rs, rescaled = chain_runs(chain, y, labels), 0
    tight = Tightener()
    while True:
        if rs is None:  # distinct, but closer than MAX_PRECISION bits can tell
            raise Unresolvable("the projected values are not separated")
        count = len(rs[1])
        if progress:
            progress(len(chain.steps), len(chain.steps) + max(0, count - 2))
        if count <= 2:
            return
        candidates = _candidates(chain, rs)
        found = _first_certified(chain, candidates, rs, labels, None)
        if found is None and tight.tighten(chain, rs, labels):
            # the intervals had grown over gaps float64 still resolves: narrower, try again
            found = _first_certified(chain, candidates, rs, labels, None)
        if found is None and rescaled < MAX_RESCALES and len(chain.steps) + count - 1 <= len(y) - 2:
            # out of float resolution: rescale exactly (an injective layer spreading the
            # values over a fixed part of the amplitude) and search again, while the
            # depth stays within m - 2
            chain.push(reversal(chain, kind="rescale"))
            after = interval_runs(chain, labels)
            if after is not None and len(after[1]) == count:
                rs, rescaled = after, rescaled + 1
                continue
            chain.pop()
        if found is None:  # the last resort: the candidates again, certified in balls
            found = _first_certified(chain, candidates, rs, labels, y)
        if found is None:
            raise Unresolvable(
                f"layer {len(chain.steps) + 1}: no fold of the float64 search certified "
                "(label gaps below float resolution)"
            )
        rs, rescaled = found, 0


Runs = tuple[np.ndarray, np.ndarray]
"""``(order, starts)``: the points sorted by value, and where each label run starts."""


class Tightener:
    """Narrower enclosures, in balls, of the values at label gaps the intervals no longer see.

    The chain's float64 intervals widen by a few ulps per layer (every operation is
    rounded outwards), so after a few hundred layers they can swallow a label gap
    that float64 itself still resolves (on 20,000 random points in R^3 the midpoints
    of two runs are hundreds of ulps apart while their hulls touch).  For the points
    at such gaps the value is enclosed anew, from the start (exact, or the chain's start
    balls), in ``arb`` at
    :data:`TIGHT_PRECISION` bits by each step's *range* (``_advance``): the
    ends of the enclosure are exact, and each step maps them to the hull of its
    values there, plus the extremum when the enclosure may hold the critical point,
    exactly as :func:`~lncapacity.interval.scalar_range` does (proofs/interval_rounding.md,
    "Scalar chains"), so the width grows by ``|f'|`` and ``2^-192`` per layer, not by
    ball arithmetic's dependency loss.  The chain's interval of such a point is
    intersected with this enclosure rounded outwards to floats: both contain the
    exact value, so their intersection does.  Enclosures are kept per point and
    advanced only over the steps added since (the chain's steps are a stack, and a
    kept enclosure is used only while the step it was last advanced over is still
    in its place, else it is computed afresh).
    """

    def __init__(self) -> None:
        self.starts: list[arb] | None = None
        self.done: dict[int, tuple[int, FoldStep | None, arb, arb]] = {}
        self.maps: dict[int, tuple[FoldStep, Callable[[arb, arb], tuple[arb, arb] | None]]] = {}

    def tighten(self, chain: Chain, rs: Runs, labels: np.ndarray) -> bool:
        """Narrow the intervals at the gaps where they eat a quarter of the gap or more;
        whether any interval became narrower."""
        lo, hi = chain.intervals
        if not (np.isfinite(lo).all() and np.isfinite(hi).all()):
            return False
        order, starts = rs
        p = (lo / 2 + hi / 2)[order]
        mlo, mhi = np.minimum.reduceat(p, starts), np.maximum.reduceat(p, starts)
        rlo, rhi = np.minimum.reduceat(lo[order], starts), np.maximum.reduceat(hi[order], starts)
        gap = mlo[1:] - mhi[:-1]
        risky = np.nonzero(rlo[1:] - rhi[:-1] < 0.75 * gap)[0]
        if not len(risky):
            return False
        run = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(order)]))
        above, below = np.full(len(starts), np.inf), np.full(len(starts), -np.inf)
        above[risky] = mhi[risky] + gap[risky] / 8
        below[risky + 1] = mlo[risky + 1] - gap[risky] / 8
        pts = order[(hi[order] > above[run]) | (lo[order] < below[run])]
        if not len(pts):
            return False
        new_lo, new_hi = lo.copy(), hi.copy()
        with precision(TIGHT_PRECISION):
            for k in pts.tolist():
                a, b = self._enclosure(chain, k)
                if not (a.is_finite() and b.is_finite()):
                    continue
                new_lo[k] = max(new_lo[k], lower_bound_float(a))
                new_hi[k] = min(new_hi[k], -lower_bound_float(-b))
        narrower = bool(((new_lo > lo) | (new_hi < hi)).any())
        chain.intervals = (new_lo, new_hi)
        return narrower

    def _enclosure(self, chain: Chain, k: int) -> tuple[arb, arb]:
        """Exact ``a <= b`` around point ``k``'s value after every step of ``chain``."""
        steps = chain.steps
        n, last, a, b = self.done.get(k, (0, None, arb(0), arb(0)))
        if n == 0 or not chain.holds(n, last):
            t = self._start(chain, k)
            n, a, b = 0, t.lower(), t.upper()
        for step in steps[n:]:
            a, b = self._advance(step, chain.eps, a, b)
        if steps:
            self.done[k] = (len(steps), steps[-1], a, b)
        return a, b

    def _start(self, chain: Chain, k: int) -> arb:
        """A ball around point ``k``'s start value: its exact ``t``, or the chain's start
        balls when it has them (the values after circle layers, known only as balls)."""
        if chain.start is None:
            return arb(chain.t[k])
        if self.starts is None:
            prec = max(TIGHT_PRECISION, chain.prec)  # the chain's: enough for its start
            with precision(prec):
                self.starts = chain.start_balls(prec)
        return self.starts[k]

    def _advance(self, step: FoldStep, eps: fmpq, a: arb, b: arb) -> tuple[arb, arb]:
        """The exact ends of an enclosure of ``f([a, b])``, ``f`` the step's scalar map
        (:func:`.interval.scalar_range_balls`, built once per step)."""
        known = self.maps.get(id(step))
        if known is None or known[0] is not step:
            known = (step, iv.scalar_range_balls(*step.scalar(eps)))
            self.maps[id(step)] = known
        ends = known[1](a, b)
        if ends is None:  # (cannot happen for k > 0)
            return arb(0, math.inf), arb(0, math.inf)
        return ends


SHADOW_RUNS = 4
"""Perturbed float64 runs beside the plain one (:class:`FloatShadow`)."""
SHADOW_ULPS = 4.0
"""Each perturbed run's LayerNorm outputs are scaled by ``1 + r`` per layer, ``r`` uniform
within this many ulps (a layer's own rounding: a few ulps)."""
SHADOW_SAFETY = 4.0
"""How many times their spread the values are widened by in the search (after 192 peel
layers on 300 random points in R^3, the exact values and PyTorch's float64 ones lay within
3.1 and 3.6 spreads of NumPy's, every point; the median, 0.5 and 0.2)."""
SHADOW_FLOOR = 2.0**-51
"""And by this fraction of the largest value: a few ulps of the next layer's rounding."""


class FloatShadow:
    """The chain's values as a float64 net computes them, and how far float64 may move them.

    The chain's float64 intervals enclose the exact values, rounded outwards at every
    operation of every layer: after about 200 layers their median width is 25 times the error
    NumPy actually makes (300 random points in R^3, ``k = 3``, against balls), so a
    search that keeps them apart gives up long before float64 does.  This
    runs the net's own layers (:func:`.fold.fold_layer`, the weights rounded as
    :mod:`lncapacity.floats` rounds them) in float64 from the projected values ``t`` (as
    the first layer's read), as NumPy does, and beside it :data:`SHADOW_RUNS` runs whose
    every LayerNorm output is perturbed by a few ulps at random (Monte Carlo arithmetic,
    as Verificarlo and CADNA estimate float error): their spread around the plain run is
    the size of the error any float64 implementation makes there, PyTorch's too, whose
    errors differ from NumPy's point by point.  A guide for the search, not a bound: the
    net is certified in exact arithmetic and checked in NumPy and PyTorch afterwards.
    """

    def __init__(self, chain: Chain) -> None:
        if chain.start is not None:
            raise ValueError("a float shadow runs from the projected values, not start balls")
        self.eps = to_float(chain.eps)
        self.t = np.array([to_float(q) for q in chain.t])
        self._reset()

    def _reset(self) -> None:
        zero = np.zeros_like(self.t)
        h = np.c_[self.t, zero, zero]
        self.rng = np.random.default_rng(0)
        self.h = np.stack([h] + [self._perturbed(h) for _ in range(SHADOW_RUNS)])
        self.read: tuple[fmpq, ...] = (fmpq(1), fmpq(0), fmpq(0))
        self.steps: list[FoldStep] = []

    def _perturbed(self, h: np.ndarray) -> np.ndarray:
        return h * (1 + SHADOW_ULPS * 2.0**-53 * self.rng.uniform(-1, 1, h.shape))

    def values(self, chain: Chain) -> tuple[np.ndarray, np.ndarray]:
        """Per point, after every step of ``chain``: its value as NumPy's float64 computes
        it, and the root mean square distance of the perturbed runs' values from it."""
        n = len(self.steps)
        if not chain.holds(n, self.steps[-1] if n else None):
            self._reset()
            n = 0
        with np.errstate(all="ignore"):
            for step in chain.steps[n:]:
                layer = fold_layer(self.read, step)
                W = np.array([[to_float(w) for w in row] for row in layer.W])
                b = np.array([to_float(v) for v in layer.b])
                self.h = layer_norm(matmul(self.h, W.T) + b, self.eps)
                self.h[1:] = self._perturbed(self.h[1:])
                self.read = read_vector(step.read)
                self.steps.append(step)
            p = matmul(self.h, np.array([to_float(a) for a in self.read]))
            return p[0], np.sqrt(((p[1:] - p[0]) ** 2).mean(axis=0))

    def enclosures(self, chain: Chain) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per point: its float64 value, and that widened by :data:`SHADOW_SAFETY` times its
        spread and :data:`SHADOW_FLOOR` of the largest value, after every step of ``chain``."""
        mid, spread = self.values(chain)
        with np.errstate(all="ignore"):
            w = SHADOW_SAFETY * spread + SHADOW_FLOOR * np.abs(mid).max()
        return mid, mid - w, mid + w


def _first_certified(
    chain: Chain,
    candidates: list[FoldStep],
    rs: Runs,
    labels: np.ndarray,
    y: Sequence[int] | None,
    done: Callable[[Runs], bool] | None = None,
) -> Runs | None:
    """Push the first candidate after which the runs are certain and ``done`` (by default:
    one run fewer); those runs, or None (nothing pushed).  From the float64 intervals only,
    or (``y`` given) from balls too: slow for large sets, as the balls replay every layer."""
    count = len(rs[1])
    for step in candidates:
        chain.push(step)
        after = _moved_runs(chain, rs, labels) or interval_runs(chain, labels)
        if after is None and y is not None:
            after = chain_runs(chain, y, labels)
        if after is not None and (len(after[1]) == count - 1 if done is None else done(after)):
            return after
        chain.pop()
    return None


def to_steps(
    scored: list[tuple[float, int, float, float, float]], p0: float, p1: float, eps: fmpq
) -> list[tuple[float, FoldStep]]:
    """Candidates ``(score, end, c, w, psi)``, found on values normalised to ``[0, 1]`` from
    ``end`` (0: ``p0``, 1: ``p1``, mirrored), as exact layers on the values themselves."""
    span = p1 - p0
    out = []
    slopes = tan(np.array([psi if end == 0 else -psi for _, end, _, _, psi in scored]))
    for (score, end, c, w, _), slope in zip(scored, slopes.tolist(), strict=True):
        # back to p: theta_p = atan((p - centre) / (w span)) is theta (end 0) or -theta
        centre = p0 + c * span if end == 0 else p1 - c * span
        out.append((score, _step(centre, w * span, slope, eps)))
    return out


def chain_runs(chain: Chain, y: Sequence[int], labels: np.ndarray) -> Runs | None:
    """:func:`interval_runs`, else :func:`certified_runs` in balls; None if undecided."""
    rs = interval_runs(chain, labels)
    if rs is not None:
        return rs
    slow = certified_runs(chain, y, labels)
    if slow is None:
        return None
    return np.concatenate(slow), np.cumsum([0] + [len(r) for r in slow[:-1]])


def _moved_runs(chain: Chain, before: Runs, labels: np.ndarray) -> Runs | None:
    """The runs after a layer, from the hulls of the runs before it; None if they do not tell.

    Each earlier run is taken whole: the interval hull of its points' intervals
    (rigorous, as in :func:`interval_runs`).  Sorted by hull midpoints, with
    neighbours of one label joined, the new runs are certain when every
    different-label neighbour's hull lies strictly above the one before.  Costs
    ``O(m)`` and a sort of the runs, not of the points.
    """
    lo, hi = chain.intervals
    order, starts = before
    m = len(order)
    if not (np.isfinite(lo).all() and np.isfinite(hi).all()):
        return None
    lens = np.diff(np.r_[starts, m])
    rlo = np.minimum.reduceat(lo[order], starts)
    rhi = np.maximum.reduceat(hi[order], starts)
    k = np.argsort(rlo / 2 + rhi / 2, kind="stable")
    rlo, rhi, lens, first = rlo[k], rhi[k], lens[k], starts[k]
    lab = labels[order[first]]
    new = np.r_[True, lab[1:] != lab[:-1]]
    heads = np.nonzero(new)[0]
    tops = np.maximum.reduceat(rhi, heads)
    bottoms = np.minimum.reduceat(rlo, heads)
    if not (tops[:-1] < bottoms[1:]).all():
        return None
    pos = np.r_[0, np.cumsum(lens[:-1])]  # where each earlier run now starts
    gather = np.arange(m) - np.repeat(pos - first, lens)
    return order[gather], pos[heads]


def interval_runs(chain: Chain, labels: np.ndarray) -> Runs | None:
    """The label runs from the chain's float64 intervals, each certainly below the next.

    Sorted by interval midpoints; a run's top is the largest upper end of its
    intervals, its bottom the smallest lower end.  The intervals enclose the
    exact values (:func:`~lncapacity.interval.scalar_range`), so when
    every top is below the next bottom (a float comparison of rigorous bounds,
    decided exactly) the runs are certain.  None when they do not decide.
    """
    lo, hi = chain.intervals
    if not (np.isfinite(lo).all() and np.isfinite(hi).all()):
        return None
    order = np.argsort(lo / 2 + hi / 2, kind="stable")
    lab = labels[order]
    starts = np.r_[0, np.nonzero(lab[1:] != lab[:-1])[0] + 1]
    tops = np.maximum.reduceat(hi[order], starts)
    bottoms = np.minimum.reduceat(lo[order], starts)
    if not (tops[:-1] < bottoms[1:]).all():
        return None
    return order, starts


def certified_runs(chain: Chain, y: Sequence[int], labels: np.ndarray | None = None) -> Runs | None:
    """The label runs of the chain's values, each certainly below the next; None if unsure.

    First from the float64 intervals (:func:`interval_runs`); if they cannot
    tell, from balls, the precision raised (to :data:`MAX_PRECISION`) while two
    neighbouring runs overlap.  Within a run the order is irrelevant.
    """
    rs = interval_runs(chain, np.asarray(y) if labels is None else labels)
    if rs is not None:
        return np.split(rs[0], rs[1][1:])
    while True:
        with precision(chain.prec):
            vals = chain.values
            order = sorted(range(len(vals)), key=lambda k: vals[k].mid())
            runs: list[list[int]] = []
            for k in order:
                if runs and y[runs[-1][0]] == y[k]:
                    runs[-1].append(k)
                else:
                    runs.append([k])
            tops = [max(vals[k].upper() for k in r) for r in runs]
            bottoms = [min(vals[k].lower() for k in r) for r in runs]
            if all(t < b for t, b in zip(tops[:-1], bottoms[1:], strict=True)):
                return [np.asarray(r) for r in runs]
        if chain.prec >= MAX_PRECISION:
            return None
        chain.refine()


def _midpoints(chain: Chain) -> np.ndarray:
    """Float64 values of the chain (interval midpoints, else ball midpoints): a guide only."""
    lo, hi = chain.intervals
    p = lo / 2 + hi / 2
    if np.isfinite(p).all():
        return p
    with precision(chain.prec):
        return np.array([float(v.mid()) for v in chain.values])


def _candidates(chain: Chain, rs: Runs, keep: int = 8) -> list[FoldStep]:
    """The ``keep`` best admissible folds of this layer (both ends), best first."""
    p = _midpoints(chain)
    order, starts = rs
    lo = np.minimum.reduceat(p[order], starts)
    hi = np.maximum.reduceat(p[order], starts)
    p0, p1 = lo[0], hi[-1]
    span = p1 - p0
    scored = []
    for end in (0, 1):
        # normalise to [0, 1], folding from the left end (end 1: mirrored)
        if end == 0:
            xl, xh = (lo - p0) / span, (hi - p0) / span
        else:
            xl, xh = (p1 - hi[::-1]) / span, (p1 - lo[::-1]) / span
        score, c, w, psi = _search(xl, xh)
        best = best_first(score)[:keep]
        scored += [(score[k], end, c[k], w[k], psi[k]) for k in best if np.isfinite(score[k])]
    scored.sort(key=lambda s: s[0], reverse=True)
    return [step for _, step in to_steps(scored[:keep], p0, p1, chain.eps)]


def _search(xl: np.ndarray, xh: np.ndarray) -> tuple[np.ndarray, ...]:
    with np.errstate(all="ignore"):  # degenerate candidates score -inf
        return _scores(xl, xh)


def _scores(xl: np.ndarray, xh: np.ndarray) -> tuple[np.ndarray, ...]:
    """Grid search for folds of run 0 onto run 2, on run bounds ``xl <= xh`` in [0, 1].

    Returns per candidate the score and the parameters ``c``, ``w = sqrt(3)
    beta``, ``psi`` in these coordinates.  The score is the soft minimum
    ``(sum_k g_k^-8)^(-1/8)`` of the different-label gaps ``g_k`` after the fold,
    as fractions of the amplitude (``-inf`` if inadmissible): the smallest gap
    alone is short-sighted (the other gaps drift down to it, layer after layer).
    """
    r = len(xl)
    f, a, b0, b1, a1 = xl[0], xh[0], xl[1], xh[1], xl[2]
    between = [(a + a1) / 2, (f + a1) / 2, (a + b0) / 2, (b1 + a1) / 2]
    cs = np.unique(np.r_[np.linspace(b0, b1, CENTRES - len(between)), between])
    opening = min(b1 - a, xl[3] - b1) if r > 3 else b1 - a  # proofs/runs_fold.md
    ws = np.r_[WIDTHS * (xh[2] - f), opening * OPENING]
    C, W = (g.ravel() for g in np.meshgrid(cs, ws, indexing="ij"))
    near = min(r, 4)  # the runs the fold moves; beyond, the watched far gaps
    zl = (xl[None, :near] - C[:, None]) / W[:, None]  # candidate x run: tan theta
    zh = (xh[None, :near] - C[:, None]) / W[:, None]
    tl, th = atan(zl), atan(zh)
    lo_psi = (th[:, 0] + th[:, 1]) / 2
    hi_psi = (tl[:, 1] + tl[:, 2]) / 2
    if r > 3:
        hi_psi = np.minimum(hi_psi, (tl[:, 0] + tl[:, 3]) / 2)
    psi = lo_psi[:, None] + (hi_psi - lo_psi)[:, None] * ANGLES[None, :]  # candidate x angle
    # the new values cos(theta - psi) at both ends of every run: candidate x angle x run
    sp, cp = (v[..., None] for v in sincos(psi))
    (cl, sl), (ch, sh) = cos_sin_atan(zl), cos_sin_atan(zh)
    vl = cl[:, None, :] * cp + sl[:, None, :] * sp
    vh = ch[:, None, :] * cp + sh[:, None, :] * sp
    # the new label gaps: R_2 above R_1 + R_3 above R_4 above R_5 ...
    gaps = [np.minimum(vl[..., 1], vh[..., 1]) - np.maximum(vh[..., 0], vl[..., 2])]
    if r > 3:
        gaps.append(np.minimum(vl[..., 0], vh[..., 2]) - vl[..., 3])
    smallest = np.minimum.reduce(gaps)
    if r > 4:
        # far gaps cos(th_k - psi) - cos(tl_k+1 - psi): the differences first, then every angle
        k = _watched(xl, xh)
        (ch, sh) = cos_sin_atan((xh[None, k] - C[:, None]) / W[:, None])
        (cl, sl) = cos_sin_atan((xl[None, k + 1] - C[:, None]) / W[:, None])
        dc, ds = ch - cl, sh - sl
        far = dc[:, None, :] * cp + ds[:, None, :] * sp
        smallest = np.minimum(smallest, far.min(axis=-1))
    ok = (hi_psi > lo_psi)[:, None] & (smallest > 0)
    # soft minimum (sum g^-8)^(-1/8), scaled by the smallest gap against overflow
    t = np.where(ok, smallest, 1.0)[..., None]
    total = sum(eighth_power(t[..., 0] / g) for g in gaps)
    if r > 4:
        total = total + eighth_power(np.divide(t, far, out=far)).sum(axis=-1)
    score = np.where(ok, t[..., 0] * inverse_eighth_root(total), -np.inf)
    K = psi.shape[1]
    return score.ravel(), np.repeat(C, K), np.repeat(W, K), psi.ravel()


def _watched(xl: np.ndarray, xh: np.ndarray, count: int = WATCHED) -> np.ndarray:
    """The runs ``k >= 3`` whose gap to run ``k + 1`` the score watches.

    All of them up to ``2 count``; beyond, the ``count`` smallest gaps now and
    ``count`` evenly spread (where the map compresses most): the fold maps them
    smoothly, so these are the candidates for the smallest gaps after it.  Only
    the choice among candidates depends on this; every gap is certified.
    """
    k = np.arange(3, len(xl) - 1)
    return watch(k, xl[k + 1] - xh[k], count)


def watch(t: np.ndarray, gaps: np.ndarray, count: int = WATCHED) -> np.ndarray:
    """Of the gaps ``t`` (``gaps`` their sizes now): all up to ``2 count``, else the
    ``count`` smallest and ``count`` spread evenly (``_watched``)."""
    if len(t) <= 2 * count:
        return t
    smallest = t[np.argsort(gaps, kind="stable")[:count]]
    return np.union1d(smallest, t[np.linspace(0, len(t) - 1, count).astype(int)])


def cos_sin_atan(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``cos(atan z) = 1 / sqrt(1 + z^2)`` and ``sin(atan z) = z cos(atan z)``: a square root,
    no angle."""
    c = 1 / np.sqrt(1 + z * z)
    return c, z * c


def eighth_power(q: np.ndarray) -> np.ndarray:
    """``q ** 8`` by squaring (``**`` with a float exponent is several times slower)."""
    q = q * q
    q = q * q
    return q * q


def inverse_eighth_root(q: np.ndarray) -> np.ndarray:
    """``q ** (-1/8)`` by three square roots (``**`` with a float exponent is NumPy's vector
    ``pow``, whose last bit depends on the processor)."""
    return 1 / np.sqrt(np.sqrt(np.sqrt(q)))


def best_first(score: np.ndarray) -> np.ndarray:
    """The indices of ``score`` from the largest score down, ties in index order (a stable
    sort: NumPy's default sort orders ties differently on different processors)."""
    return np.argsort(-score, kind="stable")


def _step(centre: float, w: float, slope: float, eps: fmpq) -> FoldStep:
    """The exact layer realising ``theta = atan((p - centre) / w)``, read at the angle ``psi``
    of ``slope = tan psi``.

    LayerNorm's ``eps`` adds ``eps / (2 S^2)`` to ``beta^2`` under the square root
    only; ``beta`` and the read are set so that the effective offset is ``w /
    sqrt(3)`` and the effective angle ``psi`` (proofs/runs_fold.md).
    """
    beta_eff = w / SQRT3
    scale = power_of_two_near(_q(2 * max(1.0, math.sqrt(float(eps))) / beta_eff))
    s = float(scale)
    beta = math.sqrt(beta_eff * beta_eff - float(eps) / (2 * (s * s)))
    gamma = SQRT3 * (beta / beta_eff) * slope
    return FoldStep(_q(centre), _q(beta), scale, (fmpq(1), _q(gamma)), kind="runs")


def _q(x: float) -> fmpq:
    """A float as the exact dyadic rational it is."""
    return fmpq(*float(x).as_integer_ratio())
