"""Independent work on a Dask distributed cluster, lazily and in order (``--scheduler``).

:func:`cluster_imap` is :func:`lncapacity.parallel.imap` on ``dask.distributed``: the same
contract (results in the order of the tasks, a bounded number in flight, everything stopped
when the consumer stops), so a shattering certificate written from it is the one the process
pool writes, byte for byte.  A worker that dies is Dask's to handle: its tasks are computed
again on another worker (up to the scheduler's ``allowed-failures``).  The scheduler is

* ``local:N``: a ``LocalCluster`` of ``N`` worker processes on this machine (one thread each,
  no dashboard, on ``127.0.0.1``), started here and closed at the end;
* any other string: the address of a running scheduler (``tcp://host:8786``), whose workers
  must import the same ``lncapacity``.

``distributed`` is an optional dependency (``pip install lncapacity[dask]``).
"""

from __future__ import annotations

import contextlib
import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from .errors import InputError

T = TypeVar("T")
R = TypeVar("R")

LOCAL = re.compile(r"local:([1-9][0-9]{0,3})")
"""``local:N``: a local cluster of ``N`` (1 to 9999) worker processes."""


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
    """The ``LocalCluster`` of ``local:N``: ``workers`` processes of one thread each, on
    ``127.0.0.1`` only, no dashboard."""
    return distributed_module().LocalCluster(
        n_workers=workers,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
    )


@contextlib.contextmanager
def client(scheduler: str, timeout: float = 60) -> Iterator[Any]:
    """A ``distributed.Client`` for ``scheduler`` (``local:N`` or an address), closed at the
    end (with its local cluster); :class:`InputError` for an address that does not answer."""
    distributed = distributed_module()
    local = LOCAL.fullmatch(scheduler)
    cluster = None
    try:
        if local:
            cluster = local_cluster(int(local.group(1)))
            c = distributed.Client(cluster, timeout=timeout)
        else:
            if scheduler.startswith("local"):
                raise InputError(f"--scheduler {scheduler!r}: local:N with N from 1 to 9999")
            try:
                c = distributed.Client(scheduler, timeout=timeout)
            except (OSError, TimeoutError, ValueError) as e:
                raise InputError(f"--scheduler {scheduler}: cannot connect ({e})") from None
    except BaseException:
        if cluster is not None:
            cluster.close()
        raise
    try:
        yield c
    finally:
        c.close()
        if cluster is not None:
            cluster.close()


def cluster_imap(
    fn: Callable[[T], R], tasks: Iterable[T], scheduler: str, window: int | None = None
) -> Iterator[R]:
    """``map(fn, tasks)`` on the Dask cluster ``scheduler``, results in order.

    At most ``window`` tasks are in flight (default: 4 per worker thread), so an endless
    task stream costs bounded memory.  When the consumer stops early (an exception such as an
    interruption, or closing the generator: use ``contextlib.closing``), the futures still in
    flight are cancelled and the client (with its local cluster) is closed.
    """
    with client(scheduler) as c:
        if window is None:
            threads = sum(c.nthreads().values()) or 1
            window = 4 * threads
        flight: deque[Any] = deque()
        try:
            for task in tasks:
                flight.append(c.submit(fn, task, pure=False))
                if len(flight) >= window:
                    yield flight.popleft().result()
            while flight:
                yield flight.popleft().result()
        except BaseException:  # including GeneratorExit and KeyboardInterrupt
            with contextlib.suppress(Exception):
                c.cancel(list(flight), force=True)
            raise
