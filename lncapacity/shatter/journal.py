"""The certificate as it is written: JSON Lines to a temporary file renamed into place, or a
journal kept when a run is interrupted, and resuming from the journal's verified prefix."""

from __future__ import annotations

import fcntl
import gzip
import itertools
import json
import os
import stat
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any, BinaryIO

from ..errors import InputError
from ..fileformat import output_target, publish, temporary
from .records import (
    MAX_LINE_BYTES,
    ShatterSummary,
    _Header,
    _read_header,
    _record_problem,
    _tally,
)
from .verify import _verify_chunk
from .workers import CHUNK


def _journal_path(out: str | os.PathLike[str]) -> Path:
    target = output_target(out)
    return target.with_name(target.name + ".part")


@contextmanager
def _locked(journal: Path | None) -> Iterator[None]:
    """Hold ``journal``'s lock (an advisory ``flock`` on ``journal + ".lock"``, which holds
    the holder's pid) while the block runs: one run at a time resumes, writes and publishes a
    journal.  :class:`InputError` naming the holder when another run has it.  ``None``: no
    journal, nothing to lock."""
    if journal is None:
        yield
        return
    path = journal.with_name(journal.name + ".lock")
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    for _ in range(8):  # the holder may remove the file between our open and our lock
        try:
            fd = os.open(path, flags, 0o666)
        except OSError as e:
            raise InputError(f"{path}: cannot lock the journal: {e.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "?"
            os.close(fd)
            raise InputError(
                f"{journal}: another run of shatter --resume (pid {pid}) is writing this "
                "journal: wait for it to finish, or stop it"
            ) from None
        if _same_file(fd, path):
            break
        os.close(fd)  # locked a file removed meanwhile: lock the one there now
    else:  # pragma: no cover - eight runs finishing in turn while we tried
        raise InputError(f"{journal}: its lock keeps changing hands: try again")
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        if _same_file(fd, path):
            path.unlink(missing_ok=True)
        os.close(fd)


def _same_file(fd: int, path: Path) -> bool:
    try:
        a, b = os.fstat(fd), os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _open_journal(journal: Path) -> BinaryIO | None:
    """The journal, open for reading and cutting; ``None`` if there is none.  A journal is a
    regular file: anything else (a folder, a device such as ``/dev/zero``, a pipe, a link to
    nothing) is refused with one line, never read."""
    refused = f"{journal}: not a regular file, so not a journal: remove it or choose another --out"
    try:  # non-blocking: opening a pipe must not wait for a writer
        fd = os.open(journal, os.O_RDWR | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        if os.path.lexists(journal):  # a link to nothing
            raise InputError(refused) from None
        return None
    except IsADirectoryError:
        raise InputError(refused) from None
    except OSError as e:
        raise InputError(f"{journal}: cannot open the journal: {e.strerror}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise InputError(refused)
    os.set_blocking(fd, True)
    return os.fdopen(fd, "r+b")


def _resume(
    journal: Path,
    header: dict,
    summary: ShatterSummary,
    workers: int,
    imap: Callable,
    note: Callable[[str], None] | None = None,
) -> int:
    """Keep the longest prefix of ``journal``'s records that verifies (same header, records
    in order, each re-certified as :func:`~lncapacity.shatter.verify.verify_shatter` does),
    tally them into ``summary``, cut the journal after them, and return the next labeling to
    compute (0: start afresh).

    The journal is read as a stream, a line of at most
    :data:`~lncapacity.shatter.records.MAX_LINE_BYTES` at a time, and at most the records a
    certificate of ``header`` has.  An incomplete header (an empty journal, or a part of this
    run's header line: what a run stopped at its start leaves) means starting afresh, said
    in one line to ``note``; any other first line is another run's."""
    f = _open_journal(journal)
    if f is None:
        return 0
    with f:
        ours = _line(header)
        first = f.readline(MAX_LINE_BYTES + 1)
        if not first.endswith(b"\n") and ours.startswith(first):
            if note is not None:
                note(
                    f"{journal}: an incomplete header (a run stopped at its start): starting afresh"
                )
            f.truncate(0)
            return 0
        try:
            obj = json.loads(first) if first.endswith(b"\n") else None
        except ValueError:
            obj = None
        if not isinstance(obj, dict) or _unversioned(obj) != _unversioned(header):
            raise InputError(
                f"{journal}: a journal of another run (other points, depth, eps or groups): "
                "remove it or choose another --out"
            )
        hdr = _read_header(obj, journal)
        pending: deque[list[tuple[dict, int]]] = deque()  # batches sent, with their lines' bytes

        def batches() -> Iterator[tuple[_Header, list[dict]]]:
            batch: list[tuple[dict, int]] = []
            for n in itertools.count():
                line = f.readline(MAX_LINE_BYTES + 1)
                if not line.endswith(b"\n"):
                    break  # the end, or a line cut by the interruption
                try:
                    rec = json.loads(line)
                except ValueError:
                    break
                if _record_problem(rec, hdr) is not None or rec["labeling"] != 2 * n:
                    break
                batch.append((rec, len(line)))
                if len(batch) == CHUNK:
                    pending.append(batch)
                    yield hdr, [r for r, _ in batch]
                    batch = []
            if batch:
                pending.append(batch)
                yield hdr, [r for r, _ in batch]

        good, offset = 0, len(first)
        pool = min(workers, -(-(1 << (hdr.m - 1)) // CHUNK))
        with closing(imap(_verify_chunk, batches(), pool)) as results:
            for result in results:
                for j, (rec, size) in enumerate(pending.popleft()):
                    if not (result[2 * j][1] and result[2 * j + 1][1]):
                        break
                    good, offset = good + 1, offset + size
                    summary.folds[rec["folds"]] += 2
                    _tally(summary, rec["labeling"], rec["margins"])
                    _tally(summary, rec["complement"]["labeling"], rec["complement"]["margins"])
                else:
                    continue
                break
        f.truncate(offset if good else 0)  # nothing kept: afresh
    return 2 * good


def _unversioned(header: dict) -> dict:
    return {k: v for k, v in header.items() if k != "generator"}


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
