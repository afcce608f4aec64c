"""``lncapacity train`` and the rough edges of issue 35 on the command line.

In-process (``lncapacity.cli.main``): these runs check exit codes, files and summaries, not the
start-up, which tests/test_cli.py covers through real subprocesses.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from lncapacity import certify, fileformat, load_points
from lncapacity.cli import main

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """PyTorch on one thread here (see tests/test_interop.py)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def write_csv(path: Path, X: np.ndarray, y: np.ndarray) -> Path:
    lines = ["x1,x2,label"] + [
        f"{float(a)!r},{float(b)!r},{c}" for (a, b), c in zip(X, y, strict=True)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def clusters(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(3, 2)) * 10
    X = np.concatenate([c + rng.normal(scale=0.3, size=(5, 2)) for c in centres])
    return X, np.repeat(np.arange(3), 5)


def test_train_writes_a_certified_net(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    data = write_csv(tmp_path / "c.csv", *clusters())
    out = tmp_path / "net.json"
    code = main(["train", str(data), "--width", "4", "--out", str(out), "--quiet", "--json"])
    s = json.loads(capsys.readouterr().out)
    assert code == 0 and out.exists()
    assert s["all_certified"] and s["certified"] == 15 and s["trained"]
    assert s["training"]["converged"] and s["training"]["train_accuracy_float32"] == 1.0
    assert s["width"] == 4 and s["depth"] == 1 and s["net"] == str(out)
    for backend in ("float64", "float32"):
        assert 0 <= s["float"][backend]["max_abs_error"] < 1e-3
    net = fileformat.load(out)
    assert net.meta["train"]["width"] == 4
    assert certify(net, load_points(data)).all_certified
    assert main(["verify", str(out), str(data), "--quiet"]) == 0


def test_a_net_that_misses_points_is_not_written(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    rng = np.random.default_rng(1)
    data = write_csv(tmp_path / "r.csv", rng.normal(size=(30, 2)), rng.integers(0, 2, 30))
    out = tmp_path / "net.json"
    code = main(["train", str(data), "--width", "2", "--max-iter", "5", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and not out.exists()
    assert "certificate fails at" in err and "nothing written" in err


def test_bad_groups_exit_2_before_training(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    data = write_csv(tmp_path / "c.csv", *clusters())
    out = tmp_path / "net.json"
    assert main(["train", str(data), "--width", "4", "--groups", "3", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("lncapacity: error: --groups: 3 groups of width 4") and not out.exists()
    assert list(tmp_path.iterdir()) == [data]


def test_require_float_failing_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """certify --require-float exits 2 when the backend misclassifies a point, and leaves no
    net and no certificate behind (the exact certificate alone would have passed)."""
    X = np.stack([np.arange(24) * 2.0**-50 + 1.0, np.zeros(24)], axis=1)
    data = write_csv(tmp_path / "close.csv", X, np.array([0, 1] * 12))
    out, cert = tmp_path / "net.json", tmp_path / "cert.json"
    args = ["certify", str(data), "--method", "pma", "--quiet", "--float", "float64,float32"]
    code = main(
        [*args, "--require-float", "float32", "--out", str(out), "--certificate", str(cert)]
    )
    captured = capsys.readouterr()
    assert code == 2
    assert "certified: 24/24 points" in captured.out  # the certificate holds; float32 fails
    assert "--require-float: float32 misclassifies" in captured.err
    assert "nothing written" in captured.err
    assert not out.exists() and not cert.exists()


def test_progress_names_the_phase(monkeypatch: pytest.MonkeyPatch) -> None:
    """The construction names its phases (build's ``phase``); the bar's lines carry the name,
    and a phase change off a terminal is a line of its own once the run has lasted FIRST."""
    import io
    import sys

    from lncapacity import build
    from lncapacity.cli import Bar

    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    bar = Bar("folding", True, tty=False)
    bar.FIRST = 0.0
    net = build([[0, 0], [0, 1], [1, 0], [1, 1]], [0, 1, 1, 0], method="runs", progress=bar)
    assert net.meta["method"] == "runs"
    assert bar.label == "folding: runs"
    assert err.getvalue().splitlines()[0].startswith("lncapacity: folding: runs (")
    bar.phase("pma fallback")
    assert err.getvalue().splitlines()[-1].startswith("lncapacity: folding: pma fallback (")
    bar.PERIOD = 0.0
    bar(1, 3)
    assert err.getvalue().splitlines()[-1].startswith("lncapacity: folding: pma fallback 1/3 (")


def test_the_whole_fallback_chain_is_recorded(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """``--method circle`` ending in pma: meta and --json hold every link, circle → runs →
    pma, each with its reason (labels 2^-60 apart: below float64, so runs gives way too)."""
    from flint import fmpq

    from lncapacity import build

    X = [[0], [1], [1 + fmpq(1, 2**60)], [1 + fmpq(1, 2**59)], [3]]
    y = [0, 1, 0, 1, 0]
    net = build(X, y, method="circle")
    chain = net.meta["fallback_chain"]
    assert [(c["from"], c["to"]) for c in chain] == [("circle", "runs"), ("runs", "pma")]
    assert "no circle net" in chain[0]["why"] and "float resolution" in chain[1]["why"]
    assert net.meta["method"] == "pma" and certify(net, X, y).all_certified
    data = tmp_path / "fine.csv"
    data.write_text("x,label\n" + "".join(f"{x[0]},{c}\n" for x, c in zip(X, y, strict=True)))
    out = tmp_path / "net.json"
    args = ["certify", str(data), "--method", "circle", "--quiet", "--float", "float64"]
    assert main([*args, "--json", "--out", str(out)]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["fallback_chain"] == chain and s["method"] == "pma"
    assert fileformat.load(out).meta["fallback_chain"] == chain
    assert main(args) == 0
    assert "(circle → runs → pma: circle: " in capsys.readouterr().out
