"""RMSNorm nets through the correspondence with LayerNorm (proofs/rmsnorm.md).

LayerNorm of ``k + 1`` features is RMSNorm of ``k`` features read in an orthonormal basis of
the zero-mean hyperplane: with Helmert's basis ``Q`` (``(k + 1) x k``, ``Q^T Q = I``,
``Q^T 1 = 0``) and ``c = sqrt((k + 1) / k)``,

    LN_eps(y) = c Q RMS_eps'(Q^T y),    eps' = eps (k + 1) / k,

in each group of a layer (LN-G with groups of ``k + 1`` against RMSNorm in groups of ``k``,
the parallel layer scaling of Ni et al., "Parallel Layer Normalization for Universal
Approximation", 2025).  :func:`twin` moves a net across, either way, in any number type with
a square root: exactly in SymPy (proofs/check_rmsnorm.py), in balls here.  ``c`` is
irrational for every ``k``, and for ``k = 2`` no rational basis of the plane is orthogonal
with equal lengths (proofs/rmsnorm.md, Theorem 2): a rational net's twin is not rational.
:func:`rms_net` therefore rounds the twin of a built LayerNorm net to rationals of ``bits``
bits (rank-one layers through their factors, so they stay rank one exactly); the rounded net
is certified on its own (:func:`lncapacity.certify`), never through the correspondence.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from flint import arb, fmpq

from ..arith import arb_to_fmpq, precision
from ..certify import rank_one
from ..model import Affine, LNNet, Norm

T = TypeVar("T")

Sqrt = Callable[[fmpq], Any]
"""``q -> sqrt(q)`` for a positive rational ``q``, in the twin's number type."""

BITS = 128
"""Bits of every weight of :func:`rms_net`'s rounded twin of a float64-faithful net (its
margins are far above ``2^-128`` relative); the paper's algorithm (``pma``, which loses about
a quarter of a bit per layer, proofs/float_gap.md) and circle's ``depth`` objective get
``BITS + depth`` (measured: 300 random points in R^3, depth 294, 128 bits leave 9 points
wrong, 256 none)."""


def _down(y: Sequence[T], k: int, sqrt: Sqrt) -> list[T]:
    """``Q^T y`` in each group of ``k + 1`` (Helmert: ``(y_1 + .. + y_j - j y_(j+1)) /
    sqrt(j (j + 1))``, ``j = 1 .. k``): ``g (k + 1)`` numbers to ``g k``."""
    out: list[T] = []
    for s in range(0, len(y), k + 1):
        acc = y[s]
        for j in range(1, k + 1):
            out.append((acc - j * y[s + j]) / sqrt(fmpq(j * (j + 1))))
            acc = acc + y[s + j]
    return out


def _up(x: Sequence[T], k: int, sqrt: Sqrt) -> list[T]:
    """``Q x`` in each group of ``k`` (the inverse of :func:`_down` on the zero-mean
    vectors): ``g k`` numbers to ``g (k + 1)``."""
    out: list[T] = []
    for s in range(0, len(x), k):
        col = [x[s + j - 1] / sqrt(fmpq(j * (j + 1))) for j in range(1, k + 1)]
        tail = [col[-1] * 0]  # the sums col_j + .. + col_k, from the last
        for j in range(k - 1, -1, -1):
            tail.append(tail[-1] + col[j])
        tail.reverse()  # tail[i] = col_(i+1) + .. + col_k
        out.append(tail[0])
        out.extend(tail[i] - i * col[i - 1] for i in range(1, k + 1))
    return out


def _columns(M: Sequence[Sequence[T]], f: Callable[[Sequence[T]], list[T]]) -> list[list[T]]:
    """``f`` applied to every column of ``M``."""
    return [list(r) for r in zip(*(f(list(col)) for col in zip(*M, strict=True)), strict=True)]


def _sizes(net: LNNet[Any], to: str) -> list[int]:
    """The group size ``k`` of the RMSNorm side of each layer; ValueError unless every layer
    is a plain normalisation of the kind moved from (gains folded first)."""
    sizes = []
    for i, n in enumerate(net.widths):
        norm = net.norm(i)
        if not norm.is_identity or norm.rms != (to == "ln"):
            kind = "RMSNorm" if to == "ln" else "LayerNorm"
            raise ValueError(f"layer {i + 1}: not a plain {kind} (fold gains and biases first)")
        sizes.append(n // norm.groups - (to == "rms"))
    if net.eps != 0 and len(set(sizes)) > 1:
        raise ValueError("eps > 0 with groups of different sizes: one eps cannot serve them all")
    if 0 in sizes:
        raise ValueError("a LayerNorm group of one feature has no RMSNorm twin")
    return sizes


def twin(
    net: LNNet[Any],
    to: str,
    sqrt: Sqrt,
    factors: Sequence[tuple[Sequence[Any], Sequence[Any]] | None] | None = None,
) -> LNNet[Any]:
    """The net's twin across the correspondence: ``to="rms"`` turns a net of (grouped)
    LayerNorms of groups of ``k + 1`` into RMSNorms of groups of ``k``, ``to="ln"`` the way
    back, computing the same scores for every input (proofs/rmsnorm.md, Theorem 1 and
    Corollary 1).

    The net's gains and biases must be folded first (:meth:`LNNet.folded`); its numbers are
    those of ``sqrt``'s results (rationals times them: SymPy expressions, ``arb`` balls).
    ``W_1 = Q^T W'_1``, ``W_l = c Q^T W'_l Q``, ``b_l = Q^T b'_l``, ``R = c R' Q`` and
    ``eps' = eps (k + 1) / k`` to RMSNorm (``Q = I`` on the input); the inverse maps back.
    ``factors`` (one entry per layer and the readout, or None): ``(col, row)`` with ``W =
    col row^T`` for the maps that are rank one; their twins are then returned as factors too,
    in the map's ``meta["factors"]`` (and ``W`` their product).
    """
    if to not in ("rms", "ln"):
        raise ValueError(f"unknown twin {to!r} (choose rms or ln)")
    ks = _sizes(net, to)
    eps = net.eps
    if ks and to == "rms":
        eps = eps * (ks[0] + 1) / ks[0]
    elif ks:
        eps = eps * ks[0] / (ks[0] + 1)

    def vec(v: Sequence[Any], k: int) -> list[Any]:
        return _down(v, k, sqrt) if to == "rms" else _up(v, k, sqrt)

    def scale(k: int) -> Any:  # c = sqrt((k + 1) / k), or 1 / c on the way back
        return sqrt(fmpq(k + 1, k) if to == "rms" else fmpq(k, k + 1))

    maps: list[Affine[Any]] = []
    previous: int | None = None  # the group size of the layer before (None: the input)
    pairs: list[tuple[Affine[Any], int | None]] = [*zip(net.layers, ks, strict=True)]
    for i, (a, k) in enumerate([*pairs, (net.readout, None)]):
        meta: dict[str, Any] = {}
        if factors is not None and factors[i] is not None:
            col, row = (list(v) for v in factors[i])  # type: ignore[misc]
            if k is not None:
                col = vec(col, k)
            if previous is not None:
                row = [scale(previous) * w for w in vec(row, previous)]
            W = [[ci * w for w in row] for ci in col]
            meta["factors"] = (col, row)
        else:
            W = [list(r) for r in a.W]
            if k is not None:
                W = _columns(W, lambda v, k=k: vec(v, k))
            if previous is not None:
                W = [[scale(previous) * w for w in vec(r, previous)] for r in W]
        b = vec(a.b, k) if k is not None else list(a.b)
        maps.append(Affine(tuple(map(tuple, W)), tuple(b), meta))
        previous = k
    width = {len(a.b) for a in maps[:-1]}
    norms = tuple(Norm(groups=net.norm(i).groups, rms=to == "rms") for i in range(net.depth))
    return LNNet(
        net.input_dim,
        width.pop() if len(width) == 1 else None,
        eps,
        tuple(maps[:-1]),
        maps[-1],
        net.classes,
        net.meta,
        norms,
    )


def rms_net(net: LNNet[fmpq], bits: int | None = None) -> LNNet[fmpq]:
    """The RMSNorm twin of a rational LayerNorm net (:func:`twin`), every weight rounded to a
    rational of ``bits`` significant bits (default :data:`BITS`, or ``BITS + depth`` for
    nets that are not float64-faithful): a rank-one map through its factors (so its rank
    stays one, exactly), the others entry by entry; ``eps`` exact (``eps (k + 1) / k``).

    The result computes the twin's scores to about ``2^-bits`` relative; it is not the twin
    (no rational net is, proofs/rmsnorm.md, Theorem 2), and is certified on its own.  Its
    ``meta["rms"]`` records the correspondence and the bits; the layers keep their construction
    notes (what each layer does: its twin does the same).
    """
    if bits is None:
        faithful = net.meta.get("method") != "pma" and net.meta.get("objective") != "depth"
        bits = BITS if faithful else BITS + net.depth
    folded = net.folded()
    ks = _sizes(folded, "rms")
    factors = [rank_one(a.W) if a.W and a.W[0] else None for a in (*folded.layers, folded.readout)]
    with precision(bits + 16):  # the few operations per weight lose a few bits at most
        balls = twin(
            folded.map(arb),
            "rms",
            lambda q: arb(q).sqrt(),
            [None if f is None else tuple([arb(v) for v in part] for part in f) for f in factors],
        )

    def r(x: arb) -> fmpq:
        with precision(bits):
            return arb_to_fmpq((+x).mid())

    def affine(a: Affine[arb], source: Affine[fmpq]) -> Affine[fmpq]:
        b = tuple(r(v) for v in a.b)
        if "factors" in a.meta:
            col, row = ([r(v) for v in f] for f in a.meta["factors"])
            return Affine(tuple(tuple(ci * w for w in row) for ci in col), b, source.meta)
        return Affine(tuple(tuple(r(w) for w in row) for row in a.W), b, source.meta)

    meta = {
        **dict(net.meta),
        "rms": {"correspondence": "proofs/rmsnorm.md", "from": "LayerNorm", "bits": bits},
    }
    return LNNet(
        net.input_dim,
        balls.width,
        folded.eps * fmpq(ks[0] + 1, ks[0]) if ks else folded.eps,  # exact
        tuple(affine(a, src) for a, src in zip(balls.layers, folded.layers, strict=True)),
        affine(balls.readout, folded.readout),
        net.classes,
        meta,
        balls.norms,
    )


def ln_eps(eps: fmpq, k: int = 2) -> fmpq:
    """The LayerNorm ``eps`` whose twin has RMSNorm ``eps`` (groups of ``k``): ``eps k /
    (k + 1)``."""
    return eps * fmpq(k, k + 1)
