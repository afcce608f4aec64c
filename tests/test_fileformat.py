"""lnnet/1: exact round trips and precise errors."""

from __future__ import annotations

import json

import pytest
from flint import fmpq
from hypothesis import given, settings
from hypothesis import strategies as st

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


# ---------------------------------------------------------------------------
# the bytes written and the numbers read in bulk


def _hand_made_nets():
    from lncapacity.model import Affine, LNNet, Norm

    q = fmpq
    plain = LNNet(
        2,
        3,
        q(1, 100000),
        (
            Affine(
                ((q(1), q(-1, 2)), (q(0), q(3)), (q(-7, 3), q(5))),
                (q(0), q(1, 2), q(-1)),
                {"centre": "1/2", "note": "a, b"},
            ),
        ),
        Affine(((q(1), q(0), q(-1)), (q(2), q(1, 9), q(0))), (q(0), q(1))),
        ("a", "b"),
        {
            "method": "runs",
            "projection": ["1", "-1/2"],
            "folds": 1,
            "nested": {"x": [1, 2.5, None, True]},
        },
    )
    trained = LNNet(
        2,
        None,
        q(0),
        (
            Affine(
                ((q(1), q(2)), (q(3), q(4)), (q(5), q(6)), (q(7), q(8))), (q(0), q(0), q(1), q(-1))
            ),
            Affine(((q(1), q(0), q(0), q(1)), (q(0), q(1), q(1), q(0))), (q(1, 3), q(0))),
        ),
        Affine(((q(1), q(-1)),), (q(0),)),
        (0,),
        {},
        (Norm((q(1, 2),) * 4, None, 2), Norm(None, (q(1), q(2)), 1)),
    )
    return plain, trained


# the files these nets were written as before rows were written at C speed (the format is a
# public contract: the same net, the same bytes)
GOLDEN = (
    '{\n "format": "lnnet/1",\n "input_dim": 2,\n "width": 3,\n "eps": "1/100000",\n "layers": [\n'
    '  {\n   "W": [\n    ["1", "-1/2"],\n    ["0", "3"],\n    ["-7/3", "5"]\n   ],\n'
    '   "b": ["0", "1/2", "-1"],\n   "meta": {\n    "centre": "1/2",\n    "note": "a, b"\n   }\n'
    '  }\n ],\n "readout": {\n  "W": [\n   ["1", "0", "-1"],\n   ["2", "1/9", "0"]\n  ],\n'
    '  "b": ["0", "1"]\n },\n "classes": ["a", "b"],\n "meta": {\n  "method": "runs",\n'
    '  "projection": ["1", "-1/2"],\n  "folds": 1,\n  "nested": {\n   "x": [1, 2.5, null, true]\n'
    "  }\n }\n}\n",
    '{\n "format": "lnnet/1.1",\n "requires": ["ln-affine", "widths", "groups"],\n'
    ' "input_dim": 2,\n "width": null,\n "eps": "0",\n "layers": [\n  {\n   "W": [\n'
    '    ["1", "2"],\n    ["3", "4"],\n    ["5", "6"],\n    ["7", "8"]\n   ],\n'
    '   "b": ["0", "0", "1", "-1"],\n   "ln": {\n    "gain": ["1/2", "1/2", "1/2", "1/2"]\n'
    '   },\n   "groups": 2\n  },\n  {\n   "W": [\n    ["1", "0", "0", "1"],\n'
    '    ["0", "1", "1", "0"]\n   ],\n   "b": ["1/3", "0"],\n   "ln": {\n    "bias": ["1", "2"]\n'
    '   }\n  }\n ],\n "readout": {\n  "W": [\n   ["1", "-1"]\n  ],\n  "b": ["0"]\n },\n'
    ' "classes": [0]\n}\n',
)


def test_files_are_byte_identical_to_the_layout_they_always_had(net, tmp_path):
    from lncapacity.fileformat import dumps
    from lncapacity.fileformat.layout import _dumps_by_layout

    for made, golden in zip(_hand_made_nets(), GOLDEN, strict=True):
        assert dumps(to_dict(made)) == golden
        save(made, tmp_path / "n.json")
        assert (tmp_path / "n.json").read_bytes() == golden.encode()
        assert load(tmp_path / "n.json") == made
    exact = build([[0], [1], [2], [3]], [0, 1, 1, 0], method="pma", exact=True)  # radicals
    for obj in (to_dict(net), to_dict(exact), certify(net, [[0, 0]], ["a"]).to_dict()):
        assert dumps(obj) == _dumps_by_layout(obj)


json_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=6))
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.text(max_size=5), inner, max_size=4),
    ),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_dumps_keeps_the_layout_of_any_object(obj):
    """Strings with brackets (which the layout's expressions treat as brackets), empty
    containers, nested rows, NaN: the same text as the layout's definition."""
    from lncapacity.fileformat import dumps
    from lncapacity.fileformat.layout import _dumps_by_layout

    assert dumps(obj) == _dumps_by_layout(obj)


number_text = st.one_of(
    st.text("0123456789-/+ ", max_size=8),
    st.sampled_from(["007", "-0", "1/00", "3/0", "-3/-2", " 3", "+3", "1.5", "\u0663", "6/4"]),
    st.sampled_from(["9" * 4300, "9" * 4301, "1/" + "7" * 4300, "-" + "1" * 4300]),
    st.integers().map(str),
    st.integers(),
    st.none(),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(number_text, min_size=1, max_size=6))
def test_rows_read_in_bulk_as_each_number_is_read(row):
    """A row of weights is the numbers :func:`parse_rational` reads, or the error naming
    the first entry it refuses, whichever way the row was read."""
    from lncapacity.arith import parse_rational

    obj = {
        "format": "lnnet/1",
        "input_dim": len(row),
        "width": 3,
        "eps": "0",
        "layers": [],
        "readout": {"W": [row], "b": ["0"]},
        "classes": [0],
    }
    expected, problem = [], None
    for j, v in enumerate(row):
        try:
            if not isinstance(v, str):
                raise ValueError("numbers are strings")
            expected.append(parse_rational(v))
        except ValueError as e:
            problem = (f"readout.W[0][{j}]", str(e))
            break
    if problem is None:
        assert from_dict(obj).readout.W == (tuple(expected),)
    else:
        with pytest.raises(InputError) as info:
            from_dict(obj, "n.json")
        where, what = problem
        assert str(info.value).startswith(f"n.json: {where}: ")
        if what != "numbers are strings":
            assert str(info.value) == f"n.json: {where}: {what}"
