"""Executable check of proofs/depth_and_padding.md."""

import itertools
import random

import pytest
from flint import fmpq

from lncapacity import build, certify
from lncapacity.arith import precision
from lncapacity.construct import Chain, FoldStep, runs


def one_fold_runs(values, labels):
    order = sorted(range(len(values)), key=values.__getitem__)
    i = order[0]
    j = next(k for k in order[1:] if labels[k] == labels[i])
    c = (values[i] + values[j]) / 2
    new = sorted(order, key=lambda k: -abs(values[k] - c))
    merged = {i, j}
    seq = [labels[k] for k in new]
    # p_i and p_j merge: count them once (they are adjacent in the new order)
    pos = sorted(new.index(k) for k in merged)
    assert pos[1] == pos[0] + 1
    return runs([labels[k] for k in order]), runs(seq)


def test_run_count_lemma_on_every_labeling():
    rng = random.Random(5)
    for m in range(3, 9):
        values = sorted({fmpq(rng.randint(-50, 50), rng.randint(1, 5)) for _ in range(m)})
        for labels in itertools.product((0, 1), repeat=len(values)):
            if runs(labels) <= 2:
                continue
            before, after = one_fold_runs(values, list(labels))
            first_run_single = labels[1] != labels[0]
            assert after == (before - 1 if first_run_single else before)


@pytest.mark.parametrize("m", range(3, 13))
def test_alternating_labels_need_exactly_m_minus_2(m):
    X = [[k] for k in range(m)]
    y = [k % 2 for k in range(m)]
    net = build(X, y, method="pma")
    assert net.depth == m - 2
    assert certify(net, X, y).all_certified


def test_padding_fold_is_injective_and_reverses_order():
    rng = random.Random(2)
    values = sorted({fmpq(rng.randint(-99, 99), rng.randint(1, 7)) for _ in range(12)})
    chain = Chain(values, fmpq(1, 100000), prec=200)
    lo, span = values[0], values[-1] - values[0]
    chain.push(FoldStep(lo - span - fmpq(1, 3), span, kind="pad"))
    with precision(chain.prec):
        out = chain.values
        assert all(a > b for a, b in itertools.pairwise(out))  # strictly reversed, certified


def _certificate(name):
    """A shipped certificate's header, points, point count and pairs ``(labeling, net)``, the
    complements' nets (readout rows exchanged) included."""
    from pathlib import Path

    from lncapacity.shatter import _decode, _lines, _read_header, _swapped

    path = Path(__file__).resolve().parents[1] / "certificates" / name
    lines = _lines(path)
    header = _read_header(next(lines)[1], path)

    def nets():
        for _, rec in lines:
            if "labeling" in rec:
                net = _decode(rec, header)
                yield rec["labeling"], net
                yield rec["complement"]["labeling"], _swapped(net)

    return header, [list(p) for p in header.points], header.m, nets()


def _times_identity(t):
    """The layer ``h -> t h`` of width 3."""
    from lncapacity.model import Affine

    return Affine(tuple(tuple(t if i == j else 0 for j in range(3)) for i in range(3)), (0,) * 3)


@pytest.mark.parametrize("name", ["shatter-line-L3-n9.jsonl.gz", "shatter-plane-L1-n6.jsonl.gz"])
def test_identity_lemma_a_certified_net_one_layer_deeper(name):
    # every net of the certificate (and its complement), an identity layer appended, is
    # certified on the certificate's points with the same labels: shattered at depth L + 1
    import dataclasses

    from lncapacity.shatter import labels_of

    header, X, m, nets = _certificate(name)
    identity, seen = _times_identity(fmpq(1)), set()
    for k, n in nets:
        deeper = dataclasses.replace(n, layers=(*n.layers, identity))
        assert n.norms == () and deeper.depth == header.depth + 1
        assert certify(deeper, X, labels_of(k, m)).all_certified
        seen.add(k)
    assert seen == set(range(2**m))


def test_identity_lemma_with_eps_a_small_multiple_of_the_identity():
    # the depth-3 line certificate's nets with eps = 10^-30 (they still classify), one layer
    # t I deeper with t = 10^-20 (t^2 / eps = 10^-10), the readout's weights times
    # sqrt(eps) / t = 10^5
    import dataclasses

    from lncapacity.model import Affine
    from lncapacity.shatter import labels_of

    _, X, m, nets = _certificate("shatter-line-L3-n9.jsonl.gz")
    eps, layer, scale = fmpq(1, 10**30), _times_identity(fmpq(1, 10**20)), fmpq(10**5)
    for i, (k, net) in enumerate(nets):
        if i % 32:
            continue
        n = dataclasses.replace(net, eps=eps)
        y = labels_of(k, m)
        assert certify(n, X, y).all_certified
        r = n.readout
        readout = Affine(tuple(tuple(w * scale for w in row) for row in r.W), r.b)
        deeper = dataclasses.replace(n, layers=(*n.layers, layer), readout=readout)
        assert certify(deeper, X, y).all_certified
