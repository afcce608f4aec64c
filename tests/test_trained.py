"""Nets beyond the constructions: any widths, LayerNorm gains and biases, three verdicts.

No PyTorch here (tests/test_interop.py has the imports): the nets are made by hand.
"""

from __future__ import annotations

import json
import math
import random

import dyadic_nets
import numpy as np
import pytest
import sympy
from flint import arb, fmpq
from lnnet1_reader import from_dict as lnnet1_from_dict

from lncapacity import InputError, build, certify
from lncapacity.arith import precision
from lncapacity.certify import decide, interval_pass
from lncapacity.fileformat import FEATURES, from_dict, to_dict
from lncapacity.model import Affine, LNNet, Norm


def affine(W, b):
    return Affine(tuple(tuple(fmpq(w) for w in row) for row in W), tuple(fmpq(v) for v in b))


EPS = fmpq(1, 2**17)
ZERO = fmpq(0)


def random_net(rng, widths, eps=EPS, **kwargs):
    """A net with dyadic weights (as trained float weights are), layers of the given widths."""
    return dyadic_nets.random_net(rng, [(n, 1) for n in widths], eps=eps, **kwargs)


def tie_net(gain=None, bias=None, offset=ZERO):
    """``h = LN((x1, x2, 0))``, ``z = (h_0 + offset, h_1)``: every point with ``x1 = x2`` ties
    when ``offset = 0`` (then ``h_0 = h_1`` exactly, an irrational number in general)."""
    layer = affine([[1, 0], [0, 1], [0, 0]], [0, 0, 0])
    readout = affine([[1, 0, 0], [0, 1, 0]], [offset, 0])
    norms = (Norm(gain, bias),)
    return LNNet(2, 3, fmpq(1, 100000), (layer,), readout, (0, 1), {}, norms)


# ---------------------------------------------------------------------------
# the model


def test_widths_may_differ_and_width_says_so():
    net = random_net(random.Random(1), [4, 7, 2])
    assert net.width is None and net.widths == (4, 7, 2) and net.depth == 3
    same = random_net(random.Random(1), [5, 5])
    assert same.width == 5 and same.widths == (5, 5)
    built = build([[0, 0], [0, 1], [1, 0], [1, 1]], [0, 1, 1, 0])
    assert built.width == 3 and built.norms == ()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda n: {"norms": n.norms[:1]}, "norms must have one entry per layer"),
        (lambda n: {"norms": (Norm((fmpq(1),)), *n.norms[1:])}, "layer 1: LayerNorm gain must"),
        (lambda n: {"width": 5}, "layer 1: W must be 5x2"),
    ],
)
def test_malformed_nets_are_refused(change, message):
    net = random_net(random.Random(2), [4, 3])
    fields = {f: getattr(net, f) for f in net.__dataclass_fields__} | change(net)
    with pytest.raises(InputError, match=message):
        LNNet(**fields)


def test_a_layer_of_width_one_is_refused():
    with pytest.raises(InputError, match="layer 1: width must be >= 2"):
        LNNet(1, None, fmpq(0), (affine([[1]], [0]),), affine([[1]], [0]), (0,))


def test_identity_norms_are_no_norms():
    net = random_net(random.Random(3), [3, 3], gains=False)
    assert net.norms == () and net.folded() is net


def test_folding_gains_is_exact():
    # symbolically: the folded net computes the very same scores, as algebraic numbers
    net = random_net(random.Random(4), [3, 2], k=2, eps=fmpq(1, 7))
    folded = net.folded()
    assert folded.norms == () and folded.widths == net.widths
    x = [fmpq(3, 4), fmpq(-5, 2)]
    exact = net.map(lambda q: sympy.Rational(int(q.p), int(q.q)))
    exact_folded = folded.map(lambda q: sympy.Rational(int(q.p), int(q.q)))
    xs = [sympy.Rational(int(v.p), int(v.q)) for v in x]
    for a, b in zip(
        exact.forward(xs, sympy.sqrt), exact_folded.forward(xs, sympy.sqrt), strict=True
    ):
        assert sympy.simplify(a - b) == 0
    # and the gain matters: dropping it changes the scores
    plain = LNNet(net.input_dim, net.width, net.eps, net.layers, net.readout, net.classes)
    z1 = exact.forward(xs, sympy.sqrt)
    z2 = plain.map(lambda q: sympy.Rational(int(q.p), int(q.q))).forward(xs, sympy.sqrt)
    assert sympy.N(z1[0] - z2[0]) != 0


# ---------------------------------------------------------------------------
# the file format


def test_built_nets_stay_lnnet_1_byte_for_byte():
    net = build([[0, 0], [0, 1], [1, 0], [1, 1]], [0, 1, 1, 0])
    d = to_dict(net)
    assert d["format"] == "lnnet/1" and "requires" not in d
    assert all("ln" not in layer for layer in d["layers"])
    assert list(d) == [
        "format",
        "input_dim",
        "width",
        "eps",
        "layers",
        "readout",
        "classes",
        "meta",
    ]
    assert lnnet1_from_dict(json.loads(json.dumps(d))) == net == from_dict(d)


def test_gains_and_widths_round_trip_exactly():
    net = random_net(random.Random(5), [4, 6, 3])
    d = json.loads(json.dumps(to_dict(net)))
    assert d["format"] == "lnnet/1.1" and d["requires"] == ["ln-affine", "widths"]
    assert d["width"] is None and set(d["layers"][0]["ln"]) == {"gain", "bias"}
    assert from_dict(d) == net
    only_bias = LNNet(
        net.input_dim,
        None,
        net.eps,
        net.layers,
        net.readout,
        net.classes,
        {},
        (Norm(None, net.norms[0].bias), Norm(), Norm(net.norms[2].gain)),
    )
    d = to_dict(only_bias)
    assert d["layers"][0]["ln"] == {"bias": d["layers"][0]["ln"]["bias"]}
    assert "ln" not in d["layers"][1] and list(d["layers"][2]["ln"]) == ["gain"]
    assert from_dict(json.loads(json.dumps(d))) == only_bias


def test_a_reader_from_before_refuses_what_it_cannot_compute():
    gains = random_net(random.Random(6), [4, 4])  # same widths: only the gains are new
    d = to_dict(gains)
    assert d["format"] == "lnnet/1.1" and d["requires"] == ["ln-affine"]
    with pytest.raises(InputError, match=r"format: expected 'lnnet/1', got 'lnnet/1.1'"):
        lnnet1_from_dict(d)
    # why a new format string: labelled lnnet/1, the old reader would silently drop the gains
    # and compute another net
    disguised = dict(d, format="lnnet/1")
    misread = lnnet1_from_dict(disguised)
    assert misread.norms == () and misread != gains
    widths = to_dict(random_net(random.Random(7), [4, 5], gains=False))
    assert widths["requires"] == ["widths"]
    with pytest.raises(InputError, match="format"):
        lnnet1_from_dict(widths)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (
            lambda d: d.update(requires=["ln-affine", "quantised"]),
            r"requires: this file needs 'quantised', unknown to lncapacity",
        ),
        (lambda d: d.update(requires="ln-affine"), "requires: must be a list"),
        (lambda d: d.update(requires=[]), r'layers\[0\]\.ln: needs "requires": \["ln-affine"\]'),
        (lambda d: d["layers"][0]["ln"].update(scale=["1"]), r"layers\[0\]\.ln: must be"),
        (
            lambda d: d["layers"][1]["ln"]["gain"].__setitem__(0, 0.5),
            r"layers\[1\]\.ln\.gain\[0\]: numbers are",
        ),
        (lambda d: d["layers"][0]["ln"]["bias"].pop(), "layer 1: LayerNorm bias must have 4"),
        (lambda d: d.update(format="lnnet/1"), r'layers\[0\]\.ln: needs "requires"'),
    ],
)
def test_malformed_lnnet_1_1_names_the_field(mutate, message):
    d = json.loads(json.dumps(to_dict(random_net(random.Random(8), [4, 4]))))
    mutate(d)
    with pytest.raises(InputError, match=message):
        from_dict(d, "n.json")


def test_known_features():
    assert FEATURES == ("ln-affine", "widths", "algebraic", "groups", "rms")


# ---------------------------------------------------------------------------
# certify: three verdicts


@pytest.mark.parametrize("intervals", [True, False])
@pytest.mark.parametrize(
    "norm",
    [(None, None), ((fmpq(2), fmpq(2), fmpq(-1)), (fmpq(1, 3), fmpq(1, 3), fmpq(5)))],
)
def test_a_point_on_the_boundary_is_never_right(intervals, norm):
    net = tie_net(*norm)
    X = [[1, 1], [fmpq(1, 3), fmpq(1, 3)], [2, 1], [1, 2], [-1, -1]]
    y = [0, 1, 0, 0, 1]
    cert = certify(net, X, y, intervals=intervals, max_precision=512)
    verdicts = [p.verdict for p in cert.points]
    # ties (x1 = x2) are undecided whatever their label; (2, 1) has h_0 > h_1, (1, 2) not
    assert verdicts == ["undecided", "undecided", "right", "wrong", "undecided"]
    assert (cert.right, cert.wrong, cert.undecided) == (1, 1, 3)
    for p in cert.points:
        lo, hi = p.margin_interval
        assert lo <= hi
        if p.verdict == "undecided":
            assert lo <= 0 <= hi and hi - lo < 1e-100 and p.precision == 512
            assert not p.certified and p.margin == -math.inf
        if p.verdict == "wrong":
            assert hi < 0 and p.margin == -math.inf
    with pytest.raises(ArithmeticError):
        decide(net, [1, 1], max_precision=256)


def test_the_interval_pass_hands_what_it_cannot_decide_to_balls():
    # a margin of 2^-200 on a tie: invisible to float64 intervals, decided by arb
    net = tie_net(offset=fmpq(1, 2**200))
    X = [[1, 1]] * 1 + [[3, 1], [1, 3]]
    cert = certify(net, X, [0, 0, 1], intervals=True)
    assert [p.verdict for p in cert.points] == ["right", "right", "right"]
    assert cert.points[0].precision > 200 and 0 < cert.points[0].margin <= 2.0**-199
    assert cert.points[1].precision == cert.points[2].precision == 53
    lo, hi = cert.points[0].margin_interval
    assert 0 < lo <= 2.0**-200 <= hi


def test_certificate_dict_has_the_counts():
    cert = certify(tie_net(), [[1, 1], [2, 1], [1, 2]], [0, 0, 0], max_precision=256)
    d = cert.to_dict()
    assert (d["certainly_right"], d["certainly_wrong"], d["undecided"]) == (1, 1, 1)
    assert [r["verdict"] for r in d["results"]] == ["undecided", "right", "wrong"]
    assert d["results"][2]["margin_interval"][1] < 0


def _arb_margin(net, x, c, bits=256):
    """An independent evaluation: the model's own generic forward pass in arb balls."""
    with precision(bits):
        z = net.map(arb).forward([arb(v) for v in x], arb.sqrt)
        return min(z[c] - zj for j, zj in enumerate(z) if j != c)


@pytest.mark.parametrize("seed", range(4))
def test_interval_pass_encloses_the_exact_margins(seed):
    rng = random.Random(seed)
    widths = [rng.randint(2, 7) for _ in range(rng.randint(1, 4))]
    net = random_net(rng, widths, d=rng.randint(1, 3), k=rng.randint(2, 4))
    X = [[fmpq(rng.randint(-300, 300), 100) for _ in range(net.input_dim)] for _ in range(40)]
    X = [list(x) for x in dict.fromkeys(map(tuple, X))]
    y = [rng.randrange(len(net.classes)) for _ in X]
    mlo, mhi, zlo, zhi = interval_pass(net.folded(), X, y)
    cert = certify(net, X, y, intervals=False)
    for k, (x, c) in enumerate(zip(X, y, strict=True)):
        exact = _arb_margin(net, x, c)
        assert mlo[k] <= float(exact.mid()) <= mhi[k]
        assert mhi[k] - mlo[k] < 1e-6 * (1 + abs(mlo[k]))
        # the verdicts of both paths agree
        verdict = "right" if mlo[k] > 0 else "wrong" if mhi[k] < 0 else "undecided"
        assert verdict == cert.points[k].verdict
    assert (zlo <= zhi).all()


# ---------------------------------------------------------------------------
# float scores against the exact ones


def test_ulp_disagreement_counts_ulps_of_the_largest_score():
    from lncapacity.floats import ulp_disagreement

    exact = np.array([[1.0, 0.25], [-4.0, 2.0**-30]])
    ulp32 = float(np.spacing(np.float32(1.0)))
    z = exact + np.array([[3 * ulp32, 0.0], [0.0, 2 * 4 * ulp32]])  # ulps of 1 and of 4
    assert ulp_disagreement(z, (exact, exact), "float32") == 3.0
    # a loose enclosure gives an upper bound; refining the worst rows makes it tight
    loose = (exact - 100 * ulp32, exact + 100 * ulp32)
    assert ulp_disagreement(z, loose, "float32") > 100
    asked = []

    def refine(rows):
        asked.append(rows)
        return exact[rows], exact[rows]

    assert ulp_disagreement(z, loose, "float32", refine) == 3.0 and asked == [[0, 1]]
    assert ulp_disagreement(np.array([[np.nan, 0.0]]), (exact[:1], exact[:1]), "float32") == (
        math.inf
    )


def test_overflow_in_the_interval_pass_leaves_the_point_to_balls():
    # pre-activations near 2^1000: their squares overflow float64; intervals stay rigorous
    # (and too wide to decide), so the balls decide
    big = fmpq(2**1000)
    layer = Affine(((big, fmpq(0)), (fmpq(0), big), (fmpq(0), fmpq(0))), (fmpq(0),) * 3)
    readout = affine([[1, 0, 0], [0, 1, 0]], [0, 0])
    net = LNNet(2, 3, fmpq(0), (layer,), readout, (0, 1))
    with np.errstate(all="ignore"):
        mlo, mhi, _, _ = interval_pass(net, [[fmpq(2), fmpq(1)]], [0])
    assert mlo[0] <= math.sqrt(3 / 2) <= mhi[0]  # h = (sqrt(3/2), 0, -sqrt(3/2)) exactly
    assert not mlo[0] > 0  # undecided by intervals ...
    cert = certify(net, [[2, 1], [1, 2]], [0, 1], intervals=True)
    assert [p.verdict for p in cert.points] == ["right", "right"]  # ... decided by balls
    assert all(p.precision > 53 for p in cert.points)
