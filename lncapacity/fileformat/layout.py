"""The layout of the JSON files this package writes (nets, certificates): indented, every row
of numbers on one line."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["dumps"]


def dumps(obj: Any) -> str:
    """Indented JSON with every innermost list (a row of numbers) on one line.

    The layout of ``json.dumps(obj, indent=1)`` with each list that holds no list or object
    written on one line as ``json.dumps`` writes it; algebraic numbers (``{"ref": k}`` and the
    ``radicals`` entries) also on one line each.  Written by ``_encode``, a row at a time
    at C speed; objects it leaves alone (a string with a bracket or brace, which the layout
    of ``_dumps_by_layout`` treats specially, a key that is not a string, a radicals
    list) are written by ``_dumps_by_layout``, which gives every object its layout.
    """
    if isinstance(obj, Mapping) and "radicals" in obj:
        return _dumps_by_layout(obj)
    out: list[str] = []
    try:
        _encode(obj, "\n", out)
    except _Unusual:
        return _dumps_by_layout(obj)
    return "".join(out) + "\n"


class _Unusual(Exception):
    """An object ``_encode`` leaves to ``_dumps_by_layout``."""


_BRACKETS = re.compile(r"[\[\]{}]")


def _encode(obj: Any, newline: str, out: list[str]) -> None:
    """Append the text of ``obj`` at the indentation ``newline`` ends with."""
    if isinstance(obj, dict):
        if not obj:
            out.append("{}")
            return
        inner = newline + " "
        sep = "{" + inner
        for key, value in obj.items():
            if not isinstance(key, str) or _BRACKETS.search(key):
                raise _Unusual
            out.append(sep + json.dumps(key) + ": ")
            _encode(value, inner, out)
            sep = "," + inner
        out.append(newline + "}")
    elif isinstance(obj, (list, tuple)):
        kinds = set(map(type, obj))
        if not any(issubclass(k, (list, tuple, dict)) for k in kinds):  # a row: one line
            strings = obj if kinds == {str} else [v for v in obj if isinstance(v, str)]
            if _BRACKETS.search("".join(strings)):
                raise _Unusual
            out.append(json.dumps(obj))
            return
        inner = newline + " "
        sep = "[" + inner
        for value in obj:
            out.append(sep)
            _encode(value, inner, out)
            sep = "," + inner
        out.append(newline + "]")
    elif isinstance(obj, str):
        if _BRACKETS.search(obj):
            raise _Unusual
        out.append(json.dumps(obj))
    elif obj is None or isinstance(obj, (bool, int, float)):
        out.append(json.dumps(obj))
    else:
        raise _Unusual  # json.dumps says what it cannot write


def _dumps_by_layout(obj: Any) -> str:
    """:func:`dumps` by ``json.dumps(obj, indent=1)`` and regular expressions over its text:
    the definition of the layout, for any object."""
    text = json.dumps(obj, indent=1)
    # JSON strings never hold a raw newline, so only layout whitespace is removed
    text = _FLAT_LIST.sub(lambda m: _flatten(m.group(0)), text)
    if isinstance(obj, Mapping) and "radicals" in obj:  # algebraic numbers on one line each
        text = _FLAT_ALGEBRAIC.sub(lambda m: re.sub(r"\s*\n\s*", "", m.group(0)), text)
        text = _FLAT_REFS.sub(lambda m: _flatten(m.group(0)), text)
    return text + "\n"


def _flatten(block: str) -> str:
    return re.sub(r"\n\s*(?=\])", "", re.sub(r",\n\s*", ", ", re.sub(r"\[\n\s*", "[", block)))


_FLAT_LIST = re.compile(r"\[[^\[\]{}]*\]")
_FLAT_ALGEBRAIC = re.compile(r'\{\s*"(?:add|sub|mul|div|sqrt|ref|root)": [^{}]*\}')
_FLAT_REFS = re.compile(r'\[(?:[^\[\]{}]|\{"ref": [0-9]+\})*\]')
