"""Assemble a certified-by-construction binary LN-Net from a point set.

Pipeline (seed 000; note math.md sections 2-3): project to a line
(:mod:`.project`), fold until at most two label runs remain (:mod:`.runfold`,
one run fewer per layer, or the paper's :mod:`.pma`),
optionally pad to an exact depth with injective layers, then read out with a
threshold between the two runs.  Every weight is an exact rational.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from flint import fmpq

from .. import __version__
from ..arith import dyadic_between, exact
from ..data import PointSet, points_from_arrays
from ..errors import InputError
from ..fileformat import read_vector
from ..model import Affine, Label, LNNet
from .circle import build_circle, runs_fallback  # method "circle" (issue 18)
from .fold import Chain, FoldStep, fold_layer, reversal
from .pma import Progress, order_groups, pma
from .project import project, runs
from .runfold import Unresolvable, merge_runs

WIDTH = 3
METHODS: dict[str, Callable[[Chain, Sequence[int], Progress | None], None]] = {
    "runs": merge_runs,
    "pma": pma,
    "circle": runs_fallback,  # used only when build_circle gives way to runs
}
DEFAULT_METHOD = "runs"


def build(
    X: Any,
    y: Any = None,
    *,
    eps: object = 0,
    depth: int | None = None,
    method: str = DEFAULT_METHOD,
    classes: Sequence[Label] | None = None,
    seed: int = 0,
    progress: Progress | None = None,
) -> LNNet[fmpq]:
    """A width-3 LN-Net that classifies every point of ``(X, y)`` correctly.

    ``X`` is a :class:`~lncapacity.data.PointSet` (then ``y`` is omitted) or an
    array of points with labels ``y``.  ``eps >= 0`` is LayerNorm's epsilon
    (exact; ``"1e-5"`` is 1/100000).  ``depth``: pad to exactly this many
    LayerNorm layers (an error if the construction needs more).  ``classes``:
    the readout's rows (default: the sorted labels present), so a labeling that
    uses one class of two still scores both.  ``method``: ``"runs"`` (one label
    run fewer per layer, float-faithful; falls back to ``"pma"`` when the labels
    are closer than float64 can resolve, noted in ``meta["fallback"]``) or
    ``"pma"`` (the paper's algorithm).  At most ``m - 2`` layers for ``m``
    distinct points (seed 000, Theorem).
    """
    points = X if isinstance(X, PointSet) else points_from_arrays(X, y)
    eps_q = _eps(eps)
    if method not in METHODS:
        raise InputError(f"unknown method {method!r} (choose from {', '.join(METHODS)})")
    if depth is not None and (not isinstance(depth, int) or depth < 0):
        raise InputError(f"depth must be a non-negative integer, got {depth!r}")
    cls = tuple(points.classes if classes is None else classes)
    if missing := sorted(set(points.y) - set(cls), key=str):
        raise InputError(f"labels {missing} are not among the classes {list(cls)}")
    if len(set(points.y)) > 2:
        raise InputError(
            f"{len(set(points.y))} classes: only the binary construction exists so far"
        )
    meta: dict[str, Any] = {"generator": f"lncapacity {__version__}", "method": method}
    if len(set(points.y)) == 1:
        return _constant_net(points, eps_q, cls, depth or 0, meta)

    present = sorted(set(points.y), key=cls.index)
    y01 = [present.index(label) for label in points.y]
    if method == "circle":  # whole circle maps per layer: its own entry point (circle.py)
        net = build_circle(points, y01, present, cls, eps_q, depth, seed, progress, meta)
        if net is not None:
            return net
    w, t = project(points.X, y01, seed=seed)
    chain = Chain(t, eps_q)
    try:
        METHODS[method](chain, y01, progress)
    except Unresolvable as e:
        # the data is finer than float64 can see: the paper's construction, which
        # needs no float search, still gives a certified net (not a float-faithful one)
        meta.update(method="pma", fallback=str(e))
        pma(chain, y01, progress)
    needed = len(chain.steps)
    if depth is not None:
        if needed > depth:
            raise InputError(
                f"this labeling needs {needed} LayerNorm layer{'s' * (needed != 1)}, "
                f"more than {depth}"
            )
        _pad(chain, depth - needed)
    meta.update(projection=[str(wi) for wi in w], folds=needed, depth=len(chain.steps))

    layers, read = [], w
    for step in chain.steps:
        layers.append(fold_layer(read, step))
        read = read_vector(step.read)
    theta, left = _threshold(chain, y01)
    rows = {present[left]: (-1, theta), present[1 - left]: (1, -theta)}
    W = tuple(tuple(rows[c][0] * a for a in read) if c in rows else _zeros(read) for c in cls)
    b = tuple(rows[c][1] if c in rows else fmpq(-1) for c in cls)
    readout = Affine(W, b, {"kind": "threshold", "threshold": str(theta)})
    return LNNet(points.d, WIDTH, eps_q, tuple(layers), readout, cls, meta)


def _eps(eps: object) -> fmpq:
    try:
        q = exact(eps)
    except ValueError:
        raise InputError(f"eps must be a finite number, got {eps!r}") from None
    if q < 0:
        raise InputError(f"eps must be >= 0, got {eps}")
    return q


def _zeros(read: Sequence[fmpq]) -> tuple[fmpq, ...]:
    return tuple(fmpq(0) for _ in read)


def _pad(chain: Chain, count: int) -> None:
    """Append ``count`` injective folds (proofs/depth_and_padding.md, padding lemma)."""
    for _ in range(count):
        chain.push(reversal(chain))


def _threshold(chain: Chain, y: Sequence[int]) -> tuple[fmpq, int]:
    """A rational strictly between the two label runs, and the left run's label."""
    groups = order_groups(chain, [[k] for k in range(len(y))], y)
    labels = [y[g[0]] for g in groups]
    assert runs(labels) == 2, "the construction must end with two runs"
    split = next(k for k in range(len(groups)) if labels[k] != labels[0])
    lo, hi = chain.upper(groups[:split]), chain.lower(groups[split:])
    return dyadic_between(lo, hi), labels[0]


def _constant_net(
    points: PointSet, eps: fmpq, cls: tuple[Label, ...], depth: int, meta: dict[str, Any]
) -> LNNet[fmpq]:
    """One class present: a zero projection makes every layer constant; the bias picks it.

    ``LN(v)`` is defined for every ``eps >= 0``, so the constant layers are sound.
    """
    zero = [fmpq(0)] * points.d
    layers, read = [], zero
    for _ in range(depth):
        step = FoldStep(fmpq(0), fmpq(1), kind="constant")
        layers.append(fold_layer(read, step))
        read = list(read_vector(step.read))
    W = tuple(tuple(fmpq(0) for _ in read) for _ in cls)
    b = tuple(fmpq(int(c == points.y[0])) for c in cls)
    meta.update(projection=[str(x) for x in zero], folds=0, depth=depth)
    return LNNet(points.d, WIDTH, eps, tuple(layers), Affine(W, b), cls, meta)
