"""LayerNorm's geometry, as exact checks (proofs/ln_geometry.md).

* **Projection and scaling** (Brody, Alon and Yahav, "On the Expressivity Role of
  LayerNorm in Transformers' Attention", Findings of ACL 2023).  With ``eps = 0``,
  ``LN(x) = sqrt(d) P x / |P x|`` with ``P = I - 1 1^T / d``: project onto the
  hyperplane orthogonal to ``1``, then scale to norm ``sqrt(d)``
  (:func:`project_and_scale`).  With ``eps > 0``,
  ``|LN(x)|^2 = d rho^2 / (rho^2 + d eps) < d`` (``rho = |P x|``): strictly inside
  that sphere (:func:`ln_norm_squared`, exact).
* **Gain and bias** (Riechers, "Geometry and Dynamics of LayerNorm", 2024, Eq. 6):
  ``LN(a; g, b) = sqrt(N) G P a / sqrt(|P a|^2 + N eps) + b``, ``G = diag(g)``.
  With nonzero gains the image minus ``b`` lies in the hyperplane ``alpha^perp``
  (``alpha = 1/g`` elementwise) and in the ellipsoid
  ``{y : y^T G^-2 y <= N}``: an (N-1)-dimensional hyperellipsoid whose principal
  axes are the eigenvectors of ``Pi_2 G^-2 Pi_2`` (``Pi_2 = I - alpha alpha^T /
  |alpha|^2``) with nonzero eigenvalues ``lambda``, semi-axes ``sqrt(N/lambda)``
  (:func:`ellipsoid_axes`: the ``lambda`` exactly, as algebraic numbers; also
  ``= sqrt(N zeta)`` for the nonzero eigenvalues ``zeta = 1/lambda`` of
  ``P G^2 P``).  With ``eps = 0`` the image is that ellipsoid's surface.
* **Selectable keys** (Brody et al. 2023).  A key in the convex hull of the other keys
  never wins ``argmax_j q . k_j`` strictly, for any query ``q``
  (:func:`hull_witness` gives the exact convex combination).  After LN
  (``eps = 0``) every key lies on the sphere, and each distinct one wins for the
  query ``q = P k_i`` (:func:`selecting_queries`, exact).
* **BatchNorm and z-scoring** (as a Cross Validated discussion asks: is z-scoring a
  nonlinearity?): with fixed statistics (inference) ``(x - mu) / sqrt(sigma^2 + eps)``
  is affine, Hessian exactly 0; with the statistics of the batch (training) it is a
  function of the whole batch and is not affine (:func:`z_score`, Hessian measure > 0).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from flint import fmpq, fmpq_mat, fmpq_poly, fmpz_poly

from ..affine import feasible_point
from ..arith import exact
from ..errors import InputError
from .reals import CertifiedReal, real_roots

__all__ = [
    "EllipsoidAxes",
    "centring_matrix",
    "ellipsoid_axes",
    "ellipsoid_form",
    "hull_witness",
    "ln_norm_squared",
    "project_and_scale",
    "riechers_layer_norm",
    "selecting_queries",
    "z_score",
]


def _q(v: Sequence[Any]) -> list[fmpq]:
    return [exact(a) for a in v]


def centring_matrix(d: int) -> list[list[fmpq]]:
    """``P = I - 1 1^T / d``, the orthogonal projection onto ``1^perp``."""
    return [[fmpq(int(i == j)) - fmpq(1, d) for j in range(d)] for i in range(d)]


def project_and_scale(x: Sequence[Any]) -> tuple[list[fmpq], fmpq]:
    """``(P x, d / |P x|^2)``: LN(x) (``eps = 0``) is ``P x`` times the square root of the factor.

    Both parts are exact rationals for rational ``x``; ``LN(x) = sqrt(factor) P x``
    has norm ``sqrt(d)``.  Raises ValueError for a constant ``x`` (LN is 0/0).
    """
    xs = _q(x)
    d = len(xs)
    mean = sum(xs, fmpq(0)) / d
    px = [v - mean for v in xs]
    rho2 = sum((v * v for v in px), fmpq(0))
    if rho2 == 0:
        raise ValueError("x is constant: LN(x) is 0/0 with eps = 0")
    return px, fmpq(d) / rho2


def ln_norm_squared(x: Sequence[Any], eps: Any = 0) -> fmpq:
    """``|LN(x)|^2 = d rho^2 / (rho^2 + d eps)``, exact: ``d`` at ``eps = 0``, else ``< d``."""
    xs, e = _q(x), exact(eps)
    d = len(xs)
    mean = sum(xs, fmpq(0)) / d
    rho2 = sum(((v - mean) ** 2 for v in xs), fmpq(0))
    if rho2 + d * e == 0:
        raise ValueError("x is constant and eps = 0: LN(x) is 0/0")
    return d * rho2 / (rho2 + d * e)


def riechers_layer_norm(
    a: Sequence[Any],
    gain: Sequence[Any],
    bias: Sequence[Any],
    eps: Any = 0,
    sqrt: Callable[[Any], Any] | None = None,
) -> list[Any]:
    """Riechers' Eq. 6: ``sqrt(N) G P a / sqrt(|P a|^2 + N eps) + b``, in ``a``'s number type."""
    if sqrt is None:
        import sympy as sp

        sqrt = sp.sqrt
    N = len(a)
    mean = sum(a[1:], a[0]) / N
    pa = [v - mean for v in a]
    s = sqrt(sum((v * v for v in pa[1:]), pa[0] * pa[0]) + N * eps)
    return [sqrt(N) * g * v / s + b for g, v, b in zip(gain, pa, bias, strict=True)]


def ellipsoid_form(y: Sequence[Any], gain: Sequence[Any], bias: Sequence[Any]) -> tuple[Any, Any]:
    """``(form, normal) = ((y - b)^T G^-2 (y - b), alpha^T (y - b))`` for a point ``y``.

    On the image of :func:`riechers_layer_norm` (gain ``g``, bias ``b``):
    ``normal = 0`` and ``form <= N``, with ``form = N`` exactly when ``eps = 0``.
    """
    c = [yi - bi for yi, bi in zip(y, bias, strict=True)]
    form = sum((ci * ci / (g * g) for ci, g in zip(c, gain, strict=True)), 0 * c[0])
    normal = sum((ci / g for ci, g in zip(c, gain, strict=True)), 0 * c[0])
    return form, normal


@dataclass(frozen=True)
class EllipsoidAxes:
    """The principal axes of LayerNorm's image (with a gain), exact where it matters."""

    N: int
    eigenvalues: tuple[tuple[CertifiedReal, int], ...]
    """The nonzero eigenvalues ``lambda`` of ``Pi_2 G^-2 Pi_2``, exact, with multiplicities."""
    normal: tuple[fmpq, ...]
    """``alpha = 1/g``: the image minus the bias is orthogonal to it."""
    directions: np.ndarray
    """Unit axis directions (float64 columns, in the order of ``lengths``)."""
    lengths: np.ndarray
    """Semi-axis lengths ``sqrt(N / lambda)`` (float64, one per direction)."""

    def length_squared(self, i: int) -> CertifiedReal:
        """The squared semi-axis ``N / lambda_i``, exactly.

        If ``lambda`` is the root of ``p(x) = sum c_j x^j`` in ``[lo, hi]`` (``lo > 0``),
        then ``N / lambda`` is the root of ``x^n p(N / x) = sum c_j N^j x^(n-j)`` in
        ``[N / hi, N / lo]``: ``x -> N / x`` maps the roots of one onto the other's.
        """
        lam, _ = self.eigenvalues[i]
        if lam.rational is not None:
            v = self.N / lam.rational
            return CertifiedReal(v, v)
        c = [int(v) for v in lam.poly.coeffs()]
        n = len(c) - 1
        q = fmpz_poly([c[n - j] * self.N ** (n - j) for j in range(n + 1)])
        q = -q if int(q.coeffs()[-1]) < 0 else q
        return CertifiedReal(self.N / lam.hi, self.N / lam.lo, q)


def ellipsoid_axes(gain: Sequence[Any]) -> EllipsoidAxes:
    """Principal axes of ``{G z : z in 1^perp, |z|^2 <= N}`` (Riechers 2024), nonzero gains.

    The eigenvalues come from the exact characteristic polynomial of the
    rational matrix ``Pi_2 G^-2 Pi_2`` (factored; roots isolated), so they are
    exact algebraic numbers for any ``N`` the factoring handles (small ``N``
    in practice); directions and lengths are also given in float64.
    """
    g = _q(gain)
    N = len(g)
    if N < 2 or any(v == 0 for v in g):
        raise InputError("ellipsoid_axes: need N >= 2 nonzero gains")
    alpha = [1 / v for v in g]
    aa = sum((a * a for a in alpha), fmpq(0))
    Pi2 = [[fmpq(int(i == j)) - alpha[i] * alpha[j] / aa for j in range(N)] for i in range(N)]
    Gm2 = [1 / (v * v) for v in g]
    M = [
        [sum((Pi2[i][k] * Gm2[k] * Pi2[k][j] for k in range(N)), fmpq(0)) for j in range(N)]
        for i in range(N)
    ]
    Mq = fmpq_mat(N, N, [v for row in M for v in row])
    p = Mq.charpoly()
    reduced = fmpq_poly(p.coeffs()[1:])  # p = x * reduced: the zero eigenvalue (alpha) removed
    factors = [(ff / ff.coeffs()[-1], mm) for ff, mm in reduced.factor()[1]]  # monic
    eig = []
    for r in real_roots(reduced, all_real=True):
        f = fmpq_poly(r.poly) if r.poly is not None else fmpq_poly([-r.lo, 1])
        eig.append((r, next(mm for ff, mm in factors if ff == f / f.coeffs()[-1])))
    mf = np.array([[float(v) for v in row] for row in M])
    vals, vecs = np.linalg.eigh(mf)
    order = np.argsort(vals)[1:]  # drop the (numerically) zero eigenvalue of alpha
    return EllipsoidAxes(N, tuple(eig), tuple(alpha), vecs[:, order], np.sqrt(N / vals[order]))


def hull_witness(keys: Sequence[Sequence[Any]], i: int) -> list[fmpq] | None:
    """Exact ``lambda >= 0``, ``sum lambda = 1``, ``sum_{j != i} lambda_j k_j = k_i``, or None.

    With a witness, ``q . k_i = sum_j lambda_j q . k_j <= max_j q . k_j`` for
    every query ``q``: key ``i`` can never be the strict argmax.
    """
    K = [_q(k) for k in keys]
    others = [k for j, k in enumerate(K) if j != i]
    if not others:
        return None
    d = len(K[i])
    A = [[k[r] for k in others] for r in range(d)] + [[fmpq(1)] * len(others)]
    lam = feasible_point(A, [*K[i], fmpq(1)])
    if lam is None:
        return None
    lam.insert(i, fmpq(0))
    return lam


def selecting_queries(keys: Sequence[Sequence[Any]]) -> list[bool]:
    """After LayerNorm (``eps = 0``): does the query ``P k_i`` make key ``i`` the strict winner?

    Decided exactly: the score of key ``j`` is ``sqrt(d) (P k_i . P k_j) / |P k_j|``,
    and ``(P k_i . P k_j) / |P k_j| < |P k_i|`` is compared through squares.  True
    for every key whose LN image differs from the others' (Cauchy-Schwarz).
    """
    P = [project_and_scale(k)[0] for k in keys]
    norms = [sum((v * v for v in p), fmpq(0)) for p in P]
    out = []
    for i, pi in enumerate(P):
        ok = True
        for j, pj in enumerate(P):
            if j == i:
                continue
            dot = sum((a * b for a, b in zip(pi, pj, strict=True)), fmpq(0))
            # dot / |pj| < |pi|  <=>  dot <= 0 or dot^2 < |pi|^2 |pj|^2
            if dot > 0 and not dot * dot < norms[i] * norms[j]:
                ok = False
        out.append(ok)
    return out


def z_score(
    X: Sequence[Sequence[Any]],
    mean: Sequence[Any] | None = None,
    var: Sequence[Any] | None = None,
    eps: Any = 0,
    sqrt: Callable[[Any], Any] | None = None,
) -> list[list[Any]]:
    """Normalise each feature (column) of a batch: BatchNorm without its affine part.

    With ``mean`` and ``var`` given (inference: fixed statistics) the map is
    affine in ``X``; without, they are the batch's own (training mode; biased
    variance), and each output depends nonlinearly on the whole batch.
    """
    if sqrt is None:
        import sympy as sp

        sqrt = sp.sqrt
    rows = [list(r) for r in X]
    m, d = len(rows), len(rows[0])
    if mean is None:
        mean = [sum((r[j] for r in rows[1:]), rows[0][j]) / m for j in range(d)]
    if var is None:
        var = [
            sum(((r[j] - mean[j]) ** 2 for r in rows[1:]), (rows[0][j] - mean[j]) ** 2) / m
            for j in range(d)
        ]
    scale = [sqrt(v + eps) for v in var]
    return [[(r[j] - mean[j]) / scale[j] for j in range(d)] for r in rows]
