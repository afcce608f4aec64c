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


def merge_history(net: LNNet[fmpq], trace: Trace, labels: np.ndarray) -> list[list[list[int]]]:
    """The groups of merged values each layer forms: per layer, a list of point lists.

    A *merged group* is a set of points whose values the construction treats as
    one.  For a layer of kind ``"pma"`` (construction metadata), the paper's rule
    applied to the groups so far: the group of the smallest value joins the group
    of the nearest larger value of its label (Algorithm 1 of Ni et al. 2024;
    lncapacity/construct/pma.py emulates these merges with rational centres, leaving the
    pair a gap of up to a few tenths of its old one).  At every layer, also the values that
    :func:`merges_at` finds equal.  Values come from ``trace``.  Each entry lists
    every point of the new group, sorted.
    """
    root = np.arange(len(labels))
    out: list[list[list[int]]] = []
    for layer in range(1, trace.depth + 1):
        v0, v1 = trace.values[layer - 1], trace.values[layer]
        formed: list[list[int]] = []
        if v0 is None or v1 is None:
            out.append(formed)
            continue
        pairs = merges_at(v1, labels, trace.amplitude[layer])
        if net.layers[layer - 1].meta.get("kind") == "pma":
            order = np.argsort(v0, kind="stable")
            first = order[0]
            partner = next(
                (k for k in order[1:] if labels[k] == labels[first] and root[k] != root[first]),
                None,
            )
            if partner is not None:
                pairs.insert(0, (int(first), int(partner)))
        for a, b in pairs:
            ra, rb = root[a], root[b]
            if ra == rb:
                continue
            root[root == rb] = ra
            members = np.nonzero(root == ra)[0].tolist()
            formed = [g for g in formed if not set(g) <= set(members)]
            formed.append(members)
        out.append(formed)
    return out


def column_gaps(values: Sequence[arb], labels: Sequence[Any], amplitude: float) -> dict[str, Any]:
    """The order, label runs and smallest label gap of one column of balls."""
    order = sorted(range(len(values)), key=lambda i: values[i].mid())
    runs = label_runs(order, labels)
    label_gap, positive, where = math.inf, True, None
    for a, b in itertools.pairwise(order):
        gap = values[b] - values[a]
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
