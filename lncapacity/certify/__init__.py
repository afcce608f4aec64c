"""The certificate: a proof, by rigorous ball arithmetic, that a net classifies every point.

For each point ``x`` with label ``c`` the exact forward pass of the net is
enclosed in python-flint ``arb`` balls (every operation rounded outwards, so
the true value of each readout score lies in its ball); the point is
*certified* (certainly right) when every difference ``z_c - z_j`` (``j != c``)
is a ball of strictly positive numbers, and its lower end is the certified
margin; it is *certainly wrong* when some difference is strictly negative, and
*undecided* when the precision limit is reached first (a point on, or within
rounding of, a decision boundary: never called right).  Precision starts at 128
bits and doubles until every point is decided or the limit is reached (within a
chunk of points the precision reached carries over); no floating-point comparison
is involved.  For scalar chains (the constructions' nets) every layer but the last
maps exact ends to its exact range (:func:`.interval.scalar_range_balls`), so the balls lose no bits
per layer to dependency and deep nets certify at the starting precision.

Nets that are no scalar chain (trained nets: every layer of full rank) first
go through :func:`~lncapacity.certify.intervals.interval_pass`, float64 interval arithmetic
with every operation rounded outwards (:mod:`lncapacity.interval`, rigorous by
proofs/interval_rounding.md), vectorised over all points; it decides nearly
every point, and the others are redone in balls.

This package depends on the model only: it shares no code with the
constructions, so :func:`certify` is an independent check of what they built.

**Modules**, one per idea, each importing only from those below it
(``[tool.importlinter]`` in pyproject.toml):

* :mod:`~lncapacity.certify.balls`: the certificate in ``arb`` balls at rising precision
  (:func:`~lncapacity.certify.balls.decide`, the exact backend of ``LNNet.predict``);
* :mod:`~lncapacity.certify.chains` (scalar chains: the constructions' nets as an exact
  scalar recurrence, and their interval pass) and :mod:`~lncapacity.certify.intervals` (the
  float64 interval passes of any net, the grouped one for LN-G layers in balls by BLAS);
* :mod:`~lncapacity.certify.theorems`: LN-G step and block nets certified by their margin
  theorems in ``O(m log m)``, from the weights alone (proofs/ln_g_steps.md Theorem 8,
  proofs/ln_g_depth.md Theorem 5);
* :mod:`~lncapacity.certify.verdicts`: the verdicts, per point and for the point set.

:func:`certify` itself is here, and what the rest of the package, the tests, the benchmarks
and the proofs use is importable from ``lncapacity.certify`` itself.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from contextlib import closing
from typing import Any

import numpy as np
from flint import fmpq

from ..cluster import mapper
from ..data import PointSet, points_from_arrays
from ..errors import InputError
from ..interval import default_float_mode
from ..model import LNNet
from . import spread
from .balls import MAX_PRECISION, decide, exact_scores, precision_limit, upper_bound_float
from .balls import _evaluator as _evaluator
from .chains import _algebraic, _rank_one_tail, rank_one, scalar_chain, scalar_interval_pass
from .intervals import (
    GROUPED_BLOCK,
    GROUPED_READOUT,
    GROUPED_TASK,
    INTERVAL_CHUNK,
    NORMAL_FLOOR,
    BallMap,
    feature_order,
    interval_layers,
    interval_pass,
)
from .intervals import _ball_affine as _ball_affine
from .intervals import _ball_norm as _ball_norm
from .intervals import _grouped_interval_pass as _grouped_interval_pass
from .intervals import _margins as _margins
from .intervals import _norm_constants as _norm_constants
from .theorems import by_theorem
from .verdicts import THEOREM_PRECISION, Certificate, PointResult


def certify(
    net: LNNet[fmpq],
    X: Any,
    y: Any = None,
    *,
    max_precision: int = MAX_PRECISION,
    workers: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    intervals: bool | None = None,
    scores: bool = False,
    scheduler: str | None = None,
    theorems: bool = True,
) -> Certificate:
    """Decide, point by point, whether ``net`` predicts ``y[k]`` for ``X[k]``.

    Each point is *certainly right* (certified: its margin ball is positive), *certainly
    wrong* (some other score is certainly larger) or *undecided* at ``max_precision`` bits (a
    point on, or within rounding of, a decision boundary), with an interval enclosing its
    margin.  Never raises for a wrong net.  Re-certifying a saved net from scratch is what
    ``lncapacity verify`` does.

    LN-G step and block nets (``build(..., arch="ln-g")``, depth 1 and 2; recognised from
    their weights) are decided by their margin theorems first
    (:func:`~lncapacity.certify.theorems.by_theorem`, ``O(m log m)``; ``theorems=False``
    skips them): those points get ``precision``
    :data:`~lncapacity.certify.verdicts.THEOREM_PRECISION` (0) and margins that are true lower
    bounds, usually a little below the generic pass's; the certificate names the theorem
    (:attr:`~lncapacity.certify.verdicts.Certificate.theorem`) and has no score bounds.  The
    points the theorem leaves undecided, and every point of other nets, go through what follows.

    Nets whose layers are all rank one (the constructions') go through
    :func:`~lncapacity.certify.chains.scalar_chain` in ``arb`` balls.  Other nets (trained
    ones) first go through one vectorised pass of float64 interval arithmetic rounded outwards
    (:mod:`lncapacity.interval`; rigorous, proofs/interval_rounding.md), which
    decides nearly every point; the rest are redone in ``arb`` balls with rising
    precision.  LayerNorm gains and biases are folded first (:meth:`LNNet.folded`, exact).

    Parameters
    ----------
    net
        The net, with exact weights (built, loaded or imported).
    X
        A :class:`~lncapacity.data.PointSet` (then ``y`` is omitted) or points; coordinates
        are read exactly.
    y
        The labels of the points in ``X``.
    max_precision
        The most bits a ball may take before a point is called undecided.
    workers
        Processes for the interval pass (in spans of points) and the ``arb`` part (in chunks
        of points): :mod:`~lncapacity.certify.spread`, the same certificate whatever runs
        them (default: every core, for large jobs only).
    progress
        Called as ``progress(done, total)`` as points are decided.
    intervals
        Force the float64 interval pass on (True) or off (False); default: on for nets that
        are not rank one, with layers and more than a few points.
    scores
        Also bound every exact score
        (:attr:`~lncapacity.certify.verdicts.Certificate.scores`; the interval pass always
        does, ``arb`` points only when asked, as it costs time).  Not when a margin theorem
        decides: it bounds margins, not scores (``scores`` is None then; the float reports
        give no ulp figures).
    scheduler
        Run the spans and chunks on a Dask cluster instead: ``"local:N"`` or a scheduler's
        address (:mod:`lncapacity.cluster`).
    theorems
        Decide the nets a margin theorem covers by it first (the default); False: the
        generic passes alone (tighter margins, a cost quadratic in the points for LN-G nets).

    Returns
    -------
    Certificate
        Every point's verdict and margin interval, the counts and the smallest certified
        margin.

    Raises
    ------
    InputError
        When the points do not fit the net: another dimension, or a label that is not one
        of the net's classes.

    Examples
    --------
    >>> import lncapacity
    >>> X = [[0, 0], [0, 1], [1, 0], [1, 1]]
    >>> y = [0, 1, 1, 0]
    >>> net = lncapacity.build(X, y)
    >>> cert = lncapacity.certify(net, X, y)
    >>> cert.all_certified, cert.certified, cert.precision
    (True, 4, 128)
    >>> [p.verdict for p in lncapacity.certify(net, X, [1, 0, 1, 0]).points]
    ['wrong', 'wrong', 'right', 'right']

    A saved net, verified from scratch:

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "xor.lnnet.json")
    >>> lncapacity.save(net, path)
    >>> lncapacity.certify(lncapacity.load(path), X, y).all_certified
    True
    """
    points = X if isinstance(X, PointSet) else points_from_arrays(X, y)
    _check_compatible(net, points)
    net = net.folded()
    max_precision = precision_limit(net, max_precision)
    labels = [net.classes.index(points.y[k]) for k in range(points.m)]
    k_cls = len(net.classes)
    scores_lo = np.full((points.m, k_cls), -np.inf)
    scores_hi = np.full((points.m, k_cls), np.inf)
    results: list[PointResult] = []
    todo = list(range(points.m))
    theorem = None
    algebraic = _algebraic(net)  # once: it looks at every weight
    if theorems and todo and not algebraic and default_float_mode():
        results, todo, theorem = _by_theorem(net, points, labels)
        if progress and theorem:
            progress(len(results), points.m)
    chain = None if algebraic else scalar_chain(net)
    split = None if chain is not None or algebraic else _rank_one_tail(net)
    if intervals is None:
        intervals = (
            net.depth > 0  # an affine map alone is cheap in balls, and its margins tight
            and not algebraic  # algebraic weights: balls only
            and len(todo) * (net.depth + 1) >= INTERVAL_WORK
        )
    rest = todo  # the points no theorem decided; the passes below index them from 0
    X_rest = [points.X[k] for k in rest] if theorem else points.X
    labels_rest = [labels[k] for k in rest] if theorem else labels
    n = len(rest)
    plan = spread.Plan(net, chain, split, X_rest, labels_rest, max_precision, scores)
    cpu = os.cpu_count() or 1
    chosen = workers is not None or scheduler is not None  # else: every core for large work
    todo = list(range(n))
    with mapper(workers or cpu, scheduler) as run:
        if intervals and todo and default_float_mode():
            spans = spread.spans(net, n)
            most = len(spans) if chosen or spread.work(net, n) >= spread.SPREAD_WORK else 1
            mlo, mhi = np.empty(n), np.empty(n)
            zlo, zhi = np.empty((n, k_cls)), np.empty((n, k_cls))
            decided = len(results)
            with closing(run(spread.interval_span, spans, plan, most)) as parts:
                for (a, b), part in zip(spans, parts, strict=True):
                    mlo[a:b], mhi[a:b], zlo[a:b], zhi[a:b] = part
                    decided += int(np.count_nonzero((mlo[a:b] > 0) | (mhi[a:b] < 0)))
                    if progress:
                        progress(decided, points.m)
            scores_lo[rest], scores_hi[rest] = zlo, zhi
            todo = []
            for i, (lo, hi) in enumerate(zip(mlo.tolist(), mhi.tolist(), strict=True)):
                k = rest[i]
                if lo > 0:
                    results.append(PointResult(k, points.y[k], True, lo, 53, (lo, hi)))
                elif hi < 0:
                    results.append(PointResult(k, points.y[k], False, -math.inf, 53, (lo, hi)))
                else:
                    todo.append(i)
        chunks = [todo[i : i + CHUNK] for i in range(0, len(todo), CHUNK)]
        most = len(chunks)
        if not chosen and len(todo) * (net.depth + 1) <= PARALLEL_WORK:
            most = 1
        if algebraic:  # each process would evaluate the weights' programs again
            most = 1
        with closing(run(spread.ball_chunk, chunks, plan, max(most, 1))) as parts:
            for part in parts:
                for i, ok, margin, prec, interval, zlo_i, zhi_i in part:
                    k = rest[i]
                    results.append(PointResult(k, points.y[k], ok, margin, prec, interval))
                    if scores:
                        scores_lo[k], scores_hi[k] = zlo_i, zhi_i
                if progress:
                    progress(len(results), points.m)
    results.sort(key=lambda p: p.index)
    have_scores = not theorem and (scores or (intervals and not todo))
    return Certificate(
        tuple(results), (scores_lo, scores_hi) if have_scores else None, points.origins, theorem
    )


def _by_theorem(
    net: LNNet[fmpq], points: PointSet, labels: list[int]
) -> tuple[list[PointResult], list[int], str | None]:
    """The points a margin theorem decides (:func:`.theorems.by_theorem`), the others' indices
    and the theorem (None, and every point left, when ``net`` has none)."""
    got = by_theorem(net, points.X, labels)
    if got is None:
        return [], list(range(points.m)), None
    results, todo = [], []
    for k, (lo, hi) in enumerate(zip(got.lo.tolist(), got.hi.tolist(), strict=True)):
        if lo > 0:
            results.append(PointResult(k, points.y[k], True, lo, THEOREM_PRECISION, (lo, hi)))
        elif hi < 0:
            results.append(
                PointResult(k, points.y[k], False, -math.inf, THEOREM_PRECISION, (lo, hi))
            )
        else:
            todo.append(k)
    return results, todo, got.theorem if results else None


CHUNK = 32
PARALLEL_WORK = 20_000
"""Points times layers above which certification is spread over processes."""
INTERVAL_WORK = 64
"""Points times layers from which a net without a scalar chain gets the interval pass first."""


def _check_compatible(net: LNNet[fmpq], points: PointSet) -> None:
    if points.d != net.input_dim:
        raise InputError(
            f"{points.source}: points have {points.d} features, the net takes {net.input_dim}"
        )
    if unknown := sorted({label for label in points.y if label not in net.classes}, key=str):
        raise InputError(
            f"{points.source}: labels {unknown} are not classes of the net {list(net.classes)}"
        )


__all__ = [
    "CHUNK",
    "GROUPED_BLOCK",
    "GROUPED_READOUT",
    "GROUPED_TASK",
    "INTERVAL_CHUNK",
    "INTERVAL_WORK",
    "MAX_PRECISION",
    "NORMAL_FLOOR",
    "PARALLEL_WORK",
    "THEOREM_PRECISION",
    "BallMap",
    "Certificate",
    "PointResult",
    "by_theorem",
    "certify",
    "decide",
    "exact_scores",
    "feature_order",
    "interval_layers",
    "interval_pass",
    "rank_one",
    "scalar_chain",
    "scalar_interval_pass",
    "upper_bound_float",
]
