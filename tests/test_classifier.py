"""LNNetClassifier: a scikit-learn estimator (when scikit-learn is there) that interpolates.

Tests that need scikit-learn call ``pytest.importorskip("sklearn")``; the others
hold with or without it (without it the class has a small stand-in base).
"""

from __future__ import annotations

import functools
import subprocess
import sys
import textwrap
from fractions import Fraction

import numpy as np
import pytest
from flint import fmpq

import lncapacity
from lncapacity import LNNetClassifier
from lncapacity.classifier import HAVE_SKLEARN, NotFittedError
from lncapacity.model import LNNet

try:
    from sklearn.utils.estimator_checks import estimator_checks_generator
except ImportError:  # no scikit-learn, or one older than 1.6
    estimator_checks_generator = None

XOR_X = np.array([[0, 0], [0, 1], [1, 0], [1, 1]], dtype=float)
XOR_Y = np.array([0, 1, 1, 0])
DEFAULTS = {
    "eps": 0,
    "depth": None,
    "method": "auto",
    "seed": "deprecated",
    "backend": "auto",
    "strategy": "construct",
    "width": 16,
    "groups": 1,
    "max_depth": None,
    "random_state": 0,
    "max_iter": 2000,
    "verbose": False,
}


def random_binary(m: int, d: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(size=(m, d)), rng.integers(0, 2, size=m)


# ---------------------------------------------------------------------------
# fit / predict (with or without scikit-learn)


def test_fitted_attributes():
    clf = LNNetClassifier()
    assert not hasattr(clf, "net_")
    assert clf.fit(XOR_X, XOR_Y) is clf
    assert isinstance(clf.net_, LNNet)
    assert (clf.net_.input_dim, clf.net_.classes) == (2, (0, 1))
    assert clf.classes_.tolist() == [0, 1]
    assert clf.n_features_in_ == 2
    assert lncapacity.certify(clf.net_, XOR_X, XOR_Y).all_certified


def test_random_binary_data_is_fitted_exactly():
    X, y = random_binary(40, 3)
    clf = LNNetClassifier().fit(X, y)
    assert clf.score(X, y) == 1.0
    assert clf.predict(X).tolist() == y.tolist()
    cert = lncapacity.certify(clf.net_, X, y)
    assert cert.certified == 40


def test_string_labels_round_trip():
    y = np.array(["dog", "cat", "cat", "dog"])
    clf = LNNetClassifier().fit(XOR_X, y)
    assert clf.classes_.tolist() == ["cat", "dog"]
    pred = clf.predict(XOR_X)
    assert pred.dtype.kind == "U"
    assert pred.tolist() == ["dog", "cat", "cat", "dog"]
    assert clf.score(XOR_X, y) == 1.0


def test_float_labels_keep_their_dtype():
    y = np.array([2.0, -1.0, -1.0, 2.0])
    pred = LNNetClassifier().fit(XOR_X, y).predict(XOR_X)
    assert pred.dtype == np.float64
    assert pred.tolist() == [2.0, -1.0, -1.0, 2.0]


@pytest.mark.parametrize("backend", ["exact", "float32", "torch-float64", "torch-float32"])
def test_backends_agree_with_float64_on_xor(backend):
    if backend.startswith("torch"):
        pytest.importorskip("torch")
    reference = LNNetClassifier().fit(XOR_X, XOR_Y).predict(XOR_X)
    assert reference.tolist() == XOR_Y.tolist()
    pred = LNNetClassifier(backend=backend).fit(XOR_X, XOR_Y).predict(XOR_X)
    assert pred.tolist() == reference.tolist()
    assert pred.dtype == reference.dtype


def test_exact_backend_on_points_off_the_training_set():
    X, y = random_binary(20, 2, seed=3)
    fast = LNNetClassifier().fit(X, y)
    exact = LNNetClassifier(backend="exact").fit(X, y)
    grid = np.random.default_rng(4).uniform(-2, 2, size=(30, 2))
    assert exact.predict(grid).tolist() == fast.predict(grid).tolist()


def test_torch_backend_on_points_off_the_training_set():
    pytest.importorskip("torch")
    X, y = random_binary(20, 2, seed=3)
    numpy64 = LNNetClassifier().fit(X, y)
    torch64 = LNNetClassifier(backend="torch-float64").fit(X, y)
    grid = np.random.default_rng(4).uniform(-2, 2, size=(30, 2))
    assert torch64.predict(grid).tolist() == numpy64.predict(grid).tolist()
    assert torch64.score(X, y) == 1.0


def test_torch_backend_without_torch_fails_at_fit(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # any import of it raises ImportError
    clf = LNNetClassifier(backend="torch-float32")  # stored as given
    assert clf.get_params()["backend"] == "torch-float32"
    with pytest.raises(ValueError, match=r"backend 'torch-float32' needs PyTorch"):
        clf.fit(XOR_X, XOR_Y)
    assert not hasattr(clf, "net_")
    assert LNNetClassifier().fit(XOR_X, XOR_Y).predict(XOR_X).tolist() == XOR_Y.tolist()


def test_exact_rationals_stay_exact():
    # 1/3 and 2/3 are no floats: the net is built on, and certified for, the exact values
    X = [[Fraction(0)], [Fraction(1, 3)], [Fraction(2, 3)], [Fraction(1)]]
    y = [0, 1, 0, 1]
    clf = LNNetClassifier().fit(X, y)
    assert lncapacity.certify(clf.net_, X, y).all_certified
    assert clf.predict(X).tolist() == y


def test_single_class():
    clf = LNNetClassifier().fit(XOR_X, ["only"] * 4)
    assert clf.net_.depth == 0
    assert clf.predict([[5.0, -3.0]]).tolist() == ["only"]


def test_wrong_feature_count_at_predict():
    clf = LNNetClassifier().fit(XOR_X, XOR_Y)
    with pytest.raises(ValueError, match="X has 3 features, but LNNetClassifier is expecting 2"):
        clf.predict(np.zeros((2, 3)))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_input_is_rejected(bad):
    X = XOR_X.copy()
    X[2, 1] = bad
    with pytest.raises(ValueError, match=r"NaN|inf"):
        LNNetClassifier().fit(X, XOR_Y)
    clf = LNNetClassifier().fit(XOR_X, XOR_Y)
    with pytest.raises(ValueError, match=r"NaN|inf"):
        clf.predict(X)


def test_predict_before_fit():
    with pytest.raises(NotFittedError, match="not fitted"):
        LNNetClassifier().predict(XOR_X)


def test_identical_points_with_different_labels():
    X = np.array([[0.0, 1.0], [2.0, 3.0], [0.0, 1.0]])
    with pytest.raises(ValueError, match="rows 0 and 2: the same point with different labels"):
        LNNetClassifier().fit(X, [0, 1, 1])


def test_failed_fit_leaves_the_estimator_unfitted():
    clf = LNNetClassifier().fit(XOR_X, XOR_Y)
    with pytest.raises(ValueError):
        clf.fit(np.array([[0.0], [0.0]]), [0, 1])
    with pytest.raises(NotFittedError):
        clf.predict(XOR_X)


def test_three_classes_follow_sklearns_multiclass_conventions():
    X = np.array([[0.0], [1], [2], [3], [4], [5]])
    y = np.array(["c", "a", "b", "a", "c", "b"])
    clf = LNNetClassifier().fit(X, y)
    assert clf.classes_.tolist() == ["a", "b", "c"]
    assert clf.predict(X).tolist() == y.tolist()
    Z = clf.decision_function(X)
    assert Z.shape == (6, 3)
    assert clf.classes_[Z.argmax(axis=1)].tolist() == y.tolist()
    assert lncapacity.certify(clf.net_, X, y).all_certified


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"backend": "float16"}, "unknown backend 'float16'"),
        ({"eps": -1}, "eps must be >= 0"),
        ({"depth": 0}, "needs 1 LayerNorm layer"),
        ({"method": "magic"}, "unknown method 'magic'"),
    ],
)
def test_parameters_are_checked_by_fit(params, message):
    clf = LNNetClassifier(**params)  # stored as given
    assert clf.get_params() == {**DEFAULTS, **params}
    with pytest.raises(ValueError, match=message):
        clf.fit(XOR_X, XOR_Y)


def test_depth_and_eps_reach_the_net():
    clf = LNNetClassifier(eps="1e-5", depth=4).fit(XOR_X, XOR_Y)
    assert clf.net_.depth == 4
    assert clf.net_.eps == fmpq(1, 100000)
    assert clf.predict(XOR_X).tolist() == XOR_Y.tolist()


def test_without_sklearn_the_stand_in_works():
    """A fresh interpreter in which ``import sklearn`` fails."""
    code = textwrap.dedent(
        """
        import sys
        sys.modules["sklearn"] = None  # any import of it raises ImportError
        import numpy as np
        from lncapacity.classifier import HAVE_SKLEARN, LNNetClassifier, NotFittedError
        assert not HAVE_SKLEARN and issubclass(NotFittedError, ValueError)
        clf = LNNetClassifier(depth=2)
        assert clf.get_params()["random_state"] == 0 and clf.get_params()["depth"] == 2
        assert clf.set_params(random_state=5) is clf and clf.random_state == 5
        try:
            clf.set_params(colour=1)
        except ValueError:
            pass
        else:
            raise AssertionError("set_params accepted an unknown parameter")
        try:
            clf.predict([[0, 0]])
        except NotFittedError:
            pass
        else:
            raise AssertionError("predict before fit")
        X, y = [[0, 0], [0, 1], [1, 0], [1, 1]], ["a", "b", "b", "a"]
        assert clf.fit(X, y).predict(X).tolist() == y and clf.score(X, y) == 1.0
        assert clf.net_.depth == 2
        print(repr(clf))
        """
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    expected = (
        "LNNetClassifier(eps=0, depth=2, method='auto', seed='deprecated', backend='auto', "
        "strategy='construct', width=16, groups=1, max_depth=None, random_state=5, "
        "max_iter=2000, verbose=False)"
    )
    assert p.stdout.strip() == expected


# ---------------------------------------------------------------------------
# scikit-learn conventions


def test_get_params_and_set_params():
    pytest.importorskip("sklearn")
    clf = LNNetClassifier()
    assert clf.get_params() == DEFAULTS
    assert clf.set_params(depth=3, eps="1/8") is clf
    assert clf.get_params() == {**DEFAULTS, "depth": 3, "eps": "1/8"}
    with pytest.raises(ValueError, match="Invalid parameter 'colour'"):
        clf.set_params(colour="red")


def test_clone_preserves_params_and_drops_the_fit():
    base = pytest.importorskip("sklearn.base")
    clf = LNNetClassifier(eps="1/1000", depth=4, random_state=3, backend="float32")
    clf.fit(XOR_X, XOR_Y)
    copy = base.clone(clf)
    assert copy is not clf
    assert copy.get_params() == clf.get_params()
    assert copy.get_params() == {
        **DEFAULTS, "eps": "1/1000", "depth": 4, "random_state": 3, "backend": "float32"
    }  # fmt: skip
    assert not hasattr(copy, "net_") and not hasattr(copy, "classes_")


def test_is_a_multiclass_classifier_by_its_tags():
    sklearn = pytest.importorskip("sklearn")
    from sklearn.base import is_classifier

    assert isinstance(LNNetClassifier(), sklearn.base.BaseEstimator)
    assert is_classifier(LNNetClassifier())
    if hasattr(sklearn.utils, "get_tags"):  # scikit-learn >= 1.6
        tags = sklearn.utils.get_tags(LNNetClassifier())
        assert tags.estimator_type == "classifier"
        assert tags.classifier_tags.multi_class is True


def test_not_fitted_error_is_sklearns():
    exceptions = pytest.importorskip("sklearn.exceptions")
    assert HAVE_SKLEARN
    with pytest.raises(exceptions.NotFittedError):
        LNNetClassifier().predict(XOR_X)


def test_iris_cross_validated():
    datasets = pytest.importorskip("sklearn.datasets")
    from sklearn.model_selection import cross_val_score

    X, y = datasets.load_iris(return_X_y=True)
    clf = LNNetClassifier().fit(X, y)
    assert (clf.predict(X) == y).all()  # float64 is right on every training point
    scores = cross_val_score(LNNetClassifier(), X, y, cv=3)
    assert scores.shape == (3,) and (scores > 0.3).all()


def test_continuous_target_is_rejected():
    pytest.importorskip("sklearn")
    with pytest.raises(ValueError, match="Unknown label type: continuous"):
        LNNetClassifier().fit(XOR_X, [0.5, 1.5, 2.5, 3.5])


def test_non_numbers_in_an_object_array():
    pytest.importorskip("sklearn")
    X = XOR_X.astype(object)
    X[0, 0] = {"a": 1}
    with pytest.raises(TypeError, match="must be a string or a real number"):
        LNNetClassifier().fit(X, XOR_Y)


def test_pipeline_with_scaler():
    pytest.importorskip("sklearn")
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = random_binary(30, 2, seed=1)
    X = X * [100.0, 0.01] + [5.0, -3.0]
    pipe = Pipeline([("scale", StandardScaler()), ("ln", LNNetClassifier())])
    assert pipe.fit(X, y) is pipe
    assert pipe.predict(X).tolist() == y.tolist()
    assert pipe.score(X, y) == 1.0
    scaled = pipe.named_steps["scale"].transform(X)
    assert lncapacity.certify(pipe.named_steps["ln"].net_, scaled, y).all_certified


def test_cross_val_score():
    pytest.importorskip("sklearn")
    from sklearn.datasets import make_blobs
    from sklearn.model_selection import StratifiedKFold, cross_val_score

    X, y = make_blobs(n_samples=30, centers=2, n_features=2, random_state=0)
    scores = cross_val_score(LNNetClassifier(), X, y, cv=3)
    assert scores.shape == (3,)
    assert np.all((scores >= 0) & (scores <= 1))
    # the same folds by hand
    expected = []
    for train, test in StratifiedKFold(3).split(X, y):
        clf = LNNetClassifier().fit(X[train], y[train])
        expected.append(np.mean(clf.predict(X[test]) == y[test]))
    assert scores.tolist() == expected


def test_grid_search_sets_params():
    pytest.importorskip("sklearn")
    from sklearn.model_selection import GridSearchCV

    X, y = random_binary(24, 2, seed=2)
    search = GridSearchCV(LNNetClassifier(), {"random_state": [0, 1]}, cv=2).fit(X, y)
    assert search.best_params_["random_state"] in (0, 1)
    assert search.best_estimator_.score(X, y) == 1.0


# ---------------------------------------------------------------------------
# scikit-learn's own estimator checks

# check_positive_only_tag_during_fit (a binary labelling of iris, many near ties) used
# to exhaust the construction's precision; it passes since the PMA handles ties
EXPECTED_FAILED_CHECKS: dict[str, str] = {}


def _check_id(check: object) -> str:
    check = getattr(check, "__wrapped__", check)  # the skipping wrapper
    keywords: dict[str, object] = {}
    while isinstance(check, functools.partial):
        keywords = {**check.keywords, **keywords}
        check = check.func
    args = ",".join(f"{k}={v}" for k, v in sorted(keywords.items()))
    return getattr(check, "__name__", "check") + (f"({args})" if args else "")


NEEDS_CHECKS = pytest.mark.skipif(
    estimator_checks_generator is None, reason="needs scikit-learn >= 1.6"
)
ESTIMATOR_CHECKS = (
    []
    if estimator_checks_generator is None
    else list(
        estimator_checks_generator(
            # the runs method: the API is the same for every method, and runs is the fastest
            LNNetClassifier(method="runs"),
            expected_failed_checks=EXPECTED_FAILED_CHECKS,
            mark="skip",
        )
    )
)


def _param(estimator: object, check: object) -> object:
    """A check as a test; the training check again on read-only memory maps is slow (the
    same fits as the plain training check, which stays in the default run)."""
    memmap = "readonly_memmap=True" in _check_id(check)
    return pytest.param(
        estimator, check, id=_check_id(check), marks=[pytest.mark.slow] if memmap else []
    )


@NEEDS_CHECKS
@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize(
    ("estimator", "check"),
    [_param(e, c) for e, c in ESTIMATOR_CHECKS] or [pytest.param(None, None, id="none")],
)
def test_sklearn_estimator_check(estimator, check):
    check(estimator)


@NEEDS_CHECKS
def test_expected_failures_are_real_check_names():
    names = {_check_id(check).split("(")[0] for _, check in ESTIMATOR_CHECKS}
    assert "check_classifiers_train" in names
    assert set(EXPECTED_FAILED_CHECKS) <= names


# ---------------------------------------------------------------------------
# strategy="train", the certificate attributes, scikit-learn conventions (issue 35)


def clusters(k: int = 3, per: int = 5, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``k`` tight clusters in the plane around far apart centres: Adam separates them."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(k, 2)) * 10
    X = np.concatenate([c + rng.normal(scale=0.3, size=(per, 2)) for c in centres])
    return X, np.repeat(np.arange(k), per)


def test_train_strategy_is_certified_on_the_training_points():
    pytest.importorskip("torch")
    X, y = clusters()
    X = np.concatenate([X, X[:2]])  # two rows repeated: merged, their verdicts shared
    y = np.concatenate([y, y[:2]])
    clf = LNNetClassifier(strategy="train", width=4, random_state=1).fit(X, y)
    assert clf.method_ == "train" and clf.depth_ == 1 and clf.n_iter_ >= 1
    assert clf.net_.widths == (4,)
    cert = clf.certificate_
    assert cert.all_certified and len(cert.points) == 15 and cert.min_margin > 0
    assert clf.certified_fraction_ == 1.0
    assert clf.verdicts_.tolist() == ["right"] * 17
    assert clf.float_faithful_ == {"float64": True, "float32": True}
    assert clf.backend_ == "float64"
    assert clf.predict(X).tolist() == y.tolist()
    P = clf.predict_proba(X)
    assert P.shape == (17, 3) and np.allclose(P.sum(axis=1), 1)
    assert clf.classes_[P.argmax(axis=1)].tolist() == y.tolist()
    # the same certificate as certify's own
    again = lncapacity.certify(clf.net_, X, y)
    assert [p.margin for p in again.points] == [p.margin for p in cert.points]


def test_train_strategy_that_misses_points_says_so():
    pytest.importorskip("torch")
    from sklearn.exceptions import ConvergenceWarning

    X, y = random_binary(30, 2, seed=5)  # random labels: a width-2 net cannot fit them
    with pytest.warns(ConvergenceWarning, match="certainly right on"):
        clf = LNNetClassifier(strategy="train", width=2, max_iter=20).fit(X, y)
    cert = clf.certificate_
    assert 0 < clf.certified_fraction_ < 1
    assert clf.certified_fraction_ == cert.right / 30
    assert set(clf.verdicts_) <= {"right", "wrong", "undecided"}
    assert (clf.verdicts_ == "wrong").sum() == cert.wrong > 0


def test_construct_strategy_certifies_too():
    X, y = random_binary(20, 2, seed=3)
    clf = LNNetClassifier().fit(X, y)
    assert clf.certified_fraction_ == 1.0 and clf.certificate_.all_certified
    assert clf.method_ == clf.net_.meta["method"] and clf.depth_ == clf.net_.depth
    assert clf.n_iter_ == 1


def test_not_float_faithful_warns_and_says_where_predict_runs():
    from lncapacity.classifier import FloatFaithfulnessWarning

    X = np.arange(24)[:, None] * 2.0**-50 + 1.0  # 24 points within float64's resolution of 1
    y = np.array([0, 1] * 12)
    with pytest.warns(FloatFaithfulnessWarning, match="predict decides in exact arithmetic"):
        clf = LNNetClassifier(method="pma").fit(X, y)
    assert clf.float_faithful_ == {"float64": False, "float32": False}
    assert clf.backend_ == "exact" and clf.certified_fraction_ == 1.0
    assert clf.predict(X).tolist() == y.tolist()


def test_max_depth_caps_the_net():
    X, y = random_binary(40, 3)
    depth = LNNetClassifier().fit(X, y).depth_
    with pytest.raises(ValueError, match=f"depth {depth}, beyond max_depth {depth - 1}"):
        LNNetClassifier(max_depth=depth - 1).fit(X, y)
    assert LNNetClassifier(max_depth=depth).fit(X, y).depth_ == depth


def test_seed_still_works_with_a_future_warning():
    X, y = random_binary(20, 2, seed=3)
    with pytest.warns(FutureWarning, match="use random_state"):
        old = LNNetClassifier(seed=2).fit(X, y)
    new = LNNetClassifier(random_state=2).fit(X, y)
    assert old.net_.layers == new.net_.layers and old.net_.readout == new.net_.readout


def test_unknown_strategy_is_checked_by_fit():
    clf = LNNetClassifier(strategy="guess")
    with pytest.raises(ValueError, match="unknown strategy 'guess'"):
        clf.fit(XOR_X, XOR_Y)
