"""A forger and an oracle, for the soundness suite (``tests/test_soundness.py``) and
``benchmarks/bench_soundness.py``.

The forger takes genuine artefacts (``lnnet/1`` nets built for random point sets, shattering
certificates) and mutates them as an attacker or a bad disk would.  The verifier under test
(:func:`lncapacity.fileformat.load`'s parser plus :func:`lncapacity.certify`, and
:func:`lncapacity.shatter.verify_shatter`) says accept or reject.  When it accepts, an oracle
that shares no code with the package decides whether the accepted claims are true: its own
number grammar (the README's), its own gadget decoder, and an mpmath forward pass at 300
significant digits.  A *forgery* is an accepted artefact the oracle finds false: a net that
misclassifies a point (or is not a valid ``lnnet/1`` file), a claimed margin above the true
margin, a labeling not covered exactly once, a summary that is not what the records establish,
an architecture other than width 3 and depth L.  A mutation that leaves a true artefact may be
accepted: the oracle decides.
"""

from __future__ import annotations

import gzip
import json
import random
import re
import tempfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from typing import Any

import mpmath

DIGITS = 300
TIE = mpmath.mpf(10) ** -250  # oracle margins within this of 0 count as undecided (not true)
NUMBER = re.compile(r"-?[0-9]+(?:/[0-9]+)?")  # lnnet/1 numbers, as the README defines them


# ---------------------------------------------------------------------------
# the oracle


class Invalid(Exception):
    """The oracle finds the artefact false (or not a valid file)."""


def number(text: Any) -> Fraction:
    if not isinstance(text, str) or not NUMBER.fullmatch(text) or len(text) > 9000:
        raise Invalid(f"not an lnnet/1 number: {str(text)[:30]!r}")
    p, _, q = text.partition("/")
    if q and int(q) == 0:
        raise Invalid("zero denominator")
    return Fraction(int(p), int(q or 1))


def mp(q: Fraction | mpmath.mpf) -> mpmath.mpf:
    if isinstance(q, mpmath.mpf):  # an algebraic weight, already evaluated
        return q
    return mpmath.mpf(q.numerator) / q.denominator


@dataclass
class Net:
    layers: list[tuple[list[list[Fraction]], list[Fraction]]]
    readout: tuple[list[list[Fraction]], list[Fraction]]
    eps: Fraction
    classes: list[Any]
    width: int | None
    input_dim: int
    norms: list[tuple[list[Fraction] | None, list[Fraction] | None]] = field(default_factory=list)
    """Each LayerNorm's (gain, bias), lnnet/1.1 "ln-affine"; empty when none has one."""
    groups: list[int] = field(default_factory=list)
    """Each layer's number of groups, lnnet/1.1 "groups" (LN-G); empty when none has groups."""
    rms: list[bool] = field(default_factory=list)
    """Whether each layer is an RMSNorm (lnnet/1.1 "rms", "norm": "rms"); empty when none is."""


def scores(net: Net, x: list[Fraction]) -> list[mpmath.mpf]:
    """The readout of ``net`` at ``x``, in mpmath at :data:`DIGITS` digits."""
    with mpmath.workdps(DIGITS):
        h = [mp(v) for v in x]
        eps = mp(net.eps)
        for i, (W, b) in enumerate(net.layers):
            y = [
                mpmath.fsum(mp(w) * hj for w, hj in zip(row, h, strict=True)) + mp(bi)
                for row, bi in zip(W, b, strict=True)
            ]
            g = net.groups[i] if net.groups else 1
            k = len(y) // g
            h = []
            centre = not (net.rms and net.rms[i])  # RMSNorm: y / sqrt(mean(y^2) + eps)
            for block in (y[j : j + k] for j in range(0, len(y), k)):  # each group: a LayerNorm
                mean = mpmath.fsum(block) / len(block) if centre else 0
                c = [yi - mean for yi in block]
                var = mpmath.fsum(ci * ci for ci in c) / len(c)
                if var + eps == 0:
                    raise Invalid("LayerNorm of a constant vector with eps = 0")
                s = mpmath.sqrt(var + eps)
                h += [ci / s for ci in c]
            gain, bias = net.norms[i] if net.norms else (None, None)
            if gain is not None:
                h = [mp(g) * hj for g, hj in zip(gain, h, strict=True)]
            if bias is not None:
                h = [hj + mp(c) for c, hj in zip(bias, h, strict=True)]
        R, r = net.readout
        return [
            mpmath.fsum(mp(w) * hj for w, hj in zip(row, h, strict=True)) + mp(ri)
            for row, ri in zip(R, r, strict=True)
        ]


def in_digits(net: Net) -> Net:
    """``net`` with every number an mpmath float at :data:`DIGITS` digits, as :func:`scores`
    would convert it (converted once, not again at every point)."""
    with mpmath.workdps(DIGITS):

        def row(v: list) -> list:
            return [mp(w) for w in v]

        def affine(Wb: tuple) -> tuple:
            return [row(r) for r in Wb[0]], row(Wb[1])

        return replace(
            net,
            layers=[affine(Wb) for Wb in net.layers],
            readout=affine(net.readout),
            eps=mp(net.eps),
            norms=[tuple(None if v is None else row(v) for v in gb) for gb in net.norms],
        )


def true_margin(net: Net, x: list[Fraction], label: Any) -> mpmath.mpf:
    """``z_label - max_other z`` (the oracle's value); Invalid if ``label`` is not a class."""
    if label not in net.classes:
        raise Invalid(f"label {label!r} is not a class")
    z = scores(net, x)
    c = net.classes.index(label)
    others = [zj for j, zj in enumerate(z) if j != c]
    with mpmath.workdps(DIGITS):
        return z[c] - max(others) if others else mpmath.inf


def oracle_net(obj: Any) -> Net:
    """An lnnet/1 object, or lnnet/1.1 with LayerNorm gains and biases, algebraic weights and
    LayerNorms in groups, read by the manual alone; Invalid if it is not one (or needs another
    feature)."""
    if not isinstance(obj, dict) or obj.get("format") not in ("lnnet/1", "lnnet/1.1"):
        raise Invalid("not lnnet/1")
    requires = obj.get("requires", []) if obj["format"] == "lnnet/1.1" else []
    known = {"ln-affine", "algebraic", "groups", "widths", "rms"}
    if not isinstance(requires, list) or not set(requires) <= known:
        raise Invalid("requires")
    radicals = oracle_radicals(obj.get("radicals")) if "algebraic" in requires else None
    if radicals is None and "radicals" in obj:
        raise Invalid("radicals without algebraic")
    n, d = obj.get("width"), obj.get("input_dim")
    if not (n is None and "widths" in requires) and (type(n) is not int or n < 1):
        raise Invalid("width")  # (null with "widths": each layer's width is its rows)
    if type(d) is not int or d < 1:
        raise Invalid("input_dim")
    classes = obj.get("classes")
    if not isinstance(classes, list) or not classes or len(set(map(repr, classes))) != len(classes):
        raise Invalid("classes")
    if not all(type(c) in (int, str) for c in classes):
        raise Invalid("classes")

    def weight(v: Any) -> Fraction | mpmath.mpf:
        if radicals is not None and isinstance(v, dict):
            k = v.get("ref")
            if set(v) != {"ref"} or type(k) is not int or not 0 <= k < len(radicals):
                raise Invalid("ref")
            return radicals[k]
        return number(v)

    def affine(a: Any, rows: int, cols: int) -> tuple[list[list[Fraction]], list[Fraction]]:
        if (
            not isinstance(a, dict)
            or not isinstance(a.get("W"), list)
            or not isinstance(a.get("b"), list)
        ):
            raise Invalid("affine")
        if len(a["W"]) != rows or len(a["b"]) != rows:
            raise Invalid("shape")
        if any(not isinstance(r, list) or len(r) != cols for r in a["W"]):
            raise Invalid("shape")
        return [[weight(w) for w in r] for r in a["W"]], [weight(v) for v in a["b"]]

    def norm(a: dict, n: int) -> tuple[list[Fraction] | None, list[Fraction] | None]:
        ln = a.get("ln")
        if ln is None:
            return None, None
        if "ln-affine" not in requires or not isinstance(ln, dict) or set(ln) - {"gain", "bias"}:
            raise Invalid("ln")
        parts = [ln.get(k) for k in ("gain", "bias")]
        if any(v is not None and (not isinstance(v, list) or len(v) != n) for v in parts):
            raise Invalid("ln shape")
        return tuple(None if v is None else [number(x) for x in v] for v in parts)  # type: ignore

    def rms(a: Any) -> bool:
        if not isinstance(a, dict) or "norm" not in a:
            return False
        if "rms" not in requires or a["norm"] not in ("ln", "rms"):
            raise Invalid("norm")
        return a["norm"] == "rms"

    def groups(a: dict, n: int) -> int:
        if "groups" not in a:
            return 1
        g, least = a["groups"], 1 if rms(a) else 2  # a centred feature alone is 0/0
        if "groups" not in requires or type(g) is not int or g < 1 or n % g or n // g < least:
            raise Invalid("groups")
        return g

    def rows(a: Any) -> int:
        """The layer's width: the net's, or (lnnet/1.1 "widths", width null) its own rows."""
        if n is not None:
            return n
        least = 1 if rms(a) else 2  # an RMSNorm of one feature is its sign
        if not isinstance(a, dict) or not isinstance(a.get("W"), list) or len(a["W"]) < least:
            raise Invalid("widths")
        return len(a["W"])

    layers = obj.get("layers")
    if not isinstance(layers, list):
        raise Invalid("layers")
    kinds = [rms(a) for a in layers]
    if n is not None and n < 2 and not all(kinds):
        raise Invalid("width")
    fan_in, out, norms, gs = d, [], [], []
    for a in layers:
        width = rows(a)
        out.append(affine(a, width, fan_in))
        norms.append(norm(a, width))
        gs.append(groups(a, width))
        fan_in = width
    eps = number(obj.get("eps"))
    if eps < 0:
        raise Invalid("eps")
    R = affine(obj.get("readout"), len(classes), fan_in)
    grouped = gs if any(g != 1 for g in gs) else []
    affine_parts = norms if any(map(any, norms)) else []
    return Net(out, R, eps, classes, n, d, affine_parts, grouped, kinds if any(kinds) else [])


def oracle_radicals(entries: Any) -> list[mpmath.mpf]:
    """The values of a radical program (lnnet/1.1 "algebraic") at :data:`DIGITS` digits.

    A root entry is found by bisection of its interval, which must show a sign change (that it
    is the only root there is the reader's check; the oracle takes the one bisection finds).
    """
    if not isinstance(entries, list) or not entries:
        raise Invalid("radicals")
    vals: list[mpmath.mpf] = []
    ops = {"add": "__add__", "sub": "__sub__", "mul": "__mul__", "div": "__truediv__"}
    with mpmath.workdps(DIGITS + 20):
        for e in entries:
            if isinstance(e, str):
                vals.append(mp(number(e)))
                continue
            if not isinstance(e, dict):
                raise Invalid("radical entry")
            args = [e.get(k) for k in e if k not in ("lo", "hi")]
            if len(e) == 1 and next(iter(e)) in ops:
                i, j = _earlier(args[0], 2, len(vals))
                if next(iter(e)) == "div" and abs(vals[j]) < TIE:
                    raise Invalid("division by 0")
                vals.append(getattr(vals[i], ops[next(iter(e))])(vals[j]))
            elif set(e) == {"sqrt"}:
                (i,) = _earlier([e["sqrt"]], 1, len(vals))
                if not vals[i] > TIE:
                    raise Invalid("square root of a number <= 0")
                vals.append(mpmath.sqrt(vals[i]))
            elif set(e) == {"root", "lo", "hi"} and isinstance(e["root"], list):
                coeffs = [mp(number(c)) for c in e["root"]]
                lo, hi = mp(number(e["lo"])), mp(number(e["hi"]))

                def f(x: mpmath.mpf, coeffs: list = coeffs) -> mpmath.mpf:
                    return mpmath.polyval(coeffs[::-1], x)

                if not lo <= hi or f(lo) * f(hi) > 0:
                    raise Invalid("no sign change")
                for _ in range(4 * DIGITS):  # 4 bits a step of 10 digits: far past DIGITS
                    mid = (lo + hi) / 2
                    lo, hi = (mid, hi) if f(lo) * f(mid) > 0 else (lo, mid)
                vals.append((lo + hi) / 2)
            else:
                raise Invalid("radical entry")
    return vals


def _earlier(v: Any, count: int, k: int) -> list[int]:
    """``count`` indices of entries before entry ``k``."""
    v = v if isinstance(v, list) else [v]
    if len(v) != count or any(type(i) is not int or not 0 <= i < k for i in v):
        raise Invalid("operand")
    return v


def net_is_true(obj: Any, X: list[list[Fraction]], y: list[Any]) -> bool:
    """Whether ``obj`` is a valid lnnet/1 net that classifies every ``(X[k], y[k])``."""
    try:
        net = oracle_net(obj)
        if net.input_dim != len(X[0]):
            return False
        net = in_digits(net)
        return all(true_margin(net, x, label) > TIE for x, label in zip(X, y, strict=True))
    except Invalid:
        return False


U, V = (1, -1, 0), (1, 1, -2)


def oracle_gadget(g: Any, d: int, depth: int, eps: Fraction) -> Net:
    """A gadget record decoded by its definition: layer ``h -> S((a.h - c) u + beta v)``."""
    if not isinstance(g, dict) or not isinstance(g.get("layers"), list):
        raise Invalid("gadget")
    if len(g["layers"]) != depth:
        raise Invalid("depth")
    read = [number(v) for v in g.get("projection", [])]
    if len(read) != d:
        raise Invalid("projection")
    layers = []
    for spec in g["layers"]:
        c, beta, S = (number(spec.get(k)) for k in ("centre", "offset", "scale"))
        W = [[S * ui * aj for aj in read] for ui in U]
        b = [S * (beta * vi - c * ui) for ui, vi in zip(U, V, strict=True)]
        layers.append((W, b))
        alpha, gamma = (number(v) for v in spec.get("read", ["1", "0"]))
        read = [alpha * vi + gamma * ui for ui, vi in zip(U, V, strict=True)]
    fan_in = 3 if depth else d
    R = g.get("readout", {})
    if len(R.get("W", [])) != 2 or any(len(r) != fan_in for r in R["W"]) or len(R["b"]) != 2:
        raise Invalid("readout")
    readout = ([[number(w) for w in r] for r in R["W"]], [number(v) for v in R["b"]])
    return Net(layers, readout, eps, [0, 1], 3, d)


def labels(k: int, m: int) -> list[int]:
    return [(k >> i) & 1 for i in range(m)]


def certificate_is_true(text: str) -> bool:
    """Whether an lnnet-shatter/1 text makes only true claims (the oracle's reading)."""
    try:
        lines = [json.loads(x) for x in text.splitlines()]
        head, records, summary = lines[0], lines[1:-1], lines[-1]["summary"]
        X = [[number(v) for v in p] for p in head["points"]]
        m, depth, eps = len(X), head["depth"], number(head["eps"])
        if len({tuple(x) for x in X}) != m or type(depth) is not int or eps < 0:
            return False
        if head["labelings"] != 2**m or head["classes"] != [0, 1] or head["input_dim"] != len(X[0]):
            return False
        covered: list[int] = []
        low = mpmath.inf
        for rec in records:
            if ("net" in rec) == ("lnnet" in rec):
                return False
            if "net" in rec:
                net = oracle_gadget(rec["net"], len(X[0]), depth, eps)
            else:
                net = oracle_net(rec["lnnet"])
                rms = head.get("norm") == "rms"  # RMSNorm twins: width 2, every layer RMSNorm
                if (net.width, len(net.layers), net.input_dim) != (
                    2 if rms else 3,
                    depth,
                    len(X[0]),
                ):
                    return False
                if net.groups or (net.rms != ([True] * depth if rms and depth else [])):
                    return False
                if net.eps != eps or net.classes != [0, 1]:
                    return False
            # the complement's net: the record's net, everything kept, readout rows swapped
            swapped = replace(net, readout=(net.readout[0][::-1], net.readout[1][::-1]))
            comp = rec["complement"]
            if comp["labeling"] != rec["labeling"] ^ (2**m - 1):
                return False
            for k, n, claimed in (
                (rec["labeling"], net, rec["margins"]),
                (comp["labeling"], swapped, comp["margins"]),
            ):
                covered.append(k)
                if len(claimed) != m:
                    return False
                for x, label, c in zip(X, labels(k, m), claimed, strict=True):
                    t = true_margin(n, x, label)
                    if not t > TIE or not isinstance(c, (int, float)) or isinstance(c, bool):
                        return False
                    if not c <= t:  # a claimed lower bound above the truth (or NaN)
                        return False
                    low = min(low, t)
        if sorted(covered) != list(range(2**m)):
            return False
        claimed_min = min(c for r in records for c in [*r["margins"], *r["complement"]["margins"]])
        return (
            summary["points"] == m
            and summary["depth"] == depth
            and summary["labelings"] == 2**m
            and summary["certified"] == 2**m
            and summary["all_certified"] is True
            and summary["failures"] == []
            and summary["min_margin"] == claimed_min
            and summary["min_margin"] <= low
        )
    except (
        Invalid,
        KeyError,
        TypeError,
        ValueError,
        IndexError,
        AttributeError,
        ZeroDivisionError,
    ):
        return False


# ---------------------------------------------------------------------------
# the forger: nets


def _numbers(obj: Any, path: tuple = ()) -> list[tuple]:
    """Paths to every number string of a net (weights, biases, eps)."""
    if isinstance(obj, dict):
        skip = ("meta", "norm")  # notes, and a layer's normaliser (a name, not a number)
        return [p for k, v in obj.items() if k not in skip for p in _numbers(v, (*path, k))]
    if isinstance(obj, list):
        return [p for i, v in enumerate(obj) for p in _numbers(v, (*path, i))]
    return (
        [path] if isinstance(obj, str) and path and path[0] in ("layers", "readout", "eps") else []
    )


def _get(obj: Any, path: tuple) -> Any:
    for key in path:
        obj = obj[key]
    return obj


def _set(obj: Any, path: tuple, value: Any) -> None:
    _get(obj, path[:-1])[path[-1]] = value


def _frac(text: str) -> Fraction:
    p, _, q = text.partition("/")
    return Fraction(int(p), int(q or 1))


def _fmt(q: Fraction) -> str:
    return str(q.numerator) if q.denominator == 1 else f"{q.numerator}/{q.denominator}"


ENCODINGS = [
    lambda q: f"{float(q)!r}",
    lambda q: hex(int(q)),
    lambda q: "1/0",
    lambda q: "1e400",
    lambda q: " " + _fmt(q),
    lambda q: "+" + _fmt(q),
    lambda q: _fmt(q).replace("1", "\u0661"),
    lambda q: _fmt(q).replace("2", "\uff12"),
    lambda q: f"{-q.numerator}/-{q.denominator}",
    lambda q: float(q),
    lambda q: int(q),
    lambda q: "NaN",
    lambda q: str(int(q)) + "0" * 400,
    lambda q: "0x1p3",
]


def mutate_net(d: dict, rng: random.Random) -> tuple[str, str]:
    """A mutated copy of the lnnet/1 object ``d``, as text, and the mutation's name."""
    d = json.loads(json.dumps(d))
    paths = _numbers(d)
    kind = rng.choice(
        [
            "nudge",
            "sign",
            "readout-swap",
            "classes",
            "eps",
            "drop-layer",
            "dup-layer",
            "encode",
            "huge",
            "random-weight",
            "scale-layer",
            "width",
            "input_dim",
            "duplicate-key",
            "truncate",
            "byte",
            "zero-weight",
        ]
    )
    if kind in ("nudge", "sign", "encode", "huge", "random-weight", "zero-weight"):
        path = rng.choice(paths)
        q = _frac(_get(d, path))
        new: Any = {
            "nudge": lambda: _fmt(q + rng.choice([1, -1]) * Fraction(1, 10**30)),
            "sign": lambda: _fmt(-q if q else Fraction(1)),
            "encode": lambda: rng.choice(ENCODINGS)(q),
            "huge": lambda: _fmt(q * Fraction(10) ** rng.choice([400, -400])),
            "random-weight": lambda: _fmt(Fraction(rng.randint(-9, 9), rng.randint(1, 9))),
            "zero-weight": lambda: "0",
        }[kind]()
        _set(d, path, new)
    elif kind == "readout-swap":
        d["readout"]["W"].reverse()
        d["readout"]["b"].reverse()
    elif kind == "classes":
        d["classes"].reverse()
    elif kind == "eps":
        d["eps"] = rng.choice(["1", "1/2", "1/100000", "1000000", "0", "-1"])
    elif kind in ("drop-layer", "dup-layer") and d["layers"]:
        i = rng.randrange(len(d["layers"]))
        if kind == "drop-layer":
            d["layers"].pop(i)
        else:
            d["layers"].insert(i, d["layers"][i])
    elif kind == "scale-layer" and d["layers"]:  # LayerNorm forgets a positive scale when eps = 0
        a = rng.choice(d["layers"])
        f = Fraction(rng.randint(1, 9), rng.randint(1, 9)) * rng.choice([1, -1])
        a["W"] = [[_fmt(_frac(w) * f) for w in r] for r in a["W"]]
        a["b"] = [_fmt(_frac(v) * f) for v in a["b"]]
    elif kind == "width":
        d["width"] = rng.choice([2, 4, 5, True, "3", 3.0])
    elif kind == "input_dim":
        d["input_dim"] = rng.choice([1, 3, True, 2.0])
    text = json.dumps(d)
    if kind == "duplicate-key":
        text = text[:-1] + rng.choice([', "eps": "1"}', ', "classes": [1, 0]}', ', "layers": []}'])
    elif kind == "truncate":
        text = text[: rng.randrange(len(text))]
    elif kind == "byte":
        b = bytearray(text.encode())
        i = rng.randrange(len(b))
        b[i] = rng.choice(b'0123456789-/"[]{},:abc ')
        text = b.decode("utf-8", "replace")
    return text, kind


# ---------------------------------------------------------------------------
# the forger: shattering certificates


def mutate_certificate(text: str, rng: random.Random) -> tuple[bytes, bool, str]:
    """A mutated certificate: ``(file bytes, gzip?, mutation name)``."""
    lines = [json.loads(x) for x in text.splitlines()]
    head, records, summary = lines[0], lines[1:-1], lines[-1]
    kind = rng.choice(
        [
            "margin-up",
            "margin-down",
            "margin-nan",
            "drop",
            "duplicate",
            "swap",
            "point",
            "eps",
            "depth",
            "header-field",
            "summary",
            "gadget-nudge",
            "gadget-sign",
            "readout-swap",
            "complement",
            "labeling",
            "gzip-truncate",
            "gzip-corrupt",
            "byte",
            "folds",
            "layer-drop",
            "ln-drop",
            "ln-scale",
        ]
    )
    gz = False
    rec = rng.choice(records)
    key = "net" if "net" in rec else "lnnet"  # a gadget record, or an lnnet/1.1 one
    if kind in ("margin-up", "margin-down", "margin-nan"):
        where = rec if rng.random() < 0.5 else rec["complement"]
        i = rng.randrange(len(where["margins"]))
        x = where["margins"][i]
        where["margins"][i] = {
            "margin-up": lambda: rng.choice([x * 1.5, x + 1e-9, x * (1 + 2**-40), 1e300]),
            "margin-down": lambda: x / 2,
            "margin-nan": lambda: rng.choice([float("nan"), float("inf"), -x, None, "1"]),
        }[kind]()
    elif kind == "drop":
        records.remove(rec)
    elif kind == "duplicate":
        records.insert(rng.randrange(len(records)), rec)
    elif kind == "swap" and len(records) > 1:
        i, j = rng.sample(range(len(records)), 2)
        records[i], records[j] = records[j], records[i]
    elif kind == "point":
        p = rng.choice(head["points"])
        p[rng.randrange(len(p))] = _fmt(Fraction(rng.randint(-40, 40), rng.choice([1, 2, 16])))
    elif kind == "eps":
        head["eps"] = rng.choice(["1", "1/100000", "-1", "abc", 0])
    elif kind == "depth":
        head["depth"] = rng.choice([head["depth"] - 1, head["depth"] + 1, str(head["depth"])])
    elif kind == "header-field":
        key = rng.choice(["input_dim", "labelings", "classes", "points"])
        head[key] = rng.choice([0, 2, [1, 0], [0, 1, 2], 5, [[["0"]]], True, head[key]])
    elif kind == "summary":
        s = summary["summary"]
        key = rng.choice(sorted(s))
        s[key] = rng.choice([0, 1e300, False, True, [], [1], {}, s[key], -1, None])
    elif kind in ("gadget-nudge", "gadget-sign"):  # a number of the record's net
        g = rec[key]
        if key == "net":
            spots = [("projection", i) for i in range(len(g["projection"]))]
            spots += [("layers", i, k) for i, L in enumerate(g["layers"]) for k in L if k != "read"]
            spots += [("readout", "b", i) for i in range(2)]
            spots += [
                ("readout", "W", i, j) for i in range(2) for j in range(len(g["readout"]["W"][0]))
            ]
        else:  # weights, biases, LayerNorm gains and biases (algebraic references are not strings)
            spots = [p for p in _numbers(g) if p[0] != "eps"]
        path = rng.choice(spots)
        q = _frac(_get(g, path))
        if kind == "gadget-nudge":
            _set(g, path, _fmt(q + rng.choice([1, -1]) * Fraction(1, 10**30)))
        else:
            _set(g, path, _fmt(-q))
    elif kind == "readout-swap":
        rec[key]["readout"]["W"].reverse()
    elif kind == "complement":
        rec["complement"]["labeling"] ^= 1 << rng.randrange(1, len(head["points"]))
    elif kind == "labeling":
        rec["labeling"] += rng.choice([2, -2, 1])
    elif kind == "folds":
        rec["folds"] = rng.choice([0, head["depth"], -1, "x"])
    elif kind == "layer-drop" and rec[key]["layers"]:
        rec[key]["layers"].pop()
    elif kind in ("ln-drop", "ln-scale"):  # a LayerNorm's gain or bias dropped, or a gain halved
        lns = [L["ln"] for r in records if "lnnet" in r for L in r["lnnet"]["layers"] if "ln" in L]
        if lns:
            ln = rng.choice(lns)
            part = rng.choice(sorted(ln))
            if kind == "ln-drop":
                del ln[part]
            else:
                ln[part] = [_fmt(_frac(x) / 2) for x in ln[part]]
    out = "".join(json.dumps(x) + "\n" for x in [head, *records, summary])
    data = out.encode()
    if kind in ("gzip-truncate", "gzip-corrupt"):
        gz, data = True, gzip.compress(data)
        if kind == "gzip-truncate":
            data = data[: rng.randrange(len(data))]
        else:
            i = rng.randrange(10, len(data))
            data = data[:i] + bytes([data[i] ^ (1 << rng.randrange(8))]) + data[i + 1 :]
    elif kind == "byte":
        b = bytearray(data)
        i = rng.randrange(len(b))
        b[i] = rng.choice(b'0123456789-/"[]{},:.e ')
        data = bytes(b)
    return data, gz, kind


def file_text(data: bytes, gz: bool) -> str | None:
    """What the oracle reads: the decompressed text, or None if the file is not readable."""
    try:
        return (gzip.decompress(data) if gz else data).decode("utf-8")
    except (OSError, EOFError, zlib.error, UnicodeDecodeError):
        return None


# ---------------------------------------------------------------------------
# a campaign


@dataclass
class Tally:
    tried: int = 0
    rejected: int = 0
    accepted_true: int = 0
    forgeries: list[str] = field(default_factory=list)
    kinds: dict[str, int] = field(default_factory=dict)

    def add(self, kind: str, accepted: bool, true: Callable[[], bool]) -> None:
        self.tried += 1
        self.kinds[kind] = self.kinds.get(kind, 0) + 1
        if not accepted:
            self.rejected += 1
        elif true():
            self.accepted_true += 1
        else:
            self.forgeries.append(kind)


def random_sets(rng: random.Random, count: int) -> list[tuple[list[list[Fraction]], list[int]]]:
    """Small random binary point sets in R^1..R^3 (both labels present, distinct points)."""
    out = []
    while len(out) < count:
        m, d = rng.randint(3, 7), rng.randint(1, 3)
        X = {tuple(Fraction(rng.randint(-40, 40), 8) for _ in range(d)) for _ in range(m)}
        y = [rng.randint(0, 1) for _ in X]
        if len(set(y)) == 2:
            out.append(([list(x) for x in X], y))
    return out


def verify_net_text(text: str, points: Any) -> bool:
    """What ``lncapacity verify`` decides, through the library: parse, read, certify."""
    import lncapacity
    from lncapacity import fileformat
    from lncapacity.errors import InputError

    try:
        net = fileformat.from_dict(fileformat.parse_json(text, "net"), "net")
        return lncapacity.certify(net, points, workers=1).all_certified
    except InputError:
        return False


def verify_certificate_file(path: Path) -> bool:
    """What ``lncapacity verify-shatter`` decides, through the library."""
    from lncapacity.errors import InputError
    from lncapacity.shatter import verify_shatter

    try:
        summary, problems = verify_shatter(path, workers=1)
    except InputError:
        return False
    return summary.all_certified and not problems


def net_bases(rng: random.Random, count: int = 6) -> list[tuple[dict, list, list, Any]]:
    """Nets built for random sets, both methods, eps 0 and 1e-5: (lnnet/1 object, X, y, points)."""
    import lncapacity
    from lncapacity import fileformat

    built = []
    for i, (X, y) in enumerate(random_sets(rng, count)):
        method = ("runs", "pma")[i % 2]
        eps = ("0", "1/100000")[(i // 2) % 2]
        net = lncapacity.build(X, y, eps=eps, method=method)
        built.append((fileformat.to_dict(net), X, y, lncapacity.points_from_arrays(X, y)))
    return built


def net_campaign(
    mutations: int,
    seed: int = 0,
    verify: Callable[[str, Any], bool] = verify_net_text,
    sink: list | None = None,
    grouped: bool = False,
    rms: bool = False,
) -> Tally:
    """Mutate nets built for random sets; ``verify`` each, and let the oracle judge every
    acceptance.  ``sink`` collects ``(text, X, y, accepted, kind)`` of every mutation.
    ``grouped``: the nets made LN-G (:func:`grouped_net_bases`, :func:`mutate_grouped_net`);
    ``rms``: RMSNorm nets (:func:`rms_net_bases`, :func:`mutate_rms_net`)."""
    rng = random.Random(seed)
    if rms:
        built, mutate = rms_net_bases(rng), mutate_rms_net
    else:
        built = grouped_net_bases(rng) if grouped else net_bases(rng)
        mutate = mutate_grouped_net if grouped else mutate_net
    tally = Tally()
    for _ in range(mutations):
        d, X, y, points = rng.choice(built)
        text, kind = mutate(d, rng)
        accepted = verify(text, points)
        tally.add(kind, accepted, lambda text=text, X=X, y=y: _true_net_text(text, X, y))
        if sink is not None:
            sink.append((text, X, y, accepted, kind))
    return tally


def grouped(net: Any) -> Any:
    """The LN-Net ``net`` as an LN-G net of twice the width, computing exactly what it does.

    Every layer becomes two groups: the layer itself, and the layer times ``c`` (2 when
    ``eps = 0``: ``LN(2 y) = LN(y)``; 1 otherwise, a copy), so both groups output ``h``; the
    next map reads the mean of the two copies (``[W/2, W/2]``), as does the readout.  Made
    plain (one group of six), the same weights compute another function.
    """
    from flint import fmpq

    from lncapacity.model import Affine, LNNet, Norm

    c = fmpq(2) if net.eps == 0 else fmpq(1)
    half = fmpq(1, 2)
    layers = []
    for i, a in enumerate(net.layers):
        W = a.W if i == 0 else tuple(tuple(w * half for w in row) * 2 for row in a.W)
        layers.append(
            Affine(
                tuple(W) + tuple(tuple(w * c for w in row) for row in W),
                tuple(a.b) + tuple(v * c for v in a.b),
                a.meta,
            )
        )
    R = net.readout
    readout = Affine(tuple(tuple(w * half for w in row) * 2 for row in R.W), R.b, R.meta)
    width = 2 * net.width
    norms = tuple(Norm(groups=2) for _ in layers)
    return LNNet(net.input_dim, width, net.eps, tuple(layers), readout, net.classes, {}, norms)


def _built_bases(
    rng: random.Random, count: int, make: Callable[[list, list, str, str, int], Any]
) -> list[tuple[dict, list, list, Any]]:
    """``count`` nets ``make(X, y, eps, method, i)`` for random sets (methods ``runs`` and
    ``pma`` in turn, eps 0 and 1e-5), those with a layer: (lnnet/1.1 object, X, y, points)."""
    import lncapacity
    from lncapacity import fileformat

    built: list[tuple[dict, list, list, Any]] = []
    while len(built) < count:
        i = len(built)
        ((X, y),) = random_sets(rng, 1)
        method = ("runs", "pma")[i % 2]
        eps = ("0", "1/100000")[(i // 2) % 2]
        net = make(X, y, eps, method, i)
        if net.depth:  # a linear separation has no layer to group or normalise
            built.append((fileformat.to_dict(net), X, y, lncapacity.points_from_arrays(X, y)))
    return built


def grouped_net_bases(rng: random.Random, count: int = 4) -> list[tuple[dict, list, list, Any]]:
    """Nets built for random sets (both methods, eps 0 and 1e-5), made LN-G by :func:`grouped`:
    (lnnet/1.1 object, X, y, points)."""
    import lncapacity

    def make(X: list, y: list, eps: str, method: str, i: int) -> Any:
        net = lncapacity.build(X, y, eps=eps, method=method)
        return grouped(net) if net.depth else net

    return _built_bases(rng, count, make)


GROUP_KINDS = ["groups-value", "groups-drop", "requires-drop", "groups-swap", "groups-ln"]


def mutate_grouped_net(d: dict, rng: random.Random) -> tuple[str, str]:
    """A mutated copy of the LN-G net ``d`` (lnnet/1.1, "groups"): half the time a mutation of
    its groups, else one of :func:`mutate_net`'s."""
    if rng.random() < 0.5:
        return mutate_net(d, rng)
    d = json.loads(json.dumps(d))
    kind = rng.choice(GROUP_KINDS)
    layer = rng.choice(d["layers"])
    if kind == "groups-value":  # a number of groups that fits, or does not, or is no number
        layer["groups"] = rng.choice([1, 3, 6, 4, 0, -2, "2", True, 2.0, None, [2]])
    elif kind == "groups-drop":  # LayerNorm over the whole layer
        del layer["groups"]
    elif kind == "requires-drop":
        d["requires"].remove("groups")
    elif kind == "groups-swap":  # the two groups' rows exchanged
        k = len(layer["b"]) // 2
        layer["W"] = layer["W"][k:] + layer["W"][:k]
        layer["b"] = layer["b"][k:] + layer["b"][:k]
    else:  # a gain on one group only: the two copies no longer agree
        d["requires"] = sorted({*d["requires"], "ln-affine"})
        n = len(layer["b"])
        layer["ln"] = {"gain": ["2"] * (n // 2) + ["1"] * (n - n // 2)}
    return json.dumps(d), kind


def rms_net_bases(rng: random.Random, count: int = 4) -> list[tuple[dict, list, list, Any]]:
    """RMSNorm nets built for random sets through the correspondence (``arch="rms"``, both
    methods, eps 0 and 1e-5; the last ``"rms-g"``, RMSNorm in groups of 2): (lnnet/1.1
    object, X, y, points)."""
    import lncapacity

    def make(X: list, y: list, eps: str, method: str, i: int) -> Any:
        if i == count - 1:
            return lncapacity.build(X, y, eps=eps, arch="rms-g")
        return lncapacity.build(X, y, eps=eps, method=method, arch="rms")

    return _built_bases(rng, count, make)


RMS_KINDS = ["norm-drop", "norm-value", "rms-requires-drop", "norm-ln", "rms-groups"]


def mutate_rms_net(d: dict, rng: random.Random) -> tuple[str, str]:
    """A mutated copy of the RMSNorm net ``d`` (lnnet/1.1, "rms"): half the time a mutation of
    its normalisers, else one of :func:`mutate_net`'s."""
    if rng.random() < 0.5:
        return mutate_net(d, rng)
    d = json.loads(json.dumps(d))
    kind = rng.choice(RMS_KINDS)
    layer = rng.choice(d["layers"])
    if kind == "norm-drop":  # a LayerNorm where the net has an RMSNorm
        del layer["norm"]
    elif kind == "norm-value":
        layer["norm"] = rng.choice(["ln", "RMS", "rms ", 1, None, True, ["rms"], "layer", ""])
    elif kind == "rms-requires-drop":
        d["requires"].remove("rms")
    elif kind == "norm-ln":  # every layer a LayerNorm: the twin read as LayerNorms
        for a in d["layers"]:
            a["norm"] = "ln"
    else:  # RMSNorm in groups (of one feature, or more)
        d["requires"] = sorted({*d["requires"], "groups"})
        layer["groups"] = rng.choice([1, 2, len(layer["b"])])
    return json.dumps(d), kind


def _true_net_text(text: str, X: list, y: list) -> bool:
    try:
        obj = json.loads(text, object_pairs_hook=_no_duplicates)
    except (ValueError, RecursionError):
        return False
    return net_is_true(obj, X, y)


def _no_duplicates(pairs: list) -> dict:
    if len({k for k, _ in pairs}) != len(pairs):
        raise ValueError("duplicate key")
    return dict(pairs)


def shatter_bases(rng: random.Random) -> list[str]:
    """Genuine shattering certificates: depth 1 and 2, default and random points, eps 0 and 1e-5;
    and two whose records are lnnet/1.1 nets with LayerNorm gains and biases (see
    :func:`with_gains`)."""
    from lncapacity.shatter import shatter

    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, (depth, dim, eps) in enumerate([(1, 1, 0), (2, 1, 0), (1, 2, "1e-5"), (2, 2, 0)]):
            X = None
            if i >= 2:
                X = [
                    [Fraction(rng.randint(-40, 40), 16) for _ in range(dim)]
                    for _ in range(depth + 2)
                ]
            path = Path(tmp) / f"s{i}.jsonl"
            shatter(X, depth, eps, out=path, workers=1)
            out.append(path.read_text())
    out += [with_gains(out[1]), with_gains(out[1], doubling=True)]
    return out


def unfold(net: Any, norms: list) -> Any:
    """A net with the LayerNorm gains and biases ``norms`` that computes exactly what ``net`` does.

    Each gain and bias is undone in the next map (``W' = W diag(1/g)``, ``b' = b - W' beta``),
    so folding it (``LNNet.folded``) gives back ``net``'s weights.
    """
    from flint import fmpq

    maps = [*net.layers, net.readout]
    for i, norm in enumerate(norms):
        a = maps[i + 1]
        W = a.W
        if norm.gain is not None:
            W = tuple(tuple(w / g for w, g in zip(row, norm.gain, strict=True)) for row in W)
        b = a.b
        if norm.bias is not None:
            b = tuple(
                bi - sum((w * c for w, c in zip(row, norm.bias, strict=True)), fmpq(0))
                for row, bi in zip(W, b, strict=True)
            )
        maps[i + 1] = replace(a, W=W, b=b)
    return replace(net, layers=tuple(maps[:-1]), readout=maps[-1], norms=tuple(norms))


def with_gains(text: str, doubling: bool = False) -> str:
    """A depth-2 certificate of the default points rewritten with lnnet/1.1 records: each net
    given LayerNorm gains and biases undone in the next map (the same function, so the same
    margins), and the alternating labeling's net by ``pma --exact`` (algebraic weights).

    Where the readout is a threshold (rows ``r, -r``, biases ``-t, t``) the last LayerNorm gets
    gain 1/2 and a bias ``beta`` with ``R beta = -b/2``: the net with them dropped has exactly
    twice the margins, so a verifier that certifies the complement on that net (issue 28)
    accepts a complement margin inflated by up to 2.  With ``doubling`` that is the only
    LayerNorm with a gain (and no net is algebraic), so such a verifier accepts the whole file.
    """
    from flint import fmpq

    import lncapacity
    from lncapacity.arith import json_float, parse_rational
    from lncapacity.fileformat import from_gadget, to_dict
    from lncapacity.model import Norm
    from lncapacity.shatter import _margins, _swapped, labels_of

    lines = [json.loads(x) for x in text.splitlines()]
    head, records = lines[0], lines[1:-1]
    X = [tuple(parse_rational(v) for v in p) for p in head["points"]]
    m, mask = len(X), (1 << len(X)) - 1
    assert head["depth"] == 2 and head["eps"] == "0" and m == 4
    half = fmpq(1, 2)
    other = [
        Norm((fmpq(2), fmpq(-1, 3), fmpq(5, 2)), (half, fmpq(-1), fmpq(3, 7))),
        Norm((fmpq(1, 5), fmpq(3), fmpq(-7, 4))),
        Norm(None, (fmpq(-2), fmpq(1, 9), fmpq(4))),
    ]
    out = []
    for i, rec in enumerate(records):
        k = rec["labeling"]
        if k == 0b1010 and not doubling:
            net = lncapacity.build(X, labels_of(k, m), method="pma", exact=True, depth=2)
        else:
            net = from_gadget(rec["net"], input_dim=1, eps=fmpq(0), classes=(0, 1))
        (r0, r1), (b0, b1) = net.readout.W, net.readout.b
        rr = sum((w * w for w in r0), fmpq(0))
        if rr and r1 == tuple(-w for w in r0) and b1 == -b0:
            last = Norm((half,) * 3, tuple(-b0 / 2 * w / rr for w in r0))
        elif doubling and not rr:  # a constant readout: dropping a gain and bias changes nothing
            last = Norm((half,) * 3, (fmpq(1), fmpq(2), fmpq(3)))
        else:
            assert not doubling, "a readout that is neither a threshold nor constant"
            last = other[i % 3]
        gained = unfold(net, [Norm() if doubling else other[(i + 1) % 3], last])
        comp = k ^ mask
        # the margins of net, which gained computes exactly (and which has no gains to drop)
        margins, comp_margins = (
            [json_float(x) for x in _margins(n, X, labels_of(j, m))]
            for n, j in ((net, k), (_swapped(net), comp))
        )
        out.append(
            {
                "labeling": k,
                "folds": "search",
                "lnnet": to_dict(gained),
                "margins": margins,
                "complement": {"labeling": comp, "margins": comp_margins},
            }
        )
    summary = lines[-1]
    summary["summary"]["folds_histogram"] = {"search": 2 * len(out)}
    summary["summary"]["min_margin"] = min(
        c for r in out for c in (*r["margins"], *r["complement"]["margins"])
    )
    return "".join(json.dumps(x) + "\n" for x in [head, *out, summary])


def rms_shatter_bases(rng: random.Random) -> list[str]:
    """Genuine shattering certificates of RMSNorm nets (``shatter(..., rms=True)``): depth 1
    and 2, default and random points, eps 0 and 1e-5."""
    from lncapacity.shatter import shatter

    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, (depth, dim, eps) in enumerate([(2, 1, 0), (1, 2, "1e-5")]):
            X = None
            if i:
                X = [
                    [Fraction(rng.randint(-40, 40), 16) for _ in range(dim)]
                    for _ in range(depth + 2)
                ]
            path = Path(tmp) / f"r{i}.jsonl"
            shatter(X, depth, eps, out=path, workers=1, rms=True)
            out.append(path.read_text())
    return out


def shatter_campaign(
    mutations: int,
    seed: int = 0,
    verify: Callable[[Path], bool] = verify_certificate_file,
    sink: list | None = None,
    rms: bool = False,
) -> Tally:
    """Mutate shattering certificates; ``verify`` each; the oracle judges every acceptance.
    ``sink`` collects ``(bytes, gzip?, accepted, kind)`` of every mutation.  ``rms``: the
    certificates of RMSNorm nets (:func:`rms_shatter_bases`)."""
    rng = random.Random(seed)
    bases = rms_shatter_bases(rng) if rms else shatter_bases(rng)
    tally = Tally()
    with tempfile.TemporaryDirectory() as tmp:
        for n in range(mutations):
            data, gz, kind = mutate_certificate(rng.choice(bases), rng)
            path = Path(tmp) / f"c{n % 4}.jsonl{'.gz' if gz else ''}"
            path.write_bytes(data)
            accepted = verify(path)
            text = file_text(data, gz)
            tally.add(
                kind, accepted, lambda text=text: text is not None and certificate_is_true(text)
            )
            if sink is not None:
                sink.append((data, gz, accepted, kind))
    return tally
