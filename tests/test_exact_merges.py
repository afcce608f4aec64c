"""Exact merges: ``pma --exact`` folds at the true midpoints (proofs/exact_merges.md)."""

from __future__ import annotations

import json
import subprocess
import sys

import mpmath
import pytest
from flint import arb, fmpq
from lnnet1_reader import from_dict as lnnet1_from_dict

import lncapacity
from lncapacity import fileformat
from lncapacity.algebraic import Radical, RadicalProgram
from lncapacity.arith import precision
from lncapacity.construct.exact import exact_pma
from lncapacity.errors import InputError
from lncapacity.fileformat import dumps, from_dict, to_dict
from lncapacity.model import layer_norm


def labelings(m):
    X = [[i] for i in range(m)]
    for k in range(2**m):
        yield X, [(k >> i) & 1 for i in range(m)]


def paper_depth(t, y, digits=300):
    """The paper's loop in mpmath at ``digits`` digits: an independent reference (not a proof)."""
    with mpmath.workdps(digits):
        vals = [mpmath.mpf(int(v.p)) / int(v.q) for v in t]
        groups = [[k] for k in range(len(t))]
        tol = mpmath.mpf(10) ** (-digits // 2)
        depth = 0
        while True:
            order = sorted(range(len(vals)), key=lambda k: vals[k])
            merged = []
            for k in order:
                if merged and abs(vals[merged[-1]] - vals[k]) < tol:
                    assert y[groups[merged[-1]][0]] == y[groups[k][0]]
                    groups[merged[-1]] += groups[k]
                    continue
                merged.append(k)
            vals, groups = [vals[k] for k in merged], [groups[k] for k in merged]
            labels = [y[g[0]] for g in groups]
            if sum(1 for i in range(len(labels)) if i == 0 or labels[i] != labels[i - 1]) <= 2:
                return depth
            j = next(k for k in range(1, len(labels)) if labels[k] == labels[0])
            c = (vals[0] + vals[j]) / 2
            beta = (vals[j] - vals[0]) / 2 / mpmath.sqrt(3)
            vals = [6 * beta / mpmath.sqrt(2 * (p - c) ** 2 / 3 + 2 * beta**2) for p in vals]
            depth += 1


def layer_values(net, x, prec=2048):
    """The exact scalars ``v . h_l`` each layer's successor reads, as balls (from the net)."""
    out = []
    with precision(prec):
        h = [arb(v) for v in x]
        for layer in net.layers:
            W = [[arb(w) if isinstance(w, fmpq) else w.ball() for w in row] for row in layer.W]
            b = [arb(v) if isinstance(v, fmpq) else v.ball() for v in layer.b]
            pre = [
                sum((w * hi for w, hi in zip(row, h, strict=True)), arb(0)) + bi
                for row, bi in zip(W, b, strict=True)
            ]
            h = layer_norm(pre, arb(net.eps), arb.sqrt)
            out.append(h[0] + h[1] - 2 * h[2])
    return out


@pytest.mark.parametrize("m", range(3, 9))
def test_every_labeling_of_collinear_points_is_certified_at_the_papers_depth(m):
    for X, y in labelings(m):
        net = lncapacity.build(X, y, method="pma", exact=True)
        assert net.meta["exact"] is True
        cert = lncapacity.certify(net, X, y)
        assert cert.all_certified, y
        assert net.depth <= max(0, m - 2)
        if len(set(y)) == 2:
            t = [fmpq(i) for i in range(m)]
            assert net.meta["folds"] == paper_depth(t, y), y
            # the rational emulation of the paper takes the same steps
            assert net.meta["folds"] == lncapacity.build(X, y, method="pma").meta["folds"]


def test_alternating_points_need_m_minus_2_folds():
    for m in (4, 7, 10, 12):
        X, y = [[i] for i in range(m)], [i % 2 for i in range(m)]
        net = lncapacity.build(X, y, method="pma", exact=True)
        assert net.depth == m - 2
        assert lncapacity.certify(net, X, y).all_certified


def test_designed_merges_share_one_exact_value():
    """Both points of a merge get the very same node: equal by the identity p_j - c = -(p_i - c)."""
    m = 9
    y = [i % 2 for i in range(m)]
    chain = exact_pma([fmpq(i) for i in range(m)], y, fmpq(0))
    assert len(chain.steps) == m - 2
    point_value = {k: v for g, v in zip(chain.groups, chain.values, strict=True) for k in g}
    for step in chain.steps:
        a, b = step.merged
        assert point_value[a] is point_value[b]  # one number, not two close ones
    # the net's own weights merge them too: equal to 2000 bits, and apart from the rest
    net = lncapacity.build([[i] for i in range(m)], y, method="pma", exact=True)
    values = [layer_values(net, [fmpq(i)]) for i in range(m)]
    for layer, spec in enumerate(net.layers):
        a, b = spec.meta["exact_merge"]
        diff = values[a][layer] - values[b][layer]
        assert diff.contains(0) and diff.rad() < arb(2) ** -1900


def test_merges_equal_symbolically_at_depth_two():
    """From the net's file weights alone, SymPy proves the second merge exact."""
    sp = pytest.importorskip("sympy")
    X, y = [[0], [1], [2], [3]], [0, 1, 0, 1]
    net = lncapacity.build(X, y, method="pma", exact=True)
    assert net.depth == 2
    prog = next(w.program for w in net.layers[1].b if isinstance(w, Radical))
    exprs: list = []
    for node in prog.nodes:
        kind = node[0]
        if kind == "q":
            exprs.append(sp.Rational(int(node[1].p), int(node[1].q)))
        elif kind == "sqrt":
            exprs.append(sp.sqrt(exprs[node[1]]))
        else:
            a, b = exprs[node[1]], exprs[node[2]]
            exprs.append({"add": a + b, "sub": a - b, "mul": a * b, "div": a / b}[kind])

    def sym(w):
        return exprs[w.index] if isinstance(w, Radical) else sp.Rational(int(w.p), int(w.q))

    def forward(x):
        h = [sp.Integer(x)]
        for layer in net.layers:
            pre = [
                sum(sym(w) * hi for w, hi in zip(row, h, strict=True)) + sym(bi)
                for row, bi in zip(layer.W, layer.b, strict=True)
            ]
            h = layer_norm(pre, sp.Integer(0), sp.sqrt)
        return h

    a, b = net.layers[1].meta["exact_merge"]
    ha, hb = forward(a), forward(b)
    # what the next map reads, v . h (the u-component flips sign: mirror images)
    va, vb = (h[0] + h[1] - 2 * h[2] for h in (ha, hb))
    assert sp.simplify(va - vb) == 0


def test_round_trip_through_the_file_format(tmp_path):
    m = 8
    X, y = [[i, (i * i) % 5] for i in range(m)], [1, 0, 0, 1, 0, 1, 1, 0]
    net = lncapacity.build(X, y, method="pma", exact=True, eps="1e-5")
    doc = to_dict(net)
    assert doc["format"] == "lnnet/1.1" and doc["requires"] == ["algebraic"]
    path = tmp_path / "net.json"
    lncapacity.save(net, path)
    text = path.read_text()
    back = fileformat.load(path)
    assert dumps(to_dict(back)) == text  # exact round trip, byte for byte
    assert lncapacity.certify(back, X, y).all_certified
    assert lncapacity.certify(net, X, y).min_margin == lncapacity.certify(back, X, y).min_margin
    assert list(back.predict(X)) == y


def test_padding_to_a_depth():
    X, y = [[0], [1], [2], [3], [4]], [0, 1, 0, 1, 1]
    needed = lncapacity.build(X, y, method="pma", exact=True).depth
    net = lncapacity.build(X, y, method="pma", exact=True, depth=6)
    assert net.depth == 6 and net.meta["folds"] == needed == 3
    assert lncapacity.certify(fileformat.from_dict(to_dict(net)), X, y).all_certified
    with pytest.raises(InputError, match="needs 3"):
        lncapacity.build(X, y, method="pma", exact=True, depth=2)


def test_old_readers_reject_algebraic_files():
    net = lncapacity.build([[0], [1], [2], [3]], [0, 1, 0, 1], method="pma", exact=True)
    doc = json.loads(dumps(to_dict(net)))
    with pytest.raises(InputError, match="format"):
        lnnet1_from_dict(doc)  # the 0.1.0 reader: lnnet/1 only
    # a reader of lnnet/1.1 that knows only ln-affine and widths refuses "algebraic"
    old = dict(doc, requires=["algebraic"])
    fields = fileformat.FEATURES
    try:
        fileformat.FEATURES = ("ln-affine", "widths")
        with pytest.raises(InputError, match="'algebraic', unknown"):
            from_dict(old)
    finally:
        fileformat.FEATURES = fields
    # an algebraic number where a string is expected is refused by every reader
    plain = dict(doc, format="lnnet/1")
    plain.pop("requires")
    with pytest.raises(InputError):
        from_dict(plain)
    no_requires = dict(doc)
    no_requires.pop("requires")
    with pytest.raises(InputError, match="radicals"):
        from_dict(no_requires)


def test_rational_nets_are_still_lnnet_1():
    net = lncapacity.build([[0], [1], [2], [3]], [0, 1, 0, 1], method="pma")
    doc = to_dict(net)
    assert doc["format"] == "lnnet/1" and "radicals" not in doc and "requires" not in doc


@pytest.mark.parametrize(
    ("radicals", "match"),
    [
        (["-1", {"sqrt": 0}], "square root"),
        (["0", "1", {"div": [1, 0]}], "division"),
        (["1", {"sqrt": 1}], "earlier entries"),
        (["1", {"add": [0]}], "two indices"),
        (["1", {"pow": [0, 0]}], "unknown entry"),
        ([1], "not a number"),
        (["1.5"], "is not"),
        ([{"root": ["-2", "0", "1"], "lo": "2", "hi": "3"}], "sign"),
        ([{"root": ["0", "-1", "0", "1"], "lo": "-2", "hi": "2"}], "sign|isolating"),
        ([{"root": ["-2", "0", "1/2"], "lo": "1", "hi": "3"}], "integers"),
        ("1", "list"),
    ],
)
def test_malformed_radicals_are_refused(radicals, match):
    net = lncapacity.build([[0], [1], [2], [3]], [0, 1, 0, 1], method="pma", exact=True)
    doc = to_dict(net)
    doc["radicals"] = radicals
    with pytest.raises(InputError, match=match):
        from_dict(doc)


def test_bad_references_are_refused():
    net = lncapacity.build([[0], [1], [2], [3]], [0, 1, 0, 1], method="pma", exact=True)
    doc = to_dict(net)
    doc["layers"][1]["b"][0] = {"ref": len(doc["radicals"])}
    with pytest.raises(InputError, match="not an index"):
        from_dict(doc)
    doc["layers"][1]["b"][0] = {"ref": "0"}
    with pytest.raises(InputError, match="ref"):
        from_dict(doc)
    doc["eps"] = {"ref": 0}
    with pytest.raises(InputError, match="eps"):
        from_dict(doc)


def test_a_tampered_centre_fails_the_certificate():
    X, y = [[0], [1], [2], [3], [4], [5]], [0, 1, 0, 1, 0, 1]
    net = lncapacity.build(X, y, method="pma", exact=True)
    doc = to_dict(net)
    # the last layer's centre moved far: the merge breaks and the certificate must say so
    last = doc["layers"][-1]
    doc["radicals"].append("1000")
    last["b"][0] = {"ref": len(doc["radicals"]) - 1}
    assert not lncapacity.certify(from_dict(doc), X, y).all_certified


def test_root_entries_evaluate_to_the_isolated_root():
    prog = RadicalProgram.from_json(["2", {"root": ["-2", "0", "1"], "lo": "1", "hi": "2"}])
    r = Radical(prog, 1)
    with precision(300):
        assert (r.ball() - arb(2).sqrt()).contains(0) and r.ball().rad() < arb(2) ** -290
    assert prog.to_json()[0][1] == {"root": ["-2", "0", "1"], "lo": "1", "hi": "2"}
    assert abs(float(r) - 2**0.5) < 1e-15


def test_exact_needs_pma_and_two_classes():
    with pytest.raises(InputError, match="pma"):
        lncapacity.build([[0], [1], [2]], [0, 1, 0], exact=True)
    with pytest.raises(InputError, match="binary"):
        lncapacity.build([[0], [1], [2]], [0, 1, 2], method="pma", exact=True)


def cli(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "lncapacity", *args], capture_output=True, text=True, cwd=cwd
    )


def test_cli_certify_exact_and_verify(tmp_path):
    import os

    root = os.getcwd()
    data = tmp_path / "alt.csv"
    data.write_text("x,label\n" + "".join(f"{i},{i % 2}\n" for i in range(9)))
    out = tmp_path / "alt.json"
    r = cli(
        "certify",
        str(data),
        "--method",
        "pma",
        "--exact",
        "--out",
        str(out),
        "--quiet",
        "--float",
        "float64",
        "--json",
        cwd=root,
    )
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["all_certified"] and summary["depth"] == 7
    assert json.loads(out.read_text())["requires"] == ["algebraic"]
    r = cli("verify", str(out), str(data), "--quiet", "--float", "float64", cwd=root)
    assert r.returncode == 0, r.stderr
    assert "certified: 9/9" in r.stdout
    r = cli("certify", str(data), "--exact", "--quiet", cwd=root)
    assert r.returncode == 2 and "--method pma" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_explain_and_trace_refuse_algebraic_nets_cleanly(tmp_path):
    import os

    root = os.getcwd()
    data = tmp_path / "d.csv"
    data.write_text("x,label\n" + "".join(f"{i},{i % 2}\n" for i in range(5)))
    out = tmp_path / "n.json"
    r = cli(
        "certify",
        str(data),
        "--method",
        "pma",
        "--exact",
        "--out",
        str(out),
        "--quiet",
        "--float",
        "float64",
        cwd=root,
    )
    assert r.returncode == 0, r.stderr
    for command in ("explain", "trace"):
        r = cli(command, str(out), str(data), cwd=root)
        assert r.returncode == 2 and "algebraic weights" in r.stderr, r.stderr
