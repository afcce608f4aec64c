"""Where the chunks of labelings run: the process pool, or a Dask cluster."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from ..parallel import imap

CHUNK = 64
"""Labelings (or records) of one task, at most."""


@contextlib.contextmanager
def _imap(scheduler: str | None, workers: int) -> Iterator[Callable[..., Iterator[Any]]]:
    """``imap(fn, tasks, workers, shared=None)`` for the whole block: the process pool (of at
    most ``workers`` processes), or one client of the Dask cluster ``scheduler`` (so that a
    ``local:N`` cluster starts once for every map of a run)."""
    if scheduler is None:
        yield imap
        return
    from ..cluster import mapper

    with mapper(workers, scheduler) as run:

        def on_cluster(fn: Callable[..., Any], tasks: Any, n: int, shared: Any = None) -> Any:
            return run(fn, tasks, shared)

        yield on_cluster
