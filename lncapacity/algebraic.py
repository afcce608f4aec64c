"""Exact real algebraic numbers as radical straight-line programs, evaluated in balls.

The exact PMA (:mod:`lncapacity.construct.exact`, proofs/exact_merges.md) folds
at the true midpoints of algebraic values whose minimal polynomials have degrees
that grow exponentially with the depth (a naive radical simplifier does not
finish at 7 points).  A number here is instead a node of a
:class:`RadicalProgram`: a list of definitions, each a rational, an arithmetic
operation (``add``, ``sub``, ``mul``, ``div``) or a square root of *earlier*
nodes, or the unique root of an integer polynomial in a rational isolating
interval.  Every node names exactly one real number (the program is
well-founded: operands precede their use), and that number is algebraic.

* **Evaluation** (:meth:`RadicalProgram.balls`) runs the program in
  python-flint ``arb`` ball arithmetic at any precision: every ball contains
  its node's exact value, and raising the precision shrinks the balls (roots are
  refined by interval Newton steps on balls, ``_refine_root``: ``O(log prec)``
  steps, each a few polynomial evaluations at the working precision).  A square root of a
  ball that is not certainly positive, or a division by a ball that may be 0,
  gives an unbounded (NaN) ball, never a wrong one.
* **Definedness** (:meth:`RadicalProgram.check`): every ``sqrt`` argument is
  proven ``> 0`` and every divisor proven ``!= 0`` (balls, precision rising to
  a cap); the readers of ``lnnet/1.1`` files with ``"requires": ["algebraic"]``
  refuse a program that fails it.
* **Encoding** (:meth:`RadicalProgram.to_json`, :meth:`RadicalProgram.from_json`):
  a JSON list, entry ``k`` one of ``"p/q"``, ``{"add": [i, j]}`` (also
  ``sub``, ``mul``, ``div``), ``{"sqrt": i}`` or
  ``{"root": ["c0", "c1", ...], "lo": "p/q", "hi": "p/q"}`` (integer
  coefficients, constant term first; exactly one root in ``[lo, hi]``: a sign
  change and a derivative proven nonzero on the interval), with ``i, j < k``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import chain
from typing import Any

from flint import arb, arb_poly, ctx, fmpq, fmpq_poly, fmpz_poly

from .arith import (
    format_rational,
    log2_magnitude,
    parse_rational,
    precision,
    shown,
    to_float,
)

__all__ = [
    "MAX_MAGNITUDE",
    "MAX_NODES",
    "MAX_PROGRAM_BITS",
    "MAX_ROOT_DEGREE",
    "MAX_ROOT_DEGREES",
    "Radical",
    "RadicalProgram",
    "is_radical",
    "number_ball",
]

OPS = ("add", "sub", "mul", "div")
MAX_NODES = 1_000_000
"""Most nodes in a program that is read."""
CHECK_PRECISION = 1 << 14
"""Precision cap (bits) for proving a program's square roots and divisions defined."""
MAX_ROOT_DEGREE = 64
"""Highest degree of one ``root`` polynomial that is read (the package's nets have no roots)."""
MAX_ROOT_DEGREES = 1024
"""Most ``root`` degrees, summed over a program that is read: each root costs a few
polynomial evaluations per Newton step, up to 65,536 bits."""
MAX_MAGNITUDE = 1 << 16
"""Every value of a program that is read lies within ``2^±MAX_MAGNITUDE`` (or is 0): balls
carry any exponent, but a value squared 40 times has one of 2^40 and its margin's bits with
it (the package's nets stay within ``2^±64``)."""


class RadicalProgram:
    """A straight-line program of exact real numbers (see the module doc)."""

    def __init__(self) -> None:
        self.nodes: list[tuple[Any, ...]] = []
        self._cache: dict[int, list[arb]] = {}
        self._roots: dict[int, arb] = {}
        self._consts: dict[tuple[int, int], int] = {}

    def __getstate__(self) -> list[Any]:
        return self.to_json()[0]  # no ball caches: pickled for worker processes

    def __setstate__(self, entries: list[Any]) -> None:
        other = RadicalProgram.from_json(entries, check=False)
        self.__dict__.update(other.__dict__)

    def __len__(self) -> int:
        return len(self.nodes)

    # building -----------------------------------------------------------------

    def _push(self, node: tuple[Any, ...]) -> Radical:
        self.nodes.append(node)
        return Radical(self, len(self.nodes) - 1)

    def const(self, q: fmpq | int) -> Radical:
        """A node holding the rational ``q`` (one node per distinct rational)."""
        q = fmpq(q)
        k = self._consts.get((int(q.p), int(q.q)))
        if k is not None:
            return Radical(self, k)
        r = self._push(("q", q))
        self._consts[(int(q.p), int(q.q))] = r.index
        return r

    def op(self, name: str, a: Radical, b: Radical) -> Radical:
        """``a (add|sub|mul|div) b`` as a new node."""
        if name not in OPS:
            raise ValueError(f"unknown operation {name!r}")
        return self._push((name, self._index(a), self._index(b)))

    def sqrt(self, a: Radical) -> Radical:
        """The square root of ``a`` (the caller ensures ``a > 0``) as a new node."""
        return self._push(("sqrt", self._index(a)))

    def root(self, poly: fmpz_poly, lo: fmpq, hi: fmpq) -> Radical:
        """The root of ``poly`` in ``[lo, hi]`` (checked to be isolating)."""
        _check_root(poly, lo, hi)
        return self._push(("root", poly, lo, hi))

    def _index(self, a: Radical | fmpq | int) -> int:
        if isinstance(a, Radical):
            if a.program is not self:
                raise ValueError("numbers of different programs")
            return a.index
        return self.const(a).index

    # evaluating ---------------------------------------------------------------

    def balls(self, prec: int | None = None) -> list[arb]:
        """Every node's value as a ball at ``prec`` bits (default: the working precision)."""
        prec = int(prec or ctx.prec)
        out = self._cache.get(prec, [])
        if len(out) < len(self.nodes):
            out = self._evaluate(prec)
            # keep the most precise few, and at most twice MAX_PROGRAM_BITS of balls
            while len(self._cache) > 8 or (
                len(self._cache) > 1
                and sum(p * len(v) for p, v in self._cache.items()) > 2 * MAX_PROGRAM_BITS
            ):
                del self._cache[min(self._cache)]
        return out

    def _eval(self, node: tuple[Any, ...], v: list[arb], prec: int) -> arb:
        kind = node[0]
        if kind == "q":
            return arb(node[1])
        if kind == "sqrt":
            x = v[node[1]]
            return x.sqrt() if x > 0 else arb("nan")
        if kind == "root":
            return self._root_ball(len(v), node, prec)
        a, b = v[node[1]], v[node[2]]
        if kind == "add":
            return a + b
        if kind == "sub":
            return a - b
        if kind == "mul":
            return a * b
        return a / b if (b > 0 or b < 0) else arb("nan")

    def _root_ball(self, k: int, node: tuple[Any, ...], prec: int) -> arb:
        # the ball of the last refinement (any precision) is the start: it holds the root
        start = self._roots.get(k)
        if start is None:
            start = arb(node[2]).union(arb(node[3]))
        ball = _refine_root(node[1], _sign(fmpq_poly(node[1]), node[2]), start, prec)
        self._roots[k] = ball
        return ball

    def check(self, limit: int = CHECK_PRECISION) -> None:
        """Prove every square root's argument positive and every divisor nonzero.

        Raises :class:`ValueError` naming the first node that cannot be proven
        defined at ``limit`` bits.
        """
        prec = 128
        self._check_magnitudes(prec)
        while True:
            v = self.balls(prec)
            bad = next(
                (
                    k
                    for k, node in enumerate(self.nodes)
                    if (node[0] == "sqrt" and not v[node[1]] > 0)
                    or (node[0] == "div" and not (v[node[2]] > 0 or v[node[2]] < 0))
                ),
                None,
            )
            if bad is None:
                return
            if prec >= limit:
                what = "square root of a number" if self.nodes[bad][0] == "sqrt" else "division"
                raise ValueError(f"[{bad}]: {what} not proven positive/nonzero at {limit} bits")
            prec *= 2

    def _check_magnitudes(self, prec: int) -> None:
        """Evaluate at ``prec`` bits node by node, refusing (:class:`ValueError`) the first
        value beyond ``2^±``:data:`MAX_MAGNITUDE`, before anything is built from it."""
        self._evaluate(prec, bounded=True)

    def _evaluate(self, prec: int, bounded: bool = False) -> list[arb]:
        """The cached balls at ``prec`` bits, extended node by node to every node, in order,
        and cached (the one evaluation loop of ``balls`` and ``_check_magnitudes``).

        ``bounded``: each new value is first checked to lie within ``2^±``:data:`MAX_MAGNITUDE`
        (0 and unbounded balls pass, :func:`~lncapacity.arith.log2_magnitude`); the first
        beyond raises :class:`ValueError` and is not kept.
        """
        out = self._cache.get(prec, [])
        with precision(prec):
            for k in range(len(out), len(self.nodes)):
                x = self._eval(self.nodes[k], out, prec)
                if (
                    bounded
                    and (bits := log2_magnitude(x)) is not None
                    and abs(bits) > MAX_MAGNITUDE
                ):
                    raise ValueError(
                        f"[{k}]: a value of about 2^{bits}, beyond the limit of 2^±{MAX_MAGNITUDE}"
                    )
                out.append(x)
        self._cache[prec] = out
        return out

    # JSON -----------------------------------------------------------------------

    def to_json(self, keep: Iterable[int] | None = None) -> tuple[list[Any], dict[int, int]]:
        """``(entries, renumbering)``: the nodes ``keep`` depends on (default all), as JSON."""
        if keep is None:
            needed = set(range(len(self.nodes)))
        else:
            needed, stack = set(), list(keep)
            while stack:
                k = stack.pop()
                if k in needed:
                    continue
                needed.add(k)
                node = self.nodes[k]
                if node[0] in OPS:
                    stack += [node[1], node[2]]
                elif node[0] == "sqrt":
                    stack.append(node[1])
        order = sorted(needed)
        new = {k: i for i, k in enumerate(order)}
        out: list[Any] = []
        for k in order:
            node = self.nodes[k]
            kind = node[0]
            if kind == "q":
                out.append(format_rational(node[1]))
            elif kind == "sqrt":
                out.append({"sqrt": new[node[1]]})
            elif kind == "root":
                coeffs = [str(int(c)) for c in node[1].coeffs()]
                lo, hi = (format_rational(x) for x in node[2:4])
                out.append({"root": coeffs, "lo": lo, "hi": hi})
            else:
                out.append({kind: [new[node[1]], new[node[2]]]})
        return out, new

    def compact(self, values: Sequence[Radical]) -> list[Radical]:
        """``values`` in a new program holding only the nodes they depend on."""
        entries, new = self.to_json(keep={v.index for v in values})
        prog = RadicalProgram.from_json(entries, check=False)
        return [Radical(prog, new[v.index]) for v in values]

    @classmethod
    def from_json(cls, entries: Any, check: bool = True) -> RadicalProgram:
        """Read a program (see the module doc); :class:`ValueError` names the bad entry.

        The program is checked to be well-founded and defined (:meth:`check`).
        """
        if not isinstance(entries, list):
            raise ValueError("must be a list")
        if len(entries) > MAX_NODES:
            raise ValueError(f"{len(entries)} entries, beyond the limit of {MAX_NODES}")
        prog = cls()

        def ref(x: Any, k: int) -> int:
            if not isinstance(x, int) or isinstance(x, bool) or not 0 <= x < k:
                raise ValueError(f"[{k}]: operands are indices of earlier entries, got {shown(x)}")
            return x

        degrees = 0
        for k, e in enumerate(entries):
            if isinstance(e, str):
                try:
                    prog.nodes.append(("q", parse_rational(e)))
                except ValueError as err:
                    raise ValueError(f"[{k}]: {err}") from None
                continue
            if not isinstance(e, Mapping) or len(e) not in (1, 3):
                raise ValueError(f"[{k}]: not a number, operation or root: {shown(e)}")
            (key, arg), *_ = e.items()
            if key in OPS and len(e) == 1:
                if not isinstance(arg, list) or len(arg) != 2:
                    raise ValueError(f"[{k}]: {key} takes a list of two indices")
                prog.nodes.append((key, ref(arg[0], k), ref(arg[1], k)))
            elif key == "sqrt" and len(e) == 1:
                prog.nodes.append(("sqrt", ref(arg, k)))
            elif set(e) == {"root", "lo", "hi"}:
                degrees += _root_degree(e, k)
                if degrees > MAX_ROOT_DEGREES:
                    raise ValueError(
                        f"[{k}]: the roots' degrees add up to {degrees}, beyond the limit of "
                        f"{MAX_ROOT_DEGREES}"
                    )
                prog.nodes.append(("root", *_parse_root(e, k)))
            else:
                raise ValueError(f"[{k}]: unknown entry {shown(e)}")
        if check:
            prog.check()
        return prog


class Radical:
    """One exact real number: node ``index`` of ``program``.

    Arithmetic with other numbers of the same program, ``fmpq`` or ``int``
    appends nodes; :meth:`ball` encloses the value at the working precision.
    """

    __slots__ = ("index", "program")

    def __init__(self, program: RadicalProgram, index: int) -> None:
        self.program = program
        self.index = index

    def ball(self, prec: int | None = None) -> arb:
        """A ball containing the exact value, at ``prec`` bits (default: the working one)."""
        return self.program.balls(prec)[self.index]

    def __float__(self) -> float:
        """The midpoint of the 128-bit ball; ``±inf`` beyond the float range (:func:`to_float`)."""
        return to_float(self)

    def _bin(self, name: str, other: Any, swap: bool = False) -> Radical:
        if not isinstance(other, (Radical, fmpq, int)):
            return NotImplemented
        p = self.program
        a, b = (other, self) if swap else (self, other)
        ra = a if isinstance(a, Radical) else p.const(a)
        rb = b if isinstance(b, Radical) else p.const(b)
        return p.op(name, ra, rb)

    def __add__(self, o: Any) -> Radical:
        return self._bin("add", o)

    def __radd__(self, o: Any) -> Radical:
        return self._bin("add", o, True)

    def __sub__(self, o: Any) -> Radical:
        return self._bin("sub", o)

    def __rsub__(self, o: Any) -> Radical:
        return self._bin("sub", o, True)

    def __mul__(self, o: Any) -> Radical:
        return self._bin("mul", o)

    def __rmul__(self, o: Any) -> Radical:
        return self._bin("mul", o, True)

    def __truediv__(self, o: Any) -> Radical:
        return self._bin("div", o)

    def __rtruediv__(self, o: Any) -> Radical:
        return self._bin("div", o, True)

    def __neg__(self) -> Radical:
        return self._bin("sub", 0, True)

    def sqrt(self) -> Radical:
        return self.program.sqrt(self)

    def __repr__(self) -> str:
        with precision(64):
            return f"Radical(#{self.index} ~ {self.ball(64).str(10, radius=False)})"


MAX_PROGRAM_BITS = 1 << 31
"""The most bits one precision of a program's balls may hold (256 MiB): a program of ``n``
entries is evaluated at no more than ``MAX_PROGRAM_BITS / n`` bits (:func:`precision_cap`;
a point still undecided there is reported undecided), so a large file with a zero margin
cannot ask for gigabytes."""


def precision_cap(net: Any, bits: int) -> int:
    """``bits``, lowered for a net with algebraic weights so that their program's balls hold at
    most :data:`MAX_PROGRAM_BITS` (never below 128 bits)."""
    program = weights_program(list(_weights(net)))
    if program is None:
        return bits
    return max(128, min(bits, MAX_PROGRAM_BITS // max(len(program), 1)))


def is_radical(x: Any) -> bool:
    return isinstance(x, Radical)


def _weights(net: Any) -> Iterator[Any]:
    """Every weight and bias of ``net``'s affine maps."""
    maps = (*net.layers, net.readout)
    return chain.from_iterable(chain(a.b, chain.from_iterable(a.W)) for a in maps)


def has_radicals(net: Any) -> bool:
    """Whether some weight of ``net`` is a :class:`Radical` (an ``--exact`` net)."""
    kinds = set(map(type, _weights(net)))  # the weights' types at C speed, then few checks
    return any(issubclass(kind, Radical) for kind in kinds)


def refuse_radicals(net: Any, what: str) -> None:
    """Raise :class:`~lncapacity.errors.InputError` (one line) if ``net`` has algebraic weights."""
    if has_radicals(net):
        from .errors import InputError

        raise InputError(
            f"{what}: nets with algebraic weights (pma --exact) are not supported yet; "
            "certify and verify read them"
        )


def number_ball(x: Any) -> arb:
    """A ball at the working precision around a rational or :class:`Radical` weight."""
    return x.ball() if isinstance(x, Radical) else arb(x)


def _sign(p: fmpq_poly, q: fmpq) -> int:
    v = p(q)
    return (v > 0) - (v < 0)


def _refine_root(poly: fmpz_poly, s_lo: int, x: arb, prec: int) -> arb:
    """A ball inside ``x`` containing the root of ``poly`` in ``x``, of radius about
    ``2^-prec`` times ``max(|x|, 1)`` where ``prec`` bits allow.

    ``x`` must contain exactly one root, a simple one, with ``poly`` of sign ``s_lo`` left
    of it (an isolating interval, or an earlier result).  Interval Newton: for the midpoint
    ``m`` and the root ``r``, ``p(m) = p'(xi) (m - r)`` for some ``xi`` in ``x``, so ``r``
    lies in ``m - p(m) / p'(x)`` when the ball ``p'(x)`` excludes 0, and in its intersection
    with ``x``.  Near the root the radius is squared at each step (``O(log prec)`` steps);
    a step that does not halve it is replaced by bisection (the sign of the ball ``p(m)``
    against ``s_lo``).  When neither shrinks the ball (``p(m)`` within rounding of 0) it is
    returned as it is: wider, still rigorous.
    """
    with precision(prec + 16):
        p = arb_poly([int(c) for c in poly.coeffs()])  # exact integer coefficients
        dp = p.derivative()
        target = arb(2) ** -(prec + 2) * max(x.abs_upper(), arb(1))
        while not x.rad() <= target:
            m = x.mid()
            pm = p(m)
            if pm.is_zero():  # m is the root, exactly
                return m
            best = None
            d = dp(x)
            if (d > 0 or d < 0) and (n := m - pm / d).overlaps(x):
                best = x.intersection(n)
            if (best is None or not 2 * best.rad() <= x.rad()) and (pm > 0 or pm < 0):
                # bisection: p has the sign s_lo left of the root only
                half = m.union(x.upper()) if (pm > 0) == (s_lo > 0) else x.lower().union(m)
                best = half if best is None or half.rad() < best.rad() else best
            if best is None or not best.rad() < x.rad():
                break  # at the limit of this precision
            x = best
    return x


def _check_root(poly: fmpz_poly, lo: fmpq, hi: fmpq) -> None:
    if poly.degree() < 1:
        raise ValueError("the polynomial must have degree >= 1")
    if not lo < hi:
        raise ValueError("the interval must have lo < hi")
    p = fmpq_poly(poly)
    if _sign(p, lo) * _sign(p, hi) >= 0:
        raise ValueError("the polynomial must change sign strictly between lo and hi")
    # exactly one root: the derivative has no zero on [lo, hi] (checked by balls)
    dp = p.derivative()
    with precision(128):
        interval = arb((lo + hi) / 2, (hi - lo) / 2)
        d = arb_poly([arb(c) for c in dp.coeffs()])(interval)
        if not (d > 0 or d < 0):
            raise ValueError("the interval is not proven isolating (derivative may vanish)")


def _root_degree(e: Mapping[str, Any], k: int) -> int:
    """The degree a ``root`` entry claims (its coefficients' count less one), within
    :data:`MAX_ROOT_DEGREE`: checked before any coefficient is parsed."""
    coeffs = e["root"]
    if not isinstance(coeffs, list):
        raise ValueError(f"[{k}]: root coefficients are a list of integer strings")
    if len(coeffs) - 1 > MAX_ROOT_DEGREE:
        raise ValueError(
            f"[{k}]: a root of a polynomial of degree {len(coeffs) - 1}, beyond the limit of "
            f"{MAX_ROOT_DEGREE}"
        )
    return max(len(coeffs) - 1, 0)


def _parse_root(e: Mapping[str, Any], k: int) -> tuple[fmpz_poly, fmpq, fmpq]:
    coeffs = e["root"]
    if not isinstance(coeffs, list) or not all(isinstance(c, str) for c in coeffs):
        raise ValueError(f"[{k}]: root coefficients are a list of integer strings")
    try:
        cs = [parse_rational(c) for c in coeffs]
        lo, hi = parse_rational(e["lo"]), parse_rational(e["hi"])
    except (ValueError, TypeError) as err:
        raise ValueError(f"[{k}]: {err}") from None
    if any(c.q != 1 for c in cs):
        raise ValueError(f"[{k}]: root coefficients must be integers")
    poly = fmpz_poly([int(c.p) for c in cs])
    try:
        _check_root(poly, lo, hi)
    except ValueError as err:
        raise ValueError(f"[{k}]: {err}") from None
    return poly, lo, hi


def weights_program(values: Sequence[Any]) -> RadicalProgram | None:
    """The one program the :class:`Radical` values among ``values`` belong to, or None."""
    progs = {id(v.program): v.program for v in values if isinstance(v, Radical)}
    if len(progs) > 1:
        raise ValueError("a net's algebraic weights must come from one program")
    return next(iter(progs.values()), None)
