"""Issue 19: the float64 interval chain, the vectorised certificate, progress and output."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest
from flint import arb, fmpq

from lncapacity import build, certify, points_from_arrays
from lncapacity import interval as iv
from lncapacity.arith import precision
from lncapacity.certify import scalar_chain, scalar_interval_pass
from lncapacity.cli import Bar, _margin_text
from lncapacity.shatter import fold_order


def _random_set(m: int, seed: int = 0):
    rng = np.random.default_rng([m, seed])
    X = rng.integers(-(2**20), 2**20, size=(m, 3)) / 2**18
    y = rng.integers(0, 2, m)
    y[:2] = (0, 1)
    return points_from_arrays(X, y)


def test_fast_outward_steps_pass_a_float():
    rng = np.random.default_rng(1)
    x = np.r_[
        rng.standard_normal(1000) * 10.0 ** rng.integers(-300, 300, 1000),
        [0.0, -0.0, 5e-324, -5e-324, 2.0**-1022, 1.0, -1.0, 2.0**1000, np.finfo(float).max / 2],
        rng.standard_normal(100) * 1e-310,
    ]
    assert (iv.down(x) <= np.nextafter(x, -np.inf)).all()
    assert (iv.up(x) >= np.nextafter(x, np.inf)).all()
    big = np.finfo(float).max
    with np.errstate(invalid="ignore"):
        assert iv.down(np.array([np.inf]))[0] == big and iv.up(np.array([-np.inf]))[0] == -big
        assert iv.down(np.array([-np.inf]))[0] == -np.inf and iv.up(np.array([np.inf]))[0] == np.inf


@pytest.mark.parametrize("seed", range(6))
def test_scalar_range_encloses_the_exact_range(seed):
    rng = np.random.default_rng(seed)
    q = [fmpq(int(v), 1 << 20) for v in rng.integers(-(2**21), 2**21, 5)]
    c, a1, a2 = q[0], q[1], q[2]
    g, k = abs(q[3]) + fmpq(1, 7), abs(q[4]) + fmpq(1, 3)
    f = iv.scalar_range(c, g, k, a1, a2)
    crit = float(c + a2 * k / (a1 * g)) if a1 != 0 else 0.0
    lo = np.r_[rng.uniform(-4, 4, 200), crit - 1e-3, crit - 1e-9]
    hi = lo + np.r_[rng.uniform(0, 2, 200), 2e-3, 0.0]
    out_lo, out_hi = f((lo, hi))
    with precision(200):
        for i in range(len(lo)):
            for t in np.linspace(0, 1, 9):  # the range, sampled exactly
                p = fmpq(*float(lo[i] + (hi[i] - lo[i]) * t).as_integer_ratio())
                p = min(
                    max(p, fmpq(*float(lo[i]).as_integer_ratio())),
                    fmpq(*float(hi[i]).as_integer_ratio()),
                )
                s = arb(p - c)
                v = (arb(a1) + arb(a2) * s) / (arb(g) * s * s + arb(k)).sqrt()
                assert out_lo[i] <= v.lower() and v.upper() <= out_hi[i]
            if lo[i] <= crit <= hi[i] and a1 != 0:  # the extremum is inside
                s = arb(a2 * k / (a1 * g))
                v = (arb(a1) + arb(a2) * s) / (arb(g) * s * s + arb(k)).sqrt()
                assert out_lo[i] <= v.lower() and v.upper() <= out_hi[i]


def test_chain_intervals_enclose_its_balls():
    points = _random_set(120)
    from lncapacity.construct.build import _normalise
    from lncapacity.construct.fold import Chain
    from lncapacity.construct.project import project
    from lncapacity.construct.runfold import interval_runs, merge_runs

    X, _, _ = _normalise(points.X)
    y = [int(v) for v in points.y]
    _, t = project(X, y)
    chain = Chain(t, fmpq(0))
    merge_runs(chain, y)
    lo, hi = chain.intervals
    chain.prec = 1024  # balls far tighter than the intervals: each must meet its interval
    chain.refresh()
    with precision(chain.prec):
        for k, v in enumerate(chain.values):
            assert v.rad() < 1e-200
            assert lo[k] <= v.upper() and v.lower() <= hi[k]
    # tight enough to tell the runs apart, not merely sound
    assert interval_runs(chain, np.asarray(y)) is not None


def test_certify_interval_pass_agrees_with_balls():
    points = _random_set(150)
    net = build(points, method="runs")
    fast = certify(net, points)
    slow = certify(net, points, intervals=False)
    assert fast.all_certified and slow.all_certified
    assert fast.precision == 53 and slow.precision > 53
    for a, b in zip(fast.points, slow.points, strict=True):
        assert a.margin <= b.margin_interval[1] and b.margin <= a.margin_interval[1]
        assert a.margin == pytest.approx(b.margin, rel=1e-6)
    labels = [net.classes.index(v) for v in points.y]
    mlo, _, zlo, zhi = scalar_interval_pass(scalar_chain(net.folded()), points.X, labels)
    assert (mlo > 0).all() and (zlo <= zhi).all()


def test_large_set_is_float_faithful_without_fallback():
    points = _random_set(1500)
    net = build(points, method="runs")
    assert net.meta["method"] == "runs" and "fallback" not in net.meta
    cert = certify(net, points)
    assert cert.all_certified and cert.precision == 53
    assert (net.predict(points.X) == np.asarray(points.y)).all()


def test_api_reads_number_strings():
    X = [["0.1", "0.2"], ["3/4", "1"], [Fraction(1, 3), "-2e-1"]]
    net = build(X, [0, 1, 0])
    assert certify(net, X, [0, 1, 0]).all_certified


def test_bar_prints_plain_lines_off_a_tty(monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    bar = Bar("folding", True, tty=False)
    bar.PERIOD = 0.0
    bar(3, 10)
    bar.note("method runs gave way to pma: why")
    bar(10, 10)  # the end: no line
    bar.close()
    lines = err.getvalue().splitlines()
    assert lines[0].startswith("lncapacity: folding 3/10 (")
    assert lines[1] == "lncapacity: method runs gave way to pma: why"
    assert len(lines) == 2
    quiet = Bar("folding", False, tty=False)
    quiet.PERIOD = 0.0
    quiet(1, 2)
    quiet.note("x")
    assert len(err.getvalue().splitlines()) == 2


def test_output_helpers():
    items = {"10": 1, "2": 3, "0": 1, "search": 2, "1": 1}
    assert [k for k, _ in sorted(items.items(), key=fold_order)] == ["0", "1", "2", "10", "search"]
    assert _margin_text(0.0) == "> 0 (below 1e-308)"
    assert float(_margin_text(0.1)) == 0.1


def test_require_float_fails_the_run(tmp_path):
    points = _random_set(200)
    rows = ["x1,x2,x3,label"] + [
        ",".join(str(v) for v in x) + f",{label}"
        for x, label in zip(points.X, points.y, strict=True)
    ]
    data = tmp_path / "d.csv"
    data.write_text("\n".join(rows) + "\n")
    base = [sys.executable, "-m", "lncapacity", "certify", str(data), "--json", "--quiet"]
    base += ["--method", "runs"]  # deep, so float32 is likely to miss some points; quick
    ok = subprocess.run([*base, "--float", "float64", "--require-float", "float64"],
                        capture_output=True, text=True)  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    s = json.loads(ok.stdout)
    assert s["float"]["float64"]["agree"] == 200 and s["min_certified_margin_text"]
    assert s["torch_skipped"] is False
    bad = subprocess.run([*base, "--float", "float64", "--require-float", "float32"],
                         capture_output=True, text=True)  # fmt: skip
    s = json.loads(bad.stdout)
    if s["float"]["float32"]["agree"] < 200:
        assert bad.returncode == 2
        assert bad.stderr.startswith("lncapacity: error: --require-float: float32 misclassifies")
    else:  # pragma: no cover - float32 happened to get every point
        assert bad.returncode == 0
    unknown = subprocess.run([*base, "--require-float", "float16"], capture_output=True, text=True)
    assert unknown.returncode == 2 and "unknown backend" in unknown.stderr


def _runs_chain(m: int):
    from lncapacity.construct.build import _normalise
    from lncapacity.construct.fold import Chain
    from lncapacity.construct.project import project
    from lncapacity.construct.runfold import merge_runs

    points = _random_set(m)
    X, _, _ = _normalise(points.X)
    y = [int(v) for v in points.y]
    _, t = project(X, y)
    chain = Chain(t, fmpq(0))
    merge_runs(chain, y)
    return chain, np.asarray(y)


def test_tightener_encloses_each_value_narrowly():
    from lncapacity.construct.runfold import TIGHT_PRECISION, Tightener

    chain, _ = _runs_chain(120)
    tight = Tightener()
    chain.prec = 1024
    chain.refresh()
    with precision(chain.prec):
        balls = chain.values
    for k in range(0, len(balls), 7):
        with precision(TIGHT_PRECISION):
            a, b = tight._enclosure(chain, k)
            assert a.rad() == 0 and b.rad() == 0 and a <= b
            assert float(b - a) < 2.0**-150  # the range form: no dependency loss per layer
        with precision(chain.prec):
            assert not (balls[k] < a) and not (balls[k] > b)  # each contains the exact value
    # cached: advancing over a step pushed later gives the same as starting afresh
    step = chain.steps[-1]
    chain.pop()
    fresh = Tightener()
    with precision(TIGHT_PRECISION):
        early = fresh._enclosure(chain, 3)
        chain.push(step)
        assert fresh._enclosure(chain, 3) == Tightener()._enclosure(chain, 3)
        assert early != fresh._enclosure(chain, 3)


def test_tightener_range_holds_the_extremum():
    from lncapacity.construct.runfold import TIGHT_PRECISION, Tightener

    chain, _ = _runs_chain(60)
    step = next(s for s in chain.steps if s.read[1] != 0)  # a fold point off the centre
    S, beta = step.scale, step.offset
    alpha, gamma = step.read
    c, g, k = step.centre, 2 * S * S / 3, 2 * S * S * beta * beta
    a1, a2 = 6 * alpha * beta * S, 2 * gamma * S
    star = c + a2 * k / (a1 * g)
    with precision(TIGHT_PRECISION):
        delta = arb(fmpq(1, 2**30))
        lo, hi = Tightener()._advance(step, fmpq(0), arb(star) - delta, arb(star) + delta)
        s = arb(star - c)
        peak = (arb(a1) + arb(a2) * s) / (arb(g) * s * s + arb(k)).sqrt()
        assert not (peak < lo) and not (peak > hi)  # the maximum, attained inside, is held
        assert float(hi - lo) < 2.0**-40  # flat at the extremum: a narrow range


def test_tightener_narrows_swallowed_gaps_soundly():
    """Intervals widened until they swallow the smallest label gaps (as outward rounding
    does over hundreds of layers at m = 20,000) are narrowed back where it matters."""
    from lncapacity.construct.runfold import Tightener, interval_runs

    chain, labels = _runs_chain(150)
    rs = interval_runs(chain, labels)
    assert rs is not None
    lo, hi = chain.intervals
    order, starts = rs
    rlo, rhi = np.minimum.reduceat(lo[order], starts), np.maximum.reduceat(hi[order], starts)
    widen = 0.6 * (rlo[1:] - rhi[:-1]).min()
    chain.intervals = (lo - widen, hi + widen)
    assert interval_runs(chain, labels) is None
    assert Tightener().tighten(chain, rs, labels)
    new_lo, new_hi = chain.intervals
    assert interval_runs(chain, labels) is not None
    changed = (new_lo > lo - widen) | (new_hi < hi + widen)
    assert 0 < changed.sum() < len(lo) // 2  # only the points at the swallowed gaps
    chain.prec = 1024
    chain.refresh()
    with precision(chain.prec):
        for k, v in enumerate(chain.values):
            assert new_lo[k] <= v.upper() and v.lower() <= new_hi[k]


@pytest.mark.slow
def test_twenty_thousand_points_without_fallback():
    """Issue 19's target: m = 20,000 random points in R^3 (a few minutes on 2 cores)."""
    points = _random_set(20000)
    net = build(points, method="runs")
    assert net.meta["method"] == "runs" and "fallback" not in net.meta
    assert net.depth <= points.m - 2
    assert certify(net, points).all_certified
    assert (net.predict(points.X) == np.asarray(points.y)).all()


def test_deep_chains_certify_in_balls_at_the_starting_precision():
    """Each layer's range (exact ends) instead of plain ball evaluation: no bit lost per
    layer to dependency, so a depth-171 net certifies at 128 bits (it took 512), with
    margins inside those of the model's generic forward pass at 2048 bits."""
    points = _random_set(400)
    net = build(points, method="runs")
    assert net.depth > 150
    cert = certify(net, points, intervals=False, workers=1)
    assert cert.all_certified and cert.precision == 128
    labels = [net.classes.index(v) for v in points.y]
    with precision(2048):
        generic = net.map(arb)
        for k in range(0, points.m, 37):
            z = generic.forward([arb(v) for v in points.X[k]], arb.sqrt)
            c = labels[k]
            d = min((z[c] - z[j] for j in range(len(z)) if j != c), key=lambda b: b.mid())
            lo, hi = cert.points[k].margin_interval
            assert d.rad() < 1e-100 and lo <= d.lower() and d.upper() <= hi  # sound
            assert hi - lo <= 2 * np.spacing(abs(hi))  # and narrow: float bounds a float apart


def test_ball_range_map_holds_the_extremum():
    from lncapacity.interval import scalar_range_balls

    s0, g, k, a, b = fmpq(1, 3), fmpq(2, 3), fmpq(5, 7), fmpq(3, 2), fmpq(2)
    star = s0 + a * k / (b * g)  # b > 0: the maximum sqrt(b^2 / k + a^2 / g)
    with precision(192):
        step = scalar_range_balls(s0, g, k, b, a)
        d = arb(fmpq(1, 2**30))
        lo, hi = step(arb(star) - d, arb(star) + d)
        top = arb(b * b / k + a * a / g).sqrt()
        assert not (top > hi) and lo < top and float(hi - lo) < 2.0**-50
        lo, hi = step(arb(star) + d, arb(star) + 2 * d)  # beyond it: the ends alone
        assert top > hi
        lo2, hi2 = scalar_range_balls(s0, g, k, -b, -a)(arb(star) - d, arb(star) + d)
        assert not (-top < lo2) and hi2 > -top  # b < 0: the minimum


def test_tightener_starts_from_the_chains_start_balls():
    """A chain whose start is known only as balls (after circle layers): the enclosures
    follow those balls, not the placeholder ``t``."""
    from lncapacity.construct.fold import Chain
    from lncapacity.construct.runfold import TIGHT_PRECISION, Tightener

    runs, _ = _runs_chain(60)
    shift = fmpq(1, 3)
    chain = Chain(runs.t, fmpq(0), start=lambda prec: [arb(v + shift) for v in runs.t])
    for step in runs.steps[:20]:
        chain.push(step)
    chain.prec = 1024
    chain.refresh()
    with precision(chain.prec):
        balls = chain.values
    plain = Chain(runs.t, fmpq(0))
    for step in runs.steps[:20]:
        plain.push(step)
    tight, other = Tightener(), Tightener()
    for k in range(0, 60, 5):
        with precision(TIGHT_PRECISION):
            a, b = tight._enclosure(chain, k)
            a0, b0 = other._enclosure(plain, k)
        with precision(chain.prec):
            assert not (balls[k] < a) and not (balls[k] > b)
            assert (a0, b0) != (a, b)
