"""Valid point sets at extreme scales: every one certifies (with a float warning where float64
cannot run the net), through the command line and the Python API, and never crashes.

Exact rationals make every scale representable: the construction normalises float-unfriendly
coordinates exactly (``construct.build._normalise``) before its float search.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from flint import fmpq

import lncapacity

ENV_CMD = [sys.executable, "-m", "lncapacity"]

# name -> CSV text or an array for .npy
SETS: dict[str, str | np.ndarray] = {
    "tiny-1e-160": "x,label\n0,0\n1e-160,1\n2e-160,0\n",
    "huge-1e200": "x,label\n0,0\n1e200,1\n2e200,0\n",
    "beyond-float-1e309": "x,label\n0,0\n1e309,1\n2e309,0\n",
    "near-1e300": "x,y,label\n1e300,1,0\n2e300,1,1\n3e300,1,0\n0,0,1\n",
    "near-1e-300": "x,y,label\n1e-300,1,0\n2e-300,1,1\n3e-300,1,0\n0,0,1\n",
    "below-float-1e-330": "x,label\n0,0\n1e-330,1\n2e-330,0\n",
    "span-600-orders": "x,y,label\n1e-300,1e300,0\n1e300,1e-300,1\n0,0,0\n",
    "sixty-digit-rationals": (
        "x,label\n0,0\n123456789012345678901234567890123456789012345678901234567890/7,1\n1,0\n"
    ),
    "subnormal-npy-two": np.array([[0.0, 0], [5e-324, 1]]),
    "subnormal-npy-three": np.array([[0.0, 0], [5e-324, 1], [1e-323, 0]]),
}


def _write(folder: Path, name: str, data: str | np.ndarray) -> Path:
    if isinstance(data, str):
        path = folder / f"{name}.csv"
        path.write_text(data, encoding="utf-8")
    else:
        path = folder / f"{name}.npy"
        np.save(path, data)
    return path


@pytest.mark.parametrize("name", list(SETS))
def test_cli_certifies_every_scale(name, tmp_path):
    data = _write(tmp_path, name, SETS[name])
    out = tmp_path / "net.json"
    p = subprocess.run(
        [*ENV_CMD, "certify", data, "--out", out, "--quiet", "--float", "float64,float32"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    assert p.stderr == ""  # no traceback, no RuntimeWarning: the summary says it all
    m = len(lncapacity.load_points(data).X)
    assert f"certified: {m}/{m} points" in p.stdout
    # the written net is re-certified from scratch by verify
    v = subprocess.run(
        [*ENV_CMD, "verify", out, data, "--quiet", "--float", "float64"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert v.returncode == 0 and v.stderr == "", v.stderr


@pytest.mark.parametrize("name", list(SETS))
def test_python_api_certifies_every_scale(name, tmp_path):
    points = lncapacity.load_points(_write(tmp_path, name, SETS[name]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a leaked RuntimeWarning fails the test
        net = lncapacity.build(points)
        cert = lncapacity.certify(net, points)
    assert cert.all_certified and cert.min_margin > 0


@pytest.mark.parametrize(
    "X",
    [
        pytest.param([[0], [1e-300], [2e-300]], id="floats-1e-300"),
        pytest.param([[0], [1e300], [2e300]], id="floats-1e300"),
        pytest.param([[0], [10**400], [2 * 10**400]], id="ints-10^400"),
        pytest.param([[0], [fmpq(1, 10**400)], [fmpq(2, 10**400)]], id="fmpq-10^-400"),
    ],
)
def test_python_api_raises_nothing_raw(X):
    y = [0, 1, 0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nor leaks a RuntimeWarning
        net = lncapacity.build(X, y)
    assert lncapacity.certify(net, X, y).all_certified
    assert list(net.predict(X, backend="exact")) == y


@pytest.mark.parametrize(
    "X",
    [
        [[1e300], [-1e300]],
        [[10**400], [-(10**400)]],
        [[fmpq(1, 10**400)], [fmpq(-1, 10**400)]],
    ],
    ids=["floats-1e300", "ints-10^400", "fmpq-10^-400"],
)
def test_certify_and_float_checks_outside_construct_never_raise(X):
    """Reading, certifying and the float checks at extreme scales (a hand-made depth-0 net)."""
    from lncapacity import floats
    from lncapacity.model import Affine, LNNet

    one = fmpq(1)
    net = LNNet(1, 3, fmpq(0), (), Affine(((one,), (-one,)), (fmpq(0), fmpq(0))), (0, 1))
    points = lncapacity.points_from_arrays(X, [0, 1])
    cert = lncapacity.certify(net, points)
    # 2e-400 is certified; as a float rounded down, the margin may be 0.0
    assert cert.all_certified and cert.min_margin >= 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for backend in floats.available_backends():
            check = floats.check(net, points, backend)  # overflow: wrong points, never raises
            assert check.total == 2 and 0 <= check.agree <= 2
