"""The sector construction (``lncapacity.construct.sector``) and the exact sector enumeration
(``lncapacity.theory.sectors``): nets certified for every labeling they accept, refusals that
the enumeration proves right."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from flint import fmpq

from lncapacity.certify import certify
from lncapacity.construct.sector import plan, sector_net
from lncapacity.errors import InputError
from lncapacity.search import find_net
from lncapacity.shatter import _decode, _lines, _point_set, _read_header, labels_of
from lncapacity.theory import sectors as S
from lncapacity.theory.vc import repo_root

HEXAGON = [  # convex: around an inner apex the alternating labeling changes 6 times, from far
    (fmpq(2), fmpq(0)),  # away (the order of a projection) 4 times
    (fmpq(1), fmpq(2)),
    (fmpq(-1), fmpq(2)),
    (fmpq(-2), fmpq(0)),
    (fmpq(-1), fmpq(-2)),
    (fmpq(1), fmpq(-3)),
]
LINE = [(fmpq(k), fmpq(0)) for k in range(7)]  # collinear: alternating labels change 6 times


def _floats(X):
    return np.array([[float(v) for v in x] for x in X])


def test_the_hexagon_is_shattered_at_depth_two_by_the_construction():
    four, two = S.sector_labelings(HEXAGON, 4), S.sector_labelings(HEXAGON, 2)
    assert len(four) == 64 and 0b010101 not in two  # depth 1 cannot alternate around it
    for k in sorted(four)[::3]:
        y = labels_of(k, 6)
        net = sector_net(_point_set(HEXAGON, y), 2)
        assert net.depth == 2 and certify(net, HEXAGON, y, workers=1).all_certified
        assert net.meta["method"] == "sector"


def test_refusals_are_what_the_enumeration_proves():
    y = labels_of(0b1010101, 7)
    assert 0b1010101 not in S.sector_labelings(LINE, 4)
    assert plan(_floats(LINE), np.array(y), 4) is None
    with pytest.raises(InputError, match="at most 4 times"):
        sector_net(_point_set(LINE, y), 3)
    # depth 1 takes two changes: a labeling with four is refused there
    k = next(k for k in sorted(S.sector_labelings(HEXAGON, 4) - S.sector_labelings(HEXAGON, 2)))
    with pytest.raises(InputError, match="at most 2 times"):
        sector_net(_point_set(HEXAGON, labels_of(k, 6)), 1)


def test_deeper_nets_are_padded_and_bad_input_refused():
    y = labels_of(0b000111, 6)
    net = sector_net(_point_set(HEXAGON, y), 4)
    assert net.depth == 4 and certify(net, HEXAGON, y, workers=1).all_certified
    with pytest.raises(InputError, match=r"not R\^1"):
        sector_net(_point_set([(fmpq(k),) for k in range(3)], [0, 1, 0]), 2)


def test_find_net_takes_the_sector_construction_first_and_falls_back_to_the_circle_search():
    y = labels_of(0b000111, 6)
    net = find_net(_point_set(HEXAGON, y), 2, fmpq(0), method="sector")
    assert net is not None and net.meta["method"] == "sector"
    y = labels_of(0b1010101, 7)  # six changes on a line: the circle search at depth 3
    net = find_net(_point_set(LINE, y), 3, fmpq(0), method="sector", restarts=4)
    assert net is not None and net.meta["method"] == "circle-search"
    assert certify(net, LINE, y, workers=1).all_certified
    with pytest.raises(InputError, match="unknown search method"):
        find_net(_point_set(LINE, y), 3, fmpq(0), method="sectors")


def test_the_shipped_plane_row_at_depth_two_is_the_sector_construction():
    path = repo_root() / "certificates" / "shatter-plane-L2-n13.jsonl.gz"
    lines = _lines(path)
    header = _read_header(next(lines)[1], path)
    assert (header.m, header.depth) == (13, 2)
    kinds = set()
    for i, (_, rec) in enumerate(lines):
        if "labeling" in rec and i % 97 == 0 and "lnnet" in rec:
            kinds.add(_decode(rec, header).meta.get("method"))
    assert kinds == {"sector"}
    assert json.dumps([[str(v) for v in p] for p in header.points]).count("/") >= 13


def test_in_space_two_half_spaces_give_the_depth_one_nets():
    from lncapacity.construct.sector import halfspace_sets, wedge_plan

    X = [(fmpq(a), fmpq(b), fmpq(c)) for a, b, c in SPACE]
    Y = _floats(X)
    sets = halfspace_sets(Y)
    assert len(sets) <= 2 * sum(math.comb(6, i) for i in range(4))  # Cover's count
    wedges = {a & b for a in sets for b in sets}
    assert len(wedges | {127 ^ w for w in wedges}) == 128  # seven points shattered at depth 1
    for k in (0b0101010, 0b1100110, 0b0011101):
        y = labels_of(k, 7)
        assert wedge_plan(Y, np.array(y)) is not None
        net = sector_net(_point_set(X, y), 1)
        assert net.input_dim == 3 and certify(net, X, y, workers=1).all_certified


SPACE = [(3, 1, 4), (-1, 5, -9), (2, -6, 5), (-3, 5, 8), (9, -7, 9), (-3, -2, 3), (8, 4, -6)]
