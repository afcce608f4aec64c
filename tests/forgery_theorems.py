"""Forged theorem certificates: mutated LN-G step and block nets, and mutated data, against the
certificate by the margin theorems (proofs/ln_g_steps.md Theorem 8, proofs/ln_g_depth.md
Theorem 5), for the soundness suite (``tests/test_soundness.py``) and
``benchmarks/bench_soundness.py``.

The bases are nets ``lncapacity.build(..., arch="ln-g")`` built for small random sets (depth 1
and 2, two and three classes, eps 0 and 1e-5), which the certificate decides by its theorem.
Each mutation attacks what the theorem's hypotheses are read from: a weight of the first layer
nudged by ``10^-30`` (the rows are no longer ``(r, -r, 0)``), a bias nudged (a centre or a
steepness moves), a sign flipped, two groups swapped, a group duplicated or dropped (with its
readout columns), a readout coefficient or bias changed, rows swapped, eps changed; or the data:
a point moved onto or across a centre, a label flipped.  Each mutated (net, data) goes through
what ``lncapacity verify`` does (parse, ``lncapacity.certify``), and every acceptance is judged
by ``forgery``'s oracle (its own grammar, mpmath at 300 digits).  A mutation that leaves a true
claim may be accepted; any other acceptance is a forgery.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from fractions import Fraction

import forgery
from forgery import Tally, _fmt, _frac

KINDS = [
    "row-nudge",
    "bias-nudge",
    "bias-shift",
    "sign",
    "swap-groups",
    "dup-group",
    "drop-group",
    "kappa",
    "readout-bias",
    "readout-swap",
    "eps",
    "point-across",
    "point-on-centre",
    "label-flip",
]


def theorem_bases(
    rng: random.Random, count: int = 8, points: tuple[int, int] = (16, 28)
) -> list[tuple[dict, list, list]]:
    """LN-G nets built for small random sets of ``points[0]`` to ``points[1]`` points:
    ``(lnnet object, X, y)``, depth 1 and 2, two and three classes, eps 0 and 1e-5."""
    import lncapacity
    from lncapacity import fileformat

    out = []
    i = 0
    while len(out) < count:
        depth, k, eps = (1, 2)[i % 2], (2, 3)[(i // 2) % 2], ("0", "1/100000")[(i // 4) % 2]
        i += 1
        m, d = rng.randint(*points), rng.randint(1, 3)
        X = {tuple(Fraction(rng.randint(-60, 60), 8) for _ in range(d)) for _ in range(m)}
        Xl = [list(x) for x in X]
        y = [rng.randrange(k) for _ in Xl]
        if len(set(y)) < 2:
            continue
        net = lncapacity.build(Xl, y, arch="ln-g", depth=depth, eps=eps)
        out.append((fileformat.to_dict(net), Xl, y))
    return out


def _groups(layer: dict) -> int:
    return len(layer["b"]) // 3


def _step_points(d: dict) -> list[Fraction]:
    """Where each step group of the first layer steps, in units of ``t = r . x`` for ``r`` the
    first nonzero row: its centre ``(q - p) / 2`` over its rows' scale ``s`` (rows ``s r``)."""
    layer = d["layers"][0]
    rows = [[_frac(w) for w in r] for r in layer["W"]]
    ref = next((r for r in rows if any(r)), None)
    pivot = next(i for i, v in enumerate(ref) if v)
    out = []
    for j in range(_groups(layer)):
        s = rows[3 * j][pivot] / ref[pivot]
        if s:
            p, q = _frac(layer["b"][3 * j]), _frac(layer["b"][3 * j + 1])
            out.append((q - p) / 2 / s)
    return out


def mutate_theorem(d: dict, X: list, y: list, rng: random.Random) -> tuple[str, list, list, str]:
    """A mutated copy of the net ``d`` and its data ``(X, y)``: ``(net text, X, y, kind)``."""
    d = json.loads(json.dumps(d))
    X = [list(x) for x in X]
    y = list(y)
    kind = rng.choice(KINDS)
    li = rng.randrange(len(d["layers"]))
    layer = d["layers"][li]
    G = _groups(layer)
    if kind == "row-nudge":
        i, j = rng.randrange(len(layer["W"])), rng.randrange(len(layer["W"][0]))
        layer["W"][i][j] = _fmt(_frac(layer["W"][i][j]) + rng.choice([1, -1]) * Fraction(1, 10**30))
    elif kind in ("bias-nudge", "bias-shift"):
        i = rng.randrange(len(layer["b"]))
        step = Fraction(1, 10**30) if kind == "bias-nudge" else Fraction(rng.randint(1, 40), 16)
        layer["b"][i] = _fmt(_frac(layer["b"][i]) + rng.choice([1, -1]) * step)
    elif kind == "sign":
        part = rng.choice(["W", "b", "readout"])
        if part == "readout":
            row = rng.choice(d["readout"]["W"])
            j = rng.randrange(len(row))
            row[j] = _fmt(-_frac(row[j]))
        elif part == "W":
            row = rng.choice(layer["W"])
            j = rng.randrange(len(row))
            row[j] = _fmt(-_frac(row[j]))
        else:
            i = rng.randrange(len(layer["b"]))
            layer["b"][i] = _fmt(-_frac(layer["b"][i]))
    elif kind == "swap-groups" and G > 1:
        a, b = rng.sample(range(G), 2)
        for key in ("W", "b"):
            va, vb = layer[key][3 * a : 3 * a + 3], layer[key][3 * b : 3 * b + 3]
            layer[key][3 * a : 3 * a + 3], layer[key][3 * b : 3 * b + 3] = vb, va
    elif kind in ("dup-group", "drop-group"):
        j = rng.randrange(G)
        nxt = d["layers"][li + 1] if li + 1 < len(d["layers"]) else d["readout"]
        if kind == "drop-group" and G > 1:
            for key in ("W", "b"):
                del layer[key][3 * j : 3 * j + 3]
            for row in nxt["W"]:
                del row[3 * j : 3 * j + 3]
            layer["groups"] = G - 1
        elif kind == "dup-group":
            for key in ("W", "b"):
                layer[key] += layer[key][3 * j : 3 * j + 3]
            for row in nxt["W"]:
                row += row[3 * j : 3 * j + 3] if rng.random() < 0.5 else ["0", "0", "0"]
            layer["groups"] = G + 1
        if d.get("width") is not None:  # one width for every layer: depth 1
            d["width"] = len(layer["b"])
    elif kind == "kappa":
        row = rng.choice(d["readout"]["W"])
        j = rng.randrange(len(row) // 3)
        row[3 * j], row[3 * j + 1] = row[3 * j + 1], row[3 * j]  # kappa -> -kappa
    elif kind == "readout-bias":
        i = rng.randrange(len(d["readout"]["b"]))
        d["readout"]["b"][i] = _fmt(_frac(d["readout"]["b"][i]) + rng.choice([-3, -1, 1, 3]))
    elif kind == "readout-swap":
        d["readout"]["W"].reverse()
    elif kind == "eps":
        d["eps"] = rng.choice(["1", "1/2", "1000", "0", "1/100000"])
    elif kind in ("point-across", "point-on-centre"):
        i = rng.randrange(len(X))
        r = [_frac(w) for w in next(r for r in d["layers"][0]["W"] if any(_frac(w) for w in r))]
        t = sum(a * b for a, b in zip(r, X[i], strict=True))
        cs = sorted(_step_points(d))
        if kind == "point-on-centre":
            target = rng.choice(cs)
        else:  # just past the nearest centre above or below
            up, down = [c for c in cs if c > t], [c for c in cs if c < t]
            if up and (not down or rng.random() < 0.5):
                target = min(up) + Fraction(1, 64)
            else:
                target = max(down) - Fraction(1, 64)
        rr = sum(a * a for a in r)
        X[i] = [x + (target - t) * a / rr for x, a in zip(X[i], r, strict=True)]
    elif kind == "label-flip":
        i = rng.randrange(len(y))
        y[i] = rng.choice([c for c in d["classes"] if c != y[i]])
    return json.dumps(d), X, y, kind


def verify_theorem(text: str, X: list, y: list) -> tuple[bool, bool]:
    """What ``lncapacity verify`` decides, through the library: ``(accepted, by the theorem)``,
    the second saying whether some point was decided by a margin theorem."""
    import lncapacity
    from lncapacity import fileformat
    from lncapacity.errors import InputError

    try:
        net = fileformat.from_dict(fileformat.parse_json(text, "net"), "net")
        points = lncapacity.points_from_arrays(X, y)
        cert = lncapacity.certify(net, points, workers=1)
    except InputError:
        return False, False
    return cert.all_certified, any(p.precision == 0 for p in cert.points)


def theorem_campaign(
    mutations: int,
    seed: int = 0,
    verify: Callable[[str, list, list], tuple[bool, bool]] = verify_theorem,
    sink: list | None = None,
    points: tuple[int, int] = (16, 28),
) -> tuple[Tally, int]:
    """Mutate theorem-certified nets (:func:`theorem_bases`, of ``points`` points) and their
    data; ``verify`` each, and let the oracle judge every acceptance.  Returns the tally and
    how many mutations the theorem decided points of.  ``sink`` collects
    ``(text, X, y, accepted, kind)``."""
    rng = random.Random(seed)
    bases = theorem_bases(rng, points=points)
    tally = Tally()
    by_theorem = 0
    for _ in range(mutations):
        d, X, y = rng.choice(bases)
        text, X2, y2, kind = mutate_theorem(d, X, y, rng)
        accepted, theorem = verify(text, X2, y2)
        by_theorem += theorem
        tally.add(kind, accepted, lambda t=text, a=X2, b=y2: _true(t, a, b))
        if sink is not None:
            sink.append((text, X2, y2, accepted, kind))
    return tally, by_theorem


def _true(text: str, X: list, y: list) -> bool:
    """The oracle on the data as a point set holds it: a point moved onto another of its label
    is one point; onto one of another label, no point set (never true)."""
    pairs = dict.fromkeys((tuple(x), label) for x, label in zip(X, y, strict=True))
    if len({x for x, _ in pairs}) != len(pairs):
        return False
    return forgery._true_net_text(text, [list(x) for x, _ in pairs], [lab for _, lab in pairs])


def lax(text: str, X: list, y: list) -> tuple[bool, bool]:
    """A verifier that accepts every readable net (for the oracle's own test)."""
    try:
        json.loads(text)
    except ValueError:
        return False, False
    return True, False
