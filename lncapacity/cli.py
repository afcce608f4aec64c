"""The ``lncapacity`` command line: a thin layer over the library.

Exit codes: 0 success; 2 bad input, or a certificate that fails; 1 an internal
error (a bug: please report it); 128 + the signal's number when interrupted (130
Ctrl-C/SIGINT, 143 SIGTERM, 129 SIGHUP), leaving no partial file and no worker.
Output files are written atomically and only after every check has passed.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from . import __version__, fileformat, floats
from .arith import json_float
from .certify import Certificate, certify
from .construct import DEFAULT_METHOD, METHODS, build
from .data import PointSet, load_points
from .errors import ConstructionError, InputError
from .model import LNNet

EXIT_OK, EXIT_INTERNAL, EXIT_BAD = 0, 1, 2


class Bar:
    """A one-line progress bar on stderr, drawn only when stderr is a terminal."""

    def __init__(self, label: str, enabled: bool) -> None:
        self.label, self.enabled, self.last, self.drawn = label, enabled, 0.0, False

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if not self.enabled or (now - self.last < 0.1 and done < total):
            return
        self.last, self.drawn = now, True
        frac = done / total if total else 1.0
        filled = int(30 * frac)
        sys.stderr.write(f"\r{self.label:<11} [{'#' * filled}{'.' * (30 - filled)}] {done}/{total}")
        sys.stderr.flush()

    def close(self) -> None:
        if self.drawn:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="lncapacity",
        description="Certified LayerNorm networks (Ni et al., ICML 2024): build, certify, verify.",
    )
    p.add_argument("--version", action="version", version=f"lncapacity {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def output(
        q: argparse.ArgumentParser, certificate: bool = False, workers: bool = False
    ) -> None:
        if certificate:
            q.add_argument("--certificate", metavar="CERT.json", help="write the certificate")
            q.add_argument(
                "--float",
                metavar="B1,B2",
                help=f"comma-separated float backends to check, from {', '.join(floats.BACKENDS)} "
                "(default: all available)",
            )
        if workers:
            q.add_argument(
                "--workers",
                type=_positive,
                metavar="N",
                help="processes (default: all cores; never more than there are chunks of work)",
            )
        q.add_argument("--json", action="store_true", help="print a JSON summary instead of text")
        q.add_argument("--quiet", action="store_true", help="no progress bar")

    c = sub.add_parser(
        "certify",
        help="build a width-3 LN-Net for labelled points and certify it",
        description="Build a width-3 LN-Net that classifies every point of DATA (CSV with a "
        "'label' column, .npy with labels in the last column, or .npz with X and y), certify "
        "it with rigorous ball arithmetic, and check it in float64 and float32 (NumPy, and "
        "PyTorch's own modules when torch is installed).",
    )
    c.add_argument("data", metavar="DATA")
    c.add_argument("--out", metavar="NET.json", help="write the net (lnnet/1)")
    c.add_argument("--eps", default="0", help="LayerNorm epsilon, exact (default 0; 1e-5 as torch)")
    c.add_argument("--depth", type=int, metavar="L", help="pad to exactly L LayerNorm layers")
    c.add_argument(
        "--method",
        default=DEFAULT_METHOD,
        choices=list(METHODS),
        help="construction: runs (one label run fewer per layer, float-faithful; default), "
        "pma (the paper's algorithm) or circle (whole circle maps per layer, far shallower; "
        "two classes)",
    )
    c.add_argument("--seed", type=int, default=0, help="seed for the choice of projection")
    output(c, certificate=True)

    v = sub.add_parser(
        "verify",
        help="independently re-certify a saved net on labelled points",
        description="Load an lnnet/1 file and certify, from scratch, that it classifies every "
        "point of DATA (and check it in float64 and float32, as certify does); exit 2 if any "
        "point is not certified.",
    )
    v.add_argument("net", metavar="NET.json")
    v.add_argument("data", metavar="DATA")
    output(v, certificate=True)

    s = sub.add_parser(
        "shatter",
        help="certify that depth-L nets realise every labeling of L + 2 points",
        description="For every one of the 2^(L+2) labelings of L + 2 points (default: 0, 1, ..., "
        "L + 1 on a line), build a width-3 LN-Net with exactly L LayerNorm layers and certify it; "
        "write one shattering certificate (JSON Lines; gzip if the name ends in .gz).",
    )
    s.add_argument("--depth", type=int, required=True, metavar="L")
    s.add_argument(
        "--points", metavar="FILE", help="L + 2 points in the DATA format (labels ignored)"
    )
    s.add_argument("--eps", default="0", help="LayerNorm epsilon, exact (default 0)")
    s.add_argument("--out", metavar="CERT.jsonl", help="default: shatter-L<depth>.jsonl")
    s.add_argument(
        "--search",
        action="store_true",
        help="allow more than L + 2 points: labelings the construction cannot do at depth L are "
        "searched for numerically (PyTorch) and certified; the rest are reported",
    )
    s.add_argument(
        "--random", type=int, metavar="N", help="N random points (default with --search: L + 3)"
    )
    s.add_argument("--dim", type=int, default=2, help="dimension of --random points (default 2)")
    s.add_argument("--seed", type=int, default=0, help="seed of the --random points")
    s.add_argument("--restarts", type=int, default=16, help="search restarts per labeling")
    output(s, workers=True)

    vs = sub.add_parser(
        "verify-shatter",
        help="independently re-check a shattering certificate",
        description="Decode every net of a shattering certificate, certify both labelings it "
        "covers from scratch, and check that every labeling appears exactly once; exit 2 on any "
        "problem.",
    )
    vs.add_argument("certificate", metavar="CERT.jsonl")
    output(vs, workers=True)
    return p


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text[:40]!r}")
    return n


class Interrupted(KeyboardInterrupt):
    """A termination signal (SIGTERM, SIGHUP) turned into an exception, as Ctrl-C is."""

    def __init__(self, signo: int) -> None:
        super().__init__(signo)
        self.signo = signo


def _raise_interrupted(signo: int, _frame: object) -> None:
    raise Interrupted(signo)


STOP_SIGNALS = tuple(getattr(signal, n) for n in ("SIGTERM", "SIGHUP") if hasattr(signal, n))
"""Signals that stop a run as Ctrl-C (SIGINT) does: temporary files removed, workers stopped,
one line, exit code 128 + the signal's number (130 SIGINT, 143 SIGTERM, 129 SIGHUP)."""


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        previous = {s: signal.signal(s, _raise_interrupted) for s in STOP_SIGNALS}
    except ValueError:  # not the main thread: leave the signals alone
        previous = {}
    try:
        return _main(args)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _main(args: argparse.Namespace) -> int:
    try:
        return COMMANDS[args.command](args)
    except InputError as e:
        print(f"lncapacity: error: {e}", file=sys.stderr)
        return EXIT_BAD
    except ConstructionError as e:
        print(f"lncapacity: construction failed: {e}", file=sys.stderr)
        return EXIT_INTERNAL
    except KeyboardInterrupt as e:
        signo = e.signo if isinstance(e, Interrupted) else signal.SIGINT
        print(f"lncapacity: interrupted ({signal.Signals(signo).name})", file=sys.stderr)
        return 128 + signo
    except BrokenPipeError:  # e.g. `lncapacity certify ... --json | head`: the reader left
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except Exception as e:  # a bug: one line, unless asked for the traceback
        if os.environ.get("LNCAPACITY_DEBUG"):
            raise
        print(
            f"lncapacity: internal error: {type(e).__name__}: {e} "
            "(set LNCAPACITY_DEBUG=1 for the traceback, and please report it)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL


def _run(label: str, quiet: bool, f: Callable[[Bar], Any]) -> tuple[Any, float]:
    bar = Bar(label, not quiet and sys.stderr.isatty())
    start = time.perf_counter()
    try:
        return f(bar), time.perf_counter() - start
    finally:
        bar.close()


def cmd_certify(args: argparse.Namespace) -> int:
    fileformat.check_outputs({"--out": args.out, "--certificate": args.certificate}, [args.data])
    if args.float is not None:  # checked now; the default imports PyTorch, later
        _float_backends(args.float)
    if args.depth is not None and args.depth > fileformat.MAX_DEPTH:
        raise InputError(f"--depth {args.depth}: beyond the limit of {fileformat.MAX_DEPTH} layers")
    points = load_points(args.data)
    if points.d > fileformat.MAX_INPUT_DIM:
        raise InputError(
            f"{points.source}: {points.d} features, beyond the limit of {fileformat.MAX_INPUT_DIM}"
        )
    net, t_build = _run(
        "folding",
        args.quiet,
        lambda bar: build(
            points,
            eps=args.eps,
            depth=args.depth,
            method=args.method,
            seed=args.seed,
            progress=bar,
        ),
    )
    return _check_and_report(args, net, points, {"build": t_build}, out=args.out)


def _float_backends(option: str | None) -> tuple[str, ...]:
    """The backends ``--float`` asks for (checked before any long computation), or all there are."""
    if option is None:
        return floats.available_backends()
    names = tuple(dict.fromkeys(name.strip() for name in option.split(",") if name.strip()))
    if not names:
        raise InputError(f"--float: name one or more of {', '.join(floats.BACKENDS)}")
    for name in names:
        if name not in floats.BACKENDS:
            raise InputError(
                f"--float: unknown backend {name!r} (choose from {', '.join(floats.BACKENDS)})"
            )
    torch = [name for name in names if name in floats.TORCH_BACKENDS]
    if torch and not floats.have_torch():
        raise InputError(f"--float {torch[0]} needs PyTorch: pip install 'lncapacity[torch]'")
    return names


def cmd_verify(args: argparse.Namespace) -> int:
    fileformat.check_outputs({"--certificate": args.certificate}, [args.net, args.data])
    if args.float is not None:  # checked now; the default imports PyTorch, later
        _float_backends(args.float)
    net = fileformat.load(args.net)
    points = load_points(args.data)
    return _check_and_report(args, net, points, {}, out=None)


def cmd_shatter(args: argparse.Namespace) -> int:
    from .shatter import labels_of, random_points, shatter

    out = f"shatter-L{args.depth}.jsonl" if args.out is None else args.out
    fileformat.check_outputs({"--out": out}, [args.points] if args.points else [])
    X = None if args.points is None else load_points(args.points).X
    if args.random is not None or (args.search and X is None):
        if X is not None:
            raise InputError("--points and --random exclude each other")
        X = random_points(args.random or args.depth + 3, args.dim, args.seed)
    search = {"restarts": args.restarts} if args.search else None
    summary, _ = _run(
        "shattering",
        args.quiet,
        lambda bar: shatter(
            X, args.depth, args.eps, out=out, workers=args.workers, progress=bar, search=search
        ),
    )
    written = summary.all_certified
    report = summary.to_dict() | {
        "certificate": out if written else None,
        "seconds": round(summary.seconds, 3),
    }
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        hist = ", ".join(f"{k}: {v}" for k, v in report["folds_histogram"].items())
        verdict = "shattered" if written else "NOT shattered"
        margin = report["min_margin"]
        print(
            f"{verdict}: {summary.points} points at depth {summary.depth}, "
            f"{summary.certified}/{summary.labelings} labelings certified"
            + (f", min certified margin {margin:.4g}" if margin is not None else "")
            + f"\nlayers needed before padding (layers: labelings): {hist}\n"
            + f"{summary.seconds:.1f} s; "
            + (f"wrote {out}" if written else "no certificate written")
        )
    if not written:
        shown = ", ".join(
            "".join(map(str, labels_of(k, summary.points))) for k in summary.failures[:8]
        )
        print(
            f"lncapacity: error: {len(summary.failures)} labelings not realised "
            f"(point i has digit i): {shown}",
            file=sys.stderr,
        )
        return EXIT_BAD
    return EXIT_OK


def cmd_verify_shatter(args: argparse.Namespace) -> int:
    from .shatter import verify_shatter

    (summary, problems), _ = _run(
        "verifying",
        args.quiet,
        lambda bar: verify_shatter(args.certificate, workers=args.workers, progress=bar),
    )
    ok = summary.all_certified and not problems
    # only what was re-derived: the folds (construction metadata, not certified) are left out
    report = {k: v for k, v in summary.to_dict().items() if k != "folds_histogram"}
    report |= {"valid": ok, "problems": problems[:20]}
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        print(
            f"{args.certificate}: {summary.certified}/{summary.labelings} labelings of "
            f"{summary.points} points certified at depth {summary.depth} "
            f"({summary.seconds:.1f} s)"
        )
    if not ok:
        more = f" and {len(problems) - 3} more" if len(problems) > 3 else ""
        print(f"lncapacity: error: {'; '.join(problems[:3])}{more}", file=sys.stderr)
        return EXIT_BAD
    return EXIT_OK


COMMANDS = {
    "certify": cmd_certify,
    "verify": cmd_verify,
    "shatter": cmd_shatter,
    "verify-shatter": cmd_verify_shatter,
}


def _check_and_report(
    args: argparse.Namespace,
    net: LNNet[Any],
    points: PointSet,
    seconds: dict[str, float],
    out: str | None,
) -> int:
    cert, seconds["certify"] = _run(
        "certifying", args.quiet, lambda bar: certify(net, points, progress=bar)
    )
    checks = [floats.check(net, points, b) for b in _float_backends(args.float)]
    if cert.all_certified:
        files = []
        if args.certificate:
            files.append((args.certificate, fileformat.dumps(_certificate_json(cert, net, points))))
        if out:
            files.append((out, fileformat.dumps(fileformat.to_dict(net))))
        fileformat.write_all_atomic(files)
    summary = _summary(net, points, cert, checks, seconds, out, args.certificate)
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        print(_text(summary))
    if not cert.all_certified:
        bad = ", ".join(_where(points, p.index) for p in cert.failures[:5])
        more = len(cert.failures) - 5
        print(
            f"lncapacity: error: certificate fails at {bad}"
            + (f" and {more} more" if more > 0 else "")
            + ("; nothing written" if out or args.certificate else ""),
            file=sys.stderr,
        )
        return EXIT_BAD
    return EXIT_OK


def _where(points: PointSet, k: int) -> str:
    rows = points.origins[k]
    return f"point {k} ({points.unit} {rows[0]})"


def _certificate_json(cert: Certificate, net: LNNet[Any], points: PointSet) -> dict[str, Any]:
    import hashlib

    digest = hashlib.sha256(
        json.dumps(fileformat.to_dict(net), sort_keys=True).encode()
    ).hexdigest()
    d = cert.to_dict()
    d["net_sha256"] = digest
    d["data"] = points.source
    for r in d["results"]:
        r[points.unit + "s"] = list(points.origins[r["point"]])
    return d


def _summary(
    net: LNNet[Any],
    points: PointSet,
    cert: Certificate,
    checks: list[floats.FloatCheck],
    seconds: dict[str, float],
    out: str | None,
    cert_path: str | None,
) -> dict[str, Any]:
    written = cert.all_certified
    return {
        "data": points.source,
        "points": points.m,
        "duplicates_merged": points.duplicates,
        "dim": points.d,
        "classes": list(net.classes),
        "method": net.meta.get("method"),
        "fallback": net.meta.get("fallback"),  # why runs gave way to pma, if it did
        "eps": str(net.eps),
        "depth": net.depth,
        "folds": net.meta.get("folds"),
        "depth_bound": max(points.m - 2, 0),
        "certified": cert.certified,
        "all_certified": cert.all_certified,
        # null with a single class (nothing to separate) or when some point fails
        "min_certified_margin": json_float(cert.min_margin) if cert.all_certified else None,
        "precision_bits": cert.precision,
        # one entry per backend run here: "float64", "float32" (NumPy), and "torch-float64",
        # "torch-float32" when PyTorch is installed
        "float": {
            c.backend: {
                "agree": c.agree,
                "total": c.total,
                "min_margin": json_float(c.min_margin),
                "library": "torch" if c.backend in floats.TORCH_BACKENDS else "numpy",
                "dtype": c.dtype,
                "max_abs_score": json_float(c.max_abs_score),
                "warning": _float_warning(c, cert.all_certified),
            }
            for c in checks
        },
        "net": out if written else None,
        "certificate": cert_path if written else None,
        "seconds": {k: round(v, 3) for k, v in seconds.items()},
    }


def _float_warning(c: floats.FloatCheck, certified: bool) -> str | None:
    """What a user should know about a float backend's result, in one phrase (or None)."""
    if not c.all_agree:
        why = (
            " (the exact certificate still holds; the net is too deep/too fine for this precision)"
            if certified
            else ""
        )
        return f"{c.backend} misclassifies {c.wrong} of {c.total} points{why}"
    if c.near_resolution:
        ratio = c.min_margin / c.max_abs_score
        return (
            f"{c.backend} margin near float resolution ({ratio:.1e} of the largest |score|; "
            "rounding may flip points)"
        )
    return None


def _text(s: dict[str, Any]) -> str:
    def num(x: float | None) -> str:
        if x is None:
            return "none (one class)" if len(s["classes"]) == 1 else "none"
        return "> 0 (below 1e-308)" if x == 0 else f"{x:.4g}"

    dup = f", {s['duplicates_merged']} duplicate rows merged" if s["duplicates_merged"] else ""
    classes = ", ".join(map(str, s["classes"]))
    lines = [
        f"{s['data']}: {s['points']} points in R^{s['dim']}, classes {classes}{dup}",
        f"net: width 3, depth {s['depth']} (bound m - 2 = {s['depth_bound']})"
        + (
            f", {s['folds']} before padding"
            if s["folds"] is not None and s["folds"] != s["depth"]
            else ""
        )
        + (f", method {s['method']}" if s["method"] else "")
        + (f" (runs gave way: {s['fallback']})" if s.get("fallback") else "")
        + f", eps {s['eps']}",
        f"certified: {s['certified']}/{s['points']} points"
        + (
            f", min certified margin {num(s['min_certified_margin'])}"
            if s["all_certified"]
            else "  FAILS"
        )
        + f" ({s['precision_bits']} bits)",
    ]
    for name, c in s["float"].items():
        x = c["min_margin"]  # a float margin of 0 is a tie, not a tiny certified bound
        if x is None:  # infinite: +inf with one class, -inf (a NaN or infinite score) if wrong
            margin = "-inf (overflow or NaN)" if c["agree"] < c["total"] else num(x)
        else:
            margin = f"{x:.4g}"
        flag = f"  WARNING: {c['warning']}" if c["warning"] else ""
        lines.append(f"{name}: {c['agree']}/{c['total']} agree, min margin {margin}{flag}")
    for key in ("net", "certificate"):
        if s[key]:
            lines.append(f"wrote {s[key]}")
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
