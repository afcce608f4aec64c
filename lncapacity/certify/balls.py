"""The certificate in ball arithmetic (python-flint ``arb``): each point's exact readout
scores enclosed at rising precision until its margin is decided (:func:`decide` for one point,
``_certify_chunk`` for many), and the exact backend of ``LNNet.predict``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from flint import arb, fmpq

from .. import interval as iv
from ..algebraic import number_ball, precision_cap
from ..arith import exact, lower_bound_float, precision, shown
from ..errors import InputError
from ..model import LNNet, register_predictor
from .chains import _algebraic, scalar_chain

MAX_PRECISION = 1 << 16


def _certify_chunk(
    task: tuple[LNNet[fmpq], Sequence[tuple[int, Sequence[fmpq], int]], int, bool],
) -> list[tuple[int, bool, float, int, tuple[float, float], list[float], list[float]]]:
    """Per job: (index, certified, margin, precision, margin interval, score lower and upper
    bounds, empty unless asked for); the precision adapts from point to point."""
    net, jobs, max_precision, want_scores = task
    scores = _evaluator(net)
    prec = _start_precision(net)
    out = []
    for k, x, c in jobs:
        while True:
            with precision(prec):
                z = scores(x, prec)
                diffs = [z[c] - zj for j, zj in enumerate(z) if j != c]
                right = all(d > 0 for d in diffs)
                if right or any(d < 0 for d in diffs) or prec >= max_precision:
                    lo = min((lower_bound_float(d) for d in diffs), default=math.inf)
                    hi = min((upper_bound_float(d) for d in diffs), default=math.inf)
                    zlo = [lower_bound_float(v) for v in z] if want_scores else []
                    zhi = [upper_bound_float(v) for v in z] if want_scores else []
                    margin = lo if right else -math.inf
                    out.append((k, right, margin, prec, (lo, hi), zlo, zhi))
                    break
            prec = min(2 * prec, max_precision)
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
    max_precision = precision_cap(net, max_precision)
    prec = _start_precision(net)
    while True:
        with precision(prec):
            z = scores(row, prec)
            for c, zc in enumerate(z):
                if all(zc > zj for j, zj in enumerate(z) if j != c):
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
    return 128


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
                # programs at this precision, tighter as the precision rises
                cache[prec] = net.map(to_ball)
            return cache[prec].forward([arb(v) for v in x], arb.sqrt)

        return generic
    first, steps, bias = chain

    def scalar(x: Sequence[fmpq], prec: int) -> list[arb]:
        if prec not in cache:
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
