"""The contrast: what an affine classifier (no LayerNorm) cannot do, certified exactly.

Two classes ``s_k = +1`` (label 1) and ``s_k = -1`` (label 0) are separated by
an affine function ``w . x + b`` iff the linear system ``s_k (w^T x_k + b) >= 1``
is feasible (any strict separator can be scaled to margin 1).  By Farkas' lemma
(Gale's form) it is infeasible iff there are ``lambda_k >= 0`` with
``sum lambda_k = 1`` and ``sum lambda_k s_k (x_k, 1) = 0``: adding the
inequalities with those weights gives ``0 >= 1``.

:func:`affine_separation` solves whichever of the two systems is feasible with
an exact simplex method and returns the rational separator or the rational
witness, each checked by exact arithmetic.  Example: the labeling ``0, 1, 0`` of
the collinear points ``0, 1, 2`` has the witness ``(1/4, 1/2, 1/4)``, so no
LayerNorm-free net separates it, while one LayerNorm layer does (Ni, Guo, Jia and
Huang, "On the Nonlinearity of Layer Normalization", ICML 2024).  A BatchNorm layer
at inference, with its statistics fixed, is an affine map, so inserting it changes
nothing here (proofs/affine_contrast.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from flint import fmpq

from .arith import exact
from .errors import InputError


@dataclass(frozen=True)
class AffineVerdict:
    """Either an exact separator ``(w, b)`` or an exact Farkas witness ``lambda``."""

    separator: tuple[tuple[fmpq, ...], fmpq] | None
    witness: tuple[fmpq, ...] | None

    @property
    def separable(self) -> bool:
        return self.separator is not None


def _signs(y: Sequence[int]) -> list[int]:
    if set(y) - {0, 1}:
        raise InputError("labels must be 0 or 1")
    return [1 if label else -1 for label in y]


def is_witness(X: Sequence[Sequence[fmpq]], y: Sequence[int], lam: Sequence[fmpq]) -> bool:
    """``lambda >= 0``, ``sum lambda = 1``, ``sum lambda_k s_k (x_k, 1) = 0``, exactly."""
    s, d = _signs(y), len(X[0])
    if any(v < 0 for v in lam) or sum(lam, fmpq(0)) != 1:
        return False
    rows = [[*x, fmpq(1)] for x in X]
    return all(
        sum((lam[k] * s[k] * rows[k][j] for k in range(len(X))), fmpq(0)) == 0 for j in range(d + 1)
    )


def is_separator(X: Sequence[Sequence[fmpq]], y: Sequence[int], w: Sequence[fmpq], b: fmpq) -> bool:
    """``s_k (w^T x_k + b) >= 1`` for every point, exactly."""
    return all(
        sk * (sum((wi * xi for wi, xi in zip(w, x, strict=True)), fmpq(0)) + b) >= 1
        for sk, x in zip(_signs(y), X, strict=True)
    )


def feasible_point(A: Sequence[Sequence[fmpq]], b: Sequence[fmpq]) -> list[fmpq] | None:
    """A point of ``{x >= 0 : A x = b}`` in exact rationals, or None if it is empty.

    Phase one of the simplex method with Bland's rule (which cannot cycle), on an
    exact tableau.  (SymPy 1.14's simplex returns infeasible points on some of
    these systems, so it is not used.)
    """
    rows, n = len(A), len(A[0])
    # rows with b >= 0, then one artificial variable per row
    T = []
    for i in range(rows):
        sign = -1 if b[i] < 0 else 1
        T.append(
            [sign * a for a in A[i]] + [fmpq(int(j == i)) for j in range(rows)] + [sign * b[i]]
        )
    basis = [n + i for i in range(rows)]
    cost = [fmpq(0)] * n + [fmpq(1)] * rows + [fmpq(0)]
    reduced = [cost[j] - sum((T[i][j] for i in range(rows)), fmpq(0)) for j in range(n + rows + 1)]
    while True:
        entering = next((j for j in range(n + rows) if reduced[j] < 0), None)
        if entering is None:
            break
        ratios = [
            (T[i][-1] / T[i][entering], basis[i], i) for i in range(rows) if T[i][entering] > 0
        ]
        _, _, r = min(ratios)  # smallest ratio, ties by smallest basic index (Bland)
        pivot = T[r][entering]
        T[r] = [v / pivot for v in T[r]]
        for i in range(rows):
            if i != r and T[i][entering] != 0:
                f = T[i][entering]
                T[i] = [vi - f * vr for vi, vr in zip(T[i], T[r], strict=True)]
        f = reduced[entering]
        reduced = [vi - f * vr for vi, vr in zip(reduced, T[r], strict=True)]
        basis[r] = entering
    x = [fmpq(0)] * (n + rows)
    for i, j in enumerate(basis):
        x[j] = T[i][-1]
    return x[:n] if all(v == 0 for v in x[n:]) else None


def affine_separation(X: Sequence[Sequence[object]], y: Sequence[int]) -> AffineVerdict:
    """Decide, exactly, whether an affine classifier realises the labeling ``y`` of ``X``."""
    Xq = [[exact(v) for v in x] for x in X]
    s, m, d = _signs(y), len(Xq), len(Xq[0])
    rows = [[*x, fmpq(1)] for x in Xq]
    # Farkas witness: lambda >= 0 with sum lambda_k s_k (x_k, 1) = 0 and sum lambda = 1
    G = [[s[k] * rows[k][j] for k in range(m)] for j in range(d + 1)] + [[fmpq(1)] * m]
    lam = feasible_point(G, [fmpq(0)] * (d + 1) + [fmpq(1)])
    if lam is not None:
        if not is_witness(Xq, y, lam):  # pragma: no cover - never, by construction
            raise ArithmeticError("the simplex witness does not check")
        return AffineVerdict(None, tuple(lam))
    # separator: s_k ((p - n) . (x_k, 1)) - slack_k = 1, with p, n, slack >= 0
    A = [
        [s[k] * v for v in rows[k]]
        + [-s[k] * v for v in rows[k]]
        + [fmpq(-int(j == k)) for j in range(m)]
        for k in range(m)
    ]
    z = feasible_point(A, [fmpq(1)] * m)
    if z is None:  # pragma: no cover - Farkas: exactly one of the two systems is feasible
        raise ArithmeticError("neither a witness nor a separator")
    wb = [z[i] - z[d + 1 + i] for i in range(d + 1)]
    if not is_separator(Xq, y, wb[:d], wb[d]):  # pragma: no cover
        raise ArithmeticError("the simplex separator does not check")
    return AffineVerdict((tuple(wb[:d]), wb[d]), None)
