"""Double folds (issue 33 §3): does designing a fold layer jointly with the re-spacing of
the layer before it remove more label boundaries than the pole alone?

A fold layer of the circle search is ``phi -> arg(M (e(phi) - q))``: the pole ``q`` (two
degrees of freedom) decides which points land together (the chords through ``q``), the
re-spacing ``M`` (a projective map of the directions) only moves them along the next circle.
The pole alone can swap two pairs of label-boundary gaps (``_aligning_poles``): a layer
*designed* to remove boundaries zips two of them.  The re-spacing of the layer before has two
more degrees of freedom the next pole cannot undo (it is projective in ``tan(phi)``, the
circle's involutions are projective in ``tan(phi / 2)``; only rotations are both), so the two
layers designed jointly could zip four pairs.  The "both ends at once" fold of the issue is
already in the pole's family: a pole whose two tangent points lie inside the arc the points
occupy folds both ends of the arc onto its middle.

This script measures it on the model state of random labels: ``m`` points in a random order
on an arc, labels random (what every layer of the search leaves, up to spacing), folded
greedily layer by layer (floats, no faithfulness constraint: an upper bound on what the
designs could give the real search).  Per layer, three ways to choose the next fold:

- ``pole``: the search's own candidates (``_fold_poles`` and ``_aligning_poles``, ``C``
  poles) after the search's re-spacing (``_spread``), the fewest boundaries kept;
- ``pole + joint``: also ``Z`` four-pair zips of the arc's two ends (every boundary of each end
  paired with a boundary of the middle of the mirrored label), each solved for the
  re-spacing ``(T, c)`` (the directions' extremes to ``-+T``, the median to ``c``) and the pole
  (chords 1, 2 through the pole; chords 3, 4 through it too: two equations, Newton from the
  best point of a grid); a solution inside the range is a candidate like the others;
- ``pole + random``: also ``Z`` random re-spacings, each with the pole search.

It prints, per ``m``, the boundaries after each of ``L`` layers (median over the seeds), how
many zips were solved with the pole outside the circle and not degenerate, and the layers
at which a zip or a random re-spacing beat the pole.  No net is built or certified: this
measures a design, not a net.

    python benchmarks/bench_joint_fold.py --sizes 200 500 --seeds 3 --layers 10 \\
        --markdown docs/tables/joint_fold.md
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from dataclasses import dataclass, field

import numpy as np
from markdown_table import Markdown, add_option

from lncapacity.construct.circle.candidates import (
    _aligning_poles,
    _fold_poles,
    _moebius,
    _spread,
    seen_from,
)
from lncapacity.construct.circle.state import _score_slopes

CANDIDATES = 3000
"""Poles per layer, as the depth objective tries (``precise.CANDIDATES``)."""
ZIPS = 150
"""Four-pair zips drawn per layer (the distinct ones are solved)."""
GRID = 24
"""Grid points per parameter of the re-spacing before Newton."""
DEGENERATE = 1e-6
"""A pole within this of the unit circle is a degenerate solution (all points collapse)."""


def fold(theta: np.ndarray, y: np.ndarray, qs: np.ndarray) -> list[tuple]:
    """``(boundaries, gap, rel, both)`` after each pole of ``qs``: the directions ``rel`` of
    the points seen from the pole (relative to the centre's), as the search scores them;
    ``both``: the pole folds both ends of the arc the points occupy (its two tangent points
    lie inside it)."""
    P = np.c_[np.cos(theta), np.sin(theta)]
    out = []
    for s in range(0, len(qs), 256):
        qq = qs[s : s + 256]
        u, v = seen_from(P, qq)
        b, gap = _score_slopes(u, v, y)
        rel = np.arctan2(v, u)
        # tangent points at angle(q) -+ acos(1 / |q|), inside the arc [min theta, max theta]
        half = np.arccos(1 / np.hypot(qq[:, 0], qq[:, 1]))
        centre = np.arctan2(qq[:, 1], qq[:, 0])
        lo, hi = theta.min(), theta.max()
        inside = [(lo < t) & (t < hi) for t in (_wrap(centre - half), _wrap(centre + half))]
        both = inside[0] & inside[1]
        out += [
            (int(b[k]), float(gap[k]), rel[k], bool(both[k]))
            for k in range(len(qq))
            if gap[k] > 1e-12
        ]
    return out


def _wrap(a: np.ndarray) -> np.ndarray:
    return (a + math.pi) % (2 * math.pi) - math.pi


def respace(rel: np.ndarray, M: np.ndarray) -> np.ndarray:
    """The angles of ``M`` applied to the directions ``rel`` (oriented as the search does)."""
    V = np.c_[np.cos(rel), np.sin(rel)] @ M.T
    return np.arctan2(V[:, 1], V[:, 0]) * (1.0 if np.median(V[:, 0]) >= 0 else -1.0)


def respacing(rel: np.ndarray, T: float, c: float) -> np.ndarray:
    """The projective ``M`` sending the extreme directions of ``rel`` to ``-+T`` and the
    median one to ``c`` (``_moebius``); with rotations, every re-spacing of the arc."""
    t = np.tan(np.sort(rel))
    src = np.array([t[0], t[len(t) // 2], t[-1]])
    return _moebius(src, np.tan(np.array([-T, c, T])))


def zips(lab: np.ndarray, rng: np.random.Generator, count: int) -> list[np.ndarray]:
    """``count`` choices of four nested pairs of boundary gaps (gap ``i`` lies between sorted
    points ``i`` and ``i + 1``): ``n`` at the left end of the arc, ``4 - n`` at the right,
    every boundary of an end paired, in order, with a boundary of the middle (skipping two now
    and then, so that the labels still mirror)."""
    bnd = np.flatnonzero(lab[1:] != lab[:-1])
    B = len(bnd)
    if B < 12:
        return []

    def steps(n: int) -> list[int]:
        out, at = [], 0
        for _ in range(n):
            out.append(at)
            at += 1 + 2 * int(rng.random() < 0.25)
        return out

    out: dict[bytes, np.ndarray] = {}  # the ends have few boundaries: many draws repeat
    for _ in range(count):
        n = int(rng.integers(0, 5))
        left, middle = bnd[:n][::-1], bnd[n:]
        pairs = [[left[i], middle[s]] for i, s in enumerate(steps(n))]
        right, middle = bnd[B - 4 + n :], bnd[: B - 4 + n][::-1]
        pairs += [[middle[s], right[i]] for i, s in enumerate(steps(4 - n))]
        z = np.array(pairs)
        out[z.tobytes()] = z
    return list(out.values())


def _residual(srt: np.ndarray, pairs: np.ndarray, T: float, c: float):
    """After the re-spacing ``(T, c)`` and the pole where the chords of pairs 1 and 2 (through
    their gaps' middles) meet: where the chords from the pole through pair 3's and pair 4's
    first gaps land, in units of their partner gap's width from its middle (within ``1/2``:
    inside the gap, the boundaries zip); with the pole and ``M``."""
    M = respacing(srt, T, c)
    th = respace(srt, M)
    mid, width = (th[:-1] + th[1:]) / 2, np.abs(np.diff(th))
    p1, p2 = mid[pairs[:, 0]], mid[pairs[:, 1]]
    n = np.stack([np.cos((p1 + p2) / 2), np.sin((p1 + p2) / 2)], -1)
    d = np.cos((p2 - p1) / 2)  # the chord's line: n . x = d
    q = np.linalg.solve(n[:2], d[:2])
    e = np.c_[np.cos(p1[2:]), np.sin(p1[2:])]
    v = e - q
    s2 = (q @ q - 1) / np.einsum("ij,ij->i", v, v)  # the line's second point on the circle
    land = q + s2[:, None] * v
    off = (np.arctan2(land[:, 1], land[:, 0]) - p2[2:] + math.pi) % (2 * math.pi) - math.pi
    return off / width[pairs[2:, 1]], q, M


def solve(srt: np.ndarray, pairs: np.ndarray) -> tuple | None:
    """A re-spacing and pole sending every gap of ``pairs`` onto its partner (within half a
    gap): the best point of a grid, then Newton; None if none is found in the range or the
    pole is (nearly) on the circle."""
    best = (math.inf, 0.0, 0.0)
    for T in np.linspace(0.15, 0.49, GRID) * math.pi:
        for f in np.linspace(-0.8, 0.8, GRID):
            try:
                r = float(np.abs(_residual(srt, pairs, T, f * T)[0]).max())
            except np.linalg.LinAlgError:
                continue
            best = min(best, (r, T, f * T))
    x = np.array(best[1:])
    for _ in range(20):
        try:
            r, q, M = _residual(srt, pairs, *x)
            if np.abs(r).max() < 0.05:
                break
            J = np.empty((2, 2))
            for j in range(2):
                dx = np.zeros(2)
                dx[j] = 1e-7
                J[:, j] = (_residual(srt, pairs, *(x + dx))[0] - r) / 1e-7
            x = x - np.linalg.solve(J, r)
        except np.linalg.LinAlgError:
            return None
        if not (0.02 * math.pi < x[0] < 0.499 * math.pi and abs(x[1]) < x[0]):
            return None
    r, q, M = _residual(srt, pairs, *x)
    if np.abs(r).max() > 0.5 or np.hypot(*q) < 1 + DEGENERATE:
        return None
    return q, M


@dataclass
class Run:
    """One greedy run: boundaries at the start and after each layer, zips tried and solved,
    the layers where the addition beat the pole, and how many chosen folds folded both ends."""

    start: int = 0
    boundaries: list[int] = field(default_factory=list)
    solved: int = 0
    tried: int = 0
    wins: list[int] = field(default_factory=list)
    both: int = 0


def run(m: int, layers: int, mode: str, seed: int) -> Run:
    """Greedy folds from a random arc, choosing each layer by ``mode`` (see the module)."""
    rng = np.random.default_rng([m, seed])
    y = rng.integers(0, 2, m)
    rel = rng.permutation(np.linspace(-1.2, 1.2, m))  # directions before the re-spacing
    extra = np.random.default_rng([m, seed, 1])  # the additions' own: the same poles in every mode
    lab = y[np.argsort(rel, kind="stable")]
    out = Run(start=int((lab[1:] != lab[:-1]).sum()))  # label boundaries (not cyclic)
    for layer in range(layers):
        M, _ = _spread(np.cos(rel), np.sin(rel), y)
        theta = respace(rel, M)
        qs = np.r_[
            _fold_poles(theta, y, rng, CANDIDATES // 2), _aligning_poles(theta, y, rng, CANDIDATES)
        ]
        best = min(fold(theta, y, qs), key=lambda c: (c[0], -c[1]))
        pole = best[0]
        if mode == "joint":
            srt = np.sort(rel)
            for pairs in zips(y[np.argsort(rel, kind="stable")], extra, ZIPS):
                out.tried += 1
                if (found := solve(srt, pairs)) is None:
                    continue
                out.solved += 1
                q, Mz = found
                best = min(
                    [best, *fold(respace(rel, Mz), y, q[None, :])], key=lambda c: (c[0], -c[1])
                )
        elif mode == "random":
            for _ in range(5):  # five random re-spacings, 450 poles each (half as many again)
                T = extra.uniform(0.2, 0.49) * math.pi
                Mr = respacing(rel, T, extra.uniform(-0.5, 0.5) * T)
                th = respace(rel, Mr)
                qs = np.r_[
                    _fold_poles(th, y, extra, CANDIDATES // 20),
                    _aligning_poles(th, y, extra, CANDIDATES // 10),
                ]
                best = min([best, *fold(th, y, qs)], key=lambda c: (c[0], -c[1]))
        if best[0] < pole:
            out.wins.append(layer + 1)
        out.boundaries.append(best[0])
        out.both += best[3]
        rel = best[2]
    return out


MODES = {"pole": "pole", "joint": "pole + joint", "random": "pole + random"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 500])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--layers", type=int, default=10)
    add_option(parser)
    args = parser.parse_args()
    md = Markdown(args.markdown)
    md.out(
        "| m | choice | boundaries at the start | after each layer (median of the seeds) | "
        "removed per layer | layers folding both ends | zips solved | layers the addition won |"
    )
    md.out("|---|---|---|---|---|---|---|---|")
    for m in args.sizes:
        for mode, name in MODES.items():
            t0 = time.perf_counter()
            runs = [run(m, args.layers, mode, s) for s in range(args.seeds)]
            b0 = statistics.median(r.start for r in runs)
            after = [statistics.median(r.boundaries[i] for r in runs) for i in range(args.layers)]
            pace = (b0 - after[-1]) / args.layers
            solved = (
                f"{sum(r.solved for r in runs)} of {sum(r.tried for r in runs)}"
                if mode == "joint"
                else ""
            )
            wins = sum(len(r.wins) for r in runs) if mode != "pole" else ""
            both = f"{sum(r.both for r in runs)} of {args.layers * args.seeds}"
            md.out(
                f"| {m} | {name} | {b0:g} | {', '.join(f'{a:g}' for a in after)} | {pace:.1f} "
                f"| {both} | {solved} | {wins} |"
            )
            print(f"  m = {m}, {name}: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    md.save()


if __name__ == "__main__":
    main()
