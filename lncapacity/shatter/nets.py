"""The nets of a shattering and their certified margins: a net and its complement (the
readout rows swapped), and the LN-G bump nets (proofs/ln_g_vc.md)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import replace

from flint import fmpq

from ..certify import certify
from ..errors import InputError
from ..model import Affine, LNNet, Norm
from .points import _point_set
from .records import CLASSES


def _swapped(net: LNNet[fmpq]) -> LNNet[fmpq]:
    """The same net with the two readout rows exchanged: every prediction flips.

    Only the readout's rows differ; every other part of the net (LayerNorm gains and biases,
    widths, algebraic weights, metadata) is kept, so the complement is certified on the net the
    record describes.
    """
    r = net.readout
    # replace, not a field-by-field rebuild: a part added to LNNet later is carried over too
    return replace(net, readout=replace(r, W=tuple(reversed(r.W)), b=tuple(reversed(r.b))))


def _margins(net: LNNet[fmpq], X: Sequence[tuple[fmpq, ...]], y: Sequence[int]) -> list[float]:
    """Certified margin lower bounds per point; ``-inf`` where a point is not certified.  By the
    generic passes (``theorems=False``): their margins are the tightest, and a certificate's
    claims, written by them, are checked against them (a margin theorem's lower bound would
    refuse them; these nets are small, so the theorem's speed does not matter)."""
    cert = certify(net, _point_set(X, y), workers=1, theorems=False)
    return [p.margin if p.certified else -math.inf for p in cert.points]


BUMP_THRESHOLD = fmpq(2)
"""The readout's other row in an LN-G bump net: a bump reads at least ``3 sqrt(6) / 2 > 3.67``
at its own point, the tails sum to at most ``3 sqrt(6) / 8 < 0.92`` (proofs/ln_g_vc.md)."""


def bump_net(
    X: Sequence[tuple[fmpq, ...]], y: Sequence[int], groups: int, eps: fmpq, depth: int = 1
) -> LNNet[fmpq]:
    """A depth-``depth`` LN-G net with exactly ``groups`` groups of 3 per layer labelling ``X``
    by ``y`` (0/1), when one class has at most ``groups`` points (proofs/ln_g_vc.md, Theorems
    1 and 2).

    Project to ``t = read . x`` (distinct values); the minority class's points ``t_j`` get one
    group each, fed ``S ((t - t_j) u + beta v)``, whose LayerNorm read along ``v = (1, 1, -2)``
    is the bump ``3 sqrt(6) beta / sqrt((t - t_j)^2 + b^2)``; that class's row sums the bumps,
    the other row is the constant :data:`BUMP_THRESHOLD`.  Unused groups are read by nothing.
    Layers 2 to ``depth`` feed each group its own output times ``S'`` (``S'^2 >= 16 eps``): the
    direction is kept and every scale stays within ``[sqrt(3)/2, 2/sqrt(3)]``.  Raises
    :class:`InputError` when both classes have more than ``groups`` points.
    """
    from ..construct.groups import GROUP, Steps, steps_layer

    ones = [i for i, label in enumerate(y) if label == 1]
    zeros = [i for i, label in enumerate(y) if label != 1]
    bumped, cls = (ones, 1) if len(ones) <= len(zeros) else (zeros, 0)
    if len(bumped) > groups:
        raise InputError(f"both classes have more than {groups} points (one bump per point)")
    d = len(X[0])
    read = _separating(X)
    t = [sum((r * v for r, v in zip(read, x, strict=True)), fmpq(0)) for x in X]
    ts = sorted(t)
    delta = min(b - a for a, b in itertools.pairwise(ts)) if len(ts) > 1 else fmpq(1)
    beta = fmpq(1)
    while 8 * groups * beta > delta:  # beta <= delta / (8 g), a power of two
        beta /= 2
    S = fmpq(1)
    while S * delta < 1 or 2 * (S * beta) ** 2 < 3 * eps:  # b^2 <= 4 beta^2
        S *= 2
    centres = [t[i] for i in bumped] + [ts[-1] + 1 + j for j in range(groups - len(bumped))]
    layer = steps_layer(Steps(read, fmpq(0), tuple(centres), (), delta), beta, S)
    v = (fmpq(1), fmpq(1), fmpq(-2))
    zero = (fmpq(0),) * GROUP
    bump_row = tuple(x for j in range(groups) for x in (v if j < len(bumped) else zero))
    flat = (fmpq(0),) * (GROUP * groups)
    rows = {cls: (bump_row, fmpq(0)), 1 - cls: (flat, BUMP_THRESHOLD)}
    readout = Affine(
        tuple(rows[c][0] for c in CLASSES), tuple(rows[c][1] for c in CLASSES), {"kind": "bumps"}
    )
    meta = {"method": "bumps", "arch": "ln-g", "groups": groups, "bumps": len(bumped)}
    pad = fmpq(1)
    while pad**2 < 16 * eps:
        pad *= 2
    n = GROUP * groups
    same = Affine(
        tuple(tuple(pad if j == i else fmpq(0) for j in range(n)) for i in range(n)),
        (fmpq(0),) * n,
        {"kind": "pad"},
    )
    layers = (layer,) + (same,) * (depth - 1)
    return LNNet(d, n, eps, layers, readout, CLASSES, meta, norms=(Norm(groups=groups),) * depth)


def _separating(X: Sequence[tuple[fmpq, ...]]) -> tuple[fmpq, ...]:
    """``(1, k, k^2, ...)`` for the least ``k >= 1`` giving distinct ``read . x``: at most
    ``d - 1`` values of ``k`` per pair of points are roots of their difference's polynomial."""
    k = 1
    while True:
        read = tuple(fmpq(k) ** i for i in range(len(X[0])))
        t = {sum((r * v for r, v in zip(read, x, strict=True)), fmpq(0)) for x in X}
        if len(t) == len(X):
            return read
        k += 1
