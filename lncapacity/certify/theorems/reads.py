"""What a group of 3 and a map after it compute, read from the weights alone.

proofs/ln_g_steps.md, Lemma 7: a group of 3 whose rows are ``(w, -w, 0)`` and whose biases
are ``(p, q, e)`` is fed ``y`` with ``y - mean(y) 1 = (w . h - C) u + B v`` (``u = (1, -1, 0)``,
``v = (1, 1, -2)``), ``C = (q - p) / 2``, ``B = (p + q - 2 e) / 6``, and reads
``u . LN(y) = sqrt(6) sigma_b(w . h - C)`` with ``b^2 = 3 B^2 + 3 eps / 2`` (any ``eps >= 0``);
a map after it with weights ``(a1, a2, a3)`` on the group and ``a1 + a2 = 2 a3`` reads it
along ``u`` only: ``((a1 - a2) / 2) u . LN(y)``.  This module checks those forms exactly and
returns ``C``, ``b^2`` and the coefficients ``a1 - a2``; it knows nothing of how a net was
built.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from flint import arb, fmpq

from ... import interval as iv
from ...arith import lower_bound_float, precision
from ...model import Affine

GROUP = 3


@dataclass(frozen=True)
class Group:
    """One group of 3 of a layer, read from its weights (Lemma 7).

    Rows ``(w, -w, 0)``, fed ``(w . h - centre) u + B v``, read
    ``sqrt(6) sigma_b(w . h - centre)`` with ``b2 = b^2``."""

    w: tuple[fmpq, ...]
    centre: fmpq
    b2: fmpq


def steps_of(layer: Affine[fmpq], eps: fmpq) -> list[Group] | None:
    """Every group of 3 of ``layer`` read as a step (Lemma 7), or None if some group's rows are
    not ``(w, -w, 0)`` for one ``w``."""
    W, b = layer.W, layer.b
    if len(W) % GROUP:
        return None
    out = []
    zeros = tuple(fmpq(0) for _ in W[0]) if W else ()
    negated: dict[tuple[fmpq, ...], tuple[fmpq, ...]] = {}  # rows repeat: negate each once
    half_eps = 3 * eps / 2
    for i in range(0, len(W), GROUP):
        w = W[i]
        neg = negated.get(w)
        if neg is None:
            neg = negated[w] = tuple(-x for x in w)
        if W[i + 1] != neg or W[i + 2] != zeros:
            return None
        p, q, e = b[i], b[i + 1], b[i + 2]
        B = (p + q - 2 * e) / 6
        out.append(Group(w, (q - p) / 2, 3 * B * B + half_eps))
    return out


def u_coefficients(rows: Sequence[Sequence[fmpq]], groups: int) -> list[list[fmpq]] | None:
    """For each row (a class of the readout, or a unit of the next layer) and each group of 3
    it reads, ``a1 - a2``; or None if some row reads some group off ``u``.

    The row reads ``((a1 - a2) / 2) u . LN`` of the group (Lemma 7) when ``a1 + a2 = 2 a3``."""
    out = []
    for row in rows:
        if len(row) != GROUP * groups:
            return None
        coeffs = []
        for i in range(0, len(row), GROUP):
            a1, a2, a3 = row[i], row[i + 1], row[i + 2]
            if a1 + a2 != 2 * a3:
                return None
            coeffs.append(a1 - a2)
        out.append(coeffs)
    return out


# ---------------------------------------------------------------------------
# rigorous floats


def bounds(q: fmpq | int) -> tuple[float, float]:
    """Floats ``lo <= q <= hi`` (the tightest)."""
    lo, hi = iv.enclose([fmpq(q)])
    return float(lo[0]), float(hi[0])


def sqrt6_over(n: int) -> tuple[float, float]:
    """Floats around ``sqrt(6) / n`` (``n > 0``)."""
    with precision(128):
        x = arb(6).sqrt() / n
        return lower_bound_float(x), -lower_bound_float(-x)


def integers(values: Sequence[Sequence[fmpq]]) -> tuple[np.ndarray, int] | None:
    """``(K, D)`` with ``values[i][j] = K[i, j] / D`` (``D > 0`` the least common denominator,
    ``K`` int64) when every sum of a row's absolute values stays below ``2^50`` (so sums and
    differences of a few such sums are exact in float64 too); None otherwise."""
    dens = {int(v.q) for row in values for v in row}
    D = math.lcm(*dens) if dens else 1
    limit = 2**50
    out = np.zeros((len(values), len(values[0]) if values else 0), dtype=np.int64)
    for i, row in enumerate(values):
        ints = [int(v.p) * (D // int(v.q)) for v in row]
        if sum(abs(k) for k in ints) >= limit:
            return None
        out[i] = ints
    return out, D


def up_sum(*terms: np.ndarray) -> np.ndarray:
    """An upper bound of the sum of non-negative upper bounds."""
    total = terms[0]
    for t in terms[1:]:
        total = iv.up(total + t)
    return total


def inverse_up(x: np.ndarray) -> np.ndarray:
    """An upper bound of ``1 / y`` for every ``y >= x`` (``x`` lower bounds, ``inf`` where
    ``x <= 0`` or NaN)."""
    with np.errstate(divide="ignore"):
        return iv.up(1.0 / np.where(x > 0, x, 0.0))
