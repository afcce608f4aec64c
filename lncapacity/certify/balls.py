"""The certificate in ball arithmetic (python-flint ``arb``): each point's exact readout
scores enclosed at rising precision until its margin is decided (:func:`decide` for one point,
``_certify_chunk`` for many), and the exact backend of ``LNNet.predict``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from flint import arb, fmpq

from .. import interval as iv
from ..algebraic import number_ball, precision_cap
from ..arith import exact, lower_bound_float, precision, shown, to_float
from ..errors import InputError
from ..model import LNNet, register_predictor
from .chains import _algebraic, scalar_chain

MAX_PRECISION = 1 << 16

START_PRECISION = 128
"""Bits of the first evaluation of every point."""

MAX_BALL_BITS = 1 << 31
"""The most bits the balls of one evaluation may hold (256 MiB): a net whose widest layer has
``w`` features and ``r`` weights that are not dyadic (whose balls take the full precision) is
evaluated at no more than ``MAX_BALL_BITS / (2 w + r)`` bits (:func:`precision_limit`; a point
still undecided there is reported undecided), so a wide net at a zero margin cannot ask for
gigabytes."""

ESCALATION = 16
"""Bits a chunk of points may spend in all its evaluations (each counted at its precision):
``ESCALATION`` times the input's own precision per point (``_own_precision``: the
starting precision, or twice the bits of the largest number of the net and the points, plus
two bits a layer), and one climb to the precision limit, so that the work is proportional to
the input's size.  A point whose precision would exceed what is left is reported at the
precision it reached (undecided, unless decided there), never certified on credit."""


def precision_limit(net: LNNet[fmpq], bits: int) -> int:
    """``bits``, lowered so that one evaluation's balls hold at most :data:`MAX_BALL_BITS`: the
    two widest layers' values and the weights that are not dyadic rationals (a dyadic weight's
    ball is exact, of its own bits), at that precision; for algebraic weights also their
    programs' balls at most :data:`~lncapacity.algebraic.MAX_PROGRAM_BITS`.  Never below the
    starting precision."""
    maps = (*net.layers, net.readout)
    try:
        full = sum(1 for a in maps for w in itertools.chain(a.b, *a.W) if w.q & (w.q - 1))
    except AttributeError:  # algebraic weights: their programs' cap
        full = 0
    size = 2 * max(net.input_dim, *(len(a.b) for a in maps)) + full
    return max(START_PRECISION, min(precision_cap(net, bits), MAX_BALL_BITS // size))


def tied_classes(net: LNNet[fmpq]) -> dict[int, tuple[int, ...]]:
    """For each class, the other classes with exactly its readout row and bias: their scores
    are equal at every input, so such a point's margin is exactly 0, provably, at any
    precision.

    Rows are bucketed by the floats of their bias and three entries (equal numbers, equal
    floats), and compared exactly within a bucket, against at most :data:`TIE_GROUPS` distinct
    rows each (a tie not found is only not claimed): time proportional to the readout's
    size."""
    r = net.readout
    n = len(r.W[0]) if r.W else 0
    probe = sorted({0, n // 2, n - 1}) if n else []
    buckets: dict[tuple[float, ...], list[int]] = {}
    for c, (w, b) in enumerate(zip(r.W, r.b, strict=True)):
        buckets.setdefault((to_float(b), *(to_float(w[i]) for i in probe)), []).append(c)
    ties: dict[int, tuple[int, ...]] = {}
    for members in buckets.values():
        rows: list[list[int]] = []  # classes with one row, exactly
        for c in members:
            same = next((g for g in rows if (r.W[g[0]], r.b[g[0]]) == (r.W[c], r.b[c])), None)
            if same is not None:
                same.append(c)
            elif len(rows) < TIE_GROUPS:
                rows.append([c])
        for g in rows:
            ties.update({c: tuple(j for j in g if j != c) for c in g if len(g) > 1})
    return ties


def _own_precision(net: LNNet[fmpq], jobs: Sequence[tuple[int, Sequence[fmpq], int]]) -> int:
    """The precision the input itself asks for: the starting precision, or twice the bits of
    the largest number of ``net`` and of the points of ``jobs`` (a margin of exact data of
    ``b`` bits may take about that many to resolve), plus two bits a layer (balls lose about a
    bit a layer in the generic forward pass: a depth-10,000 LN-G net needs thousands of bits
    at every point).  Algebraic weights' bits are not counted (capped on their own)."""
    maps = (*net.layers, net.readout)
    try:
        bits = max((w.height_bits() for a in maps for w in itertools.chain(a.b, *a.W)), default=0)
        bits = max([bits, *(v.height_bits() for _, x, _ in jobs for v in x)])
    except AttributeError:  # algebraic weights
        bits = 0
    return max(START_PRECISION, 2 * bits) + 2 * net.depth


TIE_GROUPS = 8
"""Distinct rows :func:`tied_classes` compares a row with, in one bucket."""


def _certify_chunk(
    task: tuple[LNNet[fmpq], Sequence[tuple[int, Sequence[fmpq], int]], int, bool],
) -> list[tuple[int, bool, float, int, tuple[float, float], list[float], list[float]]]:
    """Per job: (index, certified, margin, precision, margin interval, score lower and upper
    bounds, empty unless asked for); the precision adapts from point to point.

    A point whose class ties another exactly (:func:`tied_classes`) is decided at once: not
    certified (its margin interval ends at 0).  The precision work is bounded
    (:data:`ESCALATION`): beyond it a point is reported at the precision it reached."""
    net, jobs, max_precision, want_scores = task
    scores = _evaluator(net)
    tied = tied_classes(net)
    prec = _start_precision(net)
    budget = len(jobs) * ESCALATION * _own_precision(net, jobs) + 2 * max_precision
    spent = 0
    out = []
    for i, (k, x, c) in enumerate(jobs):
        floor = START_PRECISION * (len(jobs) - 1 - i)  # kept for the points after this one
        if spent + prec + floor > budget:
            prec = START_PRECISION
        ties = tied.get(c, ())
        if ties and len(ties) == len(net.classes) - 1 and not want_scores:
            # every other score equals this one, exactly: margin 0, nothing to evaluate
            out.append((k, False, -math.inf, prec, (0.0, 0.0), [], []))
            continue
        while True:
            spent += prec
            higher = min(2 * prec, max_precision)
            with precision(prec):
                z = scores(x, prec)
                diffs = [z[c] - zj for j, zj in enumerate(z) if j != c and j not in ties]
                right = not ties and all(d > 0 for d in diffs)
                if (
                    right
                    or ties
                    or any(d < 0 for d in diffs)
                    or prec >= max_precision
                    or spent + higher + floor > budget
                ):
                    zero = [0.0] if ties else []  # z_c - z_j is exactly 0 for a tied j
                    lo = min([lower_bound_float(d) for d in diffs] + zero, default=math.inf)
                    hi = min([upper_bound_float(d) for d in diffs] + zero, default=math.inf)
                    zlo = [lower_bound_float(v) for v in z] if want_scores else []
                    zhi = [upper_bound_float(v) for v in z] if want_scores else []
                    margin = lo if right else -math.inf
                    out.append((k, right, margin, prec, (lo, hi), zlo, zhi))
                    break
            prec = higher
    return out


def exact_scores(
    net: LNNet[fmpq], X: Sequence[Sequence[fmpq]], bits: int = 128
) -> tuple[np.ndarray, np.ndarray]:
    """Float64 bounds ``(lo, hi)`` on every exact score of the rows of ``X``, from ``arb``
    balls at ``bits`` bits: each within about one float64 ulp of the exact score."""
    scores = _evaluator(net.folded())
    lo = np.empty((len(X), len(net.classes)))
    hi = np.empty_like(lo)
    with precision(bits):
        for i, x in enumerate(X):
            z = scores(tuple(exact(v) for v in x), bits)
            lo[i] = [lower_bound_float(v) for v in z]
            hi[i] = [upper_bound_float(v) for v in z]
    return lo, hi


def upper_bound_float(x: arb) -> float:
    """A float that is ``>=`` every point of the ball ``x`` (``inf`` if unbounded)."""
    return -lower_bound_float(-x)


def decide(net: LNNet[fmpq], x: Sequence[object], max_precision: int = MAX_PRECISION) -> int:
    """The index of the class the exact net predicts for ``x``, proven by ball arithmetic.

    Raises :class:`ArithmeticError` when ``x`` is on (or within rounding of) a
    decision boundary at ``max_precision`` bits.
    """
    try:
        row = tuple(exact(v) for v in x)
    except (ValueError, TypeError) as e:
        raise InputError(f"cannot classify {shown(list(x))}: {e}") from None
    if len(row) != net.input_dim:
        raise InputError(f"the net takes {net.input_dim} features, got {len(row)}")
    net = net.folded()
    scores = _evaluator(net)
    tied = tied_classes(net)
    max_precision = precision_limit(net, max_precision)
    prec = _start_precision(net)
    while True:
        with precision(prec):
            z = scores(row, prec)
            for c, zc in enumerate(z):
                ties = tied.get(c, ())
                if all(zc > zj for j, zj in enumerate(z) if j != c and j not in ties):
                    if ties:  # the largest score is shared, exactly: no precision decides
                        raise ArithmeticError(
                            f"cannot decide the argmax for {shown(list(x))}: classes "
                            f"{net.classes[c]!r} and {net.classes[ties[0]]!r} have the same "
                            "readout row, a tie at every input"
                        )
                    return c
        if prec >= max_precision:
            raise ArithmeticError(f"cannot decide the argmax for {list(x)} at {prec} bits")
        prec *= 2


def _predict(net: LNNet[fmpq], X: Any, backend: str) -> list[int]:
    """``LNNet.predict(X, "exact")``: each row's class index by :func:`decide`."""
    return [decide(net, row) for row in X]


register_predictor("exact", _predict)


def _start_precision(net: LNNet[fmpq]) -> int:
    # float-faithful nets need few bits at any depth; a net that needs more (the
    # paper's construction loses a few bits per layer) finds out on its first point,
    # and the precision reached carries over to the next points
    return START_PRECISION


Scores = Callable[[Sequence[fmpq], int], list[arb]]


def _evaluator(net: LNNet[fmpq]) -> Scores:
    """``(x, prec) -> readout balls``, to be called inside ``precision(prec)``.

    The scalar form of :func:`~lncapacity.certify.chains.scalar_chain` when every layer has
    rank at most one (a few ball operations per layer), else the model's generic forward pass.
    """
    algebraic = _algebraic(net)
    chain = None if algebraic else scalar_chain(net)
    cache: dict[int, Any] = {}
    if chain is None:
        to_ball = number_ball if algebraic else arb

        def generic(x: Sequence[fmpq], prec: int) -> list[arb]:
            if prec not in cache:
                # algebraic weights (lncapacity.algebraic): balls of their radical
                # programs at this precision, tighter as the precision rises; one
                # precision is kept (the balls of a wide net are most of the memory)
                cache.clear()
                cache[prec] = net.map(to_ball)
            return cache[prec].forward([arb(v) for v in x], arb.sqrt)

        return generic
    first, steps, bias = chain

    def scalar(x: Sequence[fmpq], prec: int) -> list[arb]:
        if prec not in cache:
            cache.clear()
            s0, g, k, alpha, beta = steps[-1]
            cache[prec] = (
                [iv.scalar_range_balls(s0, g, k, b[0], a[0]) for s0, g, k, a, b in steps[:-1]],
                (arb(s0), arb(g), arb(k), [arb(a) for a in alpha], [arb(b) for b in beta]),
                [arb(b) for b in bias],
            )
        inner, (s0, g, k, alpha, beta), r = cache[prec]
        s = arb(sum((w * v for w, v in zip(first, x, strict=True)), fmpq(0)))
        lo, hi = s.lower(), s.upper()
        for step in inner:  # exact ends, mapped by each layer's range: no dependency loss
            ends = step(lo, hi)
            if ends is None:  # not finite (cannot happen for k > 0): decides nothing
                return [arb(0, math.inf) for _ in alpha]
            lo, hi = ends
        t = lo.union(hi) - s0
        root = (g * t * t + k).sqrt()
        return [(a * t + b) / root + ri for a, b, ri in zip(alpha, beta, r, strict=True)]

    return scalar
