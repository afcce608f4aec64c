"""Assemble a certified-by-construction binary LN-Net from a point set.

Pipeline (Algorithm 1 of Ni et al. 2024, and its refinements): project to a line
(:mod:`.project`), fold until at most two label runs remain (:mod:`.runfold`,
one run fewer per layer, or the paper's :mod:`.pma`),
optionally pad to an exact depth with injective layers, then read out with a
threshold between the two runs.  Every weight is an exact rational.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
from flint import fmpq

from ..arith import dyadic_between, epsilon
from ..data import PointSet, named_labels, points_from_arrays
from ..errors import InputError
from ..fileformat import MAX_DEPTH, check_classes, read_vector
from ..model import Affine, Label, LNNet
from ..version import __version__
from .circle import CIRCLE_META, OBJECTIVES, Handoff, build_circle  # method "circle"
from .circle.beam import past
from .common_denominator import Columns
from .fold import Chain, FoldStep, exact_float, fold_layer, reversal
from .groups import build_ln_g  # arch "ln-g", depth 1
from .groups_deep import build_ln_g_deep  # arch "ln-g", depth 2 and more
from .multiclass import envelope, merge_runs_k, pma_k
from .peel import merge_peel
from .pma import Progress, order_groups, pma, power_of_two_near
from .project import project, runs
from .rms import ln_eps, rms_net  # archs "rms", "rms-g": the twins of ln3 and ln-g nets
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
net, and uses ``runs`` when it does not); for two, the shallower of ``runs`` and a
``circle`` search within :func:`auto_budget` seconds (``runs``' net, unchanged, when circle
finds nothing shallower in time)."""
AUTO_BUDGET = (10.0, 0.1, 120.0)
"""``auto``'s circle budget below :data:`AUTO_LARGE` points: ``(least, per point, most)``
seconds (:func:`auto_budget`; measured, unloaded 2-core machine, docs/tables/circle.md:
circle finds its nets on 48 collinear points in about 2 s, on 200 random points in R^3 in 6,
on digits even/odd, 1797 points, in about 30)."""
AUTO_MIN_DEPTH = 8
"""``auto`` keeps a ``runs`` net of at most this many layers without a search (small builds,
property checks and examples stay instant; circle saves at most a few layers there)."""
AUTO_LARGE = 2000
"""From this many points on, ``auto`` does not search by default (``--budget`` still asks
for a search): measured (docs/tables/auto.md, random labels in R^3 and make_moons at
``m = 2000``), a search given half of ``runs``' CPU time still cost 2.8 and 3.3 times
``runs`` (its first layer, the trained starts, and ``runs`` after a hand-over run past
the deadline), for 911 layers instead of 940 and none; random labels
there are beyond circle's float64 reach (docs/tables/circle.md: 0.41 of ``m - 2`` at
``m = 1000``)."""
CHOICES = ("auto", *METHODS)
ARCHS = ("ln3", "ln-g", "rms", "rms-g")
"""The architectures :func:`build` builds: ``ln3``, the width-3 LN-Net (every method above),
and ``ln-g``: depth 1 with one LayerNorm group of 3 per label boundary (:mod:`.groups`), or
depth 2 and more with ``O(sqrt m)`` groups (blocks of label runs, :mod:`.groups_deep`);
``rms`` and ``rms-g``: their RMSNorm twins, width 2 and RMSNorm in groups of 2 (parallel
layer scaling), rounded to rationals (:func:`.rms.rms_net`, proofs/rmsnorm.md)."""
RMS_ARCHS = {"rms": "ln3", "rms-g": "ln-g"}
"""Each RMSNorm architecture and the LayerNorm one it is the twin of."""
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
    budget: float | None = None,
    objective: str = "faithful",
) -> LNNet[fmpq]:
    """A width-3 LN-Net (or, with ``arch="ln-g"``, an LN-G net) that classifies every
    point of ``(X, y)`` correctly, with exact rational weights.

    At most ``m - 2`` layers for ``m`` distinct points (Ni, Guo, Jia and Huang, "On the
    Nonlinearity of Layer Normalization", ICML 2024; proofs/depth_and_padding.md).  The
    net is right on every point by construction; :func:`lncapacity.certify` proves it.

    Parameters
    ----------
    X
        A :class:`~lncapacity.data.PointSet` (then ``y`` is omitted) or an array of points.
    y
        The labels of the points in ``X``.
    eps
        LayerNorm's epsilon, ``>= 0``, read exactly (``"1e-5"`` is 1/100000).
    depth
        Pad to exactly this many LayerNorm layers (an error if the construction needs
        more).
    method
        ``"auto"`` (the default, :data:`DEFAULT_METHOD`), ``"runs"`` (one label run fewer
        per layer, float-faithful; it gives way, with three or more classes to ``"peel"``
        first, then to ``"pma"`` when the labels are closer than float64 can resolve, noted
        in ``meta["fallback"]``), ``"pma"`` (the paper's algorithm), ``"circle"`` (whole
        circle maps per layer, searched; ``runs`` when that is not shallower) or ``"peel"``
        (three or more classes, one at a time against the rest by the binary ``runs``
        folds, :mod:`.peel`; ``pma`` when it gives way).
    classes
        The readout's rows (default: the sorted labels present), so that a labeling that
        uses one class of two still scores both.
    seed
        Chooses among the candidate projections and the circle search's starts.
    progress
        Called as the construction goes (the command line's progress bar).
    exact
        With ``method="pma"`` and two classes: the paper's algorithm to the letter, fold
        centres at the true midpoints (algebraic numbers, :mod:`.exact`,
        proofs/exact_merges.md), so merged values are equal.
    arch
        ``"ln3"`` (the default: everything above) or ``"ln-g"``: depth 1, one LayerNorm
        group of 3 per label boundary of a projection, any number of classes
        (:func:`.groups.build_ln_g`, proofs/ln_g_steps.md), or with ``depth >= 2`` far
        fewer groups, about ``2 sqrt(b)`` for ``b`` label boundaries and two classes
        (:func:`.groups_deep.build_ln_g_deep`, proofs/ln_g_depth.md; depth 3 and more
        re-step the depth-2 net's scores, no fewer groups); ``method`` stays ``"auto"``.
        ``"rms"`` and ``"rms-g"`` build the ``"ln3"`` or ``"ln-g"`` net (with ``eps`` times
        2/3) and return its RMSNorm twin rounded to rationals (:func:`.rms.rms_net`): width
        2, or RMSNorm in groups of 2 (proofs/rmsnorm.md); certify it, as any net.
    budget
        CPU seconds (``time.process_time``) the circle search for two classes may take
        (``auto``: after ``runs``, default :func:`auto_budget`; ``circle``: default no
        limit; 0: no search; three or more classes: not limited).  The net depends on the
        machine's speed only when the search is cut short by it.
    objective
        With ``method="circle"``: ``"faithful"`` (the default: a circle net float64 runs
        right) or ``"depth"`` (the search in ball arithmetic, :mod:`.circle.precise`: the
        shallowest net it finds, certified; whether float64 runs it right is reported in
        ``meta["float64"]``, not required).

    Returns
    -------
    LNNet
        The net, its construction recorded in ``meta`` and in each layer's ``meta``.

    Raises
    ------
    InputError
        On bad input: an unknown method, arch or objective, a negative depth or ``eps``,
        labels outside ``classes``, the same point with two labels, or a ``depth`` too
        small for the construction.

    Examples
    --------
    >>> import lncapacity
    >>> X = [[0, 0], [0, 1], [1, 0], [1, 1]]
    >>> y = [0, 1, 1, 0]
    >>> net = lncapacity.build(X, y)
    >>> net.depth, net.widths, net.meta["method"]
    (1, (3,), 'runs')
    >>> net.predict(X).tolist()
    [0, 1, 1, 0]
    >>> lncapacity.build(X, y, depth=3).depth  # padded with injective layers
    3
    >>> lncapacity.build(X, y, method="nope")
    Traceback (most recent call last):
    ...
    lncapacity.errors.InputError: unknown method 'nope' (choose from auto, runs, pma, circle, peel)
    """
    points = X if isinstance(X, PointSet) else points_from_arrays(X, y)
    eps_q = _eps(eps)
    if method not in CHOICES:
        raise InputError(f"unknown method {method!r} (choose from {', '.join(CHOICES)})")
    if depth is not None and (not isinstance(depth, int) or isinstance(depth, bool) or depth < 0):
        raise InputError(f"depth must be a non-negative integer, got {depth!r}")
    if arch not in ARCHS:
        raise InputError(f"unknown arch {arch!r} (choose from {', '.join(ARCHS)})")
    if arch in RMS_ARCHS:  # the LayerNorm net with eps 2/3 of RMSNorm's, then its twin
        if exact:
            raise InputError("exact merges (algebraic weights) build ln3 nets only")
        ln = build(
            points,
            eps=ln_eps(eps_q),
            depth=depth,
            method=method,
            classes=classes,
            seed=seed,
            progress=progress,
            arch=RMS_ARCHS[arch],
            budget=budget,
            objective=objective,
        )
        phase(progress, "RMSNorm twin")
        return rms_net(ln)
    if objective not in OBJECTIVES:
        raise InputError(f"unknown objective {objective!r} (choose from {', '.join(OBJECTIVES)})")
    if objective != "faithful" and (method != "circle" or arch != "ln3" or exact):
        raise InputError(f"objective {objective!r} is the circle search's: use method 'circle'")
    cls = tuple(points.classes if classes is None else classes)
    check_classes(len(cls))
    if missing := sorted(set(points.y) - set(cls), key=str):
        raise InputError(f"labels {missing} are not among the classes {list(cls)}")
    if arch == "ln-g":
        ln_g_options(method, depth, exact)
        meta_g: dict[str, Any] = {"generator": f"lncapacity {__version__}"}
        cols = Columns(points.X)  # the coordinates read once, as integers (a million points)
        frame = _normalise(points.X, cols)
        same = frame[0] is points.X  # not normalised: the columns are the frame's
        kw = {"seed": seed, "classes": cls, "meta": meta_g, "frame": frame}
        if depth is not None and depth >= 2:
            return build_ln_g_deep(points, eps_q, depth, columns=cols if same else None, **kw)
        return build_ln_g(points, eps_q, columns=cols if same else None, **kw)
    seconds = _budget(budget)
    auto = method == "auto" and len(set(points.y)) == 2 and not exact
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
    phase(progress, {"circle": "circle search", "auto": "runs"}.get(method, method))
    if auto:  # two classes: runs, and circle within the budget when it is shallower
        circle_meta = {"generator": meta["generator"], "method": "circle"}
        return _auto(
            points.m,
            lambda: _folded(
                points, None, yk, present, cls, eps_q, depth, seed, "runs", progress, meta
            ),
            lambda deadline, below: _circle(
                points, yk, present, cls, eps_q, None, seed, progress, circle_meta, deadline, below
            ),
            depth is not None,
            seconds,
            progress,
        )
    if method == "circle":  # whole circle maps per layer: its own entry point (circle.py)
        two = seconds is not None and len(present) == 2  # budgets are for two classes
        deadline = time.process_time() + seconds if two else None
        if objective != "faithful":
            meta["objective"] = objective
        circle = _circle(
            points, yk, present, cls, eps_q, depth, seed, progress, meta, deadline, None, objective
        )
        if circle is not None:
            return circle
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


def auto_budget(m: int) -> float:
    """CPU seconds ``auto``'s circle search may take for ``m`` points: ``m / 10`` clamped
    to 10 .. 120 (:data:`AUTO_BUDGET`) below :data:`AUTO_LARGE` points, from there on 0
    (no search)."""
    least, per_point, most = AUTO_BUDGET
    if m >= AUTO_LARGE:
        return 0.0
    return min(most, max(least, per_point * m))


def _budget(budget: object) -> float | None:
    """``budget`` as seconds (None: the default), or :class:`InputError`."""
    if budget is None:
        return None
    if isinstance(budget, bool) or not isinstance(budget, int | float):
        raise InputError(f"budget must be a number of seconds, got {budget!r}")
    if not math.isfinite(budget) or budget < 0:
        raise InputError(f"budget must be finite and >= 0 seconds, got {budget!r}")
    return float(budget)


def _auto(
    m: int,
    runs: Callable[[], LNNet[fmpq]],
    circle: Callable[[float, int], LNNet[fmpq] | None],
    padded: bool,
    budget: float | None,
    progress: Progress | None,
) -> LNNet[fmpq]:
    """``auto`` with two classes: the ``runs`` net (``runs()``), unless ``circle(deadline,
    depth to beat)`` (:func:`_circle`) finds a shallower one within the budget
    (:func:`auto_budget` of the ``m`` points unless given).  A runs net of at most
    :data:`AUTO_MIN_DEPTH` layers, or one ``padded`` to a given depth, is kept unsearched."""
    net = runs()
    seconds = auto_budget(m) if budget is None else budget
    if padded or net.depth <= AUTO_MIN_DEPTH or seconds <= 0:
        return net
    note = getattr(progress, "note", None)
    if note:
        note(f"auto: runs needs {net.depth} layers; circle searches for fewer ({seconds:.0f} s)")
    phase(progress, "circle search")
    found = circle(time.process_time() + seconds, net.depth)
    if found is not None and found.depth < net.depth:
        if note:
            note(f"auto: circle, {found.depth} layers (runs {net.depth})")
        return replace(found, meta={**found.meta, "auto": f"circle over runs ({net.depth})"})
    if note:
        note(f"auto: runs kept, {net.depth} layers")
    return net


def _circle(
    points: PointSet,
    yk: list[int],
    present: list[Label],
    cls: tuple[Label, ...],
    eps_q: fmpq,
    depth: int | None,
    seed: int,
    progress: Progress | None,
    meta: dict[str, Any],
    deadline: float | None,
    below: int | None = None,
    objective: str = "faithful",
) -> LNNet[fmpq] | None:
    """``method="circle"``: its net (certified, float64-faithful), or None after noting in
    ``meta`` (``method = "runs"``, ``fallback``) why ``runs`` is used.  When ``runs``
    after the circle layers (a :class:`Handoff`) fails, the search runs again from the
    next seed, up to :data:`HANDOFF_RETRIES` times while ``deadline`` has not passed.
    ``below``: a depth the net must beat (``auto``: the ``runs`` net's).  ``objective``:
    :func:`build`'s (``"depth"``: only the certificate is required, float64 is reported in
    ``meta["float64"]``)."""
    note = getattr(progress, "note", None)
    why: str | None = None
    for retry in range(HANDOFF_RETRIES + 1):
        got = build_circle(
            points,
            yk,
            present,
            cls,
            eps_q,
            depth,
            seed + retry,
            progress,
            meta,
            deadline,
            objective,
        )
        why = None  # None: build_circle noted in meta why runs is used
        handed = isinstance(got, Handoff)
        if isinstance(got, Handoff):  # certified by construction: the chain starts from balls
            try:
                got = _folded(
                    points, got, yk, present, cls, eps_q, depth, seed, "runs", progress, meta
                )
            except Unresolvable as e:
                why = f"runs after its layers failed ({e})"
        if isinstance(got, LNNet) and (below is None or got.depth < below):
            # a circle net is found in float64 and certified now; a hand-over's is certified
            # by construction (its folds start from balls)
            floats = objective == "faithful"
            why = _rejected(got, points, certify="handoff" not in meta, floats=floats)
            if why is None and not floats:
                got = replace(got, meta={**got.meta, "float64": _float_report(got, points)})
            if why is None:
                if retry:
                    got = replace(got, meta={**got.meta, "circle_seed": seed + retry})
                return got
        elif isinstance(got, LNNet):
            why = f"{got.depth} layers, no fewer than runs' {below}"
        if why is None:
            if "fallback_chain" not in meta and str(meta.get("fallback", "")).startswith("circle"):
                # build_circle noted why runs is used: the first link of the chain
                noted = str(meta["fallback"]).removeprefix("circle: ").removesuffix("; runs used")
                gave_way(meta, "circle", "runs", noted)
            return None
        for key in (*CIRCLE_META, "folds", "depth"):
            meta.pop(key, None)
        if not handed or past(deadline) or retry == HANDOFF_RETRIES:
            break
        if note:
            note(f"circle: {why}; searching again from seed {seed + retry + 1}")
    meta.update(method="runs", fallback=f"circle: {why}; runs used")
    gave_way(meta, "circle", "runs", why)
    if note:
        note(f"circle gave way to runs: {why}")
    return None


HANDOFF_RETRIES = 2
"""Further seeds :func:`build` tries when ``runs`` fails after a circle search's layers
(measured on digits even/odd: after seed 0's hand-over runs ran out of float resolution,
layer 49; seed 1's search found a 15-layer circle net)."""


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
    steps (depth 1, the default) or blocks (depth 2 up to ``fileformat.MAX_DEPTH``)."""
    if method != DEFAULT_METHOD:
        raise InputError(
            f"method {method!r} builds ln3 nets; ln-g nets are built by steps (leave method "
            f"{DEFAULT_METHOD!r})"
        )
    if depth is not None and depth > MAX_DEPTH:
        raise InputError(f"depth {depth}: beyond the limit of {MAX_DEPTH} layers")
    if depth == 0:
        raise InputError("depth 0 has no LayerNorm: ln-g nets have depth 1 or more")
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


def _rejected(net: LNNet[fmpq], points: PointSet, certify: bool, floats: bool = True) -> str | None:
    """Why a circle (or peel) net is not used, or None: the certificate fails (``certify``),
    or NumPy float64 (or PyTorch's, where installed) gets points wrong (the circle search
    bounds the float error, ``circle._carry``, so it should not: this checks that
    promise; peel's keeps its label gaps float-sized; not checked without ``floats``)."""
    from ..certify import certify as certificate
    from ..floats import check, have_torch

    if certify and (failed := len(certificate(net, points).failures)):
        return f"the certificate failed on {failed} points"
    if not floats:
        return None
    for backend in ("float64", "torch-float64") if have_torch() else ("float64",):
        got = check(net, points, backend)
        if got.agree < got.total:
            return f"{backend} gets {got.total - got.agree} of {got.total} points wrong"
    return None


def _float_report(net: LNNet[fmpq], points: PointSet) -> str:
    """How NumPy float64 runs ``net`` on ``points`` (``objective="depth"`` reports it)."""
    from ..floats import check

    got = check(net, points, "float64")
    if got.agree == got.total:
        return f"right on all {got.total} points"
    return f"wrong on {got.total - got.agree} of {got.total} points (not required)"


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
    X: Sequence[Sequence[fmpq]], cols: Columns | None = None
) -> tuple[Sequence[Sequence[fmpq]], list[fmpq], list[fmpq]]:
    """Coordinates float arithmetic can rank and search: ``(X', s, o)`` with ``x = s x' + o``.

    Exact rationals make every scale representable, but the projection ranking
    and the runs search work in float64.  When coordinates exceed ``2^60`` in
    size or spread, or a coordinate spreads less than ``2^-60`` of the widest,
    each coordinate is shifted to start at 0 and scaled by a power of two to
    spread about 1; the first layer reads ``(w / s) . x`` and its centre moves
    by ``(w / s) . o``, exactly.  Other data are left alone (``s = 1, o = 0``),
    so their nets do not change (and ``X`` itself is returned).  ``cols``: ``X``'s
    :class:`.Columns` if known (the extremes from its integers).
    """
    d = len(X[0])
    if cols is not None:
        lo = [fmpq(int(N.min()), D) for N, D in zip(cols.num, cols.den, strict=True)]
        hi = [fmpq(int(N.max()), D) for N, D in zip(cols.num, cols.den, strict=True)]
    else:
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
        return X, [fmpq(1)] * d, [fmpq(0)] * d
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
