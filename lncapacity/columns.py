"""Columns of numbers read exactly, in bulk: decimal text to rationals, equal rows found.

A data file of a million rows holds millions of numbers; reading each through the general
grammar (:func:`lncapacity.arith.parse_rational`) costs microseconds apiece.  Most are
plain decimals (``-0.125``, ``3``, ``1.5e-3``): :func:`decimal_column` reads those with
NumPy, a whole column at a time, as an integer mantissa ``M`` (at most
:data:`MANTISSA_DIGITS` digits) and a power of ten ``k``, the value being exactly
``M * 10**k``, and leaves every other text (fractions ``p/q``, longer mantissas, anything
malformed) to the caller, marked undone.  The value of a text is the one
:func:`~lncapacity.arith.parse_rational` gives it; only the route differs.

:func:`row_groups` says which rows of an integer key array are equal, by one sort:
rows of canonical keys (:attr:`DecimalColumn.keys`, a float's bits) are equal exactly when
the points they stand for are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import repeat

import numpy as np
from flint import fmpq

from .arith import MAX_EXPONENT

__all__ = ["MANTISSA_DIGITS", "DecimalColumn", "decimal_column", "row_groups"]

MANTISSA_DIGITS = 18
"""The most digits of a mantissa read in bulk: ``10**18 - 1`` fits an int64."""

_WIDEST = 32
"""Texts longer than this are left to the caller (no array as wide as the longest field)."""

_C0, _C9, _CDOT, _CPLUS, _CMINUS, _CE, _Ce = (ord(c) for c in "09.+-Ee")  # character codes


@dataclass(frozen=True)
class DecimalColumn:
    """A column of texts read by :func:`decimal_column`."""

    values: list[fmpq | None]
    """Each text's exact value, None where the text was left to the caller."""
    done: np.ndarray
    """Bool: which texts were read (``values[i]`` is not None)."""
    floats: np.ndarray
    """float64: each value correctly rounded (``±inf`` beyond the range, a zero value
    ``+0.0``), as :func:`lncapacity.arith.to_float` rounds it; NaN where not done."""
    keys: np.ndarray
    """int64 ``(n, 2)``: ``(M, k)`` with ``M`` not divisible by 10 (``(0, 0)`` for zero):
    two done texts have equal values exactly when their keys are equal."""


def decimal_column(texts: Sequence[str]) -> DecimalColumn:
    """Read the plain decimals among ``texts`` (already stripped of surrounding spaces).

    A text is read when it matches ``[+-]?[0-9]*(\\.[0-9]*)?([eE][+-]?[0-9]+)?`` with at
    least one mantissa digit (ASCII digits only), at most :data:`MANTISSA_DIGITS` mantissa
    digits and 6 exponent digits, and an exponent of at most
    :data:`~lncapacity.arith.MAX_EXPONENT`: the decimals the general grammar reads as
    ``mantissa * 10**(exponent - fraction digits)``, which is what this gives them.
    """
    n = len(texts)
    values: list[fmpq | None] = [None] * n
    floats = np.full(n, np.nan)
    keys = np.zeros((n, 2), dtype=np.int64)
    done = np.zeros(n, dtype=bool)
    lengths = np.fromiter(map(len, texts), dtype=np.intp, count=n)
    rows = np.nonzero((lengths > 0) & (lengths <= _WIDEST))[0]
    if not len(rows):
        return DecimalColumn(values, done, floats, keys)
    picked = texts if len(rows) == n else [texts[i] for i in rows.tolist()]
    arr = np.array(picked, dtype=str)  # '<U{w}', padded with NULs
    codes = arr.view(np.uint32).reshape(len(picked), arr.dtype.itemsize // 4)
    ok, mantissa, power = _decimals(codes)
    # a text ending in NULs is no decimal (the array drops them: its last character is read)
    width, last = codes.shape[1], lengths[rows] - 1
    ok &= (last < width) & (codes[np.arange(len(rows)), np.minimum(last, width - 1)] != 0)
    rows, mantissa, power = rows[ok], mantissa[ok], power[ok]
    done[rows] = True
    # the values, by power of ten (a column has few): fmpq reduces p / 10^-k in C
    out = np.empty(len(rows), dtype=object)
    for k in np.unique(power).tolist():
        at = np.nonzero(power == k)[0]
        ps = mantissa[at].tolist()
        if k > 0:
            ps = [p * 10**k for p in ps]
        out[at] = list(map(fmpq, ps, repeat(10 ** max(-k, 0))))
    if len(rows) == n:
        values = out.tolist()
    else:
        for i, v in zip(rows.tolist(), out.tolist(), strict=True):
            values[i] = v
    # Python's float() of a decimal is correctly rounded (to nearest, ties to even), as
    # to_float's p / q is; the exact zero is +0.0 there ("-0" is 0), an underflow keeps its sign
    good = picked if len(rows) == n else [texts[i] for i in rows.tolist()]
    f = np.fromiter(map(float, good), dtype=np.float64, count=len(good))
    floats[rows] = np.where(mantissa == 0, 0.0, f)
    keys[rows] = _canonical(mantissa, power)
    return DecimalColumn(values, done, floats, keys)


# the grammar as an automaton over character classes, run on every text at once
_DIGIT, _DOT, _SIGN, _EXP, _PAD, _OTHER = range(6)
_START, _SIGNED, _INT, _DOT0, _FRAC, _E, _ESIGN, _EDIGIT, _END, _BAD = range(10)
_CLASS = np.full(129, _OTHER, dtype=np.int8)  # by character code, 128 for all beyond ASCII
_CLASS[_C0 : _C9 + 1] = _DIGIT
_CLASS[[_CDOT, _CPLUS, _CMINUS, _CE, _Ce, 0]] = [_DOT, _SIGN, _SIGN, _EXP, _EXP, _PAD]
_NEXT = np.full((10, 6), _BAD, dtype=np.int8)  # state, class -> state
for _state, _moves in {
    _START: {_DIGIT: _INT, _DOT: _DOT0, _SIGN: _SIGNED},
    _SIGNED: {_DIGIT: _INT, _DOT: _DOT0},
    _INT: {_DIGIT: _INT, _DOT: _FRAC, _EXP: _E, _PAD: _END},
    _DOT0: {_DIGIT: _FRAC},  # a dot before any digit: one must follow
    _FRAC: {_DIGIT: _FRAC, _EXP: _E, _PAD: _END},
    _E: {_DIGIT: _EDIGIT, _SIGN: _ESIGN},
    _ESIGN: {_DIGIT: _EDIGIT},
    _EDIGIT: {_DIGIT: _EDIGIT, _PAD: _END},
    _END: {_PAD: _END},
}.items():
    for _cls, _to in _moves.items():
        _NEXT[_state, _cls] = _to
_ACCEPT = np.zeros(10, dtype=bool)
_ACCEPT[[_INT, _FRAC, _EDIGIT, _END]] = True
_MANTISSA = np.zeros(10, dtype=bool)  # states in which a digit belongs to the mantissa
_MANTISSA[[_START, _SIGNED, _INT, _DOT0, _FRAC]] = True
_FRACTION = np.zeros(10, dtype=bool)  # ... and is a digit after the point
_FRACTION[[_DOT0, _FRAC]] = True


def _decimals(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Which rows of ``codes`` (character codes, one text a row, 0-padded) are plain
    decimals, with their signed mantissas and powers of ten (garbage where not)."""
    m = len(codes)
    state = np.full(m, _START, dtype=np.int8)
    mantissa = np.zeros(m, dtype=np.int64)
    significant = np.zeros(m, dtype=np.int64)  # mantissa digits from the first nonzero one
    fraction = np.zeros(m, dtype=np.int64)
    exponent = np.zeros(m, dtype=np.int64)
    exp_digits = np.zeros(m, dtype=np.int64)
    negative = np.zeros(m, dtype=bool)
    exp_negative = np.zeros(m, dtype=bool)
    with np.errstate(over="ignore"):  # rows that overflow have too many digits: not ok
        for column in np.ascontiguousarray(codes.T):
            cls = _CLASS[np.minimum(column, 128)]
            d = column.astype(np.int64) - _C0
            digit = cls == _DIGIT
            mant = digit & _MANTISSA[state]
            significant += mant & ((mantissa != 0) | (d != 0))
            mantissa = np.where(mant, mantissa * 10 + d, mantissa)
            fraction += digit & _FRACTION[state]
            ex = digit & ~_MANTISSA[state]
            exponent = np.where(ex, exponent * 10 + d, exponent)
            exp_digits += ex
            minus = column == _CMINUS
            negative |= minus & (state == _START)
            exp_negative |= minus & (state == _E)
            state = _NEXT[state, cls]
    ok = _ACCEPT[state] & (significant <= MANTISSA_DIGITS) & (exp_digits <= 6)
    exponent = np.where(exp_negative, -exponent, exponent)
    ok &= np.abs(exponent) <= MAX_EXPONENT
    return ok, np.where(negative, -mantissa, mantissa), exponent - fraction


def _canonical(mantissa: np.ndarray, power: np.ndarray) -> np.ndarray:
    """``(M, k)`` with the trailing zeros of ``M`` moved into ``k`` (``(0, 0)`` for zero):
    the one such pair of each decimal value."""
    mantissa, power = mantissa.copy(), power.copy()
    power[mantissa == 0] = 0
    while True:
        tens = (mantissa % 10 == 0) & (mantissa != 0)
        if not tens.any():
            break
        mantissa[tens] //= 10
        power[tens] += 1
    return np.stack([mantissa, power], axis=1)


def row_groups(keys: np.ndarray) -> tuple[list[int], bool]:
    """For a 2-D array of keys: a group number for each row (equal numbers exactly for equal
    rows) and whether any two rows are equal."""
    rows = np.ascontiguousarray(keys)
    if rows.shape[1] == 0:
        return [0] * len(rows), len(rows) > 1
    flat = rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()
    unique, inverse = np.unique(flat, return_inverse=True)
    return inverse.ravel().tolist(), len(unique) < len(rows)
