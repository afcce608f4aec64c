"""Re-checking a shattering certificate from scratch, with the certificate alone (the
constructions are not used): every field, every record in its place, every net certified."""

from __future__ import annotations

import math
import os
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import closing
from typing import Any

from ..arith import json_float, shown
from ..errors import InputError
from ..fileformat import parse_json
from .nets import _margins, _swapped
from .points import labels_of
from .records import (
    _SUMMARY_KEYS,
    Progress,
    ShatterSummary,
    _decode,
    _Header,
    _lines,
    _read_header,
    _record_problem,
)
from .workers import CHUNK, _imap


def _verify_chunk(args: tuple[_Header, list[dict]]) -> list[tuple[int, bool, float, str]]:
    """(labeling, ok, min certified margin, reason) for both labelings of each record."""
    header, records = args
    X, m = header.points, header.m
    out = []
    for rec in records:
        k = rec["labeling"]
        comp = rec["complement"]
        try:
            net = _decode(rec, header)
        except InputError as e:
            out += [(j, False, -math.inf, f"malformed net: {e}") for j in (k, comp["labeling"])]
            continue
        for j, n, claimed in (
            (k, net, rec["margins"]),
            (comp["labeling"], _swapped(net), comp["margins"]),
        ):
            try:
                margins = _margins(n, X, labels_of(j, m))
            except (ArithmeticError, ValueError) as e:  # e.g. a zero division in a forged net
                out.append((j, False, -math.inf, f"cannot be evaluated ({shown(str(e), 60)})"))
                continue
            if not all(math.isfinite(x) and x >= 0 for x in margins):
                out.append((j, False, -math.inf, "not certified"))
            elif any(c > x for c, x in zip(claimed, margins, strict=True)):
                out.append((j, False, min(margins), "a claimed margin exceeds the certified bound"))
            else:
                out.append((j, True, min(margins), ""))
    return out


BATCH_BYTES = 8 << 20
"""Bytes of lines one task of :func:`verify_shatter` takes, at most (unless one line is more)."""


def _batches(lines: Iterator[tuple[int, bytes]], size: int) -> Iterator[list[tuple[int, bytes]]]:
    """The lines after the header, ``size`` (or :data:`BATCH_BYTES`) at a time."""
    batch: list[tuple[int, bytes]] = []
    held = 0
    for n, line in lines:
        batch.append((n, line))
        held += len(line)
        if len(batch) >= size or held >= BATCH_BYTES:
            yield batch
            batch, held = [], 0
    if batch:
        yield batch


def _read_chunk(shared: tuple[_Header, str], lines: list[tuple[int, bytes]]) -> list[tuple]:
    """In a worker: each line parsed and checked, and its record's two labelings certified
    (:func:`_verify_chunk`): ``("summary", n, value)``, ``("problem", n, what)`` or
    ``("record", n, labeling, smallest claimed margin, folds, results)``; whether a record is
    in its place is the caller's to decide, in order."""
    header, path = shared
    out: list[tuple] = []
    for n, line in lines:
        obj = parse_json(line, f"{path}: line {n}")
        if isinstance(obj, dict) and "summary" in obj:
            out.append(("summary", n, obj))
        elif (problem := _record_problem(obj, header)) is not None:
            out.append(("problem", n, problem))
        else:
            claimed = min(*obj["margins"], *obj["complement"]["margins"])
            results = _verify_chunk((header, [obj]))
            out.append(("record", n, obj["labeling"], claimed, str(obj["folds"]), results))
    return out


def verify_shatter(
    path: str | os.PathLike[str],
    *,
    workers: int | None = None,
    progress: Progress | None = None,
    scheduler: str | None = None,
) -> tuple[ShatterSummary, list[str]]:
    """Re-check a shattering certificate; returns the summary and the problems found.

    Nothing the file claims is passed on unchecked.  The header (points,
    dimension, ``eps``, depth, classes, the number of labelings) must be
    well-formed and consistent; raises :class:`InputError` otherwise, and for an
    unreadable, corrupt or oversized file (``MAX_POINTS``,
    :data:`~lncapacity.shatter.records.MAX_LINE_BYTES`).  Every record must be in its place
    (labelings ``0, 2, 4, ...`` once each, in order, each with its complement) with ``m``
    finite claimed margins >= 0 per labeling; its net must have the claimed
    architecture (width 3, exactly ``depth`` layers, the header's inputs, ``eps``
    and classes); both labelings are certified from scratch and no claimed
    margin may exceed the certified bound.  The summary line must restate
    exactly what the records establish (counts, ``all_certified``, the smallest
    claimed margin, the histogram of folds, no failures).  The returned summary
    is the re-derived one.  ``scheduler``: the chunks on a Dask cluster, as in
    :func:`~lncapacity.shatter.run.shatter`.

    Examples
    --------
    >>> import os, tempfile
    >>> from lncapacity.shatter import shatter, verify_shatter
    >>> path = os.path.join(tempfile.mkdtemp(), "shatter-L1.jsonl")
    >>> _ = shatter(None, 1, out=path, workers=1)
    >>> summary, problems = verify_shatter(path, workers=1)
    >>> summary.labelings, summary.all_certified, problems
    (8, True, [])
    """
    lines = _lines(path, parse=False)
    try:
        n, first = next(lines)
    except StopIteration:
        raise InputError(f"{path}: empty file") from None
    header = _read_header(parse_json(first, f"{path}: line {n}"), path)
    m, depth = header.m, header.depth
    summary = ShatterSummary(m, depth, 1 << m)
    problems: list[str] = []
    claimed_summary: Any = None
    claims: dict[str, Any] = {"min": math.inf, "folds": Counter(), "placed": 0}
    placed, expected = 0, 0  # records accepted; the labeling the next record should have
    refused: list[str] = []  # labelings not certified, or claiming too much
    start = time.perf_counter()
    pairs = 1 << (m - 1)
    pool = workers or os.cpu_count() or 1
    # chunks small enough that every worker gets several (the records are independent)
    size = max(1, min(CHUNK, pairs // (8 * pool)))
    with (
        _imap(scheduler, pool) as imap,
        closing(
            imap(
                _read_chunk,
                _batches(lines, size),
                min(pool, -(-pairs // size)),
                (header, str(path)),
            )
        ) as chunks,
    ):
        for entries in chunks:
            for kind, n, *what in entries:
                if claimed_summary is not None:
                    problems.append(f"line {n}: content after the summary")
                elif kind == "summary":
                    claimed_summary = what[0]
                elif kind == "problem":
                    problems.append(f"line {n}: {what[0]}")
                elif what[0] < expected:
                    problems.append(f"line {n}: labeling {what[0]} repeated or out of order")
                else:
                    labeling, claimed, folds, results = what
                    if labeling > expected:
                        problems.append(f"line {n}: labeling {labeling}, {expected} expected")
                    expected = labeling + 2
                    placed += 1
                    claims["placed"] = placed
                    claims["min"] = min(claims["min"], claimed)
                    claims["folds"][folds] += 2
                    for k, ok, margin, reason in results:
                        if ok:
                            summary.certified += 1
                            summary.min_margin = min(summary.min_margin, margin)
                        else:
                            summary.failures.append(k)
                            refused.append(f"labeling {k}: {reason}")
            if progress:
                progress(summary.certified + len(summary.failures), summary.labelings)
    problems += refused  # the file's form first, then the labelings it fails to establish
    summary.seconds = time.perf_counter() - start
    if missing := 2 * (pairs - placed):
        problems.append(f"{missing} labelings missing")
    if claimed_summary is None:
        problems.append("no summary line (the file is truncated)")
    else:
        problems += _summary_problems(claimed_summary, summary, claims)
    return summary, problems


def _summary_problems(obj: Any, derived: ShatterSummary, claims: dict) -> list[str]:
    """The summary line must restate exactly what the records claim (which are re-certified)."""
    s = obj.get("summary") if set(obj) == {"summary"} else None
    if not isinstance(s, dict) or set(s) != _SUMMARY_KEYS:
        return [f"the summary line must have exactly the fields {sorted(_SUMMARY_KEYS)}"]
    claimed = 2 * claims["placed"]  # labelings the records claim (each is re-certified)
    expected = {
        "points": derived.points,
        "depth": derived.depth,
        "labelings": derived.labelings,
        "certified": claimed,
        "all_certified": claimed == derived.labelings,
        "min_margin": json_float(claims["min"]),
        "folds_histogram": dict(claims["folds"]),
        "failures": [],
    }
    wrong = [
        key
        for key, value in expected.items()
        if s[key] != value or isinstance(s[key], bool) != isinstance(value, bool)  # 1 == True
    ]
    if wrong:
        return [
            f"the summary's {', '.join(wrong)} disagree{'s' * (len(wrong) == 1)} with the records"
        ]
    return []
