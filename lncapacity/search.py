"""Beyond the paper: search for nets the construction does not give, then certify them.

The Projection Merge Algorithm realises every labeling of ``L + 2`` points with
``L`` layers.  Whether ``L + 3`` or more points can be shattered at depth ``L``
is not settled by it; :func:`find_net` looks for a net numerically (float64, many
random restarts of Adam on a margin loss, :mod:`lncapacity.adam`: the same weights on
every processor), rounds every weight to a short dyadic rational, and keeps the result
only if the rigorous certificate accepts it.  With ``method="circle"`` it first runs the
combinatorial search of :mod:`lncapacity.construct.circle` (whole circle maps per layer,
:func:`find_circle_net`), which reaches far more than ``L + 2`` points
(proofs/circle_maps.md, the VC table), and Adam only for what that misses.
With ``method="sector"`` (``eps = 0``) the sector construction comes first, no search at all
when the labels change at most four times around some apex of the plane, or twice around
some line of ``R^3`` and beyond (proofs/sector_theorem.md, Proposition 5).
A labeling for which nothing is found is reported as such: that
is evidence, not a proof, that no net exists.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from flint import fmpq

from . import adam
from .certify import certify
from .data import PointSet
from .errors import InputError
from .model import Affine, LNNet

WIDTH = 3
METHODS = ("adam", "circle", "sector")


def _dyadic(x: float, bits: int) -> fmpq:
    return fmpq(round(x * 2**bits), 2**bits)


def find_net(
    points: PointSet,
    depth: int,
    eps: fmpq,
    classes: Sequence[object] = (0, 1),
    *,
    restarts: int = 16,
    steps: int = 1500,
    seed: int = 0,
    method: str = "adam",
) -> LNNet[fmpq] | None:
    """A certified width-3 net with exactly ``depth`` layers for ``points``, or None.

    ``method``: ``"adam"`` (:mod:`lncapacity.adam`), ``"circle"`` (:func:`find_circle_net`
    with ``restarts`` seeds first, then Adam) or ``"sector"`` (eps = 0: the sector construction,
    :func:`lncapacity.construct.sector.sector_net`, when the labels change at most
    ``2^min(depth, 2)`` times around some apex of the plane, or twice around a flat of ``R^d``;
    else as ``"circle"``).
    """
    if method not in METHODS:
        raise InputError(f"unknown search method {method!r} (choose {', '.join(METHODS)})")
    if method == "sector" and points.d >= 2 and eps == 0 and depth >= 1:
        from .construct.sector import sector_net

        try:
            return sector_net(points, depth, classes)
        except InputError:
            pass
    if method in ("circle", "sector"):
        net = find_circle_net(points, depth, eps, classes, restarts=restarts, seed=seed)
        if net is not None:
            return net
    X = points.floats()
    target = np.array([list(classes).index(label) for label in points.y])
    sign = 2.0 * target - 1
    loss = adam.Loss(sign=sign, offset=1.0)
    rng = np.random.default_rng(seed)
    for _ in range(restarts):
        params, fan_in = [], points.d
        for _ in range(depth):
            params += [rng.standard_normal((WIDTH, fan_in)) * 2, rng.standard_normal(WIDTH)]
            fan_in = WIDTH
        params += [rng.standard_normal(fan_in), np.zeros(1)]
        params, score = adam.train(
            params,
            X,
            float(eps),
            loss,
            steps,
            stop=lambda _, score: bool((sign * score > 0.05).all()),
        )
        if bool((sign * score > 0).all()):
            net = certified_rounding(points, params, depth, eps, classes)
            if net is not None:
                return net
    return None


def certified_rounding(
    points: PointSet,
    params: Sequence[np.ndarray],
    depth: int,
    eps: fmpq,
    classes: Sequence[object] = (0, 1),
) -> LNNet[fmpq] | None:
    """The float net ``params`` with every weight rounded to a dyadic rational of 12, 20, 32,
    then 48 bits: the first the certificate accepts on ``points``, or None.

    ``params`` is ``[W_1, b_1, ..., W_L, b_L, r, c]`` as in :mod:`lncapacity.adam` (width 3;
    class 1 where the readout's score ``h r + c_0`` is positive)."""
    values = params
    for bits in (12, 20, 32, 48):
        layers = []
        for i in range(depth):
            W, b = values[2 * i], values[2 * i + 1]
            layers.append(
                Affine(
                    tuple(tuple(_dyadic(w, bits) for w in row) for row in W),
                    tuple(_dyadic(v, bits) for v in b),
                    {"kind": "search"},
                )
            )
        a, r = values[-2], float(values[-1][0])
        row = tuple(_dyadic(w, bits) for w in a)
        readout = Affine(
            (tuple(-w for w in row), row), (-_dyadic(r, bits), _dyadic(r, bits)), {"kind": "search"}
        )
        net = LNNet(
            points.d, WIDTH, eps, tuple(layers), readout, tuple(classes), {"method": "search"}
        )
        if certify(net, points, workers=1).all_certified:
            return net
    return None


def find_circle_net(
    points: PointSet,
    depth: int,
    eps: fmpq,
    classes: Sequence[object] = (0, 1),
    *,
    restarts: int = 16,
    seed: int = 0,
    beam: int = 8,
) -> LNNet[fmpq] | None:
    """A certified net with exactly ``depth`` layers found by the circle-map search, or None.

    Binary.  Tries ``restarts`` seeds of
    :func:`lncapacity.construct.circle.circle_net` (at most ``depth`` layers),
    pads with identity layers, and keeps the first net the certificate accepts.
    Deterministic for ``seed``.
    """
    import numpy as np

    from .construct.circle import circle_net, identity_layer

    y = np.array([list(classes).index(label) for label in points.y])
    if depth < 1 or y.min() == y.max():
        return None
    X = points.floats()
    for r in range(restarts):
        found = circle_net(
            X,
            y,
            float(eps),
            max_depth=depth,
            seed=seed * 7919 + r,
            beam=beam,
            restarts=1,
            warm=False,
        )
        if found is None:
            continue
        layers, chord = found
        layers = layers + [identity_layer(float(eps))] * (depth - len(layers))
        net = LNNet(
            points.d, WIDTH, eps, tuple(layers), chord, tuple(classes), {"method": "circle-search"}
        )
        if certify(net, points, workers=1).all_certified:
            return net
    return None
