"""Output files: written atomically (all or none), checked before any work (never an input,
never a FIFO or a device), through symbolic links."""

from __future__ import annotations

import os
import re
import socket
import stat
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..errors import InputError

__all__ = [
    "check_outputs",
    "check_writable",
    "output_target",
    "publish",
    "temporary",
    "write_all_atomic",
    "write_atomic",
]


def temporary(target: Path) -> tuple[int, str]:
    """A new hidden temporary file beside ``target``, opened: ``(fd, name)``.

    Its name, ``.NAME.HOST-PID.XXXXXXXX.tmp``, says which process on which machine writes it,
    and those that a process of this machine no longer running left for the same ``target``
    (a run killed by SIGKILL cannot remove its own) are removed first: a killed run's leftover
    lasts until the next run that writes the same file.  Raises :class:`OSError`."""
    prefix = f".{target.name}.{_HOST}-"
    if os.name == "posix":  # os.kill(pid, 0) tests a pid here; on Windows it would kill
        with os.scandir(target.parent) as entries:
            for entry in entries:
                pid = entry.name[len(prefix) :].partition(".")[0]
                if entry.name.startswith(prefix) and entry.name.endswith(".tmp"):
                    if pid.isdigit() and not _running(int(pid)):
                        Path(entry.path).unlink(missing_ok=True)
    return tempfile.mkstemp(dir=target.parent, prefix=f"{prefix}{os.getpid()}.", suffix=".tmp")


_HOST = re.sub(r"[^A-Za-z0-9]", "_", socket.gethostname())[:64] or "host"
"""This machine's name as temporary files carry it (letters and digits)."""


def _running(pid: int) -> bool:
    """Whether a process ``pid`` exists on this machine (POSIX)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # e.g. another user's process
        return True
    return True


def publish(tmp: str, path: Path) -> None:
    """Give a finished temporary file the usual permissions and rename it to ``path``."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600
    os.replace(tmp, path)


def output_target(path: str | os.PathLike[str]) -> Path:
    """Where writing ``path`` puts the file: a symbolic link is followed to its target.

    Outputs are written through links (the link stays a link; its target gets the
    new content, atomically).  Raises :class:`InputError` for an empty name.
    """
    if not os.fspath(path):
        raise InputError("an output file name is empty")
    return Path(os.path.realpath(path))


def check_writable(path: str | os.PathLike[str]) -> None:
    """Raise :class:`InputError` now if ``path`` cannot be written later.

    The target (see :func:`output_target`) must be a regular file or not exist
    yet, in a writable folder: a FIFO, a device (``/dev/null``), a socket or a
    folder is refused, never replaced by a regular file.
    """
    p = Path(path)
    target = output_target(path)
    folder = target.parent
    try:
        mode = target.stat().st_mode if os.path.lexists(target) else None
    except OSError as e:
        raise InputError(f"{p}: cannot write: {e.strerror}") from None
    if mode is not None and stat.S_ISDIR(mode):
        raise InputError(f"{p}: is a directory")
    if mode is not None and not stat.S_ISREG(mode):
        raise InputError(f"{p}: not a regular file (a FIFO, device or socket is never replaced)")
    if not folder.is_dir():
        raise InputError(f"{p}: no such folder {str(p.parent or '.')!r}")
    if not os.access(folder, os.W_OK):
        raise InputError(f"{p}: folder not writable")


def check_outputs(
    outputs: Mapping[str, str | os.PathLike[str] | None],
    inputs: Sequence[str | os.PathLike[str]] = (),
) -> None:
    """Before any work: every output writable, none the same file as an input or another output.

    ``outputs`` maps an option name (``"--out"``) to its path (``None``: not asked
    for).  Sameness is by the file itself (:func:`os.path.samefile`: links and
    hard links included) and by the resolved name (for files not written yet).
    Raises :class:`InputError` (one line) for the first problem.
    """
    seen: dict[Path, str] = {}
    for option, path in outputs.items():
        if path is None:
            continue
        if not os.fspath(path):
            raise InputError(f"{option}: the file name is empty")
        check_writable(path)
        target = output_target(path)
        for name in inputs:
            if _same_file(target, name):
                raise InputError(f"{option} {path}: is the input {name}; it would be overwritten")
        if target in seen:
            raise InputError(f"{seen[target]} and {option} name the same file {path}")
        seen[target] = option


def _same_file(target: Path, other: str | os.PathLike[str]) -> bool:
    if target == Path(os.path.realpath(other)):
        return True
    try:
        return os.path.samefile(target, other)
    except OSError:  # one of them does not exist (yet)
        return False


def write_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` via a temporary file in the same folder and a rename."""
    write_all_atomic([(path, text)])


def write_all_atomic(files: Sequence[tuple[str | os.PathLike[str], str | bytes]]) -> None:
    """Write several files so that either all of them appear or none does.

    Each goes to a temporary file in its own folder first; only when every one
    is complete are they renamed into place.  A path that is a symbolic link is
    written through (its target is replaced; the link stays).  ``str`` contents
    are written as UTF-8 text, ``bytes`` as they are.
    """
    done: list[tuple[str, Path]] = []
    p = Path(".")
    try:
        for path, text in files:
            p = output_target(path)  # through a symbolic link, to its target
            fd, tmp = temporary(p)
            done.append((tmp, p))
            if isinstance(text, bytes):
                with os.fdopen(fd, "wb") as fb:
                    fb.write(text)
            else:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    f.write(text)
        for tmp, p in done:
            publish(tmp, p)
    except OSError as e:
        raise InputError(f"{p}: cannot write: {e.strerror}") from None
    finally:
        for tmp, _ in done:
            Path(tmp).unlink(missing_ok=True)
