"""Every core: the work spread over processes gives what one process gives, bit for bit.

The float backends' blocks (and their passes run beside the certificate), the certificate's
chunks of points and the shattering chunks are the same tasks whatever the number of
processes (their sizes follow from the work, never from the number of workers), so scores,
certificates and files are identical.  Sizes are patched small so that a few points make
many tasks.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from lncapacity import floats
from lncapacity.data import points_from_arrays
from lncapacity.parallel import beside, imap
from lncapacity.theory.capacity import random_net


def _points(m: int, d: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = np.round(rng.standard_normal((m, d)) * 64) / 64
    return points_from_arrays(X, rng.integers(0, 2, m))


@pytest.mark.parametrize("backend", ["float64", "float32"])
def test_the_float_blocks_give_the_same_scores_on_every_number_of_processes(monkeypatch, backend):
    net = random_net(3, 8, 3, seed=1)
    points = _points(300, 3)
    monkeypatch.setattr(floats, "FLOAT_CHUNK", 8 * 16)  # blocks of 16 points: 19 blocks
    one = floats.forward(net, points, backend, workers=1)
    two = floats.forward(net, points, backend, workers=2)
    assert one.dtype == two.dtype == np.dtype(backend)
    assert one.tobytes() == two.tobytes()
    assert floats.check(net, points, backend, workers=2) == floats.check(net, points, backend)


def _add(shared: int, task: int) -> int:
    return shared + task


def test_imap_gives_each_worker_the_shared_value_once():
    assert list(imap(_add, range(40), 2, shared=1000)) == [1000 + k for k in range(40)]
    assert list(imap(_add, range(5), 1, shared=7)) == [7 + k for k in range(5)]


def test_the_float_passes_beside_the_certificate_are_the_ones_run_here():
    net = random_net(3, 8, 3, seed=2)
    points = _points(200, 3)
    names = ("float64", "float32")
    here = floats.forwards(net, points, names)
    with beside(floats.forwards, net, points, names, 1) as there:
        assert list(there()) == list(names)
        for name, scores in there().items():
            assert scores.dtype == here[name].dtype and scores.tobytes() == here[name].tobytes()


def _pid_or_fail(fail: bool) -> int:
    if fail:
        raise ValueError("from the worker")
    return os.getpid()


def test_beside_runs_in_another_process_and_raises_what_it_raises():
    with beside(_pid_or_fail, False) as pid:
        assert pid() != os.getpid()
    with beside(_pid_or_fail, False, alone=False) as pid:
        assert pid() == os.getpid()
    with pytest.raises(ValueError, match="from the worker"), beside(_pid_or_fail, True) as pid:
        pid()
