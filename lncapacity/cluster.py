"""Independent work on a Dask distributed cluster, lazily and in order (``--scheduler``).

:func:`cluster_imap` is :func:`lncapacity.parallel.imap` on ``dask.distributed``: the same
contract (results in the order of the tasks, a bounded number in flight, ``shared`` sent to
the workers once, everything stopped when the consumer stops), so what is written from it is
what the process pool writes, byte for byte.  A worker that dies is Dask's to handle: its
tasks are computed again on another worker (up to the scheduler's ``allowed-failures``).
The scheduler is

* ``local:N``: a ``LocalCluster`` of ``N`` worker processes on this machine (one thread each,
  no dashboard, on ``127.0.0.1``), started here and closed at the end; tasks go to its
  workers as each one comes up;
* ``tcp://HOST:PORT`` or ``HOST:PORT`` (port 8786 when omitted): a running scheduler, whose
  workers must import the same ``lncapacity``.

Addresses are checked before any connection (:func:`parse_scheduler`; other schemes, such
as ``tls://``, ``ucx://`` or ``ws://``, are refused), and a scheduler must greet like one
within :data:`CONNECT_TIMEOUT` seconds (:func:`probe`) before Dask talks to it: a refused
port, a silent or foreign server, an unroutable host are each one line
(:class:`~lncapacity.errors.InputError`), never a wait of a minute or an allocation of
what a stranger's bytes announce.  An interruption (Ctrl-C, SIGTERM) cancels the futures and
stops a local cluster's processes at once, silently.

``distributed`` is an optional dependency (``pip install lncapacity[dask]``).
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from .errors import InputError
from .parallel import die_with_parent, imap

T = TypeVar("T")
R = TypeVar("R")

LOCAL = re.compile(r"local:([1-9][0-9]{0,3})", re.IGNORECASE)
"""``local:N``: a local cluster of ``N`` (1 to 9999) worker processes."""

DEFAULT_PORT = 8786
"""The port of a scheduler address that names none (Dask's)."""

CONNECT_TIMEOUT = 10.0
"""Seconds to resolve a scheduler's host, to connect, and to hear its greeting."""

MAX_GREETING = 1 << 20
"""Most bytes a scheduler's greeting (Dask's handshake message) may announce."""

_HOSTNAME = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)(\.(?!-)[A-Za-z0-9-]{1,63}(?<!-))*\.?")


@dataclass(frozen=True)
class Scheduler:
    """A checked ``--scheduler``: ``workers`` local processes, or ``host``/``port``."""

    text: str
    workers: int = 0
    """``N`` of ``local:N`` (0: a running scheduler at ``host:port``)."""
    host: str = ""
    port: int = 0

    @property
    def address(self) -> str:
        """The address given to Dask, ``tcp://host:port`` (IPv6 in brackets)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"tcp://{host}:{self.port}"


def parse_scheduler(text: str) -> Scheduler:
    """``local:N``, ``tcp://HOST:PORT`` or ``HOST:PORT``, checked without any connection;
    :class:`InputError` (one line) for anything else."""

    def bad(why: str) -> InputError:
        return InputError(f"--scheduler {text[:80]!r}: {why}")

    if text.lower().startswith("local"):
        local = LOCAL.fullmatch(text)
        if not local:
            raise bad("local:N with N from 1 to 9999")
        return Scheduler(text, workers=int(local.group(1)))
    scheme, sep, rest = text.partition("://")
    if not sep:
        scheme, rest = "tcp", text
    if scheme.lower() != "tcp":
        raise bad(f"{scheme}:// is not supported; give tcp://HOST:PORT, HOST:PORT or local:N")
    host, port = _host_port(rest, bad)
    return Scheduler(text, host=host, port=port)


def _host_port(rest: str, bad: Callable[[str], InputError]) -> tuple[str, int]:
    """``HOST[:PORT]`` (IPv6 in brackets) as a checked host and a port from 1 to 65535."""
    if rest.startswith("["):
        host, sep, tail = rest[1:].partition("]")
        if not sep or (tail and not tail.startswith(":")):
            raise bad("an IPv6 host is written [ADDRESS]:PORT")
        port_text = tail[1:] if tail else ""
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise bad(f"{host[:60]!r} is not an IPv6 address") from None
    else:
        host, sep, port_text = rest.partition(":")
        if sep and not port_text:
            raise bad("the port is missing after ':'")
        if re.fullmatch(r"[0-9.]+", host):
            try:
                ipaddress.IPv4Address(host)
            except ValueError:
                raise bad(f"{host[:60]!r} is not an IPv4 address") from None
        elif not _HOSTNAME.fullmatch(host) or len(host) > 253:
            raise bad(f"{host[:60]!r} is not a host name")
    if not port_text:
        return host, DEFAULT_PORT
    if not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
        raise bad(f"port {port_text[:20]!r}: expected an integer from 1 to 65535")
    return host, int(port_text)


def probe(scheduler: Scheduler, timeout: float = CONNECT_TIMEOUT) -> None:
    """Connect to ``scheduler`` and read its greeting, each within ``timeout`` seconds:
    :class:`InputError` unless it greets as a Dask scheduler does (a first message of at most
    :data:`MAX_GREETING` bytes, framed as Dask frames it)."""
    where = f"--scheduler {scheduler.text}"
    try:
        addresses = _resolve(scheduler.host, scheduler.port, timeout)
        with _connect(addresses, timeout) as s:
            (size,) = struct.unpack("Q", _read(s, 8))
            if not 16 <= size <= MAX_GREETING:
                raise InputError(f"{where}: not a Dask scheduler (it answers in another protocol)")
            message = _read(s, size)
    except TimeoutError:
        raise InputError(f"{where}: no answer within {timeout:g} s") from None
    except OSError as e:
        raise InputError(f"{where}: cannot connect ({e.strerror or e})") from None
    (frames,) = struct.unpack_from("Q", message)
    lengths = struct.unpack_from(f"{min(frames, 64)}Q", message, 8) if 8 * frames < size else ()
    if not 1 <= frames <= 64 or 8 * (1 + frames) + sum(lengths) > size:
        raise InputError(f"{where}: not a Dask scheduler (it answers in another protocol)")


def _resolve(host: str, port: int, timeout: float) -> list[Any]:
    """``getaddrinfo`` for a TCP connection, given up after ``timeout`` seconds."""
    found: list[Any] = []
    failed: list[OSError] = []

    def look_up() -> None:
        try:
            found.extend(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
        except OSError as e:
            failed.append(e)

    t = threading.Thread(target=look_up, name="lncapacity-resolve", daemon=True)
    t.start()
    t.join(timeout)
    if failed:
        raise OSError(f"host {host!r} not found ({failed[0].strerror or failed[0]})")
    if t.is_alive():
        raise TimeoutError
    return found


def _connect(addresses: list[Any], timeout: float) -> socket.socket:
    """A connected socket to the first of ``addresses`` that accepts, with ``timeout``."""
    error: OSError = OSError("no address")
    for family, kind, proto, _, address in addresses:
        s = socket.socket(family, kind, proto)
        s.settimeout(timeout)
        try:
            s.connect(address)
            return s
        except OSError as e:
            s.close()
            error = e
    raise error


def _read(s: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        part = s.recv(n - len(data))
        if not part:
            raise ConnectionResetError("the connection closed")
        data += part
    return data


def distributed_module() -> Any:
    """``dask.distributed``, or a one-line :class:`InputError` naming the extra to install."""
    try:
        import distributed
    except ImportError:
        raise InputError(
            "--scheduler needs dask.distributed: pip install 'lncapacity[dask]'"
        ) from None
    return distributed


def local_cluster(workers: int) -> Any:
    """A ``LocalCluster`` of ``workers`` processes of one thread each, on ``127.0.0.1``
    only, no dashboard, all of them up when it returns (the cluster :func:`serve_local`
    runs, for tests and for callers that manage it themselves)."""
    return distributed_module().LocalCluster(
        n_workers=workers,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
    )


def serve_local(workers: int, parent: int) -> None:
    """The process behind ``local:N``: a ``LocalCluster`` whose scheduler's address is
    printed on stdout at once (the workers join as each comes up), until stdin ends.

    It dies with ``parent`` (:func:`lncapacity.parallel.die_with_parent`), and stdin ends
    when the parent closes it or dies, so nothing of the cluster outlives its user: Dask's
    worker processes end with this one.  Ctrl-C is the parent's to handle."""
    die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    cluster = distributed_module().LocalCluster(
        n_workers=0,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
    )
    cluster.scale(workers)
    sys.stdout.write(cluster.scheduler_address + "\n")
    sys.stdout.flush()
    sys.stdin.buffer.read()  # until the parent closes it, or is gone
    os._exit(0)  # the workers end with this process: no graceful shutdown to wait for


@contextlib.contextmanager
def _local_host(workers: int) -> Iterator[str]:
    """A :func:`serve_local` process of ``workers`` workers: its scheduler's address; the
    process and its workers stopped at the end (at once, by SIGKILL to its process group)."""
    code = "import sys; from lncapacity.cluster import serve_local as s; s(*map(int, sys.argv[1:]))"
    with tempfile.TemporaryFile() as log:
        host = subprocess.Popen(
            [sys.executable, "-c", code, str(workers), str(os.getpid())],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            start_new_session=True,  # the terminal's Ctrl-C is for this process alone
        )
        try:
            address = host.stdout.readline().decode().strip()  # "" if it ended
            if not address.startswith("tcp://"):
                log.seek(0)
                lines = log.read().decode(errors="replace").strip().splitlines() or ["no answer"]
                raise RuntimeError(f"the local cluster did not start: {lines[-1][:200]}")
            yield address
        finally:
            _kill(host)


def _kill(host: subprocess.Popen[bytes]) -> None:
    """Stop a :func:`serve_local` process and every process it started, now."""
    with contextlib.suppress(OSError):
        if hasattr(os, "killpg"):
            os.killpg(host.pid, signal.SIGKILL)
        else:  # pragma: no cover - Windows: the workers end with their parent
            host.kill()
    host.wait()
    for stream in (host.stdin, host.stdout):
        if stream is not None:
            stream.close()


@contextlib.contextmanager
def client(scheduler: str, timeout: float = CONNECT_TIMEOUT) -> Iterator[Any]:
    """A ``distributed.Client`` for ``scheduler`` (``local:N`` or an address, checked by
    :func:`parse_scheduler` and :func:`probe`), closed at the end, with the processes of
    ``local:N`` (stopped at once; an interruption leaves no Dask message behind)."""
    where = parse_scheduler(scheduler)
    distributed = distributed_module()
    with contextlib.ExitStack() as stack:
        if where.workers:
            address = stack.enter_context(_local_host(where.workers))
        else:
            probe(where, timeout)
            address = where.address
        try:
            c = distributed.Client(address, timeout=2 * timeout if not where.workers else 60)
        except (OSError, TimeoutError, ValueError, TypeError, MemoryError) as e:
            why = str(e).splitlines()[0][:120] if str(e) else type(e).__name__
            raise InputError(f"--scheduler {scheduler}: cannot connect ({why})") from None
        try:
            yield c
        except BaseException:
            _quiet_close(c)
            raise
        c.close()


def _quiet_close(c: Any) -> None:
    """Close a client after an interruption: briefly, and with Dask's log silent."""
    log = logging.getLogger("distributed")
    level, log.level = log.level, logging.CRITICAL + 1
    try:
        with contextlib.suppress(Exception):
            c.close(timeout=1)
    finally:
        log.setLevel(level)


def cluster_imap(
    fn: Callable[..., R],
    tasks: Iterable[T],
    scheduler: str,
    window: int | None = None,
    shared: Any = None,
) -> Iterator[R]:
    """``map(fn, tasks)`` on the Dask cluster ``scheduler``, results in order.

    With ``shared`` (not None), each call is ``fn(shared, task)``, ``shared`` sent to the
    cluster once (as a task's result, so a worker lost with it computes it again).  At most
    ``window`` tasks are in flight (default: 4 per worker thread, and per worker asked for of
    ``local:N``), so an endless task stream costs bounded memory.
    When the consumer stops early (an exception such as an interruption, or closing the
    generator: use ``contextlib.closing``), the futures still in flight are cancelled and the
    client (with its local cluster) is closed.
    """
    with client(scheduler) as c:
        yield from client_imap(c, fn, tasks, window, shared, parse_scheduler(scheduler).workers)


def client_imap(
    c: Any,
    fn: Callable[..., R],
    tasks: Iterable[T],
    window: int | None = None,
    shared: Any = None,
    expected: int = 0,
) -> Iterator[R]:
    """:func:`cluster_imap` on the open client ``c`` (``expected``: worker threads to count on
    for the default window, besides those already there)."""
    if window is None:
        window = 4 * max(sum(c.nthreads().values()), expected, 1)
    # a task, not scattered data: lost with a worker, it is computed again from the graph
    head = () if shared is None else (c.submit(_same, shared, pure=False),)
    flight: deque[Any] = deque()
    try:
        for task in tasks:
            flight.append(c.submit(fn, *head, task, pure=False))
            if len(flight) >= window:
                yield flight.popleft().result()
        while flight:
            yield flight.popleft().result()
    except BaseException:  # including GeneratorExit and KeyboardInterrupt
        with contextlib.suppress(Exception):
            c.cancel(list(flight), force=True)
        raise


def _same(value: T) -> T:
    return value


Mapper = Callable[..., Iterator[Any]]
"""``run(fn, tasks, shared=None, most=None)``: :func:`~lncapacity.parallel.imap` on at most
``most`` of the block's processes, or :func:`client_imap` on its Dask client (:func:`mapper`)."""


@contextlib.contextmanager
def mapper(workers: int, scheduler: str | None = None) -> Iterator[Mapper]:
    """Where a computation's chunks run, for the whole block: the process pool of ``workers``
    processes, or the Dask cluster ``scheduler`` (one client, and one ``local:N`` cluster,
    for every map of the block).  The same tasks give the same results either way."""
    if scheduler is None:

        def on_pool(
            fn: Callable[..., R], tasks: Iterable[T], shared: Any = None, most: int | None = None
        ) -> Iterator[R]:
            return imap(fn, tasks, min(workers, most or workers), shared)

        yield on_pool
        return
    expected = parse_scheduler(scheduler).workers
    with client(scheduler) as c:

        def on_cluster(
            fn: Callable[..., R], tasks: Iterable[T], shared: Any = None, most: int | None = None
        ) -> Iterator[R]:
            return client_imap(c, fn, tasks, shared=shared, expected=expected)

        yield on_cluster
