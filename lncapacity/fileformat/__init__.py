"""The ``lnnet/1`` file format: an LN-Net as JSON, every number exact.

A file is one JSON object::

    {
      "format": "lnnet/1",
      "input_dim": 2,                 # d
      "width": 3,                     # n
      "eps": "0",                     # LayerNorm epsilon, a number (below)
      "layers": [ {"W": [[...], ...], "b": [...], "meta": {...}}, ... ],
      "readout": {"W": [[...], ...], "b": [...]},
      "classes": [0, 1],              # readout row i scores classes[i]
      "meta": {...}                   # optional, free-form
    }

*Numbers* are JSON strings: an integer (``"-3"``) or a reduced or unreduced
fraction ``"p/q"`` (``"7/2"``).  Readers reject anything else, so later
encodings (for instance algebraic numbers as JSON objects) can be added without
an older reader misreading them.  ``W`` is a list of rows; layer 1 is
``width x input_dim``, later layers ``width x width``, the readout
``len(classes) x width`` (``x input_dim`` with no layers).  ``classes`` are
JSON integers or strings.  ``meta`` (top level and per layer) records how the
net was built; it never enters the computation, and unknown keys are kept.

**lnnet/1.1** adds what trained nets need, and is written only by nets that use
it (so every net this package builds, and every file written before, stays
``lnnet/1``, byte for byte)::

    {
      "format": "lnnet/1.1",
      "requires": ["ln-affine", "widths"],   # the features below this file uses
      "width": null,                         # or the common width
      "layers": [ {"W": ..., "b": ..., "ln": {"gain": [...], "bias": [...]}}, ...],
      ...                                    # everything else as in lnnet/1
    }

* ``"ln-affine"``: a layer's ``ln`` object holds the elementwise gain and/or bias
  of its LayerNorm (``h = gain * LN(y) + bias``; either key may be absent).
* ``"widths"``: the layers' widths differ; ``width`` is ``null`` and each
  layer's width is the number of rows of its ``W`` (``W_l`` is ``n_l x n_{l-1}``).
* ``"groups"``: a layer's ``"groups": g`` (an integer, written only when ``g > 1``)
  makes it LN-G: its ``n_l`` features are normalised in ``g`` contiguous groups of
  ``n_l / g >= 2``, each with the net's ``eps`` (:mod:`lncapacity.model`); its ``ln``
  gain and bias stay per feature.  Such a file may be wider: up to
  :data:`MAX_GROUPED_WIDTH` features a layer, each group at most :data:`MAX_WIDTH`.
* ``"rms"``: a layer's ``"norm": "rms"`` makes it an RMSNorm (no centring: ``y /
  sqrt(mean(y^2) + eps)``, in each group with ``"groups"``, whose groups may then hold one
  feature each); ``"norm": "ln"``, or no ``"norm"``, is LayerNorm (:mod:`lncapacity.model`).
* ``"algebraic"``: a top-level ``"radicals"`` list, a radical straight-line
  program (:mod:`lncapacity.algebraic`: entries ``"p/q"``, ``{"add": [i, j]}``,
  ``sub``, ``mul``, ``div``, ``{"sqrt": i}`` with ``i, j`` earlier entries, or
  ``{"root": [...], "lo", "hi"}``), and the numbers of layers' and the readout's
  ``W`` and ``b`` may be ``{"ref": k}``, entry ``k``: exact algebraic weights, as
  ``pma --exact`` nets have (proofs/exact_merges.md).  Readers prove every entry
  defined before use.

Why a new format string rather than new optional keys in ``lnnet/1``: a
``lnnet/1`` reader ignores keys it does not know inside a layer, so it would
silently drop a gain and compute a different net.  Readers of every version
refuse a ``format`` they do not know, so ``lnnet/1`` readers refuse ``lnnet/1.1``
files.  ``requires`` carries that guarantee forward: a reader refuses a file
that requires a feature it does not know, so later additions need no new
format string.

Writing is atomic (a temporary file renamed into place), so a failed run never
leaves a half-written file.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from flint import fmpq

from ..algebraic import Radical, RadicalProgram
from ..arith import MAX_DIGITS, format_rational, parse_rational, shown
from ..errors import InputError
from ..model import Affine, LNNet, Norm
from .layout import dumps
from .outputs import (
    check_outputs,
    check_writable,
    output_target,
    publish,
    temporary,
    write_all_atomic,
    write_atomic,
)

FORMAT = "lnnet/1"
FORMAT_1_1 = "lnnet/1.1"
FEATURES = ("ln-affine", "widths", "algebraic", "groups", "rms")
"""The features of ``lnnet/1.1`` this reader knows (see the module doc)."""
NORMALISERS = ("ln", "rms")
"""A layer's ``"norm"`` (with ``requires: ["rms"]``): LayerNorm or RMSNorm."""

__all__ = [
    "FEATURES",
    "FORMAT",
    "FORMAT_1_1",
    "MAX_GROUPED_WIDTH",
    "U",
    "V",
    "check_outputs",
    "check_writable",
    "dumps",
    "from_dict",
    "from_gadget",
    "gadget_affine",
    "load",
    "output_target",
    "parse_json",
    "publish",
    "read_vector",
    "save",
    "temporary",
    "to_dict",
    "to_gadget",
    "write_all_atomic",
    "write_atomic",
]


def to_dict(net: LNNet[fmpq]) -> dict[str, Any]:
    """The ``lnnet/1`` JSON object of an exact net (``lnnet/1.1`` when it needs a feature)."""
    radicals, refs = _radicals(net)

    def num(x: Any) -> Any:
        return {"ref": refs[x.index]} if isinstance(x, Radical) else format_rational(x)

    def numbers(xs: Sequence[Any]) -> list[Any]:
        return list(map(format_rational, xs)) if radicals is None else [num(x) for x in xs]

    def affine(a: Affine[fmpq]) -> dict[str, Any]:
        d: dict[str, Any] = {"W": [numbers(row) for row in a.W], "b": numbers(a.b)}
        if a.meta:
            d["meta"] = dict(a.meta)
        return d

    def layer(i: int, a: Affine[fmpq]) -> dict[str, Any]:
        d = affine(a)
        norm = net.norm(i)
        if not norm.is_plain:
            extra: dict[str, Any] = {"norm": "rms"} if norm.rms else {}
            if not norm.is_identity:
                ln = {}
                for part in ("gain", "bias"):
                    v = getattr(norm, part)
                    if v is not None:
                        ln[part] = [format_rational(x) for x in v]
                extra["ln"] = ln
            if norm.groups != 1:
                extra["groups"] = norm.groups
            d = {"W": d["W"], "b": d["b"], **extra, **({"meta": d["meta"]} if "meta" in d else {})}
        return d

    requires = [
        f
        for f, used in (
            ("ln-affine", any(not n.is_identity for n in net.norms)),
            ("widths", net.width is None),
            ("algebraic", radicals is not None),
            ("groups", net.grouped),
            ("rms", net.rms),
        )
        if used
    ]
    out: dict[str, Any] = {"format": FORMAT_1_1 if requires else FORMAT}
    if requires:
        out["requires"] = requires
    out |= {
        "input_dim": net.input_dim,
        "width": net.width,
        "eps": format_rational(net.eps),
        **({"radicals": radicals} if radicals is not None else {}),
        "layers": [layer(i, a) for i, a in enumerate(net.layers)],
        "readout": affine(net.readout),
        "classes": list(net.classes),
    }
    if net.meta:
        out["meta"] = dict(net.meta)
    return out


def _radicals(net: LNNet[Any]) -> tuple[list[Any] | None, dict[int, int]]:
    """The ``radicals`` entries the net's algebraic weights need, and their renumbering."""
    used = [
        w
        for a in (*net.layers, net.readout)
        for w in (*a.b, *(w for row in a.W for w in row))
        if isinstance(w, Radical)
    ]
    if not used:
        return None, {}
    programs = {id(w.program): w.program for w in used}
    if len(programs) > 1:
        raise ValueError("a net's algebraic weights must come from one program")
    program: RadicalProgram = used[0].program
    return program.to_json(keep={w.index for w in used})


def from_dict(obj: Any, source: str = "net") -> LNNet[fmpq]:
    """Read an ``lnnet/1`` or ``lnnet/1.1`` object; :class:`InputError` names the first bad field.

    A file that requires a feature this reader does not know is refused.
    """

    def fail(where: str, what: str) -> InputError:
        return InputError(f"{source}: {where}: {what}")

    def number(v: Any, where: str, algebraic: bool = False) -> fmpq:
        if algebraic and radicals is not None and isinstance(v, Mapping):
            k = v.get("ref")
            if set(v) != {"ref"} or not isinstance(k, int) or isinstance(k, bool):
                raise fail(where, 'an algebraic number is {"ref": k}, k an index of "radicals"')
            if not 0 <= k < len(radicals):
                raise fail(where, f"ref {k} is not an index of radicals (0..{len(radicals) - 1})")
            return Radical(radicals, k)  # type: ignore[return-value]
        if not isinstance(v, str):
            raise fail(where, f'numbers are strings "p/q" or "n", got {shown(json.dumps(v))}')
        try:
            return parse_rational(v)
        except ValueError as e:
            raise fail(where, str(e)) from None

    def numbers(row: list[Any], where: str) -> tuple[fmpq, ...]:
        """``number`` of each entry: a row of plain rationals in one match and at C speed."""
        if _plain_numbers(row):
            return tuple(map(fmpq, row))
        return tuple(number(v, f"{where}[{j}]", True) for j, v in enumerate(row))

    def integer(key: str, limit: int) -> int:
        v = obj.get(key)
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise fail(key, "must be a positive integer")
        if v > limit:
            raise fail(key, f"{v} is beyond the limit of {limit}")
        return v

    def affine(a: Any, where: str) -> Affine[fmpq]:
        if not isinstance(a, Mapping) or not isinstance(a.get("W"), list):
            raise fail(where, 'must be an object with "W" (list of rows) and "b"')
        if not isinstance(a.get("b"), list):
            raise fail(f"{where}.b", "must be a list")
        rows = []
        for i, row in enumerate(a["W"]):
            if not isinstance(row, list):
                raise fail(f"{where}.W[{i}]", "must be a list")
            rows.append(numbers(row, f"{where}.W[{i}]"))
        b = numbers(a["b"], f"{where}.b")
        meta = a.get("meta", {})
        if not isinstance(meta, Mapping):
            raise fail(f"{where}.meta", "must be an object")
        return Affine(tuple(rows), b, dict(meta))

    def norm(a: Any, where: str) -> Norm[fmpq]:
        ln = a.get("ln") if isinstance(a, Mapping) else None
        if ln is None:
            return Norm(groups=group(a, where), rms=kind(a, where))
        if "ln-affine" not in requires:
            raise fail(f"{where}.ln", 'needs "requires": ["ln-affine"] (format lnnet/1.1)')
        if not isinstance(ln, Mapping) or set(ln) - {"gain", "bias"}:
            raise fail(f"{where}.ln", 'must be an object with "gain" and/or "bias"')
        parts = {}
        for part in ("gain", "bias"):
            v = ln.get(part)
            if v is not None and not isinstance(v, list):
                raise fail(f"{where}.ln.{part}", "must be a list")
            parts[part] = (
                None
                if v is None
                else tuple(number(x, f"{where}.ln.{part}[{i}]") for i, x in enumerate(v))
            )
        return Norm(parts["gain"], parts["bias"], group(a, where), kind(a, where))

    def kind(a: Any, where: str) -> bool:
        """Whether layer ``a`` is an RMSNorm (its ``"norm"``)."""
        if not isinstance(a, Mapping) or "norm" not in a:
            return False
        if "rms" not in requires:
            raise fail(f"{where}.norm", 'needs "requires": ["rms"] (format lnnet/1.1)')
        if a["norm"] not in NORMALISERS:
            raise fail(
                f"{where}.norm",
                f"unknown normaliser {shown(a['norm'])} (choose from {', '.join(NORMALISERS)})",
            )
        return a["norm"] == "rms"

    def group(a: Any, where: str) -> int:
        if not isinstance(a, Mapping):
            return 1  # affine() says what is wrong
        if "groups" in a and "groups" not in requires:
            raise fail(f"{where}.groups", 'needs "requires": ["groups"] (format lnnet/1.1)')
        g = a.get("groups", 1)
        if not isinstance(g, int) or isinstance(g, bool) or g < 1:
            raise fail(f"{where}.groups", f"must be a positive integer, got {json.dumps(g)[:40]}")
        if "groups" in requires:  # each group is a LayerNorm of at most MAX_WIDTH features
            W = a.get("W")
            rows = width if width is not None else len(W) if isinstance(W, list) else 0
            if rows % g == 0 and rows // g > MAX_WIDTH:
                what = "a LayerNorm" if g == 1 else "groups"
                raise fail(
                    f"{where}.groups" if g > 1 else where,
                    f"{what} of {rows // g} features, beyond the limit of {MAX_WIDTH}",
                )
        return g

    if not isinstance(obj, Mapping):
        raise InputError(f"{source}: not an lnnet/1 object")
    version = obj.get("format")
    if version not in (FORMAT, FORMAT_1_1):
        raise fail(
            "format",
            f"expected {FORMAT!r}, got {shown(version)} (this reader knows {FORMAT} and "
            f"{FORMAT_1_1})",
        )
    requires = obj.get("requires", []) if version == FORMAT_1_1 else []
    if not isinstance(requires, list) or not all(isinstance(f, str) for f in requires):
        raise fail("requires", "must be a list of feature names")
    if unknown := [f for f in requires if f not in FEATURES]:
        raise fail(
            "requires",
            f"this file needs {', '.join(map(repr, unknown))}, unknown to lncapacity "
            f"(it knows {', '.join(FEATURES)}): upgrade lncapacity to read it",
        )
    radicals: RadicalProgram | None = None
    if "algebraic" in requires:
        try:
            radicals = RadicalProgram.from_json(obj.get("radicals"))
        except ValueError as e:
            raise fail("radicals", str(e)) from None
    elif "radicals" in obj:
        raise fail("radicals", 'needs "requires": ["algebraic"] (format lnnet/1.1)')
    layers = obj.get("layers")
    if not isinstance(layers, list):
        raise fail("layers", "must be a list")
    if len(layers) > MAX_DEPTH:
        raise fail("layers", f"{len(layers)} layers, beyond the limit of {MAX_DEPTH}")
    classes = obj.get("classes")
    if isinstance(classes, list) and len(classes) > MAX_CLASSES:
        raise fail("classes", f"{len(classes)} classes, beyond the limit of {MAX_CLASSES}")
    if not isinstance(classes, list) or not all(
        isinstance(c, (int, str)) and not isinstance(c, bool) for c in classes
    ):
        raise fail("classes", "must be a list of integers or strings")
    meta = obj.get("meta", {})
    if not isinstance(meta, Mapping):
        raise fail("meta", "must be an object")
    if "widths" in requires and obj.get("width") is None:
        width = None
    else:  # a grouped layer may be wider: each of its groups is a LayerNorm of at most MAX_WIDTH
        width = integer("width", MAX_GROUPED_WIDTH if "groups" in requires else MAX_WIDTH)
    norms = tuple(norm(a, f"layers[{i}]") for i, a in enumerate(layers))
    fields = dict(
        input_dim=integer("input_dim", MAX_INPUT_DIM),
        width=width,
        eps=number(obj.get("eps"), "eps"),
        layers=tuple(affine(a, f"layers[{i}]") for i, a in enumerate(layers)),
        readout=affine(obj.get("readout"), "readout"),
        classes=tuple(classes),
        meta=dict(meta),
        norms=norms,
    )
    try:
        return LNNet(**fields)
    except InputError as e:
        raise InputError(f"{source}: {e}") from None


_RATIONALS = re.compile(r"-?[0-9]+(?:/0*[1-9][0-9]*)?(?:,-?[0-9]+(?:/0*[1-9][0-9]*)?)*")
"""Numbers of the lnnet/1 grammar with a nonzero denominator, separated by commas."""


def _plain_numbers(row: list[Any]) -> bool:
    """Whether every entry of ``row`` is a string of the ``lnnet/1`` number grammar
    (:func:`~lncapacity.arith.parse_rational`) within its digit limit and with a nonzero
    denominator: what ``flint.fmpq`` then reads alike (it would also take spaces and
    signed denominators, which this refuses)."""
    try:
        joined = ",".join(row)
    except TypeError:  # not all strings
        return False
    return (
        joined.count(",") == len(row) - 1  # no entry holds a comma
        and _RATIONALS.fullmatch(joined) is not None
        and (len(joined) <= MAX_DIGITS or max(map(len, row)) <= MAX_DIGITS)
    )


# ---------------------------------------------------------------------------
# the gadget encoding: a compact, exact record of a net whose layers are folds

U = (fmpq(1), fmpq(-1), fmpq(0))
V = (fmpq(1), fmpq(1), fmpq(-2))


def read_vector(read: Sequence[fmpq]) -> tuple[fmpq, ...]:
    """``alpha v + gamma u`` for ``read = (alpha, gamma)``."""
    alpha, gamma = read
    return tuple(alpha * vi + gamma * ui for ui, vi in zip(U, V, strict=True))


def gadget_affine(
    a: Sequence[fmpq], centre: fmpq, offset: fmpq, scale: fmpq, meta: Mapping[str, Any] = {}
) -> Affine[fmpq]:
    """The width-3 fold layer ``h -> scale ((a^T h - centre) u + offset v)``.

    ``u = (1, -1, 0)`` and ``v = (1, 1, -2)`` (proofs/fold_lemma.md), so
    ``W = scale u a^T`` and ``b = scale (offset v - centre u)``.
    """
    W = tuple(tuple(scale * ui * aj for aj in a) for ui in U)
    b = tuple(scale * (offset * vi - centre * ui) for ui, vi in zip(U, V, strict=True))
    return Affine(W, b, dict(meta))


def to_gadget(net: LNNet[fmpq]) -> dict[str, Any]:
    """The gadget record of a net built from fold layers (far smaller than lnnet/1).

    ``{"projection": [...], "layers": [{"centre", "offset", "scale"[, "read"]}],
    "readout": {"W", "b"}}``: layer 1 reads the input with ``projection``, layer
    ``l + 1`` (or the readout) reads layer ``l``'s output with its ``read``
    (``[alpha, gamma]`` for ``alpha v + gamma u``, default ``["1", "0"]``).  The
    layer metadata written by the constructions supplies the parameters; raises
    :class:`ValueError` unless decoding the record gives back ``net`` exactly.
    """
    try:
        record = {
            "projection": list(net.meta["projection"]),
            "layers": [
                {k: layer.meta[k] for k in ("centre", "offset", "scale", "read") if k in layer.meta}
                for layer in net.layers
            ],
            "readout": to_dict(net)["readout"],
        }
        decoded = from_gadget(record, input_dim=net.input_dim, eps=net.eps, classes=net.classes)
    except (KeyError, InputError) as e:
        raise ValueError(f"not a gadget net: {e}") from None
    if [(a.W, a.b) for a in (*decoded.layers, decoded.readout)] != [
        (a.W, a.b) for a in (*net.layers, net.readout)
    ]:
        raise ValueError("the gadget record does not reproduce the net")
    return record


def from_gadget(
    obj: Any, *, input_dim: int, eps: fmpq, classes: Sequence[Any], source: str = "record"
) -> LNNet[fmpq]:
    """The net a gadget record (see :func:`to_gadget`) describes, exactly."""
    try:
        read = [parse_rational(x) for x in obj["projection"]]
        layers = []
        for spec in obj["layers"]:
            c, beta, S = (parse_rational(spec[k]) for k in ("centre", "offset", "scale"))
            layers.append(gadget_affine(read, c, beta, S))
            read = list(read_vector([parse_rational(x) for x in spec.get("read", ["1", "0"])]))
        W = tuple(tuple(parse_rational(w) for w in row) for row in obj["readout"]["W"])
        b = tuple(parse_rational(v) for v in obj["readout"]["b"])
        return LNNet(input_dim, 3, eps, tuple(layers), Affine(W, b), tuple(classes))
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise InputError(f"{source}: malformed gadget record: {e}") from None


def save(net: LNNet[fmpq], path: str | os.PathLike[str]) -> None:
    """Write ``net`` to ``path`` as ``lnnet/1`` (atomically)."""
    write_atomic(path, dumps(to_dict(net)))


class _DuplicateKey(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    d: dict[str, Any] = {}
    for key, value in pairs:
        if key in d:
            raise _DuplicateKey(key)
        d[key] = value
    return d


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def parse_json(text: str | bytes, source: str) -> Any:
    """``json.loads`` for files this package reads: strict, and one-line errors.

    Duplicate keys (``{"a": 1, "a": 2}``), ``NaN``/``Infinity``, integers of more
    than 4300 digits and nesting deeper than Python's recursion limit raise
    :class:`InputError` naming ``source``.
    """
    try:
        return json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant)
    except json.JSONDecodeError as e:
        raise InputError(f"{source}: not JSON ({e.msg} at line {e.lineno})") from None
    except _DuplicateKey as e:
        raise InputError(f"{source}: not JSON (duplicate key {shown(str(e))})") from None
    except RecursionError:
        raise InputError(f"{source}: not JSON (nested too deeply)") from None
    except (ValueError, UnicodeDecodeError) as e:  # e.g. an integer beyond 4300 digits
        raise InputError(f"{source}: not JSON ({shown(str(e), 80)})") from None


MAX_FILE_BYTES = 256 << 20
"""Largest ``lnnet/1`` file :func:`load` reads (256 MiB; a depth-10,000 net takes about 3 MB,
an LN-G net of depth 1 for a million points about 100 MB)."""

MAX_DEPTH = 10_000
"""Most LayerNorm layers in a net that is read."""

MAX_WIDTH = 1_000
"""Largest width of a net that is read (of a LayerNorm: with ``requires: ["groups"]``, of each
group); also its most classes (:data:`MAX_CLASSES`)."""

MAX_CLASSES = MAX_WIDTH
"""Most classes (readout rows) of a net: what a net file may hold.  Building or training for
more is refused before any work (:func:`check_classes`)."""


def check_classes(k: int) -> None:
    """:class:`InputError` for more than :data:`MAX_CLASSES` classes."""
    if k > MAX_CLASSES:
        raise InputError(
            f"{k:,} classes, beyond the limit of {MAX_CLASSES:,} (the readout rows a net may have)"
        )


MAX_GROUPED_WIDTH = 2_000_000
"""Largest width of a net read with ``requires: ["groups"]`` (LN-G layers, each group at most
:data:`MAX_WIDTH`; the file's size limit bounds the weights)."""

MAX_INPUT_DIM = 100_000
"""Largest input dimension of a net that is read (``certify`` refuses wider data: its net could
not be read back)."""


def load(path: str | os.PathLike[str]) -> LNNet[fmpq]:
    """Read an ``lnnet/1`` file; a missing, malformed or oversized file raises :class:`InputError`.

    Limits: :data:`MAX_FILE_BYTES`, :data:`MAX_DEPTH`, :data:`MAX_WIDTH`, :data:`MAX_CLASSES`,
    :data:`MAX_INPUT_DIM` and :data:`lncapacity.arith.MAX_DIGITS` digits per number.
    """
    p = Path(path)
    try:
        with open(p, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise InputError(f"{p}: cannot read: not a regular file")
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as e:
        raise InputError(f"{p}: cannot read: {e.strerror or e}") from None
    if len(data) > MAX_FILE_BYTES:
        raise InputError(f"{p}: larger than the limit of {MAX_FILE_BYTES >> 20} MiB for a net")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"{p}: cannot read: not UTF-8 ({e.reason})") from None
    return from_dict(parse_json(text, str(p)), str(p))
