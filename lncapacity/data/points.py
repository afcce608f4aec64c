"""Labeled point sets: the :class:`PointSet`, equal rows merged, and the messages that name
rows and lines (every reader's, :mod:`lncapacity.data`)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

import numpy as np
from flint import fmpq

from ..arith import to_floats
from ..errors import InputError
from ..model import Label

__all__ = ["Label", "PointSet", "merge", "named_labels", "text_labels"]

SHOWN = 5  # at most this many lines/rows/columns are named in one message
_INT_LABEL = re.compile(r"[+-]?[0-9]{1,4000}")  # int() refuses more than 4300 digits
"""Integer literals (ASCII digits): in files, labels that all are one are read as ints."""
_INT_LABELS = re.compile(r"(?:[+-]?[0-9]{1,4000}\n)*[+-]?[0-9]{1,4000}")
"""Integer literals, one a line."""


@dataclass(frozen=True)
class PointSet:
    """A labeled point set with exact rational coordinates.

    :func:`~lncapacity.data.load_points` and :func:`~lncapacity.data.points_from_arrays`
    guarantee: at least one point and one feature; every point has ``d`` coordinates, all
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
    _floats: np.ndarray | None = field(default=None, init=False, compare=False, repr=False)
    """:meth:`floats`, once computed (the readers that have it at hand set it)."""

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
        if self._floats is None:
            flat = to_floats(list(chain.from_iterable(self.X)))
            self._keep_floats(np.array(flat, dtype=np.float64).reshape(self.m, self.d))
        assert self._floats is not None
        return self._floats.copy()

    def _keep_floats(self, floats: np.ndarray) -> None:
        """Remember :meth:`floats` (``X`` correctly rounded, computed by whoever had it)."""
        floats = np.array(floats, dtype=np.float64)  # a copy of its own, read-only
        floats.setflags(write=False)
        object.__setattr__(self, "_floats", floats)


# ---------------------------------------------------------------------------
# messages


def named_labels(text: str, present: Sequence[Any]) -> str:
    """``text`` with "label 1" (a construction's number for the classes present, in order)
    as "label" and the class it numbers."""

    def name(m: re.Match[str]) -> str:
        i = int(m.group(1))
        return f"label {present[i]}" if i < len(present) else m.group(0)

    return re.sub(r"\blabel (\d+)\b", name, text)


def err(prefix: str | None, msg: str) -> InputError:
    text = f"{prefix}: {msg}" if prefix else msg
    return InputError(" ".join(text.splitlines()))


def enum(items: Sequence[str], limit: int = SHOWN) -> str:
    """'a', 'a and b', 'a, b and c', 'a, b, c, d, e and 3 more'."""
    shown, rest = list(items[:limit]), len(items) - limit
    if rest > 0:
        return ", ".join(shown) + f" and {rest} more"
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]


def places_text(unit: str, places: Sequence[int], limit: int = SHOWN) -> str:
    """'line 4', 'lines 3 and 7', 'rows 0, 1, 2, 3, 4 and 9 more' (duplicates dropped)."""
    ps = list(dict.fromkeys(places))
    return f"{unit}{'s' if len(ps) > 1 else ''} {enum([str(p) for p in ps], limit)}"


def first_of(prefix: str | None, unit: str, items: Sequence[tuple[int, str]]) -> InputError:
    """The first problem in full, then the other places with problems of the same kind."""
    place, detail = items[0]
    rest = [p for p, _ in items[1:] if p != place]
    also = f"; also {places_text(unit, rest, SHOWN - 1)}" if rest else ""
    return err(prefix, detail + also)


def show(v: Any) -> str:
    if isinstance(v, np.generic):
        v = v.item()
    s = repr(v)
    return s if len(s) <= 40 else s[:37] + "..."


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def text_labels(texts: Sequence[Label]) -> list[Label]:
    """The label rule of every file reader (CSV, ``.npz``): when every label is an integer
    literal (``"0"``, ``"-3"``, ``"+07"``: ASCII digits) they are all read as ints, otherwise
    they all stay strings.  The Python API keeps labels as given."""
    if _all_int_labels(texts):
        return list(map(int, texts))  # type: ignore[arg-type]
    return list(texts)


def _all_int_labels(texts: Sequence[Label]) -> bool:
    """Whether every label is an integer literal: one match over the labels joined by new
    lines when none holds one (a million labels at C speed), else one match each."""
    if not all(issubclass(kind, str) for kind in set(map(type, texts))):
        return False
    joined = "\n".join(texts)  # type: ignore[arg-type]
    if joined.count("\n") == len(texts) - 1:
        return _INT_LABELS.fullmatch(joined) is not None
    return all(_INT_LABEL.fullmatch(t) for t in texts)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------
# merging


def merge(
    points: Sequence[tuple[fmpq, ...]],
    labels: Sequence[Label],
    places: Sequence[int],
    unit: str,
    source: str,
    prefix: str | None,
    groups: tuple[list[int], bool] | None = None,
    floats: np.ndarray | None = None,
) -> PointSet:
    """Merge equal points with equal labels; equal points with different labels are an error.

    ``groups`` (:func:`lncapacity.columns.row_groups` of keys that are equal exactly for
    equal points) saves keying the points by their numbers; ``floats`` (the points
    correctly rounded, a row each) becomes the set's ``PointSet.floats()``."""
    kinds = set(map(type, labels))
    if kinds - {int} and kinds - {str}:  # not all ints, nor all strings
        first_int = next((k for k, lab in enumerate(labels) if isinstance(lab, int)), None)
        first_str = next((k for k, lab in enumerate(labels) if isinstance(lab, str)), None)
        if first_int is not None and first_str is not None:
            a, b = sorted((first_int, first_str))
            raise err(
                prefix,
                f"labels mix numbers and strings: {unit} {places[a]} has {show(labels[a])}"
                f" but {unit} {places[b]} has {show(labels[b])}",
            )
    if groups is not None and not groups[1]:  # no two points equal
        out = PointSet(tuple(points), tuple(labels), tuple(zip(places)), unit, source)
        if floats is not None:
            out._keep_floats(floats)
        return out
    # keyed by numerators and denominators (fmpq is in lowest terms): an fmpq's own hash
    # goes through fractions.Fraction, five times slower
    keys: Iterable[Any] = (
        groups[0] if groups is not None else (tuple((v.p, v.q) for v in point) for point in points)
    )
    index: dict[Any, int] = {}
    X: list[tuple[fmpq, ...]] = []
    y: list[Label] = []
    origins: list[list[int]] = []
    conflicts: list[tuple[int, str]] = []
    kept: list[int] = []
    rows = zip(points, labels, places, keys, strict=True)
    for row, (point, label, place, key) in enumerate(rows):
        k = index.get(key)
        if k is None:
            index[key] = len(X)
            X.append(point)
            y.append(label)
            origins.append([place])
            kept.append(row)
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
        raise first_of(prefix, unit, conflicts)
    out = PointSet(tuple(X), tuple(y), tuple(tuple(o) for o in origins), unit, source)
    if floats is not None:
        out._keep_floats(floats[kept])
    return out
