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
