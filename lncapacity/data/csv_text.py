"""CSV files as labeled point sets: strict quoting, exact values, every problem named.

A file is read as records (``_records``: split at new lines and commas when it has no
quotes, else by the ``csv`` module), then a column at a time (``_points``: plain
decimals in bulk by :func:`lncapacity.columns.decimal_column`, any other text as
``_parse_value`` reads it).  A file with a problem is read again row by row
(``_points_by_row``), which names the problem: the same values and the same messages,
whichever route.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from itertools import repeat
from pathlib import Path

import numpy as np
from flint import fmpq

from ..arith import exact, to_float
from ..columns import decimal_column, row_groups
from .points import PointSet, enum, err, first_of, merge, plural, show, text_labels

__all__ = ["load_csv"]

Records = tuple[list[int], list[list[str]]]
"""The non-blank records of a file: the line each starts on, and its fields (stripped)."""


def load_csv(path: Path, name: str) -> PointSet:
    """The point set of a CSV file (:func:`lncapacity.data.load_points`)."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise err(name, f"cannot read ({e.strerror or e})") from None
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise err(name, f"not UTF-8 text (invalid byte on line {line})") from None
    table = _table(text)
    if table is not None:
        header, columns = table
        lab, feats = _label_column(header, 1, name)
        points = _points(columns, lab, feats, range(2, len(columns[0]) + 2), name)
        if points is not None:
            return points
    lines, rows = _records(text, name)
    if not rows:
        raise err(name, "is empty")
    header = rows[0]
    lab, feats = _label_column(header, lines[0], name)
    if len(rows) == 1:
        raise err(name, "has no data rows")
    if set(map(len, rows[1:])) == {len(header)}:
        points = _points(list(zip(*rows[1:], strict=True)), lab, feats, lines[1:], name)
        if points is not None:
            return points
    return _points_by_row((lines[1:], rows[1:]), header, lab, feats, name)


def _label_column(header: list[str], hline: int, name: str) -> tuple[int, list[int]]:
    """The label's column and the features' (the others), or :class:`InputError`."""
    label_cols = [j for j, h in enumerate(header) if h.casefold() == "label"]
    if not label_cols:
        found = enum([repr(h) for h in header])
        cols = "column" if len(header) == 1 else "columns"
        raise err(name, f"no 'label' column in the header (line {hline}); found {cols} {found}")
    if len(label_cols) > 1:
        where = enum([str(j + 1) for j in label_cols])
        raise err(name, f"the header (line {hline}) names more than one column 'label' ({where})")
    lab = label_cols[0]
    feats = [j for j in range(len(header)) if j != lab]
    if not feats:
        raise err(name, f"no feature columns: the header (line {hline}) has only 'label'")
    return lab, feats


def _points(
    columns: Sequence[Sequence[str]],
    lab: int,
    feats: list[int],
    lines: Sequence[int],
    name: str,
) -> PointSet | None:
    """The point set of the data rows, a column at a time (``columns[j]``, the texts of
    column ``j``, one for each of ``lines``): the plain decimals in bulk
    (:func:`lncapacity.columns.decimal_column`), every other text as ``_parse_value``
    reads it.  None at the first problem: ``_points_by_row`` names it."""
    if "" in columns[lab]:
        return None
    values, floats, keys = [], [], []
    for j in feats:
        col = decimal_column(columns[j])
        column_values, column_floats = col.values, col.floats
        if not col.done.all():
            column_floats = column_floats.copy()
            for i in np.nonzero(~col.done)[0].tolist():
                try:
                    v = _parse_value(columns[j][i])
                except ValueError:
                    return None
                column_values[i], column_floats[i] = v, to_float(v)
        values.append(column_values)
        floats.append(column_floats)
        keys.append(col.keys if col.done.all() else None)
    # decimal keys say which rows are equal only when every text of every column had one
    groups = None if any(k is None for k in keys) else row_groups(np.concatenate(keys, axis=1))
    points = list(zip(*values, strict=True))
    labels = text_labels(columns[lab])
    return merge(points, labels, lines, "line", name, name, groups, np.stack(floats, axis=1))


def _points_by_row(
    body: Records, header: list[str], lab: int, feats: list[int], name: str
) -> PointSet:
    """``_points`` row by row, every problem collected and the first kind named."""
    ragged: list[tuple[int, str]] = []
    empty: list[tuple[int, str]] = []
    bad: list[tuple[int, str]] = []
    points: list[tuple[fmpq, ...]] = []
    texts: list[str] = []
    lines: list[int] = []
    for line, fields in zip(*body, strict=True):
        if len(fields) != len(header):
            n = plural(len(fields), "field")
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
            raise first_of(name, "line", problems)

    return merge(points, text_labels(texts), lines, "line", name, name)


def _records(text: str, name: str) -> Records:
    """The non-blank records with the line each starts on, fields stripped."""
    reader = csv.reader(io.StringIO(text, newline=""), skipinitialspace=True, strict=True)
    lines: list[int] = []
    rows: list[list[str]] = []
    start = 1
    try:
        for row in reader:
            if len(row) > 1 or (row and row[0].strip()):
                lines.append(start)
                rows.append([f.strip() for f in row])
            start = reader.line_num + 1
    except csv.Error as e:
        raise err(name, f"line {start} is not valid CSV ({e})") from None
    return lines, rows


_SPACES = " \t\x0b\x0c\x1c\x1d\x1e\x1f"
"""The ASCII characters besides new lines that ``str.strip`` removes."""


def _table(text: str) -> tuple[list[str], list[list[str]]] | None:
    """The header and the columns of a plain table: a header line and at least one data
    line, each with as many commas, no blank line but a last empty one, no quote, NUL or
    lone carriage return, no line beyond the ``csv`` module's field size limit.  What the
    ``csv`` module makes of such text, without a list for each row; None for any other
    text (then ``_records`` reads it)."""
    if '"' in text or "\0" in text:
        return None
    if "\r" in text:
        if text.count("\r") != text.count("\r\n"):
            return None
        text = text.replace("\r\n", "\n")
    lines = text.removesuffix("\n").split("\n")
    if len(lines) < 2 or max(map(len, lines)) > csv.field_size_limit():
        return None
    spaces = not text.isascii() or any(c in text for c in _SPACES)
    if "" in (map(str.strip, lines) if spaces else lines):  # a blank line
        return None
    commas = set(map(str.count, lines, repeat(",")))
    if len(commas) != 1:
        return None
    fields = ",".join(lines).split(",")
    if spaces:
        fields = list(map(str.strip, fields))
    n = commas.pop() + 1
    return fields[:n], [fields[n + j :: n] for j in range(n)]


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
    raise ValueError(f"{'non-numeric' if finite else 'non-finite'} value {show(t)}")
