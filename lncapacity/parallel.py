"""Spreading independent work over processes, lazily and in order."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def imap(fn: Callable[[T], R], tasks: Iterable[T], workers: int) -> Iterator[R]:
    """``map(fn, tasks)`` over ``workers`` processes, results in order.

    At most ``4 * workers`` tasks are in flight, so a long (or endless) task
    stream costs bounded memory.  ``fork`` is used where the platform has it, so
    workers start at once with the parent's modules.
    """
    if workers <= 1:
        yield from map(fn, tasks)
        return
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else None)
    with ProcessPoolExecutor(workers, mp_context=ctx) as pool:
        window: list[Future[R]] = []
        for task in tasks:
            window.append(pool.submit(fn, task))
            if len(window) >= 4 * workers:
                yield window.pop(0).result()
        for future in window:
            yield future.result()
