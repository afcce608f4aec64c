"""The searches give the same nets under every BLAS kernel, thread count and processor.

The kernels of :mod:`lncapacity.reproducible` are checked against their definitions (sums
in one order, bit for bit), and ``build`` is run in child processes under different
OpenBLAS kernels and thread counts, and with every elementary function of NumPy and
``math`` moved by one ulp up or down (``tests/ulp_shift/sitecustomize.py``: what another
processor's vector library may do to the last bit): the nets must be byte-identical.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

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
    # the machine's own choice of kernel and threads against another kernel on one thread
    # (Prescott's, the oldest; Haswell's where the machine's own is Prescott's)
    own = _build_in_child()
    other = "Haswell" if "prescott" in str(own["blas"]).lower() else "Prescott"
    runs = [own, _build_in_child(OPENBLAS_CORETYPE=other, OPENBLAS_NUM_THREADS="1")]
    kernels = [r.pop("blas") for r in runs]
    assert len({tuple(k) for k in kernels}) == 2, f"the kernels did not change: {kernels}"
    assert runs[1] == runs[0], kernels


# One ulp: NumPy's and math's elementary functions moved by one ulp, up or down, in the
# child (tests/ulp_shift/sitecustomize.py).  The searches decide from + - * / and sqrt only
# (lncapacity.elementary, lncapacity.adam), so the nets must not move.
ULP_SHIFT = Path(__file__).parent / "ulp_shift"
ROOT = Path(__file__).parent.parent
ULP_CHILD = r"""
import hashlib, json, math, sys
import numpy as np
from lncapacity import build, load_points, points_from_arrays
from lncapacity.construct.sector import sector_net
from lncapacity.fileformat import dumps, to_dict

def rnd(m, d, k, seed):
    rng = np.random.default_rng(seed)
    return points_from_arrays(rng.standard_normal((m, d)), rng.integers(0, k, m))

out = {"probe": [float(np.arctan2(1.0, 3.0)).hex(), math.log(3.0).hex()]}
for name, data, kw in json.loads(sys.argv[1]):
    if isinstance(data, dict):
        points = points_from_arrays(np.array(data["X"], dtype=float), data["y"])
    else:
        points = load_points(data) if isinstance(data, str) else rnd(*data)
    net = sector_net(points, kw["sector"]) if "sector" in kw else build(points, **kw)
    out[name] = [hashlib.sha256(dumps(to_dict(net)).encode()).hexdigest(), net.meta.get("method")]
print(json.dumps(out))
"""


def _shifted_builds(cases: list, shift: str) -> subprocess.Popen[str]:
    """A child building ``cases`` with the elementary functions shifted (``up``, ``down``)
    or not (``""``)."""
    path = [str(ULP_SHIFT)] if shift else []
    env = {k: v for k, v in os.environ.items() if k not in BLAS_ENV}
    env["PYTHONPATH"] = os.pathsep.join([*path, str(ROOT), env.get("PYTHONPATH", "")])
    env["LNCAPACITY_ULP_SHIFT"] = shift
    return subprocess.Popen(
        [sys.executable, "-c", ULP_CHILD, json.dumps(cases)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _same_nets_one_ulp_apart(cases: list) -> None:
    children = {shift: _shifted_builds(cases, shift) for shift in ("", "up", "down")}
    runs = {}
    for shift, child in children.items():
        out, err = child.communicate(timeout=1800)
        assert child.returncode == 0, err
        runs[shift] = json.loads(out)
    probes = {shift: tuple(r.pop("probe")) for shift, r in runs.items()}
    assert len(set(probes.values())) == 3, f"the shift did not take: {probes}"
    assert runs["up"] == runs[""] and runs["down"] == runs[""], runs


SPIRALS = str(ROOT / "examples" / "spirals.csv")
HEXAGON = {  # labels alternating: four changes around an apex outside (a fold, then the chord)
    "X": [[2, 0], [1, 2], [-1, 2], [-2, 0], [-1, -2], [1, -3]],
    "y": [0, 1, 0, 1, 0, 1],
}


def test_build_gives_byte_identical_nets_with_numpys_elementary_functions_one_ulp_off():
    # the circle search in the plane (four seeds, no warm start; the spirals' net was one of
    # those NumPy's vector math moved between two processors); runs, peel, pma, an LN-G net;
    # the sector construction with its fold
    _same_nets_one_ulp_apart(
        [
            ["spirals circle", SPIRALS, {"method": "circle"}],
            ["runs", [80, 3, 2, 2], {"method": "runs"}],
            ["peel", [60, 3, 3, 3], {"method": "peel"}],
            ["pma", [30, 2, 2, 4], {"method": "pma"}],
            ["ln-g depth 2", [60, 3, 3, 5], {"arch": "ln-g", "depth": 2}],
            ["sector, four changes", HEXAGON, {"sector": 2}],
        ]
    )


@pytest.mark.slow
def test_larger_searches_give_byte_identical_nets_one_ulp_off():
    # the sets on which NumPy's vector math once moved the nets between two processors
    # (120 random points in the plane with 2 labels, 60 with 3), the circle search in R^3
    # with its warm starts (more than circle.SMALL points: Adam), and the default method
    _same_nets_one_ulp_apart(
        [
            ["R^3 circle, warm starts", [110, 3, 2, 1], {"method": "circle"}],
            ["120 points circle", [120, 2, 2, 11], {"method": "circle"}],
            ["60 points k=3 circle", [60, 2, 3, 12], {"method": "circle"}],
            ["60 points k=3 eps circle", [60, 3, 3, 13], {"method": "circle", "eps": "1e-5"}],
            ["200 points R^3 auto", [200, 3, 2, 14], {"budget": 1000}],
            ["spirals auto", SPIRALS, {"budget": 1000}],
            ["120 points k=5 auto", [120, 3, 5, 15], {}],
            ["300 points runs", [300, 3, 2, 16], {"method": "runs"}],
            ["150 points k=4 peel", [150, 3, 4, 17], {"method": "peel"}],
            ["ln-g depth 1", [200, 3, 3, 18], {"arch": "ln-g"}],
        ]
    )
