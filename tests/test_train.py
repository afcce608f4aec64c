"""lncapacity.train: an LN-Net trained with Adam, read exactly, certified.

The training sets are tiny and well separated, so Adam reaches every margin of
``STOP_MARGIN`` in a few dozen full-batch steps; what is asserted is the exact certificate of
the imported net (a proof about the trained module), not a float accuracy alone.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from lncapacity import certify  # noqa: E402
from lncapacity.errors import InputError  # noqa: E402
from lncapacity.interop import from_torch  # noqa: E402
from lncapacity.train import STOP_MARGIN, train  # noqa: E402


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """PyTorch on one thread here (see tests/test_interop.py): a worker forked later hangs on
    a pool PyTorch started."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def clusters(k: int = 3, per: int = 5, d: int = 2, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``k`` tight clusters around far apart centres, ``per`` points each, float64."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(k, d)) * 10
    X = np.concatenate([c + rng.normal(scale=0.3, size=(per, d)) for c in centres])
    return X, np.repeat(np.arange(k), per)


def test_trained_net_is_certified_on_its_training_points() -> None:
    X, y = clusters()
    r = train(X, y, width=4, depth=1)
    assert r.converged and r.train_accuracy == 1.0
    assert r.iterations < 2000
    cert = certify(r.net, X, y)
    assert cert.all_certified and cert.min_margin > 0
    # the float32 margins reached STOP_MARGIN; the exact ones are those up to rounding
    assert cert.min_margin > STOP_MARGIN / 2
    assert r.net.classes == (0, 1, 2) and r.net.depth == 1 and r.net.widths == (4,)
    assert r.net.meta["train"]["random_state"] == 0


def test_the_net_is_the_module_exactly() -> None:
    """``net`` is from_torch of ``module``: reading the module again gives the same net."""
    X, y = clusters(k=2, per=4)
    r = train(X, y, width=3, depth=2, max_iter=300)
    again = from_torch(r.module, classes=r.classes)
    assert again.layers == r.net.layers and again.readout == r.net.readout
    assert again.norms == r.net.norms


def test_training_is_deterministic_given_random_state() -> None:
    X, y = clusters(k=2, per=4)
    a = train(X, y, width=4, depth=1, random_state=3, max_iter=50)
    b = train(X, y, width=4, depth=1, random_state=3, max_iter=50)
    c = train(X, y, width=4, depth=1, random_state=4, max_iter=50)
    assert a.net.layers == b.net.layers and a.net.readout == b.net.readout
    assert a.iterations == b.iterations
    assert a.net.layers != c.net.layers
    # the caller's random state is untouched
    torch.manual_seed(11)
    first = torch.rand(3)
    torch.manual_seed(11)
    train(X, y, width=4, depth=1, max_iter=2)
    assert torch.equal(torch.rand(3), first)


def test_group_norm_layers_give_an_ln_g_net() -> None:
    X, y = clusters(k=3, per=4, d=3)
    r = train(X, y, width=6, depth=1, groups=3)
    assert isinstance(r.module[1], torch.nn.GroupNorm)
    assert r.net.groups == (3,)
    assert certify(r.net, X, y).all_certified


def test_labels_are_the_data_labels_sorted() -> None:
    X, y = clusters(k=2, per=4)
    names = np.where(y == 0, "zebra", "ant")
    r = train(X, names, width=3, depth=1)
    assert r.net.classes == ("ant", "zebra")
    assert certify(r.net, X, names).all_certified


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"width": 1, "depth": 1}, "width: expected an integer from 2"),
        ({"width": 4, "depth": 0}, "depth: expected an integer from 1"),
        ({"width": 4, "depth": 1, "groups": 3}, "groups: 3 groups of width 4"),
        ({"width": 4, "depth": 1, "groups": 4}, "groups: 4 groups of width 4"),
        ({"width": 4, "depth": 1, "lr": 0.0}, "lr: expected a finite number > 0"),
        ({"width": 4, "depth": 1, "random_state": -1}, "random_state: expected an integer"),
        ({"width": 4, "depth": 1, "max_iter": 1.5}, "max_iter: expected an integer"),
    ],
)
def test_bad_parameters_are_input_errors(kwargs: dict, message: str) -> None:
    X, y = clusters(k=2, per=2)
    with pytest.raises(InputError, match=message):
        train(X, y, **kwargs)


def test_without_torch_the_error_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch raises ImportError
    X, y = clusters(k=2, per=2)
    with pytest.raises(InputError, match=r"pip install 'lncapacity\[torch\]'"):
        train(X, y, width=4, depth=1)


def test_progress_reaches_the_end() -> None:
    X, y = clusters(k=2, per=3)
    seen: list[tuple[int, int]] = []
    train(
        X, y, width=4, depth=1, max_iter=40, progress=lambda done, total: seen.append((done, total))
    )
    assert seen[0] == (0, 40) and seen[-1] == (40, 40)


@pytest.fixture
def no_tensors(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any import of PyTorch by train() fails the test: what is refused is refused before a
    tensor is made."""
    from lncapacity import train as training

    def refused() -> None:
        raise AssertionError("PyTorch was imported: a tensor was about to be made")

    monkeypatch.setattr(training, "import_torch", refused)


def many_classes(k: int) -> tuple[np.ndarray, np.ndarray]:
    return np.arange(float(k))[:, None], np.arange(k)


@pytest.mark.parametrize(
    ("data", "kwargs", "message"),
    [
        # 5.5 GB and 37 s before an allocation failure
        ("xor", {"width": 1000, "depth": 10_000}, "10,029,004,002 weights, beyond the limit"),
        ("xor", {"width": 4, "depth": 1, "lr": 1e308}, "lr: expected a finite number > 0 and"),
        ("xor", {"width": 4, "depth": 1, "lr": 1e30}, "at most 10"),  # blamed "NaN weights"
        ("xor", {"width": 4, "depth": 1, "lr": float("nan")}, "lr: expected"),
        ("xor", {"width": 4, "depth": 1, "max_iter": 10**12}, "max_iter: expected an integer"),
        ("classes", {"width": 4, "depth": 1}, "2,000 classes, beyond the limit of 1,000"),
        ("far", {"width": 4, "depth": 1}, "beyond float32's range"),  # a NumPy warning, NaN
        ("many", {"width": 1000, "depth": 2}, r"GiB \(float32 weights, Adam's state"),
    ],
)
def test_every_limit_is_checked_before_any_tensor(data, kwargs, message, no_tensors):
    X, y = {
        "xor": (np.array([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]]), np.array([0, 1, 1, 0])),
        "classes": many_classes(2000),
        "far": (np.array([[1e300], [-1e300], [2e300]]), np.array([0, 1, 0])),
        "many": (np.arange(200_000.0)[:, None], np.arange(200_000) % 2),
    }[data]
    with pytest.raises(InputError, match=message):
        train(X, y, **kwargs)


def test_the_classifier_and_the_construction_check_the_same_limits(no_tensors, monkeypatch):
    """``LNNetClassifier`` (either strategy) refuses before any work: 100,000 classes made
    the construction allocate 74.5 GiB after 184 s, training a RuntimeError."""
    import warnings

    from lncapacity.classifier import LNNetClassifier

    building = sys.modules[
        "lncapacity.construct.build"
    ]  # the module (the package names the function)

    def started(*args, **kwargs):
        raise AssertionError("the construction started")

    monkeypatch.setattr(building, "project", started)
    X, y = many_classes(1001)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scikit-learn: more classes than half the samples
        for strategy in ("train", "construct"):
            with pytest.raises(ValueError, match="1,001 classes, beyond the limit of 1,000"):
                LNNetClassifier(strategy=strategy).fit(X, y)


def test_numpy_integers_are_taken_as_integers() -> None:
    """``groups=np.int64(4)`` was accepted, then refused after training (a GroupNorm of an
    np.int64 number of groups)."""
    X, y = clusters(k=2, per=3)
    r = train(X, y, width=np.int64(8), depth=np.int64(1), groups=np.int64(4), max_iter=5)
    assert r.net.groups == (4,) and type(r.net.meta["train"]["groups"]) is int


def test_the_command_line_takes_train_s_limits(tmp_path, capsys) -> None:
    from lncapacity.cli import main

    data = tmp_path / "xor.csv"
    data.write_text("x1,x2,label\n0,0,0\n0,1,1\n1,0,1\n1,1,0\n")
    runs = [
        (["train", str(data), "--lr", "1e308"], "--lr: expected"),  # a RuntimeError in PyTorch
        (["train", str(data), "--max-iter", "-1"], "--max-iter: expected"),
        (["train", str(data), "--seed", "-1"], "--seed: expected"),
        (["capacity", "--m", "8", "--train", "--train-iter", str(10**12)], "--train-iter"),
    ]
    for argv, message in runs:
        assert main([*argv, "--quiet"]) == 2, argv  # capacity: every row "not trained", exit 0
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("lncapacity: error: ") and message in err[0]
