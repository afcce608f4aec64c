"""PyTorch in and out (and ONNX): trained LN-Nets, exactly."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path

import mpmath
import numpy as np
import pytest
from flint import fmpq

import lncapacity
from lncapacity import InputError, certify
from lncapacity.fileformat import from_dict, to_dict
from lncapacity.floats import check
from lncapacity.model import LNNet

torch = pytest.importorskip("torch")
nn = torch.nn

from lncapacity.interop import (  # noqa: E402
    from_state_dict,
    from_torch,
    load_torch,
    module_from_export,
    to_onnx,
    to_torch,
)

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """PyTorch on one thread here: once its OpenMP pool has run in a process, a worker forked
    later (lncapacity.parallel, in other test files) hangs (see floats._forward_torch)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


SPIRALS = ROOT / "examples" / "spirals.csv"


def perturbed(model, seed=0, scale=0.5):
    """``model`` with every parameter moved at random (as training would), in eval mode."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(scale * torch.randn(p.shape, generator=g, dtype=torch.float64).to(p.dtype))
    return model.eval().requires_grad_(False)


def models():
    torch.manual_seed(0)
    yield "affine", perturbed(nn.Sequential(nn.Linear(2, 8), nn.LayerNorm(8), nn.Linear(8, 3)))
    yield (
        "widths",
        perturbed(
            nn.Sequential(
                nn.Linear(3, 5),
                nn.LayerNorm(5, bias=False, eps=1e-3),
                nn.Linear(5, 7),
                nn.LayerNorm(7, eps=1e-3),
                nn.Linear(7, 2),
            )
        ),
    )
    yield (
        "plain",
        perturbed(
            nn.Sequential(
                nn.Linear(2, 4), nn.LayerNorm(4, elementwise_affine=False), nn.Linear(4, 2)
            )
        ),
    )
    yield (
        "float64",
        perturbed(
            nn.Sequential(
                nn.Linear(2, 6), nn.LayerNorm(6), nn.Linear(6, 6), nn.LayerNorm(6), nn.Linear(6, 4)
            ).double()
        ),
    )
    yield (
        "bfloat16",
        perturbed(
            nn.Sequential(nn.Linear(2, 4), nn.LayerNorm(4), nn.Linear(4, 2)).to(torch.bfloat16)
        ),
    )


MODELS = dict(models())


def dtype_of(model):
    return next(model.parameters()).dtype


@pytest.mark.parametrize("name", list(MODELS))
def test_round_trip_gives_the_same_modules_and_outputs(name):
    model = MODELS[name]
    net = from_torch(model)
    again = from_dict(json.loads(json.dumps(to_dict(net))))
    assert again == net
    back = to_torch(again)
    assert [type(m) for m in back] == [type(m) for m in model]
    for a, b in zip(model.state_dict().items(), back.state_dict().items(), strict=True):
        assert a[0] == b[0] and a[1].dtype == b[1].dtype and torch.equal(a[1], b[1])
    for a, b in zip(model, back, strict=True):
        if isinstance(a, nn.LayerNorm):
            assert (a.normalized_shape, a.eps) == (b.normalized_shape, b.eps)
    X = torch.randn(500, net.input_dim, generator=torch.Generator().manual_seed(1))
    X = X.to(dtype_of(model))
    with torch.no_grad():
        assert torch.equal(model(X), back(X))  # identical float outputs, bit for bit
        if dtype_of(model) in (torch.float32, torch.float64):
            # the float backend of the same dtype runs the net's own modules
            backend = "torch-" + str(dtype_of(model)).removeprefix("torch.")
            own = lncapacity.floats.forward(net, X.double().numpy(), backend)
            assert np.array_equal(own, model(X).numpy())


def test_weights_are_read_exactly():
    model = MODELS["affine"]
    net = from_torch(model)
    w = float(model[0].weight[3, 1])
    assert net.layers[0].W[3][1] == fmpq(*w.as_integer_ratio())
    gain = float(model[1].weight[5])
    assert net.norms[0].gain[5] == fmpq(*gain.as_integer_ratio())
    assert net.eps == fmpq(*(1e-5).as_integer_ratio())  # the float PyTorch holds, exactly
    assert net.width == 8 and net.classes == (0, 1, 2)
    assert net.meta["torch"] == {"dtype": "float32", "modules": ["Linear", "LayerNorm", "Linear"]}
    assert to_dict(net)["requires"] == ["ln-affine"]
    widths = from_torch(MODELS["widths"])
    assert widths.width is None and widths.widths == (5, 7)
    assert widths.norms[0].bias is None and widths.norms[1].bias is not None
    plain = from_torch(MODELS["plain"])
    assert plain.norms == () and to_dict(plain)["format"] == "lnnet/1"


def test_the_normal_form():
    torch.manual_seed(3)
    # LayerNorm first, two Linears in a row, identities, a final LayerNorm
    model = perturbed(
        nn.Sequential(
            nn.LayerNorm(3),
            nn.Identity(),
            nn.Linear(3, 4),
            nn.Dropout(0.5),
            nn.Linear(4, 4),
            nn.LayerNorm(4),
            nn.Sequential(nn.Linear(4, 4), nn.LayerNorm(4)),
        )
    )
    net = from_torch(model)
    assert net.depth == 3 and net.input_dim == 3 and len(net.classes) == 4
    one, zero = fmpq(1), fmpq(0)
    assert net.layers[0].W == tuple(
        tuple(one if i == j else zero for j in range(3)) for i in range(3)
    )
    W1, W2 = model[2].weight.double(), model[4].weight.double()
    composed = (W2 @ W1).numpy()
    exact = np.array([[float(w) for w in row] for row in net.layers[1].W])
    assert np.allclose(exact, composed, rtol=1e-12)
    # the composition is the exact product, not a float one
    assert net.layers[1].W[0][0] == sum(
        (
            fmpq(*float(model[4].weight[0, j]).as_integer_ratio())
            * fmpq(*float(model[2].weight[j, 0]).as_integer_ratio())
            for j in range(4)
        ),
        fmpq(0),
    )
    X = torch.randn(50, 3, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        ref = model(X).double().numpy()
    assert np.allclose(lncapacity.floats.forward(net, X.double().numpy()), ref, atol=1e-5)


@pytest.mark.parametrize(
    ("model", "message"),
    [
        (
            nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 2)),
            r"^model\[1\]: ReLU: not supported \(an LN-Net has Linear and LayerNorm",
        ),
        (
            nn.Sequential(nn.Linear(2, 3), nn.Dropout(0.1), nn.Linear(3, 2)).train(),
            r"^model\[1\]: Dropout: in training mode .* call model.eval\(\)",
        ),
        (
            nn.Sequential(nn.Linear(2, 3), nn.LayerNorm(4)),
            r"^model\[1\]: LayerNorm: expects 4 features, but the module before gives 3",
        ),
        (  # RMSNorm is read (tests/test_rms.py), over one dimension
            nn.Sequential(nn.Linear(2, 3), nn.RMSNorm([3, 1])),
            r"^model\[1\]: RMSNorm: normalizes over 2 dimensions; only 1 fits",
        ),
        (nn.Sequential(nn.Linear(2, 3), nn.LayerNorm([3, 1])), r"normalizes over 2 dimensions"),
        (nn.Sequential(nn.Linear(2, 1), nn.LayerNorm(1)), r"model\[1\]: LayerNorm: .*single"),
        (
            nn.Sequential(
                nn.Linear(2, 3), nn.LayerNorm(3), nn.Linear(3, 3), nn.LayerNorm(3, eps=1e-6)
            ),
            r"^model: LayerNorms with different eps",
        ),
        (nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.Tanh())), r"^model\[1\.0\]: Tanh"),
        (nn.Sequential(nn.Dropout(0.0)), r"^model: no Linear or LayerNorm"),
        (nn.Conv1d(1, 1, 1), r"^model: Conv1d: not supported"),
    ],
)
def test_unsupported_modules_are_refused_by_name(model, message):
    with pytest.raises(InputError, match=message) as e:
        from_torch(model)
    assert "\n" not in str(e.value)


def test_nan_weights_are_refused():
    model = nn.Sequential(nn.Linear(2, 3))
    with torch.no_grad():
        model[0].bias[1] = float("nan")
    with pytest.raises(InputError, match=r"model\[0\]: Linear\.bias: has NaN"):
        from_torch(model)


def test_state_dicts_and_saved_modules(tmp_path):
    model = MODELS["widths"]
    net = from_torch(model)
    assert from_state_dict(model.state_dict(), eps=1e-3) == net
    torch.save(model, tmp_path / "m.pt")
    torch.save(model.state_dict(), tmp_path / "sd.pt")
    assert load_torch(tmp_path / "m.pt") == net
    assert load_torch(tmp_path / "sd.pt", eps=1e-3) == net
    # a LayerNorm without weights leaves a gap: the kinds must be given
    plain = MODELS["plain"]
    with pytest.raises(InputError, match=r"no weights for module 1 .* --spec"):
        from_state_dict(plain.state_dict())
    got = from_state_dict(plain.state_dict(), spec=["Linear", "LayerNorm", "Linear"])
    assert got == from_torch(plain)
    with pytest.raises(InputError, match=r"module 1 \(ReLU\): not supported"):
        from_state_dict(plain.state_dict(), spec=["Linear", "ReLU", "Linear"])
    with pytest.raises(InputError, match="module 0 has a bias but no weight"):
        from_state_dict({"0.bias": torch.zeros(2)})
    with pytest.raises(InputError, match="not a state dict"):
        from_state_dict({"0.weight": [1.0]})


def test_loading_runs_no_code(tmp_path):
    class Custom(nn.Module):
        def forward(self, x):
            return x

    torch.save(nn.Sequential(nn.Linear(2, 2), nn.ReLU()), tmp_path / "relu.pt")
    with pytest.raises(InputError, match=r"pickles torch\.nn\.modules\.activation\.ReLU"):
        load_torch(tmp_path / "relu.pt")
    (tmp_path / "junk.pt").write_bytes(b"not a torch file")
    with pytest.raises(InputError, match=r"junk\.pt: cannot load"):
        load_torch(tmp_path / "junk.pt")
    with pytest.raises(InputError, match="no such file"):
        load_torch(tmp_path / "missing.pt")


# ---------------------------------------------------------------------------
# certify a trained net, against an independent high-precision evaluation


def spirals():
    rows = [line.split(",") for line in SPIRALS.read_text().splitlines()[1:] if line.strip()]
    X = np.array([[float(a), float(b)] for a, b, _ in rows])
    y = [c.strip() for _, _, c in rows]
    return X, y


@functools.lru_cache
def train_spirals(steps=300, width=8):
    """A few hundred Adam steps on the bundled spirals (seed 0), on one thread."""
    X, y = spirals()
    classes = sorted(set(y))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny tensors: threads only contend (2 cores, shared)
    try:
        return _train(X, y, classes, steps, width)
    finally:
        torch.set_num_threads(threads)


def _train(X, y, classes, steps, width):
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(2, width),
        nn.LayerNorm(width),
        nn.Linear(width, width),
        nn.LayerNorm(width),
        nn.Linear(width, len(classes)),
    )
    opt = torch.optim.Adam(model.parameters(), lr=0.02)
    Xt = torch.tensor(X, dtype=torch.float32)
    yt = torch.tensor([classes.index(c) for c in y])
    for _ in range(steps):
        opt.zero_grad()
        nn.functional.cross_entropy(model(Xt), yt).backward()
        opt.step()
    return model.eval().requires_grad_(False), classes


def mpmath_margins(model, X, labels, dps=60):
    """z_label - max_other z for each point, by mpmath from the module's own tensors."""
    with mpmath.workdps(dps):
        out = []
        for x, c in zip(X, labels, strict=True):
            h = [mpmath.mpf(float(v)) for v in x]
            for m in model:
                if isinstance(m, nn.Linear):
                    W, b = m.weight.double().tolist(), m.bias.double().tolist()
                    h = [
                        mpmath.fsum(mpmath.mpf(w) * v for w, v in zip(row, h, strict=True))
                        + mpmath.mpf(bi)
                        for row, bi in zip(W, b, strict=True)
                    ]
                else:
                    n = len(h)
                    mean = mpmath.fsum(h) / n
                    var = mpmath.fsum((v - mean) ** 2 for v in h) / n
                    s = mpmath.sqrt(var + mpmath.mpf(m.eps))
                    g, beta = m.weight.double().tolist(), m.bias.double().tolist()
                    h = [
                        (v - mean) / s * mpmath.mpf(gi) + mpmath.mpf(bi)
                        for v, gi, bi in zip(h, g, beta, strict=True)
                    ]
            out.append(h[c] - max(v for j, v in enumerate(h) if j != c))
        return out


@pytest.mark.parametrize("intervals", [True, False])
def test_a_trained_spirals_net_certified_as_mpmath_says(intervals):
    model, classes = train_spirals()
    X, y = spirals()
    # the training points and a grid around them: some right, some wrong
    ticks = np.linspace(-0.95, 0.95, 9)  # no grid point is a training point
    grid = np.array([[a, b] for a in ticks for b in ticks])
    with torch.no_grad():
        pred = model(torch.tensor(grid, dtype=torch.float32)).argmax(1).numpy()
    gy = [classes[(int(p) + (i % 3 == 0)) % 2] for i, p in enumerate(pred)]  # a third flipped
    XX = np.vstack([X, grid])
    yy = y + gy
    net = from_torch(model, classes=classes)
    cert = certify(net, XX, yy, intervals=intervals, scores=True)
    margins = mpmath_margins(model, XX, [classes.index(c) for c in yy])
    expected = ["right" if m > 0 else "wrong" if m < 0 else "undecided" for m in margins]
    assert [p.verdict for p in cert.points] == expected
    assert cert.right == sum(m > 0 for m in margins) >= 24 + 40  # training points learned
    assert cert.wrong == sum(m < 0 for m in margins) >= 20 and cert.undecided == 0
    for p, m in zip(cert.points, margins, strict=True):
        lo, hi = p.margin_interval
        assert lo <= float(m) <= hi and hi - lo <= 1e-9 * (1 + abs(float(m)))
    # the float backends against the exact scores: the net's own PyTorch outputs
    points = lncapacity.points_from_arrays(XX, yy)
    c32 = check(net, points, "torch-float32", cert.scores)
    assert c32.agree == cert.right and 0 < c32.max_ulps < 1e4
    c64 = check(net, points, "float64", cert.scores)
    assert c64.max_ulps < 1e6


# ---------------------------------------------------------------------------
# export


def test_to_torch_of_a_built_net_and_any_dtype():
    net = lncapacity.build([[0, 0], [0, 1], [1, 0], [1, 1]], [0, 1, 1, 0], eps=fmpq(1, 10**5))
    model = to_torch(net)
    assert dtype_of(model) == torch.float64
    X = np.random.default_rng(0).normal(size=(50, 2))
    f = lncapacity.floats.forward  # both round the exact weights to float64 alike
    assert np.array_equal(f(from_torch(model), X), f(net, X))
    assert dtype_of(to_torch(net, "bfloat16")) == torch.bfloat16
    with pytest.raises(InputError, match="unknown dtype 'int8'"):
        to_torch(net, "int8")


def test_onnx_export_runs_in_onnxruntime():
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from lncapacity.interop import run_onnx

    for name in ("affine", "widths", "plain", "float64"):
        model = MODELS[name]
        net = from_torch(model)
        dtype = "float64" if name == "float64" else "float32"
        X = torch.randn(200, net.input_dim, generator=torch.Generator().manual_seed(5))
        X = X.to(dtype_of(model))
        with torch.no_grad():
            ref = model(X).numpy()
        got = run_onnx(to_onnx(net, dtype), X.numpy(), dtype)
        assert got.dtype == np.dtype(dtype)
        tol = 1e-12 if dtype == "float64" else 1e-5
        assert np.allclose(got, ref, rtol=tol, atol=tol)
        assert (got.argmax(1) == ref.argmax(1)).mean() > 0.99


def test_onnx_export_without_onnx(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(InputError, match=r"pip install 'lncapacity\[onnx\]'"):
        to_onnx(from_torch(MODELS["plain"]))


# ---------------------------------------------------------------------------
# the command line


def run(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "lncapacity", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )


def test_cli_import_verify_export(tmp_path):
    model, classes = train_spirals()
    torch.save(model, tmp_path / "model.pt")
    r = run(
        "import",
        tmp_path / "model.pt",
        "--out",
        tmp_path / "net.json",
        "--classes",
        ",".join(classes),
        cwd=ROOT,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == f"wrote {tmp_path / 'net.json'}"
    net = lncapacity.load(tmp_path / "net.json")
    assert net == from_torch(model, classes=classes)
    # the data with two labels flipped: verify exits 2 and names them
    lines = SPIRALS.read_text().splitlines()
    flip = {"a": "b", "b": "a"}
    for i in (3, 7):
        x, yv, lab = lines[i].split(",")
        lines[i] = f"{x},{yv},{flip[lab.strip()]}"
    (tmp_path / "data.csv").write_text("\n".join(lines) + "\n")
    cert = certify(net, lncapacity.load_points(tmp_path / "data.csv"))
    wrong = [p.index for p in cert.points if p.verdict == "wrong"]
    r = run("verify", tmp_path / "net.json", tmp_path / "data.csv", "--json", "--quiet", cwd=ROOT)
    assert r.returncode == 2
    s = json.loads(r.stdout)
    assert (s["certainly_right"], s["certainly_wrong"], s["undecided"]) == (
        cert.right,
        cert.wrong,
        cert.undecided,
    )
    assert [p["point"] for p in s["not_right"]] == [p.index for p in cert.failures]
    assert {2, 6} <= set(wrong) and s["trained"] and s["widths"] == [8, 8]
    assert s["float"]["torch-float32"]["max_ulps"] is not None
    err = r.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("lncapacity: error: certificate fails at ")
    assert f"({cert.wrong} certainly wrong, {cert.undecided} undecided)" in err[0]
    r = run(
        "verify", tmp_path / "net.json", tmp_path / "data.csv", "--float", "torch-float32", cwd=ROOT
    )
    assert "point 2 (line 4): wrong, margin in [" in r.stdout
    assert "ulp from exact" in r.stdout
    # export, and back: the same modules
    r = run("export", tmp_path / "net.json", "--torch", tmp_path / "back.pt", cwd=ROOT)
    assert r.returncode == 0, r.stderr
    back = module_from_export(torch.load(tmp_path / "back.pt"))  # plain data (issue 35)
    X = torch.randn(100, 2)
    with torch.no_grad():
        assert torch.equal(back(X), model(X))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["import", "{tmp}/none.pt", "--out", "{tmp}/n.json"], "none.pt: no such file"),
        (["import", "{tmp}/relu.pt", "--out", "{tmp}/n.json"], "pickles torch.nn.modules"),
        (
            ["import", "{tmp}/sd.pt", "--out", "{tmp}/n.json", "--classes", "a"],
            "--classes: the net has 2 outputs",
        ),
        (["export", "{tmp}/n.json"], "give --torch MODEL.pt and/or --onnx"),
        (["export", "{tmp}/none.json", "--torch", "{tmp}/x.pt"], "none.json: cannot read"),
        (["export", "{tmp}/net.json", "--torch", "{tmp}/x.pt", "--dtype", "int8"], "--dtype"),
    ],
)
def test_cli_import_export_errors(tmp_path, args, message, capsys):
    # in process (the command line itself is run by test_cli_import_verify_export)
    from lncapacity.cli import main

    torch.save(nn.Sequential(nn.Linear(2, 2), nn.ReLU()), tmp_path / "relu.pt")
    torch.save(nn.Sequential(nn.Linear(2, 2)).state_dict(), tmp_path / "sd.pt")
    lncapacity.save(from_torch(MODELS["plain"]), tmp_path / "net.json")
    assert main([a.format(tmp=tmp_path) for a in args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("lncapacity: error: ") and message in err[0]
    assert not (tmp_path / "n.json").exists() and not (tmp_path / "x.pt").exists()


def test_width_none_nets_are_lnnets():
    net = from_torch(MODELS["widths"])
    assert isinstance(net, LNNet) and net.predict([[0, 0, 0]], backend="exact").shape == (1,)


def test_cli_export_onnx_and_torch_together(tmp_path, capsys):
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from lncapacity.cli import main
    from lncapacity.interop import run_onnx

    model = MODELS["widths"]
    lncapacity.save(from_torch(model), tmp_path / "net.json")
    args = ["export", str(tmp_path / "net.json"), "--onnx", str(tmp_path / "m.onnx")]
    assert main([*args, "--torch", str(tmp_path / "m.pt")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [f"wrote {tmp_path / 'm.pt'}", f"wrote {tmp_path / 'm.onnx'}"]
    X = torch.randn(64, 3, generator=torch.Generator().manual_seed(9))
    with torch.no_grad():
        ref = model(X).numpy()
    got = run_onnx((tmp_path / "m.onnx").read_bytes(), X.numpy())
    assert np.allclose(got, ref, rtol=1e-5, atol=1e-5)
    assert load_torch(tmp_path / "m.pt") == from_torch(model)
    # bfloat16 has no ONNX export here: nothing is written
    assert main([*args[:2], "--onnx", str(tmp_path / "b.onnx"), "--dtype", "bfloat16"]) == 2
    assert "ONNX export writes float32 or float64" in capsys.readouterr().err
    assert not (tmp_path / "b.onnx").exists()


# ---------------------------------------------------------------------------
# import of files that are not float LN-Nets (issue 28): one line, exit 2, nothing written


def import_error(tmp_path, obj, capsys, *args, save=True):
    """Save ``obj`` with torch.save, ``lncapacity import`` it: the one line of stderr."""
    from lncapacity.cli import main

    model = tmp_path / "model.pt"
    if save:
        torch.save(obj, model)
    assert main(["import", str(model), "--out", str(tmp_path / "n.json"), *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("lncapacity: error: "), err
    assert not (tmp_path / "n.json").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["model.pt"]  # no temporary file either
    return err[0]


def _with(module, **attrs):
    """``module`` with attributes set as a pickle may set them (no checks on the way)."""
    for k, v in attrs.items():
        if k in module._parameters:
            module._parameters[k] = v
        else:
            module.__dict__[k] = v
    return module


def _self_containing():
    s = nn.Sequential(nn.Linear(2, 3))
    s.add_module("1", s)
    return s


NOT_LN_NETS = {
    "int weights": (
        {"0.weight": torch.ones(3, 2, dtype=torch.int32)},
        "0.weight: weights of dtype int32; only float16, bfloat16, float32 and float64",
    ),
    "bool weights": ({"0.weight": torch.ones(3, 2, dtype=torch.bool)}, "of dtype bool"),
    "float8 weights": (
        {"0.weight": torch.ones(3, 2).to(torch.float8_e4m3fn)},
        "0.weight: weights of dtype float8_e4m3fn",
    ),
    "complex weights": (
        {"0.weight": torch.ones(3, 2, dtype=torch.complex64)},
        "of dtype complex64",
    ),
    "int bias": (
        {"0.weight": torch.ones(3, 2), "0.bias": torch.ones(3, dtype=torch.int64)},
        "0.bias: weights of dtype int64",
    ),
    "0-d weight": ({"0.weight": torch.tensor(1.0)}, "0.weight: a 0-D weight of shape []"),
    "empty weight": ({"0.weight": torch.ones(0, 2)}, "0.weight: an empty tensor of shape [0, 2]"),
    "empty gain": ({"0.weight": torch.ones(0)}, "0.weight: an empty tensor of shape [0]"),
    "3-D weight": (
        {"0.weight": torch.ones(3, 2, 2)},
        "0.weight: a 3-D weight of shape [3, 2, 2]; a Linear's is 2-D",
    ),
    "2-D bias": (
        {"0.weight": torch.ones(3, 2), "0.bias": torch.ones(3, 1)},
        "0.bias: a 2-D tensor of shape [3, 1]; a 1-D one is needed",
    ),
    "unicode digit key": ({"\u00b2.weight": torch.ones(2)}, "is not <index>.weight"),
    "leading zero key": (
        {"0.weight": torch.ones(3, 2), "00.weight": torch.ones(3)},
        "'00.weight' is not <index>.weight",
    ),
    "eps NaN": (
        nn.Sequential(nn.Linear(2, 3), _with(nn.LayerNorm(3), eps=float("nan"))),
        "[1]: LayerNorm: eps is nan; a finite number >= 0 is needed",
    ),
    "eps inf": (
        nn.Sequential(nn.Linear(2, 3), _with(nn.LayerNorm(3), eps=float("inf"))),
        "eps is inf",
    ),
    "eps negative": (nn.Sequential(nn.Linear(2, 3), nn.LayerNorm(3, eps=-1.0)), "eps is -1.0"),
    "eps a string": (
        nn.Sequential(nn.Linear(2, 3), _with(nn.LayerNorm(3), eps="1e-5")),
        "[1]: LayerNorm: eps is str '1e-5', not a number",
    ),
    "eps a bool": (
        nn.Sequential(nn.Linear(2, 3), _with(nn.LayerNorm(3), eps=True)),
        "eps is bool True, not a number",
    ),
    "normalized_shape strings": (
        nn.Sequential(nn.Linear(2, 3), _with(nn.LayerNorm(3), normalized_shape=("3",))),
        "normalized_shape ('3',) is not integers",
    ),
    "gain of the wrong shape": (
        nn.Sequential(nn.Linear(2, 3), _with(nn.LayerNorm(3), weight=nn.Parameter(torch.ones(4)))),
        "[1]: LayerNorm.weight: shape [4], but [3] is needed",
    ),
    "Dropout p a string": (
        nn.Sequential(nn.Linear(2, 3), _with(nn.Dropout(0.1).eval(), p="0.1")),
        "[1]: Dropout: p is str '0.1', not a number",
    ),
    "Dropout p above 1": (
        nn.Sequential(nn.Linear(2, 3), _with(nn.Dropout(0.1).eval(), p=2.0)),
        "p is 2.0; a finite number in [0, 1]",
    ),
    "Dropout training a string": (
        nn.Sequential(nn.Linear(2, 3), _with(nn.Dropout(0.1), training="no")),
        "training is 'no', not True or False",
    ),
    "out_features a string": (
        nn.Sequential(_with(nn.Linear(2, 3), out_features="3")),
        "[0]: Linear: out_features is str '3', not an integer",
    ),
    "weight shape against out_features": (
        nn.Sequential(_with(nn.Linear(2, 3), weight=nn.Parameter(torch.ones(4, 2)))),
        "[0]: Linear.weight: shape [4, 2], but out_features 3 and in_features 2 need [3, 2]",
    ),
    "3-D Linear weight": (
        nn.Sequential(_with(nn.Linear(2, 3), weight=nn.Parameter(torch.ones(3, 2, 1)))),
        "[0]: Linear.weight: a 3-D tensor of shape [3, 2, 1]",
    ),
    "float8 Linear weight": (
        nn.Sequential(
            _with(nn.Linear(2, 3), weight=nn.Parameter(torch.ones(3, 2).to(torch.float8_e5m2)))
        ),
        "[0]: Linear.weight: weights of dtype float8_e5m2",
    ),
    "no weight": (
        nn.Sequential(_with(nn.Linear(2, 3), weight=None)),
        "[0]: Linear.weight: not a tensor (got NoneType)",
    ),
    "bias of the wrong shape": (
        nn.Sequential(_with(nn.Linear(2, 3), bias=nn.Parameter(torch.ones(2)))),
        "[0]: Linear.bias: shape [2], but [3] is needed",
    ),
    "Flatten of everything": (
        nn.Sequential(nn.Flatten(0, -1), nn.Linear(2, 3)),
        "[0]: Flatten: start_dim 0, end_dim -1 do not leave a (rows, features) input",
    ),
    "a Sequential that contains itself": (
        _self_containing(),
        "model.pt[1]: a Sequential that contains itself",
    ),
}


@pytest.mark.parametrize("case", list(NOT_LN_NETS))
def test_import_refuses_what_is_not_a_float_ln_net(tmp_path, capsys, case):
    obj, message = NOT_LN_NETS[case]
    assert message in import_error(tmp_path, obj, capsys)


def test_a_shared_child_is_not_walked_exponentially(tmp_path, capsys):
    s = nn.Sequential(nn.Linear(2, 2), nn.LayerNorm(2))
    for _ in range(17):  # 2^17 copies of the pair: the pickle holds one
        s = nn.Sequential(s, s)
    assert "more than 100000 modules, beyond the limit" in import_error(tmp_path, s, capsys)


def test_import_refuses_huge_module_indices_before_allocating(tmp_path, capsys):
    # 100000000.weight once allocated 3.5 GB (a list of the missing indices), 10^12 without bound
    for key in ["100000000.weight", f"{10**12}.bias", "9" * 5000 + ".weight"]:
        err = import_error(tmp_path, {key: torch.ones(2)}, capsys)
        assert "beyond the limit of 100000 modules" in err
        assert len(err) < 300


def test_import_applies_the_read_limits_from_the_shapes(tmp_path, capsys, monkeypatch):
    from lncapacity import fileformat

    def huge(*shape):  # claims any shape, holds one float
        return torch.empty(1).expand(*shape)

    # 2 x 8,388,608 floats: 2.4 GB and 21 s before, refused now without reading them
    sd = {"0.weight": huge(8_388_608, 1), "1.weight": huge(8_388_608)}
    assert "[0]: Linear: out_features 8388608, beyond the limit of 1000" in import_error(
        tmp_path, sd, capsys
    )
    wide = nn.Sequential(nn.Linear(2, 1500), nn.LayerNorm(1500), nn.Linear(1500, 2))
    assert "[0]: Linear: out_features 1500, beyond the limit of 1000" in import_error(
        tmp_path, wide, capsys
    )
    sd = {"0.weight": huge(3, 100_001)}
    assert "100001 input features, beyond the limit of 100000" in import_error(tmp_path, sd, capsys)
    # consecutive Linear maps are composed exactly: 10^9 products refused
    sd = {"0.weight": huge(1000, 1000), "1.weight": huge(1000, 1000)}
    assert "more than 10000000 exact products" in import_error(tmp_path, sd, capsys)
    # LayerNorms without weights still need n x n identity maps: 50 x 10^6 numbers
    deep = nn.Sequential(*[nn.LayerNorm(1000, elementwise_affine=False) for _ in range(50)])
    assert "more than 4194304 numbers" in import_error(tmp_path, deep, capsys)
    monkeypatch.setattr(fileformat, "MAX_DEPTH", 3)
    deep = nn.Sequential(*[m for _ in range(4) for m in (nn.Linear(2, 2), nn.LayerNorm(2))])
    assert "[7]: LayerNorm: more than 3 LayerNorms, beyond the limit" in import_error(
        tmp_path, deep, capsys
    )


def test_import_never_writes_a_net_verify_refuses(tmp_path, capsys, monkeypatch):
    from lncapacity import fileformat

    model = MODELS["affine"]
    monkeypatch.setattr(fileformat, "MAX_FILE_BYTES", 500)
    err = import_error(tmp_path, model, capsys)
    assert "the net takes" in err and "beyond the limit of 0 MiB for a net" in err


@pytest.mark.filterwarnings("ignore::lncapacity.interop.NormKindWarning")  # a width-8 LayerNorm
def test_torch_files_are_bounded_and_mapped(tmp_path, capsys, monkeypatch):
    import zipfile

    from lncapacity.interop import torch_files  # where load_torch reads its limit

    seen = []
    load = torch.load

    def spy(*args, **kwargs):
        seen.append(kwargs.get("mmap"))
        return load(*args, **kwargs)

    monkeypatch.setattr(torch, "load", spy)
    model = MODELS["affine"]
    torch.save(model.state_dict(), tmp_path / "sd.pt")
    torch.save(model.state_dict(), tmp_path / "old.pt", _use_new_zipfile_serialization=False)
    net = from_torch(model)
    assert load_torch(tmp_path / "sd.pt", eps=1e-5) == net
    assert load_torch(tmp_path / "old.pt", eps=1e-5) == net
    assert seen == [True, False]  # the zip format is mapped: shapes are read, data only later

    # a deflated zip (torch.save never writes one) is bounded by what its entries expand to
    def deflated(path, out):
        with zipfile.ZipFile(path) as z, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as o:
            for info in z.infolist():
                o.writestr(info.filename, z.read(info.filename))

    deflated(tmp_path / "sd.pt", tmp_path / "z.pt")
    assert load_torch(tmp_path / "z.pt") == net
    assert seen[-1] is False  # torch cannot map compressed entries
    torch.save({"0.weight": torch.zeros(100, 100)}, tmp_path / "zeros.pt")
    deflated(tmp_path / "zeros.pt", tmp_path / "bomb.pt")  # 40 kB in about 0.5 kB
    monkeypatch.setattr(torch_files, "MAX_TORCH_FILE_BYTES", 20_000)
    assert (tmp_path / "bomb.pt").stat().st_size < 20_000
    with pytest.raises(InputError, match=r"bomb\.pt: its zip entries expand to \d+ bytes, beyond"):
        load_torch(tmp_path / "bomb.pt")
    monkeypatch.setattr(torch_files, "MAX_TORCH_FILE_BYTES", 100)
    with pytest.raises(InputError, match=r"sd\.pt: \d+ bytes, beyond the limit of 0 MiB"):
        load_torch(tmp_path / "sd.pt")


class _Evil:
    def __reduce__(self):
        import os

        return (os.system, ("echo ran",))


class _Dict(dict):
    pass


@pytest.mark.parametrize(
    ("obj", "glob"),
    [
        (nn.Sequential(nn.Linear(2, 2), nn.ReLU()), "torch.nn.modules.activation.ReLU"),
        ({"0.weight": _Evil()}, "posix.system" if sys.platform != "win32" else "nt.system"),
        (_Dict({"0.weight": torch.ones(2)}), f"{__name__}._Dict"),
        ({"0.weight": torch.ones(2), "f": functools.partial(print)}, "functools.partial"),
    ],
)
def test_a_refused_pickle_names_its_class_and_gives_no_unsafe_advice(tmp_path, capsys, obj, glob):
    err = import_error(tmp_path, obj, capsys)
    assert f"it pickles {glob}, which is not an LN-Net module" in err
    assert "weights_only" not in err and "False" not in err


@pytest.mark.parametrize("kind", ["plain", "ln-g"])
def test_export_is_read_by_plain_torch_load(tmp_path, kind):
    """``export --torch`` writes plain data: ``torch.load`` reads it by default (weights only,
    as PyTorch >= 2.6 does), :func:`module_from_export` rebuilds the very modules, and
    :func:`load_torch` reads the exact net again, classes included (issue 35)."""
    from lncapacity.interop import save_torch

    if kind == "plain":
        net = lncapacity.build([[0, 0], [0, 1], [1, 0], [1, 1]], ["a", "b", "b", "a"])
    else:
        g = torch.Generator().manual_seed(3)
        model = nn.Sequential(nn.Linear(3, 6), nn.GroupNorm(3, 6), nn.Linear(6, 2))
        with torch.no_grad():
            for p in model.parameters():
                p.copy_(torch.randn(p.shape, generator=g))
        net = from_torch(model.eval(), classes=("x", "y"))
    save_torch(net, tmp_path / "m.pt")
    obj = torch.load(tmp_path / "m.pt")  # weights_only=True by default on PyTorch >= 2.6
    obj_strict = torch.load(tmp_path / "m.pt", weights_only=True)
    assert obj["format"] == "lncapacity-torch/1" and obj["classes"] == list(net.classes)
    assert obj_strict["modules"] == obj["modules"]
    back = module_from_export(obj)
    ref = to_torch(net)
    X = torch.randn(
        32, net.input_dim, generator=torch.Generator().manual_seed(1), dtype=torch.float64
    )
    with torch.no_grad():
        assert torch.equal(back(X.to(back[0].weight.dtype)), ref(X.to(ref[0].weight.dtype)))
    assert [type(m) for m in back] == [type(m) for m in ref]
    assert load_torch(tmp_path / "m.pt") == from_torch(ref, classes=net.classes)
    if kind == "ln-g":  # float32 weights: the very net
        assert load_torch(tmp_path / "m.pt") == net


def test_a_state_dict_read_off_its_shapes_warns_that_a_groupnorm_looks_the_same(tmp_path, capsys):
    """A GroupNorm's state dict has a LayerNorm's tensors: read without --spec it became a
    LayerNorm net silently (3.4% of predictions differed); now one warning line names --spec.
    A width with no groups of 2 or more (7) cannot be a GroupNorm: no warning."""
    from lncapacity.cli import main
    from lncapacity.interop import NormKindWarning

    grouped = nn.Sequential(nn.Linear(2, 8), nn.GroupNorm(4, 8), nn.Linear(8, 2))
    torch.save(grouped.state_dict(), tmp_path / "gn.pt")
    with pytest.warns(NormKindWarning, match=r"module 1 \(8 features\).*GroupNorm:G"):
        assert from_state_dict(grouped.state_dict()).groups == (1,)
    assert main(["import", str(tmp_path / "gn.pt"), "--out", str(tmp_path / "a.json")]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("lncapacity: warning: ") and "--spec" in err[0]
    spec = ["import", str(tmp_path / "gn.pt"), "--out", str(tmp_path / "b.json")]
    assert main([*spec, "--spec", "Linear,GroupNorm:4,Linear"]) == 0
    assert capsys.readouterr().err == ""
    assert lncapacity.load(tmp_path / "b.json") == from_torch(grouped)
    prime = nn.Sequential(nn.Linear(2, 7), nn.LayerNorm(7), nn.Linear(7, 2))
    torch.save(prime.state_dict(), tmp_path / "ln7.pt")
    assert main(["import", str(tmp_path / "ln7.pt"), "--out", str(tmp_path / "c.json")]) == 0
    assert capsys.readouterr().err == ""
