"""The certificate of a depth-1 LN-G step net by its margin theorem, in ``O(m log m)``.

proofs/ln_g_steps.md, Theorem 8.  A net qualifies when its weights say so (nothing else is
read): depth 1, no LayerNorm gain or bias, groups of 3, every group's rows ``(r, -r, 0)`` for
one ``r`` (so group ``j`` reads ``sqrt(6) sigma_{b_j}(t - C_j)`` of ``t = r . x``, Lemma 7),
the centres ``C_j`` distinct, and a readout that reads every group along ``u`` only, with
coefficients ``kappa_cj`` and any biases ``rho_c``.  Then for a point at ``t`` (not a centre),
with ``d_-``, ``d_+`` its distances to the nearest centres below and above, ``h`` the least
distance between two centres and ``b^2`` the largest ``b_j^2``, every margin ``z_l - z_c``
lies within ``(sqrt(6)/2) K_lc T`` of its ideal value
``D_lc = (sqrt(6)/2) sum_j (kappa_lj - kappa_cj) sign(t - C_j) + rho_l - rho_c``, where
``K_lc = max_j |kappa_lj - kappa_cj|`` and ``T = (b^2/2) (f(d_-) + f(d_+))``,
``f(d) = 1/d^2 + 1/(h d)``.

Everything the bound needs is computed here from the weights and the points: ``t`` exactly
for every point (:mod:`.line`), the centres sorted exactly, each point's place among them and
its two distances, ``h``, the ideal margins by prefix sums of the ``kappa`` (exact integers),
and the bound in float64 rounded outwards (:mod:`lncapacity.interval`).  Its cost is
``O((m + G) log(m + G) + m k)`` for ``m`` points, ``G`` groups and ``k`` classes, plus reading
the weights once.  The margins it proves are lower bounds, usually below the generic pass's
(which evaluates each point's every group).
"""

from __future__ import annotations

import numpy as np
from flint import fmpq

from ... import interval as iv
from ...model import LNNet
from .line import as_floats, below, exact_order, on_one_scale, projections
from .margins import Margins
from .reads import (
    bounds,
    integers,
    inverse_up,
    sqrt6_over,
    steps_of,
    u_coefficients,
    up_sum,
)

THEOREM = "proofs/ln_g_steps.md, Theorem 8"


def steps_certificate(
    net: LNNet[fmpq], X: tuple[tuple[fmpq, ...], ...], labels: np.ndarray
) -> Margins | None:
    """Margin enclosures for every point by Theorem 8 (``-inf, inf`` where it decides nothing:
    a point on a centre, a bound out of the float range), or None when ``net`` (folded: no
    gains) is not of the theorem's form or its numbers need too long a common denominator."""
    with np.errstate(all="ignore"):  # inf and NaN leave points undecided
        return _steps_certificate(net, X, labels)


def _steps_certificate(
    net: LNNet[fmpq], X: tuple[tuple[fmpq, ...], ...], labels: np.ndarray
) -> Margins | None:
    if net.depth != 1 or len(net.classes) < 2 or not net.norm(0).is_identity:
        return None
    groups = steps_of(net.layers[0], net.eps)
    if not groups or len(groups) != net.norm(0).groups:
        return None
    r = groups[0].w
    if not any(r) or any(g.w != r for g in groups):
        return None
    kappa = u_coefficients(net.readout.W, len(groups))
    ints = None if kappa is None else integers(kappa)
    t = projections(r, X)
    centres = on_one_scale([g.centre for g in groups])
    if ints is None or t is None or centres is None:
        return None
    (N, D), (P, E), (K, Dk) = t, centres, ints
    # one scale for both: t_i = N_i E / (D E), C_j = P_j D / (D E)
    scale = D * E
    V, C = N * E, P * D
    order = exact_order(C)
    C, K = C[order], K[:, order]
    if (C[1:] == C[:-1]).any():
        return None  # two groups with one centre: not the theorem's form
    k, on = below(V, C)
    G = len(C)
    gaps = as_floats(C[1:] - C[:-1], scale) if G > 1 else np.array([np.inf])
    if gaps is None:
        return None
    h = iv.down(np.array(gaps.min())) if G > 1 else np.array(np.inf)
    f_below = _f(V, C, k, scale, h, side=-1)
    f_above = _f(V, C, k, scale, h, side=1)
    if f_below is None or f_above is None:
        return None
    half_b2 = bounds(max(g.b2 for g in groups) / 2)[1]
    T = iv.up(half_b2 * up_sum(f_below, f_above))

    prefix = np.zeros((K.shape[0], G + 1), dtype=np.int64)
    np.cumsum(K, axis=1, out=prefix[:, 1:])
    s6 = sqrt6_over(2 * Dk)  # the ideal scores are (sqrt(6) / (2 Dk)) (2 S(k) - S(G)) + rho
    rho = net.readout.b
    m = len(labels)
    lo, hi = np.full(m, np.inf), np.full(m, np.inf)
    for l_ in np.unique(labels).tolist():
        rows = np.flatnonzero(labels == l_)
        kk = k[rows]
        for c in range(len(net.classes)):
            if c == l_:
                continue
            S = prefix[l_] - prefix[c]
            ideal = (2 * S[kk] - S[G]).astype(np.float64)  # exact: |S| < 2^51
            diff = iv.add(iv.mul((ideal, ideal), s6), bounds(rho[l_] - rho[c]))
            widest = int(np.abs(K[l_] - K[c]).max())
            err = iv.up(iv.up(s6[1] * widest) * T[rows]) if widest else 0.0
            lo[rows] = np.minimum(lo[rows], iv.down(diff[0] - err))
            hi[rows] = np.minimum(hi[rows], iv.up(diff[1] + err))
    return Margins.of(lo, hi, on, THEOREM)


def _f(
    V: np.ndarray, C: np.ndarray, k: np.ndarray, scale: int, h: np.ndarray, side: int
) -> np.ndarray | None:
    """Upper bounds of ``f(d) = 1/d^2 + 1/(h d)`` for ``d`` each point's distance to the
    nearest centre below it (``side = -1``) or above it (``1``); 0 where there is none."""
    G = len(C)
    have = k > 0 if side < 0 else k < G
    out = np.zeros(len(V))
    rows = np.flatnonzero(have)
    if not len(rows):
        return out
    near = C[k[rows] - 1] if side < 0 else C[k[rows]]
    d = as_floats((V[rows] - near) * -side, scale)
    if d is None:
        return None
    d = np.maximum(iv.down(d), 0.0)
    out[rows] = up_sum(inverse_up(iv.down(d * d)), inverse_up(iv.down(h * d)))
    return out
