"""Property tests of the input readers: any bytes either load or give one line.

Every reader (CSV, ``.npy``, ``.npz``, ``lnnet/1`` nets, shattering certificates, the number
grammar) is called directly for speed with arbitrary bytes, and with bytes shaped like its
format so that the deeper paths run; it must return a value or raise
:class:`~lncapacity.errors.InputError` with a one-line message of bounded length, and nothing
else (no other exception, no warning).  A few of the inputs go through the command line.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
from flint import fmpq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lncapacity import fileformat
from lncapacity.arith import format_rational, parse_rational
from lncapacity.data import PointSet, load_points
from lncapacity.errors import InputError
from lncapacity.model import LNNet
from lncapacity.shatter import verify_shatter

ROOT = Path(__file__).resolve().parents[1]
ENV = {k: v for k, v in os.environ.items() if k != "LNCAPACITY_DEBUG"} | {"PYTHONPATH": str(ROOT)}
FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MAX_MESSAGE = 400


def _one_line(e: InputError) -> None:
    text = str(e)
    assert "\n" not in text and 0 < len(text) < MAX_MESSAGE, text[:MAX_MESSAGE]


def _read(reader, data: bytes, suffix: str):
    """``reader(path)`` on a file holding ``data``: its value, or None after a good InputError."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"f{suffix}"
        path.write_bytes(data)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            try:
                return reader(path)
            except InputError as e:
                _one_line(e)
                return None


CSV_ALPHABET = st.sampled_from(list('xyl,abel"\n\r 0123456789.-+/eE\t;\ufeff\u0662nanif'))
csv_like = st.builds(
    lambda header, body: (header + body).encode("utf-8"),
    st.sampled_from(["x,label\n", "x,y,label\n", "label,x\n", "x,LABEL,y\n", "", "label\n"]),
    st.text(CSV_ALPHABET, max_size=120),
)


@FAST
@given(st.one_of(st.binary(max_size=200), csv_like))
def test_any_bytes_as_csv(data):
    points = _read(load_points, data, ".csv")
    if points is not None:
        assert isinstance(points, PointSet) and points.m >= 1 and points.d >= 1
        assert all(len(x) == points.d for x in points.X)
        assert len(set(points.X)) == points.m
        assert {type(label) for label in points.y} in ({int}, {str})


def _npy_bytes(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr)
    return buf.getvalue()


npy_like = st.builds(
    lambda arr, cut, flip: _mangle(_npy_bytes(arr), cut, flip),
    st.sampled_from(
        [
            np.zeros((3, 3)),
            np.array([[0, 0], [1, 1]], dtype=np.int64),
            np.array([[1e308, 0], [-5e-324, 1]]),
            np.array([[np.nan, 0], [1, 1]]),
            np.zeros((2,)),
            np.array(["a", "b"]),
            np.zeros((0, 3)),
        ]
    ),
    st.integers(0, 200),
    st.integers(0, 255),
)


def _mangle(data: bytes, cut: int, flip: int) -> bytes:
    """Cut the tail off, or flip one byte: a bad disk."""
    if cut % 3 == 0:
        return data[: len(data) - cut % len(data)]
    i = (cut * 7) % len(data)
    return data[:i] + bytes([data[i] ^ flip]) + data[i + 1 :]


@FAST
@given(st.one_of(st.binary(max_size=200), npy_like))
def test_any_bytes_as_npy(data):
    points = _read(load_points, data, ".npy")
    assert points is None or isinstance(points, PointSet)


@FAST
@given(st.binary(max_size=300))
def test_any_bytes_as_npz(data):
    points = _read(load_points, b"PK\x03\x04" + data, ".npz")
    assert points is None or isinstance(points, PointSet)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=8)
    | st.sampled_from(["lnnet/1", "0", "1/2", "-3", " 2", "1/0"]),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                ["format", "input_dim", "width", "eps", "layers", "readout", "W", "b", "classes"]
            ),
            children,
            max_size=8,
        )
    ),
    max_leaves=30,
)


def _net_like(obj: object) -> bytes:
    base = {"format": "lnnet/1", "input_dim": 1, "width": 3, "eps": "0", "classes": [0, 1]}
    if isinstance(obj, dict):
        base.update(obj)
        return json.dumps(base).encode()
    return json.dumps(obj).encode()


@FAST
@given(st.one_of(st.binary(max_size=200), json_values.map(_net_like)))
def test_any_bytes_as_a_net(data):
    net = _read(fileformat.load, data, ".json")
    assert net is None or isinstance(net, LNNet)


@FAST
@given(
    st.one_of(st.binary(max_size=200), json_values.map(lambda v: (json.dumps(v) + "\n").encode()))
)
def test_any_bytes_as_a_shattering_certificate(data):
    header = b'{"format":"lnnet-shatter/1","points":[["0"],["1"],["2"]],"input_dim":1,'
    header += b'"eps":"0","depth":1,"labelings":8,"classes":[0,1]}\n'
    for blob in (data, header + data):
        result = _read(lambda p: verify_shatter(p, workers=1), blob, ".jsonl")
        if result is not None:
            summary, problems = result
            assert not (summary.all_certified and not problems)  # nothing here is a certificate


@FAST
@given(st.text(max_size=40))
def test_any_text_as_a_number(text):
    for decimals in (False, True):
        try:
            q = parse_rational(text, decimals=decimals)
        except ValueError as e:
            assert "\n" not in str(e) and len(str(e)) < 200
            continue
        assert isinstance(q, fmpq)
        if not decimals:  # the lnnet/1 grammar: ASCII digits, one optional minus, one slash
            assert set(text) <= set("-/0123456789") and text == text.strip()


@FAST
@given(st.integers(-(10**60), 10**60), st.integers(1, 10**60))
def test_numbers_round_trip(p, q):
    x = fmpq(p, q)
    assert parse_rational(format_rational(x)) == x


def test_a_few_through_the_command_line(tmp_path):
    cases = {
        "a.csv": b'x,label\n0,"a\n1,b\n',
        "b.csv": b"\xff\xfe",
        "c.csv": b"x,label\n\xd9\xa2,0\n1,1\n",
        "d.npy": _mangle(_npy_bytes(np.zeros((3, 3))), 3, 0),
        "e.npy": b"\x93NUMPY\x01\x00\x10\x00{'descr': '<f8'}\n",
        "f.json": b'{"format": "lnnet/1", "format": "lnnet/1"}',
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        args = ["certify", name] if not name.endswith(".json") else ["verify", name, "a.csv"]
        p = subprocess.run(
            [sys.executable, "-m", "lncapacity", *args, "--quiet", "--float", "float64"],
            cwd=tmp_path,
            env=ENV,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert p.returncode == 2, (name, p.stdout, p.stderr)
        lines = p.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("lncapacity: error: "), (name, p.stderr)
    assert sorted(os.listdir(tmp_path)) == sorted(cases)
