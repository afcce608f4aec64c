"""Random nets with dyadic weights (as trained float weights are), for the tests of grouped,
RMSNorm and trained nets."""

from __future__ import annotations

import random

from flint import fmpq

from lncapacity.model import Affine, LNNet, Norm

EPS = fmpq(1, 2**10)


def random_net(
    rng: random.Random,
    layers: list[tuple[int, int]],
    d: int = 2,
    k: int = 3,
    eps: fmpq = EPS,
    gains: bool = True,
    rms: bool = False,
) -> LNNet[fmpq]:
    """A net whose weights are multiples of ``2^-10`` in ``[-4, 4]``; ``layers`` lists
    ``(width, groups)``; each layer with an elementwise gain and bias (``gains``), RMSNorm
    (``rms``) or LayerNorm."""

    def q() -> fmpq:
        return fmpq(rng.randint(-(2**12), 2**12), 2**10)

    maps, norms, fan_in = [], [], d
    for n, g in layers:
        W = tuple(tuple(q() for _ in range(fan_in)) for _ in range(n))
        maps.append(Affine(W, tuple(q() for _ in range(n))))
        gain = tuple(q() for _ in range(n)) if gains else None
        bias = tuple(q() for _ in range(n)) if gains else None
        norms.append(Norm(gain, bias, g, rms))
        fan_in = n
    readout = Affine(
        tuple(tuple(q() for _ in range(fan_in)) for _ in range(k)), tuple(q() for _ in range(k))
    )
    widths = {n for n, _ in layers}
    width = widths.pop() if len(widths) == 1 else None
    return LNNet(d, width, eps, tuple(maps), readout, tuple(range(k)), {}, tuple(norms))
