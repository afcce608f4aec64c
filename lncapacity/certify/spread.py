"""The certificate in spans of points, on every core or on a Dask cluster.

The float64 interval passes treat each point on its own, so :func:`certify
<lncapacity.certify.certify>` cuts the points into spans and runs the pass of each span as one
task (:func:`interval_span`), and the points it leaves undecided in chunks of
``lncapacity.certify.CHUNK`` as ball tasks (:func:`ball_chunk`), over the process pool or
a Dask cluster (:func:`lncapacity.cluster.mapper`).  What every task needs (the net, the
points, the labels) goes to each worker once.  The spans follow from the net and the number
of points alone (:func:`spans`), never from the number of processes, so the certificate is
the same, bit for bit, on one process, on sixteen, and on a cluster.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from flint import fmpq

from ..model import LNNet
from . import intervals
from .balls import _certify_chunk
from .chains import scalar_interval_pass
from .intervals import interval_layers, interval_pass

SPANS = 64
"""Spans a large point set is cut into (at least; enough for 16 processes to share evenly)."""

SPAN_WORK = 1 << 18
"""Points times features (of every layer) of one span, at most (unless one point is more)."""

MIN_SPAN_WORK = 1 << 14
"""Points times features of one span, at least (unless there are fewer): a task worth sending."""

SPREAD_WORK = 1 << 20
"""Points times features (of every layer) from which the interval pass is spread over
processes by default."""


def work(net: LNNet[Any], m: int) -> int:
    """Points times features of every layer: the size of the interval pass."""
    return m * (net.input_dim + sum(net.widths) + len(net.classes))


def spans(net: LNNet[Any], m: int) -> list[tuple[int, int]]:
    """The spans ``(start, stop)`` of :func:`interval_span`: for nets with LN-G layers the
    grouped pass's tasks (:data:`~lncapacity.certify.intervals.GROUPED_TASK` points times
    features of the widest layer), else :data:`SPANS` of them where that makes spans of
    :data:`MIN_SPAN_WORK` to :data:`SPAN_WORK` points times features (fewer, larger or smaller
    ones where it does not)."""
    if net.grouped:
        size = max(1, intervals.GROUPED_TASK // max(net.input_dim, *net.widths))
    else:
        per_point = work(net, 1)
        size = max(-(-MIN_SPAN_WORK // per_point), min(-(-m // SPANS), SPAN_WORK // per_point))
    return [(s, min(s + size, m)) for s in range(0, m, size)]


@dataclass(frozen=True)
class Plan:
    """What every task of one certificate needs: the net (folded), its scalar chain or
    rank-one tail if it has one, the points and their labels (indices of classes)."""

    net: LNNet[fmpq]
    chain: Any
    split: tuple[int, Any] | None
    X: Sequence[Sequence[fmpq]]
    labels: Sequence[int]
    max_precision: int
    scores: bool


def interval_span(
    plan: Plan, span: tuple[int, int]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The float64 interval pass of the points ``start`` to ``stop - 1``: margins and scores
    enclosed as :func:`~lncapacity.certify.intervals.interval_pass` encloses them."""
    start, stop = span
    X, labels, net = plan.X[start:stop], plan.labels[start:stop], plan.net
    with np.errstate(all="ignore"):  # overflow and NaN leave points undecided, silently
        if plan.chain is not None:
            return scalar_interval_pass(plan.chain, X, labels)
        if plan.split is not None:  # general layers, then a rank-one tail (circle + runs)
            j, tail = plan.split
            return scalar_interval_pass(tail, X, labels, interval_layers(net, X, net.layers[:j]))
        return interval_pass(net, X, labels, 1)


def ball_chunk(plan: Plan, indices: Sequence[int]) -> list[Any]:
    """The points ``indices`` in balls at rising precision (``_certify_chunk``)."""
    jobs = [(k, plan.X[k], plan.labels[k]) for k in indices]
    return _certify_chunk((plan.net, jobs, plan.max_precision, plan.scores))
