"""Spreading independent work over processes, lazily and in order."""

from __future__ import annotations

import multiprocessing
import signal
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


_SIGNALS = {
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
}
"""The signals the command line handles: a worker sets its own dispositions for them."""


def _worker_signals() -> None:
    """In each worker: Ctrl-C is the parent's to handle (it stops the workers), and SIGTERM or
    SIGHUP end the worker at once (not the parent's handlers, inherited through ``fork``).
    BLAS runs one thread in each worker (the workers already take the cores; more threads
    would only wait for each other), where ``threadpoolctl`` is installed."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for sig in _SIGNALS - {signal.SIGINT}:
        signal.signal(sig, signal.SIG_DFL)
    if hasattr(signal, "pthread_sigmask"):  # blocked by _submit while forking: handled now
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _SIGNALS)
    _one_blas_thread()


def _one_blas_thread() -> None:
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - optional: scikit-learn's dependency
        return
    threadpool_limits(1, user_api="blas")


def _submit(pool: ProcessPoolExecutor, fn: Callable[[T], R], task: T) -> Future[R]:
    """``pool.submit``, with ``_SIGNALS`` blocked while it may fork a worker.

    A worker forked then would otherwise run the parent's handlers until
    ``_worker_signals`` replaces them, and print a traceback from its bootstrap:
    on a Ctrl-C, or on the SIGTERM with which the parent stops its workers when it is
    interrupted itself.  Blocked, such a signal waits in the worker until its own
    dispositions are set, and in the parent until the fork is done.
    """
    if not hasattr(signal, "pthread_sigmask"):
        return pool.submit(fn, task)
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
    try:
        return pool.submit(fn, task)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def imap(fn: Callable[[T], R], tasks: Iterable[T], workers: int) -> Iterator[R]:
    """``map(fn, tasks)`` over ``workers`` processes, results in order.

    At most ``4 * workers`` tasks are in flight, so a long (or endless) task
    stream costs bounded memory.  ``fork`` is used where the platform has it, so
    workers start at once with the parent's modules.  When the consumer stops
    early (an exception such as an interruption, or closing the generator: use
    ``contextlib.closing``), the workers are terminated at once, not waited for.
    """
    if workers <= 1:
        yield from map(fn, tasks)
        return
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else None)
    pool = ProcessPoolExecutor(workers, mp_context=ctx, initializer=_worker_signals)
    try:
        window: list[Future[R]] = []
        for task in tasks:
            window.append(_submit(pool, fn, task))
            if len(window) >= 4 * workers:
                yield window.pop(0).result()
        for future in window:
            yield future.result()
    except BaseException:  # including GeneratorExit and KeyboardInterrupt
        _terminate(pool)
        raise
    pool.shutdown()


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
