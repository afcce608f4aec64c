"""The searches give the same nets under every BLAS kernel and thread count (issue 34).

The kernels of :mod:`lncapacity.reproducible` are checked against their definitions (sums
in one order, bit for bit), and ``build`` is run in child processes under different
OpenBLAS kernels and thread counts: the nets must be byte-identical.  Nothing here pins a
hash or a depth: those may differ between processors (NumPy's transcendental functions).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import numpy as np
import pytest
from flint import fmpq, fmpq_mat

from lncapacity.reproducible import (
    gram,
    matmul,
    norm,
    orthonormal_columns,
    solve,
    top_eigenvectors,
)


def _left_to_right(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` by Python floats, each sum from ``k = 0`` up."""
    out = np.zeros((a.shape[0], b.shape[1]))
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            s = 0.0
            for k in range(a.shape[1]):
                s = s + float(a[i, k]) * float(b[k, j])
            out[i, j] = s
    return out


def test_matmul_sums_left_to_right_bit_for_bit():
    rng = np.random.default_rng(0)
    for n in (1, 2, 3, 7, 64):
        a = rng.standard_normal((9, n)) * 10.0 ** rng.integers(-8, 8, (9, n))
        b = rng.standard_normal((n, 4))
        assert matmul(a, b).tobytes() == _left_to_right(a, b).tobytes()
        assert matmul(a, b[:, 0]).tobytes() == _left_to_right(a, b[:, :1])[:, 0].tobytes()
    stack = rng.standard_normal((5, 9, 3))
    w = rng.standard_normal((3, 3))
    assert matmul(stack, w).tobytes() == np.stack([_left_to_right(s, w) for s in stack]).tobytes()
    with pytest.raises(ValueError, match="do not align"):
        matmul(np.ones((2, 3)), np.ones((2, 2)))


def test_matmul_keeps_float32():
    a = np.ones((4, 3), dtype=np.float32)
    assert matmul(a, np.ones((3, 2), dtype=np.float32)).dtype == np.float32


def test_gram_and_norm():
    rng = np.random.default_rng(1)
    A = rng.integers(-50, 50, (40, 5)).astype(float)  # small integers: every sum exact
    assert (gram(A) == A.T.astype(object).dot(A.astype(object)).astype(float)).all()
    assert norm(np.array([3.0, 4.0])) == 5.0


def test_solve_matches_exact_rational_solution():
    rng = np.random.default_rng(2)
    A = rng.standard_normal((6, 6)) + 6 * np.eye(6)
    B = rng.standard_normal((6, 2))
    exact = fmpq_mat(6, 6, [fmpq(*float(v).as_integer_ratio()) for v in A.ravel()]).solve(
        fmpq_mat(6, 2, [fmpq(*float(v).as_integer_ratio()) for v in B.ravel()])
    )
    got = solve(A, B)
    for i in range(6):
        for j in range(2):
            x = exact[i, j]
            assert got[i, j] == pytest.approx(float(x.p) / float(x.q), rel=1e-15, abs=1e-15)
    assert solve(A, B[:, 0]).shape == (6,)
    with pytest.raises(np.linalg.LinAlgError):
        solve(np.zeros((3, 3)), np.ones(3))


def test_orthonormal_columns_and_top_eigenvectors():
    rng = np.random.default_rng(3)
    Q = orthonormal_columns(rng.standard_normal((7, 3)))
    assert np.allclose(Q.T @ Q, np.eye(3), atol=1e-14)
    # a known spectrum: eigenvalues 10, 5, 1, ... with random eigenvectors
    U = orthonormal_columns(rng.standard_normal((7, 7)))
    G = U @ np.diag([10.0, 5.0, 1.0, 0.5, 0.2, 0.1, 0.0]) @ U.T
    V = top_eigenvectors(G, 2)
    assert abs(V[:, 0] @ U[:, 0]) == pytest.approx(1, abs=1e-12)
    assert abs(V[:, 1] @ U[:, 1]) == pytest.approx(1, abs=1e-12)
    assert (top_eigenvectors(np.zeros((3, 3)), 2) == np.eye(3)[:, :2]).all()


# The construction benchmarks' kinds of set, small enough for a few seconds each: the
# binary runs, circle with two classes, circle with three, and peel.
CHILD = r"""
import hashlib, json, sys
import numpy as np
from lncapacity import build, points_from_arrays
from lncapacity.fileformat import dumps, to_dict

def rnd(m, d, k, seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((m, d)), rng.integers(0, k, m)

cases = {
    "runs": (rnd(300, 3, 2, 0), {"method": "runs"}),
    "circle, 2 classes": (rnd(30, 3, 2, 1), {"method": "circle"}),
    "circle, 3 classes": (rnd(30, 3, 3, 2), {"method": "circle", "eps": "1e-5"}),
    "peel": (rnd(80, 3, 3, 3), {"method": "peel"}),
}
out = {}
try:
    import threadpoolctl
    out["blas"] = sorted(
        i.get("architecture") or "" for i in threadpoolctl.threadpool_info()
        if i["user_api"] == "blas"
    )
except ImportError:
    out["blas"] = None
for name, ((X, y), kw) in cases.items():
    net = build(points_from_arrays(X, y), **kw)
    out[name] = [hashlib.sha256(dumps(to_dict(net)).encode()).hexdigest(), net.meta["method"]]
print(json.dumps(out))
"""

BLAS_ENV = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")


def _build_in_child(**env: str) -> dict[str, object]:
    base = {k: v for k, v in os.environ.items() if k not in BLAS_ENV}
    r = subprocess.run(
        [sys.executable, "-c", CHILD],
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.skipif(
    platform.machine().lower() not in ("x86_64", "amd64"),
    reason="the OpenBLAS kernels named here (Haswell, Prescott) are x86-64 ones",
)
def test_build_gives_byte_identical_nets_under_other_blas_kernels_and_thread_counts():
    pytest.importorskip("threadpoolctl", reason="threadpoolctl names the BLAS kernel in use")
    runs = [
        _build_in_child(),  # the machine's own choice of kernel
        _build_in_child(OPENBLAS_CORETYPE="Haswell", OPENBLAS_L2_SIZE="512"),
        _build_in_child(OPENBLAS_CORETYPE="Prescott", OPENBLAS_NUM_THREADS="1"),
    ]
    kernels = [r.pop("blas") for r in runs]
    assert len({tuple(k) for k in kernels}) >= 2, f"the kernels did not change: {kernels}"
    assert runs[1] == runs[0] and runs[2] == runs[0], kernels
