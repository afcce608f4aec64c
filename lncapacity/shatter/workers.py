"""Where the chunks of labelings run: the process pool, or a Dask cluster."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ..parallel import imap

CHUNK = 64


def _imap(scheduler: str | None) -> Callable[..., Iterator[Any]]:
    """``imap(fn, tasks, workers)``: the process pool, or the Dask cluster ``scheduler``."""
    if scheduler is None:
        return imap
    from ..cluster import cluster_imap, distributed_module

    distributed_module()  # a missing dependency is one line before any work

    def on_cluster(fn: Callable[[Any], Any], tasks: Iterator[Any], workers: int) -> Any:
        return cluster_imap(fn, tasks, scheduler)

    return on_cluster
