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
# # LayerNorm is a nonlinearity
#
# A network of affine maps is affine, however deep: it can only cut the input space with
# hyperplanes. Ni, Guo, Jia and Huang ("On the Nonlinearity of Layer Normalization", ICML
# 2024) show that **LayerNorm alone** is enough nonlinearity: networks that alternate affine
# maps and LayerNorm, with no other activation (*LN-Nets*), classify any labelled points.
# This notebook looks at LayerNorm as a geometric map, sees it bend a line, contrasts it
# with normalisations that are affine, and solves XOR with one LayerNorm layer.
#
# You need linear algebra only. Every claim is checked at the end, exactly.

# %%
# %matplotlib inline
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import sympy as sp
from flint import fmpq

import lncapacity
from lncapacity import plot
from lncapacity.affine import affine_separation, is_witness
from lncapacity.arith import parse_rational

ROOT = Path.cwd() if (Path.cwd() / "examples").is_dir() else Path.cwd().parent

# %% [markdown]
# ## 1. What LayerNorm computes
#
# For a vector $y \in \mathbb{R}^n$ (no learned scale or shift: those fold into the next
# affine map),
#
# $$\mathrm{LN}(y) = \frac{y - \bar y\,\mathbf 1}{\sqrt{\operatorname{var}(y) + \varepsilon}},
# \qquad \operatorname{var}(y) = \tfrac1n \lVert y - \bar y\,\mathbf 1\rVert^2 .$$
#
# With $\varepsilon = 0$ this is two steps ([Brody, Alon and Yahav, *On the Expressivity
# Role of LayerNorm in Transformers' Attention*, 2023](https://arxiv.org/abs/2305.02582);
# [Riechers, *Geometry and Dynamics of LayerNorm*, 2024](https://arxiv.org/abs/2405.04134)):
#
# 1. **project** onto the hyperplane $\mathbf 1^\perp$: $P y = y - \bar y\,\mathbf 1$;
# 2. **scale** to length $\sqrt n$: $\mathrm{LN}(y) = \sqrt n\, P y / \lVert P y\rVert$.
#
# So for $n = 3$ every output lies on a **circle** of radius $\sqrt 3$ in the plane
# orthogonal to $(1, 1, 1)$. Let us check it symbolically.

# %%
y1, y2, y3 = sp.symbols("y1 y2 y3", real=True)
y = sp.Matrix([y1, y2, y3])
mean = sum(y) / 3
centred = y - mean * sp.ones(3, 1)
var = (centred.T * centred)[0] / 3
LN = centred / sp.sqrt(var)
print("LN(y) . (1,1,1) =", sp.simplify(sum(LN)))
print("|LN(y)|^2       =", sp.simplify((LN.T * LN)[0]))

# %% [markdown]
# Two orthogonal directions span that plane: $u = (1, -1, 0)$ and $v = (1, 1, -2)$. We will
# draw every width-3 LayerNorm output by its coordinates $h\cdot u/|u|$ and $h\cdot v/|v|$.
#
# ## 2. Why it is not affine
#
# An affine map $f$ keeps midpoints: $f(\tfrac{a+b}2) = \tfrac{f(a)+f(b)}2$. LayerNorm does
# not, and it forgets scale: $\mathrm{LN}(2y) = \mathrm{LN}(y)$, while an affine map with
# $f(2y) = f(y)$ for all $y$ is constant.


# %%
def ln_exact(v):
    v = sp.Matrix(v)
    c = v - (sum(v) / len(v)) * sp.ones(len(v), 1)
    return c / sp.sqrt((c.T * c)[0] / len(v))


a, b = sp.Matrix([1, 0, 0]), sp.Matrix([0, 0, 3])
midpoint_gap = sp.simplify(ln_exact((a + b) / 2) - (ln_exact(a) + ln_exact(b)) / 2)
print("LN(mid) - mid(LN) =", list(midpoint_gap))
print("LN(2a) - LN(a)    =", list(sp.simplify(ln_exact(2 * a) - ln_exact(a))))

# %% [markdown]
# ## 3. Stretch and fold: LayerNorm as a 1-D activation
#
# The Projection Merge Algorithm feeds LayerNorm a line through the plane: for a scalar $p$,
# a centre $c$ and an offset $\beta > 0$, the affine map gives $y = (p - c)\,u + \beta\,v$.
# Then $\bar y = 0$, $\operatorname{var}(y) = (2(p-c)^2 + 6\beta^2)/3$, and reading the
# output with $v$ gives
#
# $$p' = v\cdot \mathrm{LN}(y) = \frac{6\beta}{\sqrt{(2(p-c)^2 + 6\beta^2)/3 + \varepsilon}}.$$
#
# It depends on $p$ only through $(p - c)^2$: the line is **folded** at $c$, and values at
# equal distance from $c$ land on the same value (proofs/fold_lemma.md; the "fold" of
# [Winsor, *Re-Examining LayerNorm*, Conjecture,
# 2022](https://www.lesswrong.com/posts/jfG6vdJZCwTQmG7kb/re-examining-layernorm)). Reading
# with $v + \gamma u$ instead tilts the bump: the fold point moves, which
# is what the `runs` construction uses (proofs/runs_fold.md). Small $\beta$ gives a sharp
# fold, large $\beta$ an almost flat, almost linear piece (the "stretch").

# %%
p = np.linspace(-4, 4, 801)


def fold_read(p, c=0.0, beta=1.0, gamma=0.0, eps=0.0):
    y = np.outer(p - c, [1, -1, 0]) + beta * np.array([1, 1, -2])
    y = y - y.mean(axis=1, keepdims=True)
    h = y / np.sqrt((y * y).mean(axis=1, keepdims=True) + eps)
    return h @ (np.array([1, 1, -2]) + gamma * np.array([1, -1, 0]))


fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), layout="constrained")
for beta in (0.25, 0.5, 1.0, 2.0):
    axes[0].plot(p, fold_read(p, beta=beta), label=rf"$\beta = {beta}$")
axes[0].set(title=r"fold read ($\gamma = 0$): symmetric about $c = 0$", xlabel="$p$", ylabel="$p'$")
for gamma in (0.0, 1.0, 3.0):
    axes[1].plot(p, fold_read(p, gamma=gamma), label=rf"$\gamma = {gamma}$")
axes[1].set(
    title=r"tilted read $v + \gamma u$ ($\beta = 1$): the fold point moves",
    xlabel="$p$",
    ylabel="$p'$",
)
for ax in axes:
    ax.axvline(0, color="0.5", linestyle="--", linewidth=1)
    ax.legend()
plt.show()

# %% [markdown]
# The same fold, seen in the plane. In the coordinates $(h\cdot u/|u|,\ h\cdot v/|v|)$
# the affine map puts the points on the horizontal line at height $\beta |v|$, at
# $(p - c)|u|$ along it. With $\varepsilon = 0$, LayerNorm is the **radial projection**
# onto the circle of radius $\sqrt 3$: the line wraps onto the upper half circle, the
# point at $c$ goes to the top, and points at equal distance from $c$ land at equal
# heights, mirror images of each other. Reading with $v$ measures the height: that is the
# fold. (With $\varepsilon > 0$ the image is pulled inside the circle, towards the
# origin, most where the line is nearest: Winsor's $x / \sqrt{|x|^2 + \varepsilon}$.)

# %%
c, beta = 0.0, 0.5
pts = np.array([-3.0, -1.5, -0.6, 0.0, 0.6, 1.5, 3.0])
line = np.stack([(pts - c) * np.sqrt(2), np.full_like(pts, beta * np.sqrt(6))], axis=1)
circle = np.sqrt(3) * line / np.linalg.norm(line, axis=1, keepdims=True)
fig, ax = plt.subplots(figsize=(7.5, 5), layout="constrained")
t = np.linspace(0, 2 * np.pi, 400)
ax.plot(np.sqrt(3) * np.cos(t), np.sqrt(3) * np.sin(t), color="0.6", linewidth=1)
ax.axhline(beta * np.sqrt(6), color="0.3", linewidth=1)
colours = plt.cm.viridis(np.abs(pts) / np.abs(pts).max())
for (x0, y0), (x1, y1), col, q in zip(line, circle, colours, pts, strict=True):
    ax.plot([0, x0], [0, y0], color=col, linestyle=":", linewidth=1)
    ax.scatter([x0], [y0], color=col, s=40, zorder=3)
    ax.scatter([x1], [y1], color=col, s=40, marker="s", zorder=3)
    ax.annotate(
        f"p = {q:g}", (x0, y0), textcoords="offset points", xytext=(3, -15), ha="left", fontsize=9
    )
ax.set(
    xlim=(-4.7, 5.1),
    ylim=(-2, 2.6),
    aspect="equal",
    xlabel=r"$h \cdot u/|u|$",
    ylabel=r"$h \cdot v/|v|$",
    title=r"LayerNorm ($\varepsilon = 0$): the line (dots) wraps onto the circle (squares)",
)
plt.show()

# %% [markdown]
# ## 4. Normalisations that are affine
#
# [*Batch normalization or just z-normalization as a nonlinearity?*, a question on Cross
# Validated, 2019](https://stats.stackexchange.com/questions/427521/) asks whether BatchNorm
# or z-scoring could replace an activation. At inference,
# BatchNorm (and z-scoring with statistics fixed in advance) computes $(x - \mu)/\sigma$ with
# **fixed** $\mu, \sigma$: that is $x/\sigma - \mu/\sigma$, affine, and keeps midpoints.
# LayerNorm takes its statistics from the sample itself, so they change with the input:
# that is where the nonlinearity comes from.

# %%
mu, sigma = sp.Rational(1, 3), sp.Rational(5, 2)


def zscore_fixed(v):  # BatchNorm at inference, per feature, statistics frozen
    return (sp.Matrix(v) - mu * sp.ones(len(v), 1)) / sigma


print(
    "fixed z-score: f(mid) - mid(f) =",
    list(sp.simplify(zscore_fixed((a + b) / 2) - (zscore_fixed(a) + zscore_fixed(b)) / 2)),
)

# %% [markdown]
# ## 5. XOR with one LayerNorm layer, by hand
#
# No affine classifier separates XOR: `affine_separation` returns an exact *Farkas
# witness*, weights $\lambda \ge 0$ on the points that average the two classes to the same
# point. One LayerNorm layer is enough
# ([Ni, Guo, Jia and Huang, *On the Nonlinearity of Layer Normalization*, ICML
# 2024](https://arxiv.org/abs/2406.01255)), and the paper's hint says how: a scaling is a
# LayerNorm plus a linear map, so a LayerNorm can **fold** a line. Build the net by hand:
#
# 1. **project**: $p = x_1 + x_2$ sends the four corners to $0, 1, 1, 2$, and the labels
#    along the line read $0, 1, 1, 0$: one run of 1s with a 0 on either side;
# 2. **fold at $c = 1$**: the first layer writes $y = (p - 1)(1, -1, 0) + \beta (1, 1, -2)$
#    ($\beta = 1$), so $W_1 = \begin{pmatrix} 1 & 1 \\ -1 & -1 \\ 0 & 0 \end{pmatrix}$,
#    $b_1 = (-1, 1, 0) + (1, 1, -2) = (0, 2, -2)$; reading $\mathrm{LN}(y)$ with
#    $v = (1, 1, -2)$ gives $s = 6 / \sqrt{(2 (p - 1)^2 + 6) / 3}$ (section 3), a function of
#    $(p - 1)^2$: $p = 0$ and $p = 2$ land on **the same** value;
# 3. **read out**: $s = 3\sqrt 2 \approx 4.24$ for the 1s, $3\sqrt 6 / 2 \approx 3.67$ for
#    the 0s; the threshold $\tau = 4$ between them gives $z_1 - z_0 = v \cdot h - 4$.

# %%
X = [[0, 0], [0, 1], [1, 0], [1, 1]]
y = [0, 1, 1, 0]
verdict = affine_separation(X, y)
print("affine classifier exists:", verdict.separable, "| witness:", verdict.witness)

q = fmpq
by_hand = lncapacity.LNNet(
    input_dim=2,
    width=3,
    eps=q(0),
    layers=(
        lncapacity.model.Affine(((q(1), q(1)), (q(-1), q(-1)), (q(0), q(0))), (q(0), q(2), q(-2))),
    ),
    readout=lncapacity.model.Affine(((q(0), q(0), q(0)), (q(1), q(1), q(-2))), (q(0), q(-4))),
    classes=(0, 1),
)
s_exact = []
for x in X:  # the value the readout reads, exactly (SymPy)
    h = lncapacity.model.layer_norm(
        [sp.Integer(int(t)) for t in by_hand.layers[0]([q(v) for v in x])], 0, sp.sqrt
    )
    s_exact.append(sp.nsimplify(sp.simplify(h[0] + h[1] - 2 * h[2])))
for x, label, s_x in zip(X, y, s_exact, strict=True):
    print(f"x = {x}: p = {sum(x)}, label {label}, s = {s_x} = {float(s_x):.4f}")
cert_hand = lncapacity.certify(by_hand, X, y)
print(f"by hand: certified {cert_hand.certified}/4, min margin {cert_hand.min_margin:.4f}")

# %% [markdown]
# Now the same with `lncapacity.build`: it finds a projection of its own (not $x_1 + x_2$:
# `runs` picks a direction on which every point differs, so the corners need not pair up),
# folds once, and scales its fold so that the margin is larger. One layer either way.

# %%
net = lncapacity.build(X, y)
cert = lncapacity.certify(net, X, y)
print(
    f"build: depth {net.depth}, projection {net.meta['projection']}, "
    f"centre {float(parse_rational(net.layers[0].meta['centre'])):.4f}"
)
print(f"build: certified {cert.certified}/4, min margin {cert.min_margin:.4f}")
plot.regions(net, X, y, certificate=cert, resolution=200)

# %%
plot.regions(by_hand, X, y, certificate=cert_hand, resolution=200)

# %% [markdown]
# After its one layer the four points sit on the circle, and the readout (an affine map of
# the circle's plane) gives each class an **arc**: the readout's threshold is a chord, and
# on the circle a chord cuts off an arc. By hand, the two 1s land on one point and the two
# 0s on another: the fold put mirror images together.

# %%
plot.circles(by_hand, X, y)

# %%
plot.circles(net, X, y)

# %% [markdown]
# ## Self-checks
#
# Exact statements only: a broken notebook must fail here rather than print nonsense.

# %%
assert sp.simplify(sum(LN)) == 0  # LN(y) lies in 1-perp
assert sp.simplify((LN.T * LN)[0]) == 3  # ... on the sphere of radius sqrt(3)
assert any(sp.simplify(e) != 0 for e in midpoint_gap)  # LN is not affine
assert list(sp.simplify(ln_exact(2 * a) - ln_exact(a))) == [0, 0, 0]  # scale invariance
frozen_gap = zscore_fixed((a + b) / 2) - (zscore_fixed(a) + zscore_fixed(b)) / 2
assert list(sp.simplify(frozen_gap)) == [0, 0, 0]  # frozen statistics: affine
assert not verdict.separable
lam = verdict.witness
assert is_witness(X, y, lam) and all(v >= 0 for v in lam) and sum(lam) == 1  # Farkas
for j in range(2):  # both classes' lambda-averages are the same point
    by_class = [
        sum(w * fmpq(x[j]) for w, x, c in zip(lam, X, y, strict=True) if c == label)
        for label in (0, 1)
    ]
    assert by_class[0] == by_class[1]
assert net.depth == 1 and cert.all_certified and cert.min_margin > 0
# by hand: p = 0 and p = 2 fold onto one value, p = 1 onto another, tau = 4 between them
assert s_exact[0] == s_exact[3] == sp.Rational(3, 2) * sp.sqrt(6)
assert s_exact[1] == s_exact[2] == 3 * sp.sqrt(2)
assert 3 * sp.sqrt(6) / 2 < 4 < 3 * sp.sqrt(2)
assert by_hand.depth == 1 and cert_hand.all_certified and cert_hand.min_margin > 0
print("all self-checks passed")
