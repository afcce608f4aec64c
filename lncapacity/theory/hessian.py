"""The Hessian measure of nonlinearity, LayerNorm in groups (LN-G), and the proposition of Ni et al.

**The measure** (Ni, Guo, Jia and Huang, "On the Nonlinearity of Layer
Normalization", ICML 2024): ``H(f; x) = sum_i ||d^2 y_i / dx^2||_F^2`` for
``y = f(x)``.  It is ``>= 0``, and ``0`` at every ``x`` exactly when ``f`` is
affine (all second derivatives vanish).  Three ways to compute it here:

* :func:`hessian_measure_exact`: SymPy, symbolic derivatives evaluated at a
  rational point, an exact number (small ``d``);
* :func:`hessian_measure`: PyTorch automatic differentiation (forward over
  reverse, ``d`` directional derivatives of the Jacobian, chunked), exact
  derivatives in float64, any ``f``, to ``d = 1024`` and beyond;
* :func:`ln_hessian`: the closed form for LayerNorm and LN-G, exact rational
  for rational ``x`` and ``eps`` (proofs/ln_g_hessian.md), ``O(d)``.

**LN-G** (:func:`layer_norm_groups`): split the ``d`` features into ``g``
contiguous groups of ``k = d / g`` and normalise each group on its own, with
centring (LayerNorm in each group) or without (RMS normalisation in each
group).  ``g = 1`` is LayerNorm.

**Closed form.** In a group of size ``k`` let ``z`` be the centred group
(``P x_G``, or ``x_G`` without centring), ``rho^2 = |z|^2``, ``n = k - 1`` (``k``
without centring), ``r^2 = 1 / (rho^2 / k + eps)`` and ``q = r^2 rho^2 / k``.
Then the group contributes ``(r^4 / k) ((3 n + 6) q - 18 q^2 + 9 q^3)``; with
``eps = 0`` (``q = 1``) that is ``3 k (k - 2) / rho^4`` (``3 k (k - 1) / rho^4``
without centring).

**The proposition** (Ni et al.: "given g <= d/3, H(LN-G)/H(LN) >= 1; when
g = d/4, >= d/8"), :func:`ratio_lower_bound`: with ``eps = 0``, ``g`` dividing
``d``, groups of size ``k = d/g >= 3`` and no constant group (else LN-G is
``0/0``),

    H(LN-G; x) / H(LN; x) >= g (d - 2 g) / (d - 2),

with equality when all groups have the same spread and the same mean.  That
bound is ``>= 1`` iff ``(g - 1)(d - 2 g - 2) >= 0`` (true for ``g <= d/3``) and is
``d^2 / (8 (d - 2)) > d/8`` at ``g = d/4``: the proposition holds, for every
input, under exactly those assumptions.  It fails outside them: with
``eps > 0`` (:func:`eps_counterexample`: groups of tiny spread far apart),
with groups of size 2 (LN-G is then locally constant, ``H = 0``), and for the
uncentred LN-G compared with LN (inputs near the ``1`` direction).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from flint import fmpq

from ..arith import exact
from ..errors import InputError

__all__ = [
    "eps_counterexample",
    "hessian_measure",
    "hessian_measure_exact",
    "hessian_ratio",
    "layer_norm_groups",
    "ln_hessian",
    "ln_hessian_float",
    "minimise_ratio",
    "ratio_lower_bound",
    "sample_input",
]

KINDS = ("gaussian", "sparse", "adversarial")


def _groups(d: int, groups: int) -> int:
    if groups < 1 or d % groups:
        raise InputError(f"{groups} groups do not divide {d} features evenly")
    return d // groups


def layer_norm_groups(
    x: Any,
    groups: int = 1,
    eps: Any = 0,
    centre: bool = True,
    sqrt: Callable[[Any], Any] | None = None,
) -> Any:
    """LN-G: normalise each of ``groups`` contiguous groups of the last axis of ``x``.

    ``x``: a NumPy array or PyTorch tensor (``(..., d)``, vectorised), or a
    sequence of numbers of any type (SymPy symbols, fmpq, arb) with ``sqrt``
    (default ``sympy.sqrt``).  ``centre=False`` divides by the root mean square
    without subtracting the mean.  ``groups=1`` is LayerNorm.
    """
    if isinstance(x, np.ndarray) or type(x).__module__.startswith("torch"):
        d = x.shape[-1]
        k = _groups(d, groups)
        z = x.reshape(*x.shape[:-1], groups, k)
        if centre:
            z = (
                z - z.mean(-1, keepdims=True)
                if isinstance(x, np.ndarray)
                else z - z.mean(-1, keepdim=True)
            )
        if isinstance(x, np.ndarray):
            s = np.sqrt((z * z).mean(-1, keepdims=True) + eps)
        else:
            s = ((z * z).mean(-1, keepdim=True) + eps).sqrt()
        return (z / s).reshape(x.shape)
    if sqrt is None:
        import sympy as sp

        sqrt = sp.sqrt
    xs = list(x)
    k = _groups(len(xs), groups)
    out: list[Any] = []
    for start in range(0, len(xs), k):
        z = xs[start : start + k]
        if centre:
            mean = sum(z[1:], z[0]) / k
            z = [v - mean for v in z]
        s = sqrt(sum((v * v for v in z[1:]), z[0] * z[0]) / k + eps)
        out += [v / s for v in z]
    return out


def _group_term(rho2: Any, k: int, n: int, eps: Any) -> Any:
    """One group's ``sum_i ||Hess y_i||_F^2`` from ``rho^2`` (closed form, module doc)."""
    r2 = 1 / (rho2 / k + eps)
    q = r2 * rho2 / k
    return r2 * r2 / k * ((3 * n + 6) * q - 18 * q * q + 9 * q * q * q)


def ln_hessian(x: Sequence[Any], groups: int = 1, eps: Any = 0, centre: bool = True) -> fmpq:
    """``H(LN-G; x)`` exactly (``groups=1``: LayerNorm), for rational ``x`` and ``eps``.

    Raises :class:`ValueError` when a group is constant and ``eps = 0`` (LN-G is
    not defined there).
    """
    xs = [exact(v) for v in x]
    e = exact(eps)
    k = _groups(len(xs), groups)
    total = fmpq(0)
    for start in range(0, len(xs), k):
        z = xs[start : start + k]
        if centre:
            mean = sum(z, fmpq(0)) / k
            z = [v - mean for v in z]
        rho2 = sum((v * v for v in z), fmpq(0))
        if rho2 == 0 and e == 0:
            raise ValueError(f"group {start // k + 1} is constant: LN-G is 0/0 there")
        total += _group_term(rho2, k, k - 1 if centre else k, e)
    return total


def ln_hessian_float(
    X: np.ndarray, groups: int = 1, eps: float = 0.0, centre: bool = True
) -> np.ndarray:
    """The closed form in float64, vectorised over the rows of ``X`` (``(..., d)``)."""
    X = np.asarray(X, dtype=np.float64)
    d = X.shape[-1]
    k = _groups(d, groups)
    z = X.reshape(*X.shape[:-1], groups, k)
    if centre:
        z = z - z.mean(-1, keepdims=True)
    rho2 = (z * z).sum(-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = _group_term(rho2, k, k - 1 if centre else k, eps)
    return terms.sum(-1)


def hessian_ratio(x: Sequence[Any], groups: int, eps: Any = 0, centre: bool = True) -> fmpq:
    """``H(LN-G; x) / H(LN; x)`` exactly (LN: centred, over all ``d`` features, same ``eps``)."""
    den = ln_hessian(x, 1, eps, True)
    if den == 0:
        raise ValueError("H(LN; x) = 0 (d = 2, or x constant): the ratio is undefined")
    return ln_hessian(x, groups, eps, centre) / den


def ratio_lower_bound(d: int, groups: int) -> fmpq:
    """``g (d - 2 g) / (d - 2)``: the sharp lower bound of the ratio (``eps = 0``, ``k >= 3``)."""
    k = _groups(d, groups)
    if k < 3:
        raise ValueError("groups of size < 3: the bound needs d/g >= 3")
    return fmpq(groups * (d - 2 * groups), d - 2)


def hessian_measure_exact(f: Callable[[list[Any]], Sequence[Any]], x: Sequence[Any]) -> Any:
    """``H(f; x)`` exactly with SymPy: ``f`` maps a list of symbols to a list of expressions.

    ``x`` is read exactly (rationals).  Feasible for small ``d`` (say ``<= 8``).
    """
    import sympy as sp

    point = [sp.Rational(int(q.p), int(q.q)) for q in (exact(v) for v in x)]
    d = len(point)
    xs = sp.symbols(f"x1:{d + 1}", real=True)
    subs = dict(zip(xs, point, strict=True))
    total = sp.Integer(0)
    for yi in f(list(xs)):
        first = [sp.diff(yi, v) for v in xs]
        for j in range(d):
            for k in range(j, d):
                h = sp.diff(first[j], xs[k]).subs(subs)
                total += (1 if j == k else 2) * sp.expand(h * h)
    return sp.nsimplify(sp.radsimp(total)) if not total.is_Rational else total


def hessian_measure(f: Callable[[Any], Any], x: Any, chunk: int | None = None) -> float:
    """``H(f; x)`` in float64 by automatic differentiation (PyTorch; no finite differences).

    ``f`` maps a 1-D tensor of size ``d`` to a 1-D tensor.  Computes
    ``sum_j ||d J / d x_j||_F^2`` (``J`` the Jacobian, one forward-mode
    derivative of the reverse-mode Jacobian per direction ``e_j``, ``chunk``
    directions at a time), which equals ``sum_i ||Hess y_i||_F^2``.
    """
    import torch
    from torch.func import jacrev, jvp, vmap

    xt = torch.as_tensor(np.asarray(x, dtype=np.float64))
    d = xt.numel()
    jac = jacrev(f)

    def directional(v: torch.Tensor) -> torch.Tensor:
        return jvp(jac, (xt,), (v,))[1]

    if chunk is None:
        chunk = max(1, min(d, (1 << 22) // max(1, d * d)))
    eye = torch.eye(d, dtype=torch.float64)
    total = 0.0
    with warnings.catch_warnings():  # forward mode loads decompositions through torch.jit.script
        warnings.filterwarnings("ignore", "`torch.jit.script` is deprecated", DeprecationWarning)
        for start in range(0, d, chunk):
            block = vmap(directional)(eye[start : start + chunk])
            total += float((block * block).sum())
    return total


def _group_term_slope(rho2: Any, k: int, n: int, eps: Any) -> Any:
    """``d/d(rho^2)`` of ``_group_term`` (exact calculus; checked by SymPy in proofs/).

    With ``u = rho^2/k + eps``: ``dq/d rho^2 = eps / (k u^2)``, so the slope is
    ``-2 B / (k^2 u^3) + ((3n + 6) - 36 q + 27 q^2) eps / (k^2 u^4)`` where
    ``B = (3n + 6) q - 18 q^2 + 9 q^3``.
    """
    u = rho2 / k + eps
    q = rho2 / k / u
    bracket = (3 * n + 6) * q - 18 * q * q + 9 * q * q * q
    return -2 * bracket / (k * k * u**3) + ((3 * n + 6) - 36 * q + 27 * q * q) * eps / (
        k * k * u**4
    )


def minimise_ratio(
    d: int,
    groups: int,
    x0: np.ndarray,
    steps: int = 400,
    lr: float = 0.05,
    eps: float = 0.0,
    centre: bool = True,
) -> np.ndarray:
    """Adversarial input: normalised gradient descent on ``log H(LN-G; x) / H(LN; x)``.

    The gradient is exact (no finite differences): each group contributes
    ``phi(rho_G^2)`` (the closed form, module doc) with ``d rho_G^2 / dx = 2 z_G``
    (``z_G`` the centred group, or the group itself without centring), and LN
    contributes ``phi(|P x|^2)`` with ``d |P x|^2 / dx = 2 P x``.  Steps are a
    fraction ``lr`` of ``|x|``; with ``eps = 0`` the ratio is scale invariant and
    the iterate is kept on the unit sphere, with ``eps > 0`` the scale is searched
    too (this is how the search finds the counterexamples beyond the
    proposition's assumption).  Returns the final point (float64).
    """
    k = _groups(d, groups)
    n = k - 1 if centre else k
    x = np.array(x0, dtype=np.float64)
    for _ in range(steps):
        z = x.reshape(groups, k)
        zc = z - z.mean(1, keepdims=True) if centre else z
        rho2 = (zc * zc).sum(1)
        px = x - x.mean()
        R2 = px @ px
        with np.errstate(all="ignore"):
            num = _group_term(rho2, k, n, eps).sum()
            dnum = (2 * _group_term_slope(rho2, k, n, eps)[:, None] * zc).reshape(-1)
            den = _group_term(R2, d, d - 1, eps)
            dden = 2 * _group_term_slope(R2, d, d - 1, eps) * px
            grad = dnum / num - dden / den
        norm = np.linalg.norm(grad)
        if not np.isfinite(norm) or norm == 0:
            break
        x = x - lr * grad / norm * np.linalg.norm(x)
        if eps == 0:
            x = x / np.linalg.norm(x)
    return x


def sample_input(
    kind: str,
    d: int,
    groups: int,
    rng: np.random.Generator,
    eps: float = 0.0,
    centre: bool = True,
) -> list[fmpq]:
    """A seeded test input for the proposition, as exact rationals (the floats' dyadic values).

    ``gaussian``: i.i.d. standard normal.  ``sparse``: normal entries kept with
    probability 0.3, at least one per group (so no group is constant, the
    proposition's assumption; a group with a single nonzero entry is the most
    lopsided one).  ``adversarial``: a Gaussian start moved by
    :func:`minimise_ratio` towards the smallest ratio (for the given ``eps``
    and centring; with ``eps > 0`` from a start of size ``sqrt(eps)/100``,
    where the search finds the counterexamples of the module doc).
    """
    k = _groups(d, groups)
    x = rng.standard_normal(d)
    if kind == "sparse":
        mask = rng.random(d) < 0.3
        for G in range(groups):
            if not mask[G * k : (G + 1) * k].any():
                mask[G * k + rng.integers(k)] = True
        x = x * mask
    elif kind == "adversarial":
        if eps > 0:  # start where eps matters: entries about sqrt(eps) / 100
            x = x * (0.01 * float(eps) ** 0.5)
        x = minimise_ratio(d, groups, x, steps=300, eps=float(eps), centre=centre)
    elif kind != "gaussian":
        raise ValueError(f"unknown kind {kind!r} (one of {', '.join(KINDS)})")
    return [exact(float(v)) for v in x]


def eps_counterexample(d: int, groups: int, spread: Any = "1e-12") -> list[fmpq]:
    """An input at which, with ``eps > 0`` (e.g. PyTorch's ``1e-5``), the ratio is far below 1.

    Group ``G`` (from 0) is ``G / g`` plus offsets ``spread * (j - (k-1)//2)``: each
    group's variance is far below ``eps``, where a group's contribution
    ``(r^4/k)((3n+6) q - ...)`` vanishes like ``q ~ rho^2 / (k eps)``, while LN
    sees the large spread between the group means.  (At ``spread = 0`` LN-G is
    flat there, ``H = 0``.)  Exact rationals.
    """
    k = _groups(d, groups)
    s = exact(spread)
    return [fmpq(G, groups) + s * (j - (k - 1) // 2) for G in range(groups) for j in range(k)]
