"""Assemble a certified-by-construction binary LN-Net from a point set.

Pipeline (seed 000; note math.md sections 2-3): project to a line
(:mod:`.project`), fold until at most two label runs remain (:mod:`.runfold`,
one run fewer per layer, or the paper's :mod:`.pma`),
optionally pad to an exact depth with injective layers, then read out with a
threshold between the two runs.  Every weight is an exact rational.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
from flint import fmpq

from ..arith import dyadic_between, epsilon
from ..data import PointSet, named_labels, points_from_arrays
from ..errors import InputError
from ..fileformat import read_vector
from ..model import Affine, Label, LNNet
from ..version import __version__
from .circle import CIRCLE_META, Handoff, build_circle  # method "circle" (issue 18)
from .fold import Chain, FoldStep, exact_float, fold_layer, reversal
from .groups import build_ln_g  # arch "ln-g" (issue 30)
from .multiclass import envelope, merge_runs_k, pma_k
from .peel import merge_peel
from .pma import Progress, order_groups, pma, power_of_two_near
from .project import project, runs
from .runfold import Unresolvable, interval_runs, merge_runs

WIDTH = 3
METHODS: dict[str, Callable[[Chain, Sequence[int], Progress | None], None]] = {
    "runs": merge_runs,
    "pma": pma,
    "circle": merge_runs,  # a name only: build_circle hands over to runs, or gives way to it
    "peel": merge_runs,  # with two classes, peeling one class off is the runs method
}
K_METHODS: dict[str, Callable[[Chain, Sequence[int], Progress | None], None]] = {
    "runs": merge_runs_k,
    "pma": pma_k,
    "peel": merge_peel,  # (called by _folded, which tries several first classes)
}
"""The same methods for three or more classes (:mod:`.multiclass`)."""
PEEL_STARTS = 3
"""First classes ``peel`` tries, fewest runs first, when ``runs`` gives way with three or
more classes (each gives another sequence of folds: measured on random points in R^3,
``k = 3``, ``m = 200 .. 500``, the first alone finished float-faithfully on 2 sets of 3
while peel kept the chain's intervals apart, proofs/multiclass.md §8)."""
PEEL_MAX_POINTS = 600
"""The most points for which ``runs`` gives way to ``peel`` rather than straight to ``pma``
(``--method peel`` has no limit): measured on random points in R^3 with ``k = 3``, peel
finishes on 3 of 3 sets at ``m = 600``, on none of 3 at 700 or 800 (where three tries cost
85 to 115 s) and not on the set tried at 1000; with ``k = 5, 10`` it gives way earlier."""
DEFAULT_METHOD = "auto"
"""``circle`` for three or more classes (``runs`` loses float resolution there, multiclass
§6, and gives way to ``pma``; circle is far shallower and float64-faithful when it finds a
net, and uses ``runs`` when it does not), ``runs`` for two (as fast as it is shallow enough;
circle is shallower but its search costs seconds to minutes)."""
CHOICES = ("auto", *METHODS)
ARCHS = ("ln3", "ln-g")
"""The architectures :func:`build` builds: ``ln3``, the width-3 LN-Net (every method above),
and ``ln-g``, depth 1 with one LayerNorm group of 3 per label boundary (:mod:`.groups`)."""
DEFAULT_ARCH = "ln3"


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
    exact: bool = False,
    arch: str = DEFAULT_ARCH,
) -> LNNet[fmpq]:
    """A width-3 LN-Net (or, with ``arch="ln-g"``, a depth-1 LN-G net) that classifies every
    point of ``(X, y)`` correctly.

    ``X`` is a :class:`~lncapacity.data.PointSet` (then ``y`` is omitted) or an
    array of points with labels ``y``.  ``eps >= 0`` is LayerNorm's epsilon
    (exact; ``"1e-5"`` is 1/100000).  ``depth``: pad to exactly this many
    LayerNorm layers (an error if the construction needs more).  ``classes``:
    the readout's rows (default: the sorted labels present), so a labeling that
    uses one class of two still scores both.  ``method``: ``"runs"`` (one label
    run fewer per layer, float-faithful; falls back, with three or more classes to
    ``"peel"`` first, then to ``"pma"`` when the labels are closer than float64 can
    resolve, noted in ``meta["fallback"]``), ``"pma"`` (the paper's algorithm),
    ``"circle"`` (whole circle maps per layer, searched; ``runs`` when that is not
    shallower), ``"peel"`` (three or more classes, one at a time against the rest by
    the binary ``runs`` folds, :mod:`.peel`; ``pma`` when it gives way) or ``"auto"``
    (the default: :data:`DEFAULT_METHOD`).  At most ``m - 2`` layers for ``m``
    distinct points (seed 000, Theorem).  ``exact=True`` (with ``method="pma"``, two
    classes): the paper's algorithm to the letter, fold centres at the true midpoints
    (algebraic numbers, :mod:`.exact`, proofs/exact_merges.md), so merged values are equal.
    ``arch``: ``"ln3"`` (the default: everything above) or ``"ln-g"``: depth 1, one
    LayerNorm group of 3 per label boundary of a projection, any number of classes
    (:func:`.groups.build_ln_g`, proofs/ln_g_steps.md); ``method`` stays ``"auto"``,
    ``depth`` is ``None`` or 1.
    """
    points = X if isinstance(X, PointSet) else points_from_arrays(X, y)
    eps_q = _eps(eps)
    if method not in CHOICES:
        raise InputError(f"unknown method {method!r} (choose from {', '.join(CHOICES)})")
    if depth is not None and (not isinstance(depth, int) or isinstance(depth, bool) or depth < 0):
        raise InputError(f"depth must be a non-negative integer, got {depth!r}")
    if arch not in ARCHS:
        raise InputError(f"unknown arch {arch!r} (choose from {', '.join(ARCHS)})")
    cls = tuple(points.classes if classes is None else classes)
    if missing := sorted(set(points.y) - set(cls), key=str):
        raise InputError(f"labels {missing} are not among the classes {list(cls)}")
    if arch == "ln-g":
        ln_g_options(method, depth, exact)
        meta_g: dict[str, Any] = {"generator": f"lncapacity {__version__}"}
        frame = _normalise(points.X)
        return build_ln_g(points, eps_q, seed=seed, classes=cls, meta=meta_g, frame=frame)
    if method == "auto":
        method = "circle" if len(set(points.y)) > 2 else "runs"
    meta: dict[str, Any] = {"generator": f"lncapacity {__version__}", "method": method}
    if exact:
        if method != "pma":
            raise InputError("exact merges are the paper's algorithm: use method 'pma'")
        meta["exact"] = True
    if len(set(points.y)) == 1:
        return _constant_net(points, eps_q, cls, depth or 0, meta)

    if exact:
        return build_exact(points, eps_q, cls, depth, seed, progress, meta)
    present = sorted(set(points.y), key=cls.index)
    yk = [present.index(label) for label in points.y]
    phase(progress, {"circle": "circle search"}.get(method, method))
    if method == "circle":  # whole circle maps per layer: its own entry point (circle.py)
        got = build_circle(points, yk, present, cls, eps_q, depth, seed, progress, meta)
        why = None  # None: build_circle noted in meta why runs is used
        if isinstance(got, Handoff):  # certified by construction: the chain starts from balls
            try:
                got = _folded(
                    points, got, yk, present, cls, eps_q, depth, seed, "runs", progress, meta
                )
            except Unresolvable as e:
                why = f"runs after its layers failed ({e})"
        if isinstance(got, LNNet):
            # a circle net is found in float64 and certified now; a hand-over's is certified
            # by construction (its folds start from balls)
            why = _rejected(got, points, certify="handoff" not in meta)
            if why is None:
                return got
        if why is not None:
            for key in (*CIRCLE_META, "folds", "depth"):
                meta.pop(key, None)
            meta.update(method="runs", fallback=f"circle: {why}; runs used")
            gave_way(meta, "circle", "runs", why)
            if note := getattr(progress, "note", None):
                note(f"circle gave way to runs: {why}")
        elif "fallback_chain" not in meta and str(meta.get("fallback", "")).startswith("circle"):
            # build_circle noted why runs is used: the first link of the chain
            why_circle = str(meta["fallback"]).removeprefix("circle: ").removesuffix("; runs used")
            gave_way(meta, "circle", "runs", why_circle)
        method = "runs"
        phase(progress, "runs")
    if method == "peel" and len(present) == 2:
        method = meta["method"] = "runs"  # one class against the other: the runs method
    net = _folded(points, None, yk, present, cls, eps_q, depth, seed, method, progress, meta)
    if net.meta["method"] == "peel" and (why := _rejected(net, points, certify=False)):
        # peel's float search keeps float64 right as a rule, not by proof: checked here
        for key in ("phases", "projection", "folds", "depth", "warps"):
            meta.pop(key, None)
        before = meta.get("fallback")
        meta.update(method="pma", fallback=f"{before}; peel: {why}" if before else f"peel: {why}")
        gave_way(meta, "peel", "pma", why)
        if note := getattr(progress, "note", None):
            note(f"peel gave way to pma: {why}")
        phase(progress, "pma fallback")
        net = _folded(points, None, yk, present, cls, eps_q, depth, seed, "pma", progress, meta)
    return net


def gave_way(meta: dict[str, Any], method: str, to: str, why: str) -> None:
    """Record in ``meta["fallback_chain"]`` that ``method`` gave way to ``to`` and why: the
    whole chain (circle, runs, peel, pma), where ``meta["fallback"]`` says it in words."""
    meta.setdefault("fallback_chain", []).append({"from": method, "to": to, "why": why})


def _joined(before: str | None, why: str) -> str:
    """``why`` after an earlier fallback's note (circle's, when runs then gives way too)."""
    return f"{before}; {why}" if before and why not in before else why


def phase(progress: Progress | None, name: str) -> None:
    """Tell ``progress`` which phase of the construction runs now (its ``phase`` method,
    when it has one: the command line's progress names it)."""
    if (named := getattr(progress, "phase", None)) is not None:
        named(name)


def ln_g_options(method: str, depth: int | None, exact: bool) -> None:
    """:class:`InputError` unless ``method``, ``depth`` and ``exact`` suit ``arch="ln-g"``:
    one construction (steps), depth 1."""
    if method != DEFAULT_METHOD:
        raise InputError(
            f"method {method!r} builds ln3 nets; ln-g nets are built by steps (leave method "
            f"{DEFAULT_METHOD!r})"
        )
    if depth is not None and depth > 1:
        raise InputError(f"depth {depth}: depth > 1 for ln-g is not built yet (depth 1 only)")
    if depth == 0:
        raise InputError("depth 0 has no LayerNorm: ln-g nets have depth 1")
    if exact:
        raise InputError("exact merges are the paper's algorithm for ln3 nets, not ln-g")


def build_exact(
    points: Any,
    eps: fmpq,
    cls: tuple[Any, ...],
    depth: int | None,
    seed: int,
    progress: Progress | None,
    meta: dict[str, Any],
) -> Any:
    """The net of :func:`.exact.exact_pma` for two classes (see :func:`build`)."""
    from .exact import FOLD_READ_VECTOR, ExactStep, compact, exact_layer, exact_pma, pad, threshold

    present = sorted(set(points.y), key=cls.index)
    if len(present) > 2:
        raise InputError(
            f"exact merges are the paper's binary algorithm: {len(present)} classes present"
        )
    yk = [present.index(label) for label in points.y]
    t, read, shift = projected(points.X, yk, seed)
    chain = exact_pma(t, yk, eps, progress)
    needed = len(chain.steps)
    pad_to(chain, depth, pad)
    theta, left = threshold(chain)
    meta.update(
        method="pma",
        exact=True,
        projection=[str(r) for r in read],
        folds=needed,
        depth=len(chain.steps),
    )
    layers = []
    a: tuple[fmpq, ...] = read
    for step in chain.steps:
        if not layers:  # the chain runs on the normalised projection read . x - shift
            step = ExactStep(step.centre + shift, step.offset, step.scale, step.kind, step.merged)
        layers.append(exact_layer(a, step))
        a = FOLD_READ_VECTOR
    layers = compact(layers)
    if layers:
        shift = fmpq(0)
    lines = [(left, -1, theta), (1 - left, 1, -theta)]
    rows = {present[label]: (slope, iota - slope * shift) for label, slope, iota in lines}
    W = tuple(tuple(rows[c][0] * x for x in a) if c in rows else _zeros(a) for c in cls)
    b = tuple(rows[c][1] if c in rows else fmpq(-1) for c in cls)
    readout = Affine(W, b, {"kind": "threshold", "threshold": str(theta)})
    return LNNet(points.d, WIDTH, eps, tuple(layers), readout, cls, meta)


def _rejected(net: LNNet[fmpq], points: PointSet, certify: bool) -> str | None:
    """Why a circle (or peel) net is not used, or None: the certificate fails (``certify``),
    or NumPy float64 (or PyTorch's, where installed) gets points wrong (the circle search
    bounds the float error, ``circle._carry``, so it should not: this checks that
    promise; peel's keeps its label gaps float-sized)."""
    from ..certify import certify as certificate
    from ..floats import check, have_torch

    if certify and (failed := len(certificate(net, points).failures)):
        return f"the certificate failed on {failed} points"
    for backend in ("float64", "torch-float64") if have_torch() else ("float64",):
        got = check(net, points, backend)
        if got.agree < got.total:
            return f"{backend} gets {got.total - got.agree} of {got.total} points wrong"
    return None


def _folded(
    points: PointSet,
    prefix: Handoff | None,
    yk: list[int],
    present: list[Label],
    cls: tuple[Label, ...],
    eps_q: fmpq,
    depth: int | None,
    seed: int,
    method: str,
    progress: Progress | None,
    meta: dict[str, Any],
) -> LNNet[fmpq]:
    """Fold the projection (or, after ``prefix``'s circle layers, its read) with ``method``
    until ``k`` runs remain, pad to ``depth``, and read out: threshold or envelope."""
    k = len(present)
    if prefix is None:
        t, read, shift = projected(points.X, yk, seed)
        layers: list[Affine[fmpq]] = []
    else:
        t, read, shift, layers = prefix.t, prefix.read, fmpq(0), list(prefix.layers)
    chain = (
        Chain(t, eps_q)
        if prefix is None
        else Chain(t, eps_q, start=prefix.start, slack=prefix.slack)
    )
    methods, fallback = (METHODS, pma) if k == 2 else (K_METHODS, pma_k)
    note = getattr(progress, "note", None)

    def peeled() -> tuple[Chain | None, str]:
        """``peel`` (multiclass §8) from each of :data:`PEEL_STARTS` first classes in turn:
        its chain, or None and why the first gave way."""
        whys = []
        for start in range(PEEL_STARTS):
            try:
                order = merge_peel(fresh := Chain(t, eps_q), yk, progress, start=start)
            except Unresolvable as e:
                whys.append(named_labels(str(e), present))  # its label numbers as classes
                continue
            meta.update(method="peel", phases=[present[c] for c in order])
            return fresh, ""
        return None, whys[0]

    got: Chain | None = None
    if k > 2 and method == "peel":
        got, why = peeled()
        why = f"peel: {why}"
    else:
        try:
            methods[method](chain, yk, progress)
            got = chain
        except Unresolvable as e:
            if prefix is not None:  # the caller uses runs alone instead
                raise
            why = str(e)
            if k > 2 and method == "runs" and points.m <= PEEL_MAX_POINTS:
                if note:
                    note(f"method runs gave way to peel: {e}")
                gave_way(meta, "runs", "peel", why)
                phase(progress, "peel")
                got, why_peel = peeled()
                if got is not None:
                    meta["fallback"] = _joined(meta.get("fallback"), why)
                else:
                    gave_way(meta, "peel", "pma", f"peel: {why_peel}")
                    why = f"{why}; peel: {why_peel}"
            elif method in ("runs", "pma"):
                gave_way(meta, method, "pma", why)
        else:
            why = ""
    if got is None:
        # the data is finer than float64 can see: the paper's construction, which needs no
        # float search, still gives a certified net (not a float-faithful one); after runs'
        # layers, as before peel existed, or from the start
        if k > 2 and method == "peel":
            gave_way(meta, "peel", "pma", why)
        meta.update(method="pma", fallback=_joined(meta.get("fallback"), why))
        if note:
            note(f"method {method} gave way to pma: {why}")
        phase(progress, "pma fallback")
        fallback(chain, yk, progress)
        got = chain
    chain = got
    needed = len(chain.steps)
    pad_to(chain, None if depth is None else depth - len(layers), _pad, len(layers))
    if prefix is None:
        meta["projection"] = [str(r) for r in read]
    meta.update(folds=len(layers) + needed, depth=len(layers) + len(chain.steps))
    if k > 2:
        meta["warps"] = sum(step.kind == "warp" for step in chain.steps)

    for i, step in enumerate(chain.steps):
        if i == 0:  # the chain runs on the normalised projection read . x - shift
            step = replace(step, centre=step.centre + shift)
        layers.append(fold_layer(read, step))
        read = read_vector(step.read)
    if chain.steps:
        shift = fmpq(0)
    if k == 2:
        theta, left = _threshold(chain, yk)
        lines = [(left, -1, theta), (1 - left, 1, -theta)]
        absent, kind = fmpq(-1), {"kind": "threshold", "threshold": str(theta)}
    else:
        runs_k: list[list[int]] = []
        for g in order_groups(chain, [[i] for i in range(len(yk))], yk):
            if runs_k and yk[runs_k[-1][0]] == yk[g[0]]:
                runs_k[-1] += g
            else:
                runs_k.append(list(g))
        assert len(runs_k) == k, "the construction must end with k runs"
        lines, absent, taus = envelope(chain, runs_k, yk)
        kind = {"kind": "envelope", "thresholds": [str(x) for x in taus]}
    rows = {present[label]: (slope, iota - slope * shift) for label, slope, iota in lines}
    W = tuple(tuple(rows[c][0] * a for a in read) if c in rows else _zeros(read) for c in cls)
    b = tuple(rows[c][1] if c in rows else absent for c in cls)
    return LNNet(points.d, WIDTH, eps_q, tuple(layers), Affine(W, b, kind), cls, meta)


def projected(
    X: Sequence[Sequence[fmpq]], y: Sequence[int], seed: int
) -> tuple[list[fmpq], tuple[fmpq, ...], fmpq]:
    """The projected values ``t`` of the normalised points, and the first layer's read of
    the raw ones: ``t = read^T x - shift`` exactly (``_normalise``, :func:`.project`)."""
    Xn, scale, offset = _normalise(X)
    w, t = project(Xn, y, seed=seed)
    read = tuple(wi / si for wi, si in zip(w, scale, strict=True))
    shift = sum((r * o for r, o in zip(read, offset, strict=True)), fmpq(0))
    return t, read, shift


def pad_to(chain: Any, depth: int | None, pad: Callable[[Any, int], None], before: int = 0) -> None:
    """Pad ``chain`` to exactly ``depth`` layers; an error if it already has more (the
    message counts ``before`` layers ahead of the chain too)."""
    needed = len(chain.steps)
    if depth is None:
        return
    if needed > depth:
        needed, depth = needed + before, depth + before
        raise InputError(
            f"this labeling needs {needed} LayerNorm layer{'s' * (needed != 1)}, more than {depth}"
        )
    pad(chain, depth - needed)


def _normalise(
    X: Sequence[Sequence[fmpq]],
) -> tuple[list[tuple[fmpq, ...]], list[fmpq], list[fmpq]]:
    """Coordinates float arithmetic can rank and search: ``(X', s, o)`` with ``x = s x' + o``.

    Exact rationals make every scale representable, but the projection ranking
    and the runs search work in float64.  When coordinates exceed ``2^60`` in
    size or spread, or a coordinate spreads less than ``2^-60`` of the widest,
    each coordinate is shifted to start at 0 and scaled by a power of two to
    spread about 1; the first layer reads ``(w / s) . x`` and its centre moves
    by ``(w / s) . o``, exactly.  Other data are left alone (``s = 1, o = 0``),
    so their nets do not change.
    """
    d = len(X[0])
    lo = [min(row[j] for row in X) for j in range(d)]
    hi = [max(row[j] for row in X) for j in range(d)]
    spans = [b - a for a, b in zip(lo, hi, strict=True)]
    widest = max(spans)
    big, small = fmpq(2) ** 60, fmpq(1, 2**60)
    if (
        all(max(abs(a), abs(b)) <= big for a, b in zip(lo, hi, strict=True))
        and all(s == 0 or s >= widest * small for s in spans)
        and widest >= small
    ):
        return list(map(tuple, X)), [fmpq(1)] * d, [fmpq(0)] * d
    scale = [power_of_two_near(s) if s else fmpq(1) for s in spans]
    Xn = [tuple((x - o) / s for x, o, s in zip(row, lo, scale, strict=True)) for row in X]
    return Xn, scale, lo


def _eps(eps: object) -> fmpq:
    try:
        return epsilon(eps)
    except ValueError as e:
        raise InputError(str(e)) from None


def _zeros(read: Sequence[fmpq]) -> tuple[fmpq, ...]:
    return tuple(fmpq(0) for _ in read)


def _pad(chain: Chain, count: int) -> None:
    """Append ``count`` injective folds (proofs/depth_and_padding.md, padding lemma)."""
    for _ in range(count):
        chain.push(reversal(chain))


def _threshold(chain: Chain, y: Sequence[int]) -> tuple[fmpq, int]:
    """A rational strictly between the two label runs, and the left run's label.

    From the chain's float64 intervals when they separate the runs (rigorous
    bounds, :func:`.runfold.interval_runs`), else from balls.
    """
    fast = interval_runs(chain, np.asarray(y))
    if fast is not None and len(fast[1]) == 2:
        (order, starts), (lo_f, hi_f) = fast, chain.intervals
        left, right = order[: starts[1]], order[starts[1] :]
        lo, hi = exact_float(float(hi_f[left].max())), exact_float(float(lo_f[right].min()))
        return dyadic_between(lo, hi), y[int(order[0])]
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
