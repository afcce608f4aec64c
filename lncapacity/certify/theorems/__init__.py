"""Certificates by margin theorems: LN-G step and block nets certified in ``O(m log m)``.

The generic certificate evaluates every group of a net at every point, which for the LN-G
nets of ``build(..., arch="ln-g")`` is quadratic in the number of points (one group per label
boundary at depth 1, ``~2 sqrt(b)`` at depth 2).  Their margin theorems say more: read from
the weights alone, a net of the proved form classifies a point with a margin enclosed by a
bound that depends only on where the point lies among the net's steps.  :func:`by_theorem`
recognises the form from the weights (nothing else: no hint in the file, nothing to forge),
re-derives every hypothesis exactly from the weights and the points, and encloses every
point's margin, rigorously (:mod:`.steps`: proofs/ln_g_steps.md Theorem 8; :mod:`.blocks`:
proofs/ln_g_depth.md Theorem 5).  It shares no code with the constructions.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from flint import fmpq

from ...model import LNNet
from .blocks import blocks_certificate
from .margins import Margins
from .steps import steps_certificate

__all__ = ["Margins", "by_theorem"]


def by_theorem(
    net: LNNet[fmpq], X: Sequence[Sequence[fmpq]], labels: Sequence[int]
) -> Margins | None:
    """Margin enclosures of every point ``X[i]`` with label index ``labels[i]`` by the margin
    theorem of ``net``'s form, or None when it has none (then the generic certificate decides).
    ``net`` has no LayerNorm gains (:meth:`LNNet.folded`) and exact rational weights.  The
    theorems are LayerNorm's: a net with an RMSNorm layer has none (proofs/rmsnorm.md relates
    the two only through a change of width)."""
    if net.rms:
        return None
    lab = np.asarray(labels, dtype=np.intp)
    for certificate in (steps_certificate, blocks_certificate):
        got = certificate(net, X, lab)
        if got is not None:
            return got
    return None
