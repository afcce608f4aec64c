"""The ``lnnet-shatter/1`` format: its constants and limits, the summary of a run, and the
reading of a file (its lines, the header, each record's form and its net), every field checked.
"""

from __future__ import annotations

import gzip
import math
import os
import zlib
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flint import fmpq

from ..arith import json_float, parse_rational, shown
from ..errors import InputError
from ..fileformat import MAX_DEPTH, MAX_INPUT_DIM, from_dict, from_gadget, parse_json
from ..model import LNNet

FORMAT = "lnnet-shatter/1"
CLASSES = (0, 1)
MAX_POINTS = 24
"""Most points :func:`~lncapacity.shatter.run.shatter` and
:func:`~lncapacity.shatter.verify.verify_shatter` take: ``2^24`` labelings (the file has
``2^23 + 2`` lines).  A header claiming more is refused before anything is allocated."""
MAX_GROUPS = 1 << 20
"""Most groups of 3 an LN-G shattering certificate's header may claim."""
MAX_SHATTER_GROUPS = 64
"""Most groups :func:`~lncapacity.shatter.run.shatter` builds (``2g + 1 <= 24`` points need
``g <= 11``; a net of ``g`` groups per layer has ``(3g)^2`` weights in each later layer)."""

MAX_LINE_BYTES = 16 << 20
"""Longest line of a shattering certificate that is read (16 MiB)."""


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


def _tally(summary: ShatterSummary, k: int, margins: Sequence[float | None]) -> None:
    if all(x is not None and x >= 0 for x in margins):  # -inf (None): not certified
        summary.certified += 1
        summary.min_margin = min(summary.min_margin, *margins)  # type: ignore[arg-type]
    else:
        summary.failures.append(k)


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


def _lines(path: str | os.PathLike[str], parse: bool = True) -> Iterator[tuple[int, Any]]:
    """``(line number, JSON value)`` of each line (``parse=False``: the line's bytes, to be
    parsed by :func:`~lncapacity.fileformat.parse_json` elsewhere); :class:`InputError` for an
    unreadable file."""
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
                yield n, parse_json(line, f"{p}: line {n}") if parse else line
        except (OSError, EOFError, zlib.error) as e:  # corrupt or truncated gzip
            raise InputError(f"{p}: unreadable after line {n}: {shown(str(e), 80)}") from None


@dataclass(frozen=True)
class _Header:
    points: tuple[tuple[fmpq, ...], ...]
    depth: int
    eps: fmpq
    groups: int | None = None
    """LN-G: every net has this many groups of 3 in each layer (``None``: width 3)."""
    rms: bool = False
    """Every net is an RMSNorm net (groups of 2, width 2; ``"norm": "rms"``)."""

    @property
    def m(self) -> int:
        return len(self.points)


def _read_header(obj: Any, path: object) -> _Header:
    """The header line, every field checked: one-line :class:`InputError` otherwise."""

    def bad(what: str) -> InputError:
        return InputError(f"{path}: header: {what}")

    if not isinstance(obj, dict) or obj.get("format") != FORMAT:
        raise InputError(f"{path}: not an {FORMAT} certificate")
    keys = set(obj) - {"generator", "groups", "norm"}
    if keys != _HEADER_KEYS:
        extra, missing = sorted(keys - _HEADER_KEYS), sorted(_HEADER_KEYS - keys)
        raise bad(f"missing {missing}" if missing else f"unknown fields {shown(extra)}")
    depth = obj["depth"]
    if not _is_int(depth) or depth < 0:
        raise bad(f"depth must be a non-negative integer, got {shown(depth)}")
    points = obj["points"]
    if not isinstance(points, list) or not points:
        raise bad("points must be a non-empty list of points")
    groups = obj.get("groups")
    if groups is not None and (not _is_int(groups) or not 1 <= groups <= MAX_GROUPS):
        raise bad(f"groups must be an integer from 1 to {MAX_GROUPS}, got {shown(groups)}")
    if (problem := claim_problem(len(points), depth, groups)) is not None:
        raise bad(problem)
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
    if obj.get("norm", "rms") != "rms":
        raise bad(f'norm must be "rms" when present, got {shown(obj["norm"])}')
    return _Header(X, depth, eps, groups, "norm" in obj)


def claim_problem(m: int, depth: int, groups: int | None) -> str | None:
    """What is wrong with a claim that depth-``depth`` nets shatter ``m`` points (``None``:
    nothing), for :func:`~lncapacity.shatter.run.shatter` and
    :func:`~lncapacity.shatter.verify.verify_shatter` alike.

    At most :data:`MAX_POINTS` points and :data:`~lncapacity.fileformat.MAX_DEPTH` layers (the
    nets must be readable).  Width 3: at least ``depth + 2`` points, the count of the theorem
    of Ni, Guo, Jia and Huang (proofs/vc_theorem.md).  LN-G (``groups`` of 3 per layer): depth
    at least 1, and any number of points: ``2g + 1`` are shattered at every depth
    (proofs/ln_g_vc.md, Theorems 1 and 2), so the depth sets no floor.  An RMSNorm claim (width
    2, or groups of 2) has its LayerNorm twin's rule (proofs/rmsnorm.md).
    """
    if m > MAX_POINTS:
        return f"{m} points, beyond the limit of {MAX_POINTS} (2^{MAX_POINTS} labelings)"
    if depth > MAX_DEPTH:
        return f"depth {depth}, beyond the limit of {MAX_DEPTH} layers of a net"
    if groups is None and m < depth + 2:
        return f"{m} points at depth {depth}: shattering takes at least {depth + 2}"
    if groups is not None and depth < 1:
        return f"LN-G shattering takes a depth >= 1, not {depth}"
    return None


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
    if header.rms:  # every net written whole, its folds those of its LayerNorm twin
        if "lnnet" not in rec:
            return f"labeling {k}: an RMSNorm record has an lnnet"
        if header.groups is not None and folds != "bumps":
            return f'labeling {k}: an RMSNorm record in groups has folds "bumps"'
        if (
            header.groups is None
            and folds != "search"
            and not (_is_int(folds) and 0 <= folds <= header.depth)
        ):
            return f'labeling {k}: folds must be "search" or an integer from 0 to {header.depth}'
    elif header.groups is not None:
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
        size = 2 if header.rms else 3  # a group of LayerNorm's 3, or of its twin's 2
        if (net.width, net.depth, net.input_dim) != (size * g, depth, d):
            raise InputError(
                f"the net has width {net.width}, depth {net.depth}, {net.input_dim} inputs; "
                f"the claim is width {size * g}, depth {depth}, {d} inputs"
            )
        if net.groups != (g,) * depth:
            raise InputError(f"the net's groups per layer are {list(net.groups)}, not {g}")
        if any(net.norm(i).rms != header.rms for i in range(depth)):
            kind = "RMSNorm" if header.rms else "LayerNorm"
            raise InputError(f"the claim is {kind} in every layer; the net's layers differ")
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
