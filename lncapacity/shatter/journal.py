"""The certificate as it is written: JSON Lines to a temporary file renamed into place, or a
journal kept when a run is interrupted, and resuming from the journal's verified prefix."""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..fileformat import output_target, publish, temporary
from .records import MAX_LINE_BYTES, ShatterSummary, _read_header, _record_problem, _tally
from .verify import _verify_chunk
from .workers import CHUNK


def _journal_path(out: str | os.PathLike[str]) -> Path:
    target = output_target(out)
    return target.with_name(target.name + ".part")


def _resume(
    journal: Path, header: dict, summary: ShatterSummary, workers: int, imap: Callable
) -> int:
    """Keep the longest prefix of ``journal``'s records that verifies (same header, records
    in order, each re-certified as :func:`~lncapacity.shatter.verify.verify_shatter` does),
    tally them into ``summary``, cut the journal after them, and return the next labeling to
    compute (0: start afresh)."""
    if not journal.exists():
        return 0
    with open(journal, "rb") as f:
        lines = f.read().split(b"\n")
    try:
        first = json.loads(lines[0])
    except ValueError:
        first = None
    same = isinstance(first, dict) and {k: v for k, v in first.items() if k != "generator"} == {
        k: v for k, v in header.items() if k != "generator"
    }
    if not same:
        raise InputError(
            f"{journal}: a journal of another run (other points, depth, eps or groups): "
            "remove it or choose another --out"
        )
    hdr = _read_header(first, journal)
    kept: list[dict] = []
    sizes = []  # bytes of each kept record's line
    for line in lines[1:]:
        try:
            rec = json.loads(line)
        except ValueError:
            break  # a line cut by the interruption, or the end
        if _record_problem(rec, hdr) is not None or rec["labeling"] != 2 * len(kept):
            break
        kept.append(rec)
        sizes.append(len(line) + 1)
    good = 0
    batches = ((hdr, kept[i : i + CHUNK]) for i in range(0, len(kept), CHUNK))
    with closing(imap(_verify_chunk, batches, min(workers, max(1, -(-len(kept) // CHUNK))))) as rs:
        for results in rs:
            for j in range(0, len(results), 2):
                if not (results[j][1] and results[j + 1][1]):
                    break
                good += 1
            else:
                continue
            break
    offset = len(lines[0]) + 1 + sum(sizes[:good]) if good else 0  # nothing kept: afresh
    for rec in kept[:good]:
        summary.folds[rec["folds"]] += 2
        _tally(summary, rec["labeling"], rec["margins"])
        _tally(summary, rec["complement"]["labeling"], rec["complement"]["margins"])
    with open(journal, "r+b") as f:
        f.truncate(offset)
    return 2 * good


def _publish_journal(journal: Path, path: Path) -> None:
    """The finished journal becomes ``path`` (gzip-compressed into place for ``.gz``)."""
    if path.suffix != ".gz":
        publish(str(journal), path)
        return
    fd, tmp = temporary(path)
    try:
        with os.fdopen(fd, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb") as gz:
            with open(journal, "rb") as src:
                while block := src.read(1 << 20):
                    gz.write(block)
        publish(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    journal.unlink()


def _line(obj: Any) -> bytes:
    """``obj`` as a line of the certificate; :class:`InputError` beyond
    :data:`~lncapacity.shatter.records.MAX_LINE_BYTES`, which the verifier would not read."""
    line = (json.dumps(obj, separators=(",", ":")) + "\n").encode()
    if len(line) > MAX_LINE_BYTES:
        raise InputError(
            f"a record of {len(line) >> 20} MiB, beyond the {MAX_LINE_BYTES >> 20} MiB a line "
            "of a shattering certificate may have: fewer groups or layers"
        )
    return line


class _writer:
    """JSON Lines to a temporary file, renamed into place on success (gzip for ``.gz``).

    With a ``journal`` the lines are appended (and flushed) to it instead, uncompressed; it is
    kept when the run is interrupted, and on success becomes the file (compressed for
    ``.gz``)."""

    def __init__(self, path: str | os.PathLike[str] | None, journal: Path | None = None) -> None:
        self.path = None if path is None else output_target(path)
        self.journal = journal
        self.keep = True

    def __enter__(self) -> tuple[Callable[[Any], None], Callable[[], None]]:
        def discard() -> None:
            self.keep = False

        if self.path is None:
            return (lambda obj: None), discard
        if self.journal is not None:
            try:
                self.f = self.raw = open(self.journal, "ab")
            except OSError as e:
                raise InputError(f"{self.journal}: cannot write: {e.strerror}") from None

            def append(obj: Any) -> None:
                self.f.write(_line(obj))
                self.f.flush()

            return append, discard
        try:
            fd, self.tmp = temporary(self.path)
        except OSError as e:
            raise InputError(f"{self.path}: cannot write: {e.strerror}") from None
        raw = os.fdopen(fd, "wb")
        self.f = gzip.GzipFile(fileobj=raw, mode="wb") if self.path.suffix == ".gz" else raw
        self.raw = raw
        return (lambda obj: self.f.write(_line(obj))), discard

    def __exit__(self, kind: object, *_: object) -> None:
        if self.path is None:
            return
        self.f.close()
        self.raw.close()
        if self.journal is not None:
            if kind is None and self.keep:
                _publish_journal(self.journal, self.path)
            elif kind is None:  # finished, not shattered: nothing to resume
                self.journal.unlink(missing_ok=True)
            return
        if kind is None and self.keep:
            publish(self.tmp, self.path)
        else:
            Path(self.tmp).unlink(missing_ok=True)
