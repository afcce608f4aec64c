"""The bulk readers give exactly what the row-by-row reader gave: the same point sets, the same
floats, the same messages.

``tests/data_reference.py`` is the reader of :mod:`lncapacity.data` before it read columns in
bulk (:mod:`lncapacity.columns`), kept verbatim.  Hypothesis writes hostile CSV files (decimals
of every shape, long mantissas, fractions, signs, exponents at the limits, spaces, quotes,
blank lines, carriage returns, NULs, non-ASCII digits, duplicate rows, conflicting labels) and
arrays (signed zeros, duplicates); both readers read them, and their results must agree to the
last bit.
"""

from __future__ import annotations

import re
import tempfile
import warnings
from pathlib import Path

import data_reference
import numpy as np
import pytest
from flint import fmpq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lncapacity.arith import parse_rational, to_float
from lncapacity.columns import MANTISSA_DIGITS, decimal_column, row_groups
from lncapacity.data import load_points, points_from_arrays
from lncapacity.errors import InputError

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

digits = st.text("0123456789", min_size=0, max_size=22)
decimal_text = st.builds(
    lambda sign, whole, dot, frac, e, esign, exp: (
        sign + whole + (("." + frac) if dot else "") + ((e + esign + exp) if e else "")
    ),
    st.sampled_from(["", "", "-", "+"]),
    digits,
    st.booleans(),
    digits,
    st.sampled_from(["", "", "e", "E"]),
    st.sampled_from(["", "-", "+"]),
    st.one_of(st.text("0123456789", max_size=3), st.sampled_from(["4300", "4301", "0000001"])),
)
odd_text = st.one_of(
    st.sampled_from(
        [
            "nan",
            "inf",
            "-inf",
            "1/3",
            "-7/2",
            "3/0",
            "1e999999999",
            "0x10",
            "1_0",
            "\u0663",
            "1\x00",
            "\x001",
            ".",
            "-",
            "e5",
            "1e",
            "1e+",
            "+.5",
            "5.",
            "-0",
            "-0.0e-7",
            "  2 ",
        ]
    ),
    st.text("0123456789.-+eE/ \u0662x", max_size=8),
)
field_text = st.one_of(decimal_text, decimal_text, odd_text)
good_text = st.one_of(
    st.builds(
        lambda sign, whole, frac, exp: sign + whole + frac + exp,
        st.sampled_from(["", "-", "+"]),
        st.text("0123456789", min_size=1, max_size=21),
        st.one_of(st.just(""), st.text("0123456789", max_size=21).map(lambda f: "." + f)),
        st.one_of(st.just(""), st.integers(-4300, 4300).map(lambda e: f"e{e}")),
    ),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["1/3", "-0", "0.0", "-0.0", "1e-400", "-1e-400"]),
)


def reference_csv(text: str):
    """What the reference reader makes of a CSV file: ``(PointSet-like, None)`` or
    ``(None, message)``."""
    return _read(data_reference.load_points, text)


def _read(reader, text: str):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "d.csv"
        path.write_bytes(text.encode("utf-8"))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            try:
                points = reader(path)
            except InputError as e:
                return None, str(e).replace(tmp, "<tmp>")
    return points, None


def assert_same(new, old) -> None:
    """The same point set to the last bit: values, labels, origins, and floats."""
    assert (new.X, new.y, new.origins, new.unit) == (old.X, old.y, old.origins, old.unit)
    assert all(type(v) is fmpq for row in new.X for v in row)
    assert [type(label) for label in new.y] == [type(label) for label in old.y]
    a, b = new.floats(), old.floats()
    assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@st.composite
def csv_files(draw):
    d = draw(st.integers(1, 3))
    header = [f"x{j}" for j in range(d)]
    lab = draw(st.integers(0, d))
    header.insert(lab, draw(st.sampled_from(["label", "Label", " LABEL "])))
    hostile = draw(st.integers(0, 3)) == 0  # else every value is a number, every label given
    fields = field_text if hostile else good_text
    labels = ["0", "1", "+1", "a", "-2", "", "07"] if hostile else ["0", "1", "+1", "-2", "07"]
    rows = []
    for _ in range(draw(st.integers(1, 8))):
        row = [draw(fields) for _ in range(d)]
        row.insert(lab, draw(st.sampled_from(labels)))
        rows.append(row)
        if draw(st.integers(0, 4)) == 0:  # a duplicate row, maybe with another label
            again = list(row)
            again[lab] = draw(st.sampled_from([row[lab]] * 4 + ["0", "1"]))
            rows.append(again)
    quote = draw(st.sampled_from(["", "", "", '"']))
    sep = draw(st.sampled_from([",", ",", ", "] + ([] if quote else [" ,"])))
    lines = [sep.join(quote + f + quote if f and quote else f for f in r) for r in rows]
    if draw(st.booleans()):
        lines.insert(draw(st.integers(0, len(lines))), draw(st.sampled_from(["", "  ", "\t"])))
    if hostile and draw(st.booleans()):  # a ragged row
        lines.append(",".join(["1"] * draw(st.integers(1, d + 2))))
    newline = draw(st.sampled_from(["\n", "\n", "\r\n", "\r"]))
    end = draw(st.sampled_from(["", newline, newline * 2]))
    bom = draw(st.sampled_from(["", "", "\ufeff"]))
    return bom + newline.join([",".join(header), *lines]) + end


@SETTINGS
@given(csv_files())
def test_csv_reads_as_the_reference_reads(text):
    new, new_error = _read(load_points, text)
    old, old_error = reference_csv(text)
    assert new_error == old_error
    if old is not None:
        assert_same(new, old)


@SETTINGS
@given(st.lists(field_text, min_size=1, max_size=40))
def test_decimal_column_reads_every_decimal_as_the_grammar_does(texts):
    col = decimal_column(texts)
    for text, value, done, f, key in zip(
        texts, col.values, col.done, col.floats, col.keys, strict=True
    ):
        try:
            exact = parse_rational(text, decimals=True)
        except ValueError:
            exact = None
        if not done:
            assert value is None
            continue
        assert text == text.strip() and "/" not in text
        assert value == exact and type(value) is fmpq
        assert np.float64(f).tobytes() == np.float64(to_float(exact)).tobytes()
        m, k = key.tolist()
        assert fmpq(m) * fmpq(10) ** k == exact and (m % 10 != 0 or m == 0)
    # every plain decimal of at most MANTISSA_DIGITS significant digits is read in bulk
    for text, done in zip(texts, col.done, strict=True):
        assert done == _plain(text), text


PLAIN = re.compile(r"[+-]?([0-9]*)(?:\.([0-9]*))?(?:[eE]([+-]?[0-9]{1,6}))?")


def _plain(text: str) -> bool:
    """A decimal the bulk reader takes: the grammar's decimals with a short enough mantissa
    and exponent (the grammar refuses longer exponents, or reads longer mantissas slowly)."""
    m = PLAIN.fullmatch(text)
    if m is None or not (m.group(1) or m.group(2)):
        return False
    significant = (m.group(1) + (m.group(2) or "")).lstrip("0")
    return len(significant) <= MANTISSA_DIGITS and abs(int(m.group(3) or 0)) <= 4300


@pytest.mark.parametrize(
    "texts",
    [
        ["999999999999999999", "-999999999999999999", "0000000000000000000001.5"],
        ["1e4300", "-1e-4300", "1e-400", "-1e-400", "1e400", "-0", "0e5", "-0.0"],
        ["0.1", "0.10", "1e-1", "10e-2", ".1", "+0.1"],
    ],
)
def test_decimal_column_at_the_limits(texts):
    col = decimal_column(texts)
    assert col.done.all()
    assert col.values == [parse_rational(t, decimals=True) for t in texts]
    expected = np.array([to_float(v) for v in col.values])
    assert col.floats.tobytes() == expected.tobytes()  # -1e-400 is -0.0, "-0" is +0.0


def test_equal_values_have_equal_keys():
    col = decimal_column(["0.1", "0.10", "1e-1", "10e-2", "0", "-0", "0e9", "100", "1e2"])
    groups, repeated = row_groups(col.keys)
    assert repeated and groups[:4] == [groups[0]] * 4 and groups[4:7] == [groups[4]] * 3
    assert groups[7] == groups[8] and len(set(groups)) == 3


@SETTINGS
@given(
    st.lists(
        st.lists(
            st.sampled_from([0.0, -0.0, 0.1, -3.0, 1e-300, 2.0**60, 5e-324]), min_size=2, max_size=2
        ),
        min_size=1,
        max_size=12,
    ),
    st.lists(st.sampled_from([0, 1]), min_size=12, max_size=12),
    st.sampled_from([np.float64, np.float32, np.int64]),
)
def test_arrays_read_as_the_reference_reads(rows, labels, dtype):
    X = np.array(rows, dtype=np.float64)
    if dtype is np.int64:
        X = np.round(X).clip(-1e6, 1e6)
    X = X.astype(dtype)
    y = np.array(labels[: len(X)])
    try:
        new = points_from_arrays(X, y)
    except InputError as e:
        with pytest.raises(InputError) as info:
            data_reference.points_from_arrays(X, y)
        assert str(info.value) == str(e)
        return
    assert_same(new, data_reference.points_from_arrays(X, y))
