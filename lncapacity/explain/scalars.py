"""How each map reads the previous layer, and each layer's scalar map, exact.

A map ``W = col row^T`` of rank one sees the previous layer only through the scalar
``row^T h`` (:func:`reads`, scaled by the construction's metadata when present); a layer
between two such maps is the scalar map ``s' = (a1 + a2 (s - s0)) / sqrt(g (s - s0)^2 + k)``
with exact constants (:func:`layer_constants`, ``certify.scalar_chain``) and a fold point
(:func:`fold_points`; proofs/fold_lemma.md, proofs/runs_fold.md), and the columns of values
the chain gives the points are balls (:func:`ball_columns`).  The terms are those of
:mod:`lncapacity.explain`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from flint import arb, fmpq

from ..arith import parse_rational, precision
from ..certify import rank_one, scalar_chain
from ..data import PointSet
from ..fileformat import V, read_vector
from ..model import LNNet

__all__ = [
    "Read",
    "ball_amplitudes",
    "ball_columns",
    "fold_points",
    "layer_constants",
    "reads",
]


@dataclass(frozen=True)
class Read:
    """``W = col row^T`` exactly: the map sees its input only through ``row^T h``."""

    col: tuple[fmpq, ...]
    row: tuple[fmpq, ...]


def _hints(net: LNNet[fmpq]) -> list[tuple[fmpq, ...] | None]:
    """The construction's read of each map (1..L, then the readout) from metadata, if any."""

    def parse(xs: Any) -> tuple[fmpq, ...] | None:
        try:
            return tuple(parse_rational(str(x)) for x in xs)
        except (TypeError, ValueError):
            return None

    hints = [parse(net.meta["projection"]) if "projection" in net.meta else None]
    for layer in net.layers:
        m = layer.meta
        if "read" in m and (r := parse(m["read"])) is not None and len(r) == 2:
            hints.append(read_vector(r))
        elif {"centre", "offset", "scale"} <= set(m):
            hints.append(V)
        else:
            hints.append(None)
    return hints


def reads(net: LNNet[fmpq]) -> list[Read | None]:
    """The rank-one factor of every map (layers 1..L, then the readout), or None.

    ``row`` is the construction's read when the metadata names one that ``W``'s
    rows are exact multiples of; otherwise the first non-zero row of ``W``.
    """
    out: list[Read | None] = []
    for a, hint in zip((*net.layers, net.readout), _hints(net), strict=True):
        f = rank_one(a.W)
        if f is None:
            out.append(None)
            continue
        col, row = f
        if hint is not None and len(hint) == len(row) and any(h != 0 for h in hint):
            j = next(i for i, h in enumerate(hint) if h != 0)
            lam = row[j] / hint[j]
            if lam != 0 and all(r == lam * h for r, h in zip(row, hint, strict=True)):
                col, row = [c * lam for c in col], list(hint)
        out.append(Read(tuple(col), tuple(row)))
    return out


def layer_constants(
    net: LNNet[fmpq],
    b: Sequence[fmpq],
    col: Sequence[fmpq],
    row: Sequence[fmpq],
    centre: bool = True,
) -> tuple[fmpq, fmpq, fmpq, fmpq, fmpq]:
    """``(s0, g, k, a1, a2)`` of ``s' = (a1 + a2 (s - s0)) / sqrt(g (s - s0)^2 + k)``, exact
    (``centre=False``: an RMSNorm layer, no mean subtracted)."""
    n = len(b)  # the layer's width (widths may differ)
    mc, mb = sum(col, fmpq(0)) / n, sum(b, fmpq(0)) / n
    if not centre:
        mc = mb = fmpq(0)
    A = [c - mc for c in col]
    B = [x - mb for x in b]
    aa = sum((a * a for a in A), fmpq(0))
    ab = sum((a * x for a, x in zip(A, B, strict=True)), fmpq(0))
    s0, g = (fmpq(0), fmpq(0)) if aa == 0 else (-ab / aa, aa / n)
    centre = [a * s0 + x for a, x in zip(A, B, strict=True)]
    k = sum((c * c for c in centre), fmpq(0)) / n + net.eps
    a2 = sum((m * a for m, a in zip(row, A, strict=True)), fmpq(0))
    a1 = sum((m * c for m, c in zip(row, centre, strict=True)), fmpq(0))
    return s0, g, k, a1, a2


def fold_points(net: LNNet[fmpq]) -> list[fmpq | None]:
    """Each layer's fold point ``s0 + a2 k / (a1 g)`` (exact), or None (no scalar map/turn)."""
    rd = reads(net)
    out: list[fmpq | None] = []
    for j, layer in enumerate(net.layers):
        a, nxt = rd[j], rd[j + 1]
        if a is None or nxt is None or net.norm(j).groups != 1:  # LN-G: no single fold
            out.append(None)
            continue
        s0, g, k, a1, a2 = layer_constants(net, layer.b, a.col, nxt.row, not net.norm(j).rms)
        out.append(s0 + a2 * k / (a1 * g) if a1 != 0 and g != 0 else None)
    return out


def ball_columns(net: LNNet[fmpq], points: PointSet, prec: int) -> list[list[arb]] | None:
    """Column values as balls (the scalar chain of certify, kept per layer); None if unusable."""
    rd = reads(net)
    if any(r is None for r in rd[:-1]) or not net.layers or scalar_chain(net) is None:
        return None
    cols: list[list[arb]] = []
    with precision(prec):
        row = [arb(c) for c in rd[0].row]  # type: ignore[union-attr]
        s = [sum((w * arb(x) for w, x in zip(row, p, strict=True)), arb(0)) for p in points.X]
        cols.append(s)
        for j, layer in enumerate(net.layers):
            nxt = rd[j + 1]
            if nxt is None:
                break
            centre = not net.norm(j).rms
            p = layer_constants(net, layer.b, rd[j].col, nxt.row, centre)  # type: ignore[union-attr]
            s0, g, k, a1, a2 = (arb(q) for q in p)
            s = [(a1 + a2 * (v - s0)) / (g * (v - s0) ** 2 + k).sqrt() for v in s]
            cols.append(s)
    return cols


def ball_amplitudes(net: LNNet[fmpq], cols: Sequence[Sequence[arb]], prec: int) -> list[arb]:
    """The scale of each column of :func:`ball_columns`, as the float trace takes it but in
    balls, so that a label gap over it is a ratio of balls (weights beyond the float range
    give finite ratios): half the span of the input's column, then ``sqrt n |P row|`` of each
    read (the largest ``row^T h`` over LayerNorm outputs of width ``n``); 1 where zero."""
    rd = reads(net)
    out = []
    with precision(prec):
        for c, values in enumerate(cols):
            if c == 0:
                mids = sorted(values, key=lambda v: v.mid())
                amp = (mids[-1] - mids[0]) / 2 if mids else arb(0)
            else:
                row = rd[c].row  # type: ignore[union-attr]
                mean = sum(row, fmpq(0)) / len(row)
                amp = (arb(len(row)) * arb(sum(((r - mean) ** 2 for r in row), fmpq(0)))).sqrt()
            out.append(amp if amp > 0 else arb(1))
    return out
