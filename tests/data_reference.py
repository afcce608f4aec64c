"""The point-set reader of lncapacity before its bulk reader (commit d465ddd), verbatim but for
the imports and its ``.npy`` and ``.npz`` file readers (which the bulk reader did not change):
the reference the tests compare :mod:`lncapacity.data` with (the same point sets, the same
messages).

Labeled point sets: loading and validation, with exact coordinates.

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

import csv
import io
import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from numbers import Integral
from pathlib import Path
from typing import Any

import numpy as np
from flint import fmpq

from lncapacity.arith import exact, to_float
from lncapacity.errors import InputError
from lncapacity.model import Label

__all__ = ["Label", "PointSet", "load_points", "points_from_arrays"]


_SHOWN = 5  # at most this many lines/rows/columns are named in one message
_INT_LABEL = re.compile(r"[+-]?[0-9]{1,4000}")  # int() refuses more than 4300 digits
"""Integer literals (ASCII digits): in files, labels that all are one are read as ints."""
_NUMERIC = "biuf"  # numpy dtype kinds accepted as coordinates (bools count as 0/1)


@dataclass(frozen=True)
class PointSet:
    """A labeled point set with exact rational coordinates.

    :func:`load_points` and :func:`points_from_arrays` guarantee: at least one
    point and one feature; every point has ``d`` coordinates, all
    :class:`fmpq`; points are pairwise distinct (rows with the same point and
    the same label are merged, kept in order of first occurrence); labels are
    all ``int`` or all ``str``; ``origins[i]`` lists, in increasing order, the
    source rows merged into point ``i``, counted in ``unit``: ``"line"`` for
    CSV (1-based file line numbers, the header's line included) or ``"row"``
    for arrays (0-based indices).
    """

    X: tuple[tuple[fmpq, ...], ...]
    y: tuple[Label, ...]
    origins: tuple[tuple[int, ...], ...]
    unit: str
    source: str

    @property
    def m(self) -> int:
        """Number of distinct points."""
        return len(self.X)

    @property
    def d(self) -> int:
        """Input dimension."""
        return len(self.X[0]) if self.X else 0

    @property
    def duplicates(self) -> int:
        """Number of source rows merged away (same point, same label)."""
        return sum(len(o) for o in self.origins) - len(self.origins)

    @property
    def classes(self) -> tuple[Label, ...]:
        """The distinct labels, sorted."""
        return tuple(sorted(set(self.y)))  # type: ignore[type-var]

    def floats(self) -> np.ndarray:
        """``X`` as a new float64 array of shape ``(m, d)``, each entry correctly rounded."""
        out = np.empty((self.m, self.d), dtype=np.float64)
        for i, row in enumerate(self.X):
            out[i] = [to_float(v) for v in row]
        return out


# ---------------------------------------------------------------------------
# public entry points


def load_points(path: str | os.PathLike[str]) -> PointSet:
    """Load a labeled point set from a ``.csv`` file.

    * CSV: a header row; the column named ``label`` (any case) holds the labels,
      every other column is a feature, in order.  Labels become ``int`` when
      every one is an integer literal, otherwise they all stay ``str``.  The
      quoting is strict (an unclosed quote is an error).

    Raises :class:`InputError` (one line, naming the file and the offending
    lines or rows) for anything unreadable, malformed or ambiguous.
    """
    name = os.fsdecode(path)
    p = Path(name)
    try:
        if p.is_dir():
            raise _err(name, "is a directory, not a file")
        if not p.exists():
            raise _err(name, "no such file")
    except OSError as e:
        raise _err(name, f"cannot read ({e.strerror or e})") from None
    suffix = p.suffix.lower()
    if suffix == ".csv":
        return _load_csv(p, name)
    kind = f"'{p.suffix}'" if p.suffix else "(no suffix)"
    raise _err(name, f"unsupported file type {kind}; expected .csv, .npy or .npz")


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
# messages


def named_labels(text: str, present: Sequence[Any]) -> str:
    """``text`` with "label 1" (a construction's number for the classes present, in order)
    as "label" and the class it numbers."""

    def name(m: re.Match[str]) -> str:
        i = int(m.group(1))
        return f"label {present[i]}" if i < len(present) else m.group(0)

    return re.sub(r"\blabel (\d+)\b", name, text)


def _err(prefix: str | None, msg: str) -> InputError:
    text = f"{prefix}: {msg}" if prefix else msg
    return InputError(" ".join(text.splitlines()))


def _enum(items: Sequence[str], limit: int = _SHOWN) -> str:
    """'a', 'a and b', 'a, b and c', 'a, b, c, d, e and 3 more'."""
    shown, rest = list(items[:limit]), len(items) - limit
    if rest > 0:
        return ", ".join(shown) + f" and {rest} more"
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]


def _places(unit: str, places: Sequence[int], limit: int = _SHOWN) -> str:
    """'line 4', 'lines 3 and 7', 'rows 0, 1, 2, 3, 4 and 9 more' (duplicates dropped)."""
    ps = list(dict.fromkeys(places))
    return f"{unit}{'s' if len(ps) > 1 else ''} {_enum([str(p) for p in ps], limit)}"


def _first_of(prefix: str | None, unit: str, items: Sequence[tuple[int, str]]) -> InputError:
    """The first problem in full, then the other places with problems of the same kind."""
    place, detail = items[0]
    rest = [p for p, _ in items[1:] if p != place]
    also = f"; also {_places(unit, rest, _SHOWN - 1)}" if rest else ""
    return _err(prefix, detail + also)


def _show(v: Any) -> str:
    if isinstance(v, np.generic):
        v = v.item()
    s = repr(v)
    return s if len(s) <= 40 else s[:37] + "..."


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


# ---------------------------------------------------------------------------
# CSV


def _load_csv(path: Path, name: str) -> PointSet:
    try:
        data = path.read_bytes()
    except OSError as e:
        raise _err(name, f"cannot read ({e.strerror or e})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise _err(name, f"not UTF-8 text (invalid byte on line {line})") from None
    rows = _csv_rows(text.removeprefix("\ufeff"), name)
    if not rows:
        raise _err(name, "is empty")

    hline, header = rows[0]
    label_cols = [j for j, h in enumerate(header) if h.casefold() == "label"]
    if not label_cols:
        found = _enum([repr(h) for h in header])
        cols = "column" if len(header) == 1 else "columns"
        raise _err(name, f"no 'label' column in the header (line {hline}); found {cols} {found}")
    if len(label_cols) > 1:
        where = _enum([str(j + 1) for j in label_cols])
        raise _err(name, f"the header (line {hline}) names more than one column 'label' ({where})")
    lab = label_cols[0]
    feats = [j for j in range(len(header)) if j != lab]
    if not feats:
        raise _err(name, f"no feature columns: the header (line {hline}) has only 'label'")
    body = rows[1:]
    if not body:
        raise _err(name, "has no data rows")

    ragged: list[tuple[int, str]] = []
    empty: list[tuple[int, str]] = []
    bad: list[tuple[int, str]] = []
    points: list[tuple[fmpq, ...]] = []
    texts: list[str] = []
    lines: list[int] = []
    for line, fields in body:
        if len(fields) != len(header):
            n = _plural(len(fields), "field")
            ragged.append((line, f"line {line} has {n}, expected {len(header)}"))
            continue
        if not fields[lab]:
            empty.append((line, f"empty label on line {line}"))
        point = []
        for j in feats:
            try:
                point.append(_parse_value(fields[j]))
            except ValueError as e:
                column = header[j] or f"#{j + 1}"
                bad.append((line, f"{e} at line {line}, column {column}"))
        points.append(tuple(point))
        texts.append(fields[lab])
        lines.append(line)
    for problems in (ragged, empty, bad):
        if problems:
            raise _first_of(name, "line", problems)

    return _build(points, _text_labels(texts), lines, "line", name, name)


def _text_labels(texts: Sequence[Label]) -> list[Label]:
    """The label rule of every file reader (CSV, ``.npz``): when every label is an integer
    literal (``"0"``, ``"-3"``, ``"+07"``: ASCII digits) they are all read as ints, otherwise
    they all stay strings.  The Python API keeps labels as given."""
    if all(isinstance(t, str) and _INT_LABEL.fullmatch(t) for t in texts):
        return [int(t) for t in texts]  # type: ignore[arg-type]
    return list(texts)


def _csv_rows(text: str, name: str) -> list[tuple[int, list[str]]]:
    """The non-blank records with the line each starts on, fields stripped."""
    reader = csv.reader(io.StringIO(text, newline=""), skipinitialspace=True, strict=True)
    rows: list[tuple[int, list[str]]] = []
    start = 1
    try:
        for row in reader:
            if len(row) > 1 or (row and row[0].strip()):
                rows.append((start, [f.strip() for f in row]))
            start = reader.line_num + 1
    except csv.Error as e:
        raise _err(name, f"line {start} is not valid CSV ({e})") from None
    return rows


def _parse_value(t: str) -> fmpq:
    """The exact value of one CSV feature; ValueError describing the problem otherwise."""
    if not t:
        raise ValueError("empty value")
    try:
        return exact(t)
    except ValueError as e:
        if "out of range" in str(e) or "digits" in str(e):
            raise ValueError(f"value {e}") from None
    try:
        finite = math.isfinite(float(t))
    except (ValueError, OverflowError):
        finite = True
    raise ValueError(f"{'non-numeric' if finite else 'non-finite'} value {_show(t)}")


# ---------------------------------------------------------------------------
# arrays


def _as_array(a: Any, what: str) -> np.ndarray:
    """numpy data keep their dtype; anything else is taken element by element."""
    try:
        if isinstance(a, np.ndarray) or hasattr(a, "__array__"):
            return np.asarray(a)
        return np.asarray(a, dtype=object)
    except (ValueError, TypeError) as e:
        raise _err(None, f"{what} is not an array ({e})") from None


def _from_arrays(
    X: np.ndarray, y: np.ndarray, prefix: str | None, source: str, text_labels: bool = False
) -> PointSet:
    text = "U" if prefix is None else ""  # the Python API reads number strings, as CSV does
    if X.dtype.names is not None or X.dtype.kind not in _NUMERIC + "O" + text:
        raise _err(prefix, f"X must hold numbers, got dtype {X.dtype}")
    if X.ndim >= 1 and X.shape[0] == 0:
        raise _err(prefix, "X has no rows")
    if X.ndim != 2:
        if X.ndim == 1 and X.dtype.kind == "O" and any(np.ndim(r) > 0 for r in X):
            raise _err(prefix, "the rows of X have different lengths")
        hint = "; for a single feature use X.reshape(-1, 1)" if X.ndim == 1 else ""
        raise _err(prefix, f"X must be 2-D (one row per point), got shape {X.shape}{hint}")
    if X.shape[1] == 0:
        raise _err(prefix, "X has no feature columns")
    if y.ndim != 1:
        raise _err(prefix, f"y must be 1-D (one label per point), got shape {y.shape}")
    if len(y) != len(X):
        raise _err(prefix, f"X has {_plural(len(X), 'row')} but y has {_plural(len(y), 'label')}")
    points = _exact_rows(X, prefix)
    labels = _array_labels(y, prefix)
    if text_labels:
        labels = _text_labels(labels)
    return _build(points, labels, range(len(X)), "row", source, prefix)


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
            raise _first_of(prefix, "row", [(r, first), *((int(i), "") for i in rs[1:])])
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
                bad.append((r, f"{e} value {_show(v)} at row {r}, column {c}"))
        rows.append(tuple(point))
    if bad:
        raise _first_of(prefix, "row", bad)
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
        raise _err(prefix, f"labels must be integers or strings, got dtype {y.dtype}")
    labels: list[Label] = []
    bad: list[tuple[int, str]] = []
    for i, v in enumerate(y.tolist()):
        try:
            labels.append(_label(v))
        except ValueError as e:
            bad.append((i, f"{e} at row {i}"))
    if bad:
        raise _first_of(prefix, "row", bad)
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
            raise ValueError(f"non-integral label {_show(v)}")
        return int(p)
    if isinstance(v, bytes):
        try:
            v = v.decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"non-UTF-8 label {_show(v)}") from None
    if isinstance(v, str):
        if not v:
            raise ValueError("empty label")
        return str(v)
    raise ValueError(f"unsupported label {_show(v)} (not an integer or a string)")


# ---------------------------------------------------------------------------
# merging


def _build(
    points: Sequence[tuple[fmpq, ...]],
    labels: Sequence[Label],
    places: Sequence[int],
    unit: str,
    source: str,
    prefix: str | None,
) -> PointSet:
    """Merge equal points with equal labels; equal points with different labels are an error."""
    first_int = next((k for k, lab in enumerate(labels) if isinstance(lab, int)), None)
    first_str = next((k for k, lab in enumerate(labels) if isinstance(lab, str)), None)
    if first_int is not None and first_str is not None:
        a, b = sorted((first_int, first_str))
        raise _err(
            prefix,
            f"labels mix numbers and strings: {unit} {places[a]} has {_show(labels[a])}"
            f" but {unit} {places[b]} has {_show(labels[b])}",
        )
    # keyed by numerators and denominators (fmpq is in lowest terms): an fmpq's own hash
    # goes through fractions.Fraction, five times slower
    index: dict[tuple[tuple[Any, Any], ...], int] = {}
    X: list[tuple[fmpq, ...]] = []
    y: list[Label] = []
    origins: list[list[int]] = []
    conflicts: list[tuple[int, str]] = []
    for point, label, place in zip(points, labels, places, strict=True):
        key = tuple((v.p, v.q) for v in point)
        k = index.get(key)
        if k is None:
            index[key] = len(X)
            X.append(point)
            y.append(label)
            origins.append([place])
        elif y[k] == label:
            origins[k].append(place)
        else:
            conflicts.append(
                (
                    place,
                    f"{unit}s {origins[k][0]} and {place}: the same point with different"
                    f" labels {str(y[k])!r} and {str(label)!r}",
                )
            )
    if conflicts:
        raise _first_of(prefix, unit, conflicts)
    return PointSet(tuple(X), tuple(y), tuple(tuple(o) for o in origins), unit, source)
