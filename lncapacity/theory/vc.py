"""The VC sandwich of LN-Nets: proved lower bounds, certified rows, and three upper bounds.

For the width-3 LN-Net of depth ``L`` (``arch="ln3"``) and the LN-G net with ``g`` groups of 3
per layer (``arch="ln-g"``) on inputs in ``R^d``, with LayerNorm's ``eps``, :func:`sandwich`
returns the best lower bound with its source and the best upper bound with its source, each
saying for which ``eps`` it holds:

* lower bounds are theorems (a name and its file in ``proofs/``) or shattering certificates
  shipped in ``certificates/`` (:data:`CERTIFIED`, all with ``eps = 0``: the command line
  re-checks them with ``verify-shatter`` on request; a set shattered at depth ``k`` is
  shattered at every greater depth, proofs/depth_and_padding.md, identity lemma).  Every lower
  bound holds for every ``eps > 0`` as well: a net that classifies finitely many points with
  ``eps = 0`` still does with a small ``eps``, and every ``eps > 0`` is the same class
  (proofs/sector_theorem.md, section 7);
* the upper bounds are the line bound (``d = 1``, any ``eps``: ``2^L + 1``, the break-point
  theorem of proofs/circle_maps.md, sections 3.1 and 3.2; ``g^L 2^(gL) + 1`` for LN-G,
  proofs/ln_g_vc.md, section 5), the sector count (``d >= 2``, ``eps = 0`` only:
  proofs/sector_theorem.md, :func:`lncapacity.theory.sectors.sector_vc`) and Warren's counting
  bound (any ``eps``: proofs/vc_upper.md), evaluated exactly by :func:`warren_vc` for that
  depth, dimension and parameter count.

RMSNorm nets of width 2 (``arch="rms"``) and in groups of 2 (``"rms-g"``, parallel layer
scaling) compute exactly the functions of the width-3 and LN-G nets of the same depth
(proofs/rmsnorm.md, Corollaries 2 and 3, with RMSNorm's ``eps`` 3/2 of LayerNorm's): their
sandwich is their twin's, every bound carried over by that correspondence.

>>> warren_vc(1, 1)  # depth 1 on a line: the counting bound alone
72
>>> sandwich("ln3", 2, 1).upper.value  # the line bound is smaller there
5
>>> sandwich("ln3", 2, 1).gap  # 5 points are shattered (proofs/double_fold.md): VC = 5
0
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flint import arb, fmpq

from ..arith import epsilon, format_rational, precision
from ..errors import InputError
from .sectors import sector_vc

RMS_TWINS = {"rms": "ln3", "rms-g": "ln-g"}
"""The RMSNorm architectures and the LayerNorm ones whose functions they compute."""
ARCHS = ("ln3", "ln-g", *RMS_TWINS)
MAX_DEPTH = 4096
"""Deepest net :func:`sandwich` takes."""
MAX_GROUPS = 4096
MAX_ROOTS = 1 << 16
"""Most square roots ``g L`` :func:`sandwich` eliminates (``K = 3^(gL)`` has ``1.6 g L`` bits)."""
PRECISION = 256
"""Bits of the balls in which :func:`warren_holds` decides."""
SECTOR_DIMS = 8
"""Largest input dimension for which :func:`sandwich` evaluates the sector count (its
polynomial grows like ``N^(d^2)``; beyond, Warren's bound is smaller)."""
PAPER = 'Ni, Guo, Jia, Huang, "On the Nonlinearity of Layer Normalization", ICML 2024'
ANY_EPS, ZERO_EPS = "eps >= 0", "eps = 0"


@dataclass(frozen=True)
class Bound:
    """A bound on the VC dimension and where it comes from: ``source`` is a path relative to
    the repository's root (a proof or a certificate) and ``name`` says which claim of it."""

    value: int
    name: str
    source: str
    kind: str  # "theorem" or "certificate"
    holds: str = ANY_EPS
    """For which ``eps`` the bound is proved: ``"eps >= 0"`` (``ANY_EPS``) or ``"eps = 0"``
    (``ZERO_EPS``)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "source": self.source,
            "name": self.name,
            "kind": self.kind,
            "holds_for": self.holds,
        }


@dataclass(frozen=True)
class Sandwich:
    arch: str
    groups: int
    depth: int
    dim: int
    eps: fmpq
    lower: Bound
    upper: Bound
    uppers: tuple[Bound, ...]
    lowers: tuple[Bound, ...]

    @property
    def gap(self) -> int:
        return self.upper.value - self.lower.value

    def to_dict(self) -> dict[str, Any]:
        return {
            "depth": self.depth,
            "dim": self.dim,
            "arch": self.arch,
            "groups": self.groups,
            "eps": format_rational(self.eps),
            "lower": self.lower.to_dict(),
            "upper": self.upper.to_dict(),
            "gap": self.gap,
            "all_lower": [b.to_dict() for b in self.lowers],
            "all_upper": [b.to_dict() for b in self.uppers],
        }


@dataclass(frozen=True)
class Certified:
    """A shattering certificate in the repository: ``points`` points in ``R^dim`` shattered by
    ``arch`` nets (``groups`` groups of 3) of depth ``depth``, ``eps = 0``; ``search``: the
    method of :func:`lncapacity.search.find_net` that wrote it, or ``"chain"`` (the Chebyshev
    chains of ``benchmarks/shatter_line_chain.py``); ``benchmarks/bench_vc.py --regenerate``
    writes it again."""

    arch: str
    groups: int
    depth: int
    dim: int
    points: int
    path: str
    search: str = "circle"


CERTIFIED: tuple[Certified, ...] = (
    Certified("ln3", 1, 1, 2, 6, "certificates/shatter-plane-L1-n6.jsonl.gz"),
    Certified("ln3", 1, 2, 2, 13, "certificates/shatter-plane-L2-n13.jsonl.gz", "sector"),
    Certified("ln3", 1, 1, 3, 10, "certificates/shatter-space-L1-n10.jsonl.gz", "sector"),
    Certified("ln3", 1, 3, 1, 9, "certificates/shatter-line-L3-n9.jsonl.gz"),
    Certified("ln3", 1, 4, 1, 11, "certificates/shatter-line-L4-n11.jsonl.gz"),
    Certified("ln3", 1, 4, 1, 13, "certificates/shatter-line-L4-n13.jsonl.gz"),
    Certified("ln3", 1, 4, 1, 15, "certificates/shatter-line-L4-n15.jsonl.gz", "chain"),
    Certified("ln3", 1, 3, 2, 14, "certificates/shatter-plane-L3-n14.jsonl.gz"),
    Certified("ln3", 1, 4, 2, 14, "certificates/shatter-plane-L4-n14.jsonl.gz"),
    Certified("ln3", 1, 4, 2, 16, "certificates/shatter-plane-L4-n16.jsonl.gz", "sector"),
    Certified("ln-g", 2, 1, 1, 5, "certificates/shatter-ln-g2-L1-n5.jsonl.gz"),
    Certified("ln-g", 3, 1, 1, 7, "certificates/shatter-ln-g3-L1-n7.jsonl.gz"),
    Certified("ln-g", 4, 1, 1, 9, "certificates/shatter-ln-g4-L1-n9.jsonl.gz"),
)
"""The certificates shipped (each accepted by ``lncapacity verify-shatter``; a certificate in
``R^dim`` also bounds every larger dimension: a net may ignore coordinates)."""


def repo_root() -> Path:
    """The repository's root (where ``proofs/`` and ``certificates/`` are)."""
    return Path(__file__).resolve().parents[2]


def parameters(depth: int, dim: int, groups: int = 1) -> int:
    """``P``, the real parameters a depth-``depth`` net with ``groups`` groups of 3 per layer
    acts through (proofs/vc_upper.md, Lemma 1): ``g (2d + 2)`` in the first layer,
    ``g (4g + 2)`` in each later one, ``2g + 1`` in the readout.  ``g = 1``: ``2d + 6L - 1``."""
    g = groups
    return g * (2 * dim + 2) + (depth - 1) * g * (4 * g + 2) + 2 * g + 1


def eliminated(depth: int, groups: int = 1) -> tuple[int, int]:
    """``(K, D)``: per input point, at most ``K = 3^(gL)`` polynomials in the parameters, of
    degree at most ``D = (1 + g w_L) 2^(gL)`` with ``w_1 = 1``, ``w_(l+1) = 1 + g w_l``, decide
    the label once the ``g L`` square roots are eliminated (proofs/vc_upper.md, Lemma 2).
    ``g = 1``: ``K = 3^L``, ``D = (L + 1) 2^L``."""
    w = 1
    for _ in range(depth - 1):
        w = 1 + groups * w
    n = groups * depth
    return 3**n, (1 + groups * w) * 2**n


def warren_holds(m: int, P: int, K: int, D: int) -> bool:
    """False only when ``2^m > (4 e D max(m K, P) / P)^P`` is proved, in ball arithmetic
    (``m ln 2`` against ``P ln(4 e D max(m K, P) / P)``, :data:`PRECISION` bits, more while
    the balls overlap): then ``m`` points cannot be shattered (proofs/vc_upper.md, Theorem).
    True otherwise, which can only raise the bound."""
    prec = PRECISION
    while True:
        with precision(prec):
            lhs = m * arb(2).log()
            rhs = P * (arb(4 * D * max(m * K, P)).log() + 1 - arb(P).log())
            if lhs > rhs:
                return False
            if lhs <= rhs or prec >= 16 * PRECISION:
                return True
        prec *= 2


def warren_vc(depth: int, dim: int, groups: int = 1) -> int:
    """The largest ``m`` with :func:`warren_holds`: an upper bound of the VC dimension (any
    ``eps >= 0``).  The set of such ``m`` is ``{1, ..., m_1}`` (proofs/vc_upper.md, section
    3), so a binary search finds ``m_1`` exactly."""
    P = parameters(depth, dim, groups)
    K, D = eliminated(depth, groups)
    lo, hi = 1, 2
    while warren_holds(hi, P, K, D):
        lo, hi = hi, 2 * hi
    while hi - lo > 1:  # warren_holds(lo), not warren_holds(hi)
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if warren_holds(mid, P, K, D) else (lo, mid)
    return lo


def line_bound(depth: int, groups: int = 1) -> int:
    """``g^L 2^(gL) + 1``: on a line a depth-``L`` net with ``g`` groups of 3 per layer shatters
    no more points, for every ``eps >= 0``; for width 3 (``g = 1``) that is ``2^L + 1``
    (proofs/circle_maps.md: the break-point theorem of section 3.1 for ``eps = 0``, the zero
    count of section 3.2 for ``eps > 0``), for ``g >= 2`` the zero count with weights
    (proofs/ln_g_vc.md, section 5).  The label changes at most ``g^L 2^(gL)`` times along the
    line; alternating labels on ``n`` points need ``n - 1`` changes."""
    return groups**depth * 2 ** (groups * depth) + 1


def break_bound(changes: int) -> int:
    """``ceil(log2 B)`` for ``B = changes >= 1`` (``0`` for ``B <= 1``): the least depth of a
    width-3 net whose labels change ``B`` times along a line, in their order on the line (not
    cyclically).  A depth-``L`` net changes its label at most ``2^L`` times along a line, for
    every ``eps >= 0`` (proofs/circle_maps.md §3.1, §3.2; depth 0, the affine readout, once),
    the same count read the other way as :func:`line_bound`.  With ``eps = 0`` it also bounds
    the depth (``L >= 1``) of a net whose first layer leaves ``B`` cyclic label boundaries on
    its circle (§3.1: at most ``c_1 <= 2^L``).  That supersedes the fold count
    ``ceil(log2(B + 2)) - 1`` of §3: never smaller, and for even ``B >= 4`` one more unless
    ``B / 2`` is a power of two.

    >>> [break_bound(B) for B in (0, 1, 2, 3, 4, 5, 8, 9)]
    [0, 0, 1, 2, 2, 3, 3, 4]
    """
    return max(0, changes - 1).bit_length()


def _theorems(arch: str, groups: int, depth: int, dim: int) -> list[Bound]:
    L, g = depth, groups
    out = []
    if arch == "ln3" or g == 1:
        out.append(Bound(L + 2, f"L + 2 points ({PAPER})", "proofs/vc_theorem.md", "theorem"))
    out.append(
        Bound(2 * L + 1, "any 2L + 1 points (Theorem 1)", "proofs/double_fold.md", "theorem")
    )
    if dim >= 2:
        out.append(
            Bound(2 * L + 3, "2L + 3 on a circle (Theorem 2)", "proofs/double_fold.md", "theorem")
        )
    if arch == "ln-g":
        out.append(
            Bound(
                2 * g + 1,
                f"g groups shatter 2g + 1 points (Theorem {1 if L == 1 else 2})",
                "proofs/ln_g_vc.md",
                "theorem",
            )
        )
        out = [
            b
            if b.source == "proofs/ln_g_vc.md"
            else Bound(b.value, f"{b.name}, in one group (ln_g_vc.md, Lemma 3)", b.source, b.kind)
            for b in out
        ]
    return out


def _certified(arch: str, groups: int, depth: int, dim: int, eps: fmpq) -> list[Bound]:
    root = repo_root()
    kept = "" if eps == 0 else " with eps = 0, kept for eps > 0 (sector_theorem.md, section 7)"

    def deeper(c: Certified) -> str:
        if c.depth == depth:
            return ""
        return f" at depth {c.depth}, kept at depth {depth} (depth_and_padding.md, identity lemma)"

    return [
        Bound(
            c.points,
            f"{c.points} points in R^{c.dim} certified{deeper(c)}{kept}",
            c.path,
            "certificate",
        )
        for c in sorted(CERTIFIED, key=lambda c: -c.depth)  # on a tie the deepest is named
        if c.arch == arch
        and c.groups == groups
        and c.depth <= depth
        and c.dim <= dim
        and (root / c.path).is_file()
    ]


def _uppers(arch: str, groups: int, depth: int, dim: int, eps: fmpq) -> list[Bound]:
    P = parameters(depth, dim, groups)
    warren = warren_vc(depth, dim, groups)
    out = [
        Bound(
            warren,
            f"Warren's count: P = {P} parameters, K = 3^{groups * depth} polynomials per point",
            "proofs/vc_upper.md",
            "theorem",
        )
    ]
    if dim == 1 and groups * depth <= 64:  # beyond, the line bound is astronomically large
        name, source = (
            ("line bound 2^L + 1 (break-point theorem, section 3.1)", "proofs/circle_maps.md")
            if groups == 1
            else ("line bound g^L 2^(gL) + 1 (zeros, section 5)", "proofs/ln_g_vc.md")
        )
        out.append(Bound(line_bound(depth, groups), name, source, "theorem"))
    sector = (
        sector_vc(depth, dim, limit=warren)
        if arch == "ln3" and eps == 0 and 2 <= dim <= SECTOR_DIMS and 2**depth < warren
        else None
    )
    if sector is not None:
        thm = "Theorem 2" if dim == 2 else "Theorem 4"
        if depth == 1:
            thm += " and Theorem 3"
        out.append(
            Bound(
                sector,
                f"sector count ({thm}): at most 2^L label changes around an apex",
                "proofs/sector_theorem.md",
                "theorem",
                ZERO_EPS,
            )
        )
    return out


def sandwich(arch: str, depth: int, dim: int, groups: int = 1, eps: object = 0) -> Sandwich:
    """The VC sandwich of ``arch`` nets of depth ``depth`` on ``R^dim`` (``groups`` groups of 3
    per layer for ``"ln-g"``; ``"ln3"`` is ``groups = 1``) with LayerNorm's ``eps`` (exact,
    ``>= 0``): the best lower bound (theorems and shipped certificates) and the best upper bound
    (Warren's; on a line the line bound; with ``eps = 0`` in the plane and beyond the sector
    count).  ``"rms"`` and ``"rms-g"``: RMSNorm (``eps`` RMSNorm's), the twin's sandwich."""
    if arch not in ARCHS:
        raise InputError(f"unknown architecture {arch!r} (choose {' or '.join(ARCHS)})")
    if arch in RMS_TWINS:
        try:
            eps_rms = epsilon(eps)
        except ValueError as e:
            raise InputError(str(e)) from None
        twin = sandwich(RMS_TWINS[arch], depth, dim, groups, eps_rms * fmpq(2, 3))

        def carried(b: Bound) -> Bound:
            name = f"{b.name}, for RMSNorm by the correspondence (proofs/rmsnorm.md)"
            return Bound(b.value, name, b.source, b.kind, b.holds)

        lowers, uppers = tuple(map(carried, twin.lowers)), tuple(map(carried, twin.uppers))
        lower = lowers[[id(b) for b in twin.lowers].index(id(twin.lower))]
        upper = uppers[[id(b) for b in twin.uppers].index(id(twin.upper))]
        return Sandwich(arch, groups, depth, dim, eps_rms, lower, upper, uppers, lowers)
    if not 1 <= depth <= MAX_DEPTH:
        raise InputError(f"depth must be from 1 to {MAX_DEPTH}, got {depth}")
    if dim < 1:
        raise InputError(f"the dimension must be positive, got {dim}")
    if arch == "ln3" and groups != 1:
        raise InputError("--groups is for --arch ln-g (ln3 is one group of 3)")
    if not 1 <= groups <= MAX_GROUPS:
        raise InputError(f"groups must be from 1 to {MAX_GROUPS}, got {groups}")
    if groups * depth > MAX_ROOTS:
        raise InputError(f"groups x depth must be at most {MAX_ROOTS}, got {groups * depth}")
    try:
        eps_q = epsilon(eps)
    except ValueError as e:
        raise InputError(str(e)) from None
    lowers = _theorems(arch, groups, depth, dim) + _certified(arch, groups, depth, dim, eps_q)
    uppers = _uppers(arch, groups, depth, dim, eps_q)
    lower = max(lowers, key=lambda b: (b.value, b.kind == "theorem"))
    upper = min(uppers, key=lambda b: b.value)
    return Sandwich(arch, groups, depth, dim, eps_q, lower, upper, tuple(uppers), tuple(lowers))
