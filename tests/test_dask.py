"""Shattering on a Dask cluster (``--scheduler``), and ``--resume`` (issue 32, section 2).

One ``LocalCluster`` of two worker processes on 127.0.0.1 (no dashboard) serves the module;
every certificate is compared byte for byte with the process pool's.  A worker is killed in
the middle of a run (its chunks are computed again), a command on the cluster is interrupted
by a real signal (the futures are cancelled, no file is left), and an interrupted run resumes
from its journal, whose records are re-certified.
"""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lncapacity.cluster import local_cluster
from lncapacity.errors import InputError
from lncapacity.shatter import shatter, verify_shatter

distributed = pytest.importorskip("distributed")

ROOT = Path(__file__).resolve().parents[1]
ENV = {k: v for k, v in os.environ.items() if k != "LNCAPACITY_DEBUG"} | {"PYTHONPATH": str(ROOT)}
RUN = {"depth": 1, "groups": 3, "chunk": 4}  # 7 points, 64 pairs of labelings: 16 chunks
TIMEOUT = 120


@pytest.fixture(scope="module")
def cluster():
    c = local_cluster(2)  # the cluster --scheduler local:2 starts
    client = distributed.Client(c, timeout=TIMEOUT)
    try:
        client.wait_for_workers(2, timeout=TIMEOUT)
        yield c, client
    finally:
        client.close()
        c.close()


@pytest.fixture(scope="module")
def pool_bytes(tmp_path_factory) -> bytes:
    path = tmp_path_factory.mktemp("pool") / "s.jsonl"
    assert shatter(None, out=path, workers=1, **RUN).all_certified
    return path.read_bytes()


def test_the_cluster_writes_the_pools_certificate_though_a_worker_is_killed(
    cluster, pool_bytes, tmp_path
):
    c, client = cluster
    before = client.run(os.getpid)
    victim = sorted(before.values())[0]
    killed = []

    def kill_once(summary):
        if not killed:
            os.kill(victim, signal.SIGKILL)
            killed.append(summary.certified)

    out = tmp_path / "s.jsonl"
    summary = shatter(None, out=out, scheduler=c.scheduler_address, status=kill_once, **RUN)
    assert killed and killed[0] < 128  # killed mid-run
    assert summary.all_certified and summary.certified == 128
    assert out.read_bytes() == pool_bytes  # in labeling order, whatever order chunks came in
    # the victim is gone (its nanny restarts a worker, which may take long on a loaded machine)
    assert victim not in client.run(os.getpid, on_error="ignore").values()
    again, problems = verify_shatter(out, scheduler=c.scheduler_address)
    assert not problems and again.certified == 128


class Stop(Exception):
    pass


def test_an_interrupted_run_resumes_from_its_checked_journal(pool_bytes, tmp_path):
    out = tmp_path / "s.jsonl"
    seen = []

    def stop_after_three(summary):
        seen.append(summary.certified)
        if len(seen) == 3:
            raise Stop

    with pytest.raises(Stop):
        shatter(None, out=out, workers=1, resume=True, status=stop_after_three, **RUN)
    journal = tmp_path / "s.jsonl.part"
    assert not out.exists() and journal.exists()
    lines = journal.read_bytes().splitlines()
    assert len(lines) == 1 + 3 * RUN["chunk"]  # the header and three chunks of records
    # a forged record (a claimed margin above the certified one) and a cut last line
    rec = json.loads(lines[6])
    rec["margins"][0] = 1e9
    lines[6] = json.dumps(rec, separators=(",", ":")).encode()
    journal.write_bytes(b"\n".join(lines[:-1]) + b"\n" + lines[-1][:10])
    done = []
    summary = shatter(
        None, out=out, workers=1, resume=True, status=lambda s: done.append(s.certified), **RUN
    )
    assert summary.all_certified and summary.certified == 128
    assert out.read_bytes() == pool_bytes and not journal.exists()
    # the five records before the forged one were kept, the rest computed again
    assert done[0] == 2 * (5 + RUN["chunk"])


def test_resume_writes_gzip_and_refuses_another_runs_journal(pool_bytes, tmp_path):
    out = tmp_path / "s.jsonl.gz"
    assert shatter(None, out=out, workers=1, resume=True, **RUN).all_certified
    assert gzip.decompress(out.read_bytes()) == pool_bytes
    journal = tmp_path / "s.jsonl.gz.part"
    journal.write_bytes(pool_bytes.splitlines()[0] + b"\n")
    with pytest.raises(InputError, match="another run"):
        shatter(None, out=out, workers=1, resume=True, depth=1, groups=2)


def _tasks(client) -> int:
    return client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks))


@pytest.mark.parametrize(
    "name", [pytest.param("SIGINT", marks=pytest.mark.slow), "SIGTERM"]
)  # the pool's tests cover every signal; here one is enough for the default suite
def test_an_interrupt_cancels_the_futures_and_leaves_no_file(cluster, tmp_path, name):
    c, client = cluster
    cmd = [sys.executable, "-m", "lncapacity", "shatter", "--depth", "1", "--arch", "ln-g"]
    cmd += ["--groups", "8", "--out", "s.jsonl", "--scheduler", c.scheduler_address, "--quiet"]
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=ENV, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + TIMEOUT
        while _tasks(client) == 0:  # at work on the cluster
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
        proc.send_signal(getattr(signal, name))
        _, err = proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + getattr(signal, name)
    assert err.strip().splitlines() == [f"lncapacity: interrupted ({name})"]
    assert list(tmp_path.iterdir()) == []
    deadline = time.monotonic() + TIMEOUT
    while _tasks(client):  # the client's futures are released: nothing is left to compute
        assert time.monotonic() < deadline
        time.sleep(0.2)


def test_a_bad_scheduler_is_one_line(tmp_path, capsys, monkeypatch):
    from lncapacity.cli import main

    monkeypatch.chdir(tmp_path)
    for bad in ("local:0", "local:x", "local:99999"):
        code = main(["shatter", "--depth", "0", "--scheduler", bad, "--quiet"])
        err = capsys.readouterr().err
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert "--scheduler" in err and list(tmp_path.iterdir()) == []


def test_status_lines_say_done_certified_left_and_rate(tmp_path):
    from lncapacity.cli.shatter import status_lines

    notes = []

    class Bar:
        def note(self, message):
            notes.append(message)

    status = status_lines(Bar(), period=0)
    summary = shatter(None, out=tmp_path / "s.jsonl", workers=1, status=status, **RUN)
    assert summary.all_certified and len(notes) == 128 // (2 * RUN["chunk"]) - 1
    assert notes[-1].startswith("128/128 labelings done, 128 certified, 0 left; ")
    assert "labelings/s" in notes[-1]


def _labelled_points(net, m: int, seed: int):
    """``m`` points on a grid of 1/64, labelled by ``net``'s float64 argmax."""
    import numpy as np

    from lncapacity import floats
    from lncapacity.data import points_from_arrays

    rng = np.random.default_rng(seed)
    X = np.round(rng.standard_normal((m, net.input_dim)) * 64) / 64
    return points_from_arrays(X, np.argmax(floats.forward(net, X, "float64"), axis=1))


def test_certify_on_the_cluster_is_the_pools_certificate_though_a_worker_is_killed(
    cluster, monkeypatch
):
    from lncapacity.certify import certify, spread
    from lncapacity.theory.capacity import random_net

    c, client = cluster
    net = random_net(3, 8, 2, seed=5)
    points = _labelled_points(net, 600, 6)
    monkeypatch.setattr(spread, "MIN_SPAN_WORK", 16 * spread.work(net, 1))  # 38 spans of 16
    alone = certify(net, points, workers=1, scores=True)
    pool = certify(net, points, workers=2, scores=True)
    victim = sorted(client.run(os.getpid).values())[0]
    killed = []

    def kill_once(done, total):
        if not killed and done < total:
            os.kill(victim, signal.SIGKILL)
            killed.append(done)

    on_cluster = certify(
        net, points, scheduler=c.scheduler_address, progress=kill_once, scores=True
    )
    assert killed  # mid-run
    assert alone.certified > 500  # the interval pass decides most points, balls the rest
    for cert in (pool, on_cluster):
        assert cert.to_dict() == alone.to_dict()
        assert all((a == b).all() for a, b in zip(cert.scores, alone.scores, strict=True))


def test_verify_on_the_cluster_writes_the_certificate_certify_wrote(cluster, tmp_path):
    c, _ = cluster
    folder = tmp_path
    rows = "".join(f"{k}/7,{(k * k) % 5}/3,{int(k % 3 == 0)}\n" for k in range(60))
    (folder / "d.csv").write_text("x,y,label\n" + rows)
    run = [sys.executable, "-m", "lncapacity"]
    made = subprocess.run(
        [*run, "certify", "d.csv", "--out", "n.json", "--certificate", "a.json", "--workers", "1"],
        cwd=folder, env=ENV, capture_output=True, text=True, timeout=TIMEOUT,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    where = ["--scheduler", c.scheduler_address]
    again = subprocess.run(
        [*run, "verify", "n.json", "d.csv", "--certificate", "b.json", "--quiet", *where],
        cwd=folder, env=ENV, capture_output=True, text=True, timeout=TIMEOUT,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert (folder / "a.json").read_bytes() == (folder / "b.json").read_bytes()
