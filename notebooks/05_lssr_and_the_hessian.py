# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Measuring nonlinearity: LSSR, and the Hessian of LN-G
#
# [Ni, Guo, Jia and Huang, *On the Nonlinearity of Layer Normalization*, ICML
# 2024](https://arxiv.org/abs/2406.01255) measure LayerNorm's nonlinearity in two ways
# besides the capacity theorem of notebook 02:
#
# 1. **LSSR**, the *linear sum-of-squares ratio*: how well the classes can be pulled
#    apart by a linear map. No linear or affine map lowers it, so a certified drop after a
#    layer proves the layer is not affine;
# 2. the **Hessian measure** $H(f; x) = \sum_i \lVert \partial^2 y_i / \partial x^2
#    \rVert_F^2$ (zero exactly for affine $f$), and the proposition that normalising in
#    $g$ groups (LN-G) is *more* nonlinear than LayerNorm over all features.
#
# `lncapacity.theory` computes both exactly or with certified bounds
# (proofs/lssr.md, proofs/ln_g_hessian.md). The proposition holds under precise assumptions
# (stated in proofs/ln_g_hessian.md); this notebook shows it where they hold and the
# counterexamples where they fail.

# %%
# %matplotlib inline
import itertools

import matplotlib.pyplot as plt
import numpy as np
import sympy as sp
from flint import fmpq

import lncapacity
from lncapacity.theory import (
    hessian_measure_exact,
    hessian_ratio,
    layer_norm_groups,
    ln_hessian,
    lssr,
    ratio_lower_bound,
    ssr,
    trace,
)
from lncapacity.theory.hessian import eps_counterexample, sample_input
from lncapacity.theory.reals import compare

# %% [markdown]
# ## 1. SSR and LSSR
#
# For labelled points, $S_w$ is the within-class scatter (each point minus its class
# mean) and $S_t$ the total scatter (each point minus the overall mean). **SSR** is
# $\operatorname{tr} S_w / \operatorname{tr} S_t$: 0 when every class is a single point, 1
# when every class has the same mean. **LSSR** is the smallest SSR that any linear map $A$
# reaches, $\min_A \operatorname{tr}(A S_w A^T) / \operatorname{tr}(A S_t A^T)$: the
# smallest eigenvalue of the pencil $(S_w, S_t)$. Composing with a linear map only
# restricts the $A$ to choose from, so **no linear (or affine) map lowers LSSR**.
#
# On XOR every class has the mean $(1/2, 1/2)$: SSR and LSSR are 1, and stay 1 after any
# invertible linear map (exact rationals).

# %%
X = [[0, 0], [1, 1], [0, 1], [1, 0]]
y = [0, 0, 1, 1]
print("XOR: SSR =", ssr(X, y), " LSSR =", lssr(X, y))
A = [[3, -1], [2, 5]]  # any invertible linear map
AX = [[sum(a * x for a, x in zip(row, p, strict=True)) for row in A] for p in X]
print("after x -> A x:", AX, " LSSR =", lssr(AX, y))

# %% [markdown]
# One LayerNorm layer: `lncapacity.trace` follows SSR and LSSR through a net, with
# certified bounds after each layer (the square roots make them irrational). XOR's LSSR
# drops from 1 to about 0.011 after the one layer of `build`'s net: a certified drop, so
# that layer is not affine.

# %%
net = lncapacity.build(X, y)
stats = trace(net, X, y)
for s in stats:
    print(f"{s.name:<8} dim {s.dim}: SSR {float(s.ssr):.6f}  LSSR {float(s.lssr):.6f}")

# %% [markdown]
# The same for the paper's net on 8 alternating points on a line (depth 6). LSSR is
# **not** a progress bar: a nonlinear layer can raise it as well as lower it (layers 2 and
# 3 do, certified), and it stays near $20/21$ while the folds merge values one by one: the
# two labels keep almost the same mean. Only at the last layer, when the labels are two
# runs far apart, does it collapse (to about $3 \cdot 10^{-7}$). What no *affine* layer can
# do is lower it at all.

# %%
X8, y8 = [[k] for k in range(8)], [k % 2 for k in range(8)]
net8 = lncapacity.build(X8, y8, method="pma")
stats8 = trace(net8, X8, y8)
fig, ax = plt.subplots(figsize=(8, 4), layout="constrained")
ax.plot(range(len(stats8)), [float(s.lssr) for s in stats8], marker="o", label="LSSR")
ax.plot(range(len(stats8)), [float(s.ssr) for s in stats8], marker="s", label="SSR")
ax.set_xticks(range(len(stats8)), [s.name for s in stats8])
ax.set(
    xlabel="stage",
    ylabel="ratio",
    title="8 alternating points through the paper's net (certified, bounds < 1e-9 wide)",
)
ax.legend()
plt.show()

# %% [markdown]
# ## 2. The Hessian measure of LayerNorm, exactly
#
# For LayerNorm over $d$ features ($\varepsilon = 0$) the measure has a closed form
# (proofs/ln_g_hessian.md, Lemma 1): $H(\mathrm{LN}; x) = 3 d (d - 2) / \lVert P x
# \rVert^4$, $P$ the centring projection. Here it is against SymPy's Hessians, symbol by
# symbol, at $x = (1, 2, 4)$:

# %%
x0 = [1, 2, 4]
closed = ln_hessian(x0)
symbolic = hessian_measure_exact(lambda v: layer_norm_groups(v, 1), [sp.Integer(t) for t in x0])
print("closed form:", closed, "| SymPy:", sp.nsimplify(symbolic))

# %% [markdown]
# ## 3. LN-G is more nonlinear: the proposition, where it holds
#
# LN-G splits the $d$ features into $g$ contiguous groups of $k = d/g$ and normalises each.
# Ni et al. (2024): for $g \le d/3$ the ratio $H(\text{LN-G}) / H(\text{LN}) \ge 1$, and $\ge d/8$
# at $g = d/4$. Precisely (proofs/ln_g_hessian.md): if $\varepsilon = 0$, $g$ divides $d$,
# each group has $k \ge 3$ features and none is constant, then for **every** input
#
# $$\frac{H(\text{LN-G}; x)}{H(\text{LN}; x)} \ge \frac{g (d - 2g)}{d - 2},$$
#
# with equality when all groups have the same spread and mean. Below, $d = 24$: the exact
# ratio at 30 seeded inputs per $g$ (Gaussian, sparse, and spread-matched ones, the last
# near the bound), never below it.

# %%
d = 24
rng = np.random.default_rng(0)
found = {}
for g in (1, 2, 3, 4, 6, 8):
    ratios = []
    for kind in ("gaussian", "sparse", "equal"):
        for _ in range(10):
            if kind == "equal":  # the same spread in every group, the same mean: the bound
                block = rng.normal(size=d // g)
                x = [fmpq(round(v * 2**20), 2**20) for v in np.tile(block, g)]
                x = [t + fmpq(int(rng.integers(-3, 4)), 2**30) for t in x]  # a hair apart
            else:
                x = sample_input(kind, d, g, rng)
            ratios.append(hessian_ratio(x, g))
    found[g] = ratios
    print(
        f"g = {g}: bound {float(ratio_lower_bound(d, g)):.4f}, "
        f"smallest ratio found {float(min(ratios)):.4f}"
    )

fig, ax = plt.subplots(figsize=(8, 4.5), layout="constrained")
for g, ratios in found.items():
    ax.scatter([g] * len(ratios), [float(r) for r in ratios], s=14, color="#0072B2", alpha=0.6)
gs = np.linspace(1, 8, 200)  # the bound's formula, for every g
ax.plot(gs, gs * (d - 2 * gs) / (d - 2), color="black", label="bound")
ax.axhline(1, color="0.5", linestyle=":", linewidth=1)
ax.axvline(d / 3, color="#D55E00", linestyle="--", linewidth=1, label="$g = d/3$")
ax.set_yscale("log")
ax.set(
    xlabel="groups $g$ ($d = 24$)",
    ylabel=r"$H(\mathrm{LN\text{-}G}) / H(\mathrm{LN})$",
    title="Exact ratios at seeded inputs (dots) and the bound $g (d - 2g)/(d - 2)$",
)
ax.legend()
plt.show()

# %% [markdown]
# ## 4. Where it fails
#
# Each assumption is needed; the counterexamples are exact.
#
# * **$\varepsilon > 0$** (PyTorch's default is $10^{-5}$): a group whose variance is far
#   below $\varepsilon$ is almost linear, while LayerNorm over all features still sees the
#   spread between the groups. `eps_counterexample` puts the groups at $0, 1/g, 2/g, \dots$
#   with spreads of $10^{-12}$;
# * **groups of two** ($g = d/2$): LayerNorm of two numbers is $\pm(1, -1)$, locally
#   constant, so $H(\text{LN-G}) = 0$;
# * **LN-G without centring** (RMS per group) against LN: near $x = \mathbf 1$, $P x$ is
#   tiny and $H(\mathrm{LN})$ huge, while each group's root mean square stays near 1.

# %%
d, g = 12, 3
x_eps = eps_counterexample(d, g)
r_eps = hessian_ratio(x_eps, g, eps=fmpq(1, 10**5))
x_pairs = [fmpq(v) for v in (1, 3, 2, 7, 5, 4, 9, 6, 8, 11, 10, 12)]
r_pairs = hessian_ratio(x_pairs, d // 2)
x_flat = [1 + fmpq(j, 10**6) for j in range(d)]
r_flat = hessian_ratio(x_flat, g, centre=False)
print(f"eps = 1e-5, d = {d}, g = {g}:      ratio {float(r_eps):.3g}  (bound at eps = 0: 1.5)")
print(f"groups of two, g = {d // 2}:         ratio {r_pairs}")
print(f"uncentred LN-G near 1, g = {g}:   ratio {float(r_flat):.3g}")
print(f"the same inputs at eps = 0, centred: {float(hessian_ratio(x_eps, g)):.4g}, ", end="")
print(f"{float(hessian_ratio(x_flat, g)):.4g} (both >= {float(ratio_lower_bound(d, g))})")

# %% [markdown]
# ## Self-checks

# %%
assert lssr(X, y) == lssr(AX, y) and lssr(X, y).rational == 1  # linear maps: no change
first, after = stats[0], stats[1]
assert first.lssr.rational == 1
assert float(after.lssr) < 0.02  # certified bounds: the layer lowered LSSR, so not affine
moves = [compare(b.lssr, a.lssr) for a, b in itertools.pairwise(stats8[:-1])]
assert moves == [-1, 1, 1, -1, -1, -1]  # certified: down, up, up, down, down, down
assert stats8[0].lssr.rational == fmpq(20, 21) and float(stats8[-2].lssr) < 1e-6
assert sp.nsimplify(symbolic) == sp.Rational(int(closed.p), int(closed.q))
assert closed == fmpq(3 * 3 * 1, 1) / fmpq(14, 3) ** 2  # 3 d (d - 2) / |P x|^4, |P x|^2 = 14/3
for g, ratios in found.items():
    assert min(ratios) >= ratio_lower_bound(24, g)  # exact comparison of rationals
    if g <= 8:  # g <= d/3: the first claim of Ni et al.
        assert min(ratios) >= 1
assert ratio_lower_bound(24, 6) > fmpq(24, 8)  # g = d/4: more than d/8
assert r_eps < fmpq(1, 10**9)  # eps > 0: far below the bound
assert r_pairs == 0  # groups of two: LN-G is locally constant
assert r_flat < fmpq(1, 10**6)  # uncentred: unbounded below
assert hessian_ratio(x_eps, 3) >= ratio_lower_bound(12, 3)  # same input, eps = 0: holds
print("all self-checks passed")
