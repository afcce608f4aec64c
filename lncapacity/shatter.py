"""Certified shattering: every labeling of ``L + 2`` points by a width-3 LN-Net of depth ``L``.

Seed 000 (Theorem): a width-3 LN-Net with ``L`` LayerNorm layers has VC
dimension at least ``L + 2``.  :func:`shatter` makes that concrete for one point
set: for each of the ``2^(L+2)`` labelings it builds a net with exactly ``L``
layers by the theorem's own construction (``method="pma"``, also the fastest on
so few points; shorter constructions padded with injective layers) and certifies it
with the rigorous certificate.  A labeling and its complement share one
construction with the readout rows swapped; both are certified.

The certificate is a JSON Lines file, written as it is produced (memory does
not grow with the number of labelings) and renamed into place at the end:

* line 1, the header: ``{"format": "lnnet-shatter/1", "points": [[...]],
  "input_dim", "eps", "depth", "labelings", "classes": [0, 1]}``; numbers are
  ``lnnet/1`` rational strings;
* one line per pair of complementary labelings: ``{"labeling": k, "folds":
  ..., "net": <gadget record>, "margins": [...], "complement": {"labeling":
  k', "margins": [...]}}``.  Labeling ``k`` gives point ``i`` the label
  ``(k >> i) & 1``; the complement's net is the same record with the two
  readout rows swapped; margins are certified lower bounds, rounded down;
* the last line: ``{"summary": {...}}``.

:func:`verify_shatter` re-checks such a file from scratch with the certificate
alone (the constructions are not used): it decodes each net, checks its depth,
certifies both labelings, rejects any claimed margin above the certified
bound, and checks that every labeling appears exactly once.
"""

from __future__ import annotations

import gzip
import io
import json
import math
import os
import random
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flint import fmpq

from . import __version__
from .arith import exact, format_rational, json_float, parse_rational
from .certify import certify
from .data import PointSet
from .errors import InputError
from .fileformat import from_dict, from_gadget, publish, to_dict, to_gadget
from .model import Affine, LNNet
from .parallel import imap

FORMAT = "lnnet-shatter/1"
CLASSES = (0, 1)
CHUNK = 64

Progress = Callable[[int, int], None]


@dataclass
class ShatterSummary:
    """What a shattering run (or its verification) established."""

    points: int
    depth: int
    labelings: int
    certified: int = 0
    min_margin: float = math.inf
    folds: Counter[int] = field(default_factory=Counter)
    """Histogram of the depth each construction needed before padding."""
    failures: list[int] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def all_certified(self) -> bool:
        return self.certified == self.labelings and not self.failures

    def to_dict(self) -> dict[str, Any]:
        return {
            "points": self.points,
            "depth": self.depth,
            "labelings": self.labelings,
            "certified": self.certified,
            "all_certified": self.all_certified,
            "min_margin": json_float(self.min_margin),
            "folds_histogram": {str(k): v for k, v in sorted(self.folds.items(), key=str)},
            "failures": self.failures[:20],
        }


def default_points(depth: int) -> list[tuple[fmpq, ...]]:
    """``L + 2`` equally spaced points on a line: ``0, 1, ..., L + 1``."""
    return [(fmpq(k),) for k in range(depth + 2)]


def random_points(n: int, dim: int, seed: int) -> list[tuple[fmpq, ...]]:
    """``n`` distinct random points, coordinates multiples of 1/16 in ``[-5/2, 5/2]``."""
    if n < 1 or dim < 1:
        raise InputError("--random and --dim must be positive")
    rng, pts = random.Random(seed), []
    while len(pts) < n:
        p = tuple(fmpq(rng.randint(-40, 40), 16) for _ in range(dim))
        if p not in pts:
            pts.append(p)
    return pts


def labels_of(k: int, m: int) -> list[int]:
    """Labeling number ``k``: point ``i`` has label ``(k >> i) & 1``."""
    return [(k >> i) & 1 for i in range(m)]


def _point_set(X: Sequence[tuple[fmpq, ...]], y: Sequence[int]) -> PointSet:
    return PointSet(tuple(X), tuple(y), tuple((i,) for i in range(len(X))), "row", "points")


def _swapped(net: LNNet[fmpq]) -> LNNet[fmpq]:
    """The same net with the two readout rows exchanged: every prediction flips."""
    r = net.readout
    return LNNet(
        net.input_dim,
        net.width,
        net.eps,
        net.layers,
        Affine(tuple(reversed(r.W)), tuple(reversed(r.b))),
        net.classes,
        net.meta,
    )


def _margins(net: LNNet[fmpq], X: Sequence[tuple[fmpq, ...]], y: Sequence[int]) -> list[float]:
    """Certified margin lower bounds per point; ``-inf`` where a point is not certified."""
    cert = certify(net, _point_set(X, y), workers=1)
    return [p.margin if p.certified else -math.inf for p in cert.points]


def _shatter_chunk(
    args: tuple[list[tuple[fmpq, ...]], int, fmpq, list[int], dict | None],
) -> list[dict]:
    from .construct import build  # workers build; the verifier never imports this

    X, depth, eps, ks, search = args
    m, mask = len(X), (1 << len(X)) - 1
    out = []
    for k in ks:
        y = labels_of(k, m)
        try:
            net = build(_point_set(X, y), eps=eps, depth=depth, method="pma", classes=CLASSES)
            record: dict[str, Any] = {"folds": net.meta["folds"], "net": to_gadget(net)}
        except InputError as e:
            net = None
            if search is not None:
                from .search import find_net

                net = find_net(_point_set(X, y), depth, eps, CLASSES, seed=k, **search)
            if net is None:
                out.append({"labeling": k, "error": str(e) if search is None else "none found"})
                continue
            record = {"folds": "search", "lnnet": to_dict(net)}
        comp = k ^ mask
        out.append(
            {
                "labeling": k,
                **record,
                "margins": [json_float(x) for x in _margins(net, X, y)],
                "complement": {
                    "labeling": comp,
                    "margins": [
                        json_float(x) for x in _margins(_swapped(net), X, labels_of(comp, m))
                    ],
                },
            }
        )
    return out


def shatter(
    X: Sequence[Sequence[object]] | None,
    depth: int,
    eps: object = 0,
    *,
    out: str | os.PathLike[str] | None = None,
    workers: int | None = None,
    progress: Progress | None = None,
    search: dict[str, int] | None = None,
) -> ShatterSummary:
    """Build and certify a depth-``depth`` net for every labeling of ``X`` (``depth + 2`` points).

    ``X`` defaults to :func:`default_points`.  Writes the shattering
    certificate to ``out`` (if given, and only if every labeling is certified).
    Raises :class:`InputError` for bad parameters, or naming the first labeling
    that cannot be realised.  With ``search`` (keyword arguments of
    :func:`lncapacity.search.find_net`, e.g. ``{}``) ``X`` may have more points:
    labelings the construction cannot do at this depth are searched for
    numerically and certified, and the ones not found are listed in
    ``summary.failures`` instead of raising.
    """
    if not isinstance(depth, int) or depth < 0:
        raise InputError(f"depth must be a non-negative integer, got {depth!r}")
    points = default_points(depth) if X is None else [tuple(exact(v) for v in x) for x in X]
    m = len(points)
    if m != depth + 2 and (search is None or m < depth + 2):
        want = f"at least {depth + 2}" if search is not None else str(depth + 2)
        raise InputError(f"shattering at depth {depth} takes {want} points, got {m}")
    if len(set(points)) != m:
        raise InputError("the points must be distinct")
    eps_q = exact(eps)
    if eps_q < 0:
        raise InputError(f"eps must be >= 0, got {eps}")
    summary = ShatterSummary(m, depth, 1 << m)
    header = {
        "format": FORMAT,
        "generator": f"lncapacity {__version__}",
        "points": [[format_rational(v) for v in x] for x in points],
        "input_dim": len(points[0]),
        "eps": format_rational(eps_q),
        "depth": depth,
        "labelings": 1 << m,
        "classes": list(CLASSES),
    }
    canonical = range(0, 1 << m, 2)  # point 0 labelled 0; the complement has it 1
    tasks = (
        (points, depth, eps_q, list(canonical[i : i + CHUNK]), search)
        for i in range(0, len(canonical), CHUNK)
    )
    start = time.perf_counter()
    with _writer(out) as (write, discard):
        write(header)
        for records in imap(_shatter_chunk, tasks, workers or os.cpu_count() or 1):
            for rec in records:
                if "error" in rec:
                    if search is not None:
                        summary.failures += [rec["labeling"], rec["labeling"] ^ ((1 << m) - 1)]
                        continue
                    bits = "".join(map(str, labels_of(rec["labeling"], m)))
                    raise InputError(f"labeling {bits} (point i has digit i): {rec['error']}")
                summary.folds[rec["folds"]] += 2
                for k, margins in (
                    (rec["labeling"], rec["margins"]),
                    (rec["complement"]["labeling"], rec["complement"]["margins"]),
                ):
                    _tally(summary, k, margins)
                write(rec)
            if progress:
                progress(summary.certified + len(summary.failures), summary.labelings)
        summary.seconds = time.perf_counter() - start
        write({"summary": summary.to_dict()})
        if not summary.all_certified:
            discard()
    return summary


def _tally(summary: ShatterSummary, k: int, margins: Sequence[float | None]) -> None:
    if all(x is not None and x > 0 for x in margins):
        summary.certified += 1
        summary.min_margin = min(summary.min_margin, *margins)  # type: ignore[arg-type]
    else:
        summary.failures.append(k)


class _writer:
    """JSON Lines to a temporary file, renamed into place on success (gzip for ``.gz``)."""

    def __init__(self, path: str | os.PathLike[str] | None) -> None:
        self.path = None if path is None else Path(path)
        self.keep = True

    def __enter__(self) -> tuple[Callable[[Any], None], Callable[[], None]]:
        def discard() -> None:
            self.keep = False

        if self.path is None:
            return (lambda obj: None), discard
        try:
            fd, self.tmp = tempfile.mkstemp(
                dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp"
            )
        except OSError as e:
            raise InputError(f"{self.path}: cannot write: {e.strerror}") from None
        raw = os.fdopen(fd, "wb")
        self.f = gzip.GzipFile(fileobj=raw, mode="wb") if self.path.suffix == ".gz" else raw
        self.raw = raw
        return (
            lambda obj: self.f.write((json.dumps(obj, separators=(",", ":")) + "\n").encode())
        ), discard

    def __exit__(self, kind: object, *_: object) -> None:
        if self.path is None:
            return
        self.f.close()
        self.raw.close()
        if kind is None and self.keep:
            publish(self.tmp, self.path)
        else:
            Path(self.tmp).unlink(missing_ok=True)


def _lines(path: str | os.PathLike[str]) -> Iterator[tuple[int, dict]]:
    p = Path(path)
    try:
        raw = open(p, "rb")
    except OSError as e:
        raise InputError(f"{p}: cannot read: {e.strerror}") from None
    with raw:
        f = io.TextIOWrapper(gzip.GzipFile(fileobj=raw) if p.suffix == ".gz" else raw, "utf-8")
        try:
            for n, line in enumerate(f, 1):
                try:
                    yield n, json.loads(line)
                except json.JSONDecodeError as e:
                    raise InputError(f"{p}: line {n}: not JSON ({e.msg})") from None
        except (OSError, UnicodeDecodeError, EOFError) as e:
            raise InputError(f"{p}: unreadable: {e}") from None


def _verify_chunk(args: tuple[dict, list[dict]]) -> list[tuple[int, bool, float, str]]:
    """(labeling, ok, min margin, reason) for both labelings of each record."""
    header, records = args
    X = [tuple(parse_rational(v) for v in x) for x in header["points"]]
    m, depth = len(X), header["depth"]
    eps = parse_rational(header["eps"])
    out = []
    for rec in records:
        try:
            if "lnnet" in rec:
                net = from_dict(rec["lnnet"], f"labeling {rec['labeling']}")
                if net.eps != eps or net.classes != CLASSES or net.input_dim != len(X[0]):
                    raise InputError("the net does not match the header")
            else:
                net = from_gadget(rec["net"], input_dim=len(X[0]), eps=eps, classes=CLASSES)
            pairs = [(rec["labeling"], net, rec["margins"])]
            comp = rec["complement"]
            pairs.append((comp["labeling"], _swapped(net), comp["margins"]))
        except (KeyError, TypeError, InputError) as e:
            out.append(
                (
                    rec.get("labeling", -1) if isinstance(rec, dict) else -1,
                    False,
                    -math.inf,
                    f"malformed record: {e}",
                )
            )
            continue
        for k, n, claimed in pairs:
            if not isinstance(k, int) or not 0 <= k < 1 << m:
                out.append((-1, False, -math.inf, f"labeling {k!r} out of range"))
                continue
            if n.depth != depth:
                out.append((k, False, -math.inf, f"depth {n.depth}, not {depth}"))
                continue
            margins = _margins(n, X, labels_of(k, m))
            if not all(math.isfinite(x) and x > 0 for x in margins):
                out.append((k, False, -math.inf, "not certified"))
            elif len(claimed) != m or any(
                not isinstance(c, (int, float)) or c > x
                for c, x in zip(claimed, margins, strict=False)
            ):
                out.append((k, False, min(margins), "a claimed margin exceeds the certified bound"))
            else:
                out.append((k, True, min(margins), ""))
    return out


def verify_shatter(
    path: str | os.PathLike[str],
    *,
    workers: int | None = None,
    progress: Progress | None = None,
) -> tuple[ShatterSummary, list[str]]:
    """Re-check a shattering certificate; returns the summary and the problems found."""
    lines = _lines(path)
    try:
        _, header = next(lines)
    except StopIteration:
        raise InputError(f"{path}: empty file") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise InputError(f"{path}: not an {FORMAT} certificate")
    try:
        m, depth = len(header["points"]), int(header["depth"])
        if m < depth + 2 or header["labelings"] != 1 << m:
            raise InputError(f"{path}: header: {m} points at depth {depth}")
    except (KeyError, TypeError, ValueError) as e:
        raise InputError(f"{path}: header: {e}") from None
    summary = ShatterSummary(m, depth, 1 << m)
    seen = bytearray(1 << m)
    problems: list[str] = []
    claimed_summary: dict | None = None

    def batches() -> Iterator[tuple[dict, list[dict]]]:
        nonlocal claimed_summary
        batch: list[dict] = []
        for n, obj in lines:
            if claimed_summary is not None:
                problems.append(f"line {n}: content after the summary")
            elif isinstance(obj, dict) and "summary" in obj:
                claimed_summary = obj["summary"]
            else:
                batch.append(obj)
                if len(batch) == CHUNK:
                    yield header, batch
                    batch = []
        if batch:
            yield header, batch

    start = time.perf_counter()
    for results in imap(_verify_chunk, batches(), workers or os.cpu_count() or 1):
        for k, ok, margin, reason in results:
            if k >= 0:
                if seen[k]:
                    problems.append(f"labeling {k} appears twice")
                seen[k] = 1
            if ok:
                summary.certified += 1
                summary.min_margin = min(summary.min_margin, margin)
            else:
                summary.failures.append(k)
                problems.append(f"labeling {k}: {reason}")
        if progress:
            progress(summary.certified + len(summary.failures), summary.labelings)
    summary.seconds = time.perf_counter() - start
    if missing := seen.count(0):
        problems.append(f"{missing} labelings missing")
    if claimed_summary is None:
        problems.append("no summary line (the file is truncated)")
    elif claimed_summary.get("certified") != summary.certified:
        problems.append("the summary's count disagrees with the records")
    return summary, problems
