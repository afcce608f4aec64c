"""RMSNorm and parallel layer scaling (RMSNorm in groups): the model, the file, the certificate,
the float backends, explain, plot and trace (proofs/rmsnorm.md for the correspondence)."""

from __future__ import annotations

import functools
import json
import random
import subprocess
import sys
from pathlib import Path

import dyadic_nets
import numpy as np
import pytest
import sympy
from flint import arb, fmpq
from lnnet1_reader import from_dict as lnnet1_from_dict

import lncapacity
from lncapacity import InputError, certify, fileformat, floats
from lncapacity.arith import precision
from lncapacity.certify import decide, scalar_chain
from lncapacity.construct.rms import rms_net
from lncapacity.fileformat import dumps, from_dict, to_dict
from lncapacity.model import Affine, LNNet, Norm, layer_norm

ROOT = Path(__file__).resolve().parents[1]
Q = fmpq


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """PyTorch on one thread here: once its OpenMP pool has run in a process, a worker forked
    later (lncapacity.parallel, in other test files) hangs (see floats._forward_torch)."""
    try:
        import torch
    except ImportError:
        yield
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


random_net = functools.partial(dyadic_nets.random_net, rms=True)  # every layer RMSNorm


def sympy_scores(net, x):
    """The readout by direct SymPy evaluation: each group divided by its root mean square."""

    def s(v):
        return sympy.Rational(int(v.p), int(v.q))

    h = [sympy.Rational(v) for v in x]
    for i, layer in enumerate(net.layers):
        y = [
            sum(s(w) * v for w, v in zip(row, h, strict=True)) + s(b)
            for row, b in zip(layer.W, layer.b, strict=True)
        ]
        norm = net.norm(i)
        k = len(y) // norm.groups
        h = []
        for j in range(0, len(y), k):
            block = y[j : j + k]
            if not norm.rms:
                block = [v - sum(block) / k for v in block]
            h += [v / sympy.sqrt(sum(u * u for u in block) / k + s(net.eps)) for v in block]
        if norm.gain is not None:
            h = [s(g) * v for g, v in zip(norm.gain, h, strict=True)]
        if norm.bias is not None:
            h = [v + s(c) for v, c in zip(h, norm.bias, strict=True)]
    return [
        sum(s(w) * v for w, v in zip(row, h, strict=True)) + s(b)
        for row, b in zip(net.readout.W, net.readout.b, strict=True)
    ]


def points(rng, net, m=24):
    X = [[Q(rng.randint(-(2**10), 2**10), 2**9) for _ in range(net.input_dim)] for _ in range(m)]
    with precision(256):
        y = [decide(net, x) for x in X]
    return X, y


# ---------------------------------------------------------------------------
# the model


@pytest.mark.parametrize("groups", [1, 2, 3, 6])
def test_rms_norm_in_groups_against_sympy(groups):
    rng = random.Random(groups)
    y = [sympy.Rational(rng.randint(-50, 50), 7) for _ in range(6)]
    eps = sympy.Rational(1, 10)
    got = layer_norm(y, eps, sympy.sqrt, groups, centre=False)
    k = 6 // groups
    want = [
        v / sympy.sqrt(sum(u * u for u in y[j // k * k : j // k * k + k]) / k + eps)
        for j, v in enumerate(y)
    ]
    assert all(sympy.simplify(a - b) == 0 for a, b in zip(got, want, strict=True))
    # no centring: adding a constant to every feature changes the output (LayerNorm's does not)
    shifted = layer_norm([v + 1 for v in y], eps, sympy.sqrt, groups, centre=False)
    assert any(sympy.simplify(a - b) != 0 for a, b in zip(got, shifted, strict=True))


def test_the_model_keeps_the_kind_and_checks_it():
    rng = random.Random(0)
    net = random_net(rng, [(4, 2), (4, 4)])  # RMSNorm in groups of 2, then of one feature
    assert net.rms and net.groups == (2, 4) and [n.rms for n in net.norms] == [True, True]
    folded = net.folded()
    assert [n.rms for n in folded.norms] == [True, True] and all(
        n.is_identity for n in folded.norms
    )
    assert net.map(arb).norms[0].rms and not Norm(rms=True).is_plain
    # groups of one feature are RMSNorm's only (LayerNorm's would be 0/0), width 1 too
    with pytest.raises(InputError, match="have one feature each"):
        random_net(rng, [(4, 4)], rms=False)
    one = LNNet(
        1,
        1,
        Q(0),
        (Affine(((Q(1),),), (Q(0),)),),
        Affine(((Q(1),), (Q(-1),)), (Q(0),) * 2),
        (0, 1),
        {},
        (Norm(rms=True),),
    )
    assert one.predict([[2], [-3]]).tolist() == [0, 1]  # sign(x): an RMSNorm of one feature
    with pytest.raises(InputError, match=r"width must be >= 2"):
        LNNet(1, 1, Q(0), one.layers, one.readout, (0, 1))
    with pytest.raises(InputError, match="rms must be True or False"):
        LNNet(1, 1, Q(0), one.layers, one.readout, (0, 1), {}, (Norm(rms=1),))


def test_the_net_against_sympy_and_balls():
    rng = random.Random(1)
    net = random_net(rng, [(4, 2), (3, 1)])
    x = [Q(3, 4), Q(-5, 8)]
    want = sympy_scores(net, x)
    with precision(200):
        got = net.map(arb).forward([arb(v) for v in x], arb.sqrt)
        for g, w in zip(got, want, strict=True):
            assert abs(g - arb(str(sympy.N(w, 70)))) < arb(2) ** -150


# ---------------------------------------------------------------------------
# the file


def test_the_file_round_trip_and_its_fields(tmp_path):
    rng = random.Random(2)
    net = random_net(rng, [(4, 2), (3, 1)])
    doc = to_dict(net)
    assert doc["format"] == "lnnet/1.1" and set(doc["requires"]) == {
        "ln-affine",
        "widths",
        "groups",
        "rms",
    }
    assert [layer.get("norm") for layer in doc["layers"]] == ["rms", "rms"]
    path = tmp_path / "net.json"
    lncapacity.save(net, path)
    back = fileformat.load(path)
    assert back == net and dumps(to_dict(back)) == path.read_text()
    plain = random_net(rng, [(2, 1)], gains=False)
    assert to_dict(plain)["requires"] == ["rms"]
    # a mixed net: only its RMSNorm layers say so
    mixed = LNNet(
        2,
        3,
        Q(0),
        (*random_net(rng, [(3, 1)]).layers, *random_net(rng, [(3, 1)], d=3).layers),
        plain.readout.__class__(((Q(1), Q(0), Q(0)),), (Q(0),)),
        (0,),
        {},
        (Norm(), Norm(rms=True)),
    )
    assert [layer.get("norm") for layer in to_dict(mixed)["layers"]] == [None, "rms"]
    assert from_dict(json.loads(dumps(to_dict(mixed)))) == mixed


def test_older_readers_refuse_rms_files(monkeypatch):
    doc = json.loads(dumps(to_dict(random_net(random.Random(3), [(2, 1)], gains=False))))
    with pytest.raises(InputError, match="format"):
        lnnet1_from_dict(doc)  # lncapacity 0.1.0: lnnet/1 only
    monkeypatch.setattr(fileformat, "FEATURES", ("ln-affine", "widths", "algebraic", "groups"))
    with pytest.raises(InputError, match="'rms', unknown to lncapacity"):
        from_dict(doc)


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d.update(requires=[]), r'layers\[0\].norm: needs "requires": \["rms"\]'),
        (
            lambda d: d["layers"][0].update(norm="batch"),
            r"unknown normaliser 'batch' \(choose from ln, rms\)",
        ),
        (lambda d: d["layers"][0].update(norm=1), r"unknown normaliser 1"),
        (lambda d: d.update(eps="-1/2"), "eps must be >= 0"),
        (
            lambda d: (d["requires"].append("groups"), d["layers"][0].update(groups=3)),
            "3 groups do not divide its width 2",
        ),
    ],
)
def test_malformed_rms_files_name_the_field(mutate, message):
    doc = json.loads(dumps(to_dict(random_net(random.Random(4), [(2, 1)], gains=False))))
    mutate(doc)
    with pytest.raises(InputError, match=message):
        from_dict(doc)


def test_bad_rms_files_are_one_line_exit_2(tmp_path):
    doc = json.loads(dumps(to_dict(random_net(random.Random(5), [(2, 1)], gains=False))))
    doc["layers"][0]["norm"] = "batch"
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    (tmp_path / "p.csv").write_text("x1,x2,label\n0,1,0\n")
    r = subprocess.run(
        [sys.executable, "-m", "lncapacity", "verify", "bad.json", "p.csv"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "unknown normaliser" in r.stderr


# ---------------------------------------------------------------------------
# the certificate


@pytest.mark.parametrize("layers", [[(3, 1)], [(4, 2), (4, 4)], [(4, 1), (6, 3)]])
@pytest.mark.parametrize("intervals", [True, False])
def test_certify_rms_nets_exactly(layers, intervals):
    """Every verdict agrees with SymPy's exact scores (the interval pass or balls alone)."""
    rng = random.Random(len(layers) + 10 * intervals)
    net = random_net(rng, layers)
    X, y = points(rng, net)
    wrong = list(y)
    wrong[0] = (wrong[0] + 1) % 3
    cert = certify(net, X, wrong, intervals=intervals)
    assert [p.verdict for p in cert.points] == ["wrong"] + ["right"] * (len(X) - 1)
    for p, x, label in zip(cert.points[:4], X, wrong, strict=False):
        z = sympy_scores(net, x)
        exact = min(z[label] - z[j] for j in range(3) if j != label)
        lo, hi = p.margin_interval
        assert lo <= float(exact) <= hi


def test_layernorm_margin_theorems_never_certify_rms_nets():
    """An LN-G step net's layer made RMSNorm keeps the step form the margin theorem of
    proofs/ln_g_steps.md reads, but the theorem is LayerNorm's: the generic pass decides, and
    its verdicts are the exact net's."""
    import dataclasses

    from lncapacity.certify.theorems import by_theorem

    X = [[k] for k in range(9)]
    y = [0, 1, 0, 1, 1, 0, 0, 1, 0]
    net = lncapacity.build(X, y, arch="ln-g")
    labels = [net.classes.index(v) for v in y]
    Xq = [(Q(k),) for k in range(9)]
    assert by_theorem(net, Xq, labels) is not None  # the LayerNorm net: by the theorem
    norms = tuple(dataclasses.replace(net.norm(i), rms=True) for i in range(net.depth))
    rms = LNNet(net.input_dim, net.width, net.eps, net.layers, net.readout, net.classes, {}, norms)
    assert by_theorem(rms, Xq, labels) is None
    cert = certify(rms, X, y)
    assert cert.theorem is None
    right = [a == b for a, b in zip(rms.predict(X, "exact"), y, strict=True)]
    assert [p.verdict == "right" for p in cert.points] == right


def test_rank_one_rms_nets_are_scalar_chains():
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(60, 3)), rng.integers(0, 2, 60)
    net = rms_net(lncapacity.build(X, y, method="runs", eps="1/1000"))
    assert net.rms and net.width == 2 and scalar_chain(net.folded()) is not None
    cert = certify(net, X, y)
    assert cert.all_certified and cert.precision == 53  # the scalar chain's interval pass
    # the chain is RMSNorm's, not LayerNorm's: read as LayerNorms, the same weights fail
    as_ln = LNNet(net.input_dim, 2, net.eps, net.layers, net.readout, net.classes)
    assert not certify(as_ln, X, y).all_certified


# ---------------------------------------------------------------------------
# floats, PyTorch's modules


def test_float_backends_agree_with_the_exact_net():
    rng = random.Random(6)
    net = random_net(rng, [(4, 2), (3, 1), (4, 4)])
    pts = lncapacity.points_from_arrays(*points(rng, net, m=40))
    cert = certify(net, pts, scores=True)
    lo, hi = cert.scores
    for backend in floats.available_backends():
        z = floats.forward(net, pts, backend)
        tol = 1e-9 if floats.precision(backend) == "float64" else 1e-3
        assert np.all(z >= lo - tol) and np.all(z <= hi + tol), backend


def test_torch_modules_of_rms_nets():
    torch = pytest.importorskip("torch")
    from lncapacity.parallel_norm import ParallelLN

    rng = random.Random(7)
    net = random_net(rng, [(3, 1), (4, 2)], gains=False)
    gain_only = LNNet(
        2,
        3,
        net.eps,
        net.layers[:1],
        Affine(((Q(1), Q(0), Q(0)),), (Q(0),)),
        (0,),
        {},
        (Norm((Q(2), Q(3), Q(1, 2)), None, 1, True),),
    )
    kinds = [type(m) for m in floats.to_torch(net)]
    assert kinds == [
        torch.nn.Linear,
        torch.nn.RMSNorm,
        torch.nn.Linear,
        ParallelLN,
        torch.nn.Linear,
    ]
    assert type(floats.to_torch(gain_only)[1]) is torch.nn.RMSNorm
    with_bias = random_net(rng, [(3, 1)])
    assert type(floats.to_torch(with_bias)[1]) is ParallelLN  # nn.RMSNorm has no bias


# ---------------------------------------------------------------------------
# explain, plot, trace


def run(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "lncapacity", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )


def test_verify_explain_plot_and_trace_an_rms_net(tmp_path, monkeypatch, capsys):
    """The commands in this process (``main``), on a built RMSNorm net."""
    from lncapacity.cli import main

    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(30, 2)), rng.integers(0, 2, 30)
    (tmp_path / "p.csv").write_text(
        "x1,x2,label\n"
        + "".join(f"{a!r},{b!r},{c}\n" for (a, b), c in zip(X.tolist(), y.tolist(), strict=True))
    )
    lncapacity.save(rms_net(lncapacity.build(X, y, method="runs")), tmp_path / "rms.json")
    monkeypatch.chdir(tmp_path)

    def run(*args):
        code = main([*args, "rms.json", "p.csv"] + (["--json"] if args[0] != "plot" else []))
        return code, capsys.readouterr().out

    only = ("--float", "float64,float32")  # NumPy's (PyTorch's: test_torch_modules_of_rms_nets)
    code, out = run("verify", *only)
    s = json.loads(out)
    assert code == 0 and s["norm"] == "rms" and s["all_certified"]
    assert [c["right"] for c in s["float"].values()] == [30, 30]
    assert main(["verify", "rms.json", "p.csv", *only]) == 0
    assert "width 2 RMSNorm" in capsys.readouterr().out
    code, out = run("explain")
    account = json.loads(out)
    assert code == 0 and account["net"]["norm"] == "rms"
    assert all(layer["fold_point"] is not None for layer in account["layers"])
    assert run("plot", "--out", "plots")[0] == 0 and (tmp_path / "plots/fold_maps.png").is_file()
    code, out = run("trace")
    assert code == 0 and len(json.loads(out)["layers"]) == 2 + s["depth"]


def test_trace_in_groups_takes_the_whole_space():
    """An RMSNorm layer's outputs are not centred: trace's LSSR basis is all of R^n."""
    from lncapacity.theory.net_trace import trace

    rng = random.Random(8)
    net = random_net(rng, [(4, 2)], gains=False)
    X, y = points(rng, net, m=16)
    stats = trace(net, X, y)
    assert [s.name for s in stats] == ["input", "LN 1", "readout"]
    assert stats[1].lssr is not None


# ---------------------------------------------------------------------------
# PyTorch and ONNX in and out


def _torch_models(torch):
    from lncapacity.parallel_norm import ParallelLN

    nn = torch.nn
    g = torch.Generator().manual_seed(0)

    def perturbed(model):
        with torch.no_grad():
            for p in model.parameters():
                p.add_(0.5 * torch.randn(p.shape, generator=g, dtype=torch.float64).to(p.dtype))
        return model.eval().requires_grad_(False)

    torch.manual_seed(0)
    yield "rms", perturbed(nn.Sequential(nn.Linear(2, 4), nn.RMSNorm(4, eps=1e-5), nn.Linear(4, 3)))
    yield (
        "plain",
        perturbed(
            nn.Sequential(
                nn.Linear(3, 2), nn.RMSNorm(2, eps=0.0, elementwise_affine=False), nn.Linear(2, 2)
            )
        ),
    )
    yield (
        "pls",
        perturbed(
            nn.Sequential(
                nn.Linear(2, 6),
                ParallelLN(6, 2, 1e-5, centering=False),
                nn.Linear(6, 4),
                ParallelLN(4, 1, 1e-5, centering=False),
                nn.Linear(4, 2),
            )
        ),
    )
    yield (
        "float64",
        perturbed(
            nn.Sequential(
                nn.Linear(2, 4),
                nn.RMSNorm(4, eps=1e-6),
                nn.Linear(4, 4),
                nn.LayerNorm(4, eps=1e-6),
                nn.Linear(4, 3),
            ).double()
        ),
    )


def test_rms_nets_round_trip_through_pytorch_bit_for_bit():
    torch = pytest.importorskip("torch")
    from lncapacity.interop import from_torch, to_torch

    for name, model in _torch_models(torch):
        net = from_torch(model)
        assert net.rms, name
        again = from_dict(json.loads(dumps(to_dict(net))))
        assert again == net
        back = to_torch(again)
        assert [type(m) for m in back] == [type(m) for m in model], name
        for a, b in zip(model.state_dict().items(), back.state_dict().items(), strict=True):
            assert a[0] == b[0] and a[1].dtype == b[1].dtype and torch.equal(a[1], b[1])
        X = torch.randn(300, net.input_dim, generator=torch.Generator().manual_seed(1))
        X = X.to(next(model.parameters()).dtype)
        with torch.no_grad():
            assert torch.equal(model(X), back(X)), name  # the same float outputs, bit for bit
            backend = "torch-" + str(X.dtype).removeprefix("torch.")
            own = floats.forward(net, X.double().numpy(), backend)
            assert np.array_equal(own, model(X).numpy()), name
            # NumPy's float64 pass agrees with PyTorch's to 1e-12
            ref = back.double()(X.double()).numpy() if X.dtype == torch.float64 else None
            if ref is not None:
                assert np.allclose(
                    floats.forward(net, X.numpy(), "float64"), ref, rtol=1e-12, atol=1e-12
                )


def test_the_authors_parallel_ln_is_read_by_its_attributes():
    """A class of another module named ParallelLN, as the authors' repository has it."""
    torch = pytest.importorskip("torch")
    from lncapacity.interop import from_torch
    from lncapacity.parallel_norm import ParallelLN as Ours

    theirs = type("ParallelLN", (Ours,), {"__module__": "pln"})
    model = torch.nn.Sequential(
        torch.nn.Linear(2, 6), theirs(6, 3, 1e-5, centering=True), torch.nn.Linear(6, 2)
    )
    net = from_torch(model.eval())
    assert net.groups == (2,) and not net.rms  # PLN is LN-G
    model[1].centering = False
    assert from_torch(model).rms
    model[1].dim = 3
    with pytest.raises(InputError, match="dim=2"):
        from_torch(model)


def test_rms_norm_eps_none_is_pytorchs():
    torch = pytest.importorskip("torch")
    from lncapacity.interop import from_torch

    nn = torch.nn
    net = from_torch(nn.Sequential(nn.Linear(2, 3), nn.RMSNorm(3), nn.Linear(3, 2)).eval())
    assert net.eps == fmpq(*float(torch.finfo(torch.float32).eps).as_integer_ratio())
    with pytest.raises(InputError, match="eps=None with no Linear before it"):
        from_torch(nn.Sequential(nn.RMSNorm(3), nn.Linear(3, 2)).eval())


def test_state_dicts_with_rms_and_parallel_entries(tmp_path):
    torch = pytest.importorskip("torch")
    from lncapacity.interop import from_state_dict, from_torch, load_torch, save_torch

    models = dict(_torch_models(torch))
    for name, spec in (
        ("rms", ["Linear", "RMSNorm", "Linear"]),
        ("pls", ["Linear", "ParallelLS:2", "Linear", "ParallelLS:1", "Linear"]),
    ):
        model = models[name]
        net = from_state_dict(model.state_dict(), spec)
        assert net == dataclasses_replace_meta(from_torch(model), net.meta), name
        torch.save(model.state_dict(), tmp_path / f"{name}.pt")
        assert load_torch(tmp_path / f"{name}.pt", spec=spec) == net
        save_torch(net, tmp_path / f"{name}-export.pt")  # the export format: kinds and state dict
        assert load_torch(tmp_path / f"{name}-export.pt") == dataclasses_replace_meta(
            net, load_torch(tmp_path / f"{name}-export.pt").meta
        )
    # PLN (centred) in a state dict is LN-G
    pln = torch.nn.Sequential(
        torch.nn.Linear(2, 6),
        models["pls"][1].__class__(6, 3, 1e-5, centering=True),
        torch.nn.Linear(6, 2),
    )
    assert from_state_dict(pln.state_dict(), ["Linear", "ParallelLN:3", "Linear"]).groups == (2,)
    torch.save(models["rms"], tmp_path / "module.pt")  # nn.RMSNorm pickled: a safe class
    assert load_torch(tmp_path / "module.pt").rms
    bad = {
        "ParallelLS:x": "given as ParallelLS:K, K a group",
        "ParallelLS:4": "groups of 4 of 6 features",
        "RMSNorm": "needs a 1-D weight",
    }
    state = models["pls"].state_dict()
    for kind, message in bad.items():
        with pytest.raises(InputError, match=message):
            from_state_dict(state, ["Linear", kind, "Linear", "ParallelLS:1", "Linear"])


def dataclasses_replace_meta(net, meta):
    import dataclasses

    return dataclasses.replace(net, meta=meta)


def test_onnx_runs_rms_nets():
    torch = pytest.importorskip("torch")
    pytest.importorskip("onnxruntime")
    from lncapacity.interop import from_torch, run_onnx, to_onnx

    for name, model in _torch_models(torch):
        net = from_torch(model)
        X = torch.randn(200, net.input_dim, generator=torch.Generator().manual_seed(5)).double()
        for dtype in ("float64", "float32"):
            got = run_onnx(to_onnx(net, dtype), X.numpy(), dtype)
            ref = floats.forward(net, X.numpy(), "float64")
            tol = 1e-12 if dtype == "float64" else 1e-4
            assert got.dtype == np.dtype(dtype) and np.allclose(got, ref, rtol=tol, atol=tol), name


# ---------------------------------------------------------------------------
# building RMSNorm nets, shattering, the VC sandwich, training


@pytest.mark.parametrize("arch, width", [("rms", 2), ("rms-g", None)])
def test_build_rms_nets_through_the_correspondence(arch, width):
    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(80, 3)), rng.integers(0, 3 if arch == "rms-g" else 2, 80)
    method = {"method": "runs"} if arch == "rms" else {}  # runs: no circle search to wait for
    net = lncapacity.build(X, y, arch=arch, eps="1/1000", **method)
    assert net.rms and net.eps == Q(1, 1000) and net.meta["rms"]["bits"] == 128
    if width is not None:
        assert net.width == width
    else:
        assert all(n == 2 * g for n, g in zip(net.widths, net.groups, strict=True))
    assert certify(net, X, y).all_certified  # the RMSNorm net itself
    assert floats.check(net, lncapacity.points_from_arrays(X, y), "float64").all_agree
    twin_of = lncapacity.build(
        X, y, arch="ln3" if arch == "rms" else "ln-g", eps="1/1500", **method
    )
    assert twin_of.depth == net.depth  # the LayerNorm net with eps 2/3 of RMSNorm's
    with pytest.raises(InputError, match="exact merges"):
        lncapacity.build(X, y, arch=arch, exact=True, method="pma")


@pytest.mark.slow
def test_a_2000_point_rms_net_is_certified_and_right_in_float64():
    """The measurement of proofs/rmsnorm.md, section 5: a width-2 RMSNorm net for 2,000 random
    points in R^3 (two random labels), certified on its own and right in float64 by the NumPy
    pass of RMSNorm layers (neither goes through the LayerNorm twin)."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(2000, 3)), rng.integers(0, 2, 2000)
    net = lncapacity.build(X, y, arch="rms", method="runs")
    assert net.width == 2 and all(n.rms for n in net.norms) and net.depth >= 900
    assert certify(net, X, y).all_certified
    assert floats.check(net, lncapacity.points_from_arrays(X, y), "float64").agree == 2000


def test_pma_twins_get_more_bits():
    rng = np.random.default_rng(4)
    X, y = rng.normal(size=(40, 3)), rng.integers(0, 2, 40)
    net = lncapacity.build(X, y, arch="rms", method="pma")
    assert net.meta["rms"]["bits"] == 128 + net.depth and certify(net, X, y).all_certified


def test_shatter_rms_and_its_verification(tmp_path):
    from lncapacity.shatter import shatter, verify_shatter

    out = tmp_path / "s.jsonl"
    s = shatter(None, 2, eps=Q(1, 100), out=out, workers=1, rms=True)
    assert s.all_certified and s.points == 4
    header = json.loads(out.read_text().splitlines()[0])
    assert header["norm"] == "rms"
    again, problems = verify_shatter(out, workers=1)
    assert not problems and again.certified == 16
    # a LayerNorm net in an RMSNorm certificate (or the other way) is refused
    lines = out.read_text().splitlines()
    rec = json.loads(lines[1])
    ln_net = lncapacity.build(
        [[0], [1], [2], [3]], labels(rec["labeling"]), depth=2, method="pma", eps="1/150"
    )
    rec["lnnet"] = to_dict(ln_net)
    forged = tmp_path / "f.jsonl"
    forged.write_text("\n".join([lines[0], json.dumps(rec), *lines[2:]]) + "\n")
    _, problems = verify_shatter(forged, workers=1)
    assert problems and "width 3" in problems[0]
    grouped = shatter(None, 1, out=tmp_path / "g.jsonl", workers=1, groups=2, rms=True)
    assert grouped.all_certified and verify_shatter(tmp_path / "g.jsonl", workers=1)[1] == []


def labels(k, m=4):
    from lncapacity.shatter import labels_of

    return labels_of(k, m)


def test_vc_rms_is_the_twins_sandwich():
    from lncapacity.theory.vc import sandwich

    for L, d in ((1, 1), (2, 2), (3, 2)):
        rms, ln = sandwich("rms", L, d), sandwich("ln3", L, d)
        assert (rms.lower.value, rms.upper.value) == (ln.lower.value, ln.upper.value)
        assert "proofs/rmsnorm.md" in rms.lower.name and rms.lower.source == ln.lower.source
    g = sandwich("rms-g", 1, 1, 3, eps="3/200")
    assert (
        g.eps == Q(3, 200) and g.lower.value == sandwich("ln-g", 1, 1, 3, eps="1/100").lower.value
    )


def test_train_rmsnorm_nets_of_layernorms_parameters():
    pytest.importorskip("torch")
    from lncapacity.train import train

    rng = np.random.default_rng(5)
    X, y = rng.normal(size=(30, 2)), rng.integers(0, 2, 30)
    counts = {}
    for norm, groups in (("ln", 1), ("rms", 1), ("ln", 4), ("rms", 4), ("rms", 8)):
        result = train(X, y, width=8, depth=1, groups=groups, norm=norm, max_iter=300)
        counts[norm, groups] = sum(p.numel() for p in result.module.parameters())
        assert result.net.rms == (norm == "rms") and result.net.groups == (groups,)
    assert len(set(counts.values())) == 1  # equal parameter counts
    with pytest.raises(InputError, match="norm: expected 'ln' or 'rms'"):
        train(X, y, width=8, depth=1, norm="batch")
