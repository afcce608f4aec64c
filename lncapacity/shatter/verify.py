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
    lines = _lines(path)
    try:
        _, first = next(lines)
    except StopIteration:
        raise InputError(f"{path}: empty file") from None
    header = _read_header(first, path)
    m, depth = header.m, header.depth
    summary = ShatterSummary(m, depth, 1 << m)
    problems: list[str] = []
    claimed_summary: Any = None
    claims: dict[str, Any] = {"min": math.inf, "folds": Counter(), "placed": 0}
    placed, expected = 0, 0  # records accepted; the labeling the next record should have

    def batches() -> Iterator[tuple[_Header, list[dict]]]:
        nonlocal claimed_summary, placed, expected
        batch: list[dict] = []
        for n, obj in lines:
            if claimed_summary is not None:
                problems.append(f"line {n}: content after the summary")
            elif isinstance(obj, dict) and "summary" in obj:
                claimed_summary = obj
            elif (problem := _record_problem(obj, header)) is not None:
                problems.append(f"line {n}: {problem}")
            elif obj["labeling"] < expected:
                problems.append(f"line {n}: labeling {obj['labeling']} repeated or out of order")
            else:
                if obj["labeling"] > expected:
                    problems.append(f"line {n}: labeling {obj['labeling']}, {expected} expected")
                expected = obj["labeling"] + 2
                placed += 1
                claims["placed"] = placed
                claims["min"] = min(claims["min"], *obj["margins"], *obj["complement"]["margins"])
                claims["folds"][str(obj["folds"])] += 2
                batch.append(obj)
                if len(batch) == CHUNK:
                    yield header, batch
                    batch = []
        if batch:
            yield header, batch

    start = time.perf_counter()
    pairs = 1 << (m - 1)
    pool = workers or os.cpu_count() or 1
    imap = _imap(scheduler)
    with closing(imap(_verify_chunk, batches(), min(pool, -(-pairs // CHUNK)))) as chunks:
        for results in chunks:
            for k, ok, margin, reason in results:
                if ok:
                    summary.certified += 1
                    summary.min_margin = min(summary.min_margin, margin)
                else:
                    summary.failures.append(k)
                    problems.append(f"labeling {k}: {reason}")
            if progress:
                progress(summary.certified + len(summary.failures), summary.labelings)
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
