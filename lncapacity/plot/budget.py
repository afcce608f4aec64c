"""How much a picture draws: a sample of the points and a grid of the plane, bounded by the
net's size before any work begins.

A picture of ``m`` points costs ``m`` float64 passes through the net, each about
:func:`point_cost` multiply-adds, and holds ``m`` rows of the widest layer; a grid of the
plane costs the same per cell; a certificate of the points, ``m`` times
:func:`certify_cost`.  The pictures (``lncapacity plot``, ``lncapacity explore``) spend at
most :data:`WORK`, :data:`TRACE_NUMBERS` and :data:`CERTIFY_WORK` of these: beyond them they
draw a sample of the points (:func:`sample_points`: at random with a fixed seed, every class
kept, and they say so), a coarser grid (:func:`grid_side`) or none, and no certificate.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..certify import scalar_chain
from ..data import PointSet
from ..model import LNNet

__all__ = [
    "CERTIFY_WORK",
    "GRID_LEAST",
    "MAX_POINTS",
    "TRACE_NUMBERS",
    "WORK",
    "affordable_points",
    "certify_cost",
    "grid_side",
    "point_cost",
    "sample_note",
    "sample_points",
]

MAX_POINTS = 2_000
"""Points ``lncapacity plot`` draws at most (a sample beyond)."""
WORK = 2**30
"""Multiply-adds of float64 passes a picture spends on its points, and again on its grid (a
few seconds in NumPy)."""
TRACE_NUMBERS = 2**24
"""Float64 numbers (128 MiB) of the widest layer a picture's trace of its points holds."""
CERTIFY_WORK = 2**20
"""Point-weights (:func:`certify_cost`) a picture certifies at most (about ten seconds)."""
GRID_LEAST = 32
"""Cells across the plane below which a grid of decision regions is not drawn."""


def _numbers(net: LNNet[Any]) -> list[tuple[int, int]]:
    """``(rows, columns)`` of every map: the layers', then the readout's."""
    return [(len(a.W), len(a.W[0]) if a.W else 0) for a in (*net.layers, net.readout)]


def point_cost(net: LNNet[Any]) -> int:
    """Multiply-adds of one point's float64 pass, about: every map's weights, and a few
    operations per feature of each LayerNorm."""
    return max(1, sum(r * c for r, c in _numbers(net)) + 8 * sum(net.widths))


def certify_cost(net: LNNet[Any]) -> int:
    """The certificate's work for one point, in point-weights: a layer each for a net that
    is a scalar chain (:func:`lncapacity.certify.scalar_chain`: rank-one maps, a few ball
    operations a layer), else every weight and bias."""
    if not net.grouped and scalar_chain(net) is not None:
        return max(1, 4 * net.depth)
    return max(1, sum(r * c + r for r, c in _numbers(net)))


def affordable_points(net: LNNet[Any], wanted: int) -> int:
    """Points a picture of ``net`` draws at most: ``wanted``, fewer if their passes would
    cost more than :data:`WORK` or hold more than :data:`TRACE_NUMBERS` (at least one)."""
    widest = max((net.input_dim, *net.widths))
    return max(1, min(wanted, WORK // point_cost(net), TRACE_NUMBERS // widest))


def certificate_affordable(net: LNNet[Any], m: int) -> bool:
    """Whether a picture certifies ``m`` points of ``net`` (within :data:`CERTIFY_WORK`)."""
    return m * certify_cost(net) <= CERTIFY_WORK


def grid_side(net: LNNet[Any], wanted: int) -> int:
    """Cells across (and up) of a grid of the plane through ``net``: ``wanted``, fewer if
    the grid would cost more than :data:`WORK`; 0 below :data:`GRID_LEAST` (no grid)."""
    side = min(wanted, math.isqrt(WORK // point_cost(net)))
    return side if side >= GRID_LEAST else 0


def sample_points(points: PointSet, limit: int) -> tuple[PointSet, np.ndarray]:
    """At most ``limit`` of ``points`` (all of them if they are fewer) and their indices.

    Drawn at random without replacement with a fixed seed (the same sample on every run),
    then every class the draw missed gets its first point, so there may be up to one more
    per class; kept in their order.  ``O(m)``.
    """
    if points.m <= limit:
        return points, np.arange(points.m)
    code = {c: i for i, c in enumerate(points.classes)}
    labels = np.fromiter((code[c] for c in points.y), dtype=np.intp, count=points.m)
    chosen = np.random.default_rng(0).choice(points.m, size=limit, replace=False)
    _, first = np.unique(labels, return_index=True)  # each class's first point
    missing = np.setdiff1d(np.arange(len(code)), labels[chosen])
    ids = np.union1d(chosen, first[missing])
    sample = PointSet(
        X=tuple(points.X[i] for i in ids),
        y=tuple(points.y[i] for i in ids),
        origins=tuple(points.origins[i] for i in ids),
        unit=points.unit,
        source=points.source,
    )
    return sample, ids


def sample_note(shown: int, total: int) -> str:
    """What a picture of a sample says: empty when it shows every point."""
    if shown >= total:
        return ""
    return (
        f"a sample of {shown:,} of the {total:,} points "
        "(drawn at random with a fixed seed, every class kept)"
    )
