"""Labeled point sets: loading and validation, with exact coordinates.

:func:`load_points` reads ``.csv``, ``.npy`` and ``.npz`` files;
:func:`points_from_arrays` takes array-likes (the Python and scikit-learn
API).  Both return a :class:`PointSet` whose coordinates are exact rationals
(:class:`flint.fmpq`): CSV text is read as the decimal or ``"p/q"`` it spells
(``"0.1"`` is 1/10), a binary float as the dyadic rational it is.  Nothing goes
through a float on the way in.

Every problem with the input raises :class:`~lncapacity.errors.InputError`
with a one-line message that starts with the file name (when there is one)
and names the offending lines or rows: at most five, then "and N more".
"""

from __future__ import annotations

import io
import math
import os
import tokenize
import zipfile
import zlib
from fractions import Fraction
from numbers import Integral
from pathlib import Path
from typing import Any

import numpy as np
from flint import fmpq

from ..arith import exact
from ..columns import row_groups
from ..errors import InputError
from .csv_text import load_csv
from .points import (
    Label,
    PointSet,
    enum,
    err,
    first_of,
    merge,
    named_labels,
    plural,
    show,
    text_labels,
)

__all__ = ["Label", "PointSet", "load_points", "named_labels", "points_from_arrays"]

for _public in (PointSet, named_labels):  # documented, cited and pickled where users find them
    _public.__module__ = __name__

_NUMERIC = "biuf"  # numpy dtype kinds accepted as coordinates (bools count as 0/1)

MAX_ARRAY_BYTES = 16 * 2**20
"""The largest array of an ``.npy`` or ``.npz`` input, in bytes after decompression, checked
from its header before it is read: 2 million float64 numbers (a million points in the plane),
about 5 s and 0.5 GB as exact points, like a CSV of that size."""


# ---------------------------------------------------------------------------
# public entry points


def load_points(path: str | os.PathLike[str]) -> PointSet:
    """Load a labeled point set from a ``.csv``, ``.npy`` or ``.npz`` file.

    * CSV: a header row; the column named ``label`` (any case) holds the labels,
      every other column is a feature, in order.  Labels become ``int`` when
      every one is an integer literal, otherwise they all stay ``str``.  The
      quoting is strict (an unclosed quote is an error).
    * ``.npy``: a 2-D numeric array whose last column is the label.
    * ``.npz``: a 2-D numeric array ``X`` and a 1-D label array ``y``; string
      labels follow the CSV rule (all integer literals: ints).

    Raises :class:`InputError` (one line, naming the file and the offending
    lines or rows) for anything unreadable, malformed or ambiguous.
    """
    name = os.fsdecode(path)
    p = Path(name)
    try:
        if p.is_dir():
            raise err(name, "is a directory, not a file")
        if not p.exists():
            raise err(name, "no such file")
    except OSError as e:
        raise err(name, f"cannot read ({e.strerror or e})") from None
    suffix = p.suffix.lower()
    if suffix == ".csv":
        return load_csv(p, name)
    if suffix == ".npy":
        return _load_npy(p, name)
    if suffix == ".npz":
        return _load_npz(p, name)
    kind = f"'{p.suffix}'" if p.suffix else "(no suffix)"
    raise err(name, f"unsupported file type {kind}; expected .csv, .npy or .npz")


def points_from_arrays(X: Any, y: Any) -> PointSet:
    """A point set from array-likes: ``X`` of shape ``(n, d)``, ``y`` of length ``n``.

    ``X`` must be 2-D (a 1-D ``X`` is an error, as in scikit-learn) with finite
    numeric entries; numpy arrays and other objects with ``__array__`` keep
    their dtype, while nested lists are converted element by element, so
    Python ints, :class:`~fractions.Fraction` and :class:`fmpq` stay exact, and
    strings are read as the CSV reader reads them (``"0.1"`` is 1/10 exactly,
    ``"3/4"``, ``"1e-5"``; also in a NumPy string array).
    Floats become their exact dyadic value.  Labels: ints, bools and integral
    floats become ``int``, strings ``str``; anything else is an error.
    Rows are counted from 0 (``unit == "row"``); ``source`` is ``"array"``.
    """
    return _from_arrays(_as_array(X, "X"), _as_array(y, "y"), None, "array")


# ---------------------------------------------------------------------------
# numpy files


def _np_open(path: Path, name: str) -> io.BufferedReader:
    try:
        return path.open("rb")
    except OSError as e:
        raise err(name, f"cannot read ({e.strerror or e})") from None


# what NumPy's reader raises on a damaged file (its header is parsed as a Python literal)
_BAD_NPY = (
    ValueError,
    OSError,
    EOFError,
    SyntaxError,
    TypeError,
    KeyError,
    RecursionError,
    tokenize.TokenError,
    zipfile.BadZipFile,
    zlib.error,
)


def _npy_header_fits(f: Any, available: int, name: str, npz: bool = False) -> None:
    """Refuse, before anything is allocated, an ``.npy`` header whose array is bigger than the
    ``available`` bytes that follow it (a header claiming 10^12 rows in a small file) or than
    :data:`MAX_ARRAY_BYTES` (an archive member that inflates to millions of rows)."""
    start = f.tell()
    try:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, _, dtype = np.lib.format.read_array_header_1_0(f)
        else:
            shape, _, dtype = np.lib.format.read_array_header_2_0(f)
    except _BAD_NPY:
        raise err(name, "not a valid .npy file") from None
    count = math.prod(shape)
    need = count * dtype.itemsize
    if dtype.hasobject:
        raise InputError(f"{name} {_OBJECTS}" if npz else f"{name}: {_OBJECTS}")
    if need > available - (f.tell() - start):
        raise err(
            name,
            f"the .npy header claims shape {tuple(shape)} ({need} bytes) but the file holds "
            f"only {max(available - (f.tell() - start), 0)} bytes of data",
        )
    if need > MAX_ARRAY_BYTES:  # before inflating: a few KB of zeros can deflate to gigabytes
        raise err(
            name,
            f"the array has shape {tuple(shape)} ({need:,} bytes), beyond the limit of "
            f"{MAX_ARRAY_BYTES:,} bytes for an array read as points",
        )
    f.seek(start)


def _np_load(f: io.BufferedReader, name: str, kind: str) -> Any:
    if kind == ".npy":
        try:
            size = os.fstat(f.fileno()).st_size
        except OSError as e:
            raise err(name, f"cannot read ({e.strerror or e})") from None
        if f.read(6) == b"\x93NUMPY":
            f.seek(0)
            _npy_header_fits(f, size, name)
        f.seek(0)
    try:
        return np.load(f, allow_pickle=False)
    except _BAD_NPY as e:
        if "Object arrays" in str(e):
            raise err(name, _OBJECTS) from None
        raise err(name, f"not a valid {kind} file") from None


_OBJECTS = "holds Python objects (an object array), which are not loaded; save numbers"


def _load_npy(path: Path, name: str) -> PointSet:
    with _np_open(path, name) as f:
        arr = _np_load(f, name, ".npy")
        if not isinstance(arr, np.ndarray):
            arr.close()
            raise err(name, "is an .npz archive, not a .npy array")
    if arr.dtype.names is not None:
        raise err(name, "holds a structured array; save a plain 2-D numeric array")
    if arr.dtype.kind not in _NUMERIC:
        raise err(name, f"expected a numeric array, got dtype {arr.dtype}")
    if arr.ndim != 2:
        raise err(name, f"expected a 2-D array (features, then labels), got shape {arr.shape}")
    if arr.shape[1] < 2:
        n = plural(arr.shape[1], "column")
        raise err(name, f"expected at least 2 columns (features, then labels), got {n}")
    return _from_arrays(arr[:, :-1], arr[:, -1], name, name)


def _load_npz(path: Path, name: str) -> PointSet:
    with _np_open(path, name) as f:
        z = _np_load(f, name, ".npz")
        if isinstance(z, np.ndarray):
            raise err(name, "is a .npy array, not an .npz archive")
        with z:
            missing = [k for k in ("X", "y") if k not in z.files]
            if missing:
                found = enum([repr(k) for k in z.files]) if z.files else "none"
                what = " and ".join(repr(k) for k in missing)
                raise err(name, f"missing array {what}; found {found}")
            X, y = (_npz_get(z, k, name) for k in ("X", "y"))
    return _from_arrays(X, y, name, name, npz=True)


def _npz_get(z: Any, key: str, name: str) -> np.ndarray:
    try:
        info = z.zip.getinfo(f"{key}.npy")
        with z.zip.open(info) as member:
            _npy_header_fits(member, info.file_size, f"{name}: array {key!r}", npz=True)
        return np.asarray(z[key])
    except InputError:
        raise
    except ValueError as e:
        if "Object arrays" in str(e):
            raise err(name, f"array {key!r} {_OBJECTS}") from None
        raise err(name, f"array {key!r} is not a valid array") from None
    except _BAD_NPY:
        raise err(name, f"array {key!r} is not a valid array") from None


# ---------------------------------------------------------------------------
# arrays


def _as_array(a: Any, what: str) -> np.ndarray:
    """numpy data keep their dtype; anything else is taken element by element."""
    try:
        if isinstance(a, np.ndarray) or hasattr(a, "__array__"):
            return np.asarray(a)
        return np.asarray(a, dtype=object)
    except (ValueError, TypeError) as e:
        raise err(None, f"{what} is not an array ({e})") from None


def _from_arrays(
    X: np.ndarray, y: np.ndarray, prefix: str | None, source: str, npz: bool = False
) -> PointSet:
    text = "U" if prefix is None else ""  # the Python API reads number strings, as CSV does
    if X.dtype.names is not None or X.dtype.kind not in _NUMERIC + "O" + text:
        raise err(prefix, f"X must hold numbers, got dtype {X.dtype}")
    if X.ndim >= 1 and X.shape[0] == 0:
        raise err(prefix, "X has no rows")
    if X.ndim != 2:
        if X.ndim == 1 and X.dtype.kind == "O" and any(np.ndim(r) > 0 for r in X):
            raise err(prefix, "the rows of X have different lengths")
        hint = "; for a single feature use X.reshape(-1, 1)" if X.ndim == 1 else ""
        raise err(prefix, f"X must be 2-D (one row per point), got shape {X.shape}{hint}")
    if X.shape[1] == 0:
        raise err(prefix, "X has no feature columns")
    if y.ndim != 1:
        raise err(prefix, f"y must be 1-D (one label per point), got shape {y.shape}")
    if len(y) != len(X):
        raise err(prefix, f"X has {plural(len(X), 'row')} but y has {plural(len(y), 'label')}")
    points = _exact_rows(X, prefix)
    labels = _array_labels(y, prefix)
    if npz:  # the CSV rule for labels
        labels = text_labels(labels)
    groups, floats = None, None
    if X.dtype.kind in "biu":  # equal rows of integers are equal points
        groups = row_groups(X)
    elif X.dtype.kind == "f" and X.dtype.itemsize <= 8:  # so are equal floats (+0.0 for -0.0)
        floats = X.astype(np.float64) + 0.0
        groups = row_groups(floats.view(np.int64))
    return merge(points, labels, range(len(X)), "row", source, prefix, groups, floats)


def _exact_rows(X: np.ndarray, prefix: str | None) -> list[tuple[fmpq, ...]]:
    """The exact value of every entry of a 2-D array, row by row."""
    kind = X.dtype.kind
    if kind in "biu":
        return [tuple(fmpq(int(v)) for v in row) for row in X.tolist()]
    if kind == "f":
        finite = np.isfinite(X)
        if not finite.all():
            rs, cs = np.nonzero(~finite)
            r, c = int(rs[0]), int(cs[0])
            first = f"non-finite value {float(X[r, c])!r} at row {r}, column {c}"
            raise first_of(prefix, "row", [(r, first), *((int(i), "") for i in rs[1:])])
        if X.dtype.itemsize <= 8:  # float16/32/64 widen to float64 exactly
            rows = X.astype(np.float64).tolist()
            return [tuple(fmpq(*v.as_integer_ratio()) for v in row) for row in rows]
        return [tuple(_exact_np_float(v) for v in row) for row in X]
    rows, bad = [], []
    for r, row in enumerate(X):
        point = []
        for c, v in enumerate(row):
            try:
                point.append(_exact_element(v))
            except ValueError as e:
                bad.append((r, f"{e} value {show(v)} at row {r}, column {c}"))
        rows.append(tuple(point))
    if bad:
        raise first_of(prefix, "row", bad)
    return rows


def _exact_np_float(v: np.floating) -> fmpq:
    return exact(Fraction(*v.as_integer_ratio()))


def _exact_element(v: Any) -> fmpq:
    """One entry of an object array; ValueError('non-numeric' or 'non-finite') otherwise."""
    if isinstance(v, (bool, np.bool_)):
        return fmpq(int(v))
    if isinstance(v, bytes):
        raise ValueError("non-numeric")
    if isinstance(v, str):  # read as the CSV reader does: "0.1" is 1/10, "3/4", "1e-5"
        try:
            return exact(v.strip())
        except ValueError:
            raise ValueError("non-numeric") from None
    try:
        if isinstance(v, np.floating) and not isinstance(v, float):
            return _exact_np_float(v)
        return exact(v)
    except (ValueError, OverflowError):
        pass
    try:
        finite = math.isfinite(v)
    except (TypeError, ValueError, OverflowError):
        finite = True
    raise ValueError("non-numeric" if finite else "non-finite")


def _array_labels(y: np.ndarray, prefix: str | None) -> list[Label]:
    if y.dtype.names is not None or y.dtype.kind not in "biufUSO":
        raise err(prefix, f"labels must be integers or strings, got dtype {y.dtype}")
    labels: list[Label] = []
    bad: list[tuple[int, str]] = []
    for i, v in enumerate(y.tolist()):
        try:
            labels.append(_label(v))
        except ValueError as e:
            bad.append((i, f"{e} at row {i}"))
    if bad:
        raise first_of(prefix, "row", bad)
    return labels


def _label(v: Any) -> Label:
    """One array label as int or str; ValueError describing the problem otherwise."""
    if isinstance(v, (bool, np.bool_, Integral)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        try:
            p, q = v.as_integer_ratio()
        except (ValueError, OverflowError):
            q = 0
        if q != 1:
            raise ValueError(f"non-integral label {show(v)}")
        return int(p)
    if isinstance(v, bytes):
        try:
            v = v.decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"non-UTF-8 label {show(v)}") from None
    if isinstance(v, str):
        if not v:
            raise ValueError("empty label")
        return str(v)
    raise ValueError(f"unsupported label {show(v)} (not an integer or a string)")
