"""LN-G at scale: build, certify and verify at m = 10^4, 10^5, 10^6 (random points in R^3,
k = 2 random labels), depth 1 and 2, with the certificate by the margin theorems.

Each row runs in a process of its own and times, in wall seconds (CPU seconds of the process
and its workers in brackets; on a shared machine the wall time also measures the load, whose
average is printed before and after each row), the library calls:

* ``data``: ``points_from_arrays`` (the float array read exactly);
* ``build``: ``build(points, arch="ln-g", depth=L)``;
* ``certify``: ``certify(net, points)``: by the margin theorem (proofs/ln_g_steps.md Theorem 8,
  proofs/ln_g_depth.md Theorem 5), every point it does not decide by the generic pass;
* ``write``, ``read``: the net as an ``lnnet`` file (``fileformat.save``, ``fileformat.load``);
* ``verify``: ``certify`` of the net read back (what ``lncapacity verify`` does after reading);
* ``generic``: ``certify(net, points, theorems=False)``, the generic pass, up to
  ``--generic-up-to`` points times width (quadratic: skipped beyond).

and the peak resident memory, the net's width (first layer, second for depth 2), the file's
size, the points certified (and how many by the theorem).  Then the growth exponents of
build, certify and verify (least squares on log CPU seconds against log m: on a shared
machine the wall time measures the load too) and their estimates at 10^7 points.
``--cli m:depth,...`` adds the command line on those rows' data: ``lncapacity certify DATA.csv
--arch ln-g --float float64 --json --out NET`` and ``lncapacity verify NET DATA.csv --float
float64 --json``, with the summary's own build and certify seconds.

Run ``python benchmarks/bench_ln_g_scale.py [--rows 10000:1,10000:2,100000:1,100000:2,
1000000:2,1000000:1] [--generic-up-to 2e8] [--cli 10000:1,100000:2] [--markdown
docs/tables/ln_g_scale.md]``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from bench_ln_g import _cpu, _peak_mb
from markdown_table import Markdown, add_option

import lncapacity
from lncapacity import fileformat

ROWS = "10000:1,10000:2,100000:1,100000:2,1000000:2,1000000:1"
GENERIC_UP_TO = 2e8
"""Points times features (the widest layer) up to which a row also runs the generic pass."""


def random_set(m: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, 3))
    y = rng.integers(0, 2, m)
    y[:2] = [0, 1]
    return X, y


def one_row(m: int, depth: int, generic_up_to: float) -> dict[str, Any]:
    """One row, measured in this process."""
    X, y = random_set(m, seed=m + depth)
    out: dict[str, Any] = {"m": m, "depth": depth}

    def phase(name: str, f: Callable[[], Any]) -> Any:
        t, c = time.perf_counter(), _cpu()
        value = f()
        out[name] = (time.perf_counter() - t, _cpu() - c)
        return value

    points = phase("data", lambda: lncapacity.points_from_arrays(X, y))
    net = phase("build", lambda: lncapacity.build(points, arch="ln-g", depth=depth))
    out["widths"] = list(net.widths)
    cert = phase("certify", lambda: lncapacity.certify(net, points))
    out["certified"] = cert.certified
    out["by_theorem"] = sum(p.precision == 0 for p in cert.points)
    out["margin"] = cert.min_margin
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "net.json"
        phase("write", lambda: fileformat.save(net, path))
        out["file_mb"] = path.stat().st_size / 2**20
        try:
            again = phase("read", lambda: fileformat.load(path))
        except lncapacity.InputError as e:  # beyond the format's limits: nothing to verify
            out["refused"] = str(e).split(": ", 1)[-1]
            out["peak"] = _peak_mb()
            return out
    verified = phase("verify", lambda: lncapacity.certify(again, points))
    out["verified"] = verified.certified
    if m * max(again.widths) <= generic_up_to:
        generic = phase("generic", lambda: lncapacity.certify(again, points, theorems=False))
        out["generic_certified"] = generic.certified
        agree = all(
            p.verdict == q.verdict and p.margin_interval[0] <= q.margin_interval[1]
            for p, q in zip(verified.points, generic.points, strict=True)
        )
        out["agree"] = agree
    out["peak"] = _peak_mb()
    return out


def one_cli(m: int, depth: int) -> dict[str, Any]:
    """``certify`` and ``verify`` through the command line on the row's data (a CSV)."""
    X, y = random_set(m, seed=m + depth)
    out: dict[str, Any] = {"m": m, "depth": depth}
    env = os.environ | {"PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    with tempfile.TemporaryDirectory() as tmp:
        data, net = Path(tmp) / "data.csv", Path(tmp) / "net.json"
        rows = "\n".join(
            ",".join(repr(float(v)) for v in x) + f",{c}" for x, c in zip(X, y, strict=True)
        )
        data.write_text("x0,x1,x2,label\n" + rows + "\n")
        for name, args in (
            (
                "certify",
                ["certify", str(data), "--arch", "ln-g", "--depth", str(depth), "--out", str(net)],
            ),
            ("verify", ["verify", str(net), str(data)]),
        ):
            t = time.perf_counter()
            run = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "lncapacity",
                    *args,
                    "--float",
                    "float64",
                    "--json",
                    "--quiet",
                ],
                capture_output=True,
                text=True,
                env=env,
                check=False,
            )
            out[name] = time.perf_counter() - t
            summary = json.loads(run.stdout) if run.returncode == 0 else {}
            out[name + " inner"] = summary.get("seconds", {})
            out[name + " exit"] = run.returncode
    return out


def _load() -> str:
    return " ".join(f"{v:.1f}" for v in os.getloadavg())


def _t(r: dict, phase: str) -> str:
    if phase not in r:
        return "-"
    wall, cpu = r[phase]
    return f"{wall:.1f} ({cpu:.1f})"


def table(rows: str, generic_up_to: float, cli: str | None, md: Markdown) -> None:
    header = (
        "| m | depth | widths | data s | build s | certify s | write s | read s | verify s "
        "| generic s | certified (by theorem) | agree | file MB | peak MB | load before, after |"
    )
    md.out(header)
    md.out("|---" * 15 + "|")
    results, refusals = [], []
    for spec in rows.split(","):
        m, depth = map(int, spec.split(":"))
        before = _load()
        run = subprocess.run(
            [sys.executable, __file__, "--one", spec, "--generic-up-to", str(generic_up_to)],
            capture_output=True,
            text=True,
            check=True,
        )
        r = json.loads(run.stdout.strip().splitlines()[-1])
        results.append(r)
        agree = {True: "yes", False: "NO"}.get(r.get("agree"), "-")
        md.out(
            f"| {m:,} | {depth} | {', '.join(map(str, r['widths']))} | {_t(r, 'data')} "
            f"| {_t(r, 'build')} | {_t(r, 'certify')} | {_t(r, 'write')} | {_t(r, 'read')} "
            f"| {_t(r, 'verify')} | {_t(r, 'generic')} | {r['certified']:,} ({r['by_theorem']:,}) "
            f"| {agree} | {r['file_mb']:.0f} | {r['peak']:,} | {before}; {_load()} |"
        )
        if "refused" in r:
            refusals.append(f"* m = {m:,}, depth {depth}: not read back: {r['refused']}")
    md.out()
    if refusals:
        for line in refusals:
            md.out(line)
        md.out()
    md.out("Growth (least squares on log CPU seconds against log m) and the CPU seconds it")
    md.out("gives at 10^7 points:")
    md.out()
    for depth in sorted({r["depth"] for r in results}):
        rs = [r for r in results if r["depth"] == depth]
        if len({r["m"] for r in rs}) < 2:
            continue
        parts = []
        for phase in ("build", "certify", "verify", "read"):
            have = [r for r in rs if phase in r]
            if len({r["m"] for r in have}) < 2:
                continue
            x = np.log([r["m"] for r in have])
            t = np.log([r[phase][1] for r in have])
            slope, icpt = np.polyfit(x, t, 1)
            at = math.exp(icpt + slope * math.log(1e7))
            parts.append(f"{phase} m^{slope:.2f} (~{at:,.0f} s at 10^7)")
        md.out(f"* depth {depth}: " + "; ".join(parts))
    if cli:
        md.out()
        md.out(
            "| m | depth | `certify` command s (its build, certify) | exit | `verify` command s "
            "(its certify) | exit | load |"
        )
        md.out("|---" * 7 + "|")
        for spec in cli.split(","):
            run = subprocess.run(
                [sys.executable, __file__, "--one-cli", spec],
                capture_output=True,
                text=True,
                check=True,
            )
            c = json.loads(run.stdout.strip().splitlines()[-1])
            ci, vi = c["certify inner"], c["verify inner"]
            m, depth = c["m"], c["depth"]
            md.out(
                f"| {m:,} | {depth} | {c['certify']:.1f} ({ci.get('build', 0):.1f}, "
                f"{ci.get('certify', 0):.1f}) | {c['certify exit']} | {c['verify']:.1f} "
                f"({vi.get('certify', 0):.1f}) | {c['verify exit']} | {_load()} |"
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default=ROWS, help="m:depth,... (default %(default)s)")
    ap.add_argument("--generic-up-to", type=float, default=GENERIC_UP_TO)
    ap.add_argument("--cli", metavar="M:DEPTH,...", help="also the command line on these rows")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--one-cli", help=argparse.SUPPRESS)
    add_option(ap)
    args = ap.parse_args()
    if args.one:
        m, depth = map(int, args.one.split(":"))
        print(json.dumps(one_row(m, depth, args.generic_up_to)))
        return
    if args.one_cli:
        m, depth = map(int, args.one_cli.split(":"))
        print(json.dumps(one_cli(m, depth)))
        return
    md = Markdown(args.markdown)
    table(args.rows, args.generic_up_to, args.cli, md)
    md.save()


if __name__ == "__main__":
    main()
