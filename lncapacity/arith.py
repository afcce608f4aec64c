"""Arithmetic backends: exact rationals and rigorous balls.

* Exact rationals are python-flint :class:`~flint.fmpq`.  Every weight of an
  :class:`~lncapacity.model.LNNet` and every input coordinate is one.
* Rigorous balls are python-flint :class:`~flint.arb` (midpoint-radius
  intervals, every operation rounded outwards), used for anything that needs a
  square root: the certificate, exact prediction, and the construction's
  decisions.  :func:`precision` sets the working precision for a block.

Conversions never go through a float silently: :func:`exact` reads decimal text
as the decimal it spells (``"0.1"`` is 1/10) and a binary float as the dyadic
rational it is.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from fractions import Fraction
from numbers import Integral, Rational
from operator import attrgetter, truediv
from typing import Any

from flint import arb, ctx, fmpq, fmpz

__all__ = [
    "arb_to_fmpq",
    "ball",
    "dyadic_between",
    "exact",
    "finite_float",
    "format_rational",
    "json_float",
    "log2_magnitude",
    "lower_bound_float",
    "parse_rational",
    "precision",
    "shown",
    "to_float",
    "to_floats",
]


# ---------------------------------------------------------------------------
# exact rationals

MAX_EXPONENT = 4300
"""Decimal exponents beyond this are refused: ``1e999999999`` would be a gigantic integer."""

MAX_DIGITS = 4300
"""Longest integer (numerator, denominator or decimal mantissa), in digits, that is read.

Python's own ``int()`` refuses longer decimal strings by default (quadratic-time
conversion); every number this package writes is far shorter."""

# the lnnet/1 grammar: an optional minus, ASCII digits, optionally "/" and ASCII digits
_STRICT = re.compile(r"(-?[0-9]+)(?:/([0-9]+))?")
# user text (CSV fields, --eps): also a sign "+", decimals and exponents, "p/q" with a sign
_FRACTION = re.compile(r"([+-]?[0-9]+)/([0-9]+)")
_DECIMAL = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?(?:[eE]([+-]?[0-9]+))?")


def shown(value: object, limit: int = 40) -> str:
    """``repr(value)``, cut to about ``limit`` characters: errors never echo a whole file."""
    r = repr(value)
    return r if len(r) <= limit else f"{r[: limit - 3]}... ({len(r)} characters)"


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff]")
"""Characters a terminal acts on or hides: C0 and C1 controls (escape sequences, bells,
carriage returns), zero-width and direction marks, line and paragraph separators."""


def printable(value: object) -> str:
    """``str(value)`` with every control character escaped as Python writes it (``\\x1b``,
    ``\\u202e``): text from data (labels, names) printed to a terminal cannot clear the
    screen, set its title or reorder what it shows.  The one helper for it: the command
    line's text outputs and error lines go through it."""
    return _CONTROL.sub(lambda m: m[0].encode("unicode_escape").decode("ascii"), str(value))


MAX_EPS = fmpq(10) ** 300
"""The largest LayerNorm ``eps`` taken: the float backends add it to a variance, so it must
be a float (and an ``eps`` this large leaves every LayerNorm all but linear)."""


def epsilon(x: object) -> fmpq:
    """``x`` as a LayerNorm ``eps``: exact, ``0 <= eps <=`` :data:`MAX_EPS`; ValueError
    (saying which bound) otherwise."""
    try:
        q = exact(x)
    except (ValueError, TypeError) as e:
        raise ValueError(f"eps must be a finite number: {e}") from None
    if q < 0:
        raise ValueError(f"eps must be >= 0, got {shown(x)}")
    if q > MAX_EPS:
        raise ValueError(f"eps must be at most 1e300 (float range), got {shown(x)}")
    return q


def exact(x: object) -> fmpq:
    """The exact rational value of ``x``.

    Accepts ints, :class:`fmpq`, :class:`fractions.Fraction`, finite floats
    (their exact dyadic value) and decimal or ``"p/q"`` text.  Raises
    :class:`ValueError` for anything else, including NaN and infinities.
    """
    if isinstance(x, fmpq):
        return x
    if isinstance(x, (bool,)):
        raise ValueError(f"not a number: {x!r}")
    if isinstance(x, (Integral, fmpz)):
        return fmpq(int(x))
    if isinstance(x, Rational):
        return fmpq(int(x.numerator), int(x.denominator))
    if isinstance(x, str):
        return parse_rational(x, decimals=True)
    try:
        f = Fraction(x)  # floats, numpy scalars, Decimal
    except (TypeError, ValueError, OverflowError) as e:
        raise ValueError(f"not a finite number: {shown(str(x))}") from e
    return fmpq(f.numerator, f.denominator)


def parse_rational(text: str, *, decimals: bool = False) -> fmpq:
    """Parse the ``lnnet/1`` number grammar; with ``decimals`` also user-written decimals.

    Without ``decimals`` (``lnnet/1`` files) exactly ``-?[0-9]+(/[0-9]+)?`` is
    accepted: ASCII digits, no spaces, no ``+``, no sign in the denominator,
    which must not be 0.  With ``decimals`` (CSV fields, ``--eps``) surrounding
    spaces, a ``+``, a sign on the numerator of ``"p/q"``, and decimal text such
    as ``"0.25"`` or ``"-1e-5"`` are read too, exactly (never via a float).
    Integers longer than :data:`MAX_DIGITS` digits and exponents beyond
    :data:`MAX_EXPONENT` are refused.  Raises :class:`ValueError` (a message
    that quotes at most the first 40 characters of ``text``).
    """
    if not isinstance(text, str):
        raise ValueError(f"not a number string: {type(text).__name__}")
    kind = "a rational" if decimals else 'an integer or "p/q"'
    s = text.strip() if decimals else text
    if len(s) > 2 * MAX_DIGITS + 16:  # before any regular expression runs over it
        raise ValueError(f"{shown(text)} is too long (numbers have at most {MAX_DIGITS} digits)")
    m = _STRICT.fullmatch(s) or (_FRACTION.fullmatch(s) if decimals else None)
    if m:
        num, den = m.group(1), m.group(2) or "1"
        if max(len(num.lstrip("+-")), len(den)) > MAX_DIGITS:
            raise ValueError(f"{shown(text)} has more than {MAX_DIGITS} digits")
        if int(den) == 0:
            raise ValueError(f"{shown(text)} divides by zero")
        return fmpq(int(num), int(den))
    d = _DECIMAL.fullmatch(s) if decimals else None
    if d is None or not (d.group(2) or d.group(3)):
        raise ValueError(f"{shown(text)} is not {kind}")
    sign, whole, frac, e = d.group(1), d.group(2), d.group(3) or "", d.group(4)
    if len(whole) + len(frac) > MAX_DIGITS:
        raise ValueError(f"{shown(text)} has more than {MAX_DIGITS} digits")
    if e and (len(e.lstrip("+-")) > 6 or abs(int(e)) > MAX_EXPONENT):
        raise ValueError(f"{shown(text)} is out of range (exponent beyond ±{MAX_EXPONENT})")
    exponent = (int(e) if e else 0) - len(frac)
    mantissa = int(whole + frac) * (-1 if sign == "-" else 1)
    if exponent >= 0:
        return fmpq(mantissa * 10**exponent)
    return fmpq(mantissa, 10 ** (-exponent))


def to_float(x: Any) -> float:
    """``x`` as a float64, ``±inf`` beyond the float range: never raises ``OverflowError``.

    The one conversion of exact numbers to floats (the float backends, export, pictures,
    explanations): exact rationals (:class:`fmpq`, ``int``, :class:`fmpz`,
    :class:`fractions.Fraction`) are correctly rounded; a ball (:class:`arb`) gives its
    midpoint, an algebraic number (anything with a ``ball(prec)`` method, such as
    :class:`lncapacity.algebraic.Radical`) the midpoint of its 128-bit ball; floats and
    NumPy scalars pass through ``float``.  Magnitudes beyond the largest float become
    ``±inf``, below the smallest ``±0.0``, so a float computation with them reports
    "overflow or NaN" instead of crashing; where a finite float is required, check
    ``math.isfinite`` (see :func:`finite_float`).
    """
    if isinstance(x, float):
        return x
    if isinstance(x, fmpq):
        p, r = int(x.p), int(x.q)
    elif isinstance(x, arb):  # before the abstract classes, whose checks are slow
        return _arb_float(x)
    elif isinstance(x, (Integral, fmpz)) and not isinstance(x, bool):
        p, r = int(x), 1
    elif isinstance(x, Fraction):
        p, r = x.numerator, x.denominator
    elif callable(getattr(x, "ball", None)):
        with precision(128):
            return _arb_float(x.ball(128))
    else:
        return float(x)
    try:
        return p / r  # int true division rounds correctly
    except OverflowError:
        return math.inf if p > 0 else -math.inf


def to_floats(values: Iterable[Any]) -> list[float]:
    """:func:`to_float` of each value; exact rationals at C speed (``p / q`` of Python ints,
    correctly rounded, as :func:`to_float` divides them)."""
    values = values if isinstance(values, (list, tuple)) else list(values)
    if set(map(type, values)) <= {fmpq}:
        try:
            return list(
                map(truediv, map(int, map(_NUMERATOR, values)), map(int, map(_DENOMINATOR, values)))
            )
        except OverflowError:  # beyond the float range: to_float saturates
            pass
    return [to_float(v) for v in values]


_NUMERATOR, _DENOMINATOR = attrgetter("p"), attrgetter("q")


def _arb_float(x: arb) -> float:
    """The midpoint of ``x`` as a float (``±inf``/``±0.0`` beyond the range, NaN if unbounded)."""
    mid = x.mid()
    if not mid.is_finite():
        return math.nan
    # python-flint converts the midpoint by FLINT's arf_get_d, to nearest (ties to even):
    # correctly rounded far from the subnormals and the overflow (tests/test_conversions.py);
    # elsewhere the exact rational says
    f = float(mid)
    if _NORMAL_LOW <= abs(f) <= _NORMAL_HIGH:
        return f
    top = log2_magnitude(mid)  # 2**(top - 1) <= |mid| < 2**top
    if top is None:
        return 0.0
    if top > 1025:
        return math.inf if mid > 0 else -math.inf
    if top < -1080:
        return 0.0 if mid > 0 else -0.0
    return to_float(arb_to_fmpq(mid))


_NORMAL_LOW, _NORMAL_HIGH = 2.0**-1000, 2.0**1000


def finite_float(x: Any, where: str, dtype: str = "float64") -> float:
    """:func:`to_float` of ``x``, or :class:`~lncapacity.errors.InputError` (one line naming
    ``where``) if it is not finite in ``dtype`` (``"float64"``, ``"float32"``, ``"float16"``
    or ``"bfloat16"``: the largest finite value of each)."""
    f = to_float(x)
    if not math.isfinite(f) or abs(f) > FLOAT_MAX.get(dtype, sys.float_info.max):
        from .errors import InputError

        raise InputError(
            f"{where}: {magnitude(x)} is beyond the {dtype} range (largest finite value "
            f"{FLOAT_MAX.get(dtype, sys.float_info.max):.4g}); a float model needs finite weights"
        )
    return f


FLOAT_MAX = {
    "float64": sys.float_info.max,
    "float32": 3.4028234663852886e38,
    "float16": 65504.0,
    "bfloat16": 3.3895313892515355e38,
}
"""The largest finite value of each float type."""


def magnitude(x: Any) -> str:
    """``x`` in a few characters for messages: ``"1.5e+30"``, or ``"10^400"`` (its decimal
    order of magnitude) beyond the float range."""
    f = to_float(x)
    if math.isfinite(f):
        return f"{f:.4g}"
    if math.isnan(f):
        return "an unbounded value"
    with precision(128):
        b = x.ball(128) if callable(getattr(x, "ball", None)) else arb(x)
        k = int(arb_to_fmpq((abs(b.mid()).log() / arb(10).log()).mid()).floor())
    return f"{'-' if f < 0 else ''}10^{k}" if k < 10**6 else f"{'-' if f < 0 else ''}10^(10^6+)"


def format_rational(q: fmpq) -> str:
    """``"p/q"``, or ``"p"`` for an integer: the ``lnnet/1`` number encoding."""
    return str(q.p) if q.q == 1 else f"{q.p}/{q.q}"


def dyadic_between(lo: fmpq, hi: fmpq, target: fmpq | None = None) -> fmpq:
    """A short dyadic rational ``n / 2**k`` strictly inside ``(lo, hi)``.

    Chooses the smallest ``k`` for which the dyadic nearest to ``target``
    (default: the midpoint) lies inside, so the result has about
    ``log2(1 / (hi - lo))`` bits: weights stay small, and exactly representable
    in binary floating point whenever that many bits fit.
    """
    if not lo < hi:
        raise ValueError("empty interval")
    t = (lo + hi) / 2 if target is None else target
    if not lo < t < hi:
        raise ValueError("target outside the interval")
    width = hi - lo
    k = max(0, _floor_log2_inv(width) - 1)
    while True:
        scale = fmpz(2) ** k
        n = (t * scale + fmpq(1, 2)).floor()
        d = fmpq(n, scale)
        if lo < d < hi:
            return d
        k += 1


def _floor_log2_inv(width: fmpq) -> int:
    """floor(log2(1/width)) for a positive rational, computed exactly enough."""
    # bit lengths bound log2 within one; the caller only needs a starting point
    return int(width.q).bit_length() - int(width.p).bit_length()


# ---------------------------------------------------------------------------
# rigorous balls


@contextmanager
def precision(bits: int) -> Iterator[None]:
    """Run a block with python-flint's working precision set to ``bits``."""
    old = ctx.prec
    ctx.prec = int(bits)
    try:
        yield
    finally:
        ctx.prec = old


def ball(q: fmpq | int) -> arb:
    """The ball enclosing the rational ``q`` at the current precision."""
    return arb(q)


MAX_BALL_EXPONENT = 1 << 24
"""Largest binary exponent :func:`arb_to_fmpq` turns into an integer (a 2 MiB one): a ball's
exponent is a Python-sized integer however large the number, but ``2**e`` is not."""


def arb_to_fmpq(x: arb) -> fmpq:
    """The exact rational value of an exact (radius-zero) ball, e.g. ``x.mid()``.

    :class:`OverflowError` for a binary exponent beyond :data:`MAX_BALL_EXPONENT` (callers
    compare with the float range first: :func:`lower_bound_float`)."""
    m, e = x.man_exp()
    m, e = int(m), int(e)
    if abs(e) > MAX_BALL_EXPONENT:
        raise OverflowError(f"binary exponent {e} is beyond ±{MAX_BALL_EXPONENT}")
    return fmpq(m * 2**e) if e >= 0 else fmpq(m, 2 ** (-e))


def log2_magnitude(x: arb) -> int | None:
    """About ``log2`` of the largest ``|v|`` in the ball ``x`` (within one), from its exponent
    alone (nothing of the size of ``2**e`` is built); None for 0 or a non-finite ball."""
    if not x.is_finite():
        return None
    m, e = x.abs_upper().man_exp()
    return None if m == 0 else int(e) + int(m).bit_length()


def json_float(x: float) -> float | None:
    """``x`` for JSON, which has no infinities: ``None`` stands for them."""
    return x if math.isfinite(x) else None


def lower_bound_float(x: arb) -> float:
    """A float that is ``<=`` every point of the ball ``x`` (``-inf`` if unbounded)."""
    if not x.is_finite():
        return -math.inf
    with precision(128):  # lower() rounds down to the working precision
        low = x.lower()
        # beyond the float range no integer of the ball's exponent is needed (2^(2^40) would
        # take 128 GiB): the largest float, 0 or the negative subnormal bound it
        if low > _FLOAT_TOP:
            return sys.float_info.max
        if low < -_FLOAT_TOP:
            return -math.inf
        if abs(low) < _FLOAT_BOTTOM:
            return 0.0 if low >= 0 else -_SUBNORMAL
        lo = arb_to_fmpq(low)
    f = to_float(lo)
    if f == math.inf:  # beyond the float range: the largest float is still a lower bound
        return sys.float_info.max
    if f == -math.inf:  # below the float range: -inf is the only float lower bound
        return f
    if fmpq(Fraction(f).numerator, Fraction(f).denominator) > lo:
        f = math.nextafter(f, -math.inf)
    return f


_FLOAT_TOP = arb(2) ** 1025  # above every finite float
_FLOAT_BOTTOM = arb(2) ** -1080  # below the smallest positive float, 2^-1074
_SUBNORMAL = math.ldexp(1.0, -1074)
