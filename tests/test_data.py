"""Tests for lncapacity.data: exact loading and validation of labeled point sets."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from flint import fmpq

from lncapacity.data import PointSet, load_points, points_from_arrays
from lncapacity.errors import InputError

DYADIC_0_1 = fmpq(3602879701896397, 36028797018963968)  # the float nearest 1/10


def write(tmp_path: Path, text: str, name: str = "data.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def error(path_or_call, *args) -> str:
    """The message of the InputError raised; it must be one line."""
    with pytest.raises(InputError) as info:
        if callable(path_or_call):
            path_or_call(*args)
        else:
            load_points(path_or_call)
    msg = str(info.value)
    assert "\n" not in msg
    return msg


# ---------------------------------------------------------------------------
# CSV: values, labels, layout


def test_csv_values_are_exact_rationals(tmp_path):
    ps = load_points(write(tmp_path, "x1,x2,x3,label\n0.1,1e-3,-2,0\n3/4,+5,1E2,1\n"))
    assert ps.X == ((fmpq(1, 10), fmpq(1, 1000), fmpq(-2)), (fmpq(3, 4), fmpq(5), fmpq(100)))
    assert all(isinstance(v, fmpq) for row in ps.X for v in row)
    assert ps.X[0][0] != DYADIC_0_1
    assert (ps.m, ps.d, ps.unit, ps.duplicates) == (2, 3, "line", 0)
    assert ps.source == str(tmp_path / "data.csv")


def test_csv_integer_labels_become_ints(tmp_path):
    ps = load_points(write(tmp_path, "x,label\n1,+1\n2,-1\n3,007\n"))
    assert ps.y == (1, -1, 7)
    assert all(type(v) is int for v in ps.y)
    assert ps.classes == (-1, 1, 7)


def test_csv_labels_stay_strings_unless_all_integer(tmp_path):
    ps = load_points(write(tmp_path, "x,label\n1,1\n2,cat\n3,1.0\n4,01\n"))
    assert ps.y == ("1", "cat", "1.0", "01")
    assert ps.classes == ("01", "1", "1.0", "cat")


def test_csv_label_column_anywhere_any_case_and_whitespace(tmp_path):
    text = " a , LaBeL ,b\n 1 ,  x , 2 \n\n   \n3,y,4\n"
    ps = load_points(write(tmp_path, text))
    assert ps.X == ((fmpq(1), fmpq(2)), (fmpq(3), fmpq(4)))
    assert ps.y == ("x", "y")
    assert ps.origins == ((2,), (5,))  # blank lines are skipped but still counted


def test_csv_quoted_fields_and_crlf(tmp_path):
    path = tmp_path / "q.csv"
    path.write_bytes(b'x,label\r\n"1/3", "a,b"\r\n2,c\r\n')
    ps = load_points(path)
    assert ps.X == ((fmpq(1, 3),), (fmpq(2),))
    assert ps.y == ("a,b", "c")
    assert ps.origins == ((2,), (3,))


def test_csv_line_numbers_follow_multiline_quoted_fields(tmp_path):
    msg = error(write(tmp_path, 'x,label\n1,"two\nlines"\n2\n'))
    assert msg.endswith("line 4 has 1 field, expected 2")


def test_csv_utf8_bom_is_ignored(tmp_path):
    path = tmp_path / "bom.csv"
    path.write_bytes("\ufefflabel,x\n0,1\n".encode())
    assert load_points(path).y == (0,)


def test_csv_duplicates_are_merged_with_origins(tmp_path):
    text = "x1,x2,label\n0.5,1,0\n2,2,1\n1/2,1.0,0\n2,2,1\n5e-1,1,0\n"
    ps = load_points(write(tmp_path, text))
    assert ps.X == ((fmpq(1, 2), fmpq(1)), (fmpq(2), fmpq(2)))
    assert ps.y == (0, 1)
    assert ps.origins == ((2, 4, 6), (3, 5))
    assert (ps.m, ps.duplicates) == (2, 3)


def test_floats_and_classes():
    ps = points_from_arrays([[Fraction(1, 3), 2], [0.1, -1]], ["b", "a"])
    f = ps.floats()
    assert f.dtype == np.float64 and f.shape == (2, 2)
    assert f.tolist() == [[1 / 3, 2.0], [0.1, -1.0]]
    assert ps.classes == ("a", "b")
    assert ps.d == 2


def test_floats_saturate_beyond_float_range():
    ps = points_from_arrays([[10**400, -(10**400), Fraction(1, 3**400)]], [0])
    assert ps.floats().tolist() == [[np.inf, -np.inf, float(Fraction(1, 3**400))]]


# ---------------------------------------------------------------------------
# CSV errors


def test_missing_file(tmp_path):
    msg = error(tmp_path / "nope.csv")
    assert msg.startswith(str(tmp_path / "nope.csv") + ":")
    assert "no such file" in msg


def test_directory(tmp_path):
    d = tmp_path / "dir.csv"
    d.mkdir()
    assert "is a directory" in error(d)


def test_unsupported_suffix(tmp_path):
    msg = error(write(tmp_path, "x,label\n1,0\n", "data.txt"))
    assert "unsupported file type '.txt'" in msg
    assert ".csv, .npy or .npz" in msg


def test_not_utf8(tmp_path):
    path = tmp_path / "latin.csv"
    path.write_bytes(b"x,label\n1,0\n2,caf\xe9\n")
    msg = error(path)
    assert msg.startswith(f"{path}:")
    assert "not UTF-8" in msg and "line 3" in msg


@pytest.mark.parametrize("text", ["", "\n  \n\n"])
def test_empty_file(tmp_path, text):
    assert error(write(tmp_path, text)).endswith("data.csv: is empty")


def test_header_without_data(tmp_path):
    assert error(write(tmp_path, "x,label\n\n")).endswith("data.csv: has no data rows")


def test_no_label_column_lists_columns(tmp_path):
    msg = error(write(tmp_path, "x1,x2,class\n1,2,0\n"))
    assert "no 'label' column" in msg
    assert "'x1', 'x2' and 'class'" in msg


def test_two_label_columns(tmp_path):
    assert "more than one column 'label' (1 and 3)" in error(
        write(tmp_path, "label,x,LABEL\n0,1,0\n")
    )


def test_no_feature_column(tmp_path):
    assert "no feature columns" in error(write(tmp_path, "label\n0\n1\n"))


def test_ragged_row(tmp_path):
    msg = error(write(tmp_path, "a,b,c,label\n1,2,3,0\n1,2,3,0\n\n1,2,0\n"))
    assert msg.endswith("data.csv: line 5 has 3 fields, expected 4")


def test_many_ragged_rows_are_capped(tmp_path):
    text = "a,label\n" + "1\n" * 12
    msg = error(write(tmp_path, text))
    assert msg.endswith("line 2 has 1 field, expected 2; also lines 3, 4, 5, 6 and 7 more")


def test_six_bad_lines_say_one_more(tmp_path):
    msg = error(write(tmp_path, "a,label\n" + "1\n" * 6))
    assert msg.endswith("line 2 has 1 field, expected 2; also lines 3, 4, 5, 6 and 1 more")


@pytest.mark.parametrize("bad", ["nan", "inf", "-inf", "NaN", "Infinity"])
def test_non_finite_value(tmp_path, bad):
    msg = error(write(tmp_path, f"x1,x2,label\n1,2,0\n3,4,1\n5,{bad},0\n"))
    assert msg.endswith(f"data.csv: non-finite value '{bad}' at line 4, column x2")


def test_non_numeric_value(tmp_path):
    msg = error(write(tmp_path, "x1,x2,label\n1,2,0\n3,4,1\n5,abc,0\n6,1/0,1\n7,x,1\n"))
    assert msg.endswith("non-numeric value 'abc' at line 4, column x2; also lines 5 and 6")


def test_empty_value(tmp_path):
    assert "empty value at line 3, column x1" in error(write(tmp_path, "x1,label\n1,0\n,1\n"))


def test_empty_label(tmp_path):
    assert "empty label on line 3" in error(write(tmp_path, "x,label\n1,0\n2,\n"))


def test_huge_exponent_is_rejected(tmp_path):
    msg = error(write(tmp_path, "x,label\n1e999999999,0\n"))
    assert "out of range" in msg and "line 2" in msg


def test_conflicting_labels(tmp_path):
    text = "x,y,label\n0,0,0\n0,1,0\n1,1,0\n0,0.0,0\n2,2,1\n0,0,1\n"
    msg = error(write(tmp_path, text))
    assert msg.endswith("data.csv: lines 2 and 7: the same point with different labels '0' and '1'")


def test_conflicting_string_labels_exact_equality(tmp_path):
    msg = error(write(tmp_path, "x,label\n0.5,a\n1/2,b\n"))
    assert "lines 2 and 3" in msg and "'a' and 'b'" in msg


def test_close_but_different_points_are_kept(tmp_path):
    ps = load_points(write(tmp_path, "x,label\n0.1,0\n0.1000000000000000055511151231257827,1\n"))
    assert ps.m == 2


# ---------------------------------------------------------------------------
# .npy and .npz


def test_npy_happy_path_exact_dyadic(tmp_path):
    path = tmp_path / "d.npy"
    np.save(path, np.array([[0.1, 2.0, 1.0], [0.5, -3.0, 0.0], [0.1, 2.0, 1.0]]))
    ps = load_points(path)
    assert ps.X == ((DYADIC_0_1, fmpq(2)), (fmpq(1, 2), fmpq(-3)))
    assert ps.X[0][0] != fmpq(1, 10)
    assert ps.y == (1, 0) and all(type(v) is int for v in ps.y)
    assert ps.origins == ((0, 2), (1,))
    assert (ps.unit, ps.source) == ("row", str(path))


def test_npy_float32_and_int_arrays(tmp_path):
    path = tmp_path / "f.npy"
    np.save(path, np.array([[0.1, 1]], dtype=np.float32))
    assert load_points(path).X == ((fmpq(13421773, 134217728),),)
    np.save(path, np.array([[2**62, -1, 3]], dtype=np.int64))
    ps = load_points(path)
    assert ps.X == ((fmpq(2**62), fmpq(-1)),) and ps.y == (3,)


def test_npy_non_finite_rows(tmp_path):
    path = tmp_path / "d.npy"
    np.save(path, np.array([[1.0, 0], [np.nan, 1], [2.0, 0], [0, 1], [np.inf, 0]]))
    msg = error(path)
    assert msg.startswith(f"{path}:")
    assert "non-finite value nan at row 1, column 0; also row 4" in msg


def test_npy_non_integral_label(tmp_path):
    path = tmp_path / "d.npy"
    np.save(path, np.array([[1.0, 0], [2.0, 0.5], [3.0, np.nan]]))
    assert "non-integral label 0.5 at row 1; also row 2" in error(path)


@pytest.mark.parametrize(
    ("array", "expected"),
    [
        (np.array([1.0, 2.0]), "expected a 2-D array"),
        (np.array([[1.0], [2.0]]), "at least 2 columns"),
        (np.array([["1", "0"]]), "expected a numeric array, got dtype <U1"),
        (np.zeros(2, dtype=[("a", "f8"), ("b", "i4")]), "structured array"),
        (np.zeros((0, 3)), "X has no rows"),
    ],
)
def test_npy_bad_shapes_and_dtypes(tmp_path, array, expected):
    path = tmp_path / "d.npy"
    np.save(path, array)
    msg = error(path)
    assert msg.startswith(f"{path}:") and expected in msg


def test_npy_object_array_is_not_unpickled(tmp_path):
    path = tmp_path / "o.npy"
    np.save(path, np.array([[1, "a"]], dtype=object), allow_pickle=True)
    assert "object array" in error(path)


def test_npy_garbage_and_wrong_container(tmp_path):
    assert "not a valid .npy file" in error(write(tmp_path, "hello", "g.npy"))
    path = tmp_path / "z.npy"
    with path.open("wb") as f:
        np.savez(f, X=np.zeros((1, 1)), y=np.zeros(1))
    assert "is an .npz archive" in error(path)


def test_npz_happy_path_with_string_labels(tmp_path):
    path = tmp_path / "d.npz"
    np.savez(path, X=np.array([[0.1, 1], [0.25, 2]]), y=np.array(["cat", "dog"]))
    ps = load_points(path)
    assert ps.X == ((DYADIC_0_1, fmpq(1)), (fmpq(1, 4), fmpq(2)))
    assert ps.y == ("cat", "dog") and all(type(v) is str for v in ps.y)
    assert ps.classes == ("cat", "dog")


def test_npz_integral_float_labels(tmp_path):
    path = tmp_path / "d.npz"
    np.savez(path, X=np.eye(3), y=np.array([1.0, -0.0, 2.0]))
    assert load_points(path).y == (1, 0, 2)


@pytest.mark.parametrize(
    ("arrays", "expected"),
    [
        ({"X": np.eye(2)}, "missing array 'y'; found 'X'"),
        ({"A": np.eye(2), "B": np.eye(2)}, "missing array 'X' and 'y'; found 'A' and 'B'"),
        ({"X": np.eye(2), "y": np.zeros(3)}, "X has 2 rows but y has 3 labels"),
        ({"X": np.zeros(2), "y": np.zeros(2)}, "X must be 2-D"),
        ({"X": np.eye(2), "y": np.zeros((2, 1))}, "y must be 1-D"),
        ({"X": np.array([[1, 2j]]), "y": np.zeros(1)}, "X must hold numbers"),
        ({"X": np.eye(2), "y": np.array([1j, 2j])}, "labels must be integers or strings"),
    ],
)
def test_npz_errors(tmp_path, arrays, expected):
    path = tmp_path / "d.npz"
    np.savez(path, **arrays)
    msg = error(path)
    assert msg.startswith(f"{path}:") and expected in msg


def test_npz_object_labels_are_not_unpickled(tmp_path):
    path = tmp_path / "d.npz"
    np.savez(path, X=np.eye(2), y=np.array([0, None], dtype=object))
    assert "array 'y' holds Python objects" in error(path)


def test_npz_conflict_names_rows(tmp_path):
    path = tmp_path / "d.npz"
    np.savez(path, X=np.array([[1.0], [2.0], [1.0]]), y=np.array([0, 1, 1]))
    assert error(path).endswith("rows 0 and 2: the same point with different labels '0' and '1'")


# ---------------------------------------------------------------------------
# points_from_arrays


def test_arrays_numpy_inputs():
    X = np.array([[0.1, 1.0], [0.5, 2.0], [0.1, 1.0]])
    ps = points_from_arrays(X, np.array([3, 4, 3]))
    assert isinstance(ps, PointSet)
    assert ps.X == ((DYADIC_0_1, fmpq(1)), (fmpq(1, 2), fmpq(2)))
    assert ps.y == (3, 4) and all(type(v) is int for v in ps.y)
    assert ps.origins == ((0, 2), (1,))
    assert (ps.unit, ps.source, ps.duplicates) == ("row", "array", 1)
    np.testing.assert_array_equal(ps.floats(), X[:2])


@pytest.mark.parametrize(
    ("y", "expected"),
    [
        (np.array([True, False]), (1, 0)),
        (np.array([1.0, 2.0]), (1, 2)),
        (np.array([5, 6], dtype=np.uint8), (5, 6)),
        (["a", "b"], ("a", "b")),
        (np.array(["a", "b"], dtype=object), ("a", "b")),
        ([np.int64(1), 2.0], (1, 2)),
    ],
)
def test_arrays_label_kinds(y, expected):
    ps = points_from_arrays(np.array([[0], [1]]), y)
    assert ps.y == expected
    assert all(type(v) is type(expected[0]) for v in ps.y)


def test_arrays_exact_python_numbers():
    ps = points_from_arrays([[Fraction(1, 3), 2**80], [fmpq(2, 7), 0.5]], [0, 1])
    assert ps.X == ((fmpq(1, 3), fmpq(2**80)), (fmpq(2, 7), fmpq(1, 2)))


def test_arrays_float32_is_its_exact_value():
    ps = points_from_arrays(np.array([[0.1]], dtype=np.float32), [0])
    assert ps.X == ((fmpq(13421773, 134217728),),)


def test_arrays_longdouble_is_its_exact_value():
    v = np.longdouble(1) / np.longdouble(3)
    ps = points_from_arrays(np.array([[v]]), [0])
    assert ps.X == ((fmpq(*(int(k) for k in v.as_integer_ratio())),),)


@pytest.mark.parametrize(
    ("X", "y", "expected"),
    [
        (np.array([1.0, 2.0]), [0, 1], "X must be 2-D"),
        (np.zeros((0, 2)), [], "X has no rows"),
        ([], [], "X has no rows"),
        (np.zeros((2, 0)), [0, 1], "X has no feature columns"),
        (np.eye(2), [0, 1, 1], "X has 2 rows but y has 3 labels"),
        (np.eye(2), [[0], [1]], "y must be 1-D"),
        ([[1, 2], [3]], [0, 1], "different lengths"),
        (np.array([[b"1", b"2"]]), [0], "X must hold numbers"),
        ([[1, "two"]], [0], "non-numeric value 'two' at row 0, column 1"),
        ([[1, None]], [0], "non-numeric value None at row 0, column 1"),
        ([[1], [float("nan")]], [0, 1], "non-finite value nan at row 1, column 0"),
        (np.eye(2), [0.5, 1], "non-integral label 0.5 at row 0"),
        (np.eye(2), [0, None], "unsupported label None (not an integer or a string) at row 1"),
        (np.eye(2), ["a", ""], "empty label at row 1"),
        (np.eye(2), np.array([b"a", b"\xff"]), "non-UTF-8 label b'\\xff' at row 1"),
        (np.eye(3), [0, "a", 1], "labels mix numbers and strings: row 0 has 0 but row 1 has 'a'"),
        (np.ones((2, 2)), ["x", "y"], "rows 0 and 1: the same point with different labels"),
    ],
)
def test_arrays_errors(X, y, expected):
    msg = error(points_from_arrays, X, y)
    assert expected in msg


def test_arrays_non_finite_rows_are_capped():
    X = np.zeros((20, 2))
    X[3:, 1] = np.inf
    msg = error(points_from_arrays, X, np.arange(20))
    assert msg == "non-finite value inf at row 3, column 1; also rows 4, 5, 6, 7 and 12 more"


def test_dedup_is_linear_time():
    n = 20000
    X = np.arange(2 * n, dtype=np.int64).reshape(n, 2) % (n // 2 * 2)
    ps = points_from_arrays(X, np.zeros(n, dtype=int))
    assert ps.m + ps.duplicates == n


def test_arrays_read_number_strings_as_csv_does():
    """Issue 19: the Python API reads decimal and p/q strings and Fractions exactly."""
    ps = points_from_arrays([["0.1", "3/4"], [Fraction(1, 3), " -2e-1 "]], [0, 1])
    assert list(ps.X) == [(fmpq(1, 10), fmpq(3, 4)), (fmpq(1, 3), fmpq(-1, 5))]
    assert list(points_from_arrays(np.array([["0.1", "1"]]), [0]).X) == [(fmpq(1, 10), fmpq(1))]


@pytest.mark.parametrize("suffix", [".npz", ".npy"])
def test_arrays_beyond_the_size_limit_are_refused_before_they_are_inflated(
    tmp_path, suffix, monkeypatch
):
    """Issue 28, item 10: 60 KB of deflated zeros claim 2 million rows (48 MB): refused from
    the header, at once, with the limit named; an array of exactly the limit loads."""
    from lncapacity import data

    MAX_ARRAY_BYTES = data.MAX_ARRAY_BYTES
    rows = 2_000_000
    path = tmp_path / f"zeros{suffix}"
    if suffix == ".npz":
        np.savez_compressed(path, X=np.zeros((rows, 3)), y=np.zeros(rows, dtype=np.int64))
        assert path.stat().st_size < 100_000
    else:
        np.save(path, np.zeros((600_000, 4)))  # 19 MB on disk
    with pytest.raises(InputError, match=f"beyond the limit of {MAX_ARRAY_BYTES:,} bytes"):
        load_points(path)
    monkeypatch.setattr(data, "MAX_ARRAY_BYTES", 1024)
    n = 64  # X of 2 float64 columns: exactly 1024 bytes
    X = np.arange(2 * n, dtype=np.float64).reshape(n, 2) / 4
    np.savez_compressed(tmp_path / "fits.npz", X=X, y=np.arange(n) % 2)
    points = load_points(tmp_path / "fits.npz")
    assert points.m == n and points.X[-1] == (fmpq(2 * n - 2, 4), fmpq(2 * n - 1, 4))
    np.savez_compressed(tmp_path / "over.npz", X=np.zeros((n + 1, 2)), y=np.zeros(n + 1))
    with pytest.raises(InputError, match="beyond the limit of 1,024 bytes"):
        load_points(tmp_path / "over.npz")


def test_array_points_are_exact_and_duplicates_merged(tmp_path):
    """The fast paths (a float's integer ratio, points keyed by numerator and denominator)
    give the exact values and merge equal points as before."""
    X = np.array([[0.1, -3.0], [1e-300, 2.0**60], [0.1, -3.0]], dtype=np.float64)
    points = points_from_arrays(X, np.array([1, 0, 1]))
    assert points.X == (
        (fmpq(*(0.1).as_integer_ratio()), fmpq(-3)),
        (fmpq(*(1e-300).as_integer_ratio()), fmpq(2**60)),
    )
    assert points.origins == ((0, 2), (1,))
    ints = points_from_arrays(np.array([[2, -7], [2, -7]], dtype=np.int8), np.array([0, 0]))
    assert ints.X == ((fmpq(2), fmpq(-7)),) and ints.origins == ((0, 1),)
