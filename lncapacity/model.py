"""The LN-Net: affine maps alternating with LayerNorm, and nothing else.

An LN-Net of width ``n`` with ``L`` LayerNorm layers computes (seed 000; note
math.md section 1)::

    h_0 = x,   h_l = LN(W_l h_{l-1} + b_l)  (l = 1..L),   z = R h_L + r,

and predicts ``classes[argmax z]``.  ``LN(y) = (y - mean y) / sqrt(var y + eps)``
with the biased (1/n) variance and no affine part (an affine part folds into the
next map).  ``R`` has one row per class, so binary and multiclass nets share
one shape.  With ``L = 0`` the readout acts on ``x`` directly.

Weights are exact rationals (:class:`flint.fmpq`) in every net this package
builds, but the model is generic: :meth:`LNNet.map` converts every number (to
rigorous balls, floats, SymPy expressions, ...) and :meth:`LNNet.forward`
evaluates one point in whatever number type the weights have.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
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


def _dot(row: Sequence[T], x: Sequence[T]) -> T:
    acc = row[0] * x[0]
    for w, xi in zip(row[1:], x[1:], strict=True):
        acc = acc + w * xi
    return acc


def layer_norm(y: Sequence[T], eps: T, sqrt: Callable[[T], T]) -> list[T]:
    """``(y - mean y) / sqrt(var y + eps)``, biased variance, in ``y``'s number type."""
    n = len(y)
    mean = sum(y[1:], y[0]) / n
    c = [yi - mean for yi in y]
    var = sum((ci * ci for ci in c[1:]), c[0] * c[0]) / n
    s = sqrt(var + eps)
    return [ci / s for ci in c]


@dataclass(frozen=True)
class LNNet(Generic[T]):
    """A width-``width`` LN-Net with ``len(layers)`` LayerNorm layers (see module doc)."""

    input_dim: int
    width: int
    eps: T
    layers: tuple[Affine[T], ...]
    readout: Affine[T]
    classes: tuple[Label, ...]
    meta: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        problems = list(self._shape_problems())
        if problems:
            raise InputError("malformed LN-Net: " + "; ".join(problems))

    def _shape_problems(self) -> Iterator[str]:
        if self.input_dim < 1:
            yield "input_dim must be >= 1"
        if self.width < 2 and self.layers:
            yield "width must be >= 2 (LayerNorm of one feature is 0/0)"
        if not self.classes:
            yield "at least one class is needed"
        if len(set(self.classes)) != len(self.classes):
            yield "classes must be distinct"
        if self.eps < 0:
            yield "eps must be >= 0"
        fan_in = self.input_dim
        for i, layer in enumerate(self.layers, 1):
            yield from _affine_problems(f"layer {i}", layer, self.width, fan_in)
            fan_in = self.width
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
        )

    def forward(self, x: Sequence[T], sqrt: Callable[[T], T]) -> list[T]:
        """The readout ``z`` for one point, in the weights' number type."""
        h = list(x)
        for layer in self.layers:
            h = layer_norm(layer(h), self.eps, sqrt)
        return self.readout(h)

    def predict(self, X: Any, backend: str = "float64") -> np.ndarray:
        """Labels for the rows of ``X``.

        ``backend`` is ``"float64"`` or ``"float32"`` (NumPy forward pass),
        ``"torch-float64"`` or ``"torch-float32"`` (PyTorch's modules, see
        :func:`lncapacity.floats.to_torch`) or ``"exact"`` (rigorous balls,
        precision raised until each argmax is decided; inputs read exactly).
        """
        if backend == "exact":
            from .certify import decide

            idx = [decide(self, row) for row in X]
        else:
            from .floats import forward

            idx = np.argmax(forward(self, X, backend), axis=1)
        return np.asarray([self.classes[i] for i in idx])


def _affine_problems(name: str, a: Affine[Any], rows: int, cols: int) -> Iterator[str]:
    if len(a.W) != rows or any(len(r) != cols for r in a.W):
        yield f"{name}: W must be {rows}x{cols}"
    if len(a.b) != rows:
        yield f"{name}: b must have {rows} entries"
