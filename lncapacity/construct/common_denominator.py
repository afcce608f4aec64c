"""Exact rationals as integers over a common denominator: the LN-G constructions at scale.

A point set's coordinates are exact rationals (:class:`flint.fmpq`), and arithmetic on them
costs a microsecond or more an operation; at a million points every pass over them counts.
:class:`Columns` reads each coordinate once, as integers over the least common denominator of
its column, after which projections ``w . x`` (exact), their order, extremes and float values
are integer arithmetic (Python's integers, in NumPy object arrays) and NumPy.  The numbers are
the same rationals: whatever is computed from them is what the rationals give.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from flint import fmpq

from ..arith import to_float


class Columns:
    """The coordinates of ``m`` points in ``R^d``: ``x[i][k] = num[k][i] / den[k]`` exactly
    (``num[k]`` an object array of Python integers, ``den[k] > 0`` the least common denominator
    of column ``k``)."""

    def __init__(self, X: Sequence[Sequence[fmpq]]) -> None:
        self.m, self.d = len(X), len(X[0])
        self.num: list[np.ndarray] = []
        self.den: list[int] = []
        for k in range(self.d):
            column = [x[k] for x in X]
            nums = [int(v.p) for v in column]
            dens = [int(v.q) for v in column]
            distinct = set(dens)
            D = math.lcm(*distinct)
            factor = {q: D // q for q in distinct}
            out = np.empty(self.m, dtype=object)
            out[:] = [n * factor[q] for n, q in zip(nums, dens, strict=True)]
            self.num.append(out)
            self.den.append(D)

    def floats(self) -> np.ndarray:
        """The coordinates as float64 ``(m, d)``, each correctly rounded (as :func:`to_float`:
        ``±inf`` beyond the float range)."""
        out = np.empty((self.m, self.d))
        for k, (N, D) in enumerate(zip(self.num, self.den, strict=True)):
            try:
                out[:, k] = (N / D).astype(np.float64)  # int / int rounds correctly
            except OverflowError:
                out[:, k] = [to_float(fmpq(int(n), D)) for n in N]
        return out

    def project(self, w: Sequence[fmpq]) -> tuple[np.ndarray, int]:
        """``(T, D)`` with ``w . x_i = T[i] / D`` exactly for every point (``D > 0``)."""
        return self._combine(w, absolute=False)

    def abs_dot_max(self, w: Sequence[fmpq]) -> fmpq:
        """``max_i sum_k |w_k| |x_ik|``, exactly."""
        T, D = self._combine(w, absolute=True)
        return fmpq(int(T.max()), D) if self.m else fmpq(0)

    def _combine(self, w: Sequence[fmpq], absolute: bool) -> tuple[np.ndarray, int]:
        """``sum_k w_k x_ik`` (or ``sum_k |w_k| |x_ik|``) as ``(T, D)``, ``T[i] / D`` exactly."""
        D = 1
        for wk, Dk in zip(w, self.den, strict=True):
            if wk:
                D = math.lcm(D, Dk * int(wk.q))
        T = np.zeros(self.m, dtype=object)
        for wk, N, Dk in zip(w, self.num, self.den, strict=True):
            if wk:
                f = int(wk.p) * (D // (int(wk.q) * Dk))
                T = T + (abs(f) * np.abs(N) if absolute else f * N)
        return T, D

    def extremes(self) -> tuple[fmpq | None, fmpq]:
        """The least nonzero ``|x_ik|`` (None if every coordinate is 0) and the largest
        ``|x_ik|``, exactly."""
        low: fmpq | None = None
        high = fmpq(0)
        for N, D in zip(self.num, self.den, strict=True):
            A = np.abs(N)
            high = max(high, fmpq(int(A.max()), D))
            nonzero = A[A != 0]
            if len(nonzero):
                v = fmpq(int(nonzero.min()), D)
                low = v if low is None else min(low, v)
        return low, high


def dyadic_in(L: int, H: int, T: int, Q: int) -> tuple[int, int]:
    """``(n, k)`` with ``n / 2^k`` the dyadic rational :func:`lncapacity.arith.dyadic_between`
    gives for ``(L/Q, H/Q, T/Q)`` (``Q > 0``, ``L < T < H``), in integers: the nearest to
    ``T/Q`` at the fewest bits ``k`` (from the same first ``k``) that lies strictly inside."""
    g = math.gcd(H - L, Q)
    k = max(0, (Q // g).bit_length() - ((H - L) // g).bit_length() - 1)
    while True:
        n = ((T << (k + 1)) + Q) // (2 * Q)  # floor(T 2^k / Q + 1/2)
        if (L << k) < n * Q < (H << k):
            return n, k
        k += 1
