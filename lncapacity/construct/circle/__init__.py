"""Whole circle maps per layer: far shallower nets (``--method circle``, any number of classes).

With ``eps = 0`` every width-3 LayerNorm output lies on the circle of radius
``sqrt(3)`` in the plane orthogonal to ``(1, 1, 1)``.  In the orthonormal basis
``E = [u/|u|, v/|v|]`` (``u = (1, -1, 0)``, ``v = (1, 1, -2)``) a layer acts on
the angle only (proofs/circle_maps.md)::

    layer 1:    x   -> arg(N x + c)               (N: 2 x d),
    layer l>1:  phi -> arg(M (e(phi) - q))          (M: 2 x 2, q in the plane),

and the readout keeps each class on an arc of the circle (two classes: a
chord; ``k``: the polygon inscribed at the cuts, proofs/multiclass.md §7), or, with
``k >= 3``, reads a class on several arcs by the scores of a linear program (§9).
``phi -> arg(M (e(phi) - q))`` has at most two monotone pieces; for ``|q| > 1``
it *folds* the circle at the two points of contact of the tangents from ``q``
and merges the two arcs in the order of the lines through ``q``.  The order of
the points after the layer depends on ``q`` alone; ``M`` only spreads them (a
projective map of the directions).

So a net is searched combinatorially: the first layer's 2-D image and centre,
then per layer a pole ``q`` (equivalently its two fold points), scored by the
number ``B`` of label boundaries around the circle after the layer, then by the
smallest angle between neighbours of different labels, less the float error
their angles may carry (what float arithmetic must resolve; neighbours of one
label may merge freely).  A small beam of the best states is kept; the search
stops at ``k`` boundaries (every class one arc) or, with ``k >= 3``, at the first state
whose arcs an argmax of affine scores reads with a margin float64 resolves
(:func:`arcs_lp`: at most ``2 k - 2`` boundaries, no two classes alternating).
``M`` spreads the image (a projective map of the directions, ``candidates._spread``).
Every weight is a float64, i.e. an exact dyadic rational, and the search tracks the points
exactly as NumPy float64 runs the net; the finished net is certified by
:func:`lncapacity.certify` (ball arithmetic) and run once in float64 in
:func:`lncapacity.construct.build`.  With ``eps > 0`` the output lies strictly
inside the disc: each layer is scaled by a power of two so that ``eps`` shifts
the radius by less than ``2^-40`` (the angle never depends on ``eps``).  With
two classes the search may hand over to ``runs`` (:class:`Handoff`).
With ``objective="depth"`` (:mod:`.precise`) the points are carried in ``arb`` balls
instead and scored by rigorous label gaps with no float error: the search keeps folding
where float64 cannot follow, and float64 faithfulness is reported, not sought.

The package, by concern: :mod:`.state` (a state, how it is scored,
the float-error bound of its angles), :mod:`.candidates` (the layers worth trying),
:mod:`.beam` (the search), :mod:`.handoff` (the hand-over to ``runs``),
:mod:`.readouts` (chord and polygon) and :mod:`.precise` (``objective="depth"``); this
module holds the construction itself (:func:`circle_state`, :func:`circle_net`,
:func:`build_circle`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from flint import arb, fmpq

from ...floats import layer_norm as layer_norm
from ...model import Affine
from ...reproducible import matmul
from . import precise
from .beam import Progress, past, search
from .handoff import HANDOFF_ROUNDING, Handoff, finish, handoff_read
from .precise import Tracker
from .readouts import arcs_lp, chord, most_arcs, polygon, readout
from .state import SQRT3, E, State, _affine, _scaled, boundaries_cyclic, plane
from .state import _carry as _carry

__all__ = [
    "CIRCLE_META",
    "CLOSE",
    "OBJECTIVES",
    "RESTARTS",
    "SMALL",
    "SQRT3",
    "WORK",
    "E",
    "Handoff",
    "Progress",
    "State",
    "arcs_lp",
    "arcs_readout",
    "boundaries_cyclic",
    "build_circle",
    "chord",
    "circle_net",
    "circle_state",
    "finish",
    "handoff_read",
    "identity_layer",
    "plane",
    "polygon",
    "readout",
    "search",
]


SMALL = 100
"""Sets of at most this many points get twice the beam and :data:`RESTARTS` seeds (cheap, and
near the bound every layer counts)."""
RESTARTS = 4
"""Seeds of the search for sets of at most :data:`SMALL` points (one seed above)."""
WORK = 600_000
"""Candidate poles times points scored per state and layer (fewer candidates for large sets)."""


def identity_layer(eps: float) -> Affine[fmpq]:
    """``h -> LN(s h)``: the identity on the circle (eps = 0), a radial shrink of less than
    ``2^-40`` otherwise (``s`` a power of two with ``3 s^2 >= 2^40 eps / 3``)."""
    s = _scaled(np.full((1, 2), SQRT3), eps)
    W = s * np.eye(3)
    return _affine(W, np.zeros(3), {"kind": "pad"})


def circle_state(
    X: np.ndarray,
    y: np.ndarray,
    eps: float,
    *,
    max_depth: int,
    seed: int = 0,
    beam: int = 4,
    restarts: int | None = None,
    warm: bool = True,
    handoff: bool = False,
    progress: Progress | None = None,
    deadline: float | None = None,
    arcs: bool = True,
    objective: str = "faithful",
    exact: Sequence[Sequence[Any]] | None = None,
) -> State | None:
    """The best state of :func:`search` over ``restarts`` seeds (default :data:`RESTARTS`
    for at most :data:`SMALL` points, else one), each asked to beat the best so far;
    ``warm``: trained nets compete as starts (the first seed, more than :data:`SMALL`
    points).  With ``handoff``
    states are compared by :func:`finish`, otherwise only finished ones count.  By
    default a search that finds nothing but came :data:`CLOSE` is followed by another
    seed, up to :data:`RESTARTS` in all.  ``arcs``: :func:`search`'s.  ``objective``:
    ``"faithful"`` (float64 runs the net right, :mod:`.state`) or ``"depth"`` (the points in
    balls from the exact inputs ``exact``, default ``X``; :mod:`.precise`)."""
    if objective not in OBJECTIVES:
        raise ValueError(f"unknown objective {objective!r} (choose from {', '.join(OBJECTIVES)})")
    tracker = None if objective == "faithful" else Tracker(X if exact is None else exact, y, eps)
    m = len(y)
    k = int(y.max()) + 1
    candidates = max(200, min(4000, WORK // max(m, 1)))
    if tracker is not None:  # the depth objective: time for a wider search (precise.CANDIDATES)
        candidates = max(candidates, precise.CANDIDATES)
    if m <= SMALL:
        beam *= 2
    st = None
    retry = restarts is None and m > SMALL and not handoff
    if restarts is None:
        restarts = RESTARTS if m <= SMALL else 1
    r = 0
    while r < restarts:
        limit = max_depth if st is None else math.ceil(finish(st, y)) - 1
        if limit < 1 or (r > 0 and past(deadline)):
            break
        reached: list[int] = []
        with np.errstate(all="ignore"):  # extreme data: NaN gaps simply fail the search
            found = search(
                X,
                y,
                eps,
                max_depth=limit,
                seed=seed * RESTARTS + r,
                beam=beam,
                candidates=candidates,
                # trained starts once, and for more than SMALL points only: they cost more
                # than a search, and small sets get RESTARTS seeds instead
                warm=warm and r == 0 and m > SMALL,
                handoff=handoff,
                progress=progress,
                reached=reached,
                deadline=deadline,
                arcs=arcs,
                tracker=tracker,
            )
        if found is not None and (st is None or finish(found, y) < finish(st, y)):
            st = found
        close = bool(reached) and reached[0] <= (CLOSE + 1) * k
        if retry and st is None and close and restarts < RESTARTS:
            restarts += 1
        r += 1
    return st


CLOSE = 4
"""A search that leaves at most ``CLOSE k`` boundaries more than it needs is retried with
another seed (:func:`circle_state`): measured on random sets (``m = 200``), a seed that
fails at ``k = 5`` stops 10 to 17 boundaries short and the next seed finishes about every
other time; at ``k = 10`` all stop about 42 short, and at ``m = 1000`` hundreds."""


def circle_net(
    X: np.ndarray, y: np.ndarray, eps: float, **search: Any
) -> tuple[list[Affine[fmpq]], Affine[fmpq]] | None:
    """Layers and a readout (a row per label ``0, ..., k-1``) classifying ``(X, y)`` in float64.

    ``search``: the keywords of :func:`circle_state` (``max_depth`` among them).  None
    when the search finds nothing within ``max_depth`` layers.  The result is *not yet
    certified*: :func:`lncapacity.certify` decides.
    """
    st = circle_state(X, y, eps, **search)
    if st is None:
        return None
    layers, r = _read(st, y, eps, X if search.get("exact") is None else search["exact"])
    return None if r is None else (layers, r)


def _read(
    st: State, y: np.ndarray, eps: Any, exact: Sequence[Sequence[Any]]
) -> tuple[list[Affine[fmpq]], Affine[fmpq] | None]:
    """The layers and readout of a finished state (None: no readout).

    A state in floats is read by :func:`arcs_readout`.  A state in balls (``objective="depth"``)
    by :func:`.precise.readout`, after, with ``eps > 0``, its last layer is scaled by a power of
    two (``Tracker.flattened`` on the exact inputs ``exact``): the readout sees the radius,
    which ``eps`` moves by up to ``2^-40``, far more than a small label gap.  Used by
    :func:`circle_net` and :func:`build_circle` alike."""
    if st.exact is None:
        return st.layers, arcs_readout(st, y)
    if eps and st.boundaries <= int(y.max()) + 1:
        st = Tracker(exact, y, eps).flattened(st) or st
    return st.layers, precise.readout(st, y)


def arcs_readout(st: State, y: np.ndarray) -> Affine[fmpq] | None:
    """The readout of a finished state: every class one arc (:func:`readout`) or, with
    ``k >= 3`` classes, several arcs a class read by a linear program's scores
    (:func:`arcs_lp`, proofs/multiclass.md §9)."""
    r = readout(st.H, y) if st.boundaries <= int(y.max()) + 1 else None
    if r is None and int(y.max()) > 1 and st.boundaries <= most_arcs(int(y.max()) + 1):
        r = arcs_lp(st.H, y, st.err)
    return r


OBJECTIVES = ("faithful", "depth")
"""What the circle search optimises: ``faithful`` (the default: the shallowest net it finds
that float64 runs right) or ``depth`` (the shallowest it finds, certified; float64 reported
only, :mod:`.precise`)."""


CIRCLE_META = ("circle_boundaries", "runs_depth", "circle_layers", "handoff")
"""The keys :func:`build_circle` adds to a net's ``meta`` (dropped when runs replaces it)."""


def build_circle(
    points: Any,
    yk: Sequence[int],
    present: Sequence[Any],
    classes: Sequence[Any],
    eps: fmpq,
    depth: int | None,
    seed: int,
    progress: Progress | None,
    meta: dict[str, Any],
    deadline: float | None = None,
    objective: str = "faithful",
) -> Any:
    """The circle method's entry point from :func:`~lncapacity.construct.build`.

    Returns an :class:`~lncapacity.model.LNNet` (every class one arc after the
    circle layers, or with ``k >= 3`` arcs the readout of :func:`arcs_lp` reads;
    ``build`` certifies it), a :class:`Handoff` when circle layers
    followed by ``runs`` are shallower than either alone, or None after noting in
    ``meta`` (``method = "runs"``, ``fallback``) why ``runs`` is used instead: the
    search found nothing shallower than ``runs`` would build (its depth is the
    number of label runs along the projection minus ``k``).
    With ``depth``, the net is padded with identity layers.  ``deadline``: the search's
    (:func:`circle_state`).  ``objective="depth"``: the search in balls (:mod:`.precise`),
    no hand-over to ``runs`` (its float search would bring float64 back).
    """
    from ...model import LNNet
    from ..project import project, runs

    y = np.asarray(yk)
    k = len(present)
    _, t = project(points.X, list(yk), seed=seed)
    order = sorted(range(len(t)), key=t.__getitem__)
    runs_depth = max(0, runs([yk[i] for i in order]) - k)
    limit = runs_depth - 1 if depth is None else min(depth, runs_depth - 1)
    st = None
    if limit >= 1:
        st = circle_state(
            points.floats(),
            y,
            float(eps),
            max_depth=limit,
            seed=seed,
            # runs with k labels loses float resolution fast (multiclass §6)
            handoff=k == 2 and objective == "faithful",
            progress=progress,
            deadline=deadline,
            objective=objective,
            exact=points.X,
        )
    layers, chosen = [], None
    if st is not None and finish(st, y) <= limit:
        if st.exact is not None or st.boundaries <= k or k > 2:
            layers, chosen = _read(st, y, eps, points.X)
        else:
            layers, chosen = st.layers, handoff_read(st.H)
    if chosen is None:
        why = f"runs needs {runs_depth} layer{'s' * (runs_depth != 1)}" + (
            " and the search found no circle net with fewer"
            if runs_depth > 1
            else ": a circle net (at least one layer) cannot be shallower"
        )
        if depth is not None and depth < runs_depth - 1:
            why += f" (at most {depth} asked)"
        meta.update(method="runs", fallback=f"circle: {why}; runs used")
        if limit >= 1 and (note := getattr(progress, "note", None)):  # a search ran: say so now
            note(f"circle gave way to runs: {why}")
        return None
    meta.update(
        circle_boundaries=[lay.meta.get("boundaries") for lay in layers],
        runs_depth=runs_depth,
        circle_layers=len(layers),
    )
    if isinstance(chosen, np.ndarray):  # a read: runs finishes
        read = tuple(fmpq(*float(v).as_integer_ratio()) for v in chosen)
        values = [fmpq(*float(v).as_integer_ratio()) for v in matmul(st.H, chosen)]
        meta["handoff"] = f"runs after {len(layers)} circle layers"
        if note := getattr(progress, "note", None):
            note(f"circle: {len(layers)} layers leave {st.boundaries} boundaries; runs finishes")
        prefix = LNNet(points.d, 3, eps, tuple(layers), Affine((read,), (fmpq(0),)), (0,), {})

        def start(prec: int) -> list[Any]:  # called inside arith.precision(prec)
            net = prefix.map(arb)
            return [net.forward([arb(v) for v in x], arb.sqrt)[0] for x in points.X]

        return Handoff(layers, read, values, start, 2 * st.err + HANDOFF_ROUNDING)
    needed = len(layers)
    layers = layers + [identity_layer(float(eps))] * ((depth or needed) - needed)
    zero = tuple(fmpq(0) for _ in range(3))
    rows = dict(zip(present, zip(chosen.W, chosen.b, strict=True), strict=True))
    W = tuple(rows[c][0] if c in rows else zero for c in classes)
    b = tuple(rows[c][1] if c in rows else fmpq(-1) for c in classes)
    meta.update(folds=needed, depth=len(layers))
    return LNNet(points.d, 3, eps, tuple(layers), Affine(W, b, chosen.meta), tuple(classes), meta)
