"""``--scheduler``: every address that is not a Dask scheduler is one line and exit 2, soon
(never a wait of a minute, an internal error, or an allocation of what a stranger's bytes
announce), and a signal ends a run on a ``local:N`` cluster with one line, also while the
cluster starts.

Every server here listens on 127.0.0.1, is started and stopped by the module's fixture, and
serves a bounded number of connections; every command runs in a subprocess with a timeout.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from test_interrupt import ENV
from test_orphans import READY, descendants

from lncapacity.cluster import CONNECT_TIMEOUT, parse_scheduler
from lncapacity.errors import InputError

pytest.importorskip("distributed")

TIMEOUT = 180
"""Seconds a refused address may take before the test gives up on it (a bound, not a timing:
each takes at most the connection timeout, a few seconds, once Python has started)."""


@contextlib.contextmanager
def _serve(answer: Callable[[socket.socket], None]) -> Iterator[int]:
    """A server on 127.0.0.1 that treats each connection (at most 20) by ``answer``."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()
    held: list[socket.socket] = []

    def loop() -> None:
        for _ in range(20):
            while not stop.is_set():
                try:
                    conn, _ = server.accept()
                    break
                except TimeoutError:
                    continue
            else:
                return
            held.append(conn)
            with contextlib.suppress(OSError):
                answer(conn)

    t = threading.Thread(target=loop, daemon=True)
    t.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        t.join(5)
        for conn in held:
            conn.close()
        server.close()


def _silent(conn: socket.socket) -> None:
    """Accepts and says nothing (holds the connection until the end)."""


def _http(conn: socket.socket) -> None:
    """An HTTP server: answers whatever it is sent with an error page."""
    conn.settimeout(CONNECT_TIMEOUT + 5)
    if conn.recv(1 << 16):
        conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")


def _huge(conn: socket.socket) -> None:
    """Greets at once with a length of 2^64 - 1 bytes."""
    conn.sendall(b"\xff" * 16)


def _hang_up(conn: socket.socket) -> None:
    conn.close()


def _refused_port() -> int:
    s = socket.create_server(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _shatter(scheduler: str, folder) -> subprocess.CompletedProcess[str]:
    """``shatter --depth 0`` on ``scheduler``: a bounded run."""
    cmd = [sys.executable, "-m", "lncapacity", "shatter", "--depth", "0", "--quiet"]
    try:
        return subprocess.run(
            [*cmd, "--scheduler", scheduler, "--out", "s.jsonl"],
            cwd=folder,
            env=ENV,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
    except subprocess.TimeoutExpired as e:
        return subprocess.CompletedProcess(e.cmd, -1, "", f"no answer in {TIMEOUT} s")


BAD = {
    "tls": "tls://127.0.0.1:8786",
    "ucx": "ucx://127.0.0.1:8786",
    "ws": "ws://127.0.0.1:1",
    "port 99999": "127.0.0.1:99999",
    "port -5": "tcp://127.0.0.1:-5",
    "host 256.1.1.1": "256.1.1.1:8786",
    "local:0": "local:0",
    "no port after ':'": "tcp://127.0.0.1:",
}
SERVED = {"silent": _silent, "http": _http, "huge length": _huge, "hangs up": _hang_up}


@pytest.fixture(scope="module")
def refused(tmp_path_factory) -> dict[str, subprocess.CompletedProcess[str]]:
    """Every bad address, each in a folder of its own, run at once."""
    with contextlib.ExitStack() as stack:
        cases = dict(BAD) | {"refused port": f"127.0.0.1:{_refused_port()}"}
        for name, answer in SERVED.items():
            cases[name] = f"tcp://127.0.0.1:{stack.enter_context(_serve(answer))}"
        with ThreadPoolExecutor(max_workers=4) as pool:
            runs = {
                name: pool.submit(_shatter, address, tmp_path_factory.mktemp("s"))
                for name, address in cases.items()
            }
            return {name: f.result() for name, f in runs.items()}


@pytest.mark.parametrize("case", [*BAD, "refused port", *SERVED])
def test_a_bad_scheduler_is_one_line_and_exit_2(refused, case):
    run = refused[case]
    assert run.returncode == 2, run.stderr[-800:]
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("lncapacity: error: --scheduler"), lines


def test_scheduler_addresses_are_read_as_written():
    assert parse_scheduler("tcp://127.0.0.1:8786").address == "tcp://127.0.0.1:8786"
    assert parse_scheduler("127.0.0.1").address == "tcp://127.0.0.1:8786"  # Dask's port
    assert parse_scheduler("[::1]:9000").address == "tcp://[::1]:9000"
    assert parse_scheduler("scheduler.example.org:1").host == "scheduler.example.org"
    assert parse_scheduler("local:3").workers == parse_scheduler("LOCAL:3").workers == 3
    for bad in ("tcp://[::1", "tcp://[1.2.3.4]:1", "tcp://a_b:1", "local:", "tcp://h:0"):
        with pytest.raises(InputError, match="--scheduler"):
            parse_scheduler(bad)


def _signalled(name: str, ready: Callable[[list[int]], bool], folder) -> tuple[int, str]:
    """``shatter`` on ``local:2``, sent ``name`` once ``ready(descendants)``: code, stderr."""
    cmd = [sys.executable, "-m", "lncapacity", "shatter", "--depth", "1", "--arch", "ln-g"]
    cmd += ["--groups", "8", "--out", "s.jsonl", "--scheduler", "local:2", "--quiet"]
    p = subprocess.Popen(cmd, cwd=folder, env=ENV, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + READY
        while not ready(descendants(p.pid)):
            assert p.poll() is None and time.monotonic() < deadline, p.stderr.read()[-500:]
            time.sleep(0.05)
        p.send_signal(getattr(signal, name))
        _, err = p.communicate(timeout=TIMEOUT)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    return p.returncode, err


@pytest.mark.parametrize(
    ("name", "when"),
    [
        ("SIGTERM", "starting"),  # the first process of the cluster is up, nothing else
        ("SIGTERM", "working"),
        pytest.param("SIGINT", "working", marks=pytest.mark.slow),
    ],
)
def test_a_signal_ends_a_local_cluster_run_with_one_line(tmp_path, name, when):
    need = 1 if when == "starting" else 3  # the cluster's process and its two workers

    code, err = _signalled(name, lambda pids: len(pids) >= need, tmp_path)
    assert code == 128 + getattr(signal, name)
    assert err.splitlines() == [f"lncapacity: interrupted ({name})"]
    assert list(tmp_path.iterdir()) == []
