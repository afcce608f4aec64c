"""The circle search: a beam of states, one fold layer at a time (``--method circle``).

:func:`search` keeps the best few states (:mod:`.state`), expands each by the poles
:mod:`.candidates` proposes (``_children``), stops at ``k`` boundaries, or hands
over to ``runs`` (:func:`.handoff.finish`) or gives up when its pace cannot finish;
small nets trained by Adam compete as starting states (``_trained_starts``).
proofs/circle_maps.md.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable

import numpy as np

from ... import adam
from ...reproducible import matmul
from .candidates import _first_layer, _fold_layer_candidates, _spread, seen_from
from .handoff import finish
from .precise import Tracker
from .readouts import arcs_lp, most_arcs
from .state import (
    GAP_MIN,
    SQRT3,
    E,
    State,
    _affine,
    _carry,
    _floats,
    _rank,
    _scaled,
    _score_angles,
    plane,
)

Progress = Callable[[int, int], None]


def _children(
    st: State,
    y: np.ndarray,
    eps: float,
    rng: np.random.Generator,
    candidates: int,
    keep: int,
    tracker: Tracker | None = None,
) -> list[State]:
    """The states one fold layer after ``st``, from its ``keep`` best poles (``tracker``:
    ``objective="depth"``, the children in balls, :mod:`.precise`)."""
    P = plane(st.H)
    out = []
    loose = {} if tracker is None else {"gap_min": 0.0}
    pre = {} if tracker is None else {"cost": tracker.pre_cost}
    for b, _, q in _fold_layer_candidates(P, y, rng, candidates, keep, **loose, **pre):
        u, v = seen_from(P, q[None, :])
        M, _ = _spread(u[0], v[0], y, **loose)
        c, s_ = -q / math.sqrt(q[0] * q[0] + q[1] * q[1])  # the unit vector towards the centre
        Mq = matmul(M, np.array([[c, s_], [-s_, c]]))  # rotate -q to angle 0, then spread
        s = _scaled(matmul(P - q, Mq.T), eps)
        # h = sqrt(3) E x, so x = E^T h / sqrt(3):  P (W h + c) = s E Mq (x - q)
        EMq = matmul(E, Mq)
        layer = _affine(
            matmul(s * EMq, E.T) / SQRT3, matmul(-s * EMq, q), {"kind": "circle", "boundaries": b}
        )
        if tracker is not None:
            if (child := tracker.child(st, layer)) is not None:
                out.append(child)
            continue
        H, theta, err = _carry(st.H, *_floats(layer), eps, st.err)
        bb, gg = _score_angles(theta, y, err)
        if gg >= GAP_MIN:
            out.append(State(H, [*st.layers, layer], bb, gg, err=err))
    return out


def search(
    X: np.ndarray,
    y: np.ndarray,
    eps: float,
    *,
    max_depth: int,
    seed: int = 0,
    beam: int = 4,
    candidates: int = 1500,
    warm: bool = True,
    handoff: bool = False,
    progress: Progress | None = None,
    reached: list[int] | None = None,
    deadline: float | None = None,
    arcs: bool = True,
    tracker: Tracker | None = None,
) -> State | None:
    """A beam search for layers leaving every class one arc (``k`` boundaries), or with
    ``k >= 3`` arcs :func:`.readouts.arcs_lp` reads (``_readable``); None if not found.
    ``reached``: a list that is left holding the fewest boundaries of any state
    kept (how close a failed search came).

    ``X``: the points as float64 (``m x d``), ``y`` labels ``0 .. k-1``, each
    present.  Deterministic for ``seed``.  The returned state has the layers
    (exact dyadic weights) and the float64 outputs ``H`` of the last one.  With
    ``warm`` (and data in ``R^d``, ``d > 1``) the first layers of small nets trained by
    Adam (:mod:`lncapacity.adam`) compete as starting states (``_trained_starts``).
    States are ranked by boundaries plus :data:`~.state.LAMBDA` per halving of the label gap
    below :data:`~.state.COMFORT` (what float arithmetic must keep resolving).

    ``handoff``: the search may stop early with the state whose :func:`~.handoff.finish`
    (its depth plus the layers ``runs`` needs from it) is least: once that is no more
    than the depth the circle's pace over the last :data:`PATIENCE` layers projects,
    or when the search ends without finishing.  Then the returned
    state may have more than ``k`` boundaries; the caller finishes it with ``runs``.

    ``arcs`` (the default; ``k >= 3``; not with ``tracker``): stop at the first state
    :func:`.readouts.arcs_lp` reads (False: only at ``k`` boundaries, for
    comparison).

    ``deadline`` (a ``time.process_time()`` value): the search stops at the first layer
    begun after it, as if it had reached ``max_depth`` (``--budget``; then the net depends
    on the machine's speed, not only on the seed).

    ``tracker`` (``objective="depth"``, :class:`~.precise.Tracker`): the states carry their
    points in balls, scored by rigorous gaps with no float error (:func:`.precise.rank`);
    no float64 faithfulness is sought.
    """
    rng = np.random.default_rng(seed)
    k = int(y.max()) + 1
    states = []
    loose = {} if tracker is None else {"gap_min": 0.0, "cost": tracker.pre_cost}
    for b, gap, Q, q in _first_layer(X, y, rng, beam, 256, **loose):
        M = np.eye(2)
        s = _scaled(matmul(matmul(X, Q) - q, M.T), eps)
        EM = matmul(E, M)
        layer = _affine(
            matmul(s * EM, Q.T), matmul(-s * EM, q), {"kind": "circle-first", "boundaries": b}
        )
        H, _, err = _carry(X, *_floats(layer), eps)
        states.append(State(H, [layer], b, gap, err=err))
    if warm and X.shape[1] > 1 and not past(deadline):
        states += [
            st for st in _trained_starts(X, y, eps, seed, max_depth, deadline) if st.gap >= GAP_MIN
        ]
    if tracker is not None:
        states = [t for t in map(tracker.start, states) if t is not None]
    kept: State | None = None  # handoff: the state with the least finish so far
    history: dict[int, int] = {}  # depth -> fewest boundaries reached
    while states:
        best = min(states, key=lambda s: (s.boundaries, -s.gap))
        depth = len(best.layers)
        history[depth] = best.boundaries
        if reached is not None:
            reached[:] = [min(history.values())]
        if handoff:
            for st in states:
                if finish(st, y) < (math.inf if kept is None else finish(kept, y)):
                    kept = st
        if progress:
            guess = depth + _estimate(best.boundaries - k + 2)
            if depth - PATIENCE in history and history[depth - PATIENCE] > best.boundaries:
                # the recent pace's projection: folds remove a few boundaries each, so the
                # logarithmic estimate alone promised the end far too soon on large sets
                pace = (history[depth - PATIENCE] - best.boundaries) / PATIENCE
                guess = max(guess, depth + math.ceil((best.boundaries - k) / pace))
            if kept is not None:
                guess = min(guess, finish(kept, y))
            progress(depth, max(depth, min(max_depth, guess)))
        if best.boundaries <= k:
            return best if kept is None or finish(best, y) <= finish(kept, y) else kept
        # the LP reads float64 positions: not under the depth objective (its readout is in balls)
        if arcs and k > 2 and tracker is None and (read := _readable(states, y)) is not None:
            return read
        if depth >= max_depth or past(deadline):
            break
        if handoff and kept is not None and depth - PATIENCE in history:
            # hand over once runs from the kept state beats the circle's recent pace
            pace = (history[depth - PATIENCE] - best.boundaries) / PATIENCE
            if pace <= 0 or finish(kept, y) <= depth + (best.boundaries - k) / pace:
                break
        if depth - 2 * PATIENCE in history and best.boundaries - k > 2 * PATIENCE:
            # give up when the pace over the last layers cannot finish within max_depth
            # (not near the end, where a few boundaries may take a few tries)
            pace = (history[depth - 2 * PATIENCE] - best.boundaries) / (2 * PATIENCE)
            if pace <= 0 or depth + (best.boundaries - k) / pace > GIVE_UP * max_depth:
                break
        expanded = [
            c for st in states for c in _children(st, y, eps, rng, candidates, 2 * beam, tracker)
        ]
        expanded.sort(key=_rank if tracker is None else tracker.rank)
        # diversity: at most two states per boundary count
        states, seen = [], Counter()
        for st in expanded:
            if seen[st.boundaries] < 2:
                states.append(st)
                seen[st.boundaries] += 1
            if len(states) == beam:
                break
    return kept


PATIENCE = 6
"""Layers over which the handoff search measures its pace (boundaries removed per layer)."""
GIVE_UP = 1.5
"""The search stops when its pace over ``2 PATIENCE`` layers projects more than this many
times ``max_depth`` (it would not beat ``runs``: the time is better spent there)."""

TRAIN_DEPTHS = (1, 2)
"""Depths of the nets trained by Adam as warm starts."""
TRAIN_STEPS = 1500
TRAIN_STREAM = 1
"""The warm starts' random stream: ``numpy.random.default_rng((seed, TRAIN_STREAM))``."""


def past(deadline: float | None) -> bool:
    """Whether the ``time.process_time()`` ``deadline`` (None: none) has passed."""
    return deadline is not None and time.process_time() > deadline


def _trained_starts(
    X: np.ndarray,
    y: np.ndarray,
    eps: float,
    seed: int,
    max_depth: int,
    deadline: float | None = None,
) -> list[State]:
    """States after the layers of small LN-Nets trained by Adam (float64, seeded).

    Real data has structure a 2-D angle can see at once (a depth-2 LN-Net trained
    for seconds gets about 99% of digits even/odd right): its layers, taken as
    the exact dyadic rationals their float64 weights are, leave few label
    boundaries for the folds to remove.  Trained by :mod:`lncapacity.adam` (NumPy, the
    same weights on every processor).
    """
    mu = X.mean(axis=0)
    sd = float(np.abs(X - mu).max()) or 1.0
    Xs = (X - mu) / sd
    k = int(y.max()) + 1
    loss = adam.Loss(sign=np.where(y == 1, 1.0, -1.0)) if k == 2 else adam.Loss(target=y)
    rng = np.random.default_rng((seed, TRAIN_STREAM))

    def out_of_time(step: int, _: np.ndarray) -> bool:  # then the start as trained so far
        return step % 100 == 0 and past(deadline)

    out = []
    for depth in TRAIN_DEPTHS:
        if depth > max_depth or past(deadline):
            continue
        params, fan_in = [], X.shape[1]
        for _ in range(depth):
            params += [
                rng.standard_normal((3, fan_in)) / math.sqrt(fan_in),
                rng.standard_normal(3) * 0.1,
            ]
            fan_in = 3
        if k == 2:  # one score, logistic loss
            params += [rng.standard_normal(3), np.zeros(1)]
        else:  # k scores, cross-entropy
            params += [rng.standard_normal((3, k)), np.zeros(k)]
        params, _ = adam.train(params, Xs, eps, loss, TRAIN_STEPS, stop=out_of_time)
        layers, H, err = [], X, None
        for i in range(depth):
            W, b = params[2 * i], params[2 * i + 1]
            if i == 0:  # undo the standardisation: W (x - mu) / sd + b
                W, b = W / sd, b - matmul(W, mu) / sd
            G = matmul(matmul(H, W.T) + b, E)
            s = _scaled(G, eps)
            layer = _affine(s * W, s * b, {"kind": "trained"})
            H, theta, err = _carry(H, *_floats(layer), eps, err)
            layers.append(layer)
        bb, gg = _score_angles(theta, y, err)
        for layer in layers:
            layer.meta["boundaries"] = bb  # type: ignore[index]
        out.append(State(H, layers, bb, gg, err=err))
    return out


def _readable(states: list[State], y: np.ndarray) -> State | None:
    """The first of ``states`` (fewest boundaries first) that :func:`.readouts.arcs_lp` reads,
    ``k >= 3`` classes with more arcs than classes (proofs/multiclass.md §9); its
    :func:`~.handoff.finish` is its depth.  Only states with at most
    :func:`.readouts.most_arcs` boundaries are tried (no argmax of ``k`` scores reads more,
    §9 Lemma 9.1)."""
    most = most_arcs(int(y.max()) + 1)
    for st in sorted(states, key=lambda s: (s.boundaries, -s.gap)):
        if st.boundaries <= most and arcs_lp(st.H, y, st.err) is not None:
            st.finish = len(st.layers)
            return st
    return None


def _estimate(b: int) -> int:
    """A low guess of the layers still to go from ``b + k - 2`` boundaries, the progress line's
    first: each layer at most doubles the break points (proofs/circle_maps.md §3.1), a pace
    the search's few boundaries a layer seldom approaches."""
    return max(0, (b + 1).bit_length() - 2)  # ceil(log2(b + 2)) - 2, for b >= -1
