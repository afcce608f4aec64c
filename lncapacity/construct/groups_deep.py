"""LN-G at depth 2 and more: blocks of label runs, ``O(sqrt m)`` groups.

The construction, proved in proofs/ln_g_depth.md:

1. Project the points to a line, ``t = read^T x - shift`` (:func:`.groups.choose_direction`),
   and split its label runs into ``B`` *blocks* of consecutive runs (:func:`choose_blocks`);
   a block boundary is a label boundary, its *cut*.
2. Layer 1 (``B + 1`` groups of 3): a *bias group* (zero weights: its ``u``-read is the
   constant ``sqrt(6) k0``), a *pass-through group* ``sqrt(6) phi(t)`` with
   ``phi(t) = sigma_bP(t - cP)`` strictly increasing (a wide step, ``bP`` about half the
   data's range), and a steep step group ``sqrt(6) sigma_1(t - kappa_i)`` at each of the
   ``B - 1`` cuts (the depth-1 gadget of proofs/ln_g_steps.md).
3. Layer 2: *units*, each a group of 3 fed ``S2 (x u + beta2 v)`` with
   ``x = (sqrt(6)/2) g``, ``g = phi(t) - o_0 k0 - sum_i o_i sigma_1(t - kappa_i)``.  With the
   steps replaced by signs, ``g = phi(t) - l_j`` on block ``j``: the levels ``l_j`` (one per
   block, rational, ``o_i = (l_i - l_{i-1}) / 2``, ``o_0 = (l_0 + l_{B-1}) / 2``) put the
   unit's own step at a free position in every block.
4. The units form one *channel* per class but one (the *default* class, which reads 0):
   channel ``c`` has an odd number ``U_c`` of units, read with alternating weights
   ``+-1/2``, so its score ``sqrt(6) V_c`` is ``-sqrt(6)/2`` before its first step in a block
   and toggles at each: the steps of block ``j`` are where its label enters or leaves ``c``
   (the first one before the block when it starts with ``c``), the rest are parked after it.
5. Depth ``L > 2`` (padding, honestly no fewer groups): layer 3 re-steps each channel's
   score (one group per channel), each later layer re-steps the one before.

Groups: ``B + 1`` in layer 1, ``sum_c U_c`` in layer 2, ``max(1, k - 1)`` in each later one.
Every point is right with a margin of at least ``(7/16) sqrt(6)`` (scores in
``[-sqrt(6)/2, sqrt(6)/2]``), proved in proofs/ln_g_depth.md (Theorem 3) from the constants
chosen here; the net is certified by the generic :func:`lncapacity.certify.certify`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from flint import arb, fmpq

from ..arith import arb_to_fmpq, dyadic_between, precision
from ..data import PointSet
from ..errors import InputError
from ..model import Affine, Label, LNNet, Norm
from .common_denominator import Columns, dyadic_in
from .groups import (
    GROUP,
    WINDOW,
    Frame,
    Line,
    _floor4,
    _power_of_two_at_least,
    _short,
    least,
    line,
    steepness,
)

LEVEL_WINDOW = fmpq(1, 16)
"""A level lies within this fraction of its ``phi``-gap of the gap's middle (so at least
``7/16`` of the gap from each end, as the depth-1 centres)."""
MAX_BITS = 8192
"""The most bits the levels are placed with (neighbours closer than that in ``phi``: refused)."""
LEVEL_CAP = 12
"""At most this many caps (steps per channel and block) are tried beyond the best one found
so far (the group count is nearly convex in the cap; the search stops there)."""


@dataclass(frozen=True)
class Blocks:
    """The runs along ``t`` and their blocks: ``runs[r] = (label, first, last)`` (indices into
    the sorted order), ``starts``: the first run of each block (``starts[0] = 0``),
    ``default``: the class (construction number) without a channel, ``units[c]``: the number
    of units of channel ``c`` (odd; absent for the default class)."""

    runs: tuple[tuple[int, int, int], ...]
    starts: tuple[int, ...]
    default: int
    units: dict[int, int]

    @property
    def groups(self) -> int:
        """The groups in layers 1 and 2, ``B + 1 + sum_c U_c`` (at least one unit)."""
        return len(self.starts) + 1 + max(1, sum(self.units.values()))


def toggles(labels: Sequence[int], c: int) -> int:
    """The steps channel ``c`` needs on a block whose runs have ``labels``: one where the
    label enters ``c`` (the block's start counts when it starts with ``c``) and one where it
    leaves ``c`` inside the block: ``2 runs_c - [the block ends with c]``."""
    count = int(labels[0] == c)
    for a, b in itertools.pairwise(labels):
        count += int(b == c) + int(a == c)
    return count


def _entries(labels: np.ndarray, c: int) -> np.ndarray:
    """``E[r]``: the steps channel ``c`` takes from run 0 to run ``r``, counting at each run
    ``r >= 1`` the gap before it when ``c`` is on either side (:func:`toggles` of a block
    ``[s, r]`` is then ``[labels[s] = c] + E[r] - E[s]``)."""
    inside = labels == c
    E = np.zeros(len(labels), dtype=np.int64)
    np.cumsum(inside[1:].astype(np.int64) + inside[:-1], out=E[1:])
    return E


def _greedy(
    labels: np.ndarray, channels: dict[int, np.ndarray], cap: int, most: int | None = None
) -> list[int] | None:
    """The first run of each block when every block is as long as it can be with at most
    ``cap`` steps per channel (greedy, which fewest blocks for that cap); None as soon as
    there would be more than ``most`` blocks.  ``channels[c]``: :func:`_entries` of each
    channel.  A block from ``s`` ends before the first run ``r`` where some channel's
    :func:`toggles` would exceed ``cap``: the first ``r`` with
    ``E[r] > cap + E[s] - [labels[s] = c]``, found by bisection."""
    n = len(labels)
    starts = [0]
    while True:
        if most is not None and len(starts) > most:
            return None
        s = starts[-1]
        end = n
        for c, E in channels.items():
            limit = cap + int(E[s]) - int(labels[s] == c)
            end = min(end, int(np.searchsorted(E, limit, side="right")))
        if end >= n:
            return starts
        starts.append(end)


def _units(
    labels: Sequence[int],
    starts: Sequence[int],
    default: int,
    channels: dict[int, np.ndarray] | None = None,
) -> dict[int, int]:
    """``U_c``: the most steps channel ``c`` (every class but ``default`` that has a run) needs
    on one block, made odd (``channels``: their :func:`_entries`, if known)."""
    labels = np.asarray(labels)
    if channels is None:
        channels = {c: _entries(labels, c) for c in sorted(set(labels.tolist()) - {default})}
    first = np.asarray(starts)
    last = np.append(first[1:], len(labels)) - 1
    need = {}
    for c, E in channels.items():
        t = (labels[first] == c) + E[last] - E[first]
        present = (E[last] - E[first] > 0) | (labels[first] == c)
        if present.any():
            n = int(t[present].max())
            need[c] = n + (n % 2 == 0)
    return need


def choose_blocks(ls: Sequence[int]) -> Blocks:
    """The runs of the sorted labels ``ls``, the default class (the one with the most runs:
    its entries and exits cost nothing) and the blocks: for each odd cap ``u`` on the steps
    per channel and block, the greedy blocks; the cap with the fewest groups
    ``B + 1 + sum_c U_c`` is taken among the odd cap in ``[sqrt b, sqrt b + 2)``
    (proofs/ln_g_depth.md, Theorem 4) and ``1, 3, 5, ...`` (until :data:`LEVEL_CAP` caps in
    a row found no fewer)."""
    lab = np.asarray(ls)
    firsts = np.flatnonzero(np.r_[True, lab[1:] != lab[:-1]])
    lasts = np.append(firsts[1:], len(lab)) - 1
    labels = lab[firsts]
    runs = tuple(zip(labels.tolist(), firsts.tolist(), lasts.tolist(), strict=True))
    tally = np.bincount(labels)
    default = int(np.argmax(tally))  # the first of the most runs: the smallest such class
    channels = {c: _entries(labels, c) for c in sorted(set(labels.tolist()) - {default})}

    def blocks(cap: int, most: int | None = None) -> Blocks | None:
        starts = _greedy(labels, channels, cap, most)
        if starts is None:
            return None
        return Blocks(runs, tuple(starts), default, _units(labels, starts, default, channels))

    root = math.isqrt(len(labels) - 1)  # the odd cap of Theorem 4: sqrt(b) <= u < sqrt(b) + 2
    best = blocks(root + (root * root < len(labels) - 1) | 1)
    assert best is not None
    since = 0
    cap = 1
    while since < LEVEL_CAP:
        # more than best.groups - 2 blocks cannot have fewer groups (B + 1 + at least one unit)
        got = blocks(cap, best.groups - 2)
        if got is not None and got.groups < best.groups:
            best, since = got, 0
        else:
            since += 1
        if got is not None and len(got.starts) == 1:
            break
        cap += 2
    return best


# ---------------------------------------------------------------------------
# the pass-through and the levels


def _phi(x: fmpq, b2: fmpq) -> arb:
    """``phi(t) = (t - cP) / sqrt((t - cP)^2 + bP^2)`` as a ball, for ``x = t - cP``."""
    b = arb(x)
    return b / (b * b + arb(b2)).sqrt()


def _lower(x: arb) -> fmpq:
    return arb_to_fmpq(x.lower())


def _upper(x: arb) -> fmpq:
    return arb_to_fmpq(x.upper())


@dataclass(frozen=True)
class Levels:
    """For each gap between neighbouring runs (``gap[r]``: between run ``r - 1`` and run
    ``r``, ``1 <= r < len(runs)``) and the two virtual gaps before the first point
    (``gap[0]``) and after the last (``gap[len(runs)]``): its level (a rational strictly
    between ``phi`` of its two neighbours) and ``mu``, a lower bound of the distance in
    ``phi`` from every level to every point."""

    level: tuple[fmpq, ...]
    mu: fmpq


def place_levels(
    ts: Sequence[fmpq], runs: Sequence[tuple[int, int, int]], centre: fmpq, b2: fmpq
) -> Levels:
    """Each inner level within :data:`LEVEL_WINDOW` of the middle of its gap in ``phi``
    (rigorous balls, from 128 bits up to :data:`MAX_BITS` while two neighbours' balls
    overlap); the two virtual ones between a quarter and half of the way from ``phi`` at the
    end point to ``-1`` (``+1``): every level lies in ``(-1, 1)``."""
    bits = 128
    while True:
        with precision(bits):
            got = _levels(ts, runs, centre, b2)
        if got is not None:
            return got
        if bits >= MAX_BITS:
            raise InputError("two neighbours of different labels are too close to order")
        bits *= 4


def _levels(
    ts: Sequence[fmpq], runs: Sequence[tuple[int, int, int]], centre: fmpq, b2: fmpq
) -> Levels | None:
    """:func:`place_levels` at the current precision; None when two balls overlap.  The ends
    of the balls are dyadic, so the levels and ``mu`` are placed in integers over a common
    power of two (:func:`.dyadic_in`: the same dyadics as the rationals give)."""
    levels: list[fmpq] = []
    minus = ts.minus if isinstance(ts, _Sorted) else lambda i, c: ts[i] - c

    def phi(i: int) -> arb:
        return _phi(minus(i, centre), b2)

    first, last = phi(0), phi(len(ts) - 1)
    lo_end = _lower(first)
    h = (1 + lo_end) / 4
    levels.append(dyadic_between(lo_end - 2 * h, lo_end - h))
    mu = lo_end - levels[0]
    near: list[tuple[int, int]] = []  # each inner level's distance to its gap's ends: (p, q)
    wp, wq = int(LEVEL_WINDOW.p), int(LEVEL_WINDOW.q)
    for prev, run in itertools.pairwise(runs):
        (m1, e1), (m2, e2) = _ends(phi(prev[2]), phi(run[1]))
        E = max(0, -e1, -e2)
        lo, hi = m1 << (e1 + E), m2 << (e2 + E)  # the ends over 2^E
        if not lo < hi:
            return None
        # within LEVEL_WINDOW = wp / wq of the width of the middle: over 2 wq 2^E
        mid, width = wq * (lo + hi), 2 * wp * (hi - lo)
        n, k = dyadic_in(mid - width, mid + width, mid, (2 * wq) << E)
        levels.append(fmpq(n, 1 << k))
        near.append((min((n << E) - (lo << k), (hi << k) - (n << E)), 1 << (k + E)))
    if near:
        mu = min(mu, least(near))
    hi_end = _upper(last)
    h = (1 - hi_end) / 4
    levels.append(dyadic_between(hi_end + h, hi_end + 2 * h))
    mu = min(mu, levels[-1] - hi_end)
    return Levels(tuple(levels), mu)


def _ends(below: arb, above: arb) -> tuple[tuple[int, int], tuple[int, int]]:
    """The upper end of ``below`` and the lower end of ``above``, exactly: ``(man, exp)`` with
    the value ``man 2^exp``."""
    m1, e1 = below.upper().man_exp()
    m2, e2 = above.lower().man_exp()
    return (int(m1), int(e1)), (int(m2), int(e2))


def unit_levels(blocks: Blocks, levels: Levels) -> list[tuple[int | None, list[fmpq]]]:
    """The units of layer 2, channel by channel: ``(class, [l_0, ..., l_{B-1}])``, the level
    of the unit's step in each block (proofs/ln_g_depth.md §2).  With one class only, one
    unit parked after every block, read by no class (``class`` None)."""
    labels = [r[0] for r in blocks.runs]
    starts = blocks.starts
    ends = [*starts[1:], len(labels)]
    out: list[tuple[int | None, list[fmpq]]] = []
    for c in sorted(blocks.units):
        per_block: list[list[fmpq]] = []
        for a, b in zip(starts, ends, strict=True):
            steps = [levels.level[a]] if labels[a] == c else []  # gap[a]: before run a
            for r in range(a + 1, b):
                if labels[r] == c or labels[r - 1] == c:
                    steps.append(levels.level[r])
            park = levels.level[b]  # gap[b]: after the block's last run
            steps += [park] * (blocks.units[c] - len(steps))
            per_block.append(steps)
        for r in range(blocks.units[c]):
            out.append((c, [steps[r] for steps in per_block]))
    if not out:
        out.append((None, [levels.level[b] for b in ends]))
    return out


# ---------------------------------------------------------------------------
# the net


def _group_rows(
    weights: Sequence[fmpq], centre: fmpq, S: fmpq, beta: fmpq
) -> tuple[list[tuple[fmpq, ...]], list[fmpq]]:
    """A group fed ``S ((w . h - centre) u + beta v)``: rows ``(S w, -S w, 0)`` and biases
    ``(S (beta - centre), S (beta + centre), -2 S beta)``."""
    row = tuple(S * w for w in weights)
    return (
        [row, tuple(-w for w in row), tuple(fmpq(0) for _ in row)],
        [S * (beta - centre), S * (beta + centre), -2 * S * beta],
    )


def _u_read(width: int, coefficients: dict[int, fmpq]) -> list[fmpq]:
    """Weights reading ``sum_j a_j (u . h_j) / 2`` from a layer of groups of 3 (``a_j`` for
    group ``j``)."""
    w = [fmpq(0)] * width
    for j, a in coefficients.items():
        w[GROUP * j], w[GROUP * j + 1] = a / 2, -a / 2
    return w


def _u_rows(width: int, coefficients: dict[int, fmpq], S: fmpq) -> tuple[tuple[fmpq, ...], ...]:
    """The rows ``S w`` and ``-S w`` of :func:`_group_rows` for ``w = _u_read(width,
    coefficients)``, without multiplying the zeros."""
    zero = fmpq(0)
    row, neg = [zero] * width, [zero] * width
    for j, a in coefficients.items():
        v = S * a / 2
        row[GROUP * j], row[GROUP * j + 1] = v, -v
        neg[GROUP * j], neg[GROUP * j + 1] = -v, v
    return tuple(row), tuple(neg)


class _Sorted:
    """The points' ``t`` in increasing order, as rationals made when asked for."""

    def __init__(self, t: Line) -> None:
        self.t = t

    def __getitem__(self, i: int) -> fmpq:
        return self.t[self.t.order[i]]

    def minus(self, i: int, c: fmpq) -> fmpq:
        """The ``i``-th smallest ``t`` minus ``c``, exactly (one rational made, not two)."""
        cp, cq = int(c.p), int(c.q)
        return fmpq(self.t.T[self.t.order[i]] * cq - cp * self.t.D, self.t.D * cq)

    def __len__(self) -> int:
        return len(self.t)


def _largest_power_of_two_with(square_at_most: fmpq) -> fmpq:
    """The largest power of two ``f <= 1`` with ``f^2 <= square_at_most``."""
    f = fmpq(1)
    while f * f > square_at_most:
        f /= 2
    return f


def build_ln_g_deep(
    points: PointSet,
    eps: fmpq,
    depth: int,
    *,
    seed: int = 0,
    classes: Sequence[Label] | None = None,
    meta: dict[str, Any] | None = None,
    frame: Frame | None = None,
    columns: Columns | None = None,
) -> LNNet[fmpq]:
    """An LN-G net of ``depth >= 2`` layers (groups of 3) that classifies every point of
    ``points`` correctly with a margin of at least ``(7/16) sqrt(6)`` (proofs/ln_g_depth.md,
    Theorem 3), with ``B + 1 + sum_c U_c`` groups in its first two layers (about
    ``2 sqrt(b)`` for ``b`` label boundaries and two classes).  Arguments as
    :func:`.groups.build_ln_g`'s."""
    if depth < 2:
        raise InputError(f"depth {depth}: the block construction has depth 2 or more")
    cls, present, yk, read, shift, t = line(points, seed, classes, frame, columns)
    d = points.d
    ts = _Sorted(t)
    ls = [yk[i] for i in t.order]
    blocks = choose_blocks(ls)
    runs = blocks.runs

    # the pass-through: centre mid-range, bP about half the range (Lemma 1)
    half = (ts[-1] - ts[0]) / 2 or fmpq(1)
    centre = dyadic_between(ts[0] + half * (1 - WINDOW), ts[0] + half * (1 + WINDOW))
    S_P = _power_of_two_at_least(1 / half)
    beta_P = _power_of_two_at_least(half)
    while 3 * beta_P**2 > half**2:
        beta_P /= 2
    b2_P = 3 * beta_P**2 + 3 * eps / (2 * S_P**2)
    levels = place_levels(ts, runs, centre, b2_P)
    mu = levels.mu

    # the cuts: centres in the gaps between blocks (as the depth-1 centres), steep enough
    # that every tail is at most mu / 8 (Lemma 2)
    cuts: list[fmpq] = []
    delta1: fmpq | None = None
    for r in blocks.starts[1:]:
        lo, hi = ts[runs[r - 1][2]], ts[runs[r][1]]
        gap, mid = hi - lo, (lo + hi) / 2
        k = dyadic_between(mid - gap * WINDOW, mid + gap * WINDOW, mid)
        cuts.append(k)
        near = min(k - lo, hi - k)
        delta1 = near if delta1 is None else min(delta1, near)
    f1 = _largest_power_of_two_with(4 * mu)
    beta1, S1 = steepness((delta1 or half) * f1, eps)
    # the bias group: (s0, -s0, 0) reads sqrt(6) k0 with 1 - k0 <= 3 eps / (4 s0^2) <= mu / 8
    s0 = fmpq(1)
    while s0**2 * mu < 6 * eps:
        s0 *= 2

    zeros = [fmpq(0)] * d
    W1: list[tuple[fmpq, ...]] = []
    b1: list[fmpq] = []
    W1 += [tuple(zeros)] * 3
    b1 += [s0, -s0, fmpq(0)]
    for c, S, beta in [(centre, S_P, beta_P), *((k, S1, beta1) for k in cuts)]:
        rows, bias = _group_rows(read, c + shift, S, beta)
        W1 += rows
        b1 += bias
    groups1 = 2 + len(cuts)
    layer1 = Affine(tuple(W1), tuple(b1), {"kind": "blocks", "group": GROUP})

    # layer 2: the units (Theorem 3: |x| >= G = (9/10) mu at every point)
    units = unit_levels(blocks, levels)
    G = fmpq(9, 10) * mu
    most = max(blocks.units.values(), default=1)
    f2 = _largest_power_of_two_with(fmpq(4, most))
    beta2, S2 = steepness(G * f2, eps)
    W2: list[tuple[fmpq, ...]] = []
    width1 = GROUP * groups1
    nothing = tuple(fmpq(0) for _ in range(width1))
    for _, ell in units:
        o = [(ell[i] - ell[i - 1]) / 2 for i in range(1, len(ell))]
        o0 = (ell[0] + ell[-1]) / 2
        a = {0: -o0, 1: fmpq(1), **{2 + i: -oi for i, oi in enumerate(o)}}
        row, neg = _u_rows(width1, a, S2)  # _group_rows(_u_read(width1, a), 0, S2, beta2)
        W2 += [row, neg, nothing]
    b2 = _group_rows(nothing[:1], fmpq(0), S2, beta2)[1] * len(units)
    layer2 = Affine(tuple(W2), tuple(b2), {"kind": "block-units", "group": GROUP})
    layers = [layer1, layer2]
    norms = [Norm(groups=groups1), Norm(groups=len(units))]

    # channel c reads unit r (its r-th) along u with weight (-1)^r / 2: V_c (Theorem 3)
    channel_ids: list[int | None] = sorted(blocks.units) or [None]
    reads: dict[int | None, dict[int, fmpq]] = {c: {} for c in channel_ids}
    for j, (c, _) in enumerate(units):
        if c is not None:
            reads[c][j] = fmpq((-1) ** len(reads[c]), 2)
    width = GROUP * len(units)
    for _ in range(3, depth + 1):
        # layer 3: group c re-steps x = (sqrt(6)/2) V_c; later layers re-step the group
        # before, x = (sqrt(6)/4) sigma: |x| >= 1/2 (proofs/ln_g_depth.md §4)
        beta_r, S_r = steepness(fmpq(1, 2), eps)
        W: list[tuple[fmpq, ...]] = []
        b: list[fmpq] = []
        for c in channel_ids:
            rows, bias = _group_rows(_u_read(width, reads[c]), fmpq(0), S_r, beta_r)
            if c is None:  # one class only: a constant group
                bias = [s0, -s0, fmpq(0)]
            W += rows
            b += bias
        layers.append(Affine(tuple(W), tuple(b), {"kind": "re-step", "group": GROUP}))
        norms.append(Norm(groups=len(channel_ids)))
        width = GROUP * len(channel_ids)
        reads = {c: ({j: fmpq(1, 2)} if c is not None else {}) for j, c in enumerate(channel_ids)}

    # the readout: channel c reads (a/2)(1, -1, 0) on its groups, the default class 0,
    # classes no point has -2
    rows_out: list[tuple[fmpq, ...]] = []
    bias_out: list[fmpq] = []
    for label in cls:
        c = present.index(label) if label in present else None
        if c is not None and c in reads:
            rows_out.append(tuple(_u_read(width, {j: 2 * a for j, a in reads[c].items()})))
            bias_out.append(fmpq(0))
        else:
            rows_out.append(tuple(fmpq(0) for _ in range(width)))
            bias_out.append(fmpq(0) if c is not None else fmpq(-2))
    readout = Affine(tuple(rows_out), tuple(bias_out), {"kind": "channels"})

    meta = {} if meta is None else meta
    groups_by_layer = [n.groups for n in norms]
    meta.update(
        method="blocks",
        arch="ln-g",
        projection=[str(r) for r in read],
        boundaries=len(runs) - 1,
        blocks=len(blocks.starts),
        units={str(present[c]): n for c, n in sorted(blocks.units.items())},
        default=str(present[blocks.default]),
        groups=sum(groups_by_layer),
        groups_by_layer=groups_by_layer,
        depth=depth,
        mu=_short(mu),
        margin=_floor4(fmpq(7, 16)),
    )
    return LNNet(
        points.d,
        None,
        eps,
        tuple(layers),
        readout,
        cls,
        meta,
        norms=tuple(norms),
    )
