"""The circle readout with more arcs than classes (proofs/multiclass.md §9).

The claims tested: an argmax of ``k`` affine scores reads a class on several arcs, found by a
linear program whose weights are checked exactly (every margin beyond the widened float
error) and certified; the circle search stops at the first state it reads; labelings no
argmax reads, or whose float error leaves no margin, get no readout.
"""

from __future__ import annotations

import numpy as np
from flint import fmpq

from lncapacity import build, certify, floats, points_from_arrays
from lncapacity.construct.circle import SQRT3, E, arcs_lp, readout
from lncapacity.construct.circle.readouts import MARGIN_MIN, alternate, most_arcs
from lncapacity.construct.circle.state import SAFETY


def on_circle(phi: np.ndarray) -> np.ndarray:
    """LayerNorm outputs (eps = 0) at the angles ``phi``."""
    return SQRT3 * np.c_[np.cos(phi), np.sin(phi)] @ E.T


def caps() -> tuple[np.ndarray, np.ndarray]:
    """60 points of the unit circle: four caps of classes 1 to 4, class 0 on the four arcs
    between them (8 boundaries, 5 classes)."""
    phi = np.linspace(-3.1, 3.1, 60)
    y = np.zeros(60, dtype=int)
    for c, a in enumerate((0.0, np.pi / 2, np.pi, -np.pi / 2)):
        y[np.cos(phi - a) > 0.92] = c + 1
    return phi, y


def exact_margins(H: np.ndarray, y: np.ndarray, r) -> list[fmpq]:
    """Per point, its own score less the best other one, exactly (``H`` as dyadic rationals)."""
    out = []
    for h, c in zip(H, y, strict=True):
        hq = [fmpq(*float(v).as_integer_ratio()) for v in h]
        rows = zip(r.W, r.b, strict=True)
        s = [sum((w * v for w, v in zip(row, hq, strict=True)), b) for row, b in rows]
        out.append(s[c] - max(s[j] for j in range(len(s)) if j != c))
    return out


def test_a_class_on_four_arcs_is_read_exactly_with_the_margin_float64_needs():
    phi, y = caps()
    H = on_circle(phi)
    assert readout(H, y) is None  # the polygon needs one arc per class
    err = np.full(len(y), 1e-6)
    r = arcs_lp(H, y, err)
    assert r is not None and r.meta["kind"] == "arcs-lp"
    bound = fmpq(*float(2 * np.sqrt(2) * SAFETY * 1e-6 + MARGIN_MIN).as_integer_ratio())
    assert min(exact_margins(H, y, r)) > bound
    # an error bound wider than every margin an argmax can have: no readout
    assert arcs_lp(H, y, np.full(len(y), 0.05)) is None


def test_labelings_no_argmax_of_three_scores_reads_get_none():
    phi = np.linspace(-3.0, 3.0, 12)
    H = on_circle(phi)
    # 5 boundaries: classes 0 and 2 on two arcs each (three classes: at most 4)
    assert arcs_lp(H, np.array([2, 0, 0, 2, 1, 1, 1, 1, 0, 0, 2, 2]), np.zeros(12)) is None
    # four classes, 6 boundaries (2k - 2), but 0 and 1 alternate: no line separates them
    y = np.array([0, 0, 1, 1, 0, 0, 1, 1, 2, 2, 3, 3])
    assert alternate([0, 1, 0, 1, 2, 3]) and not alternate([0, 1, 0, 2, 0, 3])
    assert arcs_lp(H, y, np.zeros(12)) is None
    assert most_arcs(3) == 4 and most_arcs(10) == 18


def test_the_circle_search_stops_at_the_first_state_the_lp_reads():
    phi, y = caps()
    points = points_from_arrays(np.c_[np.cos(phi), np.sin(phi)], y)
    net = build(points)  # the default for five classes: circle
    assert net.meta["method"] == "circle" and net.readout.meta["kind"] == "arcs-lp"
    assert net.depth == 1 and net.meta["circle_boundaries"] == [8]
    assert net.meta["runs_depth"] > 1
    assert certify(net, points).all_certified
    assert floats.check(net, points, "float64").all_agree


def test_outputs_float64_could_not_compute_get_no_readout():
    phi, y = caps()
    H = on_circle(phi)
    H[3] = np.nan
    assert arcs_lp(H, y, np.zeros(len(y))) is None
    assert arcs_lp(on_circle(phi), y, np.full(len(y), np.inf)) is None
