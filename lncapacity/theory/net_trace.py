"""SSR and LSSR after every layer of an LN-Net, certified (``lncapacity trace``).

The input is rational, so its SSR and LSSR are exact
(:func:`~lncapacity.theory.separability.lssr`).  The outputs of a LayerNorm layer involve
square roots; they are enclosed in python-flint ``arb`` balls (the same
arithmetic as the certificate, :mod:`lncapacity.certify`), vectorised over the
points, and the scatter matrices are formed in balls.  Then

* SSR is a ball quotient ``tr S_w / tr S_t``, reported as ``[lo, hi]``;
* LSSR is bounded by :func:`~lncapacity.theory.separability.pencil_bounds` on the
  subspace where the layer's outputs live: every LayerNorm output is
  orthogonal to ``1`` (exactly, whatever ``eps``), so the pencil is taken on a
  rational basis of ``1^perp`` (an LN-G layer's: orthogonal to the indicator of each
  group, the same in each group); the readout ``z = R h + r`` sees the hidden
  data only through ``range(R P)`` (``P`` the centring projection), a rational
  basis of which is used there.  An RMSNorm layer does not centre: its outputs are taken
  on all of ``R^n`` (``P = I``).

A drop of LSSR from one layer to the next, certified (``hi`` after below ``lo``
before), proves the layer is not affine (proofs/lssr.md): that is what
"LayerNorm breaks LSSR" means.  Precision starts at 128 bits and doubles until
every SSR interval is narrower than ``2^-30`` (the balls widen by a bit or
two per layer, so deep nets start higher: ``128 + 2 L`` bits).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from flint import arb, ctx, fmpq, fmpq_mat

from ..algebraic import refuse_radicals
from ..arith import precision
from ..certify import rank_one
from ..data import PointSet
from ..errors import InputError
from ..model import LNNet
from .reals import CertifiedReal
from .separability import (
    EXACT_MAX_RANK,
    congruent,
    exact_points,
    object_dot,
    pencil_bounds,
    pencil_exact,
    scatter_matrices,
    ssr_of_scatter,
)

__all__ = ["LayerStats", "trace"]

START_PRECISION, MAX_PRECISION = 128, 1 << 14
MAX_WIDTH = 64
"""The widest layer :func:`trace` takes (width 32: about 1 s on 100 points; 64: 15 s; 128: a
minute; each product in balls stays interruptible, :func:`.separability.object_dot`)."""
STATS_PRECISION = 192
"""Bits for a layer's scatter matrices (the forward chain may need many more)."""
TIGHT = fmpq(1, 2**30)


@dataclass(frozen=True)
class LayerStats:
    """SSR and LSSR of the points at one stage of a net (None: all points coincide)."""

    name: str
    """``"input"``, ``"LN 1"`` ... ``"LN L"``, ``"readout"``."""
    dim: int
    ssr: CertifiedReal | None
    lssr: CertifiedReal | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "layer": self.name,
            "dim": self.dim,
            "ssr": None if self.ssr is None else self.ssr.to_json(),
            "lssr": None if self.lssr is None else self.lssr.to_json(),
            "exact": bool(self.ssr is not None and self.ssr.is_exact)
            and bool(self.lssr is not None and self.lssr.is_exact),
        }


def trace(
    net: LNNet[fmpq],
    X: Any,
    y: Any = None,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> list[LayerStats]:
    """SSR and LSSR of the points before the first layer, after every LN layer, and of the scores.

    ``X``: a :class:`~lncapacity.data.PointSet` (as loaded: identical rows with
    the same label count once) or rows with labels ``y`` (every row counts, as
    in :func:`~lncapacity.theory.ssr`); any labels, any number of classes, which
    need not be the net's.  The input row is exact; the others are rigorous
    bounds.
    """
    refuse_radicals(net, "trace")
    widest = max((len(layer.W) for layer in net.layers), default=0)
    if widest > MAX_WIDTH:
        raise InputError(
            f"trace: a layer of width {widest}, beyond the limit of {MAX_WIDTH} (the certified "
            "LSSR costs the cube of the width: width 64 takes about 15 s)"
        )
    H, labels = exact_points(X, y)
    d = H.shape[1]
    if d != net.input_dim:
        where = X.source if isinstance(X, PointSet) else "points"
        raise InputError(f"{where}: points have {d} features, the net takes {net.input_dim}")
    Sw, St = scatter_matrices(H, labels)
    out = [LayerStats("input", d, ssr_of_scatter(Sw, St), pencil_exact(Sw, St, EXACT_MAX_RANK))]
    if not net.layers:
        R = np.array(net.readout.W, dtype=object)
        out.append(_readout_exact(R, Sw, St))
        return out
    # the balls widen by about 1.5-3 bits per layer: start where a deep net will end up
    prec = START_PRECISION + 2 * net.depth
    chain = _scalar_steps(net)
    while True:
        with precision(prec):
            if chain is not None:
                stats, tight = _hidden_rank_one(net, chain, H, labels, progress)
            else:
                stats, tight = _hidden(net, H, labels, progress)
        if tight:
            return out + stats
        if prec >= MAX_PRECISION:
            if not stats:
                raise InputError(
                    f"a LayerNorm variance is not certified positive at {prec} bits "
                    "(LayerNorm of a constant vector with eps = 0 is undefined)"
                )
            return out + stats
        prec *= 2


def _readout_exact(R: np.ndarray, Sw: np.ndarray, St: np.ndarray) -> LayerStats:
    Sw_z, St_z = congruent(R, Sw), congruent(R, St)
    return LayerStats("readout", R.shape[0], ssr_of_scatter(Sw_z, St_z), pencil_exact(Sw_z, St_z))


def _centred_basis(n: int, groups: int = 1, centre: bool = True) -> list[list[fmpq]]:
    """``e_i - e_n`` for ``i < n``: a rational basis of ``1^perp`` in ``R^n``; with ``groups``,
    ``e_i - e_last`` for every ``i`` but the last of each group (LN-G's outputs); without
    ``centre`` (RMSNorm) every ``e_i``."""
    k = n // groups
    if not centre:
        return [[fmpq(int(j == i)) for j in range(n)] for i in range(n)]
    return [
        [fmpq(int(j == i)) - fmpq(int(j == i // k * k + k - 1)) for j in range(n)]
        for i in range(n)
        if i % k != k - 1
    ]


def _centring(n: int, groups: int = 1, centre: bool = True) -> np.ndarray:
    """The exact projection ``I - 1 1^T / k`` onto the centred vectors of each group (``I``
    without ``centre``: RMSNorm)."""
    k = n // groups
    return np.array(
        [
            [
                fmpq(int(i == j)) - (fmpq(1, k) if centre and i // k == j // k else fmpq(0))
                for j in range(n)
            ]
            for i in range(n)
        ],
        dtype=object,
    )


def _column_basis(A: np.ndarray) -> list[list[fmpq]]:
    """Independent columns of the rational matrix ``A`` spanning its range (pivot columns)."""
    rows, cols = A.shape
    M = fmpq_mat(rows, cols, [fmpq(v) for v in A.flatten()])
    R, rank = M.rref()
    pivots = [next(j for j in range(cols) if R[i, j] != 0) for i in range(rank)]
    return [[fmpq(A[i, j]) for i in range(rows)] for j in pivots]


def _scalar_steps(net: LNNet[fmpq]) -> list[tuple[Any, ...]] | None:
    """Per layer ``(row, A, centre, s0, g, k)`` when every ``W_l`` has rank one, else None.

    With ``W_l = col row^T`` the layer sees the scalar ``s = row . h`` only; the
    centred pre-activation is ``A s + B`` (``A = P col``, ``B = P b``) and, with
    ``t = s - s0``, ``h = (A t + centre) / sqrt(g t^2 + k)`` (``s0``, ``g``, ``k``
    by completing the square, as in :func:`lncapacity.certify.chains.scalar_chain`).
    Only ``t`` carries rounding error from layer to layer, so balls stay tight
    where the generic matrix pass would lose bits to the dependency problem.
    """
    if any(not n.is_identity or n.groups != 1 for n in net.norms):
        return None  # a gain, a bias or groups: the general pass (_hidden) applies them
    steps = []
    for li, layer in enumerate(net.layers):
        n = len(layer.b)  # this layer's width (widths may differ)
        f = rank_one(layer.W)
        if f is None:
            return None
        col, row = f
        mc, mb = sum(col, fmpq(0)) / n, sum(layer.b, fmpq(0)) / n
        if net.norm(li).rms:  # RMSNorm: no centring
            mc = mb = fmpq(0)
        A = [c - mc for c in col]
        B = [v - mb for v in layer.b]
        aa = sum((a * a for a in A), fmpq(0))
        ab = sum((a * v for a, v in zip(A, B, strict=True)), fmpq(0))
        s0, g = (fmpq(0), fmpq(0)) if aa == 0 else (-ab / aa, aa / n)
        centre = [a * s0 + v for a, v in zip(A, B, strict=True)]
        k = sum((v * v for v in centre), fmpq(0)) / n + net.eps
        if k == 0:
            return None
        steps.append((row, A, centre, s0, g, k))
    return steps


def _hidden_rank_one(
    net: LNNet[fmpq],
    steps: list[tuple[Any, ...]],
    X: np.ndarray,
    labels: list[Any],
    progress: Callable[[int, int], None] | None,
) -> tuple[list[LayerStats], bool]:
    """The layers as ``h = M u`` with ``u = (t, 1) / sqrt(g t^2 + k)`` and ``M = [A centre]``.

    Only the chain ``t -> t'`` carries error forward, so it runs at the working
    precision; each layer's statistics are formed from its balls at
    :data:`STATS_PRECISION` bits (their error is not propagated), which is
    about three times cheaper per operation on deep nets.
    """
    stats: list[LayerStats] = []
    tight = True
    row = steps[0][0]
    s = np.array([arb(sum((w * v for w, v in zip(row, x, strict=True)), fmpq(0))) for x in X])
    Sw = St = None
    for li, (_, A, centre, s0, g, k) in enumerate(steps, 1):
        n = len(A)
        t = s - arb(s0)
        root = np.array([v.sqrt() for v in (arb(g) * t * t + arb(k))], dtype=object)
        if li < len(steps):  # the next layer's scalar, at the working precision
            nxt = steps[li][0]
            alpha = arb(sum((r * a for r, a in zip(nxt, A, strict=True)), fmpq(0)))
            beta = arb(sum((r * c for r, c in zip(nxt, centre, strict=True)), fmpq(0)))
            s_next = (alpha * t + beta) / root
        with precision(min(STATS_PRECISION, ctx.prec)):
            U = np.stack([t / root, 1 / root], axis=1)
            Sw_u, St_u = scatter_matrices(U, labels)
            M = np.array([[A[i], centre[i]] for i in range(n)], dtype=object)
            Mb = np.vectorize(arb, otypes=[object])(M)
            Sw, St = congruent(Mb, Sw_u), congruent(Mb, St_u)
            ssr_l = ssr_of_scatter(Sw, St)
            lssr_l = pencil_bounds(Sw, St, _column_basis(M))
        tight = tight and (ssr_l is None or ssr_l.hi - ssr_l.lo < TIGHT)
        stats.append(LayerStats(f"LN {li}", n, ssr_l, lssr_l))
        if li < len(steps):
            s = s_next
        if progress:
            progress(li, net.depth + 1)
    return [*stats, _readout(net, Sw, St)], tight


def _gain_matrix(net: LNNet[fmpq], li: int) -> np.ndarray:
    """``diag(gain)`` of LayerNorm ``li`` (0-based; the identity without a gain), exact."""
    n, gain = net.widths[li], net.norm(li).gain
    g = [fmpq(1)] * n if gain is None else list(gain)
    return np.array([[g[i] * int(i == j) for j in range(n)] for i in range(n)], dtype=object)


def _readout(net: LNNet[fmpq], Sw: np.ndarray, St: np.ndarray) -> LayerStats:
    """The scores ``z = R h + r``: scatter ``R S R^T``, pencil on ``range(R D P)``.

    ``h = D u + c`` with ``u`` orthogonal to ``1`` (the last LayerNorm's output, ``P`` the
    centring projection) and ``D = diag(gain)`` (the identity without a gain)."""
    n = net.widths[-1]
    R = np.array(net.readout.W, dtype=object)
    last = net.norm(net.depth - 1)
    P = _gain_matrix(net, net.depth - 1).dot(_centring(n, last.groups, not last.rms))
    Rb = np.vectorize(arb, otypes=[object])(R)
    Sw_z, St_z = congruent(Rb, Sw), congruent(Rb, St)
    zbasis = _column_basis(R.dot(P))
    lz = pencil_bounds(Sw_z, St_z, zbasis) if zbasis else None
    return LayerStats("readout", R.shape[0], ssr_of_scatter(Sw_z, St_z), lz)


def _hidden(
    net: LNNet[fmpq],
    X: np.ndarray,
    labels: list[Any],
    progress: Callable[[int, int], None] | None,
) -> tuple[list[LayerStats], bool]:
    eps = arb(net.eps)
    H = np.vectorize(arb, otypes=[object])(X)
    stats: list[LayerStats] = []
    tight = True
    for li, layer in enumerate(net.layers, 1):
        n = len(layer.b)  # this layer's width (widths may differ)
        # LN(y) is orthogonal to 1; the gain maps that plane to D 1^perp (the bias only shifts)
        D = _gain_matrix(net, li - 1)
        g, centre = net.groups[li - 1], not net.norm(li - 1).rms
        basis = _column_basis(D.dot(np.array(_centred_basis(n, g, centre), dtype=object).T))
        W = np.array([[arb(w) for w in row] for row in layer.W], dtype=object)
        b = np.array([arb(v) for v in layer.b], dtype=object)
        Y = object_dot(H, W.T) + b
        if g == 1:
            C = Y - (Y.sum(axis=1) / n).reshape(-1, 1) if centre else Y
            var = (C * C).sum(axis=1) / n + eps
            if not all(v > 0 for v in var):
                return [], False  # too few bits (or LN of a constant vector): more precision
            root = np.array([v.sqrt() for v in var], dtype=object)
            H = C / root.reshape(-1, 1)
        else:  # LN-G: the same in each group of k
            k = n // g
            Y3 = Y.reshape(len(Y), g, k)
            C3 = Y3 - (Y3.sum(axis=2) / k).reshape(len(Y), g, 1) if centre else Y3
            var3 = (C3 * C3).sum(axis=2) / k + eps
            if not all(v > 0 for v in var3.ravel()):
                return [], False
            root3 = np.vectorize(lambda v: v.sqrt(), otypes=[object])(var3)
            H = (C3 / root3.reshape(len(Y), g, 1)).reshape(len(Y), n)
        norm = net.norm(li - 1)
        if norm.gain is not None:
            H = H * np.array([arb(g) for g in norm.gain], dtype=object)
        if norm.bias is not None:
            H = H + np.array([arb(c) for c in norm.bias], dtype=object)
        Sw, St = scatter_matrices(H, labels)
        s = ssr_of_scatter(Sw, St)
        tight = tight and (s is None or s.hi - s.lo < TIGHT)
        lssr = pencil_bounds(Sw, St, basis) if basis else None
        stats.append(LayerStats(f"LN {li}", n, s, lssr))
        if progress:
            progress(li, net.depth + 1)
    stats.append(_readout(net, Sw, St))
    if progress:
        progress(net.depth + 1, net.depth + 1)
    return stats, tight
