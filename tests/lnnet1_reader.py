"""The ``lnnet/1`` reader of lncapacity 0.1.0 (commit d63ca09), verbatim but for the imports.

Kept so that the tests can show what a reader from before ``lnnet/1.1`` does with
a newer file: it must refuse it, never misread it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from flint import fmpq

from lncapacity.arith import parse_rational
from lncapacity.errors import InputError
from lncapacity.model import Affine, LNNet

FORMAT = "lnnet/1"


def from_dict(obj: Any, source: str = "net") -> LNNet[fmpq]:
    """Read an ``lnnet/1`` object; :class:`InputError` names the first bad field."""

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

    if not isinstance(obj, Mapping):
        raise InputError(f"{source}: not an lnnet/1 object")
    if obj.get("format") != FORMAT:
        raise fail("format", f"expected {FORMAT!r}, got {obj.get('format')!r}")
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
    fields = dict(
        input_dim=integer("input_dim"),
        width=integer("width"),
        eps=number(obj.get("eps"), "eps"),
        layers=tuple(affine(a, f"layers[{i}]") for i, a in enumerate(layers)),
        readout=affine(obj.get("readout"), "readout"),
        classes=tuple(classes),
        meta=dict(meta),
    )
    try:
        return LNNet(**fields)
    except InputError as e:
        raise InputError(f"{source}: {e}") from None
