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
# # Runs against the paper: depth and float faithfulness
#
# The paper's construction (`method="pma"`) is exact: with exact arithmetic its nets
# classify every point. But a net is used in floating point, and each PMA fold squeezes
# the gaps between the labels: about a quarter of a bit per layer
# (proofs/float_gap.md). Past about 120 points float64 no longer computes what the exact
# net computes, although the certificate still holds.
#
# `lncapacity`'s default, `method="runs"`, removes one *label run* per layer instead of one
# value (proofs/runs_fold.md) and picks each fold to keep the label gaps as large as float64
# can see. This notebook puts the two side by side: depth, certificates, float checks, and
# the smallest label gap layer by layer.

# %%
# %matplotlib inline
import math
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

import lncapacity
from lncapacity import floats, plot
from lncapacity.explain import explain

ROOT = Path.cwd() if (Path.cwd() / "examples").is_dir() else Path.cwd().parent

# %% [markdown]
# ## 1. The same data, both methods
#
# Three point sets: the bundled two spirals (24 points in the plane), and alternating
# labels on $m = 40$ and $m = 140$ points of the curve $(k, k^2 \bmod 7)$: the worst case
# for the paper's algorithm, which then needs about one layer per point.


# %%
def alternating(m):
    return [[k, (k * k) % 7] for k in range(m)], [k % 2 for k in range(m)]


sets = {"spirals": lncapacity.load_points(ROOT / "examples" / "spirals.csv")}
for m in (40, 140):
    sets[f"alternating {m}"] = lncapacity.points_from_arrays(*alternating(m))

rows = []
nets = {}
for name, pts in sets.items():
    for method in ("pma", "runs"):
        net = lncapacity.build(pts, method=method)
        cert = lncapacity.certify(net, pts, workers=1)
        f64, f32 = (floats.check(net, pts, b) for b in ("float64", "float32"))
        nets[name, method] = (net, cert, f64, f32)
        rows.append((name, method, pts.m, net.depth, cert.certified, f64.agree, f32.agree))

print(
    f"{'data':<16} {'method':<6} {'m':>4} {'depth':>5} {'certified':>9} "
    f"{'float64 ok':>10} {'float32 ok':>10}"
)
for r in rows:
    print(f"{r[0]:<16} {r[1]:<6} {r[2]:>4} {r[3]:>5} {r[4]:>9} {r[5]:>10} {r[6]:>10}")

# %% [markdown]
# Both methods are certified on every point. `runs` needs fewer layers, and its nets are
# right in float64 (and here in float32) where the paper's start to fail.
#
# ## 2. Where float64 and the certificate disagree
#
# The decision regions of the paper's net for 140 alternating points, evaluated in float64.
# Circled points are those where float64 and the exact certificate disagree. The points
# are one unit apart along $x_1$ and the labels alternate, so the regions are stripes about
# one unit wide: the grid has about 6 cells per unit across (1,000 of them) and 7 per
# unit up; a grid of cells 0.8 units apart would alias the stripes into noise. At this
# size 140 stripes are a blur all the same, so a zoom follows.

# %%
GRID = (1000, 50)
net, cert, f64, _ = nets["alternating 140", "pma"]
plot.regions(net, sets["alternating 140"], certificate=cert, resolution=GRID)

# %% [markdown]
# Zoomed in on $20 \le x_1 \le 52$, with a grid of its own (12 cells per unit across,
# 32 up): the stripes are slanted (the net reads the points along its projection
# direction), narrower than one unit, and the points float64 gets wrong (circled) sit on
# the edge of a stripe or inside one of the other colour: float64 misplaces the boundary.

# %%
plot.regions(
    net,
    sets["alternating 140"],
    certificate=cert,
    resolution=(400, 150),
    window=(20, 52, -0.3, 4.3),
)

# %%
net, cert, f64, _ = nets["alternating 140", "runs"]
plot.regions(net, sets["alternating 140"], certificate=cert, resolution=GRID)

# %% [markdown]
# ## 3. The float gap, layer by layer
#
# A float format with unit roundoff $u$ computes each layer's value with an error of a few
# $u$ times the layer's amplitude $A$ (the largest value the read can give), so what matters
# is the **relative gap**: the smallest distance between values of different labels,
# divided by $A$. `explain` computes it in ball arithmetic for every layer. On equally
# spaced alternating points (the setting of proofs/float_gap.md) the paper's construction
# loses about $\log_2 m$ bits in its first layer and then a quarter of a bit per layer;
# the runs construction keeps the gap far from float64's resolution.
#
# The gap alone does not say when floats go wrong: the smallest gap of the paper's net for
# $m = 140$ is about $2^{-45}$, far above float64's $u = 2^{-53}$, yet float64 gets points
# of it wrong. Errors **compound**: each layer adds an error of a few $u$ (relative to its
# amplitude), and the later layers carry every earlier error along with the gaps. A point
# goes wrong when the accumulated error reaches its gap, that is when
# $\sum_{k \le l} C u / g_k$ reaches 1 ($g_k$ the relative gap after layer $k$, $C$ the
# few operations per layer; proofs/float_gap.md, section 3). The right panel draws that sum
# with $C = 1$ for float64, and the band where the measured float64 frontier lies: from
# $C = 2^{1.7}$ (every net beyond fails) to $C = 2^{5.5}$ (the first failure), that is
# where $\sum_k u / g_k$ is between $2^{-5.5}$ and $2^{-1.7}$. A curve that enters the band
# is a net float64 gets wrong, or about to; float32 ($u = 2^{-24}$) shifts every curve up by
# 29 bits.

# %%
curves = {}
wrong = {}
for m in (20, 40, 80, 140):
    X1, y1 = [[k] for k in range(m)], [k % 2 for k in range(m)]
    for method in ("pma", "runs"):
        net1 = lncapacity.build(X1, y1, method=method)
        acc = explain(net1, X1, y1)
        gaps = [acc["input"]["label_gap"]] + [e["after"]["label_gap"] for e in acc["layers"]]
        certain = all(e["after"]["label_gap_certainly_positive"] for e in acc["layers"])
        curves[m, method] = (np.log2(gaps), certain, net1.depth)
        check = floats.check(net1, lncapacity.points_from_arrays(X1, y1), "float64")
        wrong[m, method] = check.total - check.agree

fig, (ax, ax2) = plt.subplots(1, 2, figsize=(14, 5.5), layout="constrained")
colours = dict(zip((20, 40, 80, 140), plot.OKABE_ITO, strict=False))
for (m, method), (g, _, _) in curves.items():
    style = dict(
        color=colours[m],
        linestyle="-" if method == "pma" else "--",
        marker="o" if method == "runs" else None,
        markersize=3,
    )
    ax.plot(range(len(g)), g, label=f"{method}, m = {m}", **style)
    budget = np.log2(np.cumsum(2.0 ** (-53 - g[1:])))  # sum over layers 1..l of u / g_l
    bad = f" (float64 wrong on {wrong[m, method]})" if wrong[m, method] else ""
    ax2.plot(range(1, len(g)), budget, label=f"{method}, m = {m}{bad}", **style)
for name, u in (("float32", 24), ("float64", 53)):
    ax.axhline(-u, color="0.4", linestyle=":", linewidth=1)
    ax.text(
        138, -u + 0.6, f"{name} unit roundoff $2^{{-{u}}}$ (one operation)", color="0.3", ha="right"
    )
ax.set(
    xlabel="layer",
    ylabel=r"$\log_2$(smallest label gap / amplitude)",
    title="The smallest relative label gap after each layer (ball arithmetic)",
)
ax.legend(ncol=2, fontsize=9)
ax2.axhspan(-5.5, -1.7, color="#D55E00", alpha=0.15, label="float64 fails here (measured)")
ax2.axhline(0, color="0.4", linestyle=":", linewidth=1)
ax2.set(
    xlabel="layer $l$",
    ylabel=r"$\log_2 \sum_{k \leq l} u / g_k$  (float64, $u = 2^{-53}$)",
    title="The float64 error it compounds, relative to the gap",
)
ax2.legend(ncol=2, fontsize=9, loc="lower right")
plt.show()

# %% [markdown]
# The slope of the paper's curve between layer 2 and the minimum, against the quarter of
# a bit per layer of proofs/float_gap.md (its measured slopes grow slowly with $m$):

# %%
for m in (40, 80, 140):
    g = curves[m, "pma"][0]
    lo = int(np.argmin(g))
    slope = -np.polyfit(np.arange(2, lo + 1), g[2 : lo + 1], 1)[0]
    print(f"m = {m}: minimum 2^{g[lo]:.2f} after layer {lo}, slope {slope:.3f} bits per layer")
    # proofs/float_gap.md, section 2: layer 1 costs about log2(m) bits
    print(f"         layer 1 lost {g[0] - g[1]:.2f} bits (log2 m = {math.log2(m):.2f})")

# %% [markdown]
# ## Self-checks

# %%
for (name, method), (net, cert, f64, _) in nets.items():
    assert cert.all_certified, (name, method)  # exact, whatever floats do
    if method == "runs":
        assert f64.all_agree, name  # float64-faithful
        assert net.depth <= nets[name, "pma"][0].depth
for m in (40, 140):
    assert nets[f"alternating {m}", "pma"][0].depth <= m - 2
assert not nets["alternating 140", "pma"][2].all_agree  # beyond the float64 frontier
assert wrong[140, "pma"] > 0 and not any(wrong[m, "runs"] for m in (20, 40, 80, 140))
budget140 = np.log2(np.sum(2.0 ** (-53 - curves[140, "pma"][0][1:])))
assert -5.5 <= budget140  # the net float64 gets wrong is in (or past) the measured band
assert all(np.log2(np.sum(2.0 ** (-53 - curves[m, "pma"][0][1:]))) < -5.5 for m in (20, 40, 80))
for (m, method), (_, certain, depth) in curves.items():
    assert certain  # every gap is a ball of positive numbers
    if method == "pma":
        assert depth == m - 2  # equally spaced alternating points: the worst case
    else:
        assert depth <= m - 2
print("all self-checks passed")
