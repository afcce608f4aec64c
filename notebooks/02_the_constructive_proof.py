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
# # The constructive proof: the Projection Merge Algorithm, fold by fold
#
# **Theorem** ([Ni, Guo, Jia and Huang, *On the Nonlinearity of Layer Normalization*, ICML
# 2024](https://arxiv.org/abs/2406.01255)). A width-3 LN-Net with $L$ LayerNorm layers
# classifies any $L + 2$ labelled points, under every labeling: its VC dimension is at
# least $L + 2$.
#
# The proof is an algorithm, the *Projection Merge Algorithm* (PMA):
#
# 1. **project** the points to a line (a direction on which all of them differ);
# 2. **fold** the line with one LayerNorm layer at the midpoint $c$ of the smallest value
#    $p_i$ and the nearest value $p_j$ of the same label: they **merge** (equal distance
#    from $c$ means equal output), the values between them (all of the other label) land
#    nearer the fold, the rest farther away, in order;
# 3. repeat until one threshold separates the labels; each fold merges two values, so at
#    most $m - 2$ folds are needed.
#
# This notebook runs the algorithm on the hardest case, $m = 6$ alternating points on a
# line, pictures every fold, explains why the centres can be rational, reads the
# certificate, and then shatters $L + 2 = 4$ points with depth-2 nets.

# %%
# %matplotlib inline
import json
import tempfile
from pathlib import Path

import sympy as sp

import lncapacity
from lncapacity import plot
from lncapacity.arith import parse_rational
from lncapacity.explain import explain
from lncapacity.shatter import labels_of, shatter, verify_shatter

# %% [markdown]
# ## 1. The data and the net
#
# Six points $0, 1, \dots, 5$ with labels $0, 1, 0, 1, 0, 1$: five label changes, the most
# there can be. `method="pma"` is the paper's algorithm, unchanged.

# %%
X = [[k] for k in range(6)]
y = [k % 2 for k in range(6)]
net = lncapacity.build(X, y, method="pma")
cert = lncapacity.certify(net, X, y)
print(f"depth {net.depth} (the bound m - 2 = {len(X) - 2}); certified {cert.certified}/6")
print("projection:", net.meta["projection"])

# %% [markdown]
# ## 2. Every fold, in words and in pictures
#
# `explain` reads the construction back **from the saved net** (not from the algorithm's
# internals): each layer's centre and offset come out of its weights exactly, the runs and
# merges from the values of the points.

# %%
account = explain(net, X, y, certificate=cert)
for entry in account["layers"]:
    print(entry["words"])
print(account["readout"]["words"])

# %% [markdown]
# The **ladder** shows each point's place in sorted order after each layer (each column
# turned the same way up as the one before, merged values drawn as one). Follow the bottom:
# at every layer the lowest value meets its partner, and the lines join.

# %%
plot.ladder(net, X, y, mode="rank")

# %% [markdown]
# Each layer's **fold map**: the value a layer reads (horizontal) against the value it
# passes on (vertical). The curve is a bump centred at $c$ (dashed): $p_i$ and $p_j$ sit at
# equal heights on either side. The coloured bars are the label runs before (bottom) and
# after (left).

# %%
plot.fold_maps(net, X, y)

# %% [markdown]
# The same on LayerNorm's circle: after each layer the six points lie on the circle of
# radius $\sqrt 3$; the arrow is the direction the next layer reads (the vector $v$), and
# after the last layer each class owns an arc.

# %%
plot.circles(net, X, y)

# %% [markdown]
# The **merge tree**: which values merged at which layer. The paper's merges are between
# values of one label only, so each tree is one colour.

# %%
plot.merge_tree(net, X, y, by="values")

# %% [markdown]
# ## 3. Why the centres can be rational
#
# After the first layer the values are algebraic numbers (square roots), so the exact
# midpoint $(p_i + p_j)/2$ is algebraic too, and a net with that centre would not have
# rational weights. But the algorithm does not need the exact midpoint: any $c$ that keeps
# every value between $p_i$ and $p_j$ strictly nearer than both, and every other value
# strictly farther, gives the same order after the fold (proofs/rational_centre.md). Such
# $c$ form an open interval; ball arithmetic proves one short **dyadic** rational inside it.
# $p_i$ and $p_j$ then come out a hair apart instead of equal, and are tracked as a group.
#
# Let us compute the exact midpoint for layer 2 with SymPy (the model is generic in its
# number type) and compare.

# %%
sym = net.map(lambda q: sp.Rational(int(q.p), int(q.q)))


def value_after_layer_1(x):
    """The scalar layer 2 reads, exactly: v . LN(W_1 x + b_1)."""
    h = lncapacity.model.layer_norm(sym.layers[0]([sp.Integer(x)]), sym.eps, sp.sqrt)
    return sp.nsimplify(sum(vi * hi for vi, hi in zip((1, 1, -2), h, strict=True)))


values = [sp.simplify(value_after_layer_1(x[0])) for x in X]
order = sorted(range(6), key=lambda k: float(values[k]))
i = order[0]
j = next(k for k in order[1:] if y[k] == y[i])
mid = (values[i] + values[j]) / 2
centre = parse_rational(net.layers[1].meta["centre"])
print(f"p_i = {values[i]}  (point {i})")
print(f"p_j = {values[j]}  (point {j})")
print("exact midpoint  =", sp.N(mid, 25))
print("rational centre =", centre, "=", sp.N(sp.Rational(int(centre.p), int(centre.q)), 25))
print("denominator is a power of two:", int(centre.q) & (int(centre.q) - 1) == 0)

# %% [markdown]
# ## 4. The certificate
#
# `certify` evaluates the net on every point in python-flint `arb` balls (intervals whose
# every operation rounds outwards) and proves $z_{\text{label}} - z_{\text{other}} > 0$.
# The margins are lower bounds on that difference.

# %%
for r in cert.to_dict()["results"]:
    print(
        f"point {r['point']}: label {r['label']}, certified {r['certified']}, "
        f"margin >= {r['margin_lower']:.6g} ({r['precision_bits']} bits)"
    )

# %% [markdown]
# ## 5. Shattering: every labeling of $L + 2$ points
#
# The theorem is about **every** labeling. `shatter` builds a depth-$L$ net (padding shorter
# constructions with injective layers) for each of the $2^{L+2}$ labelings of $L + 2$
# points, certifies each, and writes one certificate; `verify_shatter` re-checks that file
# from scratch with the certificate alone.

# %%
L = 2
folder = Path(tempfile.mkdtemp())
summary = shatter(None, L, out=folder / "shatter.jsonl", workers=1)
checked, problems = verify_shatter(folder / "shatter.jsonl", workers=1)
print(
    f"{summary.certified}/{summary.labelings} labelings of {summary.points} points "
    f"certified at depth {summary.depth}; re-check: {checked.certified} certified, "
    f"problems: {problems}"
)
print("layers needed before padding:", dict(summary.folds))
lines = (folder / "shatter.jsonl").read_text().splitlines()
first = json.loads(lines[1])
print(
    "labeling",
    first["labeling"],
    "=",
    labels_of(first["labeling"], L + 2),
    "margins",
    first["margins"],
)

# %% [markdown]
# ## Self-checks

# %%
assert net.depth == len(X) - 2 == 4  # alternating points need every layer the bound allows
assert cert.all_certified and cert.min_margin > 0
assert all(e["kind"] == "pma" for e in account["layers"])
for e, layer in zip(
    account["layers"], net.layers, strict=True
):  # read back exactly from the weights
    assert parse_rational(e["centre"]) == parse_rational(layer.meta["centre"])
    c = parse_rational(e["centre"])
    assert int(c.q) & (int(c.q) - 1) == 0  # a dyadic rational
runs = [account["input"]["runs"]] + [e["after"]["runs"] for e in account["layers"]]
assert runs[0] == 6 and runs[-1] == 2
assert all(len(e["merged_values"]) == 1 for e in account["layers"])  # one merge per fold
# the rational centre is not the algebraic midpoint, but within a tiny fraction of the gap
assert not sp.Rational(int(centre.p), int(centre.q)).equals(mid)
assert (
    abs(sp.N(mid - sp.Rational(int(centre.p), int(centre.q)), 50))
    < abs(sp.N(values[j] - values[i], 50)) / 100
)
assert summary.all_certified and summary.labelings == 2 ** (L + 2) and summary.depth == L
assert checked.all_certified and problems == []
print("all self-checks passed")
