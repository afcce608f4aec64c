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
  ``lnnet/1`` rational strings; LN-G certificates (:func:`bump_net`) add ``"groups": g``
  and carry every net as an ``lnnet`` record with ``"folds": "bumps"``;
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
import itertools
import json
import math
import os
import random
import tempfile
import time
import zlib
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from flint import fmpq

from .arith import epsilon, exact, format_rational, json_float, parse_rational, shown
from .certify import certify
from .data import PointSet
from .errors import InputError
from .fileformat import (
    MAX_INPUT_DIM,
    from_dict,
    from_gadget,
    output_target,
    parse_json,
    publish,
    to_dict,
    to_gadget,
)
from .model import Affine, LNNet, Norm
from .parallel import imap
from .version import __version__

FORMAT = "lnnet-shatter/1"
CLASSES = (0, 1)
CHUNK = 64
MAX_POINTS = 24
MAX_GROUPS = 1 << 20
"""Most groups of 3 an LN-G shattering certificate's header may claim."""
MAX_SHATTER_GROUPS = 64
"""Most groups :func:`shatter` builds (``2g + 1 <= 24`` points need ``g <= 11``; a net of
``g`` groups per layer has ``(3g)^2`` weights in each later layer)."""
"""Most points :func:`shatter` and :func:`verify_shatter` take: ``2^24`` labelings (the file has
``2^23 + 2`` lines).  A header claiming more is refused before anything is allocated."""

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
            "folds_histogram": {str(k): v for k, v in sorted(self.folds.items(), key=fold_order)},
            "failures": self.failures[:20],
        }


def fold_order(item: tuple[int | str, int]) -> tuple[int, int, str]:
    """Sort key of a histogram entry of folds: by number (``2`` before ``10``), ``"search"`` last.

    Keys may be ints or their strings (the file's keys are strings); a file written in text
    order (``0, 1, 10, 2``) still verifies, since the summary is compared as a dict.
    """
    k = item[0]
    if isinstance(k, int) or (isinstance(k, str) and k.isdigit()):
        return (0, int(k), "")
    return (1, 0, str(k))


def default_points(depth: int) -> list[tuple[fmpq, ...]]:
    """``L + 2`` equally spaced points on a line: ``0, 1, ..., L + 1``."""
    return [(fmpq(k),) for k in range(depth + 2)]


def random_points(n: int, dim: int, seed: int) -> list[tuple[fmpq, ...]]:
    """``n`` distinct random points, coordinates multiples of 1/16 in ``[-5/2, 5/2]``."""
    if n < 1 or dim < 1:
        raise InputError("--random and --dim must be positive")
    if n > MAX_POINTS:
        raise InputError(f"--random {n}: beyond the limit of {MAX_POINTS} points (2^{n} labelings)")
    if dim < 2 and n > 81:  # 81 multiples of 1/16 in [-5/2, 5/2]
        raise InputError(f"--random {n} --dim {dim}: only 81 distinct points exist")
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
    """The same net with the two readout rows exchanged: every prediction flips.

    Only the readout's rows differ; every other part of the net (LayerNorm gains and biases,
    widths, algebraic weights, metadata) is kept, so the complement is certified on the net the
    record describes.
    """
    r = net.readout
    # replace, not a field-by-field rebuild: a part added to LNNet later is carried over too
    return replace(net, readout=replace(r, W=tuple(reversed(r.W)), b=tuple(reversed(r.b))))


def _margins(net: LNNet[fmpq], X: Sequence[tuple[fmpq, ...]], y: Sequence[int]) -> list[float]:
    """Certified margin lower bounds per point; ``-inf`` where a point is not certified."""
    cert = certify(net, _point_set(X, y), workers=1)
    return [p.margin if p.certified else -math.inf for p in cert.points]


BUMP_THRESHOLD = fmpq(2)
"""The readout's other row in an LN-G bump net: a bump reads at least ``3 sqrt(6) / 2 > 3.67``
at its own point, the tails sum to at most ``3 sqrt(6) / 8 < 0.92`` (proofs/ln_g_vc.md)."""


def bump_net(
    X: Sequence[tuple[fmpq, ...]], y: Sequence[int], groups: int, eps: fmpq, depth: int = 1
) -> LNNet[fmpq]:
    """A depth-``depth`` LN-G net with exactly ``groups`` groups of 3 per layer labelling ``X``
    by ``y`` (0/1), when one class has at most ``groups`` points (proofs/ln_g_vc.md, Theorems
    1 and 2).

    Project to ``t = read . x`` (distinct values); the minority class's points ``t_j`` get one
    group each, fed ``S ((t - t_j) u + beta v)``, whose LayerNorm read along ``v = (1, 1, -2)``
    is the bump ``3 sqrt(6) beta / sqrt((t - t_j)^2 + b^2)``; that class's row sums the bumps,
    the other row is the constant :data:`BUMP_THRESHOLD`.  Unused groups are read by nothing.
    Layers 2 to ``depth`` feed each group its own output times ``S'`` (``S'^2 >= 16 eps``): the
    direction is kept and every scale stays within ``[sqrt(3)/2, 2/sqrt(3)]``.  Raises
    :class:`InputError` when both classes have more than ``groups`` points.
    """
    from .construct.groups import GROUP, Steps, steps_layer

    ones = [i for i, label in enumerate(y) if label == 1]
    zeros = [i for i, label in enumerate(y) if label != 1]
    bumped, cls = (ones, 1) if len(ones) <= len(zeros) else (zeros, 0)
    if len(bumped) > groups:
        raise InputError(f"both classes have more than {groups} points (one bump per point)")
    d = len(X[0])
    read = _separating(X)
    t = [sum((r * v for r, v in zip(read, x, strict=True)), fmpq(0)) for x in X]
    ts = sorted(t)
    delta = min(b - a for a, b in itertools.pairwise(ts)) if len(ts) > 1 else fmpq(1)
    beta = fmpq(1)
    while 8 * groups * beta > delta:  # beta <= delta / (8 g), a power of two
        beta /= 2
    S = fmpq(1)
    while S * delta < 1 or 2 * (S * beta) ** 2 < 3 * eps:  # b^2 <= 4 beta^2
        S *= 2
    centres = [t[i] for i in bumped] + [ts[-1] + 1 + j for j in range(groups - len(bumped))]
    layer = steps_layer(Steps(read, fmpq(0), tuple(centres), (), delta), beta, S)
    v = (fmpq(1), fmpq(1), fmpq(-2))
    zero = (fmpq(0),) * GROUP
    bump_row = tuple(x for j in range(groups) for x in (v if j < len(bumped) else zero))
    flat = (fmpq(0),) * (GROUP * groups)
    rows = {cls: (bump_row, fmpq(0)), 1 - cls: (flat, BUMP_THRESHOLD)}
    readout = Affine(
        tuple(rows[c][0] for c in CLASSES), tuple(rows[c][1] for c in CLASSES), {"kind": "bumps"}
    )
    meta = {"method": "bumps", "arch": "ln-g", "groups": groups, "bumps": len(bumped)}
    pad = fmpq(1)
    while pad**2 < 16 * eps:
        pad *= 2
    n = GROUP * groups
    same = Affine(
        tuple(tuple(pad if j == i else fmpq(0) for j in range(n)) for i in range(n)),
        (fmpq(0),) * n,
        {"kind": "pad"},
    )
    layers = (layer,) + (same,) * (depth - 1)
    return LNNet(d, n, eps, layers, readout, CLASSES, meta, norms=(Norm(groups=groups),) * depth)


def _separating(X: Sequence[tuple[fmpq, ...]]) -> tuple[fmpq, ...]:
    """``(1, k, k^2, ...)`` for the least ``k >= 1`` giving distinct ``read . x``: at most
    ``d - 1`` values of ``k`` per pair of points are roots of their difference's polynomial."""
    k = 1
    while True:
        read = tuple(fmpq(k) ** i for i in range(len(X[0])))
        t = {sum((r * v for r, v in zip(read, x, strict=True)), fmpq(0)) for x in X}
        if len(t) == len(X):
            return read
        k += 1


def _shatter_chunk(
    args: tuple[list[tuple[fmpq, ...]], int, fmpq, list[int], dict | None, int | None],
) -> list[dict]:
    from .construct import build  # workers build; the verifier never imports this

    X, depth, eps, ks, search, groups = args
    m, mask = len(X), (1 << len(X)) - 1
    out = []
    for k in ks:
        y = labels_of(k, m)
        try:
            record: dict[str, Any]
            if groups is not None:
                net = bump_net(X, y, groups, eps, depth)
                record = {"folds": "bumps", "lnnet": to_dict(net)}
            else:
                net = build(_point_set(X, y), eps=eps, depth=depth, method="pma", classes=CLASSES)
                record = {"folds": net.meta["folds"], "net": to_gadget(net)}
        except InputError as e:
            if groups is not None:
                out.append({"labeling": k, "error": str(e)})
                continue
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
    groups: int | None = None,
    scheduler: str | None = None,
    resume: bool = False,
    status: Callable[[ShatterSummary], None] | None = None,
    chunk: int = CHUNK,
) -> ShatterSummary:
    """Build and certify a depth-``depth`` net for every labeling of ``X`` (``depth + 2`` points).

    ``X`` defaults to :func:`default_points`.  Writes the shattering
    certificate to ``out`` (if given, and only if every labeling is certified).
    Raises :class:`InputError` for bad parameters, or naming the first labeling
    that cannot be realised.  With ``search`` (keyword arguments of
    :func:`lncapacity.search.find_net`, e.g. ``{}``) ``X`` may have more points:
    labelings the construction cannot do at this depth are searched for
    numerically and certified, and the ones not found are listed in
    ``summary.failures`` instead of raising.  With ``groups`` (LN-G, ``depth >= 1``) every
    net is :func:`bump_net` with exactly ``groups`` groups of 3 per layer, and ``X`` defaults
    to ``0, 1, ..., 2 groups`` (``2 groups + 1`` points: proofs/ln_g_vc.md, Theorems 1, 2).

    ``scheduler`` (``"local:N"`` or a Dask scheduler's address) runs the chunks (``chunk``
    pairs of labelings each) on a Dask cluster (:mod:`lncapacity.cluster`) instead of the
    process pool; the certificate is the same, byte for byte.  With ``resume`` the records
    go to a journal ``out + ".part"`` kept when the run is interrupted; a new run with
    ``resume`` re-certifies the journal's records (:func:`verify_shatter`'s checks), keeps
    the longest correct prefix and continues after it.  ``status`` is called with the
    summary so far after each chunk.
    """
    if resume and out is None:
        raise InputError("--resume needs an output file")
    if not _is_int(chunk) or chunk < 1:
        raise InputError(f"chunk must be a positive integer, got {shown(chunk)}")
    if groups is not None:
        if not _is_int(groups) or not 1 <= groups <= MAX_SHATTER_GROUPS:
            raise InputError(
                f"groups must be an integer from 1 to {MAX_SHATTER_GROUPS}, got {shown(groups)}"
            )
        if not _is_int(depth) or depth < 1:
            raise InputError(f"LN-G shattering takes a depth >= 1, not {shown(depth)}")
        if search is not None:
            raise InputError("--search is for width-3 nets (ln3), not ln-g")
        if X is None:
            if 2 * groups + 1 > MAX_POINTS:
                raise InputError(
                    f"{groups} groups take {2 * groups + 1} points, beyond the limit of "
                    f"{MAX_POINTS}"
                )
            X = [(fmpq(k),) for k in range(2 * groups + 1)]
    if not _is_int(depth) or depth < 0:
        raise InputError(f"depth must be a non-negative integer, got {shown(depth)}")
    if depth + 2 > MAX_POINTS:
        raise InputError(
            f"depth {depth} takes {depth + 2} points, beyond the limit of {MAX_POINTS}"
        )
    try:
        eps_q = epsilon(eps)
    except ValueError as e:
        raise InputError(str(e)) from None
    try:
        points = default_points(depth) if X is None else [tuple(exact(v) for v in x) for x in X]
    except (ValueError, TypeError) as e:
        raise InputError(f"the points must have finite coordinates: {e}") from None
    m = len(points)
    if groups is None and m != depth + 2 and (search is None or m < depth + 2):
        want = f"at least {depth + 2}" if search is not None else str(depth + 2)
        raise InputError(f"shattering at depth {depth} takes {want} points, got {m}")
    if m > MAX_POINTS:
        raise InputError(
            f"{m} points: 2^{m} labelings, beyond the limit of {MAX_POINTS} points (2^{MAX_POINTS})"
        )
    if len({len(x) for x in points}) != 1 or not points[0]:
        raise InputError("the points must all have the same number (at least 1) of coordinates")
    if len(set(points)) != m:
        raise InputError("the points must be distinct")
    if eps_q < 0:
        raise InputError(f"eps must be >= 0, got {shown(eps)}")
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
    if groups is not None:
        header["groups"] = groups
    imap = _imap(scheduler)
    first = 0  # the first labeling to compute (after a journal's records)
    journal = None if not resume or out is None else _journal_path(out)
    pool = workers or os.cpu_count() or 1
    if journal is not None:
        first = _resume(journal, header, summary, pool, imap)
    canonical = range(first, 1 << m, 2)  # point 0 labelled 0; the complement has it 1
    tasks = (
        (points, depth, eps_q, list(canonical[i : i + chunk]), search, groups)
        for i in range(0, len(canonical), chunk)
    )
    start = time.perf_counter()
    chunks = -(-len(canonical) // chunk)
    pool = min(pool, max(chunks, 1))
    writer = _writer(out, journal)
    with writer as (write, discard), closing(imap(_shatter_chunk, tasks, pool)) as results:
        if first == 0:
            write(header)
        for records in results:
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
            if status:
                status(summary)
        summary.seconds = time.perf_counter() - start
        write({"summary": summary.to_dict()})
        if not summary.all_certified:
            discard()
    return summary


def _imap(scheduler: str | None) -> Callable[..., Iterator[Any]]:
    """``imap(fn, tasks, workers)``: the process pool, or the Dask cluster ``scheduler``."""
    if scheduler is None:
        return imap
    from .cluster import cluster_imap, distributed_module

    distributed_module()  # a missing dependency is one line before any work

    def on_cluster(fn: Callable[[Any], Any], tasks: Iterator[Any], workers: int) -> Any:
        return cluster_imap(fn, tasks, scheduler)

    return on_cluster


def _journal_path(out: str | os.PathLike[str]) -> Path:
    target = output_target(out)
    return target.with_name(target.name + ".part")


def _resume(
    journal: Path, header: dict, summary: ShatterSummary, workers: int, imap: Callable
) -> int:
    """Keep the longest prefix of ``journal``'s records that verifies (same header, records
    in order, each re-certified as :func:`verify_shatter` does), tally them into ``summary``,
    cut the journal after them, and return the next labeling to compute (0: start afresh)."""
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
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
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


def _tally(summary: ShatterSummary, k: int, margins: Sequence[float | None]) -> None:
    if all(x is not None and x >= 0 for x in margins):  # -inf (None): not certified
        summary.certified += 1
        summary.min_margin = min(summary.min_margin, *margins)  # type: ignore[arg-type]
    else:
        summary.failures.append(k)


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
                self.f.write((json.dumps(obj, separators=(",", ":")) + "\n").encode())
                self.f.flush()

            return append, discard
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


MAX_LINE_BYTES = 16 << 20
"""Longest line of a shattering certificate that is read (16 MiB)."""

_HEADER_KEYS = {"format", "points", "input_dim", "eps", "depth", "labelings", "classes"}
_RECORD_KEYS = {"labeling", "folds", "margins", "complement"}
_SUMMARY_KEYS = {
    "points",
    "depth",
    "labelings",
    "certified",
    "all_certified",
    "min_margin",
    "folds_histogram",
    "failures",
}
_GADGET_KEYS = {"projection", "layers", "readout"}
_GADGET_LAYER_KEYS = {"centre", "offset", "scale"}


def _lines(path: str | os.PathLike[str]) -> Iterator[tuple[int, Any]]:
    """``(line number, JSON value)`` of each line; :class:`InputError` for an unreadable file."""
    p = Path(path)
    try:
        raw = open(p, "rb")
    except OSError as e:
        raise InputError(f"{p}: cannot read: {e.strerror}") from None
    with raw:
        f: Any = gzip.GzipFile(fileobj=raw) if p.suffix == ".gz" else raw
        n = 0
        try:
            while line := f.readline(MAX_LINE_BYTES + 1):
                n += 1
                if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
                    raise InputError(
                        f"{p}: line {n} is longer than the limit of {MAX_LINE_BYTES >> 20} MiB"
                    )
                yield n, parse_json(line, f"{p}: line {n}")
        except (OSError, EOFError, zlib.error) as e:  # corrupt or truncated gzip
            raise InputError(f"{p}: unreadable after line {n}: {shown(str(e), 80)}") from None


@dataclass(frozen=True)
class _Header:
    points: tuple[tuple[fmpq, ...], ...]
    depth: int
    eps: fmpq
    groups: int | None = None
    """LN-G: every net has this many groups of 3 in each layer (``None``: width 3)."""

    @property
    def m(self) -> int:
        return len(self.points)


def _read_header(obj: Any, path: object) -> _Header:
    """The header line, every field checked: one-line :class:`InputError` otherwise."""

    def bad(what: str) -> InputError:
        return InputError(f"{path}: header: {what}")

    if not isinstance(obj, dict) or obj.get("format") != FORMAT:
        raise InputError(f"{path}: not an {FORMAT} certificate")
    keys = set(obj) - {"generator", "groups"}
    if keys != _HEADER_KEYS:
        extra, missing = sorted(keys - _HEADER_KEYS), sorted(_HEADER_KEYS - keys)
        raise bad(f"missing {missing}" if missing else f"unknown fields {shown(extra)}")
    depth = obj["depth"]
    if not _is_int(depth) or depth < 0:
        raise bad(f"depth must be a non-negative integer, got {shown(depth)}")
    points = obj["points"]
    if not isinstance(points, list) or not points:
        raise bad("points must be a non-empty list of points")
    if len(points) > MAX_POINTS:
        raise bad(
            f"{len(points)} points, beyond the limit of {MAX_POINTS} (2^{MAX_POINTS} labelings)"
        )
    if len(points) < depth + 2:
        raise bad(f"{len(points)} points at depth {depth}: shattering takes at least {depth + 2}")
    if not all(isinstance(x, list) for x in points):
        raise bad("every point must be a list of numbers")
    d = len(points[0])
    if not 1 <= d <= MAX_INPUT_DIM or any(len(x) != d for x in points):
        raise bad(f"the points must all have one number (1 to {MAX_INPUT_DIM}) of coordinates")
    if obj["input_dim"] != d or not _is_int(obj["input_dim"]):
        raise bad(f"input_dim {shown(obj['input_dim'])} but the points have dimension {d}")
    if not _is_int(obj["labelings"]) or obj["labelings"] != 1 << len(points):
        raise bad(f"labelings must be 2^{len(points)}, got {shown(obj['labelings'])}")
    if obj["classes"] != list(CLASSES) or not all(_is_int(c) for c in obj["classes"]):
        raise bad(f"classes must be {list(CLASSES)}, got {shown(obj['classes'])}")
    try:
        X = tuple(tuple(parse_rational(v) for v in x) for x in points)
        eps = parse_rational(obj["eps"])
    except ValueError as e:
        raise bad(str(e)) from None
    if len(set(X)) != len(X):
        raise bad("the points are not distinct")
    if eps < 0:
        raise bad("eps must be >= 0")
    groups = obj.get("groups")
    if groups is not None and (not _is_int(groups) or not 1 <= groups <= MAX_GROUPS):
        raise bad(f"groups must be an integer from 1 to {MAX_GROUPS}, got {shown(groups)}")
    return _Header(X, depth, eps, groups)


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_margin(v: object) -> bool:
    """A claimed margin: a finite JSON number >= 0 (never a bool, NaN or infinity).

    0 is a certified margin below the smallest float, rounded down."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v < math.inf


def _record_problem(rec: Any, header: _Header) -> str | None:
    """What is wrong with a record's form (its place in the file and its net are checked later)."""
    m, mask = header.m, (1 << header.m) - 1
    if not isinstance(rec, dict):
        return "not a record"
    net_keys = {"net", "lnnet"} & set(rec)
    if len(net_keys) != 1 or set(rec) - net_keys != _RECORD_KEYS:
        return f"fields {shown(sorted(rec))}, expected {sorted(_RECORD_KEYS)} and net or lnnet"
    k = rec["labeling"]
    if not _is_int(k) or not 0 <= k <= mask or k % 2:
        return f"labeling {shown(k)}: not an even number from 0 to {mask}"
    comp = rec["complement"]
    if not isinstance(comp, dict) or set(comp) != {"labeling", "margins"}:
        return f"labeling {k}: complement must have exactly labeling and margins"
    if not _is_int(comp["labeling"]) or comp["labeling"] != k ^ mask:
        return f"labeling {k}: its complement is {k ^ mask}, not {shown(comp['labeling'])}"
    for margins in (rec["margins"], comp["margins"]):
        if not isinstance(margins, list) or len(margins) != m or not all(map(_is_margin, margins)):
            return f"labeling {k}: margins must be {m} finite numbers >= 0"
    folds = rec["folds"]
    if header.groups is not None:
        if "lnnet" not in rec or folds != "bumps":
            return f'labeling {k}: an LN-G record has an lnnet and folds "bumps"'
    elif "lnnet" in rec:
        if folds != "search":
            return f'labeling {k}: a searched net (lnnet) has folds "search"'
    elif not _is_int(folds) or not 0 <= folds <= header.depth:
        return f"labeling {k}: folds must be an integer from 0 to {header.depth}"
    return None


def _decode(rec: dict, header: _Header) -> LNNet[fmpq]:
    """The record's net, of the claimed architecture: width 3, depth L, the header's inputs."""
    d, depth = len(header.points[0]), header.depth
    if "lnnet" in rec:
        net = from_dict(rec["lnnet"], "lnnet")
        g = header.groups or 1
        if (net.width, net.depth, net.input_dim) != (3 * g, depth, d):
            raise InputError(
                f"the net has width {net.width}, depth {net.depth}, {net.input_dim} inputs; "
                f"the claim is width {3 * g}, depth {depth}, {d} inputs"
            )
        if net.groups != (g,) * depth:
            raise InputError(f"the net's groups per layer are {list(net.groups)}, not {g}")
        if net.eps != header.eps or net.classes != CLASSES:
            raise InputError("the net's eps or classes differ from the header's")
        return net
    g = rec["net"]
    if not isinstance(g, dict) or set(g) != _GADGET_KEYS:
        raise InputError(f"a gadget record has exactly the fields {sorted(_GADGET_KEYS)}")
    layers, projection, readout = g["layers"], g["projection"], g["readout"]
    if not isinstance(layers, list) or len(layers) != depth:
        raise InputError(f"depth {len(layers) if isinstance(layers, list) else '?'}, not {depth}")
    for spec in layers:
        if not isinstance(spec, dict) or not (
            _GADGET_LAYER_KEYS <= set(spec) <= _GADGET_LAYER_KEYS | {"read"}
        ):
            raise InputError("a gadget layer has centre, offset, scale and optionally read")
        if "read" in spec and (not isinstance(spec["read"], list) or len(spec["read"]) != 2):
            raise InputError("a gadget layer's read is [alpha, gamma]")
    if not isinstance(projection, list) or len(projection) != d:
        raise InputError(f"the projection must have {d} entries")
    if not isinstance(readout, dict) or not {"W", "b"} <= set(readout) <= {"W", "b", "meta"}:
        raise InputError("the readout has W, b and optionally meta")
    net = from_gadget(g, input_dim=d, eps=header.eps, classes=CLASSES)
    if net.width != 3 or net.depth != depth:  # from_gadget builds exactly this; kept as a guard
        raise InputError(f"width {net.width}, depth {net.depth}")
    return net


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
    :data:`MAX_LINE_BYTES`).  Every record must be in its place (labelings
    ``0, 2, 4, ...`` once each, in order, each with its complement) with ``m``
    finite claimed margins >= 0 per labeling; its net must have the claimed
    architecture (width 3, exactly ``depth`` layers, the header's inputs, ``eps``
    and classes); both labelings are certified from scratch and no claimed
    margin may exceed the certified bound.  The summary line must restate
    exactly what the records establish (counts, ``all_certified``, the smallest
    claimed margin, the histogram of folds, no failures).  The returned summary
    is the re-derived one.  ``scheduler``: the chunks on a Dask cluster, as in :func:`shatter`.
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
