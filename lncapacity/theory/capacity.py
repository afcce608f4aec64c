"""Capacity: the rank of each layer's LayerNorm output, and a counting bound on parameters.

**Rank lemma** (proofs/ln_rank.md).  On points ``x_1 .. x_m`` in ``R^d``, let ``U_l`` be the
``m x n_l`` matrix of layer ``l``'s LayerNorm outputs (before the gain and bias), ``U_0 = X``.
A layer normalising in ``g`` groups of ``k = n/g`` features satisfies

    rank U_l <= g * min(rank [U_{l-1} | 1], k - 1) <= g * min(rank U_{l-1} + 1, k - 1),

whatever the weights, gains, biases and ``eps``.  With LayerNorm (``g = 1``) the rank grows by
at most one per layer: ``rank U_l <= d + l`` whatever the width.  Groups are each rescaled by
their own factor per point, so their blocks add up: up to ``g`` times the previous rank plus
one, capped by ``n - g``.  :func:`layer_ranks` computes, for a net and points, the rank
measured in float64 (:func:`numerical_rank`, tolerance :data:`RANK_TOLERANCE`), the lemma's
upper bound from the exact rational subspace the rows lie in (:func:`rank_upper_bounds`), and
a certified lower bound from a minor whose ball determinant excludes zero
(:func:`certified_rank_lower`): when the two bounds meet, the rank is proved.

**Counting bound** (:func:`counting_bound`): a net whose ``P`` parameters are ``b``-bit numbers
computes at most ``2^(b P)`` functions, so one architecture that memorises every one of the
``k^m`` labelings of ``m`` points needs ``P >= ceil(log2 k^m) / b`` (pigeonhole; the argument
behind the bit-complexity lower bounds on memorisation, e.g. Vardi, Yehudai and Shamir, "On the
Optimal Memorization Power of ReLU Neural Networks", ICLR 2022).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from flint import arb, arb_mat, fmpq, fmpq_mat

from ..arith import precision
from ..data import PointSet, points_from_arrays
from ..floats import layer_arrays, run_layer
from ..model import Affine, LNNet, Norm, layer_norm

RANK_TOLERANCE = "sigma_max * max(m, n) * 2^-52"
"""The numerical rank counts singular values above this (NumPy's ``matrix_rank`` default)."""

PRECISIONS = (128, 512, 2048)
"""Bits of the ball arithmetic :func:`certified_rank_lower` tries, in turn."""


@dataclass(frozen=True)
class LayerRank:
    """The rank of one layer's LayerNorm outputs on a point set."""

    layer: int
    """1-based."""
    width: int
    groups: int
    numerical: int
    """Float64 SVD, singular values above :data:`RANK_TOLERANCE`."""
    upper: int
    """Proved: ``rank <= upper`` (the lemma on the exact rational subspace)."""
    lower: int | None
    """Certified: ``rank >= lower`` (a nonzero minor in ball arithmetic); None: not asked."""

    @property
    def exact(self) -> int | None:
        """The rank, when the certified bounds meet; else None."""
        return self.upper if self.lower == self.upper else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "layer": self.layer,
            "width": self.width,
            "groups": self.groups,
            "numerical_rank": self.numerical,
            "upper_bound": self.upper,
            "certified_lower_bound": self.lower,
            "rank": self.exact,
        }


def lemma_bound(d: int, layers: Sequence[tuple[int, int]], m: int | None = None) -> list[int]:
    """The lemma's bound on ``rank U_l`` for each layer, from the shapes alone.

    ``layers`` lists ``(width, groups)``.  ``r_0 = d`` (``min(d, m)``), then
    ``r_l = g min(r_{l-1} + 1, n/g - 1)``, capped by ``m`` (proofs/ln_rank.md, Theorem 1
    and Corollary 2): ``d + l`` for LayerNorm of any width ``n >= d + l + 1``.
    """
    r = d if m is None else min(d, m)
    out = []
    for n, g in layers:
        r = g * min(r + 1, n // g - 1)
        if m is not None:
            r = min(r, m)
        out.append(r)
    return out


def layer_outputs(net: LNNet[Any], X: Any) -> list[np.ndarray]:
    """Each layer's LayerNorm output ``U_l`` in float64, ``(m, n_l)``, before its gain and bias
    (which :meth:`LNNet.folded` moves into the next map: the outputs are the same)."""
    folded = net.folded()
    h = _floats(X)
    out = []
    eps = np.float64(float(folded.eps))
    for i in range(folded.depth):
        h = run_layer(h, layer_arrays(folded, i), eps)
        out.append(h)
    return out


def numerical_rank(U: np.ndarray) -> int:
    """Singular values of ``U`` above ``sigma_max * max(m, n) * 2^-52`` (float64 SVD)."""
    if U.size == 0:
        return 0
    s = np.linalg.svd(U, compute_uv=False)
    return int((s > s[0] * max(U.shape) * np.finfo(np.float64).eps).sum()) if s[0] > 0 else 0


def rank_upper_bounds(net: LNNet[fmpq], X: Any) -> list[int]:
    """For each layer, a proved upper bound on ``rank U_l`` (exact rational arithmetic).

    The rows of ``[U_{l-1} | 1]`` lie in a rational subspace ``T_{l-1}`` (``T_0`` the row
    space of ``[X | 1]``; after a layer, ``V_{l-1} + span e_{n+1}``), so group ``J``'s block
    ``Y_J P_k`` has its rows in ``V_{l,J} = P_k [W_J | b_J] T_{l-1}``, and its rank is at
    most ``min(dim V_{l,J}, rank [U_{l-1} | 1])``: ``r_l <= min(m, sum_J min(dim V_{l,J},
    rho_{l-1}))`` with ``rho_{l-1} <= r_{l-1} + 1`` and ``V_l`` the direct sum of the
    ``V_{l,J}`` (gains and biases folded first; proofs/ln_rank.md, Proposition 3).  An
    RMSNorm layer does not centre: ``P_k = I`` (proofs/rmsnorm.md, Corollary 3).
    """
    folded = net.folded()
    points = _points(X)
    m = points.m
    B = _row_basis([[*x, fmpq(1)] for x in points.X])  # rows spanning T_0
    rho = min(len(B), m)  # >= rank [U_{l-1} | 1]
    out = []
    for i, layer in enumerate(folded.layers):
        n, g = len(layer.b), folded.norm(i).groups
        k = n // g
        centre = (lambda v: v) if folded.norm(i).rms else _centre  # RMSNorm: P_k = I
        basis: list[list[fmpq]] = []
        total = 0
        for j in range(0, n, k):
            # P_k [W_J | b_J] v for v in T_{l-1}: the rows of the group's block span inside
            block = _row_basis(
                [
                    centre(
                        [_dot(layer.W[j + a], v[:-1]) + layer.b[j + a] * v[-1] for a in range(k)]
                    )
                    for v in B
                ]
            )
            basis.extend([fmpq(0)] * j + v + [fmpq(0)] * (n - j - k) for v in block)
            total += min(len(block), rho)
        r = min(m, total)
        out.append(r)
        B = [[*v, fmpq(0)] for v in _row_basis(basis)] + [[fmpq(0)] * n + [fmpq(1)]]
        rho = min(len(B), r + 1, m)
    return out


def certified_rank_lower(net: LNNet[fmpq], X: Any, layer: int, U: np.ndarray, r: int) -> int:
    """A certified lower bound on ``rank U_layer`` (``layer`` 1-based), at most ``r``.

    Picks ``r`` rows and columns of the float64 outputs ``U`` by pivoted Gram-Schmidt,
    evaluates those points' outputs in ``arb`` balls from the exact weights and points, and
    returns the largest leading ``s <= r`` whose ``s x s`` minor's ball determinant excludes
    zero (a nonzero minor proves ``rank >= s``); 0 when none does.
    """
    if r == 0:
        return 0
    rows = _pivots(U, r)
    cols = _pivots(U[rows].T, len(rows))
    rows = rows[: len(cols)]
    points = _points(X)
    for bits in PRECISIONS:
        with precision(bits):
            Ub = _arb_outputs(net.folded(), [points.X[i] for i in rows], layer)
            for s in range(len(cols), 0, -1):
                M = arb_mat([[Ub[a][cols[c]] for c in range(s)] for a in range(s)])
                det = M.det()
                if not det.contains(0):
                    if s == len(cols) or bits == PRECISIONS[-1]:
                        return s
                    break  # a smaller minor is nonzero: more precision may prove the full one
    return 0


def layer_ranks(net: LNNet[fmpq], X: Any, *, certify: bool = True) -> list[LayerRank]:
    """The rank of every layer's LayerNorm output on ``X``: measured, bounded, certified.

    ``certify``: also a certified lower bound (:func:`certified_rank_lower`; ball arithmetic
    on as many points as the numerical rank).
    """
    points = _points(X)
    outputs = layer_outputs(net, points)
    upper = rank_upper_bounds(net, points)
    out = []
    for i, U in enumerate(outputs):
        num = numerical_rank(U)
        lower = None
        if certify:
            lower = certified_rank_lower(net, points, i + 1, U, min(num, upper[i]))
        out.append(LayerRank(i + 1, U.shape[1], net.norm(i).groups, num, upper[i], lower))
    return out


def random_net(
    d: int, width: int, depth: int, groups: int = 1, seed: int = 0, classes: int = 2
) -> LNNet[fmpq]:
    """An untrained LN-Net (``groups > 1``: LN-G) with dyadic weights, ``eps = 1/100000``.

    Weights and biases Gaussian with standard deviation ``1/sqrt(fan_in)`` (the scale of
    PyTorch's default initialisation), rounded to multiples of ``2^-16`` so that they are exact.
    """
    rng = np.random.default_rng([seed, d, width, depth, groups])

    def matrix(rows: int, fan_in: int) -> Affine[fmpq]:
        A = np.rint(rng.standard_normal((rows, fan_in + 1)) * 2**16 / np.sqrt(fan_in))
        W = tuple(tuple(fmpq(int(v), 2**16) for v in row[:-1]) for row in A)
        return Affine(W, tuple(fmpq(int(v), 2**16) for v in A[:, -1]))

    layers = tuple(matrix(width, d if i == 0 else width) for i in range(depth))
    norms = tuple(Norm(groups=groups) for _ in range(depth))
    readout = matrix(classes, width if depth else d)
    return LNNet(d, width, fmpq(1, 100000), layers, readout, tuple(range(classes)), {}, norms)


def counting_bound(m: int, k: int, bits: int = 64) -> int:
    """The fewest parameters of ``bits`` bits each of an architecture that memorises every
    labeling of ``m`` points by ``k`` classes: ``ceil(ceil(log2 k^m) / bits)``, exactly.

    ``P`` parameters of ``bits`` bits take at most ``2^(bits P)`` values, hence give at most
    that many functions, and ``k^m`` labelings need as many functions:
    ``bits P >= log2 k^m``, and ``bits P`` is an integer (proofs/ln_rank.md, Proposition 4).
    """
    if m < 1 or k < 1 or bits < 1:
        raise ValueError("m, k and bits must be positive")
    need = (k**m - 1).bit_length()  # ceil(log2 k^m)
    return -(-need // bits)


def parameter_count(net: LNNet[Any]) -> int:
    """The net's real parameters: every weight and bias of its layers and readout, and its
    LayerNorm gains and biases where present (``eps`` is not counted)."""
    maps = (*net.layers, net.readout)
    count = sum(len(a.b) * (len(a.W[0]) + 1) if a.W and a.W[0] else len(a.b) for a in maps)
    for norm in net.norms:
        count += sum(len(v) for v in (norm.gain, norm.bias) if v is not None)
    return count


def random_labels(m: int, k: int, dim: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``m`` standard normal points in ``R^dim`` (the same for every ``k``) and ``k`` uniformly
    random labels in ``range(k)``, the first ``k`` points labelled ``0``, ``1``, up to
    ``k - 1`` so that every class is present (``m >= k``); seeded by ``(seed, m, dim)`` and
    ``(seed, m, dim, k)``."""
    X = np.random.default_rng([seed, m, dim]).standard_normal((m, dim))
    y = np.random.default_rng([seed, m, dim, k]).integers(0, k, m)
    y[:k] = np.arange(k)
    return X, y


def linear_accuracy(X: np.ndarray, y: np.ndarray) -> float:
    """Train accuracy of the least-squares linear classifier: one-hot targets fitted by an
    affine map (``numpy.linalg.lstsq``), the class of the largest score; the paper's linear
    baseline for random labels (a float measurement, never a certificate)."""
    classes, yk = np.unique(y, return_inverse=True)
    A = np.hstack([np.asarray(X, dtype=np.float64), np.ones((len(yk), 1))])
    T = np.eye(len(classes))[yk]
    coef, *_ = np.linalg.lstsq(A, T, rcond=None)
    return float((np.argmax(A @ coef, axis=1) == yk).mean())


# ---------------------------------------------------------------------------


def _points(X: Any) -> PointSet:
    if isinstance(X, PointSet):
        return X
    X = np.asarray(X) if not isinstance(X, list | tuple) else X
    return points_from_arrays(X, [0] * len(X))


def _floats(X: Any) -> np.ndarray:
    if isinstance(X, PointSet):
        return X.floats()
    return np.asarray([[float(v) for v in row] for row in X], dtype=np.float64)


def _dot(row: Sequence[fmpq], v: Sequence[fmpq]) -> fmpq:
    return sum((a * b for a, b in zip(row, v, strict=True)), fmpq(0))


def _centre(v: list[fmpq]) -> list[fmpq]:
    mean = sum(v, fmpq(0)) / len(v)
    return [a - mean for a in v]


def _row_basis(rows: Sequence[Sequence[fmpq]]) -> list[list[fmpq]]:
    """Rows spanning the same space as ``rows``, independent (the nonzero rows of the rref)."""
    rows = [list(r) for r in rows]
    if not rows or not rows[0]:
        return []
    n = len(rows[0])
    R, rank = fmpq_mat(len(rows), n, [v for r in rows for v in r]).rref()
    return [[R[i, j] for j in range(n)] for i in range(rank)]


def _pivots(A: np.ndarray, r: int) -> list[int]:
    """Up to ``r`` row indices of ``A`` picked by pivoted Gram-Schmidt (largest residual)."""
    R = np.array(A, dtype=np.float64, copy=True)
    picked: list[int] = []
    for _ in range(min(r, R.shape[0])):
        norms = np.einsum("ij,ij->i", R, R)
        norms[picked] = -1.0
        i = int(np.argmax(norms))
        if not norms[i] > 0:  # the balls decide; floats only choose
            break
        picked.append(i)
        q = R[i] / np.sqrt(norms[i])
        R -= np.outer(R @ q, q)
    return picked


def _arb_outputs(net: LNNet[fmpq], X: Sequence[Sequence[fmpq]], layer: int) -> list[list[arb]]:
    """Layer ``layer``'s (1-based) LayerNorm outputs of the points ``X``, in balls at the
    current precision (``net`` folded: no gains or biases)."""
    eps = arb(net.eps)
    H = arb_mat([[arb(v) for v in x] for x in X])
    out: list[list[arb]] = []
    for i in range(layer):
        a = net.layers[i]
        Wt = arb_mat([[arb(a.W[r][c]) for r in range(len(a.W))] for c in range(len(a.W[0]))])
        Y = H * Wt
        g, centre = net.norm(i).groups, not net.norm(i).rms
        out = [
            layer_norm([Y[p, c] + arb(a.b[c]) for c in range(Y.ncols())], eps, _sqrt, g, centre)
            for p in range(Y.nrows())
        ]
        H = arb_mat(out)
    return out


def _sqrt(x: arb) -> arb:
    return x.sqrt()
