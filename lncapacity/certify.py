"""The certificate: a proof, by rigorous ball arithmetic, that a net classifies every point.

For each point ``x`` with label ``c`` the exact forward pass of the net is
enclosed in python-flint ``arb`` balls (every operation rounded outwards, so
the true value of each readout score lies in its ball); the point is
*certified* when every difference ``z_c - z_j`` (``j != c``) is a ball of
strictly positive numbers.  Its lower end is the certified margin.  Precision
starts near what the depth needs and doubles until every point is decided or
the limit is reached; no floating-point comparison is involved.

This module depends on the model only: it shares no code with the
constructions, so :func:`certify` is an independent check of what they built.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import dataclass
from typing import Any

from flint import arb, fmpq

from .arith import exact, json_float, lower_bound_float, precision, shown
from .data import PointSet, points_from_arrays
from .errors import InputError
from .model import Label, LNNet
from .parallel import imap

MAX_PRECISION = 1 << 16


@dataclass(frozen=True)
class PointResult:
    """The verdict on one point."""

    index: int
    label: Label
    certified: bool
    margin: float
    """A lower bound on ``z_label - max_other z`` (rounded down); ``inf`` with one
    class, ``-inf`` when undecided at the precision limit."""
    precision: int


@dataclass(frozen=True)
class Certificate:
    """Per-point certified margins for one net on one point set."""

    points: tuple[PointResult, ...]

    @property
    def certified(self) -> int:
        return sum(p.certified for p in self.points)

    @property
    def all_certified(self) -> bool:
        return self.certified == len(self.points)

    @property
    def min_margin(self) -> float:
        return min((p.margin for p in self.points), default=math.inf)

    @property
    def precision(self) -> int:
        return max((p.precision for p in self.points), default=0)

    @property
    def failures(self) -> list[PointResult]:
        return [p for p in self.points if not p.certified]

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": "lnnet-certificate/1",
            "arithmetic": "python-flint arb balls; margins are lower bounds, rounded down",
            "all_certified": self.all_certified,
            "certified": self.certified,
            "points": len(self.points),
            "min_margin": json_float(self.min_margin),
            "precision_bits": self.precision,
            "results": [
                {
                    "point": p.index,
                    "label": p.label,
                    "certified": p.certified,
                    "margin_lower": json_float(p.margin),
                    "precision_bits": p.precision,
                }
                for p in self.points
            ],
        }


def certify(
    net: LNNet[fmpq],
    X: Any,
    y: Any = None,
    *,
    max_precision: int = MAX_PRECISION,
    workers: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Certificate:
    """Certify that ``net`` predicts ``y[k]`` for every point ``X[k]``.

    ``X`` is a :class:`~lncapacity.data.PointSet` or points with labels ``y``;
    coordinates are read exactly.  Never raises for a wrong net: a point that is
    misclassified, or undecided at ``max_precision`` bits, is reported with
    ``certified=False``.  ``workers``: processes to use (default: all cores, for
    large jobs only).
    """
    points = X if isinstance(X, PointSet) else points_from_arrays(X, y)
    _check_compatible(net, points)
    jobs = [(k, points.X[k], net.classes.index(points.y[k])) for k in range(points.m)]
    if workers is None:
        workers = (os.cpu_count() or 1) if points.m * (net.depth + 1) > PARALLEL_WORK else 1
    chunks = [jobs[i : i + CHUNK] for i in range(0, len(jobs), CHUNK)]
    results: list[tuple[int, bool, float, int]] = []
    tasks = ((net, chunk, max_precision) for chunk in chunks)
    with closing(imap(_certify_chunk, tasks, min(workers, len(chunks)))) as parts:
        for part in parts:
            results += part
            if progress:
                progress(len(results), points.m)
    results.sort()
    return Certificate(
        tuple(PointResult(k, points.y[k], ok, margin, prec) for k, ok, margin, prec in results)
    )


CHUNK = 32
PARALLEL_WORK = 20_000
"""Points times layers above which certification is spread over processes."""


def _certify_chunk(
    task: tuple[LNNet[fmpq], Sequence[tuple[int, Sequence[fmpq], int]], int],
) -> list[tuple[int, bool, float, int]]:
    """(index, certified, margin, precision) per job; precision adapts from point to point."""
    net, jobs, max_precision = task
    scores = _evaluator(net)
    prec = _start_precision(net)
    out = []
    for k, x, c in jobs:
        while True:
            with precision(prec):
                z = scores(x, prec)
                diffs = [z[c] - zj for j, zj in enumerate(z) if j != c]
                if all(d > 0 for d in diffs):
                    margin = min((lower_bound_float(d) for d in diffs), default=math.inf)
                    out.append((k, True, margin, prec))
                    break
                if any(d < 0 for d in diffs) or prec >= max_precision:
                    out.append((k, False, -math.inf, prec))
                    break
            prec = min(2 * prec, max_precision)
    return out


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
    scores = _evaluator(net)
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


def _start_precision(net: LNNet[fmpq]) -> int:
    # float-faithful nets need few bits at any depth; a net that needs more (the
    # paper's construction loses a few bits per layer) finds out on its first point,
    # and the precision reached carries over to the next points
    return 128


Scores = Callable[[Sequence[fmpq], int], list[arb]]


def _evaluator(net: LNNet[fmpq]) -> Scores:
    """``(x, prec) -> readout balls``, to be called inside ``precision(prec)``.

    The scalar form of :func:`scalar_chain` when every layer has rank at most
    one (a few ball operations per layer), else the model's generic forward pass.
    """
    chain = scalar_chain(net)
    cache: dict[int, Any] = {}
    if chain is None:

        def generic(x: Sequence[fmpq], prec: int) -> list[arb]:
            if prec not in cache:
                cache[prec] = net.map(arb)
            return cache[prec].forward([arb(v) for v in x], arb.sqrt)

        return generic
    first, steps, bias = chain

    def scalar(x: Sequence[fmpq], prec: int) -> list[arb]:
        if prec not in cache:
            cache[prec] = (
                [
                    (arb(s0), arb(g), arb(k), [arb(a) for a in alpha], [arb(b) for b in beta])
                    for s0, g, k, alpha, beta in steps
                ],
                [arb(b) for b in bias],
            )
        balls, r = cache[prec]
        s = arb(sum((w * v for w, v in zip(first, x, strict=True)), fmpq(0)))
        out = [s]
        for s0, g, k, alpha, beta in balls:
            t = s - s0
            root = (g * t * t + k).sqrt()
            out = [(a * t + b) / root for a, b in zip(alpha, beta, strict=True)]
            s = out[0]
        return [o + ri for o, ri in zip(out, r, strict=True)]

    return scalar


def _rank_one(W: Sequence[Sequence[fmpq]]) -> tuple[list[fmpq], list[fmpq]] | None:
    """``(col, row)`` with ``W = col row^T`` exactly, or None if the rank exceeds one."""
    pivot = next(((i, j) for i, r in enumerate(W) for j, w in enumerate(r) if w != 0), None)
    if pivot is None:
        return [fmpq(0)] * len(W), [fmpq(0)] * len(W[0])
    i0, j0 = pivot
    row = list(W[i0])
    col = [r[j0] / row[j0] for r in W]
    if any(W[i][j] != col[i] * row[j] for i in range(len(W)) for j in range(len(row))):
        return None
    return col, row


def scalar_chain(net: LNNet[fmpq]) -> Any:
    """The net as a scalar recurrence, when every layer ``W_l`` has rank at most one.

    With ``W_l = c_l r_l^T`` the layer input is ``c_l s_l + b_l`` for the scalar
    ``s_l = r_l . h_{l-1}`` (``s_1 = r_1 . x``).  Centring gives ``A s + B`` with
    ``A = P c_l``, ``B = P b_l`` (``P = I - 1 1^T / n``), whose variance is
    ``g (s - s0)^2 + k - eps`` after completing the square (``g = |A|^2 / n``,
    ``s0 = -(A . B) / |A|^2``, ``k = |B - (A.B/|A|^2) A|^2 / n + eps >= 0``).  So for
    each read ``m`` of ``h_l`` (the next layer's ``r``, or the readout's rows):

        m . h_l = (m.A (s - s0) + m.(A s0 + B)) / sqrt(g (s - s0)^2 + k).

    Returns ``(r_1, steps, readout bias)`` with ``steps`` of ``(s0, g, k, alphas,
    betas)``, all exact; or None (then the generic pass is used) for a net without
    layers, with a layer of rank two or more, or with a layer whose variance plus
    ``eps`` can vanish (``k = 0``).
    """
    n = net.width
    factors = [_rank_one(layer.W) for layer in net.layers]
    if not net.layers or any(f is None for f in factors):
        return None
    reads = [f[1] for f in factors[1:]]  # type: ignore[index]
    steps = []
    for li, (layer, (col, _)) in enumerate(zip(net.layers, factors, strict=True)):  # type: ignore[misc]
        mean_c, mean_b = sum(col, fmpq(0)) / n, sum(layer.b, fmpq(0)) / n
        A = [ci - mean_c for ci in col]
        B = [bi - mean_b for bi in layer.b]
        aa = sum((a * a for a in A), fmpq(0))
        ab = sum((a * b for a, b in zip(A, B, strict=True)), fmpq(0))
        ms = [reads[li]] if li < len(reads) else [list(r) for r in net.readout.W]
        if aa == 0:
            s0, g = fmpq(0), fmpq(0)
        else:
            s0, g = -ab / aa, aa / n
        centre = [a * s0 + b for a, b in zip(A, B, strict=True)]
        k = sum((v * v for v in centre), fmpq(0)) / n + net.eps
        if k == 0:
            return None
        alphas = [sum((m * a for m, a in zip(mv, A, strict=True)), fmpq(0)) for mv in ms]
        betas = [sum((m * v for m, v in zip(mv, centre, strict=True)), fmpq(0)) for mv in ms]
        steps.append((s0, g, k, alphas, betas))
    return factors[0][1], steps, list(net.readout.b)  # type: ignore[index]


def _check_compatible(net: LNNet[fmpq], points: PointSet) -> None:
    if points.d != net.input_dim:
        raise InputError(
            f"{points.source}: points have {points.d} features, the net takes {net.input_dim}"
        )
    if unknown := sorted({label for label in points.y if label not in net.classes}, key=str):
        raise InputError(
            f"{points.source}: labels {unknown} are not classes of the net {list(net.classes)}"
        )
