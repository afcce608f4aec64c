"""Spreading independent work over processes, lazily and in order.

:func:`imap` is ``map`` over a pool of worker processes: results in the order of the tasks,
a bounded number in flight, everything stopped when the consumer stops; :func:`beside` runs
one call in a worker while the caller does something else.  What every task
needs (a net, the points) goes to each worker once (``shared``: inherited by ``fork``, not
pickled with every task).  BLAS runs one thread in each worker.  A worker never outlives the
process that started it: it dies with its parent (Linux: ``prctl(PR_SET_PDEATHSIG)``; other
systems: a thread that watches the parent), even when the parent is killed by SIGKILL and
can clean up nothing.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")


_SIGNALS = {
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
}
"""The signals the command line handles: a worker sets its own dispositions for them."""

WATCH_PERIOD = 0.25
"""Seconds between a worker's looks at its parent, where the kernel does not watch for it."""

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>

_shared: Any = None
"""In a worker: the ``shared`` value of its :func:`imap` (each task gets it first)."""


def _worker_start(parent: int, shared: Any) -> None:
    """In each worker: die with the parent, own signal dispositions, one BLAS thread.

    Ctrl-C is the parent's to handle (it stops the workers), and SIGTERM or SIGHUP end the
    worker at once (not the parent's handlers, inherited through ``fork``).  BLAS runs one
    thread in each worker (the workers already take the cores; more threads would only wait
    for each other), where ``threadpoolctl`` is installed."""
    global _shared
    die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for sig in _SIGNALS - {signal.SIGINT}:
        signal.signal(sig, signal.SIG_DFL)
    if hasattr(signal, "pthread_sigmask"):  # blocked by _submit while forking: handled now
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _SIGNALS)
    _one_blas_thread()
    _shared = shared


def die_with_parent(parent: int) -> None:
    """End this process (SIGKILL) as soon as the process ``parent`` (its parent) ends.

    On Linux the kernel does it (``prctl(PR_SET_PDEATHSIG, SIGKILL)``); elsewhere, or if that
    call fails, a daemon thread looks every :data:`WATCH_PERIOD` seconds whether the parent
    is still there (``_watch_parent``).  A parent gone before this call ends the process
    now."""
    if not _kernel_watches():
        threading.Thread(
            target=_watch_parent, args=(parent,), name="lncapacity-parent", daemon=True
        ).start()
    if not _parent_alive(parent):  # it died before the kernel or the thread could watch
        os._exit(1)


def _kernel_watches() -> bool:
    """``prctl(PR_SET_PDEATHSIG, SIGKILL)`` on Linux: whether it is in force now."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError):  # pragma: no cover - a libc without prctl
        return False


def _parent_alive(parent: int) -> bool:
    """Whether the process that started this one is still there: on POSIX its pid is still
    this process's parent (an orphan is adopted by another); elsewhere the parent's handle
    (``multiprocessing.parent_process``) is not yet signalled."""
    if os.name == "posix":
        return os.getppid() == parent
    proc = multiprocessing.parent_process()  # pragma: no cover - Windows
    return proc is None or proc.is_alive()  # pragma: no cover


def _watch_parent(parent: int) -> None:
    """The portable parent-death check: exit (as SIGKILL would) once the parent is gone."""
    while _parent_alive(parent):
        time.sleep(WATCH_PERIOD)
    os._exit(1)


def _one_blas_thread() -> None:
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - optional: scikit-learn's dependency
        return
    threadpool_limits(1, user_api="blas")


def _call(fn: Callable[..., R], task: Any) -> R:
    """A task in a worker: ``fn(shared, task)``, ``shared`` as the worker received it."""
    return fn(_shared, task)


def _call_shared() -> Any:
    """:func:`beside`'s call in its worker: ``fn(*args)``, as the worker received them."""
    fn, args = _shared
    return fn(*args)


def _submit(pool: ProcessPoolExecutor, fn: Callable[..., R], *args: Any) -> Future[R]:
    """``pool.submit``, with ``_SIGNALS`` blocked while it may fork a worker.

    A worker forked then would otherwise run the parent's handlers until
    ``_worker_start`` replaces them, and print a traceback from its bootstrap:
    on a Ctrl-C, or on the SIGTERM with which the parent stops its workers when it is
    interrupted itself.  Blocked, such a signal waits in the worker until its own
    dispositions are set, and in the parent until the fork is done.
    """
    if not hasattr(signal, "pthread_sigmask"):
        return pool.submit(fn, *args)
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
    try:
        return pool.submit(fn, *args)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def imap(fn: Callable[..., R], tasks: Iterable[T], workers: int, shared: Any = None) -> Iterator[R]:
    """``map(fn, tasks)`` over ``workers`` processes, results in order.

    With ``shared`` (not None), each call is ``fn(shared, task)``: ``shared`` goes to each
    worker once (inherited by ``fork``, pickled once per worker elsewhere), not with every
    task.  At most ``4 * workers`` tasks are in flight, so a long (or endless) task stream
    costs bounded memory, while the consumer's own work (writing, compressing) overlaps the
    workers'.  ``fork`` is used where the platform has it, so workers start at once with the
    parent's modules.  When the consumer stops early (an exception such as an interruption, or
    closing the generator: use ``contextlib.closing``), the workers are terminated at once, not
    waited for; they die with the parent too (:func:`die_with_parent`).
    """
    call: Callable[[T], R] = fn if shared is None else (lambda task: fn(shared, task))
    if workers <= 1:
        yield from map(call, tasks)
        return
    pool = _pool(workers, shared)
    submit: Callable[[T], Future[R]] = (
        (lambda task: _submit(pool, fn, task))
        if shared is None
        else (lambda task: _submit(pool, _call, fn, task))
    )
    try:
        window: list[Future[R]] = []
        for task in tasks:
            window.append(submit(task))
            if len(window) >= 4 * workers:
                yield window.pop(0).result()
        for future in window:
            yield future.result()
    except BaseException:  # including GeneratorExit and KeyboardInterrupt
        _terminate(pool)
        raise
    pool.shutdown()


@contextmanager
def beside(fn: Callable[..., R], *args: Any, alone: bool = True) -> Iterator[Callable[[], R]]:
    """``fn(*args)`` begun now in a worker process of its own (started as :func:`imap`'s are),
    while the caller goes on; the context gives a function that waits for the result (or
    raises the worker's exception).  Leaving the context early stops the worker at once.

    With ``alone`` false nothing is started: the function computes ``fn(*args)`` in this
    process when called (for work too small to pay for a process)."""
    if not alone:
        yield lambda: fn(*args)
        return
    pool = _pool(1, (fn, args))  # inherited by fork, not pickled (a net, the points)
    future = _submit(pool, _call_shared)
    try:
        yield future.result
    except BaseException:
        _terminate(pool)
        raise
    pool.shutdown()


def _pool(workers: int, shared: Any) -> ProcessPoolExecutor:
    """A pool of ``workers`` processes that fork where the platform can (so they start at once
    with the parent's modules), each set up by ``_worker_start``."""
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else None)
    return ProcessPoolExecutor(
        workers,
        mp_context=ctx,
        initializer=_worker_start,
        initargs=(os.getpid(), shared),
    )


def _terminate(pool: ProcessPoolExecutor) -> None:
    """Stop a pool's workers now and reap them: nothing survives the parent's exit."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    manager = getattr(pool, "_executor_manager_thread", None)  # shutdown() forgets it
    for p in processes:
        if p.is_alive():
            p.terminate()
    pool.shutdown(wait=False, cancel_futures=True)
    for p in processes:
        p.join(timeout=5)
        if p.is_alive():  # pragma: no cover - a worker that ignores SIGTERM
            p.kill()
            p.join(timeout=5)
    # let the pool's manager thread finish (it closes its wake-up pipe) before the
    # interpreter's exit hook writes to that pipe: otherwise the two race, and a stray
    # "Exception ignored ... Bad file descriptor" reaches stderr after our one line
    if manager is not None and manager.ident is not None:  # never started: nothing to join
        manager.join(timeout=5)
