"""LN-G (issue 30): LayerNorm in groups, from the model and the file to certificates, floats,
PyTorch and ONNX.

A layer of width ``n`` with ``g`` groups normalises features ``1..n/g``, then the next
``n/g``, ... each on its own (the net's one ``eps``); ``g = 1`` is LayerNorm.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import sympy
from dyadic_nets import random_net
from flint import arb, fmpq
from lnnet1_reader import from_dict as lnnet1_from_dict

import lncapacity
from lncapacity import InputError, certify, fileformat, floats
from lncapacity.arith import precision
from lncapacity.certify import decide, exact_scores
from lncapacity.fileformat import dumps, from_dict, to_dict
from lncapacity.model import Affine, LNNet, Norm, layer_norm

ROOT = Path(__file__).resolve().parents[1]
Q = fmpq
EPS = Q(1, 100)


def affine(W, b):
    return Affine(tuple(tuple(Q(w) for w in row) for row in W), tuple(Q(v) for v in b))


def step_net(groups=2, eps=EPS):
    """``x -> (x, -x | x - 1, 1 - x)`` in two groups of two, ``z = (0, h_1 - h_3 - 1)``.

    In groups, ``h_1 = x / sqrt(x^2 + eps)`` and ``h_3 = (x - 1) / sqrt((x - 1)^2 + eps)``:
    class 1 on (0, 1), class 0 outside (margins near 1).  As one LayerNorm of the four
    features the same weights give ``z_1 = 1 / sqrt(var + eps) - 1`` instead: class 1 at
    ``x = -1/10``, where the groups say 0.
    """
    layer = affine([[1], [-1], [1], [-1]], [0, 0, -1, 1])
    readout = affine([[0, 0, 0, 0], [1, 0, -1, 0]], [0, -1])
    return LNNet(1, 4, eps, (layer,), readout, (0, 1), {}, (Norm(groups=groups),))


def step_margin(x, label=1):
    """The exact margin of ``step_net`` at ``x`` (SymPy)."""
    x, eps = sympy.Rational(x), sympy.Rational(1, 100)
    z1 = x / sympy.sqrt(x**2 + eps) - (x - 1) / sympy.sqrt((x - 1) ** 2 + eps) - 1
    return z1 if label == 1 else -z1


def to_sympy(v):
    return sympy.Rational(int(v.p), int(v.q))


def sympy_scores(net, x):
    """The readout by direct SymPy evaluation: each group's mean and biased variance."""
    h = [sympy.Rational(v) for v in x]
    eps = to_sympy(net.eps)
    for i, layer in enumerate(net.layers):
        y = [
            sum((to_sympy(w) * v for w, v in zip(row, h, strict=True)), sympy.Integer(0))
            + to_sympy(b)
            for row, b in zip(layer.W, layer.b, strict=True)
        ]
        norm = net.norm(i)
        k = len(y) // norm.groups
        h = []
        for j in range(0, len(y), k):
            block = y[j : j + k]
            mean = sum(block) / k
            var = sum((v - mean) ** 2 for v in block) / k
            h += [(v - mean) / sympy.sqrt(var + eps) for v in block]
        if norm.gain is not None:
            h = [to_sympy(g) * v for g, v in zip(norm.gain, h, strict=True)]
        if norm.bias is not None:
            h = [v + to_sympy(c) for v, c in zip(h, norm.bias, strict=True)]
    R = net.readout
    return [
        sum((to_sympy(w) * v for w, v in zip(row, h, strict=True)), sympy.Integer(0)) + to_sympy(b)
        for row, b in zip(R.W, R.b, strict=True)
    ]


# ---------------------------------------------------------------------------
# the model


@pytest.mark.parametrize("groups", [1, 2, 3, 4, 6])
@pytest.mark.parametrize("eps", [0, sympy.Rational(1, 7)])
def test_layer_norm_in_groups_against_sympy(groups, eps):
    rng = random.Random(groups)
    y = [sympy.Rational(rng.randint(-50, 50), rng.randint(1, 9)) for _ in range(12)]
    got = layer_norm(y, eps, sympy.sqrt, groups)
    k = 12 // groups
    for j in range(0, 12, k):
        block = y[j : j + k]
        mean = sympy.Rational(sum(block), k)
        sd = sympy.sqrt(sum((v - mean) ** 2 for v in block) / k + eps)
        for v, g in zip(block, got[j : j + k], strict=True):
            assert sympy.simplify(g - (v - mean) / sd) == 0
    with pytest.raises(ValueError, match="5 groups do not divide 12 features"):
        layer_norm(y, eps, sympy.sqrt, 5)


def test_the_net_against_sympy_and_balls():
    net = random_net(random.Random(1), [(6, 3), (4, 2)])
    assert net.groups == (3, 2) and net.grouped and net.width is None
    for x in ([Q(1, 3), Q(-2)], [Q(5, 4), Q(7, 9)]):
        want = sympy_scores(net, x)
        got = net.map(to_sympy).forward([to_sympy(v) for v in x], sympy.sqrt)
        assert all(sympy.simplify(a - b) == 0 for a, b in zip(got, want, strict=True))
        folded = net.folded()  # gains and biases folded, exactly: the same scores
        assert folded.groups == (3, 2) and all(n.is_identity for n in folded.norms)
        got = folded.map(to_sympy).forward([to_sympy(v) for v in x], sympy.sqrt)
        assert all(sympy.simplify(a - b) == 0 for a, b in zip(got, want, strict=True))
        with precision(200):
            balls = net.map(arb).forward([arb(v) for v in x], arb.sqrt)
            for ball, exact in zip(balls, want, strict=True):
                v = sympy.N(exact, 80)
                assert ball.contains(arb(str(v)[:70]))


def test_the_model_checks_groups_in_one_line():
    layer = affine([[1], [2], [3], [4], [5], [6]], [0] * 6)
    readout = affine([[1] * 6], [0])

    def net(*norms, width=6):
        return LNNet(1, width, Q(0), (layer,), readout, (0,), {}, tuple(norms))

    for groups, message in [
        (4, "layer 1: 4 groups do not divide its width 6"),
        (6, r"layer 1: 6 groups of width 6 have one feature each \(0/0\)"),
        (0, "layer 1: groups must be a positive integer, got 0"),
        (-3, "layer 1: groups must be a positive integer, got -3"),
        (2.0, "layer 1: groups must be a positive integer, got 2.0"),
    ]:
        with pytest.raises(InputError, match=message) as e:
            net(Norm(groups=groups))
        assert "\n" not in str(e.value)
    assert net(Norm(), width=6).norms == ()  # plain LayerNorms: one spelling
    assert net(Norm(groups=1)).norms == () and net(Norm(groups=1)).groups == (1,)
    grouped = net(Norm(groups=3))
    assert grouped.norms == (Norm(groups=3),) and grouped.groups == (3,) and grouped.grouped
    assert grouped.folded() is grouped  # nothing to fold; the groups stay
    assert grouped.map(arb).groups == (3,)
    with_gain = net(Norm((Q(2),) * 6, None, 3))
    assert with_gain.folded().norms == (Norm(groups=3),)
    assert Norm(groups=3).is_identity and not Norm(groups=3).is_plain and Norm().is_plain


# ---------------------------------------------------------------------------
# the file


def test_the_file_round_trip_and_its_fields():
    net = random_net(random.Random(2), [(6, 3), (6, 1), (6, 2)])
    d = json.loads(dumps(to_dict(net)))
    assert d["format"] == "lnnet/1.1" and d["requires"] == ["ln-affine", "groups"]
    assert [layer.get("groups") for layer in d["layers"]] == [3, None, 2]
    assert list(d["layers"][0]) == ["W", "b", "ln", "groups"]
    assert from_dict(d) == net
    plain = step_net(groups=2)
    d = to_dict(plain)
    assert d["requires"] == ["groups"] and list(d["layers"][0]) == ["W", "b", "groups"]
    assert from_dict(json.loads(json.dumps(d))) == plain


def test_nets_without_groups_are_written_as_before():
    built = lncapacity.build([[0, 0], [0, 1], [1, 0], [1, 1]], [0, 1, 1, 0])
    ones = LNNet(
        built.input_dim,
        built.width,
        built.eps,
        built.layers,
        built.readout,
        built.classes,
        built.meta,
        tuple(Norm(groups=1) for _ in built.layers),
    )
    assert ones == built and dumps(to_dict(ones)) == dumps(to_dict(built))
    assert to_dict(built)["format"] == "lnnet/1" and "groups" not in dumps(to_dict(built))
    gains = random_net(random.Random(3), [(4, 1), (4, 1)])
    d = to_dict(gains)
    assert d["requires"] == ["ln-affine"] and all("groups" not in a for a in d["layers"])


def test_older_readers_refuse_grouped_files(monkeypatch):
    d = json.loads(dumps(to_dict(step_net())))
    with pytest.raises(InputError, match=r"format: expected 'lnnet/1', got 'lnnet/1\.1'"):
        lnnet1_from_dict(d)  # the 0.1.0 reader
    # an lnnet/1.1 reader from before issue 30 knows ln-affine, widths and algebraic only
    monkeypatch.setattr(fileformat, "FEATURES", ("ln-affine", "widths", "algebraic"))
    with pytest.raises(InputError, match="requires: this file needs 'groups', unknown"):
        from_dict(d)
    monkeypatch.undo()
    # why requires: labelled lnnet/1, the old reader would read the layer as one LayerNorm
    disguised = dict(d, format="lnnet/1")
    disguised.pop("requires")
    misread = lnnet1_from_dict(disguised)
    assert misread.norms == () and misread != step_net()
    x = [Q(-1, 10)]
    assert decide(misread, x) == 1 and decide(step_net(), x) == 0
    with pytest.raises(InputError, match=r'layers\[0\]\.groups: needs "requires": \["groups"\]'):
        from_dict(disguised)


@pytest.mark.parametrize(
    ("groups", "message"),
    [
        (0, "must be a positive integer, got 0"),
        (-2, "must be a positive integer, got -2"),
        ("2", 'must be a positive integer, got "2"'),
        (True, "must be a positive integer, got true"),
        (2.0, "must be a positive integer, got 2.0"),
        (None, "must be a positive integer, got null"),
        (3, "3 groups do not divide its width 4"),
        (4, r"4 groups of width 4 have one feature each \(0/0\)"),
    ],
)
def test_malformed_groups_name_the_field(groups, message):
    d = json.loads(dumps(to_dict(step_net())))
    d["layers"][0]["groups"] = groups
    with pytest.raises(InputError, match=message) as e:
        from_dict(d, "n.json")
    assert str(e.value).startswith("n.json: ") and "\n" not in str(e.value)


def test_grouped_files_may_be_wider(monkeypatch):
    monkeypatch.setattr(fileformat, "MAX_WIDTH", 3)
    monkeypatch.setattr(fileformat, "MAX_GROUPED_WIDTH", 8)
    rng = random.Random(4)
    assert from_dict(to_dict(random_net(rng, [(6, 2)]))).groups == (2,)
    with pytest.raises(InputError, match=r"layers\[0\]\.groups: groups of 4 features, beyond"):
        from_dict(to_dict(random_net(rng, [(8, 2)])))
    with pytest.raises(InputError, match=r"layers\[1\]: a LayerNorm of 6 features, beyond"):
        from_dict(to_dict(random_net(rng, [(6, 2), (6, 1)])))
    with pytest.raises(InputError, match="width: 10 is beyond the limit of 8"):
        from_dict(to_dict(random_net(rng, [(10, 5)])))
    with pytest.raises(InputError, match="width: 6 is beyond the limit of 3"):
        from_dict(to_dict(random_net(rng, [(6, 1)], gains=False)))


# ---------------------------------------------------------------------------
# certify and verify


@pytest.mark.parametrize("intervals", [True, False])
def test_certify_a_grouped_net_exactly(intervals):
    net = step_net()
    X = [[Q(1, 2)], [Q(1, 4)], [Q(2)], [Q(-1, 10)], [Q(3)], [Q(-1, 5)]]
    y = [1, 1, 0, 0, 1, 1]
    cert = certify(net, X, y, intervals=intervals, workers=1)
    assert [p.verdict for p in cert.points] == ["right"] * 4 + ["wrong"] * 2
    assert cert.precision == (53 if intervals else 128)
    for p, x, label in zip(cert.points, X, y, strict=True):
        exact = float(sympy.N(step_margin(sympy.Rational(int(x[0].p), int(x[0].q)), label), 30))
        lo, hi = p.margin_interval
        assert lo <= exact <= hi and hi - lo < 1e-12
        if p.certified:
            assert p.margin == lo
    # the same weights as one LayerNorm: x = -1/10 is class 1 there
    plain = certify(step_net(groups=1), [[Q(-1, 10)]], [1], intervals=intervals, workers=1)
    assert plain.all_certified


def test_the_interval_pass_encloses_balls_in_blocks(monkeypatch):
    from lncapacity.certify import intervals as intervals_module

    rng = random.Random(5)
    for layers, block in [([(6, 3)], 8), ([(6, 2), (8, 4)], 10), ([(9, 3)], 1 << 13)]:
        monkeypatch.setattr(intervals_module, "GROUPED_BLOCK", block)
        net = random_net(rng, layers, k=3)
        X = [[Q(rng.randint(-99, 99), rng.choice([1, 3, 64])) for _ in range(2)] for _ in range(9)]
        y = [rng.randrange(3) for _ in X]
        mlo, mhi, zlo, zhi = intervals_module.interval_pass(net.folded(), X, y)
        with precision(200):
            balls = net.map(arb)
            for i, x in enumerate(X):
                z = balls.forward([arb(v) for v in x], arb.sqrt)
                for j in range(3):
                    assert zlo[i, j] <= z[j].lower() and z[j].upper() <= zhi[i, j]
                m = min(z[y[i]] - z[j] for j in range(3) if j != y[i])
                assert mlo[i] <= m.lower() and m.upper() <= mhi[i] and mhi[i] - mlo[i] < 1e-9


def test_the_grouped_interval_pass_in_processes(monkeypatch):
    from lncapacity.certify import intervals as intervals_module

    monkeypatch.setattr(intervals_module, "GROUPED_TASK", 40)  # 40 // 12: 3 points a task
    rng = random.Random(10)
    net = random_net(rng, [(12, 4)], k=2).folded()
    X = [[Q(rng.randint(-99, 99), 8) for _ in range(2)] for _ in range(20)]
    y = [rng.randrange(2) for _ in X]
    one = intervals_module.interval_pass(net, X, y)
    two = intervals_module.interval_pass(net, X, y, workers=2)
    assert all(np.array_equal(a, b) for a, b in zip(one, two, strict=True))


def test_pairwise_sums_enclose_the_exact_sums():
    from lncapacity import interval as iv

    rng = random.Random(6)
    for cols in (1, 2, 7, 64, 101):
        W = [[Q(rng.randint(-(10**6), 10**6), rng.randint(1, 10**4)) for _ in range(cols)]]
        X = [[Q(rng.randint(-(10**6), 10**6), rng.randint(1, 10**4)) for _ in range(cols)]]
        out = iv.dot_rows(
            iv.enclose(np.array(W, dtype=object)), iv.enclose(np.array(X, dtype=object))
        )
        tot = iv.pairwise_total(iv.enclose(np.array(X, dtype=object)))
        exact = sum((w * x for w, x in zip(W[0], X[0], strict=True)), Q(0))
        assert Q(*float(out[0][0, 0]).as_integer_ratio()) <= exact
        assert exact <= Q(*float(out[1][0, 0]).as_integer_ratio())
        s = sum(X[0], Q(0))
        assert (
            Q(*float(tot[0][0]).as_integer_ratio()) <= s <= Q(*float(tot[1][0]).as_integer_ratio())
        )


def cli(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "lncapacity", *args],
        cwd=cwd,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_verify_accepts_the_net_and_rejects_forgeries(tmp_path):
    fileformat.save(step_net(), tmp_path / "net.json")
    (tmp_path / "d.csv").write_text("x,label\n0.5,1\n0.25,1\n2,0\n-0.1,0\n0.75,1\n3,0\n")
    p = cli("verify", "net.json", "d.csv", "--json", "--quiet", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    summary = json.loads(p.stdout)
    assert summary["all_certified"] and all(
        c["agree"] == 6 for c in summary["float"].values()
    )  # the NumPy and PyTorch backends (nn.GroupNorm) too
    good = json.loads((tmp_path / "net.json").read_text())
    forged = {
        "weight": lambda d: d["layers"][0]["W"][2].__setitem__(0, "-1"),
        "plain": lambda d: d["layers"][0].pop("groups"),  # one LayerNorm: x = -0.1 is class 1
        "groups-1": lambda d: d["layers"][0].__setitem__("groups", 1),
        "groups-4": lambda d: d["layers"][0].__setitem__("groups", 4),
        "requires": lambda d: d.pop("requires"),
        "eps": lambda d: d.__setitem__("eps", "100"),
    }
    for name, change in forged.items():
        d = json.loads(json.dumps(good))
        change(d)
        (tmp_path / f"{name}.json").write_text(json.dumps(d))
        p = cli("verify", f"{name}.json", "d.csv", "--float", "float64", "--quiet", cwd=tmp_path)
        assert p.returncode == 2, name
        assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1, name


# ---------------------------------------------------------------------------
# floats


def test_float_backends_agree_with_the_exact_net():
    rng = random.Random(7)
    net = random_net(rng, [(6, 3), (4, 2)], k=3)
    X = np.array([[rng.uniform(-3, 3) for _ in range(2)] for _ in range(40)])
    Xq = [[Q(*float(v).as_integer_ratio()) for v in row] for row in X]
    lo, hi = exact_scores(net, Xq)
    for backend, tol in [("float64", 1e-12), ("float32", 1e-4)]:
        z = floats.forward(net, X, backend).astype(np.float64)
        assert np.all(np.abs(z - (lo + hi) / 2) <= tol * (1 + np.abs(lo)))
    pytest.importorskip("torch")
    for backend, tol in [("torch-float64", 1e-12), ("torch-float32", 1e-4)]:
        z = floats.forward(net, X, backend).astype(np.float64)
        assert np.all(np.abs(z - (lo + hi) / 2) <= tol * (1 + np.abs(lo)))
    points = lncapacity.points_from_arrays([[Q(1, 2)], [Q(2)], [Q(-1, 10)]], [1, 0, 0])
    for backend in floats.available_backends():
        assert floats.check(step_net(), points, backend).all_agree


# ---------------------------------------------------------------------------
# PyTorch and ONNX


@pytest.fixture
def torch():
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # see tests/test_interop.py: a worker forked later would hang
    yield torch
    torch.set_num_threads(threads)


def group_norm_model(torch, dtype):
    nn = torch.nn
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(3, 12),
        nn.GroupNorm(4, 12, eps=1e-3),
        nn.Linear(12, 6),
        nn.GroupNorm(3, 6, eps=1e-3, affine=False),
        nn.Linear(6, 3),
    ).to(dtype)
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.5 * torch.randn(p.shape, generator=g, dtype=torch.float64).to(dtype))
    return model.eval().requires_grad_(False)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_group_norm_nets_round_trip_bit_for_bit(torch, dtype):
    from lncapacity.interop import from_torch, to_torch

    model = group_norm_model(torch, getattr(torch, dtype))
    net = from_torch(model)
    assert net.groups == (4, 3) and net.widths == (12, 6)
    assert net.norms[0].gain is not None and net.norms[1].is_identity
    w = float(model[1].weight[5])
    assert net.norms[0].gain[5] == Q(*w.as_integer_ratio())  # read exactly
    d = json.loads(dumps(to_dict(net)))
    assert d["requires"] == ["ln-affine", "widths", "groups"]
    again = from_dict(d)
    assert again == net
    back = to_torch(again)
    assert [type(m) for m in back] == [type(m) for m in model]
    for a, b in zip(model.state_dict().items(), back.state_dict().items(), strict=True):
        assert a[0] == b[0] and a[1].dtype == b[1].dtype and torch.equal(a[1], b[1])
    for a, b in zip(model, back, strict=True):
        if isinstance(a, torch.nn.GroupNorm):
            assert (a.num_groups, a.num_channels, a.eps, a.affine) == (
                b.num_groups,
                b.num_channels,
                b.eps,
                b.affine,
            )
    X = torch.randn(300, 3, generator=torch.Generator().manual_seed(2)).to(getattr(torch, dtype))
    with torch.no_grad():
        assert torch.equal(model(X), back(X))  # the same float outputs, bit for bit
        own = floats.forward(net, X.double().numpy(), f"torch-{dtype}")
        assert np.array_equal(own, model(X).numpy())


def test_group_norm_without_bias(torch):
    import inspect

    from lncapacity.interop import from_state_dict, from_torch, to_torch

    nn = torch.nn
    if "bias" not in inspect.signature(nn.GroupNorm).parameters:
        pytest.skip("this PyTorch's GroupNorm has a bias whenever it is affine")
    model = nn.Sequential(nn.Linear(2, 6), nn.GroupNorm(2, 6, bias=False), nn.Linear(6, 2))
    with torch.no_grad():
        model[1].weight.copy_(torch.arange(1.0, 7.0) / 4)
    net = from_torch(model.eval())
    assert net.norms[0].bias is None and net.norms[0].gain[1] == Q(1, 2)
    back = to_torch(from_dict(json.loads(dumps(to_dict(net)))))
    assert back[1].bias is None and torch.equal(back[1].weight, model[1].weight)
    X = torch.randn(40, 2, generator=torch.Generator().manual_seed(6))
    with torch.no_grad():
        assert torch.equal(model(X), back(X))
    spec = ["Linear", "GroupNorm:2", "Linear"]
    assert from_state_dict(model.state_dict(), spec) == net


def test_group_norm_from_files_and_state_dicts(torch, tmp_path):
    from lncapacity.interop import from_state_dict, from_torch, load_torch

    model = group_norm_model(torch, torch.float32)
    net = from_torch(model)
    torch.save(model, tmp_path / "m.pt")  # the whole module: GroupNorm is a safe class
    assert load_torch(tmp_path / "m.pt") == net
    spec = ["Linear", "GroupNorm:4", "Linear", "GroupNorm:3", "Linear"]
    assert from_state_dict(model.state_dict(), spec, eps=1e-3) == net
    for bad, message in [
        (["Linear", "GroupNorm", "Linear", "GroupNorm:3", "Linear"], "given as GroupNorm:G"),
        (["Linear", "GroupNorm:5", "Linear", "GroupNorm:3", "Linear"], "5 groups of 12 channels"),
        (["Linear", "GroupNorm:12", "Linear", "GroupNorm:3", "Linear"], "12 groups of 12"),
    ]:
        with pytest.raises(InputError, match=message):
            from_state_dict(model.state_dict(), bad, eps=1e-3)


def test_group_norm_imports_are_checked(torch):
    from lncapacity.interop import from_torch, to_torch

    nn = torch.nn
    one = nn.Sequential(nn.Linear(2, 4), nn.GroupNorm(1, 4), nn.Linear(4, 2)).eval()
    net = from_torch(one)  # one group: a LayerNorm, written back as nn.LayerNorm
    assert net.groups == (1,) and net.norms == ()
    back = to_torch(net)
    assert isinstance(back[1], nn.LayerNorm)
    X = torch.randn(50, 2, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        assert torch.allclose(one(X), back(X), atol=1e-6)
    singles = nn.Sequential(nn.Linear(2, 4), nn.GroupNorm(4, 4), nn.Linear(4, 2))
    with pytest.raises(InputError, match=r"model\[1\]: GroupNorm: normalizes groups of a single"):
        from_torch(singles)
    odd = nn.Sequential(nn.Linear(2, 6), nn.GroupNorm(3, 6), nn.Linear(6, 2))
    odd[1].num_groups = 4  # a pickled module's attributes are whatever the file says
    with pytest.raises(InputError, match=r"model\[1\]: GroupNorm: 4 groups do not divide 6"):
        from_torch(odd)
    mismatch = nn.Sequential(nn.Linear(2, 6), nn.GroupNorm(4, 8), nn.Linear(8, 2))
    with pytest.raises(InputError, match="expects 8 features, but the module before gives 6"):
        from_torch(mismatch)


def test_onnx_runs_grouped_nets(torch):
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    import onnx

    from lncapacity.interop import from_torch, run_onnx, to_onnx

    for dtype in ("float32", "float64"):
        model = group_norm_model(torch, getattr(torch, dtype))
        for m in model:
            if isinstance(m, torch.nn.GroupNorm):
                m.eps = 2.0**-10  # a float32: ONNX holds epsilon as one
        net = from_torch(model)
        X = torch.randn(200, 3, generator=torch.Generator().manual_seed(4)).to(model[0].weight)
        with torch.no_grad():
            ref = model(X).numpy()
        blob = to_onnx(net, dtype)
        ops = [n.op_type for n in onnx.load_from_string(blob).graph.node]
        assert ops.count("LayerNormalization") == 2 and ops.count("Reshape") == 4
        assert ops.count("Mul") == ops.count("Add") == 1  # the first GroupNorm's affine part
        got = run_onnx(blob, X.numpy(), dtype)
        tol = 1e-12 if dtype == "float64" else 1e-5
        assert got.dtype == np.dtype(dtype) and np.allclose(got, ref, rtol=tol, atol=tol)
    # a gain without a bias, and a bias without a gain
    rng = random.Random(8)
    net = random_net(rng, [(6, 3)], eps=Q(1, 1024), gains=False)
    gain = tuple(Q(rng.randint(1, 9), 4) for _ in range(6))
    for norm in (Norm(gain, None, 3), Norm(None, gain, 3)):
        n2 = LNNet(2, 6, net.eps, net.layers, net.readout, net.classes, {}, (norm,))
        X = np.random.default_rng(5).normal(size=(30, 2))
        got = run_onnx(to_onnx(n2, "float64"), X, "float64")
        assert np.allclose(got, floats.forward(n2, X, "float64"), rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------------
# explain, plot, trace


def test_explain_and_trace_grouped_nets(tmp_path):
    from lncapacity.explain import explain, fold_points, layer_curve
    from lncapacity.theory import trace

    net = step_net()
    X, y = [[Q(1, 2)], [Q(1, 4)], [Q(2)], [Q(-1, 10)], [Q(3, 4)], [Q(3)]], [1, 1, 0, 0, 1, 0]
    e = explain(net, X, y)
    assert e["net"]["groups"] == [2] and e["layers"][0]["groups"] == 2
    assert "centre" not in e["layers"][0] and "LN-G" in e["layers"][0]["words"]
    assert e["certificate"]["all_certified"] and fold_points(net) == [None]
    s = np.array([0.5, -0.1, 2.0])
    want = [float(sympy.N(step_margin(v), 20)) + 1 for v in ("1/2", "-1/10", "2")]
    assert np.allclose(layer_curve(net, 1, s), want, rtol=1e-12)  # h_1 - h_3
    stats = trace(net, X, y)
    assert [st.name for st in stats] == ["input", "LN 1", "readout"]
    assert stats[1].lssr.hi < stats[0].lssr.lo  # LN-G is not affine either
    fileformat.save(net, tmp_path / "net.json")
    (tmp_path / "d.csv").write_text("x,label\n0.5,1\n0.25,1\n2,0\n-0.1,0\n0.75,1\n3,0\n")
    for args in (["explain", "net.json", "d.csv"], ["trace", "net.json", "d.csv", "--quiet"]):
        p = cli(*args, cwd=tmp_path)
        assert p.returncode == 0 and "Traceback" not in p.stderr, (args, p.stderr)
    wide = random_net(random.Random(9), [(66, 33)], d=1, k=2)
    fileformat.save(wide, tmp_path / "wide.json")
    p = cli("trace", "wide.json", "d.csv", "--quiet", cwd=tmp_path)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "width 66" in p.stderr


def test_plot_grouped_nets(tmp_path):
    pytest.importorskip("matplotlib")
    pytest.importorskip("networkx")
    from lncapacity.plot import save_figures

    X, y = [[Q(1, 2)], [Q(1, 4)], [Q(2)], [Q(-1, 10)], [Q(3, 4)], [Q(3)]], [1, 1, 0, 0, 1, 0]
    paths = save_figures(step_net(), X, y, out=tmp_path, formats=("png",))
    assert {p.name for p in paths} >= {"fold_maps.png", "ladder.png", "merge_tree.png"}


def test_wide_columns_get_their_principal_axis_by_power_iteration(monkeypatch):
    from lncapacity.explain import trace  # the module whose SVD_FEATURES _principal reads

    rng = np.random.default_rng(11)
    h = 5 * np.outer(rng.normal(size=40), rng.normal(size=12)) + rng.normal(size=(40, 12))
    svd = trace._principal(h)
    monkeypatch.setattr(trace, "SVD_FEATURES", 8)  # 12 features: now the power iteration
    power = trace._principal(h)
    assert np.allclose(np.abs(svd), np.abs(power), atol=1e-6)
