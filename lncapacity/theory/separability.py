"""SSR and LSSR: how separable the classes of a representation are, exactly.

Ni, Guo, Jia and Huang ("On the Nonlinearity of Layer Normalization", ICML 2024) say
"LSSR is a better index to describe
linear separability than SSR" and "Linear transformations with LN can break
LSSR".  The definitions are therefore *reconstructed* (proofs/lssr.md), as the
most natural reading consistent with both sentences:

* **Scatter matrices** of points ``x_1..x_m`` with labels: the total scatter
  ``S_t = sum_i (x_i - mu)(x_i - mu)^T`` and the within-class scatter
  ``S_w = sum_c sum_{i in c} (x_i - mu_c)(x_i - mu_c)^T``; ``S_t = S_w + S_b``
  with the between-class scatter ``S_b = sum_c m_c (mu_c - mu)(mu_c - mu)^T``,
  so ``0 <= S_w <= S_t`` (Loewner order).
* **SSR** (sum-of-squares ratio) ``= tr S_w / tr S_t``: the share of the spread
  that lies *within* the classes.  0 when every class is a single point, 1 when
  all class means coincide.  Changed by linear maps (stretch one axis and it
  moves), so it is not a property of the classes' linear separability.
* **LSSR** (linear SSR) ``= min SSR(A x)`` over all linear maps ``A`` whose
  image of the data is not a single point.  By the mediant inequality the
  minimum is reached by a map to a line, so it is the smallest generalised
  eigenvalue of the pencil ``(S_w, S_t)`` on the range of ``S_t``:
  ``LSSR = min_{w : w^T S_t w > 0} (w^T S_w w) / (w^T S_t w)`` in ``[0, 1]``.

Consequences (proved in proofs/lssr.md, checked in proofs/check_lssr.py):
invertible linear maps leave LSSR unchanged, no linear or affine map lowers it,
so a drop of LSSR from one layer to the next certifies that the layer is not
affine: LayerNorm breaks it (XOR: 1 before, 0 after one LN layer).

For rational data everything is exact: the scatter matrices are rational, SSR
is a rational and LSSR the smallest root of the characteristic polynomial of
``M_t^{-1} M_w`` (the pencil on a coordinate basis of the range of ``S_t``),
returned as an algebraic number (irreducible polynomial + isolating interval,
:class:`~lncapacity.theory.reals.CertifiedReal`).  For ball data (the layers of
a net, which involve square roots) or large ``d``, :func:`pencil_bounds` gives
rigorous bounds: an upper bound from a Rayleigh quotient at a rational witness
vector, a lower bound from a certified ball ``L D L^T`` factorisation showing
that ``S_w - lambda S_t`` is positive definite.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from flint import arb, fmpq, fmpq_mat

from ..arith import exact
from ..data import PointSet
from ..errors import InputError
from .reals import CertifiedReal, bounds, rational, smallest_real_root

__all__ = [
    "EXACT_MAX_RANK",
    "lssr",
    "pencil_bounds",
    "pencil_exact",
    "scatter_matrices",
    "ssr",
]

EXACT_MAX_RANK = 32
"""``lssr(method="auto")`` is exact up to this rank of ``S_t``, rigorous bounds beyond."""

ZERO, ONE = fmpq(0), fmpq(1)


def exact_points(X: Any, y: Any) -> tuple[np.ndarray, list[Any]]:
    """Points as an exact object array (fmpq), and the labels."""
    if isinstance(X, PointSet):
        return np.array(X.X, dtype=object).reshape(X.m, X.d), list(X.y)
    try:
        rows = [[exact(v) for v in row] for row in X]
    except (TypeError, ValueError) as e:
        raise InputError(f"points must be rows of numbers: {e}") from e
    labels = list(y) if y is not None else None
    if not rows or labels is None or len(labels) != len(rows):
        raise InputError("need at least one point and one label per point")
    if len({len(r) for r in rows}) != 1 or not rows[0]:
        raise InputError("every point needs the same number (>= 1) of coordinates")
    return np.array(rows, dtype=object).reshape(len(rows), len(rows[0])), labels


BLOCK_WORK = 200_000
"""Multiply-adds of one block of :func:`object_dot` (about a tenth of a second in balls)."""


def object_dot(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``A.dot(B)`` for object arrays (balls, rationals), a block of rows of ``A`` at a time.

    NumPy's object loops run no Python signal handler, so one large product would hold off
    Ctrl-C and SIGTERM for as long as it runs; between blocks they act.  Entry for entry the
    sums are those of ``A.dot(B)``.
    """
    if A.ndim < 2:
        return A.dot(B)
    per_row = A.shape[1] * (B.shape[1] if B.ndim == 2 else 1)
    step = max(1, BLOCK_WORK // max(per_row, 1))
    if step >= A.shape[0]:
        return A.dot(B)
    return np.concatenate([A[i : i + step].dot(B) for i in range(0, A.shape[0], step)])


def congruent(M: np.ndarray, S: np.ndarray) -> np.ndarray:
    """``M S M^T`` by :func:`object_dot` (a scatter matrix seen through the map ``M``)."""
    return object_dot(object_dot(M, S), M.T)


def scatter_matrices(H: np.ndarray, labels: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    """``(S_w, S_t)`` of the rows of ``H`` (an object array of fmpq or arb), exactly or in balls.

    ``S_t = S_w + S_b`` is assembled from its parts, so ``S_w <= S_t`` holds by
    construction, not by rounding luck.
    """
    m, d = H.shape
    mu = H.sum(axis=0) / m
    Sw = np.full((d, d), ZERO, dtype=object)
    Sb = np.full((d, d), ZERO, dtype=object)
    labels = np.asarray(labels, dtype=object)
    for c in dict.fromkeys(labels.tolist()):
        Hc = H[labels == c]
        mc = Hc.shape[0]
        mu_c = Hc.sum(axis=0) / mc
        D = Hc - mu_c
        Sw = Sw + object_dot(D.T, D)
        e = (mu_c - mu).reshape(d, 1)
        Sb = Sb + mc * e.dot(e.T)
    return Sw, Sw + Sb


def _trace(S: np.ndarray) -> Any:
    return sum((S[i, i] for i in range(1, S.shape[0])), S[0, 0])


def ssr_of_scatter(Sw: np.ndarray, St: np.ndarray) -> CertifiedReal | None:
    """``tr S_w / tr S_t`` (None when ``tr S_t = 0``: all points equal)."""
    tw, tt = _trace(Sw), _trace(St)
    if isinstance(tt, fmpq):
        return None if tt == 0 else rational(tw / tt)
    if not tt > 0:
        return None
    return bounds(arb(tw) / tt, (ZERO, ONE))


def ssr(X: Any, y: Any = None) -> CertifiedReal | None:
    """The within-class over total sum of squares, exact for rational data.

    ``X``: rows of numbers (read exactly: floats are their dyadic values) or a
    :class:`~lncapacity.data.PointSet`; ``y``: any labels, any number of
    classes.  None when all points are equal.

    >>> str(ssr([[0, 0], [1, 1], [0, 1], [1, 0]], [0, 0, 1, 1]))  # XOR
    '1'
    """
    H, labels = exact_points(X, y)
    return ssr_of_scatter(*scatter_matrices(H, labels))


def lssr(X: Any, y: Any = None, method: str = "auto") -> CertifiedReal | None:
    """The lowest SSR any linear map reaches: ``min_w w^T S_w w / w^T S_t w``.

    ``method``: ``"exact"`` (an algebraic number: defining polynomial and
    isolating interval, or a rational), ``"bounds"`` (rigorous ``[lo, hi]``),
    ``"auto"`` (exact up to rank :data:`EXACT_MAX_RANK`).  None when all points
    are equal.  Reconstructed definition: see the module doc and proofs/lssr.md.

    >>> str(lssr([[0, 0], [1, 1], [0, 1], [1, 0]], [0, 0, 1, 1]))  # XOR: no line helps
    '1'
    >>> str(lssr([[0, 0], [1, 1], [0, 1], [1, 0]], [0, 1, 0, 1]))  # split by x_1
    '0'
    """
    if method not in ("auto", "exact", "bounds"):
        raise ValueError(f"unknown method {method!r}")
    H, labels = exact_points(X, y)
    Sw, St = scatter_matrices(H, labels)
    return pencil_exact(Sw, St, {"exact": None, "auto": EXACT_MAX_RANK, "bounds": 0}[method])


def _range_coordinates(St: fmpq_mat) -> list[int]:
    """Coordinates ``J`` with ``R^J + null(S_t) = R^d`` (the pivot columns of ``S_t``)."""
    R, rank = St.rref()
    pivots = []
    for i in range(rank):
        pivots.append(next(j for j in range(St.ncols()) if R[i, j] != 0))
    return pivots


def pencil_exact(
    Sw: np.ndarray, St: np.ndarray, max_rank: int | None = None
) -> CertifiedReal | None:
    """The smallest eigenvalue of the pencil ``(S_w, S_t)`` on ``range(S_t)``, exact.

    ``S_w``, ``S_t`` rational (``0 <= S_w <= S_t``).  On the pivot coordinates
    ``J`` of ``S_t`` the principal block ``M_t = S_t[J, J]`` is positive
    definite and every ratio is attained, so the value is the smallest root of
    ``charpoly(M_t^{-1} M_w)``: all its roots are real (a symmetric-definite
    pencil) and lie in ``[0, 1]``.  Falls back to :func:`pencil_bounds` when the
    rank exceeds ``max_rank``.
    """
    d = St.shape[0]
    St_q = fmpq_mat(d, d, [fmpq(v) for v in St.flatten()])
    J = _range_coordinates(St_q)
    if not J:
        return None
    if max_rank is not None and len(J) > max_rank:  # on the pivot coordinates M_t is definite
        return pencil_bounds(Sw, St, [[fmpq(int(i == j)) for i in range(d)] for j in J])
    r = len(J)
    Mt = fmpq_mat(r, r, [fmpq(St[i, j]) for i in J for j in J])
    Mw = fmpq_mat(r, r, [fmpq(Sw[i, j]) for i in J for j in J])
    K = Mt.solve(Mw)
    return smallest_real_root(K.charpoly(), all_real=True)


def _ldl_positive(A: list[list[Any]]) -> bool:
    """True when the ball ``L D L^T`` pivots of the symmetric ``A`` are all certified > 0.

    Then every matrix in the balls (in particular the exact one) is positive
    definite.
    """
    n = len(A)
    L = [[arb(0)] * n for _ in range(n)]
    D: list[arb] = []
    for j in range(n):
        dj = arb(A[j][j]) - sum((L[j][k] * L[j][k] * D[k] for k in range(j)), arb(0))
        if not dj > 0:
            return False
        D.append(dj)
        for i in range(j + 1, n):
            L[i][j] = (
                arb(A[i][j]) - sum((L[i][k] * L[j][k] * D[k] for k in range(j)), arb(0))
            ) / dj
    return True


def _mid(x: Any) -> float:
    return float(x) if isinstance(x, fmpq) else float(x.mid())


def pencil_bounds(
    Sw: np.ndarray, St: np.ndarray, basis: Sequence[Sequence[fmpq]] | None = None
) -> CertifiedReal | None:
    """Rigorous ``[lo, hi]`` for ``min w^T S_w w / w^T S_t w`` over ``w`` in ``span(basis)``.

    ``S_w``, ``S_t``: object arrays of fmpq or arb balls; ``basis``: rational
    vectors spanning a subspace that, together with ``null(S_t)``, is the whole
    space (default: all of it).  A float generalised eigenvector, read as an exact
    rational vector ``w``, gives ``hi`` = the (ball) Rayleigh quotient at ``w``;
    ``lo`` is a dyadic just below the float eigenvalue at which the ball
    ``L D L^T`` of ``M_w - lo M_t`` is certified positive definite (or 0 when
    ``M_t`` is not certified definite, e.g. the data span less than the basis).
    None when ``S_t`` is certainly zero.
    """
    d = St.shape[0]
    B = np.array(
        [[fmpq(v) for v in col] for col in basis] if basis is not None else np.eye(d, dtype=int),
        dtype=object,
    ).T  # d x r, columns
    B = np.vectorize(lambda v: fmpq(v) if not isinstance(v, fmpq) else v, otypes=[object])(B)
    Mw, Mt = congruent(B.T, Sw), congruent(B.T, St)
    r = Mt.shape[0]
    mt = np.vectorize(_mid, otypes=[float])(Mt)
    mw = np.vectorize(_mid, otypes=[float])(Mw)
    scale = float(np.max(np.abs(mt))) if mt.size else 0.0
    if scale == 0.0:
        return None
    vals, vecs = np.linalg.eigh((mt + mt.T) / 2)
    keep = vals > scale * 1e-12
    if not keep.any():
        return None
    V = vecs[:, keep] / np.sqrt(vals[keep])  # V^T mt V = I on the numerical range
    lam, U = np.linalg.eigh(V.T @ ((mw + mw.T) / 2) @ V)
    lam0 = float(lam[0])
    w = [exact(float(v)) for v in V @ U[:, 0]]
    wa = np.array(w, dtype=object)
    num, den = wa.dot(Mw).dot(wa), wa.dot(Mt).dot(wa)
    hi = ONE
    if isinstance(den, fmpq):
        if den > 0:
            hi = min(ONE, num / den)
    elif den > 0:
        hi = min(ONE, bounds(arb(num) / den).hi)
    lo = ZERO
    if r and keep.all() and _ldl_positive(Mt.tolist()):
        step = max(abs(lam0), 1.0) * 2.0**-40
        for _ in range(5):
            trial = lam0 - step
            if trial <= 0:
                break
            t = exact(trial)
            if _ldl_positive((Mw - t * Mt).tolist()):
                lo = t
                break
            step *= 2.0**8
    if lo > hi:  # pragma: no cover - impossible: lo < lambda_min <= hi
        raise ArithmeticError("inconsistent LSSR bounds")
    return CertifiedReal(lo, hi) if lo < hi else rational(lo)
