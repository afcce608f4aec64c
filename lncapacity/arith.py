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
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from fractions import Fraction
from numbers import Integral, Rational

from flint import arb, ctx, fmpq, fmpz

__all__ = [
    "arb_to_fmpq",
    "ball",
    "dyadic_between",
    "exact",
    "format_rational",
    "json_float",
    "lower_bound_float",
    "parse_rational",
    "precision",
]


# ---------------------------------------------------------------------------
# exact rationals

MAX_EXPONENT = 4300
"""Decimal exponents beyond this are refused: ``1e999999999`` would be a gigantic integer."""


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
        raise ValueError(f"not a finite number: {x!r}") from e
    return fmpq(f.numerator, f.denominator)


def parse_rational(text: str, *, decimals: bool = False) -> fmpq:
    """Parse ``"p/q"`` or an integer; with ``decimals`` also ``"0.25"``, ``"1e-5"``.

    The value is exact: decimal text is read as a decimal, never via a float.
    """
    s = text.strip()
    try:
        if "/" in s:
            p, q = s.split("/")
            num, den = _parse_int(p), _parse_int(q)
            if den == 0:
                raise ValueError
            return fmpq(num, den)
        if decimals and not _is_int(s):
            d = Decimal(s)
            if not d.is_finite() or "_" in s or abs(d.adjusted()) > MAX_EXPONENT:
                raise ValueError
            f = Fraction(d)
            return fmpq(f.numerator, f.denominator)
        return fmpq(_parse_int(s))
    except (ValueError, ArithmeticError) as e:
        kind = "a rational" if decimals else 'an integer or "p/q"'
        raise ValueError(f"{text!r} is not {kind}") from e


def _is_int(s: str) -> bool:
    t = s[1:] if s[:1] in "+-" else s
    return t.isdigit()


def _parse_int(s: str) -> int:
    s = s.strip()
    if not _is_int(s):
        raise ValueError(s)
    return int(s)


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


def arb_to_fmpq(x: arb) -> fmpq:
    """The exact rational value of an exact (radius-zero) ball, e.g. ``x.mid()``."""
    m, e = x.man_exp()
    m, e = int(m), int(e)
    return fmpq(m * 2**e) if e >= 0 else fmpq(m, 2 ** (-e))


def json_float(x: float) -> float | None:
    """``x`` for JSON, which has no infinities: ``None`` stands for them."""
    return x if math.isfinite(x) else None


def lower_bound_float(x: arb) -> float:
    """A float that is ``<=`` every point of the ball ``x`` (``-inf`` if unbounded)."""
    if not x.is_finite():
        return -math.inf
    with precision(128):  # lower() rounds down to the working precision
        lo = arb_to_fmpq(x.lower())
    f = float(lo)
    if fmpq(Fraction(f).numerator, Fraction(f).denominator) > lo:
        f = math.nextafter(f, -math.inf)
    return f
