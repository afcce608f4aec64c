"""Train an LN-Net with Adam in PyTorch, then read it as the exact net it is.

:func:`train` fits the architecture of the paper's LN-Nets (:mod:`lncapacity.model`)

    ``Linear(d, n) -> Norm -> (Linear(n, n) -> Norm) * (depth - 1) -> Linear(n, k)``

``Norm`` a ``torch.nn.LayerNorm(n)`` (``groups=1``) or a ``torch.nn.GroupNorm(groups, n)``
(an LN-G layer); with ``norm="rms"`` RMSNorm in ``groups`` groups, as
:class:`lncapacity.parallel_norm.ParallelLN` ``(n, n / groups, centering=False)`` with a gain
and a bias per feature (so its parameters are LayerNorm's and GroupNorm's, one for one: the
parallel layer scaling of Ni et al., "Parallel Layer Normalization for Universal
Approximation"), to the training points by full-batch Adam on the cross-entropy of the
readout scores, in float32.  The inputs are standardised while training (each feature by its
mean and standard deviation); the standardisation is then folded into the first ``Linear``
(rounded to float32 once), so the returned module takes the raw features.  Training stops
when every training point is classified right with a float margin of at least
:data:`STOP_MARGIN`, or after ``max_iter`` steps.

The result's ``net`` is :func:`lncapacity.interop.torch_in.from_torch` of the returned module: the
module's function in exact arithmetic (every float32 weight is a dyadic rational), so a
certificate of ``net`` (:func:`lncapacity.certify`) is a proof about the module that was
trained.  Training is deterministic given ``random_state``: the initial weights come from
``torch.manual_seed(random_state)`` (inside ``torch.random.fork_rng``, the caller's random
state untouched) and every step runs on one thread, so the sums run in one order.

PyTorch is optional (``pip install 'lncapacity[torch]'``): without it :func:`train` raises
:class:`~lncapacity.errors.InputError` saying so.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from flint import fmpq

from .data import PointSet, points_from_arrays
from .errors import InputError
from .fileformat import MAX_DEPTH, MAX_INPUT_DIM, MAX_WIDTH, check_classes
from .floats import import_torch
from .interop import from_torch
from .model import Label, LNNet
from .reproducible import torch_one_thread

if TYPE_CHECKING:  # pragma: no cover
    import torch

__all__ = [
    "DEFAULT_LR",
    "MAX_ITER",
    "MAX_LR",
    "MAX_PARAMETERS",
    "MAX_TRAIN_BYTES",
    "STOP_MARGIN",
    "TrainResult",
    "check_parameters",
    "check_size",
    "train",
]

DEFAULT_LR = 0.01
"""Adam's default step size here (full-batch steps on standardised inputs)."""

STOP_MARGIN = 1.0
"""Training stops once every training point's float32 margin (its class's score minus the
largest other score) is at least this: far above float32's rounding of scores of that size,
so the exact certificate then finds every point right."""

MAX_SEED = 2**63 - 1
"""``torch.manual_seed`` takes seeds up to this."""

MAX_ITER = 10**9
"""Most Adam steps (``max_iter``, ``train --max-iter``, ``capacity --train-iter``)."""

MAX_LR = 10.0
"""Largest step size: an Adam step moves a weight by about ``lr`` at most, so ``MAX_ITER``
steps keep the float32 weights, their products and LayerNorm's squares finite (a step size
of ``1e30`` made them overflow to NaN; ``1e308`` is beyond float32 itself)."""

MAX_PARAMETERS = 1 << 21
"""Most weights and biases of a trained net (2,097,152): its exact net must fit a net file
(:data:`~lncapacity.fileformat.MAX_FILE_BYTES`, about 30 bytes a float32 weight as a dyadic
rational)."""

MAX_TRAIN_BYTES = 1 << 31
"""Most memory training may take (2 GiB), estimated before any tensor is made: four float32
copies of every parameter (the weight, its gradient, Adam's two moments) and four of every
point's activations and scores (:func:`check_size`)."""

MAX_FEATURE = float(np.finfo(np.float32).max)
"""Largest magnitude of a training feature: the trained module computes in float32."""

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class TrainResult:
    """What :func:`train` returns.

    ``net`` the exact LN-Net of ``module`` (:func:`lncapacity.interop.torch_in.from_torch`, classes
    as the training labels, sorted); ``module`` the trained ``torch.nn.Sequential`` (float32, eval
    mode, no gradients); ``train_accuracy`` the fraction of the distinct training points the module
    classifies right in float32; ``iterations`` the Adam steps taken; ``seconds`` the training time
    (without the import); ``loss`` the final mean cross-entropy; ``converged`` whether training
    stopped because every margin reached :data:`STOP_MARGIN`.
    """

    net: LNNet[fmpq]
    module: Any
    train_accuracy: float
    iterations: int
    seconds: float
    loss: float
    converged: bool
    classes: tuple[Label, ...]


def train(
    X: Any,
    y: Any = None,
    *,
    width: int,
    depth: int,
    groups: int = 1,
    random_state: int = 0,
    max_iter: int = 2000,
    lr: float = DEFAULT_LR,
    verbose: bool = False,
    progress: Progress | None = None,
    norm: str = "ln",
) -> TrainResult:
    """Train an LN-Net of ``depth`` normalisation layers of ``width`` on ``(X, y)`` with Adam
    (PyTorch, float32), and read it exactly.

    See the module doc for the architecture, the stopping rule and determinism.  The net is
    a float32 module read exactly: certify it (:func:`lncapacity.certify`) to know which
    points it gets right.

    Parameters
    ----------
    X
        A :class:`~lncapacity.data.PointSet` (then ``y`` is omitted) or points, read as
        :func:`lncapacity.points_from_arrays` reads them (equal rows with equal labels
        merged).
    y
        The labels of the points in ``X``.
    width
        The width of every layer.
    depth
        The number of normalisation layers.
    groups
        ``> 1``: each layer is a ``GroupNorm(groups, width)`` (LN-G), so ``width`` must be a
        multiple of ``groups`` with groups of at least 2 (of at least 1 with ``norm="rms"``).
    random_state
        Seeds the initial weights.
    max_iter
        Adam steps at most (full batch); training stops earlier once every margin reaches
        :data:`STOP_MARGIN`.
    lr
        Adam's step size.
    verbose
        Print the loss and training accuracy to stderr every 100 steps.
    progress
        Called as ``progress(done, total)`` as steps are taken.
    norm
        ``"ln"`` (LayerNorm, GroupNorm) or ``"rms"`` (RMSNorm in ``groups`` groups, with a gain
        and a bias: ``ParallelLN(width, width / groups, centering=False)``).

    Returns
    -------
    TrainResult
        The exact net, the trained module, its float32 training accuracy and how training
        went.

    Raises
    ------
    InputError
        On bad parameters (before the data is read: :func:`check_parameters`), on data
        beyond the limits (classes, weights, memory: :func:`check_size`; features beyond
        float32) before any tensor is made, without PyTorch, and when the weights overflow in
        training (lower ``lr``).

    Examples
    --------
    >>> import lncapacity
    >>> from lncapacity.train import train
    >>> X = [[0, 0], [0, 1], [1, 0], [1, 1]]
    >>> y = [0, 1, 1, 0]
    >>> result = train(X, y, width=8, depth=1)
    >>> result.net.depth, result.net.widths, result.converged
    (1, (8,), True)
    >>> lncapacity.certify(result.net, X, y).all_certified
    True
    """
    checked = check_parameters(
        width=width,
        depth=depth,
        groups=groups,
        random_state=random_state,
        max_iter=max_iter,
        lr=lr,
        norm=norm,
    )
    width, depth, groups = checked["width"], checked["depth"], checked["groups"]
    random_state, max_iter, lr = checked["random_state"], checked["max_iter"], checked["lr"]
    points = X if isinstance(X, PointSet) else points_from_arrays(X, y)
    if points.d > MAX_INPUT_DIM:
        raise InputError(f"{points.d} features, beyond the limit of {MAX_INPUT_DIM:,}")
    classes = points.classes
    check_size(points.m, points.d, len(classes), width, depth)
    F = points.floats()
    if not np.all(np.abs(F) <= MAX_FEATURE):  # also NaN
        big = float(np.max(np.abs(F)))
        raise InputError(
            f"a feature of magnitude {big:.3g}, beyond float32's range ({MAX_FEATURE:.3g}): the "
            "trained module computes in float32 (rescale the data)"
        )
    torch = import_torch()
    index = {c: i for i, c in enumerate(classes)}
    labels = np.array([index[c] for c in points.y], dtype=np.int64)
    mean = F.mean(axis=0)
    scale = F.std(axis=0)
    scale[~(scale > 0) | ~np.isfinite(scale)] = 1.0
    start = time.perf_counter()
    with torch.random.fork_rng(devices=[]), torch_one_thread(torch), torch.no_grad():
        torch.manual_seed(int(random_state))
        module = _module(torch, points.d, width, depth, len(classes), groups, norm)
        Xs = torch.tensor((F - mean) / scale, dtype=torch.float32)
        with torch.enable_grad():
            iterations, loss, converged = _adam(
                torch, module, Xs, torch.tensor(labels), max_iter, lr, verbose, progress
            )
        if not all(bool(torch.isfinite(w).all()) for w in module.parameters()):
            raise InputError(
                f"training diverged: weights overflowed to infinity or NaN after {iterations} "
                f"Adam steps of size {lr:g} (try a smaller lr)"
            )
        _fold_standardisation(torch, module[0], mean, scale)
        module.eval().requires_grad_(False)
        Z = module(torch.tensor(F, dtype=torch.float32))
        accuracy = float((Z.argmax(dim=1).numpy() == labels).mean())
    seconds = time.perf_counter() - start
    net = from_torch(module, classes=classes, name="trained module")
    net.meta["train"] = {
        "width": width,
        "depth": depth,
        "groups": groups,
        "norm": norm,
        "random_state": int(random_state),
        "iterations": iterations,
        "max_iter": max_iter,
        "lr": lr,
        "converged": converged,
    }
    return TrainResult(net, module, accuracy, iterations, seconds, loss, converged, classes)


def check_parameters(
    *,
    width: Any = None,
    depth: Any = None,
    groups: Any = None,
    random_state: Any = None,
    max_iter: Any = None,
    lr: Any = None,
    norm: Any = None,
) -> dict[str, Any]:
    """The parameters of :func:`train` given (not ``None``), checked and as plain Python
    numbers (a NumPy integer becomes an ``int``); :class:`~lncapacity.errors.InputError`
    naming the first one out of range, before any data is read or PyTorch imported.

    The one place for these limits: :func:`train`, ``LNNetClassifier(strategy="train")``,
    ``lncapacity train`` and ``capacity --train`` all ask it.  What depends on the data
    (classes, parameters, memory) is :func:`check_size`."""
    out: dict[str, Any] = {}

    def integer(name: str, v: Any, lo: int, hi: int) -> None:
        if v is None:
            return
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not lo <= v <= hi:
            raise InputError(f"{name}: expected an integer from {lo} to {hi:,}, got {v!r}")
        out[name] = int(v)

    integer("width", width, 2, MAX_WIDTH)
    integer("depth", depth, 1, MAX_DEPTH)
    integer("groups", groups, 1, MAX_WIDTH)
    integer("random_state", random_state, 0, MAX_SEED)
    integer("max_iter", max_iter, 0, MAX_ITER)
    if norm is not None:
        if norm not in ("ln", "rms"):
            raise InputError(f"norm: expected 'ln' or 'rms', got {norm!r}")
        out["norm"] = norm
    least = 1 if norm == "rms" else 2  # a centred group of one feature is 0/0
    if "width" in out and "groups" in out and (width % groups or width // groups < least):
        raise InputError(
            f"groups: {groups} groups of width {width} (width a multiple of groups, "
            f"groups of {least} or more)"
        )
    if lr is not None:
        if (
            isinstance(lr, (bool, np.bool_))
            or not isinstance(lr, (int, float, np.integer, np.floating))
            or not 0 < lr <= MAX_LR
        ):
            raise InputError(f"lr: expected a finite number > 0 and at most {MAX_LR:g}, got {lr!r}")
        out["lr"] = float(lr)
    return out


def check_size(m: int, d: int, k: int, width: int, depth: int) -> None:
    """:class:`~lncapacity.errors.InputError` when training a net of ``depth`` layers of
    ``width`` on ``m`` points of ``d`` features and ``k`` classes is beyond the limits:
    :data:`~lncapacity.fileformat.MAX_CLASSES`, :data:`MAX_PARAMETERS`, and
    :data:`MAX_TRAIN_BYTES` of memory estimated before any tensor is made."""
    check_classes(k)
    params = d * width + width + (depth - 1) * (width + 1) * width + 2 * depth * width
    params += (width + 1) * k
    if params > MAX_PARAMETERS:
        raise InputError(
            f"width {width}, depth {depth}, {d} features and {k} classes make {params:,} "
            f"weights, beyond the limit of {MAX_PARAMETERS:,} (the exact net must fit a net file)"
        )
    memory = 4 * (4 * params + 4 * m * (d + 2 * depth * width + k))
    if memory > MAX_TRAIN_BYTES:
        raise InputError(
            f"training {m:,} points with width {width}, depth {depth} and {k} classes takes "
            f"about {memory / 2**30:.1f} GiB (float32 weights, Adam's state and every point's "
            f"activations), beyond the limit of {MAX_TRAIN_BYTES >> 30} GiB: fewer points, "
            "classes or layers"
        )


def _module(
    torch: Any, d: int, width: int, depth: int, k: int, groups: int, norm: str = "ln"
) -> torch.nn.Sequential:
    from .parallel_norm import ParallelLN

    nn = torch.nn
    mods: list[Any] = []
    for i in range(depth):
        mods.append(nn.Linear(d if i == 0 else width, width))
        if norm == "rms":
            mods.append(ParallelLN(width, width // groups, 1e-5, centering=False))
        else:
            mods.append(nn.LayerNorm(width) if groups == 1 else nn.GroupNorm(groups, width))
    mods.append(nn.Linear(width, k))
    return nn.Sequential(*mods)


def _adam(
    torch: Any,
    module: Any,
    X: Any,
    y: Any,
    max_iter: int,
    lr: float,
    verbose: bool,
    progress: Progress | None,
) -> tuple[int, float, bool]:
    """Full-batch Adam steps until every margin is :data:`STOP_MARGIN` or more:
    ``(steps, last loss, whether it stopped so)``."""
    opt = torch.optim.Adam(module.parameters(), lr=lr)
    k = module[-1].out_features
    loss = math.nan
    for step in range(max_iter + 1):
        Z = module(X)
        out = torch.nn.functional.cross_entropy(Z, y)
        loss = float(out.detach())
        margin = _min_margin(torch, Z.detach(), y) if k > 1 else math.inf
        done = margin >= STOP_MARGIN
        if verbose and (step % 100 == 0 or done or step == max_iter):
            right = float((Z.detach().argmax(dim=1) == y).float().mean())
            print(
                f"lncapacity: train step {step}: loss {loss:.4g}, accuracy {right:.4f}, "
                f"min margin {margin:.3g}",
                file=sys.stderr,
            )
        if progress is not None:
            progress(max_iter if done else step, max_iter)
        if done or step == max_iter:
            return step, loss, done
        opt.zero_grad()
        out.backward()
        opt.step()
    raise AssertionError("unreachable")  # pragma: no cover


def _min_margin(torch: Any, Z: Any, y: Any) -> float:
    """The smallest ``z_y - max_{j != y} z_j`` over the rows."""
    own = Z.gather(1, y[:, None])[:, 0]
    other = Z.scatter(1, y[:, None], -math.inf).max(dim=1).values
    return float((own - other).min())


def _fold_standardisation(torch: Any, first: Any, mean: np.ndarray, scale: np.ndarray) -> None:
    """``W (x - mean) / scale + b`` as one ``Linear`` of ``x``, computed in float64 and rounded
    to the layer's float32 once."""
    W = first.weight.detach().double().numpy() / scale
    b = first.bias.detach().double().numpy() - W @ mean
    first.weight.copy_(torch.tensor(W))
    first.bias.copy_(torch.tensor(b))
