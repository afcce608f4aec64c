"""Elementary functions from IEEE 754 ``+ - * /`` and ``sqrt``: the same bits on every processor.

NumPy's ``arctan2``, ``tan``, ``log``, ... are its own vector code, chosen per processor
(with and without AVX-512 they differ in the last bit), and the C library's ``math.atan2``,
``math.log``, ... have variants per processor too (with and without FMA).  The searches of
:mod:`lncapacity.construct` decide with such values, and one last bit can send them down
another path.  Here every function is a fixed sequence of NumPy's elementwise ``+``, ``-``,
``*``, ``/`` and ``sqrt`` (correctly rounded on every processor by IEEE 754), comparisons,
and operations that are exact (``abs``, ``copysign``, ``rint``, ``floor``, ``frexp``,
``ldexp``, ``where``), with constants converted once from decimal strings by Python's
correctly rounded :class:`~fractions.Fraction`: the same inputs give the same bits on every
machine.

The methods are the textbook ones: an argument reduced exactly or nearly so (by ``pi / 2``
in three parts, by ``ln 2`` in two, to ``[sqrt(1/2), sqrt(2))`` by the binary exponent, or
``atan``'s to ``|r| <= 1/8`` by ``atan(x) = atan(c) + atan((x - c) / (1 + c x))`` with
``c = i / 4``), then a Taylor polynomial in Horner form, truncated where its remainder
falls below ``2^-56`` of the result, and constants kept to double-double precision where
they are added.  The results are within a few ulps of the true values in the ranges stated
(``tests/test_elementary.py`` measures them against mpmath); outside them they are still
the same bits everywhere, only less accurate.

Besides: :func:`angle_key`, a number ordered as ``arctan2(y, x)`` by one division, for
sorting directions without computing their angles.

Every function takes numbers or arrays; given only numbers it returns a ``float``.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

__all__ = [
    "HALF_PI",
    "PI",
    "TWO_PI",
    "angle_key",
    "atan",
    "atan2",
    "cos",
    "direction",
    "exp",
    "geomspace",
    "log",
    "log2",
    "sin",
    "sincos",
    "tan",
]

_PI = Fraction("3.1415926535897932384626433832795028841971694")
_LN2 = Fraction("0.693147180559945309417232121458176568075500134")
_ATAN_QUARTERS = (  # atan(i / 4), i = 0 .. 4
    Fraction(0),
    Fraction("0.244978663126864154172082481211275810914144098"),
    Fraction("0.463647609000806116214256231461214402028537054"),
    Fraction("0.643501108793284386802809228717322638041510591"),
    _PI / 4,
)


def _split(x: Fraction) -> tuple[float, float]:
    """``x`` as ``hi + lo``: ``hi`` the float nearest ``x``, ``lo`` the float nearest the rest."""
    hi = float(x)
    return hi, float(x - Fraction(hi))


def _truncated(x: Fraction, bits: int) -> float:
    """``x`` with its significand cut to ``bits`` bits (so small multiples of it are exact)."""
    e = 0
    while abs(x) * 2**e < 2 ** (bits - 1):
        e += 1
    while abs(x) * 2**e >= 2**bits:
        e -= 1
    return float(Fraction(int(x * 2**e), 2**e))


PI = float(_PI)
"""The float nearest ``pi`` (``math.pi``)."""
HALF_PI = float(_PI / 2)
TWO_PI = float(2 * _PI)
_PI_HI, _PI_LO = _split(_PI)
_HALF_PI_HI, _HALF_PI_LO = _split(_PI / 2)
_TWO_OVER_PI = float(2 / _PI)
# pi / 2 in three parts of 33 bits and the rest: k P1 and k P2 are exact for |k| < 2^20
_P1 = _truncated(_PI / 2, 33)
_P2 = _truncated(_PI / 2 - Fraction(_P1), 33)
_P3 = float(_PI / 2 - Fraction(_P1) - Fraction(_P2))
# ln 2 in two parts: k LN2_HI is exact for |k| < 2^11
_LN2_HI = _truncated(_LN2, 42)
_LN2_LO = float(_LN2 - Fraction(_LN2_HI))
_INV_LN2 = float(1 / _LN2)
_INV_LN2_HI, _INV_LN2_LO = _split(1 / _LN2)
_SQRT_HALF = math.sqrt(0.5)  # where log splits its argument (any point near sqrt(1/2) will do)
_ATAN_HI, _ATAN_LO = (np.array(v) for v in zip(*map(_split, _ATAN_QUARTERS), strict=True))

# Taylor coefficients, highest power first (Horner), each the float nearest the rational
_SIN = [float(Fraction((-1) ** n, math.factorial(2 * n + 1))) for n in range(8, 0, -1)]  # r^3..r^17
_COS = [float(Fraction((-1) ** n, math.factorial(2 * n))) for n in range(10, 1, -1)]  # r^4..r^20
_ATAN = [float(Fraction((-1) ** n, 2 * n + 1)) for n in range(9, 0, -1)]  # r^3..r^19, |r|<=1/8
_ATANH = [float(Fraction(1, 2 * n + 1)) for n in range(11, 0, -1)]  # s^3..s^23, |s| <= 0.172
_EXP = [float(Fraction(1, math.factorial(n))) for n in range(13, -1, -1)]  # r^0..r^13, |r| <= 0.35
_EXP_TOP = 709.782712893384  # exp overflows above (the float below ln(2^1024))
_EXP_BOTTOM = -745.1332191019412  # and is 0 below (ln 2^-1075)


def _args(*xs: Any) -> tuple[bool, list[np.ndarray]]:
    """Whether all arguments are numbers, and each as a float64 array."""
    return all(np.ndim(x) == 0 for x in xs), [np.asarray(x, dtype=np.float64) for x in xs]


def _out(scalar: bool, v: np.ndarray) -> Any:
    return float(v) if scalar else v


def _horner(z: np.ndarray, coefficients: list[float]) -> np.ndarray:
    """``c_0 z^n + ... + c_n``, one multiplication and one addition a step (never fused)."""
    acc = z * coefficients[0] + coefficients[1]
    for c in coefficients[2:]:
        acc = acc * z + c
    return acc


def _quadrant(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``x = r + k pi / 2`` with ``|r| <= pi / 4`` (nearly): ``r`` and ``k mod 4``."""
    k = np.rint(x * _TWO_OVER_PI)
    r = ((x - k * _P1) - k * _P2) - k * _P3
    with np.errstate(invalid="ignore"):  # NaN or huge: r is NaN or meaningless anyway
        return r, k.astype(np.int64) & 3


def _sin_cos_reduced(r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    z = r * r
    s = r + (r * z) * _horner(z, _SIN)
    c = (1 - z * 0.5) + (z * z) * _horner(z, _COS)
    return s, c


_SIN_SIGN = np.array([1.0, 1.0, -1.0, -1.0])  # per quadrant: sin x = +-sin r or +-cos r
_COS_SIGN = np.array([1.0, -1.0, -1.0, 1.0])


def sincos(x: Any) -> tuple[Any, Any]:
    """``(sin x, cos x)``, within a few ulps for ``|x| < 2^19`` (one reduction for both)."""
    scalar, (x,) = _args(x)
    r, n = _quadrant(x)
    s, c = _sin_cos_reduced(r)
    odd = (n & 1).astype(bool)
    return (
        _out(scalar, np.where(odd, c, s) * _SIN_SIGN[n]),
        _out(scalar, np.where(odd, s, c) * _COS_SIGN[n]),
    )


def direction(angle: Any) -> np.ndarray:
    """The unit vectors ``(cos a, sin a)`` of the angles (along a new last axis)."""
    s, c = sincos(angle)
    return np.stack([c, s], axis=-1)


def sin(x: Any) -> Any:
    """``sin x``, within a few ulps for ``|x| < 2^19``."""
    return sincos(x)[0]


def cos(x: Any) -> Any:
    """``cos x``, within a few ulps for ``|x| < 2^19``."""
    return sincos(x)[1]


def tan(x: Any) -> Any:
    """``tan x``, within a few ulps for ``|x| < 2^19``."""
    scalar, (x,) = _args(x)
    r, n = _quadrant(x)
    s, c = _sin_cos_reduced(r)
    with np.errstate(divide="ignore", invalid="ignore"):
        v = np.where((n & 1).astype(bool), -c / s, s / c)
    return _out(scalar, v)


# atan2's octants: the angle is base + sign (hi + lo), by 2 steep + left (x < 0)
_BASE_HI = np.array([0.0, _PI_HI, _HALF_PI_HI, _HALF_PI_HI])
_BASE_LO = np.array([0.0, _PI_LO, _HALF_PI_LO, _HALF_PI_LO])
_OCTANT_SIGN = np.array([1.0, -1.0, -1.0, 1.0])


def atan2(y: Any, x: Any) -> Any:
    """The angle of ``(x, y)`` in ``[-pi, pi]``, as ``numpy.arctan2`` (signed zeros included),
    within a few ulps for finite arguments (NaN for NaN)."""
    scalar, (y, x) = _args(y, x)
    ax, ay = np.abs(x), np.abs(y)
    steep = ay > ax
    lo, hi = np.where(steep, ax, ay), np.where(steep, ay, ax)  # lo <= hi
    with np.errstate(divide="ignore", invalid="ignore"):
        i = np.rint((lo / hi) * 4)  # the nearest quarter c = i / 4
        i = np.where(np.isfinite(i), i, 0.0)  # 0 / 0, NaN
        c = i * 0.25
        r = (lo - c * hi) / (hi + c * lo)  # tan(angle - atan c), |r| <= 1/8
    r = np.where(hi == 0, 0.0, r)  # at the origin; NaN stays NaN
    z = r * r
    j = i.astype(np.intp)
    octant = 2 * steep + np.signbit(x)
    sign = _OCTANT_SIGN[octant]
    hi_part = _ATAN_HI[j] * sign
    lo_part = (_ATAN_LO[j] + (r + (r * z) * _horner(z, _ATAN))) * sign
    a = (_BASE_HI[octant] + hi_part) + (_BASE_LO[octant] + lo_part)
    return _out(scalar, np.copysign(a, y))


def atan(x: Any) -> Any:
    """``atan x`` in ``[-pi/2, pi/2]``, within a few ulps."""
    scalar, (x,) = _args(x)
    return _out(scalar, atan2(x, np.ones_like(x)))


def _log_parts(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``x = 2^e m`` with ``m`` in ``[sqrt(1/2), sqrt(2))``: ``e`` (a float) and ``log m``."""
    m, e = np.frexp(x)
    low = m < _SQRT_HALF
    m = np.where(low, m * 2, m)
    e = e - low
    f = m - 1  # exact
    with np.errstate(invalid="ignore", divide="ignore"):  # 0, inf, NaN: see _edges
        s = f / (2 + f)  # log m = 2 atanh s
    z = s * s
    return e.astype(np.float64), 2 * s + (2 * s * z) * _horner(z, _ATANH)


def log(x: Any) -> Any:
    """``ln x``, within a few ulps (``-inf`` at 0, NaN below, ``inf`` at ``inf``)."""
    scalar, (x,) = _args(x)
    e, t = _log_parts(x)
    v = e * _LN2_HI + (e * _LN2_LO + t)
    return _out(scalar, _edges(x, v))


def log2(x: Any) -> Any:
    """``log2 x``, within a few ulps (exact at powers of two)."""
    scalar, (x,) = _args(x)
    e, t = _log_parts(x)
    v = e + (t * _INV_LN2_HI + t * _INV_LN2_LO)
    return _out(scalar, _edges(x, v))


def _edges(x: np.ndarray, v: np.ndarray) -> np.ndarray:
    """A logarithm's values at 0, below 0, at ``inf`` and NaN."""
    v = np.where(x == 0, -np.inf, v)
    v = np.where(x == np.inf, np.inf, v)
    return np.where((x < 0) | np.isnan(x), np.nan, v)


def exp(x: Any) -> Any:
    """``e^x``, within a few ulps (0 below ``-745.13``, ``inf`` above ``709.78``)."""
    scalar, (x,) = _args(x)
    inside = np.clip(np.where(np.isnan(x), 0.0, x), _EXP_BOTTOM, _EXP_TOP)
    k = np.rint(inside * _INV_LN2)
    r = (inside - k * _LN2_HI) - k * _LN2_LO  # |r| <= ln(2) / 2, nearly
    v = np.ldexp(_horner(r, _EXP), k.astype(np.int64))  # 2^k e^r, exact scaling
    v = np.where(x > _EXP_TOP, np.inf, np.where(x < _EXP_BOTTOM, 0.0, v))
    return _out(scalar, np.where(np.isnan(x), np.nan, v))


def geomspace(start: float, stop: float, num: int) -> np.ndarray:
    """``num`` numbers from ``start`` to ``stop`` (both positive, each exactly) in geometric
    progression, as ``numpy.geomspace``: ``start (stop / start)^(i / (num - 1))``."""
    ratio = log(np.asarray(stop / start, dtype=np.float64))
    out = start * exp(np.arange(num) / (num - 1) * ratio)
    out[[0, -1]] = start, stop
    return out


def angle_key(y: Any, x: Any) -> Any:
    """A number in ``[-2, 2]`` that increases with the angle ``arctan2(y, x)`` in ``[-pi, pi]``
    (the "diamond angle"): ``y / (|x| + |y|)`` for ``x >= 0``, ``+-2 - y / (|x| + |y|)`` for
    ``x < 0`` (the sign of ``y``); 0 at the origin.  One division, so the same bits everywhere:
    for sorting directions (a ``2 pi`` turn adds 4)."""
    scalar, (y, x) = _args(y, x)
    size = np.abs(x) + np.abs(y)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(size > 0, y / size, 0.0)
    return _out(scalar, np.where(x < 0, np.copysign(2.0, y) - t, t))
