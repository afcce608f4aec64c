"""The certificate says what it merged and by how much a failing net fails (issue 35)."""

from __future__ import annotations

import math

from flint import fmpq

from lncapacity import build, certify
from lncapacity.model import Affine, LNNet

XOR_X = [[0, 0], [0, 1], [1, 0], [1, 1]]
XOR_Y = [0, 1, 1, 0]


def test_duplicate_rows_are_counted_and_mapped() -> None:
    X = [*XOR_X, [0, 1], [0, 0], [0, 1]]
    y = [*XOR_Y, 1, 0, 1]
    cert = certify(build(XOR_X, XOR_Y), X, y)
    assert len(cert.points) == 4 and cert.merged == 3
    assert cert.origins == ((0, 5), (1, 4, 6), (2,), (3,))
    assert cert.to_dict()["merged_rows"] == 3


def test_worst_margin_encloses_the_failing_margin() -> None:
    """A linear net ``z = (x, -x)`` on labels 0, 0: point 1 has margin ``-2 * 1 = -2``,
    point 0 margin ``2 * 3 = 6``; exact, so the enclosure is tight around -2."""
    one = fmpq(1)
    net = LNNet(1, None, fmpq(0), (), Affine(((one,), (-one,)), (fmpq(0), fmpq(0))), (0, 1), {})
    cert = certify(net, [[3], [-1]], [0, 0])
    assert cert.min_margin == -math.inf and cert.wrong == 1
    lo, hi = cert.worst_margin
    assert lo <= -2 <= hi and hi - lo < 1e-9
    assert cert.to_dict()["worst_margin_interval"] == [lo, hi]
    right = certify(net, [[3], [1]], [0, 0])
    assert right.all_certified and right.worst_margin[0] <= 2 <= right.worst_margin[1]
