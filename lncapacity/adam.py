"""Adam on small LN-Nets in NumPy: the same trained weights on every processor.

The circle search's warm starts (``lncapacity.construct.circle.beam``) and ``shatter
--search`` (:func:`lncapacity.search.find_net`) train LN-Nets of width 3 and a layer or
two for a few thousand steps, and the nets they build start from the weights found.
PyTorch's kernels follow the processor (vector widths, fused multiply-adds, its own
``exp`` and ``log``), so its weights could differ in the last bits from one machine to the
next, and the nets built from them with them.  Here the forward pass, its gradient and
Adam's update (Kingma and Ba, "Adam: A Method for Stochastic Optimization", with PyTorch's
default ``betas`` and ``eps``) are NumPy's elementwise ``+ - * /`` and ``sqrt``, sums in a
fixed order (:mod:`lncapacity.reproducible`) and :func:`lncapacity.elementary.exp`: the same
bits on every processor, for any BLAS and thread count.

A net is a list of arrays ``[W_1, b_1, ..., W_L, b_L, r, c]``: layer ``l`` maps ``h`` to
``LN(W_l h + b_l)`` (LayerNorm without gain or bias, ``eps`` inside the square root), and
the readout scores ``h . r + c_0`` (two classes, ``r`` of shape ``(3,)``, ``c`` of ``(1,)``)
or ``4 (h R + c)`` (``k`` classes: ``R`` of shape ``(3, k)``, ``c`` of ``(k,)``, logits of
a cross-entropy loss).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .elementary import exp
from .reproducible import gram, matmul

BETAS = (0.9, 0.999)
"""Adam's decay rates of the first and second moments (PyTorch's default)."""
EPS = 1e-8
"""Added to the root of the second moment (PyTorch's default)."""


@dataclass
class Loss:
    """What :func:`train` minimises, the mean over the points of

    * ``softplus(offset - 4 s_i score_i)`` with ``s_i = +-1`` (``sign``: two classes), or
    * the cross-entropy of the logits ``4 (h R + c)`` against ``target`` (``k`` classes).
    """

    sign: np.ndarray | None = None
    target: np.ndarray | None = None
    offset: float = 0.0


def scores(params: list[np.ndarray], X: np.ndarray, eps: float) -> np.ndarray:
    """The net's scores on the points ``X``: ``(m,)`` for two classes, ``(m, k)`` logits."""
    hs, _ = _forward(params, X, eps)
    return _readout(params, hs[-1])


def train(
    params: list[np.ndarray],
    X: np.ndarray,
    eps: float,
    loss: Loss,
    steps: int,
    lr: float = 0.05,
    stop: Callable[[int, np.ndarray], bool] | None = None,
) -> tuple[list[np.ndarray], np.ndarray]:
    """``steps`` steps of Adam from ``params`` (not changed) on the points ``X``; the trained
    parameters and their scores (:func:`scores`).

    ``stop(step, scores)``, asked before each step with the scores of the parameters so far,
    ends the training early (the parameters as they are).
    """
    shapes = [p.shape for p in params]
    flat = np.concatenate([p.ravel() for p in params]).astype(np.float64)
    m1, m2 = np.zeros_like(flat), np.zeros_like(flat)
    (b1, b2), p1, p2 = BETAS, 1.0, 1.0
    current = _unflatten(flat, shapes)
    hs, invs = _forward(current, X, eps)
    score = _readout(current, hs[-1])
    for step in range(steps):
        if stop is not None and stop(step, score):
            break
        g = np.concatenate([d.ravel() for d in _gradient(current, hs, invs, score, loss)])
        m1 = b1 * m1 + (1 - b1) * g
        m2 = b2 * m2 + (1 - b2) * (g * g)
        p1, p2 = p1 * b1, p2 * b2  # beta^t, by products: no pow
        flat = flat - (lr / (1 - p1)) * m1 / (np.sqrt(m2) / np.sqrt(1 - p2) + EPS)
        current = _unflatten(flat, shapes)
        hs, invs = _forward(current, X, eps)
        score = _readout(current, hs[-1])
    return current, score


def _unflatten(flat: np.ndarray, shapes: list[tuple[int, ...]]) -> list[np.ndarray]:
    out, at = [], 0
    for shape in shapes:
        n = int(np.prod(shape, dtype=np.int64))
        out.append(flat[at : at + n].reshape(shape))
        at += n
    return out


def _forward(
    params: list[np.ndarray], X: np.ndarray, eps: float
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Each layer's output (the input first) and each LayerNorm's ``1 / sqrt(var + eps)``."""
    hs, invs = [X], []
    for i in range(len(params) // 2 - 1):
        z = _affine(hs[-1], params[2 * i], params[2 * i + 1])
        c = z - z.mean(axis=1, keepdims=True)
        inv = 1 / np.sqrt((c * c).mean(axis=1, keepdims=True) + eps)
        hs.append(c * inv)
        invs.append(inv)
    return hs, invs


def _affine(h: np.ndarray, W: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``h W^T + b``, each row's products summed by NumPy's reduction along a contiguous axis
    (a fixed order, no BLAS; faster than :func:`~lncapacity.reproducible.matmul`'s column
    loop for wide inputs)."""
    return (h[:, None, :] * W[None, :, :]).sum(axis=2) + b


def _readout(params: list[np.ndarray], h: np.ndarray) -> np.ndarray:
    r, c = params[-2], params[-1]
    if r.ndim == 1:
        return matmul(h, r) + c[0]
    return 4 * (matmul(h, r) + c)


def _gradient(
    params: list[np.ndarray],
    hs: list[np.ndarray],
    invs: list[np.ndarray],
    score: np.ndarray,
    loss: Loss,
) -> list[np.ndarray]:
    """The gradient of the mean loss, one array per parameter (backpropagation)."""
    m = len(score)
    r = params[-2]
    if r.ndim == 1:  # d/ds softplus(a - 4 s y) = -4 y sigmoid(a - 4 s y)
        sign = loss.sign
        ds = -4 * sign / (1 + exp(4 * sign * score - loss.offset)) / m
        grads = [(hs[-1] * ds[:, None]).sum(axis=0), np.array([ds.sum()])]
        dh = ds[:, None] * r[None, :]
    else:  # cross-entropy of the logits 4 (h R + c): 4 (softmax - one-hot) / m
        e = exp(score - score.max(axis=1, keepdims=True))
        p = e / e.sum(axis=1, keepdims=True)
        p[np.arange(m), loss.target] -= 1
        G = 4 * p / m
        grads = [gram(hs[-1], G), G.sum(axis=0)]
        dh = matmul(G, r.T)
    for i in range(len(invs) - 1, -1, -1):
        h, inv = hs[i + 1], invs[i]
        dz = inv * (dh - dh.mean(axis=1, keepdims=True) - h * (dh * h).mean(axis=1, keepdims=True))
        grads = [gram(hs[i], dz).T, dz.sum(axis=0), *grads]
        if i:
            dh = matmul(dz, params[2 * i])
    return grads
