"""A scikit-learn estimator face: ``LNNetClassifier().fit(X, y).predict(X)``.

Fitting runs the exact construction on the training points (read exactly:
a float is the dyadic rational it is, and an object array of Python ints,
:class:`~fractions.Fraction` or :class:`flint.fmpq` stays exact), so the
fitted net ``net_`` classifies every distinct training point correctly; or, with
``strategy="train"``, trains an LN-Net with Adam in PyTorch and reads it exactly
(:mod:`lncapacity.train`).  Either way ``fit`` certifies the net on the training points
(``certificate_``: :func:`lncapacity.certify`, exact).
Prediction runs a float backend of :mod:`lncapacity.floats`: NumPy
(``"float64"``, the default, or ``"float32"``) or PyTorch's own modules
(``"torch-float64"``, ``"torch-float32"``; PyTorch is optional and checked by
``fit``); ``backend="exact"`` decides each argmax with ball arithmetic.  When to build
and when to train: docs/guide/practitioner.md.

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
import sys
import time
import warnings
from typing import Any

import numpy as np

from . import floats
from .certify import Certificate, certify, decide
from .construct import build
from .data import PointSet, points_from_arrays
from .errors import InputError
from .model import LNNet
from .train import train

BACKENDS = ("auto", *floats.BACKENDS, "exact")

try:  # pragma: no cover - exercised in whichever environment runs the tests
    from sklearn.base import BaseEstimator, ClassifierMixin
    from sklearn.exceptions import ConvergenceWarning, NotFittedError
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

    class ConvergenceWarning(UserWarning):  # type: ignore[no-redef]
        """A fit that did not reach what it aims at (scikit-learn's class of that name)."""

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


_FITTED = (
    "net_",
    "backend_",
    "classes_",
    "n_features_in_",
    "feature_names_in_",
    "certificate_",
    "certified_fraction_",
    "verdicts_",
    "float_faithful_",
    "depth_",
    "method_",
    "n_iter_",
)

STRATEGIES = ("construct", "train")
"""How :class:`LNNetClassifier` fits: build a net (the paper's construction) or train one."""

FLOAT_CHOICES = ("float64", "float32")
"""The float backends ``backend="auto"`` tries, in this order."""


class FloatFaithfulnessWarning(ConvergenceWarning):
    """The fitted net is not float-faithful on its training points: neither float64 nor float32
    predicts what the exact net predicts on every one, so ``predict`` decides in exact
    arithmetic (slow) or, with an explicit float ``backend``, may be wrong where the exact net
    is right."""


class LNNetClassifier(*_BASES):  # type: ignore[misc]
    """An LN-Net for the training points, built (``strategy="construct"``, the default) or
    trained (``strategy="train"``), and certified on them.

    ``"construct"``: the width-3 LN-Net of the exact construction (by default the ``runs``
    refinement of the Projection Merge Algorithm of Ni et al. 2024): right on every distinct
    training point whatever the labels (random ones too), at a depth that grows with the number of
    label runs (hundreds of layers on digits, where its floats fail; see the guide's "when to
    use which").  ``"train"``: an LN-Net of ``width`` and ``depth`` layers trained with Adam in
    PyTorch (:func:`lncapacity.train.train`; PyTorch needed), read exactly: shallow, and on
    data with structure (digits: 100% of the training points in seconds) it generalises far
    better; it need not reach every training point (random labels), and the certificate says
    which it gets right.

    Either way the fitted net is certified on the training points
    (:func:`lncapacity.certify`, exact ball arithmetic): ``certificate_``,
    ``certified_fraction_`` and each training row's verdict ``verdicts_`` are proofs about the
    exact net, and ``predict`` runs a float backend only where the certificate shows it
    faithful on the training points.

    The parameters are stored unvalidated, as scikit-learn requires; ``fit`` checks them.

    Parameters
    ----------
    eps
        LayerNorm's epsilon of a built net (exact, ``>= 0``; a trained net has PyTorch's
        ``1e-5``).
    depth
        ``"construct"``: pad to exactly this many LayerNorm layers (``None``: as few as the
        construction needs); ``"train"``: the number of layers (``None``: 1).
    method
        The construction: ``"auto"``, ``"runs"``, ``"circle"``, ``"peel"`` or the paper's
        ``"pma"`` (see :func:`~lncapacity.build`).
    seed
        Deprecated: use ``random_state`` (a ``FutureWarning``).
    backend
        The backend of ``predict``: ``"auto"`` (the default: ``"float64"``, else
        ``"float32"``, whichever predicts what the exact net does on every training point,
        else ``"exact"`` with a :class:`FloatFaithfulnessWarning`), or ``"float64"``,
        ``"float32"``, ``"torch-float64"``, ``"torch-float32"``, ``"exact"`` (a torch backend
        needs PyTorch).
    strategy
        ``"construct"`` or ``"train"``.
    width
        The width of a trained net's layers.
    groups
        ``> 1``: a trained net's layers are ``GroupNorm(groups, width)`` (LN-G).
    max_depth
        A cap: ``fit`` raises ``ValueError`` rather than return a deeper net (``None``: no
        cap).
    random_state
        An int (or ``None``, or a NumPy ``RandomState``, as in scikit-learn) seeding the
        construction's projection or the training's initial weights.
    max_iter
        Adam steps at most.
    verbose
        Say what ``fit`` does, on stderr.

    Attributes
    ----------
    net_
        The exact :class:`~lncapacity.model.LNNet`.
    backend_
        The backend ``predict`` runs.
    certificate_
        The :class:`~lncapacity.certify.verdicts.Certificate` on the distinct training points.
    certified_fraction_
        The fraction of them certainly right.
    verdicts_
        Per training row: ``"right"``, ``"wrong"`` or ``"undecided"``.
    float_faithful_
        ``{"float64": bool, "float32": bool}``: whether that backend predicts the exact
        net's class on every training point.
    depth_
        LayerNorm layers.
    method_
        The construction, or ``"train"``.
    n_iter_
        Adam steps (0 when built).
    classes_
        The classes, sorted, as in scikit-learn.
    n_features_in_
        As in scikit-learn (and ``feature_names_in_`` when fitted on a table with string
        column names).

    Examples
    --------
    >>> from lncapacity import LNNetClassifier
    >>> X = [[0, 0], [0, 1], [1, 0], [1, 1]]
    >>> y = [0, 1, 1, 0]
    >>> clf = LNNetClassifier().fit(X, y)
    >>> clf.predict(X).tolist(), clf.depth_, clf.method_
    ([0, 1, 1, 0], 1, 'runs')
    >>> clf.certified_fraction_, clf.backend_, clf.verdicts_.tolist()
    (1.0, 'float64', ['right', 'right', 'right', 'right'])
    >>> clf.score(X, y)
    1.0
    """

    def __init__(
        self,
        eps: object = 0,
        depth: int | None = None,
        method: str = "auto",
        seed: object = "deprecated",
        backend: str = "auto",
        *,
        strategy: str = "construct",
        width: int = 16,
        groups: int = 1,
        max_depth: int | None = None,
        random_state: Any = 0,
        max_iter: int = 2000,
        verbose: bool = False,
    ) -> None:
        self.eps = eps
        self.depth = depth
        self.method = method
        self.seed = seed
        self.backend = backend
        self.strategy = strategy
        self.width = width
        self.groups = groups
        self.max_depth = max_depth
        self.random_state = random_state
        self.max_iter = max_iter
        self.verbose = verbose

    # -- scikit-learn protocol ------------------------------------------------

    def __sklearn_is_fitted__(self) -> bool:
        # n_features_in_ is set while validating, before the construction can fail
        return hasattr(self, "net_")

    # -- fit / predict --------------------------------------------------------

    def fit(self, X: Any, y: Any) -> LNNetClassifier:
        """Build or train the net for ``(X, y)``, certify it on the training points and choose
        the backend of ``predict``; raises ``ValueError`` on input it cannot fit.

        A failed fit leaves the estimator unfitted.
        """
        for name in _FITTED:
            self.__dict__.pop(name, None)
        self._check_backend()
        self._check_strategy()
        seed = self._seed()
        if HAVE_SKLEARN:
            X, y = _validate_data(self, X, y, dtype=None, accept_sparse=False)
            _check_object_array(X)
            check_classification_targets(y)
        points = points_from_arrays(X, y)
        start = time.perf_counter()
        n_iter = 1  # a construction runs once
        if self.strategy == "train":
            result = train(
                points,
                None,
                width=self.width,
                depth=1 if self.depth is None else self.depth,
                groups=self.groups,
                random_state=seed,
                max_iter=self.max_iter,
                verbose=bool(self.verbose),
            )
            net, n_iter = result.net, result.iterations
        else:
            net = build(
                points,
                eps=self.eps,
                depth=self.depth,
                method=self.method,
                seed=seed,
                budget=0 if self.method == "auto" else None,  # fits stay fast: runs for 2 classes
            )
        self._say(f"{self._made(net)} in {time.perf_counter() - start:.2f} s")
        if self.max_depth is not None and net.depth > self.max_depth:
            raise InputError(
                f"the {self.strategy}ed net has depth {net.depth}, beyond max_depth "
                f"{self.max_depth}"
                + (" (strategy='train' fits shallow nets)" if self.strategy == "construct" else "")
            )
        start = time.perf_counter()
        cert = certify(net, points)
        right = cert.right / points.m
        self._say(
            f"certified: {cert.right} of {points.m} training points right, {cert.wrong} wrong, "
            f"{cert.undecided} undecided ({time.perf_counter() - start:.2f} s)"
        )
        if cert.right < points.m:
            warnings.warn(
                f"the fitted net is certainly right on {cert.right} of {points.m} distinct "
                f"training points ({right:.1%}); "
                + (
                    "raise max_iter or width, or use strategy='construct'"
                    if self.strategy == "train"
                    else "a construction should reach every one: please report it"
                ),
                ConvergenceWarning,
                stacklevel=2,
            )
        exact = _exact_classes(net, points, cert)
        faithful = {b: _faithful(net, points, exact, b) for b in FLOAT_CHOICES}
        backend = self.backend
        if backend == "auto":
            backend = next((b for b in FLOAT_CHOICES if faithful[b]), "exact")
        if not any(faithful.values()):
            warnings.warn(
                "neither float64 nor float32 predicts the exact net's class on every training "
                "point (proofs/float_gap.md): "
                + (
                    "predict decides in exact arithmetic, which is slow"
                    if backend == "exact"
                    else f"predict runs {backend} as asked, and may be wrong where the exact "
                    "net is right"
                ),
                FloatFaithfulnessWarning,
                stacklevel=2,
            )
        self.net_ = net
        self.backend_ = backend
        self.certificate_ = cert
        self.certified_fraction_ = right
        self.verdicts_ = np.empty(sum(len(o) for o in points.origins), dtype=object)
        for p, rows in zip(cert.points, points.origins, strict=True):
            self.verdicts_[list(rows)] = p.verdict
        self.float_faithful_ = faithful
        self.depth_ = net.depth
        self.method_ = "train" if self.strategy == "train" else net.meta.get("method", "constant")
        self.n_iter_ = n_iter
        self._say(f"predict runs {backend}")
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
        Z = self._scores(X)
        return Z[:, 1] - Z[:, 0] if Z.shape[1] == 2 else Z

    def predict_proba(self, X: Any) -> np.ndarray:
        """The softmax of the readout scores, shape ``(n, k)``, columns as ``classes_``.

        Not calibrated probabilities: a built net's scores have no probabilistic meaning (its
        readout only separates), and a trained net's are those of its cross-entropy training;
        the argmax of each row is ``predict``'s class.
        """
        Z = self._scores(X)
        Z = Z - Z.max(axis=1, keepdims=True)
        E = np.exp(Z)
        return E / E.sum(axis=1, keepdims=True)

    # -- helpers --------------------------------------------------------------

    def _scores(self, X: Any) -> np.ndarray:
        """The ``(n, k)`` readout scores by ``backend_``, as float64."""
        A = self._predict_input(X)
        if self.backend_ == "exact":
            return np.asarray([_exact_scores(self.net_, row) for row in A], dtype=np.float64)
        return np.asarray(floats.forward(self.net_, A, self.backend_), dtype=np.float64)

    def _made(self, net: LNNet[Any]) -> str:
        if self.strategy == "train":
            return f"trained a width-{self.width} net of depth {net.depth}"
        return f"built a net of depth {net.depth} ({net.meta.get('method', 'constant')})"

    def _say(self, message: str) -> None:
        if self.verbose:
            print(f"{type(self).__name__}: {message}", file=sys.stderr)

    def _check_strategy(self) -> None:
        if self.strategy not in STRATEGIES:
            raise InputError(
                f"unknown strategy {self.strategy!r} (choose from {', '.join(STRATEGIES)})"
            )
        cap = self.max_depth
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 0):
            raise InputError(f"max_depth must be None or an integer >= 0, got {cap!r}")

    def _seed(self) -> int:
        """The seed of the construction or the training: ``random_state`` as scikit-learn reads
        it (an int as it is; None or a ``RandomState``: a draw from it), or the deprecated
        ``seed`` when given."""
        if not (isinstance(self.seed, str) and self.seed == "deprecated"):
            warnings.warn(
                "LNNetClassifier(seed=...) is deprecated: use random_state=...",
                FutureWarning,
                stacklevel=3,
            )
            return self.seed  # type: ignore[return-value]  # build and train check it
        rs = self.random_state
        if isinstance(rs, (int, np.integer)) and not isinstance(rs, bool):
            return int(rs)
        if rs is None:
            return int(np.random.randint(2**31))
        if isinstance(rs, np.random.RandomState):
            return int(rs.randint(2**31))
        raise InputError(f"random_state must be None, an integer or a RandomState, got {rs!r}")

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


def _exact_classes(net: LNNet[Any], points: PointSet, cert: Certificate) -> np.ndarray | None:
    """The index of the class the exact net predicts for each point (the label where the
    certificate proves it right, else decided in balls), or None when some point is undecided
    (on or within rounding of a decision boundary)."""
    if cert.undecided:
        return None
    index = {c: i for i, c in enumerate(net.classes)}
    out = np.empty(points.m, dtype=np.intp)
    for p in cert.points:
        try:
            out[p.index] = index[p.label] if p.certified else decide(net, points.X[p.index])
        except ArithmeticError:
            return None
    return out


def _faithful(net: LNNet[Any], points: PointSet, exact: np.ndarray | None, backend: str) -> bool:
    """Whether ``backend``'s argmax is the exact net's class on every point (``exact``, from
    :func:`_exact_classes`), each a strict maximum of finite scores."""
    if exact is None:
        return False
    Z = np.asarray(floats.forward(net, points, backend), dtype=np.float64)
    if not np.isfinite(Z).all():
        return False
    rows = np.arange(points.m)
    own = Z[rows, exact]
    Z[rows, exact] = -np.inf
    return bool(np.all(own > Z.max(axis=1))) if Z.shape[1] > 1 else True


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
