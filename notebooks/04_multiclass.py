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
# # Three or more classes: confusion, and breaking parallelization
#
# With two labels a fold can only do good: the two values that meet have one label, and
# whatever lands on top of what is of that label or the other, never a third. With three
# or more labels a fold can **confuse** labels.
# [Ni, Guo, Jia and Huang, *On the Nonlinearity of Layer Normalization*, ICML
# 2024](https://arxiv.org/abs/2406.01255) name the difficulty (*confusion* is possible)
# and the cure (*breaking parallelization*) for several classes.
# This notebook shows what that means and how `lncapacity` does it
# (proofs/multiclass.md):
#
# 1. a fold maps values at equal distance from its centre to the same value (the fold
#    lemma): mirror images about the centre are *parallel* and collide;
# 2. if two mirror images have different labels, the paper's fold would merge them:
#    `pma` first inserts an injective, non-affine **warp** layer that moves them apart;
# 3. the construction stops when every class is one run along the line and reads out
#    with an **upper envelope** of $k$ lines (slopes $1, \dots, k$), which cuts the last
#    LayerNorm circle into class arcs;
# 4. the default `runs` method joins whole label runs and needs no warp here;
# 5. both methods certify the iris data (three classes, 150 flowers).

# %%
# %matplotlib inline
import matplotlib.pyplot as plt
import numpy as np
import sympy as sp
from sklearn.datasets import load_iris

import lncapacity
from lncapacity import floats, plot
from lncapacity.arith import parse_rational
from lncapacity.explain import explain, float_trace, reads

# %% [markdown]
# ## 1. The trap: `A B C A` at 0, 1, 3, 4
#
# Four points on a line. The paper's algorithm folds the smallest value ($A$ at 0) onto
# the next value of its class ($A$ at 4): the centre is their midpoint $c = 2$. But $B$
# at 1 and $C$ at 3 are mirror images about 2. A fold is a function of $(p - c)^2$
# (proofs/fold_lemma.md: the gadget sends $p$ to
# $6 S\beta / \sqrt{S^2 (2 (p - c)^2 + 6 \beta^2)/3 + \varepsilon}$), so it sends $B$
# and $C$ to **the same value**: no readout can tell them apart afterwards.

# %%
X = [[0], [1], [3], [4]]
y = ["A", "B", "C", "A"]
p, c, S, beta = sp.symbols("p c S beta", positive=True)
fold = 6 * S * beta / sp.sqrt(S**2 * (2 * (p - c) ** 2 + 6 * beta**2) / 3)
print("after the naive fold at c = 2 (S = beta = 1):")
for (x,), label in zip(X, y, strict=True):
    print(f"  {label} at {x}: {sp.nsimplify(fold.subs({p: x, c: 2, S: 1, beta: 1}))}")
naive_b = fold.subs({p: 1, c: 2, S: 1, beta: 1})
naive_c = fold.subs({p: 3, c: 2, S: 1, beta: 1})
print("B and C collide:", sp.simplify(naive_b - naive_c) == 0)

# %% [markdown]
# The same as a picture. Left: the naive fold's map, value in against value out: $B$ and
# $C$ sit at equal distances from the centre, so they come out at the same height (the
# dashed line), and so do the two $A$s (which is the point of the fold). Right: the same
# layer on LayerNorm's circle, where the fold reads the height $v \cdot h$: $B$ and $C$
# land on mirror images about the vertical axis, on one horizontal chord, and no readout
# that reads the height can tell them apart.


# %%
def naive_layer(p, c=2.0, beta=1.0):
    """The naive fold's LayerNorm output for values p: y = (p - c)(1, -1, 0) + beta (1, 1, -2)."""
    yv = np.outer(np.asarray(p, dtype=float) - c, [1, -1, 0]) + beta * np.array([1, 1, -2])
    yv -= yv.mean(axis=1, keepdims=True)
    return yv / np.sqrt((yv * yv).mean(axis=1, keepdims=True))


u_hat, v_hat = np.array([1, -1, 0]) / np.sqrt(2), np.array([1, 1, -2]) / np.sqrt(6)
grid_p = np.linspace(-1, 5, 400)
xs = [x for (x,) in X]
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.8), layout="constrained")
ax1.plot(grid_p, naive_layer(grid_p) @ np.array([1, 1, -2]), color="0.45", label="the fold's map")
ax1.axvline(2, color="black", linestyle="--", linewidth=1, label="centre $c = 2$")
t = np.linspace(0, 2 * np.pi, 400)
ax2.plot(np.sqrt(3) * np.cos(t), np.sqrt(3) * np.sin(t), color="0.7", linewidth=1)
h_pts = naive_layer(xs)
for name, i in (("A", 0), ("B", 1), ("C", 2)):
    colour, marker = plot.class_style(i, 3)
    mine = [k for k, label in enumerate(y) if label == name]
    ax1.scatter(
        [xs[k] for k in mine],
        h_pts[mine] @ np.array([1, 1, -2]),
        s=90,
        color=colour,
        marker=marker,
        edgecolors="black",
        zorder=3,
        label=name,
    )
    ax2.scatter(
        h_pts[mine] @ u_hat, h_pts[mine] @ v_hat, s=90, color=colour, marker=marker, zorder=3
    )
level = float(naive_layer([1])[0] @ np.array([1, 1, -2]))
ax1.axhline(level, color="#D55E00", linestyle=":", linewidth=1.5, label="B and C: one value")
chord = float(naive_layer([1])[0] @ v_hat)
half = np.sqrt(3 - chord**2)
ax2.plot([-half, half], [chord, chord], color="#D55E00", linestyle=":", linewidth=1.5)
ax2.annotate(
    "B", (float(naive_layer([1])[0] @ u_hat), chord), xytext=(-14, 6), textcoords="offset points"
)
ax2.annotate(
    "C", (float(naive_layer([3])[0] @ u_hat), chord), xytext=(6, 6), textcoords="offset points"
)
ax1.set(
    xlabel="$p$ (the value the layer reads)",
    ylabel=r"$v \cdot \mathrm{LN}(y)$",
    title="The naive fold at $c = 2$: B and C come out equal",
)
ax2.set(
    xlabel=r"$h \cdot u/|u|$",
    ylabel=r"$h \cdot v/|v|$",
    aspect="equal",
    title="On the circle: mirror images on one chord",
)
ax1.legend(loc="lower center")
plt.show()

# %% [markdown]
# ## 2. The paper's method: a warp first
#
# `method="pma"` decides in ball arithmetic, before every fold, whether two values of
# different labels would be (near) mirror images about the fold's centre. Here they are,
# so the first layer is a **warp**: a fold centred beyond one end of the values, which
# maps $p \mapsto A / \sqrt{g (p - c)^2 + k}$, strictly monotone on the values
# (injective: every label run survives) but not affine, so equal distances before it are
# unequal after it. The layer's metadata records it.

# %%
net = lncapacity.build(X, y, method="pma")
cert = lncapacity.certify(net, X, y)
for i, layer in enumerate(net.layers, 1):
    print(f"layer {i}: kind {layer.meta['kind']!r}, centre {layer.meta['centre']}")
print("why:", net.layers[0].meta["why"])
print(f"depth {net.depth}: {net.meta['folds']} layers, {net.meta['warps']} of them a warp")
print(f"certified {cert.certified}/{len(X)}, min margin {cert.min_margin:.4g}")

# %% [markdown]
# The construction numbers the classes present (`label 1` is $B$, `label 2` is $C$);
# `explain`, which reads the net back from its weights, names them. After the warp the
# midpoint of the two $A$ values is no longer equidistant from $B$ and $C$, and the fold
# that follows joins the $A$ runs without confusing anything.

# %%
account = explain(net, X, y, certificate=cert)
for entry in account["layers"]:
    print(entry["words"], end="\n\n")
print(account["readout"]["words"])

# %% [markdown]
# The warp, exactly: the values after layer 1, computed with SymPy (the model is generic
# in its number type), and their distances to the second fold's centre. $B$ and $C$ were
# at equal distance 1 from the naive centre; after the warp their distances differ.

# %%
sym = net.map(lambda q: sp.Rational(int(q.p), int(q.q)))
read = [sp.Rational(int(q.p), int(q.q)) for q in reads(net)[1].row]


def after_warp(x):
    """The scalar layer 2 reads, exactly: read . LN(W_1 x + b_1)."""
    h = lncapacity.model.layer_norm(sym.layers[0]([sp.Integer(x)]), sym.eps, sp.sqrt)
    return sp.nsimplify(sum(r * v for r, v in zip(read, h, strict=True)))


warped = {label: after_warp(x) for (x,), label in zip(X, y, strict=True) if label != "A"}
a_values = [after_warp(x) for (x,), label in zip(X, y, strict=True) if label == "A"]
mid = sum(a_values) / 2
for label, v in warped.items():
    print(f"{label}: {v} = {sp.N(v, 8)}, distance to the A midpoint {sp.N(abs(v - mid), 8)}")
print("no longer mirror images:", sp.N(abs(warped["B"] - mid) - abs(warped["C"] - mid), 30) != 0)

# %% [markdown]
# ### Pictures
#
# The **ladder**: each point's value after each layer, over the layer's amplitude. The
# warp (layer 1) reverses the order and squeezes the values unevenly; the fold (layer 2)
# brings the two $A$ values together. The shaded bands on the right are the values each
# class wins at the readout.

# %%
plot.ladder(net, X, y)

# %% [markdown]
# Each layer's **fold map**: value in (horizontal) against value out (vertical). The warp's
# curve is monotone over the points; the fold's turns between them.

# %%
plot.fold_maps(net, X, y)

# %% [markdown]
# On LayerNorm's **circle**: after the last layer the readout's parallel chords cut the
# circle into class arcs (a class may own two arcs, one on each side of the chord's
# direction), and every point lies in its class's arc.

# %%
plot.circles(net, X, y)

# %% [markdown]
# ### The cost of breaking parallelization
#
# The warp is not free. It costs a layer, and it squeezes the values unevenly (that is its
# job), which costs margin. Move $C$ from 3 to $5/2$, off the mirror image of $B$: the
# paper's algorithm needs no warp there, one fold does it. The certified margins per point
# (log scale): with the warp, the margins of $B$ and $C$ are about four times smaller.

# %%
X_off = [[0], [1], ["5/2"], [4]]
pts_off = lncapacity.points_from_arrays(X_off, y)
net_off = lncapacity.build(pts_off, method="pma")
cert_off = lncapacity.certify(net_off, pts_off)
print(
    f"C at 5/2: depth {net_off.depth}, warps {net_off.meta['warps']}, "
    f"min margin {cert_off.min_margin:.4g}"
)
print(f"C at 3:   depth {net.depth}, warps {net.meta['warps']}, min margin {cert.min_margin:.4g}")
fig, ax = plt.subplots(figsize=(8, 4), layout="constrained")
width = 0.38
for shift, c_, name in (
    (-width / 2, cert_off, "C at 5/2: one fold"),
    (width / 2, cert, "C at 3: a warp, then a fold"),
):
    ax.bar(np.arange(4) + shift, [q.margin for q in c_.points], width, label=name)
ax.set_xticks(range(4), [f"{label} (point {k})" for k, label in enumerate(y)])
ax.set_yscale("log")
ax.set(
    ylabel="certified margin (lower bound)",
    title="The cost of breaking parallelization: smaller margins, one more layer",
)
ax.legend()
plt.show()

# %% [markdown]
# ## 3. The `runs` method on the same data: no warp
#
# The default method joins a whole end run to a later run of its label, every run in
# between kept in order (the merge lemma of proofs/multiclass.md). Here it folds the first
# $A$ onto the last $A$ around $B$ and $C$, which stay in order: one layer, no warp.

# %%
net_runs = lncapacity.build(X, y)
cert_runs = lncapacity.certify(net_runs, X, y)
account_runs = explain(net_runs, X, y, certificate=cert_runs)
print(f"depth {net_runs.depth}, warps {net_runs.meta['warps']}, kinds", end=" ")
print([layer.meta["kind"] for layer in net_runs.layers])
for entry in account_runs["layers"]:
    print(entry["words"])
print(account_runs["readout"]["words"])

# %%
plot.ladder(net_runs, X, y)

# %%
plot.circles(net_runs, X, y)

# %% [markdown]
# ## 4. The envelope readout
#
# When every class is one run along the last value $s$, the readout gives the class of
# the $t$-th run (from the left) the line $l_t(s) = t\,s + \iota_t$: slopes
# $1, 2, \dots, k$, with $\iota_1 = 0$ and $\iota_{t+1} = \iota_t - \tau_t$, so that
# $l_{t+1} - l_t = s - \tau_t$. Line $t$ is the largest exactly on $(\tau_{t-1}, \tau_t)$
# (the readout lemma). The thresholds $\tau_t$ are short rationals in the middle of the
# gaps between the runs (within 1/64 of a gap of its midpoint, so the values on either
# side are nearly half a gap from it: the margin), in `net.readout.meta["thresholds"]`.
# A class with no point gets the row 0.

# %%
print("thresholds:", net_runs.readout.meta["thresholds"])
r = account_runs["readout"]
for line in r["lines"]:
    print(f"class {line['class']}: slope {line['slope']}, intercept {line['intercept']}")
print("class order along s:", r["class_order"])

# %%
trace = float_trace(net_runs, X)
s_last = trace.values[-1]
lines = {
    ln["class"]: (float(parse_rational(ln["slope"])), float(parse_rational(ln["intercept"])))
    for ln in r["lines"]
}
taus = [float(parse_rational(t)) for t in net_runs.readout.meta["thresholds"]]
grid = np.linspace(min(s_last) - 0.5, max(s_last) + 0.5, 400)
fig, ax = plt.subplots(figsize=(9, 5.5), layout="constrained")
for i, name in enumerate(net_runs.classes):
    colour, marker = plot.class_style(i, len(net_runs.classes))
    a, b = lines[name]
    sign = "-" if b < 0 else "+"
    ax.plot(grid, a * grid + b, color=colour, label=f"class {name}: ${a:g}\\,s {sign} {abs(b):g}$")
    mine = [k for k in range(len(X)) if y[k] == name]
    ax.scatter(
        s_last[mine],
        a * s_last[mine] + b,
        color=colour,
        marker=marker,
        s=80,
        edgecolors="black",
        zorder=3,
    )
envelope = np.max([a * grid + b for a, b in lines.values()], axis=0)
ax.plot(grid, envelope, color="black", linewidth=3, alpha=0.25, label="upper envelope")
for t in taus:
    ax.axvline(t, color="0.4", linestyle=":")
    ax.annotate(
        rf"$\tau = {t:g}$",
        (t, ax.get_ylim()[0]),
        xytext=(4, 6),
        textcoords="offset points",
        color="0.3",
    )
ax.set(
    xlabel="$s$ (the last value, read from the last LayerNorm output)",
    ylabel="score",
    title="The envelope readout of the runs net: each point's own line is on top",
)
ax.legend(loc="upper left")
plt.show()

# %% [markdown]
# ## 5. Iris: three classes, 150 flowers, both methods
#
# The iris measurements (four features; two flowers are identical and count once). Both
# methods certify every flower; the paper's loop needs about one layer per flower, the
# runs method a handful, and both nets agree with their certificates in float64.

# %%
iris = load_iris()
points = lncapacity.points_from_arrays(iris.data, [iris.target_names[t] for t in iris.target])
results = {}
for method in ("runs", "pma"):
    n = lncapacity.build(points, method=method)
    cert_n = lncapacity.certify(n, points, workers=1)
    f64 = floats.check(n, points, "float64")
    results[method] = (n, cert_n, f64)
    print(
        f"{method:<4}: depth {n.depth:>3} (bound m - k = {points.m - 3}), warps {n.meta['warps']}, "
        f"certified {cert_n.certified}/{points.m}, float64 agrees on {f64.agree}/{f64.total}, "
        f"min margin {cert_n.min_margin:.3g}"
    )

# %% [markdown]
# The iris runs net on its last circle: the three species own arcs cut by the readout's
# parallel chords.

# %%
iris_runs = results["runs"][0]
plot.circles(iris_runs, points, layers=[iris_runs.depth])

# %% [markdown]
# ## Self-checks

# %%
# the trap: B and C are mirror images about the naive centre, so the naive fold merges them
assert sp.simplify(naive_b - naive_c) == 0
# pma: a warp first, with its reason, then one fold; certified
assert [layer.meta["kind"] for layer in net.layers] == ["warp", "pma"]
assert net.layers[0].meta["why"].startswith("a value of label 1 and one of label 2")
assert account["layers"][0]["why"].startswith("a value of label B and one of label C")
assert net.meta["warps"] == 1 and net.depth == 2
assert cert.all_certified and cert_runs.all_certified
# after the warp, B and C are no longer equidistant from the A midpoint (exactly)
assert sp.N(abs(warped["B"] - mid) - abs(warped["C"] - mid), 50) != 0
# runs: one layer, no warp, the A runs joined around B and C
assert [layer.meta["kind"] for layer in net_runs.layers] == ["runs"]
assert net_runs.meta["warps"] == 0
assert account_runs["layers"][0]["joined_runs"] == [{"label": "A", "runs_before": [1, 4]}]
# envelope: slopes 1..k in class order, thresholds from the metadata, every point on top
for acc, n in ((account, net), (account_runs, net_runs)):
    rd = acc["readout"]
    assert rd["kind"] == "envelope" and rd["thresholds"] == n.readout.meta["thresholds"]
    slope = {ln["class"]: parse_rational(ln["slope"]) for ln in rd["lines"]}
    assert [slope[c] for c in rd["class_order"]] == [1, 2, 3]
    ts = [parse_rational(t) for t in rd["thresholds"]]
    assert ts == sorted(ts)
    assert acc["layers"][-1]["after"]["runs"] == 3
# iris: both certified, float64 agrees, runs far shallower, no more than m - k folds
for method, (n, c, f64) in results.items():
    assert c.all_certified and c.certified == points.m == 149, method
    assert f64.all_agree, method
    assert n.meta["folds"] - n.meta["warps"] <= points.m - 3
assert results["runs"][0].depth < results["pma"][0].depth
# breaking parallelization costs a layer and margin
assert net_off.depth == 1 and net_off.meta["warps"] == 0 and cert_off.all_certified
assert cert.points[1].margin < cert_off.points[1].margin / 3  # B: several times smaller
assert cert.points[2].margin < cert_off.points[2].margin / 3  # C too
assert cert.min_margin < cert_off.min_margin
# the picture: B and C on one value (and one chord), the As on one value too
h_bc = naive_layer([1, 3])
assert np.allclose(h_bc[0] @ v_hat, h_bc[1] @ v_hat) and not np.allclose(h_bc[0], h_bc[1])
print("all self-checks passed")
