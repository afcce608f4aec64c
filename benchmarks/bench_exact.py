"""Exact merges (``--method pma --exact``) against naive SymPy radicals, m = 6..12.

Data: ``m`` collinear points ``0, 1, ..., m - 1`` with alternating labels, the
paper's worst case (depth ``m - 2``).  ``exact``: :func:`lncapacity.build` with
``method="pma", exact=True`` (radical straight-line programs, merges equal by
construction, order by balls) and its certificate.  ``sympy``: the same
algorithm on SymPy radical expressions, values of one label
numerically equal (60 digits) proven equal by ``simplify(a - b) == 0``, order by
60-digit approximations (not even a proof); each case runs in
a subprocess capped at ``--cap`` seconds (default 60).

    PYTHONPATH=. python benchmarks/bench_exact.py [--cap 60] [--ms 4,5,6,7,8,9,10,11,12]
    PYTHONPATH=. python benchmarks/bench_exact.py --ms 4,5,6,8,12,20,50,100 --cap 5 \
        --markdown docs/tables/exact.md                # the manual's table (~40 s)
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import time

from markdown_table import Markdown, add_option


def exact_case(m: int) -> tuple[float, float, int, bool]:
    import lncapacity

    X = [[i] for i in range(m)]
    y = [i % 2 for i in range(m)]
    t0 = time.perf_counter()
    net = lncapacity.build(X, y, method="pma", exact=True)
    t1 = time.perf_counter()
    cert = lncapacity.certify(net, X, y)
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1, net.depth, cert.all_certified


def sympy_pma(m: int) -> int:
    """The binary PMA with SymPy radicals, naive: every value its own expression."""
    import sympy as sp

    vals = [sp.Integer(i) for i in range(m)]
    groups = [[i] for i in range(m)]
    y = [i % 2 for i in range(m)]
    depth = 0
    while True:
        approx = [sp.N(v, 60) for v in vals]
        order = sorted(range(len(vals)), key=lambda k: approx[k])
        merged: list[int] = []
        for k in order:  # same-label neighbours that are equal become one group
            last = merged[-1] if merged else None
            if last is not None and y[groups[last][0]] == y[groups[k][0]]:
                # numerically close: ask SymPy to prove equality exactly
                if abs(approx[last] - approx[k]) < 1e-40 and sp.simplify(vals[last] - vals[k]) == 0:
                    groups[last] = groups[last] + groups[k]
                    continue
            merged.append(k)
        vals = [vals[k] for k in merged]
        groups = [groups[k] for k in merged]
        labels = [y[g[0]] for g in groups]
        if sum(1 for i in range(len(labels)) if i == 0 or labels[i] != labels[i - 1]) <= 2:
            return depth
        j = next(k for k in range(1, len(labels)) if labels[k] == labels[0])
        c = (vals[0] + vals[j]) / 2
        half = sp.Rational(str(sp.N((vals[j] - vals[0]) / 2, 30)))
        beta = sp.nsimplify(half * sp.Rational(5773, 10000), rational=True)
        beta = sp.Rational(beta).limit_denominator(2**20)
        S = sp.Integer(1)
        vals = [
            6 * beta * S / sp.sqrt(2 * S**2 * (p - c) ** 2 / 3 + 2 * S**2 * beta**2) for p in vals
        ]
        depth += 1


def _sympy_worker(m: int, q: mp.Queue) -> None:
    t0 = time.perf_counter()
    depth = sympy_pma(m)
    q.put((time.perf_counter() - t0, depth))


def sympy_case(m: int, cap: float) -> tuple[float | None, int | None]:
    q: mp.Queue = mp.Queue()
    p = mp.Process(target=_sympy_worker, args=(m, q))
    p.start()
    p.join(cap)
    if p.is_alive():
        p.terminate()
        p.join()
        return None, None
    return q.get() if not q.empty() else (None, None)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cap", type=float, default=60.0, help="seconds per SymPy case")
    ap.add_argument("--ms", default="4,5,6,7,8,9,10,11,12")
    add_option(ap)
    args = ap.parse_args()
    md = Markdown(args.markdown)
    md.add("| m | depth | exact build s | certify s | certified | naive SymPy |")
    md.add("|---|---|---|---|---|---|")
    ms = [int(s) for s in args.ms.split(",")]
    print(
        f"{'m':>3} {'depth':>5} {'exact build':>12} {'certify':>9} {'certified':>9} {'sympy':>10}"
    )
    for m in ms:
        tb, tc, depth, ok = exact_case(m)
        ts, sdepth = sympy_case(m, args.cap)
        sym = f"> {args.cap:.0f} s" if ts is None else f"{ts:.2f} s"
        if sdepth is not None and sdepth != depth:
            sym += f" (depth {sdepth}!)"
        print(f"{m:>3} {depth:>5} {tb:>10.3f} s {tc:>7.3f} s {ok!s:>9} {sym:>10}", flush=True)
        md.add(f"| {m} | {depth} | {tb:.3f} | {tc:.3f} | {ok} | {sym} |")
    md.add()
    md.add(f"Naive SymPy: capped at {args.cap:g} s per case (`> {args.cap:.0f} s`: stopped there).")
    md.save()


if __name__ == "__main__":
    main()
