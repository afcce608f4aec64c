"""A scikit-learn estimator face: ``LNNetClassifier().fit(X, y).predict(X)``.

Fitting runs the exact construction on the training points (read exactly:
a float is the dyadic rational it is), so the fitted net ``net_`` classifies
every distinct training point correctly: a certificate for that is one call,
``lncapacity.certify(clf.net_, X, y)``.  Prediction runs the NumPy float
backend (``backend="exact"`` decides each argmax with ball arithmetic).

Where scikit-learn is installed the class derives from its ``BaseEstimator``
and ``ClassifierMixin`` (so ``clone``, ``Pipeline``, grid search and
``cross_val_score`` work, and an unfitted predict raises ``NotFittedError``);
without it, a small stand-in provides ``get_params``, ``set_params`` and
``score``.  scikit-learn is never required.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from .construct import build
from .data import points_from_arrays
from .errors import InputError

try:  # pragma: no cover - exercised in whichever environment runs the tests
    from sklearn.base import BaseEstimator, ClassifierMixin
    from sklearn.exceptions import NotFittedError

    _BASES: tuple[type, ...] = (ClassifierMixin, BaseEstimator)
except ImportError:  # pragma: no cover

    class NotFittedError(ValueError, AttributeError):  # type: ignore[no-redef]
        """Raised by predict before fit (scikit-learn's contract)."""

    class _Estimator:
        """get_params / set_params / score with scikit-learn's semantics."""

        def get_params(self, deep: bool = True) -> dict[str, Any]:
            names = [p for p in inspect.signature(type(self).__init__).parameters if p != "self"]
            return {name: getattr(self, name) for name in names}

        def set_params(self, **params: Any) -> _Estimator:
            valid = self.get_params()
            for key, value in params.items():
                if key not in valid:
                    raise ValueError(f"invalid parameter {key!r} for {type(self).__name__}")
                setattr(self, key, value)
            return self

        def score(self, X: Any, y: Any) -> float:
            return float(np.mean(self.predict(X) == np.asarray(y)))  # type: ignore[attr-defined]

        def __repr__(self) -> str:
            args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
            return f"{type(self).__name__}({args})"

    _BASES = (_Estimator,)


class LNNetClassifier(*_BASES):  # type: ignore[misc]
    """Width-3 LN-Net built by the Projection Merge Algorithm (seed 000, Algorithm 1).

    Parameters (stored unvalidated, as scikit-learn requires; checked by ``fit``):
    ``eps`` LayerNorm epsilon (exact, >= 0); ``depth`` pad to exactly this many
    LayerNorm layers (``None``: as few as the construction needs); ``method``
    the construction; ``seed`` for the projection; ``backend`` of ``predict``
    (``"float64"``, ``"float32"`` or ``"exact"``).

    Fitted attributes: ``net_`` (the exact :class:`~lncapacity.model.LNNet`),
    ``classes_``, ``n_features_in_``.
    """

    def __init__(
        self,
        eps: object = 0,
        depth: int | None = None,
        method: str = "pma",
        seed: int = 0,
        backend: str = "float64",
    ) -> None:
        self.eps = eps
        self.depth = depth
        self.method = method
        self.seed = seed
        self.backend = backend

    def fit(self, X: Any, y: Any) -> LNNetClassifier:
        """Build the net for ``(X, y)``; raises ``ValueError`` on input it cannot fit."""
        points = points_from_arrays(X, y)
        self.net_ = build(
            points, eps=self.eps, depth=self.depth, method=self.method, seed=self.seed
        )
        self.classes_ = np.unique(np.asarray(y))
        self.n_features_in_ = points.d
        return self

    def predict(self, X: Any) -> np.ndarray:
        """The predicted class of each row of ``X``."""
        if not hasattr(self, "net_"):
            raise NotFittedError(
                f"This {type(self).__name__} instance is not fitted yet; call 'fit' first."
            )
        A = np.asarray(X, dtype=np.float64) if self.backend != "exact" else np.asarray(X)
        if A.ndim != 2:
            raise ValueError(f"Expected a 2D array, got an array of shape {A.shape}")
        if A.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {A.shape[1]} features, but {type(self).__name__} is expecting "
                f"{self.n_features_in_} features as input."
            )
        if self.backend != "exact" and not np.all(np.isfinite(A)):
            raise ValueError("Input X contains NaN or infinity.")
        if self.backend not in ("float64", "float32", "exact"):
            raise InputError(f"unknown backend {self.backend!r}")
        labels = self.net_.predict(A, backend=self.backend)
        lookup = dict(zip(self.net_.classes, self.classes_, strict=True))
        return np.asarray([lookup[label] for label in labels.tolist()], dtype=self.classes_.dtype)
