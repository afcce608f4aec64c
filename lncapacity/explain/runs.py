"""Label runs, merged values and label gaps of the columns of values.

Sorted by value, a column splits into label runs (:func:`label_runs`); values merge at a
layer (:func:`merges_at`, :func:`merge_history`, with the paper's rule at a ``pma``
layer); :func:`column_gaps` gives a column of balls' order, runs and smallest label gap
(:func:`float_column_gaps` in float64; proofs/float_gap.md).  The terms are those of
:mod:`lncapacity.explain`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from flint import arb, fmpq

from ..arith import to_float
from ..model import LNNet
from .trace import Trace

__all__ = [
    "MERGE_RTOL",
    "column_gaps",
    "float_column_gaps",
    "label_runs",
    "merge_history",
    "merge_representatives",
    "merges_at",
]


MERGE_RTOL = 1e-9
"""Same-label values closer than this times the amplitude count as merged."""


def label_runs(order: Sequence[int], labels: Sequence[Any]) -> list[list[int]]:
    """Split point indices listed in value order into maximal blocks of one label."""
    runs: list[list[int]] = []
    for k in order:
        if runs and labels[runs[-1][-1]] == labels[k]:
            runs[-1].append(k)
        else:
            runs.append([k])
    return runs


def merges_at(after: np.ndarray, labels: np.ndarray, amplitude: float) -> list[tuple[int, int]]:
    """Neighbours of one label closer than ``MERGE_RTOL`` of the amplitude, as point indices."""
    order = np.argsort(after, kind="stable")
    a, b = order[:-1], order[1:]
    with np.errstate(all="ignore"):
        hit = (labels[a] == labels[b]) & ((after[b] - after[a]) / amplitude < MERGE_RTOL)
    return [(int(i), int(j)) for i, j in zip(a[hit], b[hit], strict=True)]


class _Groups:
    """Merged groups of points as a union-find: each point's root, each root's members and
    smallest point.  A join relabels the smaller group (small into large), so joins cost
    ``O(m log m)`` in all, whatever their order."""

    def __init__(self, m: int) -> None:
        self.root = np.arange(m)
        self.members: dict[int, list[int]] = {i: [i] for i in range(m)}

    def join(self, a: int, b: int) -> int | None:
        """Join the groups of points ``a`` and ``b``: the root of the group, or None if they
        were one group already (then nothing changes)."""
        ra, rb = int(self.root[a]), int(self.root[b])
        if ra == rb:
            return None
        if len(self.members[ra]) < len(self.members[rb]):
            ra, rb = rb, ra
        moved = self.members.pop(rb)
        self.root[moved] = ra
        self.members[ra] += moved
        return ra

    def smallest(self) -> np.ndarray:
        """Each point's group named by its smallest point."""
        low = {r: min(g) for r, g in self.members.items()}
        return np.array([low[r] for r in self.root.tolist()], dtype=np.intp)


def _layer_joins(
    net: LNNet[fmpq], trace: Trace, labels: np.ndarray, groups: _Groups, layer: int
) -> list[int]:
    """Join the groups layer ``layer`` merges (see :func:`merge_history`) in ``groups``; the
    roots of the groups it formed, in the order each was last joined."""
    v0, v1 = trace.values[layer - 1], trace.values[layer]
    if v0 is None or v1 is None:
        return []
    pairs = merges_at(v1, labels, trace.amplitude[layer])
    if net.layers[layer - 1].meta.get("kind") == "pma":
        order = np.argsort(v0, kind="stable")
        first, rest = order[0], order[1:]
        mine = (labels[rest] == labels[first]) & (groups.root[rest] != groups.root[first])
        if np.any(mine):
            pairs.insert(0, (int(first), int(rest[np.argmax(mine)])))
    formed: dict[int, None] = {}  # roots, in the order of their last join
    for a, b in pairs:
        ra, rb = int(groups.root[a]), int(groups.root[b])
        r = groups.join(a, b)
        if r is not None:
            formed.pop(ra, None)
            formed.pop(rb, None)
            formed[r] = None
    return list(formed)


def merge_history(net: LNNet[fmpq], trace: Trace, labels: np.ndarray) -> list[list[list[int]]]:
    """The groups of merged values each layer forms: per layer, a list of point lists.

    A *merged group* is a set of points whose values the construction treats as
    one.  For a layer of kind ``"pma"`` (construction metadata), the paper's rule
    applied to the groups so far: the group of the smallest value joins the group
    of the nearest larger value of its label (Algorithm 1 of Ni et al. 2024;
    lncapacity/construct/pma.py emulates these merges with rational centres, leaving the
    pair a gap of up to a few tenths of its old one).  At every layer, also the values that
    :func:`merges_at` finds equal.  Values come from ``trace``.  Each entry lists
    every point of the new group, sorted; groups are joined small into large, so a layer
    costs ``O(m log m)`` besides the groups it lists.
    """
    groups = _Groups(len(labels))
    return [
        [sorted(groups.members[r]) for r in _layer_joins(net, trace, labels, groups, layer)]
        for layer in range(1, trace.depth + 1)
    ]


def merge_representatives(
    net: LNNet[fmpq], trace: Trace, labels: np.ndarray, columns: Sequence[int] | None = None
) -> dict[int, np.ndarray]:
    """For each column in ``columns`` (default: every column ``0..L``), a representative per
    point: the smallest point of its merged group (:func:`merge_history`) after that
    column's layer.  ``O(m log m)`` a layer, and memory for the columns asked only."""
    keep = set(range(trace.depth + 1) if columns is None else columns)
    groups = _Groups(len(labels))
    out = {0: groups.smallest()} if 0 in keep else {}
    for layer in range(1, max(keep, default=0) + 1):
        _layer_joins(net, trace, labels, groups, layer)
        if layer in keep:
            out[layer] = groups.smallest()
    return out


def column_gaps(
    values: Sequence[arb], labels: Sequence[Any], amplitude: float | arb
) -> dict[str, Any]:
    """The order, label runs and smallest label gap of one column of balls (over the
    column's ``amplitude``: a ball, from exact weights, or the float trace's)."""
    order = sorted(range(len(values)), key=lambda i: values[i].mid())
    runs = label_runs(order, labels)
    label_gap, positive, where = math.inf, True, None
    for a, b in itertools.pairwise(order):
        gap = values[b] - values[a]
        if isinstance(amplitude, arb):
            mid = to_float((gap / amplitude).mid())
        else:
            mid = to_float(gap.mid()) / amplitude
        if labels[a] != labels[b]:
            if mid < label_gap:
                label_gap, positive, where = mid, bool(gap > 0), (a, b)
    return {
        "order": order,
        "runs": runs,
        "label_gap": label_gap,
        "label_gap_certain": positive,
        "label_gap_points": where,
    }


def float_column_gaps(
    values: np.ndarray, labels: Sequence[Any], amplitude: float
) -> dict[str, Any]:
    """As :func:`column_gaps`, in float64 (nets without a scalar chain)."""
    return column_gaps([arb(to_float(v)) for v in values], labels, amplitude)
