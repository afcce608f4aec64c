"""A scikit-learn estimator face: ``LNNetClassifier().fit(X, y).predict(X)``.

Fitting runs the exact construction on the training points (read exactly:
a float is the dyadic rational it is, and an object array of Python ints,
:class:`~fractions.Fraction` or :class:`flint.fmpq` stays exact), so the
fitted net ``net_`` classifies every distinct training point correctly: a
certificate for that is one call, ``lncapacity.certify(clf.net_, X, y)``.
Prediction runs a float backend of :mod:`lncapacity.floats`: NumPy
(``"float64"``, the default, or ``"float32"``) or PyTorch's own modules
(``"torch-float64"``, ``"torch-float32"``; PyTorch is optional and checked by
``fit``); ``backend="exact"`` decides each argmax with ball arithmetic.

Where scikit-learn is installed the class derives from its ``BaseEstimator``
and ``ClassifierMixin`` and validates its input with scikit-learn's own
helpers (so ``clone``, ``Pipeline``, grid search and ``cross_val_score`` work,
an unfitted predict raises ``NotFittedError``, and the error messages are the
ones scikit-learn's conventions ask for); without it, a small stand-in
provides ``get_params``, ``set_params`` and ``score``.  scikit-learn is never
required.

Any number of classes (multiclass, :mod:`lncapacity.construct.multiclass`):
``classes_`` is sorted, ``predict`` returns labels, ``decision_function`` the
``(n, k)`` readout scores in the order of ``classes_``.  A single class is fine
(the net is constant).
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from . import floats
from .construct import build
from .data import points_from_arrays
from .errors import InputError

BACKENDS = ("auto", *floats.BACKENDS, "exact")

try:  # pragma: no cover - exercised in whichever environment runs the tests
    from sklearn.base import BaseEstimator, ClassifierMixin
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.multiclass import check_classification_targets
    from sklearn.utils.validation import check_is_fitted

    try:
        from sklearn.utils.validation import validate_data as _validate_data
    except ImportError:  # scikit-learn < 1.6: the same helper was a method

        def _validate_data(estimator: Any, /, *args: Any, **kwargs: Any) -> Any:
            return estimator._validate_data(*args, **kwargs)

    HAVE_SKLEARN = True
    _BASES: tuple[type, ...] = (ClassifierMixin, BaseEstimator)
except ImportError:  # pragma: no cover
    HAVE_SKLEARN = False

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


_FITTED = ("net_", "backend_", "classes_", "n_features_in_", "feature_names_in_")


class LNNetClassifier(*_BASES):  # type: ignore[misc]
    """Width-3 LN-Net built for the training points (seed 000; by default the ``runs``
    refinement of the Projection Merge Algorithm, float-faithful).

    Parameters (stored unvalidated, as scikit-learn requires; checked by ``fit``):
    ``eps`` LayerNorm epsilon (exact, >= 0); ``depth`` pad to exactly this many
    LayerNorm layers (``None``: as few as the construction needs); ``method``
    the construction (``"auto"``, ``"runs"``, ``"circle"``, ``"peel"`` or the paper's
    ``"pma"``: see :func:`~lncapacity.build`); ``seed`` for the projection; ``backend``
    of ``predict`` (``"auto"``, the default: ``"float64"`` when it is right on every
    training point, else ``"exact"``; or ``"float64"``,
    ``"float32"``, ``"torch-float64"``, ``"torch-float32"``, ``"exact"``; a torch
    backend needs PyTorch installed).

    Fitted attributes: ``net_`` (the exact :class:`~lncapacity.model.LNNet`),
    ``backend_`` (the backend ``predict`` runs),
    ``classes_``, ``n_features_in_`` (and ``feature_names_in_`` when fitted on
    a table with string column names, through scikit-learn).
    """

    def __init__(
        self,
        eps: object = 0,
        depth: int | None = None,
        method: str = "auto",
        seed: int = 0,
        backend: str = "auto",
    ) -> None:
        self.eps = eps
        self.depth = depth
        self.method = method
        self.seed = seed
        self.backend = backend

    # -- scikit-learn protocol ------------------------------------------------

    def __sklearn_is_fitted__(self) -> bool:
        # n_features_in_ is set while validating, before the construction can fail
        return hasattr(self, "net_")

    # -- fit / predict --------------------------------------------------------

    def fit(self, X: Any, y: Any) -> LNNetClassifier:
        """Build the net for ``(X, y)``; raises ``ValueError`` on input it cannot fit.

        A failed fit leaves the estimator unfitted.
        """
        for name in _FITTED:
            self.__dict__.pop(name, None)
        self._check_backend()
        if HAVE_SKLEARN:
            X, y = _validate_data(self, X, y, dtype=None, accept_sparse=False)
            _check_object_array(X)
            check_classification_targets(y)
        points = points_from_arrays(X, y)
        net = build(
            points,
            eps=self.eps,
            depth=self.depth,
            method=self.method,
            seed=self.seed,
            budget=0 if self.method == "auto" else None,  # fits stay fast: runs for 2 classes
        )
        self.net_ = net
        self.backend_ = self.backend
        if self.backend == "auto":
            # deep nets can be right exactly but not in float64 (proofs/float_gap.md)
            faithful = floats.check(net, points, "float64").all_agree
            self.backend_ = "float64" if faithful else "exact"
        # sorted like net.classes (the same labels, as int or str): predict maps one to the other
        self.classes_ = np.unique(np.asarray(y))
        self.n_features_in_ = points.d
        return self

    def predict(self, X: Any) -> np.ndarray:
        """The predicted class of each row of ``X``."""
        A = self._predict_input(X)
        labels = self.net_.predict(A, backend=self.backend_)
        lookup = dict(zip(self.net_.classes, self.classes_.tolist(), strict=True))
        return np.asarray([lookup[label] for label in labels.tolist()], dtype=self.classes_.dtype)

    def decision_function(self, X: Any) -> np.ndarray:
        """The readout scores ``z`` (float backend), shape ``(n, k)``, columns as ``classes_``.

        With two classes scikit-learn's convention is one column, the score of
        ``classes_[1]`` minus that of ``classes_[0]``.
        """
        A = self._predict_input(X)
        if self.backend_ == "exact":
            Z = np.asarray([_exact_scores(self.net_, row) for row in A])
        else:
            Z = np.asarray(floats.forward(self.net_, A, self.backend_), dtype=np.float64)
        return Z[:, 1] - Z[:, 0] if Z.shape[1] == 2 else Z

    # -- helpers --------------------------------------------------------------

    def _predict_input(self, X: Any) -> np.ndarray:
        if HAVE_SKLEARN:
            check_is_fitted(self)
            A = _validate_data(self, X, reset=False, dtype=None, accept_sparse=False)
            _check_object_array(A)
        else:
            A = self._check_predict_input(X)
        self._check_backend()
        # float16/float32 widen to float64 exactly (the exact backend reads Python floats)
        return A.astype(np.float64) if A.dtype.kind == "f" else A

    def _check_backend(self) -> None:
        if self.backend not in BACKENDS:
            raise InputError(
                f"unknown backend {self.backend!r} (choose from {', '.join(BACKENDS)})"
            )
        if self.backend in floats.TORCH_BACKENDS and not floats.have_torch():
            raise InputError(
                f"backend {self.backend!r} needs PyTorch: pip install 'lncapacity[torch]'"
            )

    def _check_predict_input(self, X: Any) -> np.ndarray:
        """Validation without scikit-learn, with scikit-learn's messages."""
        if not hasattr(self, "net_"):
            raise NotFittedError(
                f"This {type(self).__name__} instance is not fitted yet; call 'fit' first."
            )
        A = np.asarray(X)
        if A.ndim != 2:
            raise ValueError(f"Expected a 2D array, got an array of shape {A.shape}")
        if A.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {A.shape[1]} features, but {type(self).__name__} is expecting "
                f"{self.n_features_in_} features as input."
            )
        if self.backend_ != "exact" and not np.all(np.isfinite(A.astype(np.float64))):
            raise ValueError("Input X contains NaN or infinity.")
        return A


def _exact_scores(net: Any, row: Any) -> list[float]:
    """The readout scores of one row, as floats nearest the exact values.

    Ball arithmetic at a precision raised until the largest score is certainly
    the largest, so the argmax agrees with ``predict(backend="exact")``.
    """
    from flint import arb

    from .arith import exact, precision

    x = [exact(v) for v in row]
    prec = 128
    while True:
        with precision(prec):
            z = net.map(arb).forward([arb(v) for v in x], arb.sqrt)
            best = max(range(len(z)), key=lambda i: z[i].mid())
            if all(z[best] > z[i] for i in range(len(z)) if i != best) or prec >= 1 << 16:
                return [float(v.mid()) for v in z]
        prec *= 2


def _check_object_array(X: np.ndarray) -> None:
    """Entries of an object array must be finite numbers.

    scikit-learn converts such arrays to float64; here they are kept (so that
    ``Fraction`` and ``fmpq`` entries are read exactly), but rejected like
    scikit-learn would: ``TypeError`` for a non-number, ``ValueError`` for NaN
    or infinity.  Integers too large for a float are exact numbers, kept.
    """
    if X.dtype != object:
        return
    try:
        F = X.astype(np.float64)
    except OverflowError:
        return
    if not np.all(np.isfinite(F)):
        raise ValueError("Input X contains NaN or infinity.")
