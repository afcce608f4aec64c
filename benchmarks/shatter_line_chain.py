"""Shatter points on a line at depth L by Chebyshev chains: every labeling a certified net.

    python benchmarks/shatter_line_chain.py 15 4 certificates/shatter-line-L4-n15.jsonl.gz

The points are ``-cos(pi i / (m + 1))``, ``i = 1..m``, rounded to ``10^-6``.  A width-3 net with
``eps = 0`` acts on a line through circle maps (proofs/circle_maps.md): the first layer sends
the line monotonically into an arc, each later layer ``u -> N(A u + c)`` (``N`` the unit
vector), the readout is a chord.  A Chebyshev chain makes every later layer a full fold of the
arc onto itself, so the score changes sign ``2^L`` times along the line, the most section 3.1
allows; Adam (PyTorch, float64, many chains at once) moves the folds and the chord until the
labeling's points fall on the right sides.  Each float net is rounded to dyadic rationals and
kept only if the certificate accepts it (:func:`lncapacity.search.certified_rounding`), and
:func:`lncapacity.shatter.shatter` writes the shattering certificate, which
``lncapacity verify-shatter`` re-checks from scratch.  The search is float arithmetic and may
differ between machines; the certificate does not depend on it.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from flint import fmpq

from lncapacity.construct.circle import SQRT3, E  # LN(E g) = sqrt(3) E g / |g|
from lncapacity.search import certified_rounding
from lncapacity.shatter import shatter, verify_shatter
from lncapacity.shatter.points import labels_of

# (chains per labeling, Adam steps): each pass searches again the labelings missed before
PASSES = ((8, 500), (32, 800), (64, 1500), (128, 3000))


def line_points(m: int) -> list[tuple[fmpq]]:
    """``m`` points on a line, denser at the ends (where the folds crowd the breaks)."""
    return [(fmpq(round(-np.cos(np.pi * i / (m + 1)) * 10**6), 10**6),) for i in range(1, m + 1)]


def _forward(P: dict, x):  # type: ignore[no-untyped-def]
    """Scores ``(B, m)`` of ``B`` nets in circle form, each divided by its readout's norm."""
    import torch

    g = P["n"][:, None, :] * x[None, :, None] + P["c1"][:, None, :]
    u = g / g.norm(dim=-1, keepdim=True)
    for A, c in zip(P["A"], P["c"], strict=True):
        g = torch.einsum("bij,bmj->bmi", A, u) + c[:, None, :]
        u = g / g.norm(dim=-1, keepdim=True)
    s = (u * P["w"][:, None, :]).sum(-1) + P["r"][:, None]
    return s / torch.sqrt((P["w"] ** 2).sum(-1) + P["r"] ** 2)[:, None]


def _chains(B: int, L: int, rng: np.random.Generator) -> dict:
    """``B`` random Chebyshev chains: layer 1 sends ``x`` to ``(d_1 (x - x_0) / s, 1)``, layer
    ``l`` reads the last coordinate, rescaled so the arc's ends go to ``-1`` and ``1``, and
    sends it to ``(d_l t, 1)``: a symmetric fold; the readout thresholds the last one at ``r``."""
    import torch

    d = np.exp(rng.uniform(np.log(0.1), 0.0, (B, L)))
    x0, s = rng.uniform(-0.15, 0.15, B), np.exp(rng.uniform(-0.15, 0.15, B))
    r, sign = rng.uniform(-0.6, 0.6, B), rng.choice([-1.0, 1.0], B)
    zero, one = np.zeros(B), np.ones(B)
    P: dict = {"n": np.stack([d[:, 0] / s, zero], 1), "c1": np.stack([-d[:, 0] * x0 / s, one], 1)}
    P["A"], P["c"] = [], []
    top = 1 / np.sqrt(1 + d[:, 0] ** 2)  # the arc's end: last coordinate in [top, 1]
    for layer in range(1, L + 1):
        a, b = -2 / (1 - top), 1 + 2 * top / (1 - top)  # [top, 1] -> [1, -1]
        if layer == L:
            P["w"], P["r"] = np.stack([zero, a * sign], 1), (b - r) * sign
            break
        A = np.zeros((B, 2, 2))
        A[:, 0, 1] = d[:, layer] * a
        P["A"].append(A)
        P["c"].append(np.stack([d[:, layer] * b, one], 1))
        top = 1 / np.sqrt(1 + d[:, layer] ** 2)
    return {
        k: [torch.tensor(a) for a in v] if isinstance(v, list) else torch.tensor(v)
        for k, v in P.items()
    }


def _leaves(P: dict) -> list:
    return [P["n"], P["c1"], *P["A"], *P["c"], P["w"], P["r"]]


def _params(P: dict, j: int) -> list[np.ndarray]:
    """Net ``j`` of the batch as width-3 weights ``[W_1, b_1, ..., r, c]``."""

    def net(t):  # type: ignore[no-untyped-def]
        return t[j].detach().numpy()

    out = [E @ net(P["n"])[:, None], E @ net(P["c1"])]
    for A, c in zip(P["A"], P["c"], strict=True):
        out += [E @ net(A) @ E.T / SQRT3, E @ net(c)]
    return [*out, E @ net(P["w"]) / SQRT3, net(P["r"]).reshape(1)]


def _batch(args: tuple) -> list[tuple[int, list[np.ndarray] | None]]:
    """Adam on ``R`` chains for each labeling of ``part``: its best net with every point on its
    side, or None."""
    import torch

    torch.set_num_threads(1)
    x, part, L, R, steps, seed = args
    xt = torch.tensor(x)
    P = _chains(len(part) * R, L, np.random.default_rng(seed))
    Y = np.array([labels_of(k, len(x)) for k in part], dtype=float)
    sign = torch.tensor(np.repeat(2 * Y - 1, R, axis=0))
    leaves = _leaves(P)
    for p in leaves:
        p.requires_grad_(True)
    opt = torch.optim.Adam(leaves, lr=0.01)
    for _ in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.softplus(-300 * _forward(P, xt) * sign).sum() / 300
        loss.backward()
        opt.step()
    with torch.no_grad():
        margin = (_forward(P, xt) * sign).min(1).values.reshape(len(part), R).numpy()
    best = margin.argmax(1)
    return [
        (k, _params(P, a * R + int(best[a])) if margin[a, best[a]] > 0 else None)
        for a, k in enumerate(part)
    ]


def search(
    x: np.ndarray, ks: list[int], L: int, R: int, steps: int, seed: int, found: dict, workers: int
) -> list[int]:
    """Adam on ``R`` chains per labeling of ``ks``, 128 labelings a batch (batch ``i`` seeded
    ``seed + i``, whatever the processes); the nets found go to ``found``; returns the
    labelings missed."""
    from multiprocessing import get_context

    jobs = [(x, ks[i : i + 128], L, R, steps, seed + i) for i in range(0, len(ks), 128)]
    missed = []
    with get_context("spawn").Pool(workers) as pool:
        for n, batch in enumerate(pool.imap(_batch, jobs), 1):
            if n % 16 == 0 or n == len(jobs):
                print(f"  {R} chains x {steps} steps: {n}/{len(jobs)} batches", flush=True)
            for k, params in batch:
                if params is None:
                    missed.append(k)
                else:
                    found[k] = params
    return missed


class Found:
    """The float nets found, as a search :func:`~lncapacity.shatter.shatter` calls."""

    def __init__(self, nets: dict[int, list[np.ndarray]]):
        self.nets = nets

    def __call__(self, points, depth, eps, classes, *, seed):  # type: ignore[no-untyped-def]
        params = self.nets.get(seed)
        return None if params is None else certified_rounding(points, params, depth, eps, classes)


def chain_shatter(m: int, L: int, out: str, workers: int = 1) -> tuple:
    """Search every canonical labeling of ``line_points(m)``, then write and re-verify the
    certificate; returns the summary and the verifier's problems."""
    X = line_points(m)
    x = np.array([float(p[0]) for p in X])
    found: dict = {}
    ks = list(range(0, 1 << m, 2))  # point 0 labelled 0; the complement flips the readout
    t = time.perf_counter()
    for n, (R, steps) in enumerate(PASSES):
        ks = search(x, ks, L, R, steps, 10**6 * n, found, workers)
        print(
            f"{R} chains x {steps} steps: {len(ks)} labelings missed, "
            f"{time.perf_counter() - t:.0f} s",
            flush=True,
        )
        if not ks:
            break
    summary = shatter(X, L, out=out, workers=workers, search=Found(found))
    return summary, verify_shatter(out, workers=workers)[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("points", type=int)
    ap.add_argument("depth", type=int)
    ap.add_argument("out")
    ap.add_argument("--workers", type=int, default=1)
    args = ap.parse_args()
    summary, problems = chain_shatter(args.points, args.depth, args.out, args.workers)
    print(
        f"{summary.certified}/{summary.labelings} certified, smallest margin "
        f"{summary.min_margin:.2e}; re-verified: {not problems}"
    )


if __name__ == "__main__":
    main()
