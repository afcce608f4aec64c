"""Float kernels whose results depend on neither the BLAS kernel nor the thread count.

NumPy's ``@`` and ``numpy.linalg`` hand their work to BLAS and LAPACK, whose kernels
(chosen per processor, or by ``OPENBLAS_CORETYPE``) and threads sum in different
orders, so the same product can differ in its last bits from one machine to the next.
The searches (``circle``, ``runs``, ``peel``, the projections) decide with floats: one
last bit can send them down another path, and ``build`` then gives another net (a
5-class set once got a circle net under one OpenBLAS kernel and fell back to ``peel``
under another).  Here every sum runs in a fixed order, one IEEE 754 operation at a time
(NumPy's elementwise ``+``, ``*``, ``/``, ``sqrt`` are correctly rounded on every
processor), and the little linear algebra the searches need is done by FLINT's ball
arithmetic or by a fixed number of such operations.  So the same inputs give the same
bits under any BLAS kernel and any number of threads.

The processor's own functions are the other half: the searches take their angles,
logarithms and exponentials from :mod:`lncapacity.elementary` and train their Adam warm
starts with :mod:`lncapacity.adam`, both built from the same correctly rounded
operations, so that a net is the same bytes on every processor; see the manual's
*Reproducibility* (docs/guide/reproducibility.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from flint import arb_mat

from .arith import precision

POWER_STEPS = 200
"""Steps of orthogonal iteration in :func:`top_eigenvectors` (a heuristic's accuracy: the
searches use these directions as starting points only)."""


def matmul(a: Any, b: Any) -> np.ndarray:
    """``a @ b``, each entry summed left to right: ``sum_k a[..., k] b[k, ...]``.

    ``a``: ``(..., n)``; ``b``: ``(n,)`` or ``(n, p)``.  The cost is ``n`` elementwise
    multiply-adds over the output, so it suits the small inner dimensions of width-3
    nets and of projections, not wide layers.
    """
    a, b = np.asarray(a), np.asarray(b)
    vector = b.ndim == 1
    if vector:
        b = b[:, None]
    n = a.shape[-1]
    if b.shape[0] != n:
        raise ValueError(f"matmul: shapes {a.shape} and {b.shape} do not align")
    out = np.zeros((*a.shape[:-1], b.shape[1]), dtype=np.result_type(a, b))
    for k in range(n):
        out += a[..., k, None] * b[k]
    return out[..., 0] if vector else out


def gram(A: np.ndarray, B: np.ndarray | None = None) -> np.ndarray:
    """``A^T B`` (default ``A^T A``) for ``A`` ``(m, n)`` and ``B`` ``(m, p)``, each entry a
    sum over the rows in NumPy's fixed reduction order (no BLAS; a column of ``B`` at a time,
    so ``m`` may be large)."""
    B = A if B is None else B
    return np.stack([(A * B[:, j, None]).sum(axis=0) for j in range(B.shape[1])], axis=1)


def norm(x: np.ndarray) -> float:
    """The Euclidean norm of the entries of ``x`` (``numpy.linalg.norm`` of a vector is a
    BLAS dot product)."""
    return float(np.sqrt((x * x).sum()))


def solve(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``A^-1 B`` (``A`` square and invertible, ``B`` a vector or a matrix) by FLINT's ball
    arithmetic, at rising precision until ``A`` is certified invertible; the midpoints,
    as floats.  ``numpy.linalg.LinAlgError`` if it is not at 1,024 bits."""
    vector = np.ndim(B) == 1
    Bm = np.asarray(B, dtype=float).reshape(len(B), -1)
    for bits in (128, 256, 1024):
        with precision(bits):
            try:
                X = arb_mat(A.tolist()).solve(arb_mat(Bm.tolist()))
            except ZeroDivisionError:
                continue
            out = np.array([[float(v.mid()) for v in row] for row in X.tolist()])
        return out[:, 0] if vector else out
    raise np.linalg.LinAlgError("matrix not certified invertible")


def orthonormal_columns(A: np.ndarray) -> np.ndarray:
    """The columns of ``A`` orthonormalised left to right (modified Gram-Schmidt: the
    ``Q`` of a QR decomposition with a positive diagonal of ``R``); a column dependent on
    the earlier ones becomes zero."""
    Q = np.array(A, dtype=float)
    for j in range(Q.shape[1]):
        for i in range(j):
            Q[:, j] -= (Q[:, i] * Q[:, j]).sum() * Q[:, i]
        size = norm(Q[:, j])
        Q[:, j] = Q[:, j] / size if size > 0 else 0.0
    return Q


def top_eigenvectors(G: np.ndarray, count: int) -> np.ndarray:
    """``count`` orthonormal columns spanning (approximately) the leading eigenvectors of
    the symmetric positive semidefinite ``G``, the largest first: :data:`POWER_STEPS`
    steps of orthogonal iteration from a fixed start.  Where eigenvalues are nearly equal
    the columns are some basis of their space, as LAPACK's are."""
    n = G.shape[0]
    count = min(count, n)
    scale = float(np.abs(G).max())
    if scale == 0 or not np.isfinite(scale):
        return np.eye(n)[:, :count]
    G = G / scale  # powers stay in range
    V = orthonormal_columns(np.random.default_rng(0).standard_normal((n, count)))
    for _ in range(POWER_STEPS):
        V = orthonormal_columns(matmul(G, V))
    return V


@contextmanager
def torch_one_thread(torch: Any) -> Iterator[None]:
    """PyTorch on one intra-op thread inside the block: sums then run in one order whatever
    the machine's core count (and forked workers do not hang on PyTorch's thread pool)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


@contextmanager
def blas_one_thread() -> Iterator[None]:
    """BLAS on one thread inside the block (where ``threadpoolctl`` is installed): for
    products too small for threads to pay (a chunk of points through a layer), which two
    threads make several times dearer in CPU, and in wall time on a busy machine, as
    each waits for the other's core."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - optional: scikit-learn's dependency
        yield
        return
    with threadpool_limits(1, user_api="blas"):
        yield
