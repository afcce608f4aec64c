"""The certificate of a depth-2 LN-G block net by its margin theorem, in ``O(m log m)``.

proofs/ln_g_depth.md, Theorem 5.  A net qualifies when its weights say so (nothing else is
read): depth 2, no LayerNorm gain or bias, groups of 3 in both layers, and

* layer 1: every group's rows ``(s_j r, -s_j r, 0)`` for one ``r`` and ``s_j >= 0`` (Lemma 7 of
  proofs/ln_g_steps.md: group ``j`` reads ``sqrt(6) sigma_j(t)``,
  ``sigma_j(t) = sigma_{b_j}(s_j t - C_j)`` of ``t = r . x``).  The step group with the widest
  step (the largest ``(b_j / s_j)^2``) is the *pass-through* ``phi = sigma_P``; every other group
  is a *step*: a steep one at ``gamma_j = C_j / s_j`` (``s_j > 0``) or a constant
  ``sigma_{b_j}(-C_j)`` (``s_j = 0``, ``C_j != 0``), with ideal value ``sign(s_j t - C_j)``;
* layer 2: *units*, each with rows ``(v, -v, 0)``, centre 0, reading every layer-1 group
  along ``u`` with coefficient ``A_rj / 2`` (``A_rj = v_{3j} - v_{3j+1}``), ``A_rP > 0``: unit
  ``r`` is fed ``x_r = (sqrt(6)/2) sum_j A_rj sigma_j(t)``;
* a readout reading every unit along ``u`` (coefficients ``kappa_cr``, any biases ``rho_c``).

With the steps at their ideal values a unit's input is ``(sqrt(6)/2) A_rP (phi(t) - l_r(t))``:
its *level* ``l_r(t) = -sum_{j != P} A_rj sign_j(t) / A_rP`` is constant between two steep
centres (a *block*).  So the certificate sorts each block's levels, places every point's
``phi(t)`` among them (which units are on: the ideal scores by prefix sums) and takes its
distance ``mu(t)`` to the nearest level; the steps' tails move a unit's input by at most
``alpha tau*(t)`` in units of ``phi`` (``alpha = max_r sum_{j != P} |A_rj| / A_rP``, ``tau*(t)``
the largest tail of a step at ``t``), so every unit has its ideal sign with
``|x_r| >= X(t) = (sqrt(6)/2) min_r A_rP (mu(t) - alpha tau*(t))``, and the units' own tails are
at most ``b'^2 / (2 X^2)``.  Cost: ``O(m log m + B U log U)`` for ``B`` blocks of ``U`` units,
plus reading the weights once.  The margins it proves are lower bounds, usually below the
generic pass's.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
from flint import fmpq

from ... import interval as iv
from ...model import LNNet
from .line import as_floats, below, exact_order, on_one_scale, projections
from .margins import Margins
from .reads import (
    Group,
    bounds,
    integers,
    inverse_up,
    sqrt6_over,
    steps_of,
    u_coefficients,
)

THEOREM = "proofs/ln_g_depth.md, Theorem 5"


class _Layer1:
    """Layer 1 read by Theorem 5: ``r``; the pass-through ``P`` (centre ``gammaP``, ``betaP2 =
    (b_P / s_P)^2``); the steep steps ``cuts`` (indices, centres ``gamma``, the largest
    ``(b_j / s_j)^2``); the constants' ideal signs and largest tail bound."""

    def __init__(self, groups: list[Group]) -> None:
        self.ok = False
        r = next((g.w for g in groups if any(g.w)), None)
        if r is None:
            return
        pivot = next(i for i, v in enumerate(r) if v)
        scales = []
        for g in groups:
            s = g.w[pivot] / r[pivot]
            if s < 0 or g.w != tuple(s * v for v in r):
                return
            scales.append(s)
        steps = [j for j, s in enumerate(scales) if s > 0]
        consts = [j for j, s in enumerate(scales) if s == 0]
        if not steps or any(groups[j].centre == 0 for j in consts):
            return
        width = {j: groups[j].b2 / scales[j] ** 2 for j in steps}
        self.P = max(steps, key=lambda j: (width[j], -j))
        self.r = r
        self.gammaP = groups[self.P].centre / scales[self.P]
        self.betaP2 = width[self.P]
        self.cuts = [j for j in steps if j != self.P]
        self.gamma = [groups[j].centre / scales[j] for j in self.cuts]
        self.cut_b2 = max((width[j] for j in self.cuts), default=fmpq(0))
        self.const_sign = {j: -1 if groups[j].centre > 0 else 1 for j in consts}
        # the tail of sigma_b(-C) is at most b^2 / (2 C^2) (proofs/ln_g_steps.md, Lemma 2)
        self.const_tail = max(
            (groups[j].b2 / (2 * groups[j].centre ** 2) for j in consts), default=fmpq(0)
        )
        self.ok = True


def blocks_certificate(
    net: LNNet[fmpq], X: tuple[tuple[fmpq, ...], ...], labels: np.ndarray
) -> Margins | None:
    """Margin enclosures for every point by Theorem 5 (``-inf, inf`` where it decides nothing),
    or None when ``net`` (folded: no gains) is not of the theorem's form or its numbers need
    too long a common denominator."""
    with np.errstate(all="ignore"):  # inf and NaN leave points undecided
        return _blocks_certificate(net, X, labels)


def _blocks_certificate(
    net: LNNet[fmpq], X: tuple[tuple[fmpq, ...], ...], labels: np.ndarray
) -> Margins | None:
    if net.depth != 2 or len(net.classes) < 2:
        return None
    if not (net.norm(0).is_identity and net.norm(1).is_identity):
        return None
    first, units = (steps_of(a, net.eps) for a in net.layers)
    if not first or not units or len(first) != net.norm(0).groups:
        return None
    if len(units) != net.norm(1).groups or any(u.centre != 0 for u in units):
        return None
    one = _Layer1(first)
    A = u_coefficients([u.w for u in units], len(first))
    kappa = u_coefficients(net.readout.W, len(units))
    if not one.ok or A is None or kappa is None:
        return None
    ints = integers(kappa)
    if ints is None or any(a[one.P] <= 0 for a in A):
        return None
    K, Dk = ints
    alpha = max(sum(abs(a[j]) for j in range(len(a)) if j != one.P) / a[one.P] for a in A)
    least = min(a[one.P] for a in A)

    t = projections(one.r, X)
    centres = on_one_scale([one.gammaP, *one.gamma])
    if t is None or centres is None:
        return None
    (N, D), (Pc, E) = t, centres
    scale = D * E
    V, Cs = N * E, Pc * D
    z = as_floats(V - Cs[0], scale)  # t - gammaP
    order = exact_order(Cs[1:])
    cuts = Cs[1:][order]
    k, on = below(V, cuts)
    tau = _step_tails(V, cuts, k, scale, one)
    if z is None or tau is None:
        return None
    phi = _phi(z, one.betaP2)

    levels = _levels(A, one, order)  # (blocks, units)
    lo_l, hi_l = iv.enclose(levels)
    by_lo = np.argsort(lo_l, axis=1, kind="stable")
    lo_s = np.take_along_axis(lo_l, by_lo, axis=1)
    hi_s = np.sort(hi_l, axis=1)
    n1 = _rank(hi_s, k, phi[0], strict=True)  # levels certainly below phi
    n2 = _rank(lo_s, k, phi[1], strict=False)  # levels possibly below (or at) phi
    U = lo_s.shape[1]
    inf = np.full(len(k), np.inf)
    gap_below = np.where(n1 > 0, iv.down(phi[0] - hi_s[k, np.maximum(n1 - 1, 0)]), inf)
    gap_above = np.where(n2 < U, iv.down(lo_s[k, np.minimum(n2, U - 1)] - phi[1]), inf)
    mu = np.minimum(gap_below, gap_above)
    room = iv.down(mu - iv.up(bounds(alpha)[1] * tau))
    s6 = sqrt6_over(2)
    X_lo = iv.down(iv.down(s6[0] * bounds(least)[0]) * room)
    half_b2 = bounds(max(u.b2 for u in units) / 2)[1]
    tau2 = iv.up(half_b2 * inverse_up(iv.down(X_lo * X_lo)))
    undecided = on | (n1 != n2) | ~(room > 0) | ~np.isfinite(phi[0] + phi[1])

    s6k = sqrt6_over(2 * Dk)
    rho = net.readout.b
    lo, hi = np.full(len(k), np.inf), np.full(len(k), np.inf)
    for l_ in np.unique(labels).tolist():
        rows = np.flatnonzero(labels == l_)
        kk, nn = k[rows], n1[rows]
        for c in range(len(net.classes)):
            if c == l_:
                continue
            dK = K[l_] - K[c]
            prefix = np.zeros((lo_s.shape[0], U + 1), dtype=np.int64)
            np.cumsum(dK[by_lo], axis=1, out=prefix[:, 1:])
            ideal = (2 * prefix[kk, nn] - prefix[kk, U]).astype(np.float64)  # exact: < 2^52
            diff = iv.add(iv.mul((ideal, ideal), s6k), bounds(rho[l_] - rho[c]))
            spread = int(np.abs(dK).sum())
            err = iv.up(iv.up(s6k[1] * spread) * tau2[rows]) if spread else 0.0
            lo[rows] = np.minimum(lo[rows], iv.down(diff[0] - err))
            hi[rows] = np.minimum(hi[rows], iv.up(diff[1] + err))
    return Margins.of(lo, hi, undecided, THEOREM)


def _step_tails(
    V: np.ndarray, cuts: np.ndarray, k: np.ndarray, scale: int, one: _Layer1
) -> np.ndarray | None:
    """Upper bounds of ``tau*(t)``, the largest tail of a step (steep or constant) at each
    point: ``max((b/s)^2 / (2 d^2), const_tail)`` with ``d`` the distance to the nearest steep
    centre (Lemma 2 of proofs/ln_g_steps.md: ``tau_b(x) <= b^2 / (2 x^2)``, decreasing in
    ``|x|``)."""
    tau = np.full(len(V), bounds(one.const_tail)[1])
    G = len(cuts)
    if not G:
        return tau
    d = np.full(len(V), np.inf)
    for side in (-1, 1):
        rows = np.flatnonzero(k > 0 if side < 0 else k < G)
        near = cuts[k[rows] - 1] if side < 0 else cuts[k[rows]]
        got = as_floats((V[rows] - near) * -side, scale)
        if got is None:
            return None
        d[rows] = np.minimum(d[rows], np.maximum(iv.down(got), 0.0))
    half = bounds(one.cut_b2 / 2)[1]
    return np.maximum(tau, iv.up(half * inverse_up(iv.down(d * d))))


def _phi(z: np.ndarray, beta2: fmpq) -> iv.Interval:
    """Enclosures of ``phi = z / sqrt(z^2 + beta2)`` at the floats ``z`` (each the correctly
    rounded value of the exact ``t - gammaP``)."""
    zi = iv.down(z), iv.up(z)
    b2 = bounds(beta2)
    root = iv.sqrt(iv.add(iv.square(zi), (np.array(b2[0]), np.array(b2[1]))))
    return iv.div_positive(zi, root)


def _levels(A: Sequence[Sequence[fmpq]], one: _Layer1, order: np.ndarray) -> np.ndarray:
    """The levels ``l_r`` of every unit (columns) on every block (rows: block ``k`` has ``k``
    steep centres below it), exactly: ``-(sum_consts A_rj sign_j + 2 S_r(k) - S_r(all)) /
    A_rP`` with ``S_r(k)`` the sum of ``A_rj`` over the ``k`` lowest steep centres."""
    cuts = [one.cuts[i] for i in order.tolist()]
    out = np.empty((len(cuts) + 1, len(A)), dtype=object)
    for r, a in enumerate(A):
        const = sum((a[j] * s for j, s in one.const_sign.items()), fmpq(0))
        prefix = list(itertools.accumulate((a[j] for j in cuts), initial=fmpq(0)))
        total = prefix[-1]
        top = a[one.P]
        out[:, r] = [-(const + 2 * p - total) / top for p in prefix]
    return out


def _rank(rows: np.ndarray, which: np.ndarray, x: np.ndarray, strict: bool) -> np.ndarray:
    """For each ``i``: how many entries of the sorted row ``rows[which[i]]`` are ``< x[i]``
    (``strict``) or ``<= x[i]``; a binary search on every point at once."""
    n = rows.shape[1]
    lo = np.zeros(len(x), dtype=np.intp)
    hi = np.full(len(x), n, dtype=np.intp)
    while True:
        active = lo < hi
        if not active.any():
            return lo
        mid = (lo + hi) // 2
        value = rows[which, np.minimum(mid, n - 1)]
        go = (value < x) if strict else (value <= x)
        go &= active
        lo = np.where(go, mid + 1, lo)
        hi = np.where(active & ~go, mid, hi)
