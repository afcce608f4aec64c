"""The construction, layer by layer, read back from a saved net: as data and in words.

Everything here starts from an :class:`~lncapacity.model.LNNet` and labelled
points, never from the construction's internals, so it explains any width-3 net
whose maps have rank one (every net this package builds), and says what it can
about any other.

**Scalars.** When ``W_j = col_j row_j^T`` has rank one
(:func:`~lncapacity.explain.scalars.reads`), map ``j`` sees the previous layer only
through the scalar ``s = row_j . h`` (layer 1: ``row_1 . x``); the *value column* ``l``
is the scalar the map after layer ``l`` reads (column 0: layer 1's input, column ``L``:
the readout's, when the readout has rank one).  The factor is scaled by the layer
metadata when present (``meta.projection``, a layer's ``read``;
:func:`lncapacity.fileformat.to_gadget`), so column values are the construction's ``p``
and its ``centre`` is in their units.  Layer ``l`` maps ``s`` to (``certify.scalar_chain``;
eps included)::

    s' = (a1 + a2 (s - s0)) / sqrt(g (s - s0)^2 + k),

with every constant exact: ``s0`` is the layer's *centre*, ``3 g beta^2 = k - eps``
gives its *offset* ``beta``, and ``s0 + a2 k / (a1 g)`` (where ``ds'/ds = 0``)
its *fold point*: values at equal "distance" from it (in angle) merge, and the
side with fewer values is folded over the other (proofs/fold_lemma.md,
proofs/runs_fold.md).

**Angles.** Every width-3 LayerNorm output lies in the plane orthogonal to
``(1, 1, 1)``; with ``u = (1, -1, 0)``, ``v = (1, 1, -2)`` (fileformat.U, V) its
angle is ``atan2(h . v/|v|, h . u/|u|)``, on the circle of radius ``sqrt 3``
when ``eps = 0``.

**Runs and merges.** Sorted by value, a column splits into *label runs*
(maximal blocks of one label).  A layer *merges* runs when a run after it holds
points of two or more runs before it; values *merge* when two of one label end
closer than ``MERGE_RTOL`` times the column's amplitude (indistinguishable), and
at a layer whose metadata says ``kind: pma`` by the paper's rule (its merges are
exact equalities; the short rational centres of ``pma`` leave the pair a gap of
up to a few tenths of its old one, so the rule, not the gap, names them; see
:func:`~lncapacity.explain.runs.merge_history`).  The ``runs`` construction joins runs and
merges no values.
The *label gap* of a column is the smallest distance between neighbours of
different labels, relative to the amplitude ``sqrt 3 |P row|`` of the read
(the largest value any point of the circle gives; for the input column, half
its span): what float arithmetic must resolve (proofs/float_gap.md).

**LN-G.** A layer that normalises in groups (:attr:`~lncapacity.model.Norm.groups`) has
no such scalar map: its centre, offset and fold point are not reported (the values the
next map reads, runs and gaps are, computed in float64), and
:func:`~lncapacity.explain.trace.layer_curve` draws its map in float64.

Column values for :func:`~lncapacity.explain.report.explain` are computed in ball
arithmetic (python-flint ``arb``) at the certificate's precision, and the margin is the
certificate's (:func:`lncapacity.certify.certify`); gaps are reported as the balls' midpoints
(with whether the ball is certainly positive).  Pictures use the float64
:func:`~lncapacity.explain.trace.float_trace`.

**Modules**, one per idea, each importing only from those below it
(``[tool.importlinter]`` in pyproject.toml):

* :mod:`~lncapacity.explain.report`: the account, as data and in words;
* :mod:`~lncapacity.explain.readout` (where each class wins at the readout) and
  :mod:`~lncapacity.explain.runs` (label runs, merged values, label gaps);
* :mod:`~lncapacity.explain.trace`: the float64 trace (pictures);
* :mod:`~lncapacity.explain.scalars`: how each map reads the previous layer, and each
  layer's exact scalar map.

What the rest of the package, the tests and the notebooks use is importable from
``lncapacity.explain`` itself.
"""

from __future__ import annotations

from .readout import class_arcs, class_intervals
from .report import KINDS as KINDS
from .report import explain, present_classes
from .runs import MERGE_RTOL, label_runs, merge_history, merge_representatives, merges_at
from .scalars import Read, fold_points, layer_constants, reads
from .trace import POWER_STEPS as POWER_STEPS
from .trace import SVD_FEATURES as SVD_FEATURES
from .trace import U_HAT as U_HAT
from .trace import V_HAT as V_HAT
from .trace import Trace, as_points, block_rows, float_scores, float_trace, layer_curve

__all__ = [
    "MERGE_RTOL",
    "Read",
    "Trace",
    "as_points",
    "block_rows",
    "class_arcs",
    "class_intervals",
    "explain",
    "float_scores",
    "float_trace",
    "fold_points",
    "label_runs",
    "layer_constants",
    "layer_curve",
    "merge_history",
    "merge_representatives",
    "merges_at",
    "present_classes",
    "reads",
]
