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
# # The whole circle: the circle method and the double fold
#
# The paper's construction (notebook 02) reads each LayerNorm output through one
# direction $v$: every layer is a map of one number to one number, and a fold merges
# **two values** per layer. That throws away half of what a width-3 LayerNorm gives: its
# output is a point on a **circle** (notebook 01), and the next layer may read the whole
# circle. This notebook uses it (proofs/circle_maps.md, proofs/double_fold.md):
#
# 1. a width-3 layer after the first is a **circle map** $e \mapsto \arg M (e - Q)$: two
#    points of the circle land on one angle exactly when they are on one line through the
#    pole $Q$;
# 2. the **double fold** puts $Q$ where two chords meet, each joining two points of one
#    label: two merges per layer, so depth $L$ shatters $2L + 1$ points (the paper's bound is
#    $L + 2$);
# 3. the **circle method** (`method="circle"`, the default for three or more classes)
#    searches such maps for any number of classes and reads out with $k$ lines, which cut
#    the last circle into arcs;
# 4. the decision regions of rank-one nets are **strips**, those of circle nets are not,
#    and neither kind of net is built to generalise: the moons "barcode".

# %%
# %matplotlib inline
import itertools
import math

import numpy as np
from IPython.display import display
from sklearn.datasets import make_moons
from sklearn.neighbors import KNeighborsClassifier

import lncapacity
from lncapacity import plot
from lncapacity.arith import parse_rational
from lncapacity.construct.double_fold import double_fold_net
from lncapacity.explain import float_trace, reads

# %% [markdown]
# ## 1. The double fold: $2L + 1$ points with $L$ layers
#
# Seven points on a line, alternating labels: the paper's algorithm needs $m - 2 = 5$
# layers. The double fold merges two pairs per layer after the first, so $7 = 2 \cdot 3 +
# 1$ points need 3 layers: after them the seven inputs sit at 3 positions on the circle,
# and a chord (the readout) separates any labeling of 3 points on a circle.

# %%
X7, y7 = [[k] for k in range(7)], [k % 2 for k in range(7)]
pts7 = lncapacity.points_from_arrays(X7, y7)
net_df = double_fold_net(pts7)
net_pma = lncapacity.build(X7, y7, method="pma")
cert_df = lncapacity.certify(net_df, pts7)
print(f"double fold: depth {net_df.depth}, certified {cert_df.certified}/7")
print(f"paper (pma): depth {net_pma.depth}")
plot.circles(net_df, pts7)

# %% [markdown]
# The circles show the merges: after layer 1 the seven points are spread on the circle;
# each later layer (a circle map through its pole) lands two pairs of one label on
# shared angles, so the number of distinct positions goes $7 \to 5 \to 3$. The design
# keeps the positions apart, not far apart: after layer 3 they lie within 0.02 radians,
# so the angles say it better than the picture (float64, to 9 digits). The readout's chord
# cuts off the arc of one label.

# %%
angles = float_trace(net_df, pts7).angles
positions = []
for layer, a in enumerate(angles, 1):
    shared = {}
    for k, t in enumerate(a):
        shared.setdefault(round(float(t), 9), []).append(k)
    positions.append(len(shared))
    print(f"after layer {layer}: {len(shared)} positions:", end=" ")
    print(", ".join(f"{t:+.4f} {ks}" for t, ks in sorted(shared.items())))

# %% [markdown]
#
# **Shattering.** Every one of the 30 two-label labelings of 5 points on a line, with
# exactly $L = 2$ layers, each certified: five points, where the paper's bound promises
# $L + 2 = 4$.

# %%
X5 = [[k] for k in range(5)]
certified = 0
labelings = [lab for lab in itertools.product((0, 1), repeat=5) if len(set(lab)) == 2]
for labeling in labelings:
    p5 = lncapacity.points_from_arrays(X5, list(labeling))
    n5 = double_fold_net(p5, depth=2)
    certified += n5.depth == 2 and lncapacity.certify(n5, p5).all_certified
print(f"{certified}/{len(labelings)} labelings of 5 points certified at depth 2")

# %% [markdown]
# ## 2. The circle method: any number of classes
#
# `method="circle"` searches circle maps layer by layer (a beam search over poles and
# re-spacings, proofs/circle_maps.md) until the classes own disjoint arcs, and reads out
# with $k$ affine scores whose largest gives the class: in the circle's plane the scores
# cut the plane into $k$ convex cells, a **polygon** around the centre, and the circle
# crosses them in arcs. It is the default for three or more classes (`method="auto"`),
# falling back to `runs` where it finds nothing shallower.
#
# Twelve random points of three classes in the plane:

# %%
rng = np.random.default_rng(0)
X12 = rng.integers(0, 20, (12, 2)).tolist()
y12 = [int(v) for v in rng.integers(0, 3, 12)]
wedges = lncapacity.build(X12, y12, method="circle")  # what "auto" picks for three classes
strips = lncapacity.build(X12, y12, method="runs")
print(f"circle: depth {wedges.depth}; runs: depth {strips.depth}")
print("the readout reads one direction:", reads(wedges)[-1] is not None)
plot.circles(wedges, X12, y12)

# %% [markdown]
# The last panel: the readout's three cells (shaded) meet at a point, their sides are the
# polygon (black), and each class's points lie in its cell's arc. A rank-one readout
# (`runs`, `pma`) would cut the plane by **parallel chords** instead (notebook 04).
#
# ## 3. Strips and wedges
#
# A rank-one net reads its input through one direction $w$: everything it computes is a
# function of $w \cdot x$, so its decision regions in the plane are **strips**
# perpendicular to $w$. A circle net's first layer reads the whole plane: with
# $\varepsilon = 0$ its LayerNorm output depends only on the *direction* of $P(W_1 x + b_1)$,
# an affine map of the plane onto the plane $\mathbf 1^\perp$, so every ray from the point
# $x_0$ where $P(W_1 x_0 + b_1) = 0$ lands on one angle of the circle: the regions are
# **wedges** with their apex at $x_0$. The same twelve points:

# %%
fig_s = plot.regions(strips, X12, y12, resolution=200)
fig_s.axes[0].set_title(f"runs (rank one, depth {strips.depth}): strips")
display(fig_s)

# %%
W1 = np.array([[float(w) for w in row] for row in wedges.layers[0].W])
b1 = np.array([float(b) for b in wedges.layers[0].b])
P = np.eye(3) - 1 / 3
apex = np.linalg.lstsq(P @ W1, -P @ b1, rcond=None)[0]
print("the apex x0 of the wedges:", np.round(apex, 3))
fig_w = plot.regions(wedges, X12, y12, resolution=250, window=(-12, 40, -16, 26))
ax_w = fig_w.axes[0]
ax_w.scatter(*apex, marker="x", s=120, color="black", zorder=5)
ax_w.annotate("apex $x_0$", apex, xytext=(-70, -4), textcoords="offset points")
ax_w.set_title(f"circle (depth {wedges.depth}): wedges from one apex")
display(fig_w)

# %% [markdown]
# ## 4. Memorisation is not generalisation: the moons barcode
#
# Every construction here **memorises**: it classifies the given points, each one
# certified, and promises nothing about points it has not seen. On 200 points of the two
# moons, the `runs` net reads one direction, so its regions are a **barcode** of strips
# wherever two labels interleave along that direction; fresh points from the same two
# moons fall into the wrong stripe far more often than with a 5-nearest-neighbour vote.
# Capacity (the VC dimension this notebook and notebook 02 bound) is what lets a net fit
# any labels, random ones included; it is the opposite of a guarantee of generalisation.

# %%
Xm, ym = make_moons(200, noise=0.1, random_state=0)
moons = lncapacity.points_from_arrays(Xm, ym)
barcode = lncapacity.build(moons, method="runs")
cert_m = lncapacity.certify(barcode, moons, workers=1)
Xt, yt = make_moons(1000, noise=0.1, random_state=1)
acc_net = float(np.mean(np.asarray(barcode.classes)[barcode.predict(Xt)] == yt))
acc_knn = float(np.mean(KNeighborsClassifier(5).fit(Xm, ym).predict(Xt) == yt))
print(f"runs net: depth {barcode.depth}, training points certified {cert_m.certified}/200")
print(f"fresh points: runs net {acc_net:.1%} right, 5 nearest neighbours {acc_knn:.1%}")
w = [float(parse_rational(c)) for c in barcode.meta["projection"]]
print("the direction it reads: w =", np.round(np.array(w) / math.hypot(*w), 3))
plot.regions(barcode, moons, certificate=cert_m, resolution=220)

# %% [markdown]
# ## Self-checks

# %%
assert net_df.depth == 3 and cert_df.all_certified  # 2L + 1 = 7 points, L = 3
assert net_pma.depth == 5  # the paper's m - 2
assert positions == [7, 5, 3]  # two merges per layer after the first
assert certified == len(labelings) == 30  # 5 = 2L + 1 points shattered at L = 2
assert wedges.depth < strips.depth and reads(wedges)[-1] is None  # k lines: a polygon
assert lncapacity.certify(wedges, X12, y12).all_certified
assert wedges.meta["method"] == "circle" and reads(wedges)[0] is None  # reads the plane
assert reads(strips)[0] is not None  # rank one: one direction, strips
for t in (0.5, 2.0, 7.0):  # along any ray from the apex, the net gives one class
    ray = apex + t * (np.array(X12, dtype=float) - apex)
    assert (wedges.predict(ray) == wedges.predict(np.array(X12, dtype=float))).all()
assert cert_m.all_certified  # memorised, every point proved
assert acc_net < acc_knn  # and generalises worse than a nearest-neighbour vote
print("all self-checks passed")
