"""Rigorous interval arithmetic in NumPy float64: the fast path of the certificate.

An interval is a pair of float64 arrays ``(lo, hi)`` with ``lo <= t <= hi`` for
the true (real) value ``t`` of every entry.  Every operation computes its
result in round-to-nearest and then steps at least one float outwards
(:func:`down`, :func:`up`).  That is rigorous (proofs/interval_rounding.md, with
a check):

* IEEE 754 ``+``, ``-``, ``*``, ``/`` and ``sqrt`` are *correctly rounded*:
  the computed ``fl(t)`` is the float nearest to the exact result ``t``
  (NumPy's float64 array operations are these IEEE operations: no FMA
  contraction in element-wise ufuncs, no extended precision);
* if ``fl(t) > t`` then no float lies strictly between ``t`` and ``fl(t)``
  (it would be nearer), so the float before ``fl(t)`` is ``<= t``: hence
  ``nextafter(fl(t), -inf) <= t`` always, and ``nextafter(fl(t), +inf) >= t``;
* a step of ``|x| 2^-52 + 2^-1074`` (:func:`down`, :func:`up`) is at least one
  float, so it gives such a bound too, faster than ``nextafter``;
* this holds with gradual underflow (subnormals are floats like any other)
  and at overflow (``fl(t) = inf`` means ``t`` is at least the largest
  float, which ``nextafter(inf, -inf)`` is); NaN (``0 * inf``, ``inf - inf``)
  propagates through ``minimum``/``maximum`` and decides nothing.

The one assumption is that the floating-point unit is in its default mode:
round to nearest, subnormals kept.  :func:`default_float_mode` tests that at
run time (flush-to-zero or another rounding direction fails it) and the
certificate falls back to ``arb`` balls when it does not hold.

Products of intervals take the minimum and maximum of the four rounded end
products, then step outwards; a rounded end product is within the rounding
argument above, and ``min``/``max``/``down``/``up`` are monotone.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

import numpy as np
from flint import arb, fmpq

Interval = tuple[np.ndarray, np.ndarray]

_NEG, _POS = -np.inf, np.inf


_TINY = 2.0**-1074
"""The smallest subnormal float64: the spacing of floats near 0."""
_REL = 2.0**-52
_MAX = float(np.finfo(np.float64).max)


def down(x: np.ndarray) -> np.ndarray:
    """A float ``<=`` the float before ``x`` (``x`` computed in round-to-nearest): a lower bound
    of its value.

    ``x - (|x| 2^-52 + 2^-1074)``: the subtrahend is at least the spacing of the
    floats at ``x`` (proofs/interval_rounding.md, "Stepping outwards fast"), so
    the exact difference is at most the float before ``x``, and rounding to
    nearest is monotone.  ``down(inf)`` is the largest float (``inf`` stands for
    values at least that); ``down(-inf) = -inf``.  About ten times faster than
    ``np.nextafter``.
    """
    if not isinstance(x, np.ndarray) or not x.ndim:
        return np.where(x == _POS, _MAX, x - (np.abs(x) * _REL + _TINY))
    t = _step(x)
    np.subtract(x, t, out=t)
    t[x == _POS] = _MAX  # the same floats as the expression above, with fewer temporaries
    return t


def up(x: np.ndarray) -> np.ndarray:
    """A float ``>=`` the float after ``x``: an upper bound of the value ``x`` rounds."""
    if not isinstance(x, np.ndarray) or not x.ndim:
        return np.where(x == _NEG, -_MAX, x + (np.abs(x) * _REL + _TINY))
    t = _step(x)
    np.add(x, t, out=t)
    t[x == _NEG] = -_MAX
    return t


def _step(x: np.ndarray) -> np.ndarray:
    """``|x| 2^-52 + 2^-1074``, in a new float64 array."""
    t = np.abs(x, dtype=np.float64)
    t *= _REL
    t += _TINY
    return t


def default_float_mode() -> bool:
    """Whether float64 rounds to nearest and keeps subnormals here (the module's assumption)."""
    tiny = np.array([2.0**-1060])
    if (tiny * 2.0**-10)[0] != 2.0**-1070:  # flush-to-zero would give 0
        return False
    third = np.array([1.0]) / np.array([3.0])
    # round to nearest: 1/3 rounds down, 2/3 rounds up (a directed mode gets one of them wrong)
    return bool(third[0] == 0x15555555555555 / 2**54 and (2 * third)[0] == 2.0 / 3.0)


def enclose(values: Sequence[fmpq] | np.ndarray) -> Interval:
    """The tightest float64 interval around each rational (a point when it is a float)."""
    flat = list(np.asarray(values, dtype=object).ravel())
    shape = np.shape(np.asarray(values, dtype=object))
    lo = np.empty(len(flat))
    hi = np.empty(len(flat))
    for i, q in enumerate(flat):
        lo[i], hi[i] = _enclose_one(q if isinstance(q, fmpq) else fmpq(q))
    return lo.reshape(shape), hi.reshape(shape)


def _as_fmpq(f: float) -> fmpq:
    p, q = float(f).as_integer_ratio()
    return fmpq(p, q)


def _enclose_one(q: fmpq) -> tuple[float, float]:
    p, d = int(q.p), int(q.q)
    if d & (d - 1) == 0 and -(2**53) < p < 2**53 and d <= 2**1022:
        f = p / d  # p 2^-e with |p| < 2^53, e <= 1022: a float, so the division is exact
        return f, f
    try:
        f = p / d  # Python's int / int is correctly rounded
    except OverflowError:
        return (-np.inf, np.inf) if p < 0 else (np.finfo(np.float64).max, np.inf)
    if not math.isfinite(f):
        return (-np.inf, np.inf)
    exact = _as_fmpq(f)
    if exact == q:
        return f, f
    lo, hi = (f, math.nextafter(f, math.inf)) if exact < q else (math.nextafter(f, -math.inf), f)
    return lo, hi


def add(a: Interval, b: Interval) -> Interval:
    return down(a[0] + b[0]), up(a[1] + b[1])


def mul(a: Interval, b: Interval) -> Interval:
    """``a * b`` (broadcasting), every end product rounded, then outwards."""
    p1, p2, p3, p4 = a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1]
    lo, hi = _hull(p1, p2, p3, p4)
    return down(lo), up(hi)


def _hull(
    p1: np.ndarray, p2: np.ndarray, p3: np.ndarray, p4: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(min(min(p1, p2), min(p3, p4)), max(max(p1, p2), max(p3, p4)))`` (NaN-propagating),
    in the buffers of the ``p_i`` where they are arrays of the result's shape."""
    if not all(isinstance(p, np.ndarray) and p.shape == p1.shape for p in (p1, p2, p3, p4)):
        return (
            np.minimum(np.minimum(p1, p2), np.minimum(p3, p4)),
            np.maximum(np.maximum(p1, p2), np.maximum(p3, p4)),
        )
    lo = np.minimum(p1, p2)
    np.maximum(p1, p2, out=p1)
    np.minimum(p3, p4, out=p2)
    np.minimum(lo, p2, out=lo)
    np.maximum(p3, p4, out=p3)
    np.maximum(p1, p3, out=p1)
    return lo, p1


def square(a: Interval) -> Interval:
    """``a ** 2``, a subset of ``[0, inf]`` (tighter than ``mul(a, a)``)."""
    lo2, hi2 = a[0] * a[0], a[1] * a[1]
    straddles = (a[0] <= 0) & (a[1] >= 0)
    lo = np.where(straddles, 0.0, np.maximum(down(np.minimum(lo2, hi2)), 0.0))
    return lo, up(np.maximum(lo2, hi2))


def sqrt(a: Interval) -> Interval:
    """``sqrt(a)`` of an interval of non-negative numbers (its negative part is dropped)."""
    return np.maximum(down(np.sqrt(np.maximum(a[0], 0.0))), 0.0), up(np.sqrt(a[1]))


def div_positive(a: Interval, d: Interval) -> Interval:
    """``a / d`` for ``d`` of positive numbers; NaN where ``d`` may not be positive."""
    bad = ~(d[0] > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        q1, q2, q3, q4 = a[0] / d[0], a[0] / d[1], a[1] / d[0], a[1] / d[1]
    lo, hi = _hull(q1, q2, q3, q4)
    return np.where(bad, np.nan, down(lo)), np.where(bad, np.nan, up(hi))


def scale(a: Interval, k: float) -> Interval:
    """``a * k`` for a float ``k > 0`` (exact as written)."""
    return down(a[0] * k), up(a[1] * k)


def matvec(W: Interval, h: Interval) -> Interval:
    """``h @ W.T`` for ``W`` ``(rows, cols)`` and ``h`` ``(m, cols)``: ``(m, rows)``.

    Summed one column at a time (every addition rounded outwards), in the
    order written: no BLAS, whose summation order and FMA use are unknown.
    """
    m, cols = h[0].shape
    rows = W[0].shape[0]
    acc: Interval = (np.zeros((m, rows)), np.zeros((m, rows)))
    for j in range(cols):
        term = mul((W[0][None, :, j], W[1][None, :, j]), (h[0][:, j : j + 1], h[1][:, j : j + 1]))
        acc = term if j == 0 else add(acc, term)
    return acc


def total(a: Interval) -> Interval:
    """Sums along the last axis (rows of an ``(m, n)`` array, or the groups of an ``(m, g, k)``
    one): ``(m, 1)`` or ``(m, g, 1)``, added in order, each addition outwards."""
    lo, hi = a[0][..., :1], a[1][..., :1]
    for j in range(1, a[0].shape[-1]):
        lo, hi = down(lo + a[0][..., j : j + 1]), up(hi + a[1][..., j : j + 1])
    return lo, hi


def pairwise_total(a: Interval) -> Interval:
    """Sums along the last axis by halves (a pairwise tree), each addition outwards: the
    enclosure :func:`total` gives, from ``log2 n`` vectorised steps instead of ``n``.

    Every step is :func:`add` of two halves of the terms so far (an odd one out waits for
    the next step), so the result encloses the exact sum by the argument for :func:`add`
    (proofs/interval_rounding.md).  Shape ``(..., n) -> (...)``.
    """
    lo, hi = a
    while lo.shape[-1] > 1:
        n = lo.shape[-1]
        half = n // 2
        lo2 = down(lo[..., :half] + lo[..., half : 2 * half])
        hi2 = up(hi[..., :half] + hi[..., half : 2 * half])
        if n % 2:
            lo2 = np.concatenate([lo2, lo[..., -1:]], axis=-1)
            hi2 = np.concatenate([hi2, hi[..., -1:]], axis=-1)
        lo, hi = lo2, hi2
    return lo[..., 0], hi[..., 0]


def dot_rows(W: Interval, h: Interval) -> Interval:
    """``h @ W.T`` as :func:`matvec` computes it, for few rows and many columns: each row's
    products with ``h`` at once, summed by :func:`pairwise_total` (``(m, rows)``)."""
    rows = W[0].shape[0]
    out = np.empty((h[0].shape[0], rows)), np.empty((h[0].shape[0], rows))
    for i in range(rows):
        term = mul((W[0][None, i], W[1][None, i]), h)
        out[0][:, i], out[1][:, i] = pairwise_total(term)
    return out


_U = 2.0**-53
"""The unit roundoff of float64: ``|fl(t) - t| <= u |t|`` in the normal range."""


@functools.lru_cache(maxsize=256)
def dot_constants(n: int) -> tuple[float, float, float, float]:
    """``(gamma, Gamma, E, T)`` for sums of ``n`` products, floats rounded up from the exact
    rationals ``gamma_n = n u / (1 - n u)``, ``Gamma_n = n u / (1 - 2 n u)``, ``E = 2 n eta``
    and ``T = E (1 + Gamma_n)`` (``u = 2^-53``, ``eta = 2^-1074``; proofs/interval_rounding.md,
    "Products by BLAS")."""
    u, eta = fmpq(1, 2**53), fmpq(1, 2**1074)
    if 2 * n * u >= 1:
        raise ValueError("a sum of more than 2^51 products")
    gamma, Gamma = n * u / (1 - n * u), n * u / (1 - 2 * n * u)
    E = 2 * n * eta
    return tuple(float(enclose([v])[1][0]) for v in (gamma, Gamma, E, E * (1 + Gamma)))  # type: ignore[return-value]


def up_nonneg(x: np.ndarray) -> np.ndarray:
    """:func:`up` for arrays of non-negative floats (``+inf`` and NaN allowed), in place:
    ``x + (x 2^-52 + 2^-1074)`` (the proof of :func:`up` with ``|x| = x``)."""
    t = x * _REL
    t += _TINY
    x += t
    return x


def dot_error(n: int, computed_abs: np.ndarray) -> np.ndarray:
    """A bound on ``|fl(sum a_i b_i) - sum a_i b_i|`` for sums of ``n`` products computed in any
    order (BLAS, ``einsum``; fused multiply-adds allowed), from ``computed_abs``, the same sums
    of ``|a_i b_i|`` as computed: ``Gamma_n S + T`` rounded up (proofs/interval_rounding.md,
    "Products by BLAS")."""
    _, Gamma, _, T = dot_constants(n)
    e = up_nonneg(computed_abs * Gamma)
    e += T
    return up_nonneg(e)


def upper_product(P: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """A float array ``>=`` the exact ``P @ Q`` for arrays of non-negative floats, by BLAS:
    the computed product plus :func:`dot_error`."""
    S = P @ Q
    S += dot_error(P.shape[-1], S)
    return up_nonneg(S)


def ball(a: Interval) -> tuple[np.ndarray, np.ndarray]:
    """The interval ``[lo, hi]`` as a midpoint and a radius ``(mid, rad)``, ``rad >= 0`` with
    ``[lo, hi]`` inside ``[mid - rad, mid + rad]`` (``rad = 0`` where ``lo = hi``)."""
    lo, hi = a
    point = lo == hi
    mid = np.where(point, lo, lo / 2 + hi / 2)  # any float will do: the radius covers the rest
    rad = np.where(point, 0.0, np.maximum(up(hi - mid), up(mid - lo)))
    return mid, np.where(np.isfinite(mid), rad, np.nan)


def scalar_range(c: fmpq, g: fmpq, k: fmpq, a1: fmpq, a2: fmpq) -> Callable[[Interval], Interval]:
    """The range of ``f(p) = (a1 + a2 s) / sqrt(g s^2 + k)``, ``s = p - c``, over intervals.

    For ``g, k >= 0`` with ``k > 0`` (exact rationals), returns a map from
    float64 interval arrays ``(lo, hi)`` to interval arrays that contain
    ``f([lo, hi])``, rigorously: ``f`` is evaluated at the two (float) ends with
    the outward-rounded operations of :mod:`lncapacity.interval` (each an
    enclosure of the exact value, proofs/interval_rounding.md), and ``f`` is
    monotone on every interval that does not contain its one critical point
    ``p* = c + a2 k / (a1 g)`` (``f' = (a2 k - a1 g s) / (g s^2 + k)^(3/2)``; none
    when ``a1 g = 0``), so its range there is the hull of the end values.  An
    interval that may contain ``p*`` (tested against an enclosure of the exact
    ``p*``) gets the extremum ``sign(a1) sqrt(a1^2 / k + a2^2 / g)`` added, bounded
    outwards (proofs/interval_rounding.md, "Scalar chains").  Unlike plain
    interval evaluation (where ``s`` in the numerator and in the root widen
    independently) the width grows only by ``|f'|`` and a few ulps per layer:
    about what float64 itself loses.
    """
    if not (k > 0 and g >= 0):
        raise ValueError("the range map needs k > 0 and g >= 0")
    C, G, K, A1, A2 = (enclose([v]) for v in (c, g, k, a1, a2))

    def at(x: np.ndarray) -> Interval:
        s = down(x - C[1]), up(x - C[0])  # x - c, for c in [C0, C1]
        num = add(A1, mul(A2, s))
        den = sqrt(add(mul(G, square(s)), K))
        return div_positive(num, den)

    crit: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    if a1 != 0 and g != 0:
        star = enclose([c + a2 * k / (a1 * g)])
        extreme = sqrt(enclose([a1 * a1 / k + a2 * a2 / g]))
        crit = (star[0], star[1], extreme[1] if a1 > 0 else -extreme[1])

    def apply(p: Interval) -> Interval:
        lo, hi = p
        flo, fhi = at(lo), at(hi)
        out_lo, out_hi = np.minimum(flo[0], fhi[0]), np.maximum(flo[1], fhi[1])
        if crit is not None:
            may = ~((hi < crit[0]) | (lo > crit[1]))  # NaN ends: "may" (and NaN stays)
            if a1 > 0:
                out_hi = np.where(may, np.maximum(out_hi, crit[2]), out_hi)
            else:
                out_lo = np.where(may, np.minimum(out_lo, crit[2]), out_lo)
        return out_lo, out_hi

    return apply


def scalar_range_balls(
    c: fmpq, g: fmpq, k: fmpq, a1: fmpq, a2: fmpq
) -> Callable[[arb, arb], tuple[arb, arb] | None]:
    """:func:`scalar_range` in ``arb`` for exact ends: ``(lo, hi) -> (lo', hi')``, exact
    ends around ``f([lo, hi])`` at the current precision (None if a ball of ``f`` at an
    end is not finite).

    The same argument: the hull of the balls of ``f`` at the two ends, and the extremum
    ``sign(a1) sqrt(a1^2 / k + a2^2 / g)`` when ``[lo, hi]`` may hold the critical point
    ``c + a2 k / (a1 g)``.  Plain ball evaluation of ``f`` on a ball loses about a bit
    per layer (``s`` in the numerator and under the root widen independently); this
    loses only the rounding at the ends, so deep chains keep their precision (the
    certificate's scalar chains and :class:`~lncapacity.construct.runfold.Tightener`).
    """
    C, G, K, A1, A2 = arb(c), arb(g), arb(k), arb(a1), arb(a2)
    peak: tuple[arb, arb] | None = None
    if a1 != 0 and g != 0:
        e = arb(a1 * a1 / k + a2 * a2 / g).sqrt()
        peak = (arb(c + a2 * k / (a1 * g)), e if a1 > 0 else -e)

    def f(x: arb) -> arb:
        s = x - C
        return (A1 + A2 * s) / (G * s * s + K).sqrt()

    def apply(lo: arb, hi: arb) -> tuple[arb, arb] | None:
        flo, fhi = f(lo), f(hi)
        if not (flo.is_finite() and fhi.is_finite()):
            return None
        x, y = flo.lower(), fhi.lower()
        new_lo = x if x < y else y
        x, y = flo.upper(), fhi.upper()
        new_hi = x if x > y else y
        if peak is not None and not (hi < peak[0] or lo > peak[0]):  # may hold the extremum
            if a1 > 0:
                top = peak[1].upper()
                new_hi = new_hi if new_hi > top else top
            else:
                bottom = peak[1].lower()
                new_lo = new_lo if new_lo < bottom else bottom
        return new_lo, new_hi

    return apply
