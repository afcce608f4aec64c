"""Beyond the paper: search for nets the construction does not give, then certify them.

The Projection Merge Algorithm realises every labeling of ``L + 2`` points with
``L`` layers.  Whether ``L + 3`` or more points can be shattered at depth ``L``
is not settled by it; :func:`find_net` looks for a net numerically (PyTorch,
float64, many random restarts of Adam on a margin loss), rounds every weight to
a short dyadic rational, and keeps the result only if the rigorous certificate
accepts it.  With ``method="circle"`` it first runs the combinatorial search of
:mod:`lncapacity.construct.circle` (whole circle maps per layer, no PyTorch;
:func:`find_circle_net`), which reaches far more than ``L + 2`` points
(proofs/circle_maps.md, the VC table), and Adam only for what that misses.
With ``method="sector"`` (``eps = 0``) the sector construction comes first, no search at all
when the labels change at most four times around some apex of the plane, or twice around
some line of ``R^3`` and beyond (proofs/sector_theorem.md, Proposition 5).
A labeling for which nothing is found is reported as such: that
is evidence, not a proof, that no net exists.

PyTorch is an optional dependency (``pip install 'lncapacity[torch]'``).
"""

from __future__ import annotations

from collections.abc import Sequence

from flint import fmpq

from .certify import certify
from .data import PointSet
from .errors import InputError
from .model import Affine, LNNet
from .reproducible import torch_one_thread

WIDTH = 3
METHODS = ("adam", "circle", "sector")


def _torch():  # type: ignore[no-untyped-def]
    try:
        import torch
    except ImportError:
        raise InputError("the search needs PyTorch: pip install 'lncapacity[torch]'") from None
    return torch


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

    ``method``: ``"adam"`` (PyTorch), ``"circle"`` (:func:`find_circle_net` with
    ``restarts`` seeds first, then Adam) or ``"sector"`` (eps = 0: the sector construction,
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
    torch = _torch()
    with torch_one_thread(torch):  # one summation order, whatever the core count
        return _adam(torch, points, depth, eps, classes, restarts, steps, seed)


def _adam(torch, points, depth, eps, classes, restarts, steps, seed):  # type: ignore[no-untyped-def]
    """:func:`find_net`'s Adam restarts (inside one PyTorch thread)."""
    X = torch.tensor(points.floats(), dtype=torch.float64)
    target = torch.tensor([list(classes).index(label) for label in points.y])
    sign = (2 * target - 1).to(torch.float64)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(restarts):
        params = []
        fan_in = points.d
        for _ in range(depth):
            params += [
                torch.randn(WIDTH, fan_in, generator=gen, dtype=torch.float64) * 2,
                torch.randn(WIDTH, generator=gen, dtype=torch.float64),
            ]
            fan_in = WIDTH
        params += [
            torch.randn(fan_in, generator=gen, dtype=torch.float64),
            torch.zeros(1, dtype=torch.float64),
        ]
        for p in params:
            p.requires_grad_(True)
        opt = torch.optim.Adam(params, lr=0.05)
        for _ in range(steps):
            opt.zero_grad()
            score = _forward(torch, params, X, float(eps), depth)
            loss = torch.nn.functional.softplus(1 - 4 * sign * score).mean()
            loss.backward()
            opt.step()
            if bool((sign * score > 0.05).all()):
                break
        if bool((sign * score > 0).all()):
            net = _certified_rounding(points, params, depth, eps, classes)
            if net is not None:
                return net
    return None


def _forward(torch, params, X, eps: float, depth: int):  # type: ignore[no-untyped-def]
    h = X
    for i in range(depth):
        y = h @ params[2 * i].T + params[2 * i + 1]
        h = torch.nn.functional.layer_norm(y, (WIDTH,), eps=eps)
    return h @ params[-2] + params[-1][0]


def _certified_rounding(points, params, depth, eps, classes):  # type: ignore[no-untyped-def]
    """Round to dyadics with more and more bits until the certificate accepts."""
    values = [p.detach().numpy() for p in params]
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
