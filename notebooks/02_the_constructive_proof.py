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
# ## 2. Algorithm 1, beside the code
#
# Ni, Guo, Jia and Huang give the algorithm as pseudo-code (Algorithm 1 of "On the
# Nonlinearity of Layer Normalization", ICML 2024, binary classification), here line by line
# in their notation (line 15 reads "remove $p_j^{(l)}$ from $\mathbb P$, as long as
# $p_i^{(l)} = p_i^{(l)}$": below, the reading proofs/vc_theorem.md gives it), with the step
# of `lncapacity/construct/exact.py` (`exact_pma`, the paper's loop to the letter) and
# `lncapacity/construct/pma.py` (`_pma`, rational centres) that does the same thing:
#
# - **1:** $l \leftarrow 1$ — *code:* projection: `project.py` picks a direction on which all
#   points differ
# - **2:** $\mathbb P \leftarrow \{p_1^{(l)}, \dots, p_m^{(l)}\}$ — *code:*
#   `groups = [[k] for k in range(m)]`: every value, as a group
# - **3:** **while** $\mathbb P \neq \emptyset$ **do** — *code:* `while True:` ...
#   `if runs(labels) <= 2: return`
# - **4:** $i \leftarrow \arg\min_k \{p_k^{(l)} : p_k^{(l)} \in \mathbb P\}$ — *code:*
#   `order_groups(...)`: sort the groups; $p_i$ is group 0
# - **5:**
#   $\mathbb J_i \leftarrow \{p_j^{(l)} \in \mathbb P : p_j^{(l)} \neq p_i^{(l)}, y_j = y_i\}$;
#   **if** $\mathbb J_i \neq \emptyset$ **then** — *code:* the values of $p_i$'s label, other
#   than $p_i$
# - **6:** $j \leftarrow \arg\min_k \{p_k^{(l)} : p_k^{(l)} \in \mathbb J_i\}$ — *code:*
#   `j = next(k for k in range(1, len(groups)) if labels[k] == labels[0])`
# - **7-9:** **for** $k$: $h_k^{(l)} \leftarrow p_k^{(l)} - [p_i + p_j,\; p_i - p_j]^T/2$;
#   $x_k^{(l)} \leftarrow h_k^{(l)} / \lVert h_k^{(l)} \rVert$ — *code:* `_fold(...)`: centre
#   $c = (p_i + p_j)/2$ (a dyadic rational near it, section 4), offset $\propto (p_j - p_i)/2$:
#   one width-3 affine map + LayerNorm (`fold.py`, `gadget_affine`)
# - **10:** $p_k^{(l+1)} \leftarrow [0\; 1;\; 0\; 0]\, x_k^{(l)}$ — *code:* the next layer reads
#   $v = (1, 1, -2)$ (`explain.reads`)
# - **12-13:** $l \leftarrow l + 1$; $\mathbb P \leftarrow \{p_1^{(l)}, \dots\}$ — *code:*
#   `chain.push(step)`; `groups = [groups[0] + groups[j], ...]`: $p_i$ and $p_j$ are one group
#   now
# - **14-15:** **else** remove the value with no partner from $\mathbb P$ — *code:*
#   `if runs(labels) <= 2: return` (below)
# - **19:** **return** $P^{(l)}$ — *code:* the readout: one threshold between the two runs
#   (`threshold`)
#
# **The else branch.** $\mathbb J_i = \emptyset$ means the smallest value has no other value
# of its label: it is alone, every other value has the other label, and the sorted labels
# read `A B B ... B`, two runs. Algorithm 1 removes it from $\mathbb P$ and goes on; the code
# stops there, because one threshold already separates the labels (and so it stops, too,
# at `A A B B`, where Algorithm 1's loop would go on folding until $\mathbb P$ is empty:
# layers the theorem's count does not need). On $y = (0, 1, 1, 1)$ the branch is taken at
# once and the net has no LayerNorm layer at all:

# %%
lonely = lncapacity.build([[0], [1], [2], [3]], [0, 1, 1, 1], method="pma")
print("labels 0 1 1 1: depth", lonely.depth, "| readout threshold", lonely.readout.meta)

# %% [markdown]
# ## 3. Every fold, in words and in pictures
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
# The **ladder** shows each point's place in the sorted order of the value the next map
# reads (column 0: the projection; column $l$: after layer $l$). Each column is turned so
# that the end the next layer folds over is at the bottom (for the paper's algorithm, the
# smallest value $p_i$); merged values share one place and their line is drawn wider, the
# more points it carries; the numbers are the points' ids. Follow the bottom of each
# column: the next layer merges that point with its partner $p_j$, and their lines join in
# the next column, **wherever the fold puts the pair** (the fold sends the values between
# $p_i$ and $p_j$ above them and the values beyond $p_j$ below them, so the merged pair
# ends up in the middle, not at the bottom).

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
# ## 4. Why the centres can be rational
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
# ## 5. The certificate
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
# ## 6. Shattering: every labeling of $L + 2$ points
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
# **Why $L + 2$ points, for every $L$ (VC dimension $\ge L + 2$).** Take any $L + 2$
# distinct points and any labeling. Project them to a line on which they differ; each fold
# merges two values of one label and never merges two labels
# (proofs/merge_and_no_confusion.md), and the loop stops when one threshold separates the
# labels, that is when at most two label *runs* are left: at the latest
# when each label is one value, after $(L + 2) - 2 = L$ folds. Nets that need fewer folds
# are padded with injective layers (a fold centred beyond every value keeps every label
# run) to exactly $L$ layers. So one architecture, width 3 with $L$ LayerNorm layers,
# realises all $2^{L+2}$ labelings: the points are shattered. The points and the layers
# each labeling needed before padding:

# %%
points = [p[0] for p in json.loads(lines[0])["points"]]
print("the points:", points, f"(L + 2 = {L + 2} of them, on a line)")
entries = [json.loads(line) for line in lines[1:] if '"labeling"' in line]
for e in entries:  # each line holds a labeling and its complement (the readout's rows swapped)
    lab, comp = labels_of(e["labeling"], L + 2), labels_of(e["complement"]["labeling"], L + 2)
    margin = min(e["margins"] + e["complement"]["margins"])
    print(
        f"  {lab} and {comp}: {e['folds']} fold{'s' * (e['folds'] != 1)}, "
        f"{L - e['folds']} padding layer{'s' * (L - e['folds'] != 1)}, "
        f"certified margin >= {margin:.3g}"
    )

# %% [markdown]
# ## 7. The alternating labeling is the worst case
#
# How many folds does each labeling need? Every labeling of $m = 6$ points on a line, with
# the paper's algorithm: none needs more than $m - 2 = 4$, and the alternating labeling
# (five label changes, the most there can be) needs exactly 4. It is not the only one: the
# paper's loop merges *values*, not runs, so a labeling such as `0 0 0 1 0 0` also costs 4
# folds (it merges the three 0s on the left one by one); the `runs` method
# (notebook 03) needs one fold there. The lower end is forced: the paper's fold joins
# exactly two label runs of one label (the values between $p_i$ and $p_j$ all have the
# other label and land together on one side of the merged pair; those beyond keep their
# order), so a labeling with $c$ label changes ($c + 1$ runs) needs at least $c - 1$ of the
# paper's folds before one threshold separates the labels. The alternating labeling has the
# most label changes, $m - 1$, hence its $m - 2$ folds: the worst case of the theorem.
# (Cleverer folds do better: notebook 06's double fold shatters $2L + 1$ points.)

# %%
import itertools  # noqa: E402

m6 = [[k] for k in range(6)]
depth_of = {}
for labeling in itertools.product((0, 1), repeat=6):
    if len(set(labeling)) == 2:
        depth_of[labeling] = lncapacity.build(m6, list(labeling), method="pma").depth
worst = max(depth_of.values())
print(f"most folds over all {len(depth_of)} two-label labelings: {worst} (m - 2 = 4)")
changes = {lab: sum(a != b for a, b in itertools.pairwise(lab)) for lab in depth_of}
for c in sorted(set(changes.values())):
    ds = [d for lab, d in depth_of.items() if changes[lab] == c]
    print(f"  {c} label change{'s' * (c != 1)}: folds from {min(ds)} to {max(ds)}")
runs_net = lncapacity.build(m6, [0, 0, 0, 1, 0, 0])
print("0 0 0 1 0 0: pma", depth_of[(0, 0, 0, 1, 0, 0)], "folds, runs", runs_net.depth)

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
assert lonely.depth == 0  # the else branch: a value with no partner, a threshold at once
assert worst == 4 and depth_of[(0, 1, 0, 1, 0, 1)] == depth_of[(1, 0, 1, 0, 1, 0)] == 4
assert min(d for lab, d in depth_of.items() if changes[lab] == 5) == 4  # alternating: 4
assert all(d == 0 for lab, d in depth_of.items() if changes[lab] == 1)  # one threshold
assert runs_net.depth == 1
assert all(d >= changes[lab] - 1 for lab, d in depth_of.items())  # one run fewer per fold
assert len(entries) * 2 == 2 ** (L + 2) and max(e["folds"] for e in entries) == L
print("all self-checks passed")
