"""Certified shattering: every labeling of ``L + 2`` points by a width-3 LN-Net of depth ``L``.

The theorem of Yunhao Ni, Yuxin Guo, Junlong Jia and Lei Huang, "On the Nonlinearity of
Layer Normalization" (ICML 2024; proofs/vc_theorem.md): a width-3 LN-Net with ``L``
LayerNorm layers has VC dimension at least ``L + 2``.
:func:`~lncapacity.shatter.run.shatter` makes that concrete for one point set: for each of
the ``2^(L+2)`` labelings it builds a net with exactly ``L``
layers by the theorem's own construction (``method="pma"``, also the fastest on
so few points; shorter constructions padded with injective layers) and certifies it
with the rigorous certificate.  A labeling and its complement share one
construction with the readout rows swapped; both are certified.

The certificate is a JSON Lines file, written as it is produced (memory does
not grow with the number of labelings) and renamed into place at the end:

* line 1, the header: ``{"format": "lnnet-shatter/1", "points": [[...]],
  "input_dim", "eps", "depth", "labelings", "classes": [0, 1]}``; numbers are
  ``lnnet/1`` rational strings; LN-G certificates
  (:func:`~lncapacity.shatter.nets.bump_net`) add ``"groups": g``
  and carry every net as an ``lnnet`` record with ``"folds": "bumps"``;
* one line per pair of complementary labelings: ``{"labeling": k, "folds":
  ..., "net": <gadget record>, "margins": [...], "complement": {"labeling":
  k', "margins": [...]}}``.  Labeling ``k`` gives point ``i`` the label
  ``(k >> i) & 1``; the complement's net is the same record with the two
  readout rows swapped; margins are certified lower bounds, rounded down;
* the last line: ``{"summary": {...}}``.

:func:`~lncapacity.shatter.verify.verify_shatter` re-checks such a file from scratch with
the certificate alone (the constructions are not used): it decodes each net, checks its depth,
certifies both labelings, rejects any claimed margin above the certified
bound, and checks that every labeling appears exactly once.

**Modules**, one per idea, each importing only from those below it
(``[tool.importlinter]`` in pyproject.toml):

* :mod:`~lncapacity.shatter.run`: a net built and certified for every labeling;
* :mod:`~lncapacity.shatter.journal`: the file as it is written, the journal of an
  interrupted run and resuming from it;
* :mod:`~lncapacity.shatter.verify`: re-checking a file;
* :mod:`~lncapacity.shatter.nets`: a net and its complement, their certified margins, the
  LN-G bump nets;
* :mod:`~lncapacity.shatter.points`: the points and their labelings;
* :mod:`~lncapacity.shatter.records` (the format: constants, limits, the summary, reading a
  file) and :mod:`~lncapacity.shatter.workers` (the process pool or a Dask cluster).

What the rest of the package, the tests, the benchmarks, the proofs and the notebooks use is
importable from ``lncapacity.shatter`` itself.
"""

from __future__ import annotations

from .journal import _writer as _writer
from .nets import BUMP_THRESHOLD, bump_net
from .nets import _margins as _margins
from .nets import _swapped as _swapped
from .points import _point_set as _point_set
from .points import default_points, labels_of, random_points
from .records import (
    CLASSES,
    FORMAT,
    MAX_GROUPS,
    MAX_LINE_BYTES,
    MAX_POINTS,
    MAX_SHATTER_GROUPS,
    Progress,
    ShatterSummary,
    fold_order,
)
from .records import _decode as _decode
from .records import _lines as _lines
from .records import _read_header as _read_header
from .records import _tally as _tally
from .run import _shatter_chunk as _shatter_chunk
from .run import shatter
from .verify import verify_shatter
from .workers import CHUNK

__all__ = [
    "BUMP_THRESHOLD",
    "CHUNK",
    "CLASSES",
    "FORMAT",
    "MAX_GROUPS",
    "MAX_LINE_BYTES",
    "MAX_POINTS",
    "MAX_SHATTER_GROUPS",
    "Progress",
    "ShatterSummary",
    "bump_net",
    "default_points",
    "fold_order",
    "labels_of",
    "random_points",
    "shatter",
    "verify_shatter",
]
