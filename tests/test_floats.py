"""Float backends: NumPy float64/float32 and PyTorch's own modules, which confirm (never certify).

Tests that need PyTorch call ``pytest.importorskip("torch")``; the rest hold without it.
"""

from __future__ import annotations

import math
import multiprocessing
import subprocess
import sys
import warnings
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

import numpy as np
import pytest
from flint import fmpq

from lncapacity import InputError, build, certify, points_from_arrays
from lncapacity.floats import (
    BACKENDS,
    CUDA_BACKENDS,
    DTYPES,
    TORCH_BACKENDS,
    FloatCheck,
    available_backends,
    check,
    forward,
    have_torch,
    precision,
    spacing,
    to_torch,
    unavailable,
)
from lncapacity.model import Affine, LNNet
from lncapacity.reproducible import torch_one_thread

EPS = [fmpq(0), fmpq(1, 100000)]
LINE_X = [[k] for k in range(8)]
LINE_Y = [k % 2 for k in range(8)]


@pytest.fixture(scope="module", params=EPS, ids=["eps0", "eps1e-5"])
def line_net(request) -> LNNet:
    """A certified depth-6 net for 0..7 on a line with alternating labels."""
    net = build(LINE_X, LINE_Y, eps=request.param, method="pma")
    assert net.depth == 6 and net.eps == request.param
    assert certify(net, LINE_X, LINE_Y).all_certified
    return net


def q(x: int | str) -> fmpq:
    return fmpq(x) if isinstance(x, int) else fmpq(*map(int, x.split("/")))


def affine(W: list[list[object]], b: list[object]) -> Affine[fmpq]:
    return Affine(tuple(tuple(q(w) for w in row) for row in W), tuple(q(v) for v in b))


# A depth-1 net whose float32 forward pass overflows: y = (2^70 x, -2^70 x, 0), and y*y = 2^140
# is beyond float32 (the exact net classifies x = 1 as 0 and x = -1 as 1, by a margin 2 sqrt(6)).
# At x = 0 the LayerNorm is 0/0 (eps = 0): NaN in every backend.
OVERFLOW = LNNet(
    1,
    3,
    fmpq(0),
    (affine([[2**70], [-(2**70)], [0]], [0, 0, 0]),),
    affine([[1, -1, 0], [-1, 1, 0]], [0, 0]),
    (0, 1),
)


# ---------------------------------------------------------------------------
# the backends, by name


def test_backend_names():
    assert tuple(DTYPES) == ("float64", "float32")  # the NumPy ones: a public contract
    assert BACKENDS == (
        "float64",
        "float32",
        "torch-float64",
        "torch-float32",
        "torch-cuda-float32",
        "torch-cuda-tf32",
        "torch-cuda-bfloat16",
    )
    assert available_backends()[:2] == ("float64", "float32")
    runnable = {b for b in BACKENDS if unavailable(b) is None}
    assert set(available_backends()) == runnable
    assert runnable >= (
        {*DTYPES, "torch-float64", "torch-float32"} if have_torch() else set(DTYPES)
    )


def test_cuda_backends_skip_with_a_reason_where_there_is_no_gpu(line_net, monkeypatch):
    """The GPU backends exist everywhere; where no CUDA device is (this machine, CI) they are
    left out of available_backends and running one says why, in one line."""
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for backend in CUDA_BACKENDS:
        assert unavailable(backend) == "no CUDA device here: torch.cuda.is_available() is False"
        assert backend not in available_backends()
        with pytest.raises(InputError, match=f"^{backend}: no CUDA device here"):
            forward(line_net, LINE_X, backend)
    assert (
        precision("torch-cuda-tf32") == "float32" and precision("torch-cuda-bfloat16") == "bfloat16"
    )
    # bfloat16's spacing: 8 significant bits
    assert (
        spacing(np.array([1.0]), "bfloat16")[0] == 2.0**-7
        and spacing(np.array([1.0]), "float32")[0] == 2.0**-23
    )


@pytest.mark.parametrize("backend", ["float16", "torch", "torch-float16", "exact", ""])
def test_unknown_backend_names_the_choices(line_net, backend):
    points = points_from_arrays(LINE_X, LINE_Y)
    message = r"unknown float backend .*float64, float32, torch-float64, torch-float32"
    with pytest.raises(InputError, match=message):
        forward(line_net, LINE_X, backend)
    with pytest.raises(InputError, match=message):
        check(line_net, points, backend)


def test_no_torch_means_numpy_only(line_net, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # any import of it raises ImportError
    assert not have_torch()
    assert available_backends() == ("float64", "float32")
    with pytest.raises(InputError, match=r"PyTorch is not installed.*lncapacity\[torch\]"):
        to_torch(line_net)
    with pytest.raises(InputError, match="PyTorch is not installed"):
        forward(line_net, LINE_X, "torch-float64")
    assert check(line_net, points_from_arrays(LINE_X, LINE_Y), "float32").all_agree


def test_importing_lncapacity_does_not_import_torch():
    code = "import sys, lncapacity.floats, lncapacity.cli; print('torch' in sys.modules)"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "False"


# ---------------------------------------------------------------------------
# a small certified net: every backend agrees with the certificate


def test_numpy_backends_agree_with_the_certificate(line_net):
    points = points_from_arrays(LINE_X, LINE_Y)
    for backend in DTYPES:
        c = check(line_net, points, backend)
        assert (c.backend, c.dtype, c.agree, c.total) == (backend, backend, 8, 8)
        assert c.all_agree and c.wrong == 0 and not c.near_resolution
        assert 0 < c.min_margin <= 2 * c.max_abs_score
        assert line_net.predict(LINE_X, backend).tolist() == LINE_Y
    z = forward(line_net, LINE_X, "float32")
    assert z.dtype == np.float32 and z.shape == (8, 2)


def test_torch_float64_equals_numpy_float64(line_net):
    pytest.importorskip("torch")
    z_np = forward(line_net, LINE_X, "float64")
    z_torch = forward(line_net, LINE_X, "torch-float64")
    assert z_torch.dtype == np.float64 and z_torch.shape == (8, 2)
    np.testing.assert_allclose(z_torch, z_np, rtol=0, atol=1e-12)
    c = check(line_net, points_from_arrays(LINE_X, LINE_Y), "torch-float64")
    assert (c.backend, c.dtype, c.agree, c.total) == ("torch-float64", "float64", 8, 8)
    assert c.min_margin == pytest.approx(check_min_margin(line_net, "float64"), abs=1e-12)
    assert line_net.predict(LINE_X, "torch-float64").tolist() == LINE_Y


def test_torch_float32_is_close_to_numpy_float32(line_net):
    pytest.importorskip("torch")
    z_np = forward(line_net, LINE_X, "float32")
    z_torch = forward(line_net, LINE_X, "torch-float32")
    assert z_torch.dtype == np.float32
    assert not np.array_equal(z_torch, forward(line_net, LINE_X, "torch-float64"))  # really fp32
    np.testing.assert_allclose(z_torch, z_np, rtol=0, atol=1e-4)
    np.testing.assert_allclose(z_torch, forward(line_net, LINE_X, "float64"), rtol=0, atol=1e-4)
    c = check(line_net, points_from_arrays(LINE_X, LINE_Y), "torch-float32")
    assert (c.dtype, c.agree, c.total) == ("float32", 8, 8)
    assert line_net.predict(LINE_X, "torch-float32").tolist() == LINE_Y


def check_min_margin(net: LNNet, backend: str) -> float:
    return check(net, points_from_arrays(LINE_X, LINE_Y), backend).min_margin


# ---------------------------------------------------------------------------
# to_torch: PyTorch's own modules


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_to_torch_is_linear_and_layernorm_modules(line_net, dtype):
    torch = pytest.importorskip("torch")
    before = torch.random.get_rng_state()
    model = to_torch(line_net, dtype)
    assert torch.equal(torch.random.get_rng_state(), before)  # no random initialisation
    assert isinstance(model, torch.nn.Sequential)
    kinds = [type(m) for m in model]
    assert kinds == [torch.nn.Linear, torch.nn.LayerNorm] * 6 + [torch.nn.Linear]
    for norm in model[1::2]:
        assert norm.normalized_shape == (3,)
        assert norm.eps == float(line_net.eps)
        assert norm.elementwise_affine is False and norm.weight is None and norm.bias is None
    first, readout = model[0], model[-1]
    assert (first.in_features, first.out_features) == (1, 3)
    assert (readout.in_features, readout.out_features) == (3, 2)
    tdt = getattr(torch, dtype)
    assert all(p.dtype == tdt and not p.requires_grad for p in model.parameters())
    # the exact weights, rounded to the dtype
    W = [[float(w) for w in row] for row in line_net.layers[0].W]
    assert torch.equal(first.weight, torch.tensor(W, dtype=tdt))
    b = [float(v) for v in line_net.readout.b]
    assert torch.equal(readout.bias, torch.tensor(b, dtype=tdt))
    # the module is what the torch backend runs
    # one thread: PyTorch's OpenMP pool must not start (see test_forked_workers_...)
    with torch.no_grad(), torch_one_thread(torch):
        z = model(torch.tensor(LINE_X, dtype=tdt)).numpy()
    assert np.array_equal(z, forward(line_net, LINE_X, f"torch-{dtype}"))


def test_to_torch_of_a_depth_zero_net():
    torch = pytest.importorskip("torch")
    X, y = [[0, 0], [1, 1], [3, 0]], [0, 1, 1]  # 0 is split from the others by a line
    net = build(X, y, eps=EPS[1], depth=0, method="pma")
    model = to_torch(net)
    assert [type(m) for m in model] == [torch.nn.Linear]
    assert (model[0].in_features, model[0].out_features) == (2, 2)
    assert check(net, points_from_arrays(X, y), "torch-float64").all_agree


def test_to_torch_rejects_other_dtypes(line_net):
    pytest.importorskip("torch")
    with pytest.raises(InputError, match="unknown dtype 'float16'"):
        to_torch(line_net, "float16")


def _torch_layer_norm(rows: int) -> float:
    import torch

    x = torch.arange(3.0 * rows, dtype=torch.float64).reshape(rows, 3)
    return float(torch.nn.functional.layer_norm(x, (3,)).abs().sum())


def test_forked_workers_still_work_after_a_torch_forward():
    """Once PyTorch's OpenMP pool has run in a process, fork()ed workers (lncapacity.parallel,
    as ``shatter`` uses) hang in their first parallel kernel: the backend must not start it."""
    torch = pytest.importorskip("torch")
    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork here")
    threads = torch.get_num_threads()
    net = build(LINE_X, LINE_Y, method="pma")
    X = np.linspace(-1, 8, 4000).reshape(-1, 1)  # enough rows for a parallel LayerNorm kernel
    forward(net, X, "torch-float64")
    forward(net, X, "torch-float32")
    assert torch.get_num_threads() == threads  # restored
    pool = ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("fork"))
    try:
        futures = [pool.submit(_torch_layer_norm, 4000) for _ in range(2)]
        results = [f.result(timeout=30) for f in futures]
    except FutureTimeout:
        for process in list(pool._processes.values()):
            process.kill()
        pytest.fail("a forked worker hangs in PyTorch after a torch-backend forward pass")
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    assert results[0] == results[1] > 0


# ---------------------------------------------------------------------------
# overflow and NaN: wrong points, counted, and no warnings


@pytest.mark.parametrize("backend", BACKENDS)
def test_overflow_and_nan_are_wrong_points_without_warnings(backend):
    if backend in TORCH_BACKENDS:
        pytest.importorskip("torch")
    if (why := unavailable(backend)) is not None:
        pytest.skip(why)
    X, y = [[1], [-1], [0]], [0, 1, 0]
    assert [p.certified for p in certify(OVERFLOW, X, y).points] == [True, True, False]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a RuntimeWarning would fail the test
        z = forward(OVERFLOW, X, backend)
        c = check(OVERFLOW, points_from_arrays(X, y), backend)
    assert np.isnan(z[2]).all()  # 0/0 in the LayerNorm
    assert c.min_margin == -math.inf  # a NaN score decides nothing
    if backend.endswith("float64"):
        np.testing.assert_allclose(z[0], [2 * math.sqrt(1.5), -2 * math.sqrt(1.5)])
        assert (c.agree, c.total) == (2, 3)
    else:  # the variance overflows float32: LayerNorm gives 0, so do the scores
        assert np.array_equal(z[:2], np.zeros((2, 2)))
        assert (c.agree, c.wrong, c.max_abs_score) == (0, 3, 0.0)


def test_single_class_margins_are_infinite_in_every_backend():
    X, y = [[0, 1], [2, 3], [5, -1]], ["a", "a", "a"]
    net = build(X, y, eps=EPS[1], method="pma")
    assert net.depth == 0 and net.classes == ("a",)
    for backend in available_backends():
        c = check(net, points_from_arrays(X, y), backend)
        assert (c.agree, c.total, c.min_margin) == (3, 3, math.inf)
        assert not c.near_resolution
        assert net.predict([[7, 7]], backend).tolist() == ["a"]


# ---------------------------------------------------------------------------
# FloatCheck


def test_near_resolution_is_a_tiny_margin_relative_to_the_scores():
    assert FloatCheck("float64", 4, 4, 1e-9, 10.0).near_resolution
    assert not FloatCheck("float64", 4, 4, 1e-4, 10.0).near_resolution
    assert not FloatCheck("float32", 3, 4, -1e-9, 10.0).near_resolution  # wrong, not near
    assert not FloatCheck("float32", 4, 4, math.inf, math.nan).near_resolution  # one class
    assert FloatCheck("torch-float32", 4, 4, 1e-9, 10.0).dtype == "float32"


def test_near_resolution_on_a_real_readout():
    # depth 0: z = (x, 1 - 2^-30) at x = 1, so the margin 2^-30 is ~1e-9 of the scores
    net = LNNet(1, 3, fmpq(0), (), affine([[1], [0]], [0, "1073741823/1073741824"]), (0, 1))
    points = points_from_arrays([[1], [-1]], [0, 1])
    c64 = check(net, points, "float64")
    assert (c64.agree, c64.min_margin, c64.max_abs_score) == (2, 2.0**-30, 1.0)
    assert c64.near_resolution
    c32 = check(net, points, "float32")  # 1 - 2^-30 rounds to 1 in float32: a tie, not a win
    assert (c32.agree, c32.min_margin) == (1, 0.0)
    assert not c32.near_resolution


def test_the_reports_say_a_cuda_backend_was_skipped(tmp_path):
    """certify/verify: a CUDA backend asked for with --float where there is no GPU is reported
    skipped, with the reason, exit 0; asked for with --require-float, one line, exit 2."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is here: nothing is skipped")
    root = Path(__file__).resolve().parents[1]
    (tmp_path / "p.csv").write_text("x,label\n0,0\n1,1\n2,0\n3,1\n")

    def run(*args):
        return subprocess.run(
            [sys.executable, "-m", "lncapacity", "certify", "p.csv", "--quiet", *args],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
        )

    r = run("--float", "float64,torch-cuda-bfloat16")
    assert r.returncode == 0 and "torch-cuda-bfloat16: skipped (no CUDA device here" in r.stdout
    s = json.loads(run("--float", "torch-cuda-tf32", "--json").stdout)
    assert s["float"]["torch-cuda-tf32"]["skipped"].startswith("no CUDA device")
    r = run("--require-float", "torch-cuda-float32")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "no CUDA device" in r.stderr


def _nets_to_bound():
    """Nets whose float scores differ from the exact ones in many ways: a width-3 chain, an
    LN-G net of steps, a net of full-rank layers with LayerNorm gains (certified by the
    interval pass, as trained nets are)."""
    from lncapacity.model import Norm

    rng = np.random.default_rng(7)
    X = rng.integers(-50, 50, (60, 3)) / 8
    y = (X[:, 0] * X[:, 1] > X[:, 2]).astype(int)
    points = points_from_arrays(X, y)
    yield build(points, arch="ln-g", depth=2), points
    line = points_from_arrays(LINE_X, LINE_Y)
    yield build(line, eps=fmpq(1, 100000)), line

    def affine(rows, cols):
        W = rng.integers(-9, 10, (rows, cols))
        return Affine(
            tuple(tuple(fmpq(int(w), 7) for w in r) for r in W),
            tuple(fmpq(int(v), 5) for v in rng.integers(-9, 10, rows)),
        )

    gain = tuple(fmpq(int(g), 3) for g in rng.integers(1, 9, 6))
    trained = LNNet(
        3,
        6,
        fmpq(1, 1000),
        (affine(6, 3), affine(6, 6)),
        affine(2, 6),
        (0, 1),
        {},
        (Norm(gain, None), Norm(None, gain)),
    )
    z = np.asarray(trained.predict(X, "float64"))
    yield trained, points_from_arrays(X, z)


@pytest.mark.parametrize("refined", [False, True])
def test_ulp_and_error_figures_bound_the_true_disagreement(refined):
    """``max_ulps`` and ``max_abs_error`` are at least the true disagreement: the distance
    from each float score to its exact value enclosed in 256-bit balls, in ulps of the
    largest score, whether or not balls refine the certificate's enclosures."""
    from lncapacity.certify import exact_scores

    for net, points in _nets_to_bound():
        # the generic passes: a margin theorem bounds margins, not scores
        cert = certify(net, points, scores=True, theorems=False)
        assert cert.all_certified and cert.scores is not None
        lo, hi = exact_scores(net, points.X, bits=256)  # the exact scores, within 1e-70

        def balls(rows, net=net, points=points):
            return exact_scores(net, [points.X[k] for k in rows])

        refine = balls if refined else None
        for backend in ("float64", "float32"):
            c = check(net, points, backend, cert.scores, refine)
            z = forward(net, points, backend).astype(np.float64)
            distance = np.maximum(np.maximum(lo - z, z - hi), 0)  # at least |z - t|, rounded
            mag = np.maximum(np.abs(z), np.maximum(np.abs(lo), np.abs(hi))).max(axis=1)
            ulp = np.spacing(np.nextafter(mag.astype(backend), np.inf)).astype(np.float64)
            true_ulps = (distance / ulp[:, None]).max()
            assert c.max_abs_error >= distance.max() * (1 - 1e-15)
            assert c.max_ulps >= true_ulps * (1 - 1e-15), (backend, c.max_ulps, true_ulps)
            if refined and backend == "float64":  # the balls leave about an ulp of slack
                assert c.max_ulps <= true_ulps + 2, (c.max_ulps, true_ulps)
