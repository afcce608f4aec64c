"""Certified real numbers: exact rationals, algebraic numbers, rigorous bounds.

A :class:`CertifiedReal` is what the theory toolkit returns instead of a float.
It is one of

* an exact rational (``lo == hi``), printed ``"p/q"``;
* an exact algebraic number: an irreducible integer polynomial ``poly`` and a
  rational isolating interval ``[lo, hi]`` that contains exactly one of its
  roots (``poly(lo)`` and ``poly(hi)`` have opposite signs, checked exactly),
  printed ``"root of 3*x^2 - 3*x + 1 in [0.21, 0.22]"``;
* rigorous bounds ``lo <= value <= hi`` (from ball arithmetic), printed
  ``"[lo, hi]"``.

Every endpoint is an exact rational; the printed decimals are rounded outwards
for bounds (so the printed interval still contains the value) and inwards for
isolating intervals (so it still isolates the root, sign change re-checked).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal, localcontext
from typing import Any

from flint import acb, arb, ctx, fmpq, fmpq_poly, fmpz_poly

from ..arith import arb_to_fmpq, format_rational, precision

__all__ = [
    "CertifiedReal",
    "bounds",
    "compare",
    "decimal",
    "rational",
    "real_roots",
    "smallest_real_root",
]


@dataclass(frozen=True)
class CertifiedReal:
    """A real number known exactly (rational or algebraic) or within rigorous bounds."""

    lo: fmpq
    hi: fmpq
    poly: fmpz_poly | None = None
    """The defining (irreducible) polynomial of an algebraic value isolated in ``[lo, hi]``."""

    def __post_init__(self) -> None:
        if not self.lo <= self.hi:
            raise ValueError("empty interval")

    @property
    def is_exact(self) -> bool:
        """True for an exact rational or an isolated algebraic number."""
        return self.lo == self.hi or self.poly is not None

    @property
    def rational(self) -> fmpq | None:
        """The exact rational value, or None."""
        return self.lo if self.lo == self.hi else None

    def __float__(self) -> float:
        return float((self.lo + self.hi) / 2)

    def __str__(self) -> str:
        if self.lo == self.hi:
            return format_rational(self.lo)
        lo, hi = self.printable_interval()
        if self.poly is not None:
            return f"root of {_poly_str(self.poly)} in [{lo}, {hi}]"
        return f"[{lo}, {hi}]"

    def printable_interval(self, digits: int = 10) -> tuple[str, str]:
        """Short decimal endpoints: outward for bounds, inward (still isolating) for roots."""
        if self.poly is None:
            return decimal(self.lo, digits, up=False), decimal(self.hi, digits, up=True)
        p = self.poly
        for k in range(digits, 400, 4):
            a, b = decimal(self.lo, k, up=True), decimal(self.hi, k, up=False)
            qa, qb = _dec_to_fmpq(a), _dec_to_fmpq(b)
            if self.lo <= qa < qb <= self.hi and _sign(p, qa) * _sign(p, qb) < 0:
                return a, b
        return format_rational(self.lo), format_rational(self.hi)  # pragma: no cover

    def refined(self) -> CertifiedReal:
        """An algebraic value with its isolating interval halved (by the exact sign test)."""
        if self.poly is None or self.lo == self.hi:
            return self
        mid = (self.lo + self.hi) / 2
        s = _sign(self.poly, mid)
        if s == 0:  # pragma: no cover - irreducible of degree >= 2: no rational root
            return CertifiedReal(mid, mid)
        if _sign(self.poly, self.lo) * s < 0:
            return CertifiedReal(self.lo, mid, self.poly)
        return CertifiedReal(mid, self.hi, self.poly)

    def to_json(self) -> str | list[str]:
        """An exact string (rational, or algebraic root) or certified ``[lo, hi]`` decimals."""
        if self.is_exact:
            return str(self)
        return list(self.printable_interval())


def compare(a: CertifiedReal, b: CertifiedReal, max_steps: int = 4000) -> int | None:
    """The sign of ``a - b``, decided exactly for exact values; None when bounds overlap.

    Isolating intervals are halved until they separate; two roots of the same
    irreducible polynomial whose intervals share a sign change are the same root.
    """
    for _ in range(max_steps):
        if a.hi < b.lo:
            return -1
        if b.hi < a.lo:
            return 1
        if a.lo == a.hi and b.lo == b.hi:
            return 0
        if not (a.is_exact and b.is_exact):
            return None
        if a.poly is not None and a.poly == b.poly:
            lo, hi = max(a.lo, b.lo), min(a.hi, b.hi)
            if lo < hi and _sign(a.poly, lo) * _sign(a.poly, hi) < 0:
                return 0
        a, b = a.refined(), b.refined()
    return None  # pragma: no cover


def rational(q: Any) -> CertifiedReal:
    q = fmpq(q) if not isinstance(q, fmpq) else q
    return CertifiedReal(q, q)


def bounds(x: arb, clamp: tuple[fmpq, fmpq] | None = None) -> CertifiedReal:
    """The rigorous bounds of a ball, optionally intersected with a known range."""
    if not x.is_finite():
        raise ArithmeticError("unbounded ball")
    with precision(max(ctx.prec, 64)):
        lo, hi = arb_to_fmpq(x.lower()), arb_to_fmpq(x.upper())
    if clamp is not None:
        lo, hi = max(lo, clamp[0]), min(hi, clamp[1])
    return CertifiedReal(lo, hi)


def decimal(q: fmpq, digits: int = 10, up: bool = False) -> str:
    """``q`` rounded to ``digits`` significant decimals, up or down (an exact decimal)."""
    with localcontext() as c:
        c.prec = digits
        c.rounding = ROUND_CEILING if up else ROUND_FLOOR
        d = Decimal(int(q.p)) / Decimal(int(q.q))
    s = format(d, "f") if d == 0 or abs(d.adjusted()) < 6 else str(d).lower()
    return s


def _dec_to_fmpq(s: str) -> fmpq:
    from fractions import Fraction

    f = Fraction(Decimal(s))
    return fmpq(f.numerator, f.denominator)


def _sign(p: fmpz_poly, q: fmpq) -> int:
    v = fmpq_poly(p)(q)
    return (v > 0) - (v < 0)


def _poly_str(p: fmpz_poly) -> str:
    terms = []
    for k, c in reversed(list(enumerate(p.coeffs()))):
        c = int(c)
        if c == 0:
            continue
        mono = "" if k == 0 else ("x" if k == 1 else f"x^{k}")
        if k and abs(c) == 1:
            coef = "-" if c < 0 else ""
            term = coef + mono
        else:
            term = f"{c}*{mono}" if mono else str(c)
        terms.append(term)
    s = " + ".join(terms).replace("+ -", "- ")
    return s or "0"


def real_roots(p: fmpq_poly, all_real: bool = False) -> list[CertifiedReal]:
    """The distinct real roots of ``p``, each exact, in increasing (certified) order.

    ``p`` is factored over the rationals; linear factors give rational roots, and
    each other irreducible factor's roots are isolated by python-flint's
    rigorous complex root finder (disjoint balls, one root each).  A root whose
    ball meets the real axis is real when ``all_real`` (the caller knows every
    root is real, e.g. a symmetric pencil) or when the factor changes sign on
    the real interval of the ball.  Precision doubles until every interval is
    disjoint from the others, so the order is certified.
    """
    if p.degree() < 1:
        raise ValueError("constant polynomial")
    _, factors = p.factor()
    prec = 64
    while True:
        roots: list[CertifiedReal] = []
        for f, _mult in factors:
            fz = f.numer()
            if fz.degree() == 1:
                c0, c1 = fz.coeffs()
                roots.append(rational(fmpq(-int(c0), int(c1))))
                continue
            with precision(prec):
                for c, _ in fz.complex_roots():
                    r = _real_root(fz, c, all_real)
                    if r is not None:
                        roots.append(r)
        roots.sort(key=lambda r: r.lo)
        if all(a.hi < b.lo for a, b in itertools.pairwise(roots)):
            return [_short(roots, i) for i in range(len(roots))]
        prec *= 2
        if prec > 1 << 16:  # pragma: no cover - distinct roots separate eventually
            raise ArithmeticError("could not separate the roots")


def _short(roots: list[CertifiedReal], i: int) -> CertifiedReal:
    """Root ``i`` with the shortest decimal isolating interval between its neighbours.

    Every real root of the polynomial is in ``roots``, so an interval that meets
    no neighbour's interval isolates this one.
    """
    r = roots[i]
    if r.poly is None:
        return r
    below = roots[i - 1].hi if i > 0 else None
    above = roots[i + 1].lo if i + 1 < len(roots) else None
    for k in range(1, 400):
        a = _dec_to_fmpq(decimal(r.lo, k, up=False))
        if below is None or a > below:
            break
    for k in range(1, 400):
        b = _dec_to_fmpq(decimal(r.hi, k, up=True))
        if above is None or b < above:
            break
    if a == b or _sign(r.poly, a) * _sign(r.poly, b) >= 0:  # pragma: no cover - cannot happen
        return r
    return CertifiedReal(a, b, r.poly)


def _real_root(f: fmpz_poly, c: acb, all_real: bool) -> CertifiedReal | None:
    if not c.imag.contains(0):
        return None
    lo, hi = arb_to_fmpq(c.real.lower()), arb_to_fmpq(c.real.upper())
    if _sign(f, lo) * _sign(f, hi) < 0:
        return CertifiedReal(lo, hi, f)
    if all_real:  # pragma: no cover - the ball is then too wide for a sign test
        return CertifiedReal(lo, hi, f)
    return None  # a non-real root near the axis (or undecided): not reported


def smallest_real_root(p: fmpq_poly, all_real: bool = False) -> CertifiedReal:
    """The smallest real root of ``p``, exact (see :func:`real_roots`)."""
    roots = real_roots(p, all_real)
    if not roots:
        raise ValueError("no real root")
    return roots[0]
