"""Scalar chains: nets whose every layer has rank at most one, as an exact scalar recurrence
(:func:`scalar_chain`), and its float64 interval pass (:func:`scalar_interval_pass`).

The constructions' nets are such chains (so are the tails of circle nets handing over to
``runs`` folds: ``_rank_one_tail``); their balls and intervals lose nothing to dependency from
layer to layer (proofs/interval_rounding.md, "Scalar chains").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from flint import fmpq

from .. import interval as iv
from ..algebraic import has_radicals
from ..model import LNNet


def scalar_interval_pass(
    chain: Any,
    X: Sequence[Sequence[fmpq]],
    labels: Sequence[int],
    h: iv.Interval | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`~lncapacity.certify.intervals.interval_pass` for a net that is a scalar chain
    (:func:`scalar_chain`).

    The first scalar ``s_1 = r_1 . x`` is exact (rational), then enclosed; each
    layer maps the interval of ``s`` to an interval containing the range of
    ``(beta + alpha (s - s0)) / sqrt(g (s - s0)^2 + k)`` over it, by
    :func:`lncapacity.interval.scalar_range`: the map evaluated at the two float
    ends with every operation rounded outwards, the hull taken where the map is
    monotone, its extremum added where the interval may contain its one critical
    point (proofs/interval_rounding.md, "Scalar chains").  The width grows by
    ``|f'|`` plus a few ulps a layer, as float64's own error does, not by the
    ``~1.1`` bits a layer of ball arithmetic's dependency problem.  The margins
    ``z_c - z_j`` are the same form with the exact differences of the readout
    rows, so they are enclosed by the same rule (not as a difference of
    intervals).  Same returns as :func:`~lncapacity.certify.intervals.interval_pass`.  With
    ``h`` (intervals around the chain's inputs, the outputs of the layers before it:
    ``_rank_one_tail``) the first scalar is enclosed from them instead of computed exactly
    from ``X``.
    """
    first, steps, bias = chain
    if h is None:
        s = iv.enclose([sum((w * v for w, v in zip(first, x, strict=True)), fmpq(0)) for x in X])
    else:
        r = iv.enclose(np.array([list(first)], dtype=object))
        s = tuple(v[:, 0] for v in iv.matvec(r, h))
    for s0, g, k, alphas, betas in steps[:-1]:
        s = iv.scalar_range(s0, g, k, betas[0], alphas[0])(s)
    s0, g, k, alphas, betas = steps[-1]
    m, k_cls = len(X), len(bias)
    zlo, zhi = np.empty((m, k_cls)), np.empty((m, k_cls))
    for c in range(k_cls):
        z = iv.add(iv.scalar_range(s0, g, k, betas[c], alphas[c])(s), iv.enclose([bias[c]]))
        zlo[:, c], zhi[:, c] = z
    mlo, mhi = np.full(m, np.inf), np.full(m, np.inf)
    lab = np.asarray(labels, dtype=np.intp)
    for c in range(k_cls):
        rows = np.nonzero(lab == c)[0]
        sub = (s[0][rows], s[1][rows])
        for j in range(k_cls):
            if j == c or not len(rows):
                continue
            f = iv.scalar_range(s0, g, k, betas[c] - betas[j], alphas[c] - alphas[j])
            d = iv.add(f(sub), iv.enclose([bias[c] - bias[j]]))
            # min over j, NaN-propagating: a NaN anywhere leaves the point undecided
            mlo[rows] = np.minimum(mlo[rows], d[0])
            mhi[rows] = np.minimum(mhi[rows], d[1])
    return mlo, mhi, zlo, zhi


def _algebraic(net: LNNet[Any]) -> bool:
    """Whether some weight is an exact algebraic number (:mod:`lncapacity.algebraic`)."""
    return has_radicals(net)


def _plain(net: LNNet[Any]) -> bool:
    """Whether every layer normalises as a whole, without gain or bias (LayerNorm or RMSNorm:
    the scalar chain's forms)."""
    return all(n.is_identity and n.groups == 1 for n in net.norms)


def rank_one(W: Sequence[Sequence[fmpq]]) -> tuple[list[fmpq], list[fmpq]] | None:
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


def _rank_one_tail(net: LNNet[fmpq]) -> tuple[int, Any] | None:
    """``(j, chain)``: the layers from ``j >= 1`` on, with the readout, as a
    :func:`scalar_chain` (the longest such tail), or None.  Circle layers followed by
    ``runs`` folds (``--method circle`` handing over) are such nets."""
    if not _plain(net):
        return None
    j = len(net.layers)
    while j > 0 and rank_one(net.layers[j - 1].W) is not None:
        j -= 1
    if j == 0 or j == len(net.layers):
        return None
    d = len(net.layers[j].W[0])
    norms = net.norms[j:] if net.norms else ()
    tail = LNNet(d, net.width, net.eps, net.layers[j:], net.readout, net.classes, {}, norms)
    chain = scalar_chain(tail)
    return None if chain is None else (j, chain)


def scalar_chain(net: LNNet[fmpq]) -> Any:
    """The net as a scalar recurrence, when every layer ``W_l`` has rank at most one.

    With ``W_l = c_l r_l^T`` the layer input is ``c_l s_l + b_l`` for the scalar
    ``s_l = r_l . h_{l-1}`` (``s_1 = r_1 . x``).  Centring gives ``A s + B`` with
    ``A = P c_l``, ``B = P b_l`` (``P = I - 1 1^T / n``), whose variance is
    ``g (s - s0)^2 + k - eps`` after completing the square (``g = |A|^2 / n``,
    ``s0 = -(A . B) / |A|^2``, ``k = |B - (A.B/|A|^2) A|^2 / n + eps >= 0``; an RMSNorm
    layer does not centre: ``A = c_l``, ``B = b_l``, the same form).  So for
    each read ``m`` of ``h_l`` (the next layer's ``r``, or the readout's rows):

        m . h_l = (m.A (s - s0) + m.(A s0 + B)) / sqrt(g (s - s0)^2 + k).

    Returns ``(r_1, steps, readout bias)`` with ``steps`` of ``(s0, g, k, alphas,
    betas)``, all exact; or None (then the generic pass is used) for a net without
    layers, with a layer of rank two or more, or with a layer whose variance plus
    ``eps`` can vanish (``k = 0``).
    """
    if not _plain(net) or _algebraic(net):
        return None
    factors = [rank_one(layer.W) for layer in net.layers]
    if not net.layers or any(f is None for f in factors):
        return None
    reads = [f[1] for f in factors[1:]]  # type: ignore[index]
    steps = []
    for li, (layer, (col, _)) in enumerate(zip(net.layers, factors, strict=True)):  # type: ignore[misc]
        n = len(layer.b)
        mean_c, mean_b = sum(col, fmpq(0)) / n, sum(layer.b, fmpq(0)) / n
        if net.norm(li).rms:  # RMSNorm: no centring
            mean_c = mean_b = fmpq(0)
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
