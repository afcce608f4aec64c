"""The circle net's readout: every class one arc (``--method circle``).

Two classes: a chord (:func:`chord`); ``k``: the polygon inscribed at the cuts between
the arcs (:func:`polygon`, proofs/multiclass.md §7).
With ``k >= 3`` a class may also lie on several arcs: :func:`arcs_lp` finds the scores by a
linear program (proofs/multiclass.md §9).
"""

from __future__ import annotations

import math

import numpy as np
from flint import fmpq

from ...elementary import atan2, cos, direction
from ...model import Affine
from ...reproducible import matmul
from .state import SAFETY, SQRT3, E, _affine, _floats, plane


def readout(H: np.ndarray, y: np.ndarray) -> Affine[fmpq] | None:
    """The readout of labels ``0, ..., k-1`` forming ``k`` arcs: :func:`chord` for two,
    :func:`polygon` for more; None if they do not form ``k`` arcs (in float64)."""
    return chord(H, y) if int(y.max()) == 1 else polygon(H, y)


def _arc_ends(p: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For the points ``p`` of the plane (:func:`.state.plane`): their angles sorted, their
    labels in that order, and the indices ``i`` with a label change from sorted point ``i``
    to ``i + 1`` (cyclically): the arcs' ends."""
    theta = atan2(p[:, 1], p[:, 0])
    order = np.argsort(theta, kind="stable")
    lab = y[order]
    return theta[order], lab, np.flatnonzero(lab != np.roll(lab, -1))


def _arcs(H: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """``_arc_ends`` of ``H``'s points; None unless each label is one arc."""
    srt, lab, ch = _arc_ends(plane(H), y)
    return None if len(ch) != int(y.max()) + 1 else (srt, lab, ch)


def _gap_middle(srt: np.ndarray, i: int) -> float:
    """The angle halfway from sorted point ``i`` to the next (cyclically, unwrapped)."""
    m = len(srt)
    return (srt[i] + srt[(i + 1) % m] + (2 * math.pi if i + 1 >= m else 0.0)) / 2


def polygon(H: np.ndarray, y: np.ndarray) -> Affine[fmpq] | None:
    """An argmax readout for ``k >= 3`` classes, each one arc of the circle.

    Cut the circle in the middle of the ``k`` gaps between arcs: the cut points
    are the vertices of a convex polygon inscribed in the circle, and the arc of
    class ``c`` is the cap beyond its edge.  Score ``c`` is the signed distance
    beyond that edge, ``e(mu_c) . p - cos(w_c)`` (``mu_c`` the middle and ``w_c``
    the half-width of the arc between its cuts): positive on the arc, negative
    on every other arc (the edges' lines meet the circle only at the cuts), so
    the argmax is ``c`` exactly on the arc (proofs/multiclass.md, the circle
    readout).  ``p = E^T h / sqrt(3)``, so row ``c`` is ``E e(mu_c) / sqrt(3)``.
    """
    arcs = _arcs(H, y)
    if arcs is None:
        return None
    srt, lab, ch = arcs
    k = len(ch)
    cuts = [_gap_middle(srt, int(i)) for i in ch]
    W, b = np.zeros((k, 3)), np.zeros(k)
    for j in range(k):
        lo, hi = cuts[j], cuts[(j + 1) % k]
        if hi <= lo:
            hi += 2 * math.pi
        c = int(lab[(ch[j] + 1) % len(lab)])  # the label of the arc after cut j
        mid, half = (lo + hi) / 2, (hi - lo) / 2
        W[c] = matmul(E, direction(mid)) / SQRT3
        b[c] = -cos(half)
    layer = _affine(W, b, {"kind": "arcs", "cuts": [float(g) for g in cuts]})
    Wf, bf = _floats(layer)
    if not (np.argmax(matmul(H, Wf.T) + bf, axis=1) == y).all():
        return None
    return layer


def chord(H: np.ndarray, y: np.ndarray) -> Affine[fmpq] | None:
    """A chord readout: rows ``(-a, a)``, biases ``(t, -t)`` with ``a^T h > t`` exactly on label 1.

    ``a = E n`` for the unit normal ``n`` pointing to the middle of the label-1
    arc; ``t`` halfway between the two labels' extreme values.  None if the
    labels do not form two arcs (in float64).
    """
    arcs = _arcs(H, y)
    if arcs is None:
        return None
    srt, lab, ch = arcs
    m = len(srt)
    g = [_gap_middle(srt, int(i)) for i in ch]
    # the arc from g[k] to g[k+1] counter-clockwise holds label lab[ch[k]+1]
    k = 0 if lab[(ch[0] + 1) % m] == 1 else 1
    alpha, beta = g[k], g[1 - k]
    if beta < alpha:
        beta += 2 * math.pi
    mid = (alpha + beta) / 2
    a = matmul(E, direction(mid))
    sc = matmul(H, a)
    lo, hi = float(sc[y == 0].max()), float(sc[y == 1].min())
    if not lo < hi:
        return None
    t = (lo + hi) / 2
    W = np.array([-a, a])
    return _affine(W, np.array([t, -t]), {"kind": "chord", "threshold": float(t)})


MARGIN_MIN = 2.0**-36
"""The least score margin a readout found by :func:`arcs_lp` must leave at every point after
its float error is allowed for (scores are of size one: float64 rounds them to ``2^-50``)."""


def most_arcs(k: int) -> int:
    """The most label boundaries around the circle an argmax of ``k >= 2`` affine scores can
    realise: ``2 k - 2``.

    proofs/multiclass.md §9, Lemma 9.1: no two classes alternate (``a, b, a, b`` in this
    order, not necessarily adjacent), and such cyclic words have at most ``2 k - 2`` letters.
    """
    return 2 * k - 2


def alternate(arcs: list[int]) -> bool:
    """Whether two labels alternate in the cyclic word ``arcs``: ``a, b, a, b`` in this order.

    ``arcs``: the labels of the arcs around the circle, cyclic neighbours distinct; the
    letters of the pattern need not be adjacent.  Then the two classes are not separated
    by a line, and no argmax of affine scores reads them (proofs/multiclass.md §9,
    Lemma 9.1)."""
    for a in set(arcs):
        for b in set(arcs):
            if a < b:
                w = [c for c in arcs if c in (a, b)]
                if sum(w[i] != w[i - 1] for i in range(len(w))) > 2:
                    return True
    return False


def arcs_lp(H: np.ndarray, y: np.ndarray, err: np.ndarray) -> Affine[fmpq] | None:
    """An argmax readout of ``k >= 3`` classes whose arcs need not be one per class; None when
    the linear program finds none with a margin float64 resolves.

    The scores ``s_c(p) = a_c . p + b_c`` of the point ``p = E^T h / sqrt(3)`` on the circle
    have convex argmax cells, and a convex cell meets the circle in several arcs
    (proofs/multiclass.md §9); arcs in which two classes alternate (:func:`alternate`) are
    refused at once.  Whether the labels are realised with margin ``t`` is the
    linear program: maximise ``t`` subject to
    ``s_{y_i}(p_i) - s_c(p_i) >= t + 2 sqrt(2) SAFETY err_i`` for every point ``i`` and class
    ``c != y_i``, with ``|a_c|, |b_c| <= 1`` componentwise (``m (k - 1)`` rows, ``3 k + 1``
    columns; ``err_i`` the float error bound of the angle, :attr:`State.err <.state.State.err>`,
    which moves ``p_i`` by at most ``err_i`` and a difference of scores by at most
    ``|a_y - a_c| err_i <= 2 sqrt(2) err_i``).  The LP is solved in floats by HiGHS
    (scipy): *a float LP proposes, the certificate decides*.  Its weights, rounded to float64
    (exact dyadic rationals), are checked again here in float64 (every margin at least
    :data:`MARGIN_MIN` beyond the widened error), and the net is certified by
    :func:`lncapacity.certify` in ball arithmetic.  An infeasible LP is no proof that the
    labeling cannot be realised: it only stops this readout from being used.
    """
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix

    k = int(y.max()) + 1
    m = len(y)
    p = plane(H)
    if not (np.isfinite(p).all() and np.isfinite(err).all()):
        return None  # extreme data: NaN or infinite outputs are read by no LP
    _, lab, ends = _arc_ends(p, y)
    if len(ends) > most_arcs(k) or alternate([int(lab[i]) for i in ends]):
        return None  # no argmax reads these arcs (Lemma 9.1): no LP needed
    widened = 2 * math.sqrt(2) * SAFETY * np.asarray(err, dtype=float)
    i, c = np.nonzero(np.arange(k)[None, :] != y[:, None])  # the m (k - 1) rows
    rows = np.arange(len(i))
    yi = y[i]
    # row: -(a_y - a_c) . p_i - (b_y - b_c) + t <= -widened_i
    data, cols, rr = [], [], []
    for sign, cls in ((-1.0, yi), (1.0, c)):
        for j, v in enumerate((p[i, 0], p[i, 1], np.ones(len(i)))):
            data.append(sign * v)
            cols.append(3 * cls + j)
            rr.append(rows)
    data.append(np.ones(len(i)))
    cols.append(np.full(len(i), 3 * k))
    rr.append(rows)
    A = coo_matrix(
        (np.concatenate(data), (np.concatenate(rr), np.concatenate(cols))),
        shape=(len(i), 3 * k + 1),
    ).tocsr()
    cost = np.zeros(3 * k + 1)
    cost[-1] = -1.0
    bounds = [(-1.0, 1.0)] * (3 * k) + [(None, 4.0)]
    res = linprog(
        cost,
        A_ub=A,
        b_ub=-widened[i],
        bounds=bounds,
        method="highs",
        options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10},
    )
    if res.status != 0 or not -res.fun > MARGIN_MIN or m == 0:
        return None
    ab = res.x[: 3 * k].reshape(k, 3)
    W = matmul(ab[:, :2], E.T) / SQRT3
    layer = _affine(W, ab[:, 2], {"kind": "arcs-lp", "margin": float(-res.fun)})
    Wf, bf = _floats(layer)
    S = matmul(H, Wf.T) + bf
    own = S[np.arange(m), y]
    S[np.arange(m), y] = -np.inf
    if not (own - S.max(axis=1) - widened >= MARGIN_MIN).all():
        return None
    return layer
