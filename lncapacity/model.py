"""The LN-Net: affine maps alternating with LayerNorm, and nothing else.

An LN-Net with ``L`` LayerNorm layers computes (Ni, Guo, Jia and Huang, "On the
Nonlinearity of Layer Normalization", ICML 2024)::

    h_0 = x,   h_l = g_l * LN(W_l h_{l-1} + b_l) + beta_l  (l = 1..L),   z = R h_L + r,

and predicts ``classes[argmax z]``.  ``LN(y) = (y - mean y) / sqrt(var y + eps)``
with the biased (1/n_l) variance, ``n_l`` the number of rows of ``W_l`` (the
layer's width, any ``n_l >= 2``; widths may differ from layer to layer).  The
elementwise gain ``g_l`` and bias ``beta_l`` (:class:`Norm`, as in
``torch.nn.LayerNorm(elementwise_affine=True)``) are optional: the nets this
package builds have none (width 3, ``g = 1``, ``beta = 0``), nets imported from
PyTorch keep the ones they were trained with.  ``R`` has one row per class, so
binary and multiclass nets share one shape.  With ``L = 0`` the readout acts on
``x`` directly.

**LN-G.** A layer may normalise its ``n_l`` features in ``g_l`` contiguous groups
of equal size ``n_l / g_l >= 2`` (:attr:`Norm.groups`; ``g_l = 1`` is LayerNorm):
``LN`` above is then applied to each group on its own, with the same ``eps``
(:func:`layer_norm`), and the gain and bias stay per feature, as in
``torch.nn.GroupNorm(g_l, n_l)`` on ``(batch, n_l)`` inputs.

**RMSNorm.** A layer may normalise without centring (:attr:`Norm.rms`): ``RMS(y) = y /
sqrt(mean(y^2) + eps)``, as ``torch.nn.RMSNorm(n_l, eps)`` computes it (Zhang and Sennrich,
"Root Mean Square Layer Normalization", NeurIPS 2019); in groups it is the parallel layer
scaling of Ni et al., "Parallel Layer Normalization for Universal Approximation" (2025),
``ParallelLN(n_l, n_l / g_l, eps, centering=False)``.  A group of RMSNorm may hold a single
feature (``y / sqrt(y^2 + eps)``).  RMSNorm of width ``n`` is LayerNorm of width ``n + 1``
read in an orthonormal basis of the zero-mean hyperplane (proofs/rmsnorm.md).

A gain and bias always fold into the next affine map, exactly:
``W (g * u + beta) + b = (W diag(g)) u + (W beta + b)`` is an identity of
rational functions, and every ``h_l`` is followed by an affine map (the next
layer's, or the readout).  :meth:`LNNet.folded` does that; the exact
computations (the certificate) use it.  The unfolded form is kept in the net
and its file because it is what PyTorch computes in floating point: exporting
it gives back the very modules that were imported, bit for bit.

Weights are exact rationals (:class:`flint.fmpq`) in every net this package
builds, but the model is generic: :meth:`LNNet.map` converts every number (to
rigorous balls, floats, SymPy expressions, ...) and :meth:`LNNet.forward`
evaluates one point in whatever number type the weights have.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import numpy as np

from .errors import InputError

T = TypeVar("T")
U = TypeVar("U")

Label = int | str


@dataclass(frozen=True)
class Affine(Generic[T]):
    """``x -> W x + b``; ``meta`` carries construction notes (never used to compute)."""

    W: tuple[tuple[T, ...], ...]
    b: tuple[T, ...]
    meta: Mapping[str, Any] = field(default_factory=dict)

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.W), (len(self.W[0]) if self.W else 0)

    def __call__(self, x: Sequence[T]) -> list[T]:
        return [_dot(row, x) + bi for row, bi in zip(self.W, self.b, strict=True)]

    def map(self, f: Callable[[T], U]) -> Affine[U]:
        return Affine(
            tuple(tuple(f(w) for w in row) for row in self.W),
            tuple(f(v) for v in self.b),
            self.meta,
        )


@dataclass(frozen=True)
class Norm(Generic[T]):
    """How a layer normalises: in ``groups`` groups, then ``u -> gain * u + bias``.

    ``None`` stands for the identity part (``gain = 1``, ``bias = 0``), as in
    ``torch.nn.LayerNorm(n, elementwise_affine=False)`` or ``bias=False``.
    ``groups`` (LN-G): the layer's features are normalised in that many
    contiguous groups of equal size (at least 2 each); ``1`` is LayerNorm.
    ``rms``: RMSNorm, no centring (``y / sqrt(mean(y^2) + eps)`` in each group, whose size may
    then be 1); ``False`` is LayerNorm.
    """

    gain: tuple[T, ...] | None = None
    bias: tuple[T, ...] | None = None
    groups: int = 1
    rms: bool = False

    def __call__(self, u: Sequence[T]) -> list[T]:
        out = list(u)
        if self.gain is not None:
            out = [g * v for g, v in zip(self.gain, out, strict=True)]
        if self.bias is not None:
            out = [v + c for v, c in zip(out, self.bias, strict=True)]
        return out

    def map(self, f: Callable[[T], U]) -> Norm[U]:
        return Norm(
            None if self.gain is None else tuple(f(g) for g in self.gain),
            None if self.bias is None else tuple(f(c) for c in self.bias),
            self.groups,
            self.rms,
        )

    @property
    def is_identity(self) -> bool:
        """Whether the elementwise affine part is the identity (no gain, no bias); says
        nothing of ``groups`` or ``rms``."""
        return self.gain is None and self.bias is None

    @property
    def is_plain(self) -> bool:
        """Whether this is a plain LayerNorm (no gain, no bias, one group, centred)."""
        return self.is_identity and self.groups == 1 and not self.rms

    @property
    def min_group(self) -> int:
        """The least size a group may have, 1 for RMSNorm and 2 for LayerNorm (one centred
        feature is 0/0)."""
        return 1 if self.rms else 2


def _dot(row: Sequence[T], x: Sequence[T]) -> T:
    acc = row[0] * x[0]
    for w, xi in zip(row[1:], x[1:], strict=True):
        acc = acc + w * xi
    return acc


def layer_norm(
    y: Sequence[T], eps: T, sqrt: Callable[[T], T], groups: int = 1, centre: bool = True
) -> list[T]:
    """``(y - mean y) / sqrt(var y + eps)``, biased variance, in ``y``'s number type.

    With ``groups > 1`` (LN-G) each of the ``groups`` contiguous blocks of ``y`` (of equal
    size, which ``groups`` must divide) is normalised on its own, with the same ``eps``.
    ``centre=False`` is RMSNorm: ``y / sqrt(mean(y^2) + eps)`` (in each group).
    """
    if groups != 1:
        k = len(y) // groups
        if groups < 1 or k * groups != len(y):
            raise ValueError(f"{groups} groups do not divide {len(y)} features")
        return [
            v for j in range(0, len(y), k) for v in layer_norm(y[j : j + k], eps, sqrt, 1, centre)
        ]
    n = len(y)
    if centre:
        mean = sum(y[1:], y[0]) / n
        c = [yi - mean for yi in y]
    else:
        c = list(y)
    var = sum((ci * ci for ci in c[1:]), c[0] * c[0]) / n
    s = sqrt(var + eps)
    return [ci / s for ci in c]


@dataclass(frozen=True)
class LNNet(Generic[T]):
    """An LN-Net with ``len(layers)`` LayerNorm layers (see module doc).

    ``width`` is the common width of every layer, or ``None`` when the widths
    differ (then each layer's width is its number of rows; see :attr:`widths`).
    ``norms`` holds the elementwise affine part, the groups and the kind (LayerNorm or
    RMSNorm) of each layer's normalisation (one :class:`Norm` per layer), or is empty when
    every layer is a plain LayerNorm.
    """

    input_dim: int
    width: int | None
    eps: T
    layers: tuple[Affine[T], ...]
    readout: Affine[T]
    classes: tuple[Label, ...]
    meta: Mapping[str, Any] = field(default_factory=dict)
    norms: tuple[Norm[T], ...] = ()

    def __post_init__(self) -> None:
        if self.norms and all(n.is_plain for n in self.norms):
            object.__setattr__(self, "norms", ())  # one spelling of "plain LayerNorms"
        problems = list(self._shape_problems())
        if problems:
            raise InputError("malformed LN-Net: " + "; ".join(problems))

    @property
    def widths(self) -> tuple[int, ...]:
        """The width ``n_l`` of each layer (its number of rows)."""
        return tuple(len(layer.b) for layer in self.layers)

    def norm(self, layer: int) -> Norm[T]:
        """The affine part and groups of LayerNorm ``layer`` (0-based); plain if it has none."""
        return self.norms[layer] if self.norms else Norm()

    @property
    def groups(self) -> tuple[int, ...]:
        """The number of groups of each layer, 1 for a LayerNorm and more for LN-G."""
        return tuple(self.norm(i).groups for i in range(len(self.layers)))

    @property
    def grouped(self) -> bool:
        """Whether some layer normalises in more than one group (LN-G)."""
        return any(n.groups != 1 for n in self.norms)

    @property
    def rms(self) -> bool:
        """Whether some layer is an RMSNorm (:attr:`Norm.rms`)."""
        return any(n.rms for n in self.norms)

    def _shape_problems(self) -> Iterator[str]:
        if self.input_dim < 1:
            yield "input_dim must be >= 1"
        rms = [n.rms for n in self.norms] if len(self.norms) == len(self.layers) else []
        ln = [i for i in range(len(self.layers)) if not (rms and rms[i])]
        if self.width is not None and self.width < 2 and ln:
            yield "width must be >= 2 (LayerNorm of one feature is 0/0)"
        if self.norms and len(self.norms) != len(self.layers):
            yield f"norms must have one entry per layer ({len(self.layers)})"
        if not self.classes:
            yield "at least one class is needed"
        if len(set(self.classes)) != len(self.classes):
            yield "classes must be distinct"
        if self.eps < 0:
            yield "eps must be >= 0"
        fan_in = self.input_dim
        for i, layer in enumerate(self.layers, 1):
            rows = self.width if self.width is not None else len(layer.W)
            if rows < 2 and self.width is None and i - 1 in ln:
                yield f"layer {i}: width must be >= 2 (LayerNorm of one feature is 0/0)"
            yield from _affine_problems(f"layer {i}", layer, rows, fan_in)
            if len(self.norms) == len(self.layers):
                for part in ("gain", "bias"):
                    v = getattr(self.norms[i - 1], part)
                    if v is not None and len(v) != rows:
                        yield f"layer {i}: LayerNorm {part} must have {rows} entries"
                yield from _group_problems(i, self.norms[i - 1], rows)
            fan_in = rows
        yield from _affine_problems("readout", self.readout, len(self.classes), fan_in)

    @property
    def depth(self) -> int:
        """The number ``L`` of LayerNorm layers."""
        return len(self.layers)

    def map(self, f: Callable[[T], U]) -> LNNet[U]:
        """The same net with ``f`` applied to every number (weights and ``eps``)."""
        return LNNet(
            self.input_dim,
            self.width,
            f(self.eps),
            tuple(layer.map(f) for layer in self.layers),
            self.readout.map(f),
            self.classes,
            self.meta,
            tuple(n.map(f) for n in self.norms),
        )

    def forward(self, x: Sequence[T], sqrt: Callable[[T], T]) -> list[T]:
        """The readout ``z`` for one point, in the weights' number type."""
        h = list(x)
        for i, layer in enumerate(self.layers):
            norm = self.norms[i] if self.norms else Norm()
            h = layer_norm(layer(h), self.eps, sqrt, norm.groups, not norm.rms)
            if self.norms and not self.norms[i].is_identity:
                h = self.norms[i](h)
        return self.readout(h)

    def folded(self) -> LNNet[T]:
        """The same function with every LayerNorm gain and bias folded into the next map.

        ``W (g * u + beta) + b = (W diag(g)) u + (W beta + b)``: exact in the
        weights' number type when it is exact (rationals), so the result computes
        the same scores for every input.  Layer and net ``meta`` are kept, and so are the
        layers' groups and kinds (``Norm(groups=g, rms=r)`` without gain or bias).
        """
        if all(n.is_identity for n in self.norms):
            return self
        maps = [*self.layers, self.readout]
        for i, norm in enumerate(self.norms):
            nxt = maps[i + 1]
            W, b = nxt.W, nxt.b
            if norm.bias is not None:
                b = tuple(bi + _dot(row, norm.bias) for row, bi in zip(W, b, strict=True))
            if norm.gain is not None:
                W = tuple(tuple(w * g for w, g in zip(row, norm.gain, strict=True)) for row in W)
            maps[i + 1] = Affine(W, b, nxt.meta)
        return LNNet(
            self.input_dim,
            self.width,
            self.eps,
            tuple(maps[:-1]),
            maps[-1],
            self.classes,
            self.meta,
            tuple(Norm(groups=n.groups, rms=n.rms) for n in self.norms),
        )

    def predict(self, X: Any, backend: str = "float64") -> np.ndarray:
        """Labels for the rows of ``X``.

        ``backend`` is ``"float64"`` or ``"float32"`` (NumPy forward pass),
        ``"torch-float64"`` or ``"torch-float32"`` (PyTorch's modules, see
        :func:`lncapacity.floats.to_torch`) or ``"exact"`` (rigorous balls,
        precision raised until each argmax is decided; inputs read exactly).
        """
        kind = "exact" if backend == "exact" else "float"
        if kind not in _PREDICTORS:  # only while lncapacity itself is half imported
            raise RuntimeError(f"no {kind} backend registered (import lncapacity first)")
        idx = _PREDICTORS[kind](self, X, backend)
        return np.asarray([self.classes[i] for i in idx])


Predictor = Callable[[LNNet[Any], Any, str], Iterable[int]]
"""``(net, X, backend) -> the index in net.classes of the class predicted for each row of X``."""

_PREDICTORS: dict[str, Predictor] = {}


def register_predictor(kind: str, predict: Predictor) -> None:
    """Have :meth:`LNNet.predict` run ``predict`` for a ``kind`` of backend: ``"exact"`` (the
    backend of that name) or ``"float"`` (every other name, which ``predict`` checks).

    The model computes no backend itself, and imports none: :mod:`lncapacity.certify`
    registers ``"exact"`` and :mod:`lncapacity.floats` ``"float"`` as they are imported
    (``import lncapacity`` imports both).
    """
    if kind not in ("exact", "float"):
        raise ValueError(f"unknown kind of backend {kind!r} (choose from exact, float)")
    _PREDICTORS[kind] = predict


def _group_problems(i: int, norm: Norm[Any], rows: int) -> Iterator[str]:
    groups = norm.groups
    if not isinstance(groups, int) or isinstance(groups, bool) or groups < 1:
        yield f"layer {i}: groups must be a positive integer, got {groups!r}"[:120]
    elif groups > 1 and rows % groups:
        yield f"layer {i}: {groups} groups do not divide its width {rows}"
    elif groups > 1 and rows // groups < norm.min_group:
        yield f"layer {i}: {groups} groups of width {rows} have one feature each (0/0)"
    if not isinstance(norm.rms, bool):
        yield f"layer {i}: rms must be True or False, got {norm.rms!r}"[:120]


def _affine_problems(name: str, a: Affine[Any], rows: int, cols: int) -> Iterator[str]:
    if len(a.W) != rows or any(len(r) != cols for r in a.W):
        yield f"{name}: W must be {rows}x{cols}"
    if len(a.b) != rows:
        yield f"{name}: b must have {rows} entries"
