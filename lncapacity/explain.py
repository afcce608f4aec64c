"""The construction, layer by layer, read back from a saved net: as data and in words.

Everything here starts from an :class:`~lncapacity.model.LNNet` and labelled
points, never from the construction's internals, so it explains any width-3 net
whose maps have rank one (every net this package builds), and says what it can
about any other.

**Scalars.** When ``W_j = col_j row_j^T`` has rank one (:func:`reads`), map
``j`` sees the previous layer only through the scalar ``s = row_j . h`` (layer
1: ``row_1 . x``); the *value column* ``l`` is the scalar the map after layer
``l`` reads (column 0: layer 1's input, column ``L``: the readout's, when the
readout has rank one).  The factor is scaled by the layer metadata when present
(``meta.projection``, a layer's ``read``; :func:`lncapacity.fileformat.to_gadget`),
so column values are the construction's ``p`` and its ``centre`` is in their
units.  Layer ``l`` maps ``s`` to (``certify.scalar_chain``; eps included)::

    s' = (a1 + a2 (s - s0)) / sqrt(g (s - s0)^2 + k),

with every constant exact: ``s0`` is the layer's *centre*, ``3 g beta^2 = k - eps``
gives its *offset* ``beta``, and ``s0 + a2 k / (a1 g)`` (where ``ds'/ds = 0``)
its *fold point*: values at equal "distance" from it (in angle) merge, and the
side with fewer values is folded over the other (proofs/fold_lemma.md,
proofs/runs_fold.md).

**Angles.** Every width-3 LayerNorm output lies in the plane orthogonal to
``(1, 1, 1)``; with ``u = (1, -1, 0)``, ``v = (1, 1, -2)`` (fileformat.U, V) its
angle is ``atan2(h . v/|v|, h . u/|u|)``, on the circle of radius ``sqrt 3``
when ``eps = 0``.

**Runs and merges.** Sorted by value, a column splits into *label runs*
(maximal blocks of one label).  A layer *merges* runs when a run after it holds
points of two or more runs before it; values *merge* when two of one label end
closer than ``MERGE_RTOL`` times the column's amplitude (indistinguishable), and
at a layer whose metadata says ``kind: pma`` by the paper's rule (its merges are
exact equalities; the short rational centres of ``pma`` leave the pair a gap of
up to a few tenths of its old one, so the rule, not the gap, names them; see
:func:`merge_history`).  The ``runs`` construction joins runs and merges no
values.
The *label gap* of a column is the smallest distance between neighbours of
different labels, relative to the amplitude ``sqrt 3 |P row|`` of the read
(the largest value any point of the circle gives; for the input column, half
its span): what float arithmetic must resolve (proofs/float_gap.md).

**LN-G.** A layer that normalises in groups (:attr:`~lncapacity.model.Norm.groups`) has
no such scalar map: its centre, offset and fold point are not reported (the values the
next map reads, runs and gaps are, computed in float64), and :func:`layer_curve` draws its
map in float64.

Column values for :func:`explain` are computed in ball arithmetic (python-flint
``arb``) at the certificate's precision, and the margin is the certificate's
(:func:`lncapacity.certify.certify`); gaps are reported as the balls' midpoints
(with whether the ball is certainly positive).  Pictures use the float64
:func:`float_trace`.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from flint import arb, fmpq

from .algebraic import refuse_radicals
from .arith import format_rational, json_float, parse_rational, precision, to_float
from .certify import Certificate, certify, rank_one, scalar_chain
from .data import PointSet, named_labels, points_from_arrays
from .errors import InputError
from .fileformat import U, V, read_vector
from .floats import affine_arrays, layer_arrays, layer_norm, product, run_layer
from .model import LNNet

__all__ = [
    "MERGE_RTOL",
    "Read",
    "Trace",
    "as_points",
    "class_arcs",
    "class_intervals",
    "explain",
    "float_scores",
    "float_trace",
    "fold_points",
    "label_runs",
    "layer_constants",
    "layer_curve",
    "merge_history",
    "merges_at",
    "present_classes",
    "reads",
]

MERGE_RTOL = 1e-9
"""Same-label values closer than this times the amplitude count as merged."""

KINDS = {
    "pma": "the paper's fold: the smallest value meets its nearest same-label value",
    "pma-reverse": "an injective fold (order reversed) inside the paper's algorithm",
    "runs": "one label run fewer: an end run is folded onto a later run of its label "
    "(with two classes, the third from that end)",
    "peel": "one run fewer of a class against the rest: an end run is folded onto the third "
    "from that end, the other classes in them may interleave (peel, proofs/multiclass.md §8)",
    "pad": "padding: an injective layer, nothing merges",
    "constant": "one class only: a constant layer",
    "circle-first": "the angle of a 2-D affine image of the input, around a centre "
    "(circle method, proofs/circle_maps.md)",
    "circle": "a whole circle map: the circle folded at the two tangent points from a "
    "pole, its two arcs merged, then re-spaced",
    "trained": "a layer of a small net trained by Adam, kept as exact dyadic weights "
    "(a warm start of the circle search)",
    "fold": "a plain fold",
    "warp": "an injective warp that breaks a mirror symmetry before a fold",
    "rescale": "a rescale: an injective fold (order reversed, nothing merges) that spreads "
    "the values, exactly, over a fixed part of the amplitude, inserted because the label gaps "
    "had fallen below what float64 resolves (the float search found no certified fold)",
}
"""Words for the layer kinds the constructions write; any other kind is named as it is."""


# ---------------------------------------------------------------------------
# how each map reads the previous layer


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


def _amplitude(row: Sequence[float]) -> float:
    """``sqrt n |P row|``: the largest ``row^T h`` over LayerNorm outputs of width ``n``
    (the sphere of radius ``sqrt n`` in ``1^perp``; ``sqrt 3`` for width 3)."""
    r = np.asarray(row, dtype=np.float64)
    return float(math.sqrt(len(r)) * np.linalg.norm(r - r.mean()))


# ---------------------------------------------------------------------------
# the float64 trace (pictures)


@dataclass(frozen=True)
class Trace:
    """Every point through the net in float64.

    ``values[c]`` (``c = 0..L``): column ``c``'s scalar per point, or None where the
    map after layer ``c`` has rank above one; ``amplitude[c]`` its scale (see module
    doc); ``angles[l - 1]``: the angle of layer ``l``'s output; ``radius[l - 1]``
    its distance from the centre of the plane; ``scores``: the readout.
    """

    values: list[np.ndarray | None]
    amplitude: list[float]
    angles: np.ndarray
    radius: np.ndarray
    scores: np.ndarray
    principal: list[np.ndarray] | None = None
    """Per column ``c = 0..L`` (the input, then each layer's output), every point's
    coordinate along the first principal axis of that column's points, over the largest
    absolute one: a value per layer for any net (None if not computed)."""

    @property
    def depth(self) -> int:
        return len(self.values) - 1

    @property
    def on_circle(self) -> bool:
        """Whether every layer has width 3 (then ``angles`` has one row per layer)."""
        return len(self.angles) == self.depth

    @property
    def has_values(self) -> bool:
        return all(v is not None for v in self.values)


def _unit(w: Sequence[fmpq]) -> np.ndarray:
    x = np.array([to_float(c) for c in w])
    return x / np.linalg.norm(x)


U_HAT, V_HAT = _unit(U), _unit(V)


def float_trace(net: LNNet[fmpq], X: Any) -> Trace:
    """The float64 forward pass of every row of ``X``, kept layer by layer."""
    h = np.asarray(X.floats() if isinstance(X, PointSet) else X, dtype=np.float64)
    if h.ndim != 2 or h.shape[1] != net.input_dim:
        raise InputError(f"expected points of shape (m, {net.input_dim}), got {h.shape}")
    rd = reads(net)
    eps = to_float(net.eps)
    values: list[np.ndarray | None] = []
    amplitude: list[float] = []
    angles, radius = [], []
    principal = [_principal(h)]
    circle = all(w == 3 for w in net.widths)
    with np.errstate(all="ignore"):
        for j, r in enumerate(rd):  # a read per layer, then the readout's
            if r is None:
                values.append(None)
                amplitude.append(math.nan)
            else:
                row = np.array([to_float(c) for c in r.row])
                s = h @ row
                values.append(s)
                if j == 0:
                    span = float(np.max(s) - np.min(s)) if len(s) else 0.0
                    amplitude.append(span / 2 if span > 0 else 1.0)
                else:  # a zero read (a constant net) has nothing to scale by
                    amplitude.append(_amplitude(row) or 1.0)
            if j == len(net.layers):
                break
            h = run_layer(h, layer_arrays(net, j), eps)
            principal.append(_principal(h))
            if circle:  # angles only when every layer lies on the circle (width 3)
                angles.append(np.arctan2(h @ V_HAT, h @ U_HAT))
                radius.append(np.linalg.norm(h, axis=1))
        R, rb = affine_arrays(net.readout)
        scores = product(h, R) + rb
    m = h.shape[0]
    return Trace(
        values,
        amplitude,
        np.array(angles).reshape(-1, m),
        np.array(radius).reshape(-1, m),
        scores,
        principal,
    )


SVD_FEATURES = 1_000
"""Columns up to this many features get their principal axis from an SVD; wider ones (LN-G
layers) from :data:`POWER_STEPS` steps of the power iteration (an SVD of 10,000 points in
15,000 features would take minutes)."""
POWER_STEPS = 64
"""Steps of the power iteration for the principal axis of a column wider than
:data:`SVD_FEATURES` (from a fixed start: the same axis on every run)."""


def _principal(h: np.ndarray) -> np.ndarray:
    """Each row's coordinate along the first principal axis of the rows, scaled to ``[-1, 1]``
    (zeros when the rows coincide or are not finite)."""
    with np.errstate(all="ignore"):
        c = h - h.mean(axis=0)
        if not np.all(np.isfinite(c)) or not np.any(c):
            return np.zeros(len(h))
        if c.shape[1] > SVD_FEATURES:
            v = np.random.default_rng(0).standard_normal(c.shape[1])
            for _ in range(POWER_STEPS):
                v = c.T @ (c @ v)
                v /= np.linalg.norm(v)
            p = c @ v
        else:
            _, _, vt = np.linalg.svd(c, full_matrices=False)
            p = c @ vt[0]
        top = np.max(np.abs(p))
        return p / top if top > 0 else np.zeros(len(h))


def float_scores(net: LNNet[fmpq], X: np.ndarray, chunk: int = 4096) -> np.ndarray:
    """The readout scores in float64 for many points (a grid), in cache-sized chunks.

    The operations of the NumPy ``float64`` backend (:func:`lncapacity.floats.forward`),
    with the weights converted once.
    """
    eps = to_float(net.eps)
    layers = [layer_arrays(net, i) for i in range(net.depth)]
    R, rb = affine_arrays(net.readout)
    X = np.asarray(X, dtype=np.float64)
    out = np.empty((len(X), len(net.classes)))
    with np.errstate(all="ignore"):
        for i in range(0, len(X), chunk):
            h = X[i : i + chunk]
            for layer in layers:
                h = run_layer(h, layer, eps)
            out[i : i + chunk] = product(h, R) + rb
    return out


def layer_curve(
    net: LNNet[fmpq], layer: int, s: np.ndarray, rd: Sequence[Read | None] | None = None
) -> np.ndarray:
    """Layer ``layer``'s scalar map in float64: the value the next map reads, for inputs ``s``.

    Needs layer ``layer`` and the map after it to have rank one.  ``rd``: :func:`reads`
    of the net, if already at hand.
    """
    rd = reads(net) if rd is None else rd
    a, nxt = rd[layer - 1], rd[layer]
    if a is None or nxt is None:
        raise InputError(f"layer {layer} has no scalar map (a map of rank above one)")
    L = net.layers[layer - 1]
    col = np.array([to_float(c) for c in a.col])
    b = np.array([to_float(x) for x in L.b])
    y = np.outer(np.asarray(s, dtype=np.float64), col) + b
    groups = net.norm(layer - 1).groups
    with np.errstate(all="ignore"):
        if groups != 1:  # LN-G: no closed form of one fold, the layer itself in float64
            return layer_norm(y, to_float(net.eps), groups) @ np.array(
                [to_float(c) for c in nxt.row]
            )
        y = y - y.mean(axis=1, keepdims=True)
        h = y / np.sqrt((y * y).mean(axis=1, keepdims=True) + to_float(net.eps))
    return h @ np.array([to_float(c) for c in nxt.row])


# ---------------------------------------------------------------------------
# where each class wins


def class_intervals(net: LNNet[fmpq]) -> list[tuple[fmpq | None, fmpq | None, int]] | None:
    """The readout's classes along its scalar: ``(lo, hi, class index)`` from left to right.

    With a rank-one readout the scores are ``z_i = col_i s + b_i``; the upper
    envelope of these lines gives each winning class an interval, with exact
    rational ends (``None`` for an infinite end).  None without a rank-one readout.
    """
    r = reads(net)[-1]
    if r is None:
        return None
    lines = list(zip(r.col, net.readout.b, strict=True))
    # walk the upper envelope from s = -inf: the smallest slope wins (ties: the larger bias)
    cur = min(range(len(lines)), key=lambda i: (lines[i][0], -lines[i][1], i))
    out: list[tuple[fmpq | None, fmpq | None, int]] = []
    lo: fmpq | None = None
    while True:
        a, b = lines[cur]
        best = None
        for i, (ai, bi) in enumerate(lines):
            if ai > a:  # overtakes cur at s = (b - bi) / (ai - a)
                x = (b - bi) / (ai - a)
                if lo is None or x > lo or (x == lo and i != cur):
                    if best is None or x < best[0] or (x == best[0] and ai > lines[best[1]][0]):
                        best = (x, i)
        if best is None:
            out.append((lo, None, cur))
            return out
        out.append((lo, best[0], cur))
        lo, cur = best


def class_arcs(net: LNNet[fmpq], samples: int = 4096) -> list[tuple[float, float, int]]:
    """The arcs of the circle (radius ``sqrt 3``, eps = 0) each class wins at the readout.

    ``(start, end, class index)`` in radians, ``start`` in ``[-pi, pi)`` and
    ``end > start``, covering the circle; boundaries found numerically (float64,
    a grid of ``samples`` angles refined by bisection).  Depth >= 1 only.
    """
    if not net.layers or net.width != 3:
        raise InputError("class arcs need a width-3 net with at least one LayerNorm layer")
    R, rb = affine_arrays(net.readout)

    def winner(t: np.ndarray) -> np.ndarray:
        h = math.sqrt(3.0) * (np.outer(np.cos(t), U_HAT) + np.outer(np.sin(t), V_HAT))
        with np.errstate(all="ignore"):  # weights beyond the float range: inf/NaN scores
            return np.argmax(np.nan_to_num(h @ R.T + rb, nan=-np.inf), axis=1)

    t = np.linspace(-math.pi, math.pi, samples, endpoint=False)
    w = winner(t)
    cuts = []
    for i in np.nonzero(w != np.roll(w, -1))[0]:
        a, b = t[i], t[i] + 2 * math.pi / samples
        wa = w[i]
        for _ in range(50):
            mid = (a + b) / 2
            if winner(np.array([mid]))[0] == wa:
                a = mid
            else:
                b = mid
        cuts.append(((a + b) / 2, int(w[(i + 1) % samples])))
    if not cuts:
        return [(-math.pi, math.pi, int(w[0]))]
    arcs = []
    for (start, cls), (end, _) in zip(cuts, [*cuts[1:], cuts[0]], strict=True):
        if end <= start:
            end += 2 * math.pi
        s = (start + math.pi) % (2 * math.pi) - math.pi
        arcs.append((s, s + (end - start), cls))
    return arcs


# ---------------------------------------------------------------------------
# runs and merges


def fold_points(net: LNNet[fmpq]) -> list[fmpq | None]:
    """Each layer's fold point ``s0 + a2 k / (a1 g)`` (exact), or None (no scalar map/turn)."""
    rd = reads(net)
    out: list[fmpq | None] = []
    for j, layer in enumerate(net.layers):
        a, nxt = rd[j], rd[j + 1]
        if a is None or nxt is None or net.norm(j).groups != 1:  # LN-G: no single fold
            out.append(None)
            continue
        s0, g, k, a1, a2 = layer_constants(net, layer.b, a.col, nxt.row)
        out.append(s0 + a2 * k / (a1 * g) if a1 != 0 and g != 0 else None)
    return out


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
    of the nearest larger value of its label (seed 000; lncapacity/construct/pma.py
    emulates these merges with rational centres, leaving the pair a gap of up to
    a few tenths of its old one).  At every layer, also the values that
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


def label_runs(order: Sequence[int], labels: Sequence[Any]) -> list[list[int]]:
    """Split point indices listed in value order into maximal blocks of one label."""
    runs: list[list[int]] = []
    for k in order:
        if runs and labels[runs[-1][-1]] == labels[k]:
            runs[-1].append(k)
        else:
            runs.append([k])
    return runs


def as_points(net: LNNet[fmpq], X: Any, y: Any = None) -> PointSet:
    """``X`` as a :class:`PointSet` (or ``X, y`` as arrays), checked against ``net``."""
    points = X if isinstance(X, PointSet) else points_from_arrays(X, y)
    if points.d != net.input_dim:
        raise InputError(
            f"{points.source}: points have {points.d} features, the net takes {net.input_dim}"
        )
    if unknown := sorted({c for c in points.y if c not in net.classes}, key=str):
        raise InputError(f"{points.source}: labels {unknown} are not classes {list(net.classes)}")
    return points


# ---------------------------------------------------------------------------
# the account


def _ball_columns(net: LNNet[fmpq], points: PointSet, prec: int) -> list[list[arb]] | None:
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
            p = layer_constants(net, layer.b, rd[j].col, nxt.row)  # type: ignore[union-attr]
            s0, g, k, a1, a2 = (arb(q) for q in p)
            s = [(a1 + a2 * (v - s0)) / (g * (v - s0) ** 2 + k).sqrt() for v in s]
            cols.append(s)
    return cols


def layer_constants(
    net: LNNet[fmpq], b: Sequence[fmpq], col: Sequence[fmpq], row: Sequence[fmpq]
) -> tuple[fmpq, fmpq, fmpq, fmpq, fmpq]:
    """``(s0, g, k, a1, a2)`` of ``s' = (a1 + a2 (s - s0)) / sqrt(g (s - s0)^2 + k)``, exact."""
    n = len(b)  # the layer's width (widths may differ)
    mc, mb = sum(col, fmpq(0)) / n, sum(b, fmpq(0)) / n
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


def _gaps(values: Sequence[arb], labels: Sequence[Any], amplitude: float) -> dict[str, Any]:
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


def _float_column(values: np.ndarray, labels: Sequence[Any], amplitude: float) -> dict[str, Any]:
    """As ``_gaps``, in float64 (nets without a scalar chain)."""
    return _gaps([arb(to_float(v)) for v in values], labels, amplitude)


def _show(v: Any) -> str:
    """A metadata value in a few characters: rational strings as decimals."""
    if isinstance(v, str):
        try:
            return f"{to_float(parse_rational(v)):.6g}"
        except (ValueError, OverflowError):
            return v if len(v) <= 40 else v[:37] + "..."
    if isinstance(v, list):
        return "[" + ", ".join(_show(x) for x in v[:6]) + (", ..." if len(v) > 6 else "") + "]"
    return _show(str(v)) if not isinstance(v, (int, float)) else f"{v:g}"


def _describe_kind(kind: str | None, meta: Mapping[str, Any], why: str | None = None) -> str:
    """The kind in words; an unknown kind is named, with its parameters.

    ``why``: the layer's ``meta.why`` with class names for the construction's label
    numbers (``_why``), if already worked out.
    """
    if kind is None:
        return "a layer without construction notes"
    if kind in KINDS:
        words = KINDS[kind]
        if "boundaries" in meta:  # the circle method's count around the circle after it
            words += f"; {meta['boundaries']} label boundaries around the circle after it"
    else:
        params = [f"{k} {_show(v)}" for k, v in meta.items() if k not in ("kind", "why")]
        words = f"a layer of kind {kind!r}" + (f" ({', '.join(params)})" if params else "")
    if why or meta.get("why"):
        words += f" (why: {why or meta['why']})"
    return words


def present_classes(net: LNNet[fmpq]) -> list[Any] | None:
    """The classes the construction numbered ``0..k-1``, for an ``envelope`` readout, else None.

    The multiclass construction numbers the classes present in its data, in the
    order of ``net.classes``, and gives every other class a zero readout row
    (lncapacity/construct/build.py): the classes with a non-zero row, in order.
    """
    if net.readout.meta.get("kind") != "envelope":
        return None
    return [c for c, row in zip(net.classes, net.readout.W, strict=True) if any(row)]


def _why(meta: Mapping[str, Any], present: Sequence[Any] | None) -> str | None:
    """``meta.why`` with the classes named (:func:`~lncapacity.data.named_labels`)."""
    why = meta.get("why")
    if not isinstance(why, str) or not present:
        return None if why is None else str(why)
    return named_labels(why, present)


def explain(
    net: LNNet[fmpq],
    X: Any,
    y: Any = None,
    *,
    certificate: Certificate | None = None,
) -> dict[str, Any]:
    """The layer-by-layer account of ``net`` on labelled points, as plain data.

    Keys: ``net`` (depth, eps, classes, method and the top-level ``meta``),
    ``input`` (the projection column), ``layers`` (one entry per LayerNorm layer:
    ``kind``, the metadata verbatim, the exact ``centre``, ``fold_point`` and
    ``offset_squared`` read from the weights, ``folded`` (which end, and how many
    values lie on that side), runs before and after, which runs joined, merged
    values, smallest label gaps before and after, ``why`` (a warp's reason, with
    class names for the construction's label numbers: :func:`present_classes`) and
    ``words``), ``readout`` (with a rank-one readout: ``lines``, each class's slope
    and intercept in the last value, ``thresholds`` where the upper envelope
    changes class, exact, and ``class_order`` along the line; ``intervals``, and
    ``arcs`` of the circle) and ``certificate`` (certified count, the certified
    minimum margin and precision, from :func:`lncapacity.certify.certify`).
    """
    refuse_radicals(net, "explain")
    points = as_points(net, X, y)
    cert = certificate if certificate is not None else certify(net, points)
    cls_index = [net.classes.index(c) for c in points.y]
    names = list(net.classes)
    rd = reads(net)
    # balls lose about a bit a layer; the certificate may have used float64 intervals (53)
    cols = _ball_columns(net, points, max(cert.precision, 128 + 2 * net.depth))
    trace = float_trace(net, points)
    if cols is not None:
        columns = [
            _gaps(cols[c], cls_index, trace.amplitude[c]) | {"exact": True}
            for c in range(len(cols))
        ]
    else:
        columns = [
            (_float_column(v, cls_index, trace.amplitude[c]) | {"exact": False})
            if v is not None
            else None
            for c, v in enumerate(trace.values)
        ]

    labels_arr = np.array(cls_index, dtype=np.intp)
    floats_of: list[np.ndarray | None] = list(trace.values)
    if cols is not None:  # merges and folded ends read from the balls' midpoints
        floats_of = [np.array([to_float(b.mid()) for b in c]) for c in cols]
        floats_of += [None] * (len(trace.values) - len(floats_of))
    history = merge_history(net, dataclasses.replace(trace, values=floats_of), labels_arr)

    def column_summary(c: int) -> dict[str, Any] | None:
        col = columns[c] if c < len(columns) else None
        if col is None:
            return None
        return {
            "runs": len(col["runs"]),
            "run_labels": [names[cls_index[r[0]]] for r in col["runs"]],
            "run_sizes": [len(r) for r in col["runs"]],
            "label_gap": json_float(col["label_gap"]),
            "label_gap_certainly_positive": col["label_gap_certain"],
            "computed_in": "arb balls" if col["exact"] else "float64",
        }

    present = present_classes(net)
    layers = []
    for i, layer in enumerate(net.layers, 1):
        meta = dict(layer.meta)
        kind = meta.get("kind")
        entry: dict[str, Any] = {"layer": i, "kind": kind, "meta": meta}
        if "why" in meta:
            entry["why"] = _why(meta, present)
        a, nxt = rd[i - 1], rd[i]
        groups = net.norm(i - 1).groups
        if groups != 1:
            entry["groups"] = groups
        if a is not None and nxt is not None and groups == 1:
            s0, g, k, a1, a2 = layer_constants(net, layer.b, a.col, nxt.row)
            fold = s0 + a2 * k / (a1 * g) if a1 != 0 and g != 0 else None
            entry.update(
                centre=format_rational(s0),
                offset_squared=format_rational((k - net.eps) / (3 * g)) if g != 0 else None,
                fold_point=format_rational(fold) if fold is not None else None,
            )
        before, after = column_summary(i - 1), column_summary(i)
        entry["before"], entry["after"] = before, after
        if before is not None and after is not None:
            rb, ra = columns[i - 1]["runs"], columns[i]["runs"]
            run_of = {k: j for j, r in enumerate(rb) for k in r}
            joined = []
            for run in ra:
                src = sorted({run_of[k] for k in run})
                if len(src) > 1:
                    joined.append(
                        {"label": names[cls_index[run[0]]], "runs_before": [r + 1 for r in src]}
                    )
            entry["joined_runs"] = joined
            entry["merged_values"] = history[i - 1]
            if "fold_point" in entry and entry["fold_point"] is not None:
                fp = to_float(parse_rational(entry["fold_point"]))
                vals = floats_of[i - 1]
                assert vals is not None
                left = int(np.sum(vals < fp))
                right = len(vals) - left
                # the folded end: the side of the fold point with fewer whole label runs
                # (then fewer values): runs of R_1.. (or ..R_n) are reflected over the rest
                runs_left = sum(bool(np.all(vals[r] < fp)) for r in rb)
                runs_right = sum(bool(np.all(vals[r] > fp)) for r in rb)
                if left == 0 or right == 0:
                    side = "none"
                elif runs_left != runs_right:
                    side = "left" if runs_left < runs_right else "right"
                else:
                    side = "left" if left <= right else "right"
                entry["folded"] = {
                    "end": side,
                    "left": left,
                    "right": right,
                    "runs_left": runs_left,
                    "runs_right": runs_right,
                }
        entry["words"] = _layer_words(entry, names)
        layers.append(entry)

    readout: dict[str, Any] = {"kind": net.readout.meta.get("kind"), "meta": dict(net.readout.meta)}
    intervals = class_intervals(net)
    if intervals is not None and (last := rd[-1]) is not None:
        # z_c = slope_c s + intercept_c in the last value s (the column the readout reads)
        readout["lines"] = [
            {"class": c, "slope": format_rational(a), "intercept": format_rational(b)}
            for c, a, b in zip(names, last.col, net.readout.b, strict=True)
        ]
        readout["thresholds"] = [format_rational(hi) for _, hi, _ in intervals[:-1]]
        readout["class_order"] = [names[c] for _, _, c in intervals]
    if intervals is not None:
        readout["intervals"] = [
            {
                "class": names[c],
                "from": None if lo is None else format_rational(lo),
                "to": None if hi is None else format_rational(hi),
            }
            for lo, hi, c in intervals
        ]
    if net.layers and net.width == 3:
        readout["arcs"] = [
            {"class": names[c], "from": round(s, 6), "to": round(e, 6)}
            for s, e, c in class_arcs(net)
        ]
    readout["words"] = _readout_words(readout, net)

    first = column_summary(0)
    return {
        "net": {
            "depth": net.depth,
            "width": net.width,
            **({"groups": list(net.groups)} if net.grouped else {}),
            "eps": format_rational(net.eps),
            "classes": names,
            "method": net.meta.get("method"),
            "meta": dict(net.meta),
        },
        "points": points.m,
        "input": first,
        "layers": layers,
        "readout": readout,
        "certificate": {
            "certified": cert.certified,
            "points": len(cert.points),
            "all_certified": cert.all_certified,
            "min_margin": json_float(cert.min_margin) if cert.all_certified else None,
            "precision_bits": cert.precision,
        },
        "merge_rtol": MERGE_RTOL,
    }


def _few(ks: Sequence[int], limit: int = 6) -> str:
    shown = ", ".join(str(k) for k in ks[:limit])
    return shown + (f", ... ({len(ks)} in all)" if len(ks) > limit else "")


def _g(x: Any) -> str:
    return "none" if x is None else f"{x:.3g}"


def _layer_words(e: Mapping[str, Any], names: Sequence[Any]) -> str:
    parts = [f"layer {e['layer']}: {_describe_kind(e['kind'], e['meta'], e.get('why'))}."]
    if "groups" in e:
        parts.append(f"LayerNorm in {e['groups']} groups (LN-G): no single fold.")
    if e.get("centre") is not None:
        c = to_float(parse_rational(e["centre"]))
        off = e.get("offset_squared")
        beta = math.sqrt(to_float(parse_rational(off))) if off is not None else None
        fp = e.get("fold_point")
        s = f"centre {c:.6g}, offset {_g(beta)}"
        if fp is not None and fp != e["centre"]:
            s += f", fold point {to_float(parse_rational(fp)):.6g}"
        parts.append(s + ".")
    folded = e.get("folded")
    if folded:
        if folded["end"] == "none":
            parts.append("Every value lies on one side of the fold point: the order just reverses.")
        else:
            n = folded[folded["end"]]
            parts.append(
                f"Folds the {folded['end']} end ({n} value{'s' * (n != 1)} beyond the fold point)."
            )
    b, a = e.get("before"), e.get("after")
    if b and a:
        parts.append(f"Label runs {b['runs']} -> {a['runs']}.")
        for j in e.get("joined_runs", [])[:4]:
            idx = ", ".join(str(r) for r in j["runs_before"])
            parts.append(f"Runs {idx} (label {j['label']}) join.")
        if len(e.get("joined_runs", [])) > 4:
            parts.append(f"({len(e['joined_runs']) - 4} more joins.)")
        for g in e.get("merged_values", [])[:4]:
            parts.append(f"Values merge: a group of {len(g)} (points {_few(g)}).")
        parts.append(
            f"Smallest label gap {_g(b['label_gap'])} -> {_g(a['label_gap'])} (of the amplitude)."
        )
    return " ".join(parts)


def _readout_words(r: Mapping[str, Any], net: LNNet[fmpq]) -> str:
    if "intervals" in r:
        if len(r["intervals"]) == 1:
            return f"readout: every value gives class {r['intervals'][0]['class']}."
        pieces = []
        for iv in r["intervals"]:
            lo = "-inf" if iv["from"] is None else f"{to_float(parse_rational(iv['from'])):.6g}"
            hi = "+inf" if iv["to"] is None else f"{to_float(parse_rational(iv['to'])):.6g}"
            pieces.append(f"{iv['class']} on ({lo}, {hi})")
        head = "readout: the last value decides: "
        if r.get("kind") == "envelope" and "lines" in r:
            slope = {ln["class"]: ln["slope"] for ln in r["lines"]}
            slopes = ", ".join(f"{slope[iv['class']]} ({iv['class']})" for iv in r["intervals"])
            taus = ", ".join(f"{to_float(parse_rational(t)):.6g}" for t in r["thresholds"])
            head = (
                f"readout: an upper envelope of {len(r['lines'])} lines in the last value, "
                f"slopes {slopes}, meeting at the thresholds {taus}: "
            )
        return head + ", ".join(pieces) + "."
    if "arcs" in r:
        return (
            f"readout: {len(r['arcs'])} arcs of the circle, "
            + ", ".join(f"{a['class']} on ({a['from']:.3f}, {a['to']:.3f}) rad" for a in r["arcs"])
            + "."
        )
    if not net.layers:
        return "readout: an affine map of the input (no LayerNorm layers)."
    n, k = net.widths[-1], len(net.classes)
    last = net.norm(net.depth - 1)
    after = "" if last.is_identity else " (with its gain and bias)"
    kind = "LayerNorm" if last.groups == 1 else f"LN-G ({last.groups} groups of {n // last.groups})"
    return (
        f"readout: {k} scores, an affine map of layer {net.depth}'s {kind} output{after} "
        f"in R^{n} (rank above one: no single value decides); the highest score wins."
    )
