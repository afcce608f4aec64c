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
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from flint import fmpq

from .arith import format_rational, parse_rational
from .errors import InputError
from .model import Affine, LNNet, Norm

FORMAT = "lnnet/1"
FORMAT_1_1 = "lnnet/1.1"
FEATURES = ("ln-affine", "widths")
"""The features of ``lnnet/1.1`` this reader knows (see the module doc)."""

__all__ = [
    "FEATURES",
    "FORMAT",
    "FORMAT_1_1",
    "U",
    "V",
    "check_writable",
    "dumps",
    "from_dict",
    "from_gadget",
    "gadget_affine",
    "load",
    "read_vector",
    "save",
    "to_dict",
    "to_gadget",
    "write_all_atomic",
    "write_atomic",
]


def to_dict(net: LNNet[fmpq]) -> dict[str, Any]:
    """The ``lnnet/1`` JSON object of an exact net."""

    def affine(a: Affine[fmpq]) -> dict[str, Any]:
        d: dict[str, Any] = {
            "W": [[format_rational(w) for w in row] for row in a.W],
            "b": [format_rational(v) for v in a.b],
        }
        if a.meta:
            d["meta"] = dict(a.meta)
        return d

    def layer(i: int, a: Affine[fmpq]) -> dict[str, Any]:
        d = affine(a)
        norm = net.norm(i)
        if not norm.is_identity:
            ln = {}
            for part in ("gain", "bias"):
                v = getattr(norm, part)
                if v is not None:
                    ln[part] = [format_rational(x) for x in v]
            d = {"W": d["W"], "b": d["b"], "ln": ln, **({"meta": d["meta"]} if "meta" in d else {})}
        return d

    requires = [
        f for f, used in (("ln-affine", bool(net.norms)), ("widths", net.width is None)) if used
    ]
    out: dict[str, Any] = {"format": FORMAT_1_1 if requires else FORMAT}
    if requires:
        out["requires"] = requires
    out |= {
        "input_dim": net.input_dim,
        "width": net.width,
        "eps": format_rational(net.eps),
        "layers": [layer(i, a) for i, a in enumerate(net.layers)],
        "readout": affine(net.readout),
        "classes": list(net.classes),
    }
    if net.meta:
        out["meta"] = dict(net.meta)
    return out


def from_dict(obj: Any, source: str = "net") -> LNNet[fmpq]:
    """Read an ``lnnet/1`` or ``lnnet/1.1`` object; :class:`InputError` names the first bad field.

    A file that requires a feature this reader does not know is refused.
    """

    def fail(where: str, what: str) -> InputError:
        return InputError(f"{source}: {where}: {what}")

    def number(v: Any, where: str) -> fmpq:
        if not isinstance(v, str):
            raise fail(where, f'numbers are strings "p/q" or "n", got {json.dumps(v)}')
        try:
            return parse_rational(v)
        except ValueError as e:
            raise fail(where, str(e)) from None

    def integer(key: str) -> int:
        v = obj.get(key)
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise fail(key, "must be a positive integer")
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
            rows.append(tuple(number(w, f"{where}.W[{i}][{j}]") for j, w in enumerate(row)))
        b = tuple(number(v, f"{where}.b[{i}]") for i, v in enumerate(a["b"]))
        meta = a.get("meta", {})
        if not isinstance(meta, Mapping):
            raise fail(f"{where}.meta", "must be an object")
        return Affine(tuple(rows), b, dict(meta))

    def norm(a: Any, where: str) -> Norm[fmpq]:
        ln = a.get("ln") if isinstance(a, Mapping) else None
        if ln is None:
            return Norm()
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
        return Norm(parts["gain"], parts["bias"])

    if not isinstance(obj, Mapping):
        raise InputError(f"{source}: not an lnnet/1 object")
    version = obj.get("format")
    if version not in (FORMAT, FORMAT_1_1):
        raise fail(
            "format",
            f"expected {FORMAT!r}, got {version!r} (this reader knows {FORMAT} and {FORMAT_1_1})",
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
    layers = obj.get("layers")
    if not isinstance(layers, list):
        raise fail("layers", "must be a list")
    classes = obj.get("classes")
    if not isinstance(classes, list) or not all(
        isinstance(c, (int, str)) and not isinstance(c, bool) for c in classes
    ):
        raise fail("classes", "must be a list of integers or strings")
    meta = obj.get("meta", {})
    if not isinstance(meta, Mapping):
        raise fail("meta", "must be an object")
    if "widths" in requires and obj.get("width") is None:
        width = None
    else:
        width = integer("width")
    norms = tuple(norm(a, f"layers[{i}]") for i, a in enumerate(layers))
    fields = dict(
        input_dim=integer("input_dim"),
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


def dumps(obj: Any) -> str:
    """Indented JSON with every innermost list (a row of numbers) on one line."""
    text = json.dumps(obj, indent=1)
    # JSON strings never hold a raw newline, so only layout whitespace is removed
    return _FLAT_LIST.sub(lambda m: _flatten(m.group(0)), text) + "\n"


def _flatten(block: str) -> str:
    return re.sub(r"\n\s*(?=\])", "", re.sub(r",\n\s*", ", ", re.sub(r"\[\n\s*", "[", block)))


_FLAT_LIST = re.compile(r"\[[^\[\]{}]*\]")


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
    """The width-3 fold layer ``h -> scale ((a . h - centre) u + offset v)``.

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


def load(path: str | os.PathLike[str]) -> LNNet[fmpq]:
    """Read an ``lnnet/1`` file; a missing or malformed file raises :class:`InputError`."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"{p}: cannot read: {getattr(e, 'strerror', None) or e}") from None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"{p}: not JSON ({e.msg} at line {e.lineno})") from None
    return from_dict(obj, str(p))


def publish(tmp: str, path: Path) -> None:
    """Give a finished temporary file the usual permissions and rename it to ``path``."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600
    os.replace(tmp, path)


def check_writable(path: str | os.PathLike[str]) -> None:
    """Raise :class:`InputError` now if ``path`` cannot be written later."""
    p = Path(path)
    folder = p.parent if str(p.parent) else Path(".")
    if p.is_dir():
        raise InputError(f"{p}: is a directory")
    if not folder.is_dir():
        raise InputError(f"{p}: no such folder {str(folder)!r}")
    if not os.access(folder, os.W_OK):
        raise InputError(f"{p}: folder not writable")


def write_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` via a temporary file in the same folder and a rename."""
    write_all_atomic([(path, text)])


def write_all_atomic(files: Sequence[tuple[str | os.PathLike[str], str | bytes]]) -> None:
    """Write several files so that either all of them appear or none does.

    Each goes to a temporary file in its own folder first; only when every one
    is complete are they renamed into place.  ``str`` contents are written as
    UTF-8 text, ``bytes`` as they are.
    """
    done: list[tuple[str, Path]] = []
    p = Path(".")
    try:
        for path, text in files:
            p = Path(path)
            fd, tmp = tempfile.mkstemp(dir=p.parent or ".", prefix=f".{p.name}.", suffix=".tmp")
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
