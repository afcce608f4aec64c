"""lnnet/1: exact round trips and precise errors."""

from __future__ import annotations

import json

import pytest
from flint import fmpq

from lncapacity import InputError, build, certify, load, save
from lncapacity.fileformat import from_dict, to_dict


@pytest.fixture
def net():
    X = [[0, 0], [0, 1], [1, 0], [1, 1], [fmpq(1, 3), fmpq(2, 7)]]
    return build(X, ["a", "b", "b", "a", "b"], eps=fmpq(1, 100000), depth=4)


def test_round_trip_is_exact(net, tmp_path):
    assert from_dict(json.loads(json.dumps(to_dict(net)))) == net
    path = tmp_path / "n.lnnet.json"
    save(net, path)
    again = load(path)
    assert again == net
    assert again.eps == fmpq(1, 100000)
    assert again.layers[0].meta == net.layers[0].meta
    assert not list(tmp_path.glob(".*"))  # no temporary file left behind


def test_numbers_are_rational_strings(net):
    d = to_dict(net)
    assert d["format"] == "lnnet/1" and d["width"] == 3 and d["input_dim"] == 2
    assert d["eps"] == "1/100000"
    assert d["classes"] == ["a", "b"]
    numbers = [w for layer in d["layers"] for row in layer["W"] for w in row]
    assert all(isinstance(w, str) for w in numbers)
    assert all(fmpq(w) == net.layers[0].W[0][i] for i, w in enumerate(d["layers"][0]["W"][0]))


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.update(format="lnnet/2"), "format: expected 'lnnet/1'"),
        (lambda d: d["layers"][1]["W"][0].__setitem__(2, "1.5"), r"layers\[1\]\.W\[0\]\[2\]"),
        (lambda d: d["layers"][0]["b"].__setitem__(0, 2), r"layers\[0\]\.b\[0\]: numbers are"),
        (lambda d: d["readout"]["b"].__setitem__(1, "1/0"), r"readout\.b\[1\]"),
        (lambda d: d.update(eps="-1"), "eps must be >= 0"),
        (lambda d: d["layers"][2]["W"].pop(), "layer 3: W must be 3x3"),
        (lambda d: d.update(input_dim=0), "input_dim: must be a positive integer"),
        (lambda d: d.update(classes=["a", "a"]), "classes must be distinct"),
        (lambda d: d.update(classes=[1.5, 2]), "classes: must be a list of integers or strings"),
    ],
)
def test_malformed_files_name_the_field(net, mutate, message):
    d = to_dict(net)
    mutate(d)
    with pytest.raises(InputError, match=message):
        from_dict(d, "n.json")


def test_unreadable_files(tmp_path):
    with pytest.raises(InputError, match="cannot read"):
        load(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(InputError, match="not JSON"):
        load(bad)


def test_loaded_net_certifies(net, tmp_path):
    save(net, tmp_path / "n.json")
    X = [[0, 0], [0, 1], [1, 0], [1, 1], [fmpq(1, 3), fmpq(2, 7)]]
    assert certify(load(tmp_path / "n.json"), X, ["a", "b", "b", "a", "b"]).all_certified


def test_failed_write_leaves_nothing(net, tmp_path):
    with pytest.raises(InputError, match="cannot write"):
        save(net, tmp_path / "no-such-dir" / "n.json")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("labels", [["a", "b", "b", "a", "b"], ["a"] * 5])
def test_gadget_record_reproduces_the_net(labels):
    from lncapacity.fileformat import from_gadget, to_gadget

    X = [[0, 0], [0, 1], [1, 0], [1, 1], [fmpq(1, 3), fmpq(2, 7)]]
    net = build(X, labels, eps=fmpq(1, 100000), depth=4, classes=["a", "b"])
    record = json.loads(json.dumps(to_gadget(net)))
    again = from_gadget(record, input_dim=2, eps=net.eps, classes=net.classes)
    assert [(a.W, a.b) for a in again.layers] == [(a.W, a.b) for a in net.layers]
    assert (again.readout.W, again.readout.b) == (net.readout.W, net.readout.b)
    assert certify(again, X, labels).all_certified
    record["layers"][1]["centre"] = "1/3"
    tampered = from_gadget(record, input_dim=2, eps=net.eps, classes=net.classes)
    assert tampered.layers[1] != net.layers[1]
    with pytest.raises(InputError, match="malformed gadget record"):
        from_gadget({"projection": ["1"]}, input_dim=2, eps=net.eps, classes=net.classes)
