"""Adam on small LN-Nets in NumPy: the gradient is the loss's, and training learns."""

from __future__ import annotations

import numpy as np
import pytest

from lncapacity import adam


def _net(rng, d, depth, k):
    params, fan_in = [], d
    for _ in range(depth):
        params += [rng.standard_normal((3, fan_in)), rng.standard_normal(3)]
        fan_in = 3
    if k == 2:
        return [*params, rng.standard_normal(3), rng.standard_normal(1)]
    return [*params, rng.standard_normal((3, k)), rng.standard_normal(k)]


def _loss(params, X, eps, loss):
    s = adam.scores(params, X, eps)
    if loss.sign is not None:
        z = loss.offset - 4 * loss.sign * s
        return float(np.mean(np.logaddexp(0, z)))
    z = s - s.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return float(-logp[np.arange(len(s)), loss.target].mean())


@pytest.mark.parametrize(("depth", "k", "eps"), [(1, 2, 0.0), (2, 2, 1e-5), (2, 4, 0.0)])
def test_the_gradient_is_the_losss(depth, k, eps):
    rng = np.random.default_rng(depth * 10 + k)
    X = rng.standard_normal((40, 2))
    y = rng.integers(0, k, 40)
    loss = adam.Loss(sign=2.0 * y - 1, offset=1.0) if k == 2 else adam.Loss(target=y)
    params = _net(rng, 2, depth, k)
    hs, invs = adam._forward(params, X, eps)
    grads = adam._gradient(params, hs, invs, adam._readout(params, hs[-1]), loss)
    h = 1e-6
    for p, g in zip(params, grads, strict=True):
        assert g.shape == p.shape
        for i in np.ndindex(p.shape):
            old = p[i]
            p[i] = old + h
            up = _loss(params, X, eps, loss)
            p[i] = old - h
            down = _loss(params, X, eps, loss)
            p[i] = old
            assert g[i] == pytest.approx((up - down) / (2 * h), rel=1e-5, abs=1e-8)


def test_training_separates_two_blobs_and_stops_when_asked():
    rng = np.random.default_rng(0)
    X = np.r_[rng.standard_normal((30, 2)) - 2, rng.standard_normal((30, 2)) + 2]
    sign = np.r_[-np.ones(30), np.ones(30)]
    loss = adam.Loss(sign=sign)
    start = _net(rng, 2, 1, 2)
    params, score = adam.train(start, X, 0.0, loss, 300)
    assert (sign * score > 0).all()
    assert _loss(params, X, 0.0, loss) < _loss(start, X, 0.0, loss)
    assert (score == adam.scores(params, X, 0.0)).all()
    asked = []
    same, _ = adam.train(start, X, 0.0, loss, 300, stop=lambda step, s: asked.append(step) or True)
    assert asked == [0] and all((a == b).all() for a, b in zip(same, start, strict=True))
