"""The ``lncapacity`` command line: a thin layer over the library.

Exit codes: 0 success; 2 bad input, or a certificate that fails; 1 an internal
error (a bug: please report it); 128 + the signal's number when interrupted (130
Ctrl-C/SIGINT, 143 SIGTERM, 129 SIGHUP), leaving no partial file and no worker.
Output files are written atomically and only after every check has passed.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import json
import math
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from . import __version__, fileformat, floats
from .arith import json_float, to_float
from .certify import Certificate, certify, exact_scores
from .construct import CHOICES, DEFAULT_METHOD, build
from .data import PointSet, load_points
from .errors import ConstructionError, InputError
from .model import LNNet

EXIT_OK, EXIT_INTERNAL, EXIT_BAD = 0, 1, 2
NOT_RIGHT_SHOWN, NOT_RIGHT_PRINTED = 1000, 20
"""How many points not certainly right the JSON summary lists, and the text prints."""


class Bar:
    """Progress on stderr: a one-line bar on a terminal, else a plain line every few seconds.

    Stdout is never touched (``--json`` output stays clean).  :meth:`note` prints
    a message at once (e.g. that the construction falls back to another method).
    """

    PERIOD = 5.0
    """Seconds between plain progress lines when stderr is not a terminal."""

    def __init__(self, label: str, enabled: bool, tty: bool | None = None) -> None:
        self.label, self.enabled, self.last, self.drawn = label, enabled, 0.0, False
        self.tty = sys.stderr.isatty() if tty is None else tty
        self.start = time.monotonic()
        self.last_line = self.start

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if not self.enabled:
            return
        if not self.tty:
            if now - self.last_line >= self.PERIOD and done < total:
                self.last_line = now
                sys.stderr.write(
                    f"lncapacity: {self.label} {done}/{total} ({now - self.start:.0f} s)\n"
                )
                sys.stderr.flush()
            return
        if now - self.last < 0.1 and done < total:
            return
        self.last, self.drawn = now, True
        frac = done / total if total else 1.0
        filled = int(30 * frac)
        sys.stderr.write(f"\r{self.label:<11} [{'#' * filled}{'.' * (30 - filled)}] {done}/{total}")
        sys.stderr.flush()

    def note(self, message: str) -> None:
        """Say ``message`` on stderr now (unless quiet)."""
        if not self.enabled:
            return
        if self.drawn:
            sys.stderr.write("\r\033[K")
        sys.stderr.write(f"lncapacity: {message}\n")
        sys.stderr.flush()

    def close(self) -> None:
        if self.drawn:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


def build_parser() -> argparse.ArgumentParser:
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
            q.add_argument(
                "--require-float",
                metavar="B1,B2",
                help="exit 2 unless these float backends (checked too) get every point right",
            )
        if workers:
            q.add_argument(
                "--workers",
                type=_positive,
                metavar="N",
                help="processes (default: all cores; never more than there are chunks of work)",
            )
        q.add_argument("--json", action="store_true", help="print a JSON summary instead of text")
        q.add_argument("--quiet", action="store_true", help="no progress on stderr")

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
        choices=list(CHOICES),
        help="construction: auto (default: circle for three or more classes, else runs), "
        "runs (one label run fewer per layer, float-faithful), pma (the paper's algorithm), "
        "circle (whole circle maps per layer, searched, far shallower; runs when not) or "
        "peel (three or more classes: one class at a time against the rest, by the binary "
        "runs folds; runs gives way to it)",
    )
    c.add_argument("--seed", type=_seed, default=0, help="seed for the choice of projection")
    c.add_argument(
        "--exact",
        action="store_true",
        help="with --method pma: fold at the true midpoints (algebraic weights, merged values "
        "equal; the net is written as lnnet/1.1 with requires algebraic)",
    )
    c.add_argument(
        "--explain",
        action="store_true",
        help="then the net layer by layer, as `lncapacity explain` prints it (with --json: an "
        "'explain' key); certifies once more for it",
    )
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
    s.add_argument(
        "--dim",
        type=_int_in(1, fileformat.MAX_INPUT_DIM),
        default=2,
        help="dimension of --random points (default 2)",
    )
    s.add_argument("--seed", type=_seed, default=0, help="seed of the --random points")
    s.add_argument("--restarts", type=_positive, default=16, help="search restarts per labeling")
    output(s, workers=True)

    im = sub.add_parser(
        "import",
        help="read a PyTorch LN-Net (nn.Sequential of Linear and LayerNorm) as an exact net",
        description="Read MODEL (torch.save of an nn.Sequential of Linear and LayerNorm "
        "modules, or of its state_dict) with torch.load(weights_only=True), convert every "
        "weight exactly, and write it as an lnnet file (lnnet/1, or lnnet/1.1 when it has "
        "LayerNorm gains or biases or layers of different widths).",
    )
    im.add_argument("model", metavar="MODEL.pt")
    im.add_argument("--out", required=True, metavar="NET.json", help="the lnnet file to write")
    im.add_argument(
        "--spec",
        metavar="KINDS",
        help="for a state dict: the module kinds in order, comma-separated (Linear, LayerNorm, "
        "Dropout, Identity); default: read off the weights' shapes",
    )
    im.add_argument(
        "--eps", type=float, default=1e-5, help="for a state dict: the LayerNorms' eps (1e-5)"
    )
    im.add_argument("--classes", metavar="C1,C2", help="names of the outputs (default 0, 1, ...)")
    im.add_argument("--json", action="store_true", help="print a JSON summary instead of text")

    ex = sub.add_parser(
        "export",
        help="write a net as a PyTorch module (torch.save) and/or an ONNX model",
        description="Write an lnnet file as PyTorch's own modules (an nn.Sequential of Linear "
        "and LayerNorm, saved with torch.save) and/or as an ONNX model (Gemm and "
        "LayerNormalization, opset 17; needs the onnx package).",
    )
    ex.add_argument("net", metavar="NET.json")
    ex.add_argument("--torch", metavar="MODEL.pt", help="write the PyTorch module here")
    ex.add_argument("--onnx", metavar="MODEL.onnx", help="write the ONNX model here")
    ex.add_argument(
        "--dtype",
        help="float64, float32 or bfloat16 (ONNX: float64 or float32); default: the dtype "
        "a PyTorch import recorded, else float64 (ONNX: float32)",
    )

    vs = sub.add_parser(
        "verify-shatter",
        help="independently re-check a shattering certificate",
        description="Decode every net of a shattering certificate, certify both labelings it "
        "covers from scratch, and check that every labeling appears exactly once; exit 2 on any "
        "problem.",
    )
    vs.add_argument("certificate", metavar="CERT.jsonl")
    output(vs, workers=True)

    pl = sub.add_parser(
        "plot",
        help="draw a net at work: ladder, fold maps, circles, regions, merge tree",
        description="Draw how a saved net moves the points of DATA, layer by layer (ladder, "
        "fold maps, LayerNorm's circle, decision regions for 2-D data, merge tree), and write "
        "the figures and the merge tree (GraphML) into a folder. Needs Matplotlib and NetworkX: "
        "pip install 'lncapacity[plot]'.",
    )
    pl.add_argument("net", metavar="NET.json")
    pl.add_argument("data", metavar="DATA")
    pl.add_argument("--out", default="figs", metavar="DIR", help="folder (default figs; made)")
    pl.add_argument(
        "--format", default="png,svg", metavar="F1,F2", help="image formats (default png,svg)"
    )
    pl.add_argument(
        "--merge-by",
        default="auto",
        choices=["auto", "runs", "values"],
        help="merge tree of label runs or of merged values (auto: values for pma nets)",
    )
    output(pl)

    ex = sub.add_parser(
        "explain",
        help="the construction of a saved net, layer by layer, in words",
        description="Read a saved net back on the points of DATA: per layer its kind, centre, "
        "offset and fold point, which end it folds, which label runs join and which values "
        "merge, the smallest label gap before and after; the readout; the certified margin.",
    )
    ex.add_argument("net", metavar="NET.json")
    ex.add_argument("data", metavar="DATA")
    output(ex)
    _theory_parsers(sub, output)
    return p


def _int_in(lo: int, hi: int | None = None) -> Callable[[str], int]:
    """An argparse type: an integer from ``lo`` to ``hi`` (no bound: None), else one line."""

    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            n = None
        if n is None or n < lo or (hi is not None and n > hi):
            want = (
                f"an integer from {lo:,} to {hi:,}"
                if hi is not None
                else "a positive integer"
                if lo == 1
                else f"an integer >= {lo}"
            )
            raise argparse.ArgumentTypeError(f"expected {want}, got {text[:40]!r}")
        return n

    return parse


_positive = _int_in(1)
_seed = _int_in(0, 2**64 - 1)  # NumPy's generators take no negative seed


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
    args = build_parser().parse_args(argv)
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
    bar = Bar(label, not quiet)
    start = time.perf_counter()
    try:
        return f(bar), time.perf_counter() - start
    finally:
        bar.close()


def cmd_certify(args: argparse.Namespace) -> int:
    fileformat.check_outputs({"--out": args.out, "--certificate": args.certificate}, [args.data])
    if args.float is not None:  # checked now; the default imports PyTorch, later
        _float_backends(args.float)
    if args.require_float is not None:
        _float_backends(args.require_float)
    if args.depth is not None and args.depth > fileformat.MAX_DEPTH:
        raise InputError(f"--depth {args.depth}: beyond the limit of {fileformat.MAX_DEPTH} layers")
    if args.exact and args.method != "pma":
        raise InputError("--exact: exact merges are the paper's algorithm; add --method pma")
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
            exact=args.exact,
        ),
    )
    if not args.explain:
        return _check_and_report(args, net, points, {"build": t_build}, out=args.out)
    from .explain import explain

    # _check_and_report prints the summary; the account follows it (text), or joins it (JSON)
    with contextlib.redirect_stdout(io.StringIO()) as report:
        code = _check_and_report(args, net, points, {"build": t_build}, out=args.out)
    account = explain(net, points)
    if args.json:
        print(json.dumps(json.loads(report.getvalue()) | {"explain": account}, indent=1))
    else:
        print(report.getvalue() + "\n".join(_explain_lines(account, points)))
    return code


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
    if args.require_float is not None:
        _float_backends(args.require_float)
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
    # the name certify uses for the same bound (min_margin is kept)
    report["min_certified_margin"] = report["min_margin"]
    margin_value = report["min_margin"]
    report["min_certified_margin_text"] = (
        _margin_text(margin_value) if written and margin_value is not None else None
    )
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        hist = ", ".join(f"{k}: {v}" for k, v in report["folds_histogram"].items())
        verdict = "shattered" if written else "NOT shattered"
        margin = report["min_margin"]
        print(
            f"{verdict}: {summary.points} points at depth {summary.depth}, "
            f"{summary.certified}/{summary.labelings} labelings certified"
            + (
                f", min certified margin {'> 0 (below 1e-308)' if margin == 0 else f'{margin:.4g}'}"
                if margin is not None
                else ""
            )
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


def cmd_import(args: argparse.Namespace) -> int:
    from .interop import load_torch

    fileformat.check_outputs({"--out": args.out}, [args.model])
    spec = None if args.spec is None else [k for k in args.spec.split(",") if k.strip()]
    if args.eps < 0 or not math.isfinite(args.eps):
        raise InputError("--eps must be a finite number >= 0")
    net = load_torch(args.model, spec=spec, eps=args.eps)
    if args.classes is not None:
        names = [c.strip() for c in args.classes.split(",")]
        labels: list[Any] = [int(c) for c in names] if all(_is_int(c) for c in names) else names
        if len(labels) != len(net.classes) or len(set(labels)) != len(labels):
            raise InputError(
                f"--classes: the net has {len(net.classes)} outputs; give as many distinct names"
            )
        net = dataclasses.replace(net, classes=tuple(labels))
    doc = fileformat.to_dict(net)
    text = fileformat.dumps(doc)
    size = len(text.encode("utf-8"))
    if size > fileformat.MAX_FILE_BYTES:  # verify could not read it back
        raise InputError(
            f"{args.model}: the net takes {size} bytes in {doc['format']}, beyond the limit of "
            f"{fileformat.MAX_FILE_BYTES >> 20} MiB for a net"
        )
    fileformat.write_all_atomic([(args.out, text)])
    summary = {
        "model": args.model,
        "net": args.out,
        "format": doc["format"],
        "requires": doc.get("requires", []),
        "input_dim": net.input_dim,
        "width": net.width,
        "widths": list(net.widths),
        "depth": net.depth,
        "classes": list(net.classes),
        "eps": str(net.eps),
        "eps_float": json_float(to_float(net.eps)),
        "layernorm_affine": [not net.norm(i).is_identity for i in range(net.depth)],
        "dtype": net.meta["torch"]["dtype"],
    }
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        widths = "-".join(map(str, net.widths)) or "none"
        affine = sum(summary["layernorm_affine"])
        print(
            f"{args.model}: {len(net.meta['torch']['modules'])} modules, "
            f"{summary['dtype']} weights read exactly\n"
            f"net: input {net.input_dim}, widths {widths}, depth {net.depth}, "
            f"{len(net.classes)} outputs, eps {to_float(net.eps):g}, "
            f"{affine} LayerNorms with gain/bias ({doc['format']})\n"
            f"wrote {args.out}"
        )
    return EXIT_OK


def _is_int(text: str) -> bool:
    t = text[1:] if text[:1] in "+-" else text
    return t.isdigit()


def cmd_export(args: argparse.Namespace) -> int:
    from .interop import TORCH_DTYPES, default_dtype, to_onnx, torch_bytes

    if not args.torch and not args.onnx:
        raise InputError("export: give --torch MODEL.pt and/or --onnx MODEL.onnx")
    fileformat.check_outputs({"--torch": args.torch, "--onnx": args.onnx}, [args.net])
    if args.dtype is not None and args.dtype not in TORCH_DTYPES:
        raise InputError(f"--dtype: choose from {', '.join(TORCH_DTYPES)}")
    net = fileformat.load(args.net)
    files: list[tuple[str, bytes]] = []
    if args.torch:
        files.append((args.torch, torch_bytes(net, args.dtype)))
    if args.onnx:
        dt = args.dtype or ("float64" if default_dtype(net) == "float64" else "float32")
        if dt not in ("float32", "float64"):
            raise InputError(f"--dtype {dt}: ONNX export writes float32 or float64")
        files.append((args.onnx, to_onnx(net, dt)))
    fileformat.write_all_atomic(files)
    for path, _ in files:
        print(f"wrote {path}")
    return EXIT_OK


def _output_folder(path: str) -> None:
    """Fail now, in one line, if ``path`` cannot become a folder of figures."""
    folder = os.path.abspath(path)
    if os.path.exists(folder):
        if not os.path.isdir(folder):
            raise InputError(f"{path}: exists and is not a folder")
        if not os.access(folder, os.W_OK):
            raise InputError(f"{path}: folder not writable")
        return
    parent = os.path.dirname(folder)
    if not os.path.isdir(parent):
        raise InputError(f"{path}: no such folder {os.path.dirname(path) or '.'!r}")
    if not os.access(parent, os.W_OK):
        raise InputError(f"{path}: cannot create the folder (parent not writable)")


def cmd_plot(args: argparse.Namespace) -> int:
    formats = [f.strip().lower() for f in args.format.split(",") if f.strip()]
    if not formats or any(f not in ("png", "svg", "pdf") for f in formats):
        raise InputError(f"--format: choose from png, svg, pdf, got {args.format!r}")
    _output_folder(args.out)
    from . import plot

    plot._mpl()  # a missing Matplotlib is a one-line error, before any work
    net = fileformat.load(args.net)
    points = load_points(args.data)
    start = time.perf_counter()
    cert = None
    if points.d == 2:
        cert, _ = _run("certifying", args.quiet, lambda bar: certify(net, points, progress=bar))
    created = not os.path.isdir(args.out)
    try:
        os.makedirs(args.out, exist_ok=True)
    except OSError as e:
        raise InputError(f"{args.out}: cannot create the folder: {e.strerror}") from None
    try:
        paths = plot.save_figures(
            net, points, out=args.out, formats=formats, certificate=cert, by=args.merge_by
        )
    except BaseException:
        if created:  # leave nothing behind, not even the empty folder
            try:
                os.rmdir(args.out)
            except OSError:
                pass
        raise
    seconds = round(time.perf_counter() - start, 3)
    if args.json:
        print(json.dumps({"files": [str(p) for p in paths], "seconds": seconds}, indent=1))
    else:
        print("\n".join(str(p) for p in paths))
    return EXIT_OK


def cmd_explain(args: argparse.Namespace) -> int:
    from .explain import explain

    net = fileformat.load(args.net)
    points = load_points(args.data)
    cert, _ = _run("certifying", args.quiet, lambda bar: certify(net, points, progress=bar))
    account = explain(net, points, certificate=cert)
    if args.json:
        print(json.dumps(account, indent=1))
        return EXIT_OK
    print("\n".join(_explain_lines(account, points)))
    return EXIT_OK if account["certificate"]["all_certified"] else EXIT_BAD


def _gave_way(method: str | None, why: str, named: bool = False) -> str:
    """A fallback note: ``why``, after "runs gave way (to pma or peel)" unless it names
    itself (circle's notes, and peel's when peel was asked for)."""
    if method not in ("pma", "peel") or why.startswith("peel"):
        return why
    return f"runs gave way to {method}: {why}" if named else f"runs gave way: {why}"


def _explain_lines(account: dict[str, Any], points: PointSet) -> list[str]:
    """The text of ``lncapacity explain`` (and of ``certify --explain``)."""
    n, c = account["net"], account["certificate"]
    first = account["input"]
    lines = [
        f"{points.source}: {points.m} points; net of depth {n['depth']}, width {n['width']}, "
        f"eps {n['eps']}, classes {', '.join(map(str, n['classes']))}"
        + (f", method {n['method']}" if n["method"] else ""),
    ]
    if n["meta"].get("fallback"):
        lines.append(_gave_way(n["method"], n["meta"]["fallback"], named=True))
    if first:
        lines.append(
            f"input projection: {first['runs']} label runs, smallest label gap "
            f"{first['label_gap']:.3g} (of half the span)"
        )
    lines += [e["words"] for e in account["layers"]]
    lines.append(account["readout"]["words"])
    margin = c["min_margin"]
    lines.append(
        f"certificate: {c['certified']}/{c['points']} points certified"
        + (f", min certified margin {margin:.4g}" if margin is not None else "")
        + f" ({c['precision_bits']} bits)"
    )
    return lines


COMMANDS = {
    "certify": cmd_certify,
    "verify": cmd_verify,
    "shatter": cmd_shatter,
    "verify-shatter": cmd_verify_shatter,
    "import": cmd_import,
    "export": cmd_export,
    "plot": cmd_plot,
    "explain": cmd_explain,
}


REFINE_DEPTH = 64
"""Nets up to this depth get their worst float rows re-bounded in balls (``max_ulps``)."""


def _check_and_report(
    args: argparse.Namespace,
    net: LNNet[Any],
    points: PointSet,
    seconds: dict[str, float],
    out: str | None,
) -> int:
    cert, seconds["certify"] = _run(
        "certifying", args.quiet, lambda bar: certify(net, points, progress=bar, scores=True)
    )
    backends = _float_backends(args.float)
    required = _float_backends(args.require_float) if args.require_float else ()
    backends = tuple(dict.fromkeys((*backends, *required)))
    exact = cert.scores if cert.scores is not None and len(points.X) else None

    def refine(rows: list[int]) -> Any:
        return exact_scores(net, [points.X[k] for k in rows])

    # balls at 128 bits tighten the ulp count of shallow nets; deep nets' interval scores are
    # already tight (interval.scalar_range) and balls would cost more than they gain
    tighten = refine if net.depth <= REFINE_DEPTH else None
    checks = [floats.check(net, points, b, exact, tighten) for b in backends]
    if cert.all_certified:
        files = []
        if args.certificate:
            files.append((args.certificate, fileformat.dumps(_certificate_json(cert, net, points))))
        if out:
            files.append((out, fileformat.dumps(fileformat.to_dict(net))))
        fileformat.write_all_atomic(files)
    summary = _summary(net, points, cert, checks, seconds, out, args.certificate)
    summary["torch_skipped"] = args.float is None and not floats.have_torch()
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        print(_text(summary))
    if failing := [c for c in checks if c.backend in required and not c.all_agree]:
        print(
            "lncapacity: error: --require-float: "
            + "; ".join(
                f"{c.backend} misclassifies {c.wrong} of {c.total} points" for c in failing
            ),
            file=sys.stderr,
        )
        return EXIT_BAD
    if not cert.all_certified:
        bad = ", ".join(_where(points, p.index) for p in cert.failures[:5])
        more = len(cert.failures) - 5
        print(
            f"lncapacity: error: certificate fails at {bad}"
            + (f" and {more} more" if more > 0 else "")
            + f" ({cert.wrong} certainly wrong, {cert.undecided} undecided)"
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
        "trained": net.meta.get("source") == "torch",  # imported from PyTorch
        "width": net.width,  # null when the layers' widths differ
        "widths": list(net.widths),
        "certified": cert.certified,
        "all_certified": cert.all_certified,
        # every point is certainly right, certainly wrong, or undecided at the precision cap
        "certainly_right": cert.right,
        "certainly_wrong": cert.wrong,
        "undecided": cert.undecided,
        # the points not certainly right (the first NOT_RIGHT_SHOWN), with their verdicts
        "not_right": [
            {
                "point": p.index,
                "where": _where(points, p.index),
                "verdict": p.verdict,
                "margin_interval": [json_float(v) for v in p.margin_interval],
            }
            for p in cert.failures[:NOT_RIGHT_SHOWN]
        ],
        # null with a single class (nothing to separate) or when some point fails
        "min_certified_margin": json_float(cert.min_margin) if cert.all_certified else None,
        # the same as text when a certified margin is below the float range (never "0.0" alone)
        "min_certified_margin_text": _margin_text(cert.min_margin) if cert.all_certified else None,
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
                # worst |float score - exact score| in ulps of the dtype (an upper bound)
                "max_ulps": None if c.max_ulps != c.max_ulps else json_float(c.max_ulps),
                "warning": _float_warning(c, cert.all_certified),
            }
            for c in checks
        },
        "net": out if written else None,
        "certificate": cert_path if written else None,
        "seconds": {k: round(v, 3) for k, v in seconds.items()},
    }


def _margin_text(x: float) -> str | None:
    """A certified margin as text: ``"> 0 (below 1e-308)"`` or ``">= 1.797...e+308 (beyond
    float64)"`` for one the float range cannot show (lower bounds are clamped to it)."""
    if x == math.inf:
        return None
    if x == sys.float_info.max:
        return f">= {x:.17g} (beyond float64)"
    return "> 0 (below 1e-308)" if x == 0 else f"{x:.17g}"


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


def _eps_text(eps: str) -> str:
    """``eps`` as written in the file, or about it when that is long (a float's exact value)."""
    if len(eps) <= 16:
        return eps
    p, _, q = eps.partition("/")
    return f"{int(p) / int(q or 1):.6g} (exactly {eps})"


def _width_text(s: dict[str, Any]) -> str:
    if s["width"] is not None or not s["widths"]:
        return str(s["width"] if s["width"] is not None else "-")
    return "-".join(map(str, s["widths"]))


def _text(s: dict[str, Any]) -> str:
    def num(x: float | None) -> str:
        if x is None:
            return "none (one class)" if len(s["classes"]) == 1 else "none"
        return "> 0 (below 1e-308)" if x == 0 else f"{x:.4g}"

    n_dup = s["duplicates_merged"]
    dup = f" ({n_dup} duplicate row{'s' * (n_dup != 1)} merged)" if n_dup else ""
    classes = ", ".join(map(str, s["classes"]))
    lines = [
        f"{s['data']}: {s['points']} points in R^{s['dim']}{dup}, classes {classes}",
        f"net: width {_width_text(s)}, depth {s['depth']}"
        + (f" (bound m - 2 = {s['depth_bound']})" if s["method"] else "")
        + (
            f", {s['folds']} before padding"
            if s["folds"] is not None and s["folds"] != s["depth"]
            else ""
        )
        + (f", method {s['method']}" if s["method"] else "")
        + (f" ({_gave_way(s['method'], s['fallback'])})" if s.get("fallback") else "")
        + f", eps {_eps_text(s['eps'])}",
        f"certified: {s['certified']}/{s['points']} points"
        + (
            f", min certified margin {num(s['min_certified_margin'])}"
            if s["all_certified"]
            else f"  FAILS: {s['certainly_wrong']} certainly wrong, {s['undecided']} undecided"
        )
        + f" ({s['precision_bits']} bits)",
    ]
    shown = s.get("not_right", [])[:NOT_RIGHT_PRINTED]
    for p in shown:
        lo, hi = p["margin_interval"]
        lo, hi = -math.inf if lo is None else lo, math.inf if hi is None else hi
        lines.append(f"  {p['where']}: {p['verdict']}, margin in [{lo:.4g}, {hi:.4g}]")
    if s["points"] - s["certified"] > len(shown):
        lines.append(f"  ... and {s['points'] - s['certified'] - len(shown)} more")
    for name, c in s["float"].items():
        x = c["min_margin"]  # a float margin of 0 is a tie, not a tiny certified bound
        if x is None:  # infinite: +inf with one class, -inf (a NaN or infinite score) if wrong
            margin = "-inf (overflow or NaN)" if c["agree"] < c["total"] else num(x)
        else:
            margin = f"{x:.4g}"
        flag = f"  WARNING: {c['warning']}" if c["warning"] else ""
        ulps = c.get("max_ulps")  # in the text for trained nets only (built ones are exact)
        dist = "" if ulps is None or not s.get("trained") else f", max {ulps:.3g} ulp from exact"
        lines.append(f"{name}: {c['agree']}/{c['total']} agree, min margin {margin}{dist}{flag}")
    if s.get("torch_skipped"):
        lines.append("torch-float64, torch-float32: skipped (PyTorch is not installed)")
    for key in ("net", "certificate"):
        if s[key]:
            lines.append(f"wrote {s[key]}")
    return "\n".join(lines)


# --- the theory toolkit: trace (SSR/LSSR per layer) and hessian (LN-G vs LN) -----------------

MAX_SAMPLES = 1000
"""``hessian --samples``: inputs of each kind (1,000 of each at d = 64: about 30 s)."""


def _theory_parsers(sub: Any, output: Callable[..., None]) -> None:
    t = sub.add_parser(
        "trace",
        help="SSR and LSSR of labelled points after every layer of a net, certified",
        description="For NET.json and labelled POINTS, print the within-class over total sum of "
        "squares (SSR) and its lowest value under linear maps (LSSR) of the points before the "
        "first layer (exact), after every LayerNorm layer and of the readout scores (rigorous "
        "[lo, hi] bounds from ball arithmetic). A certified drop of LSSR shows a layer is not "
        "affine (proofs/lssr.md). Labels may be any classes, not only the net's.",
    )
    t.add_argument("net", metavar="NET.json")
    t.add_argument("data", metavar="POINTS")
    output(t)
    h = sub.add_parser(
        "hessian",
        help="the Hessian measure of LN and LN-G (group LayerNorm) and their ratio",
        description="H(f; x) = sum_i ||d^2 y_i/dx^2||_F^2 for LayerNorm and LN-G at seeded "
        "inputs (Gaussian, sparse, adversarial), computed exactly from the closed form "
        "(proofs/ln_g_hessian.md), with the proposition's bound g (d - 2g)/(d - 2).",
    )
    h.add_argument(
        "--d", type=_int_in(3, fileformat.MAX_INPUT_DIM), default=64, help="features (default 64)"
    )
    h.add_argument(
        "--groups", type=_positive, default=16, help="LN-G groups, dividing d (default 16)"
    )
    h.add_argument("--eps", default="0", help="LayerNorm epsilon, exact (default 0)")
    h.add_argument("--no-centre", action="store_true", help="LN-G without centring (RMS groups)")
    h.add_argument(
        "--samples",
        type=_int_in(1, MAX_SAMPLES),
        default=3,
        help=f"inputs of each kind (default 3, at most {MAX_SAMPLES})",
    )
    h.add_argument("--seed", type=_seed, default=0)
    h.add_argument("--json", action="store_true", help="print a JSON summary instead of text")


def cmd_trace(args: argparse.Namespace) -> int:
    from .theory.net_trace import trace

    net = fileformat.load(args.net)
    points = load_points(args.data)
    layers, seconds = _run("tracing", args.quiet, lambda bar: trace(net, points, progress=bar))
    rows = [s.to_dict() for s in layers]
    hidden = layers[1:-1] if net.depth else []
    drops = [
        b.name
        for a, b in zip(layers[:-1], hidden, strict=False)
        if a.lssr is not None and b.lssr is not None and b.lssr.hi < a.lssr.lo
    ]
    summary = {
        "data": points.source,
        "net": args.net,
        "points": points.m,
        "classes": sorted({str(c) for c in points.y}),
        "depth": net.depth,
        "layers": rows,
        "lssr_drops": drops,
        "seconds": round(seconds, 3),
    }
    if args.json:
        print(json.dumps(summary, indent=1))
        return EXIT_OK
    print(
        f"{points.source}: {points.m} points, {len(summary['classes'])} classes; "
        f"net depth {net.depth}"
    )
    print(f"{'layer':<9} {'dim':>3}  {'SSR':<48} LSSR")
    for s in layers:
        print(f"{s.name:<9} {s.dim:>3}  {_certified_text(s.ssr):<48} {_certified_text(s.lssr)}")
    print(
        f"LSSR certified lower than before at {len(drops)} of {net.depth} LN layers "
        "(no affine map can lower it)"
        + (f": {', '.join(drops[:8])}" if drops else "")
        + (" ..." if len(drops) > 8 else "")
    )
    return EXIT_OK


def _certified_text(x: Any) -> str:
    """An exact value when short, else its certified decimal enclosure; never a bare float."""
    if x is None:
        return "undefined (all points equal)"
    text = str(x)
    if len(text) <= 34:
        return text
    lo, hi = x.printable_interval() if not x.is_exact else _enclosure(x)
    return f"[{lo}, {hi}]" + (" exact in --json" if x.is_exact else "")


def _enclosure(x: Any) -> tuple[str, str]:
    from .theory.reals import decimal

    return decimal(x.lo, 10, up=False), decimal(x.hi, 10, up=True)


def cmd_hessian(args: argparse.Namespace) -> int:
    import numpy as np

    from .arith import epsilon, format_rational
    from .theory.hessian import KINDS, ln_hessian, ratio_lower_bound, sample_input
    from .theory.reals import decimal

    d, g = args.d, args.groups
    if d % g:
        raise InputError(f"--groups {g} must divide --d {d}")
    try:
        eps = epsilon(args.eps)
    except ValueError as e:
        raise InputError(f"--eps: {e}") from None
    centre = not args.no_centre
    bound = ratio_lower_bound(d, g) if d // g >= 3 else None
    rng = np.random.default_rng([args.seed, d, g])
    samples = []
    for kind in KINDS:
        for i in range(args.samples):
            xq = sample_input(kind, d, g, rng, float(eps), centre)
            try:
                h_ln = ln_hessian(xq, 1, eps, True)
                h_g = ln_hessian(xq, g, eps, centre)
            except ValueError as e:  # a constant group with eps = 0: outside the assumption
                samples.append({"kind": kind, "index": i, "undefined": str(e)})
                continue
            ratio = h_g / h_ln if h_ln else None
            ok = None if ratio is None or bound is None else ratio >= bound
            samples.append(
                {
                    "kind": kind,
                    "index": i,
                    "H_LN": _bounds_json(h_ln, decimal),
                    "H_LNG": _bounds_json(h_g, decimal),
                    "ratio": None if ratio is None else _bounds_json(ratio, decimal),
                    "ratio_ge_bound": ok,
                    # a counterexample's input, exactly (the float's dyadic value per entry)
                    "x": [format_rational(v) for v in xq] if ok is False else None,
                }
            )
    summary = {
        "d": d,
        "groups": g,
        "group_size": d // g,
        "eps": str(eps),
        "centre": centre,
        "bound": None if bound is None else str(bound),
        "bound_applies": bound is not None and eps == 0 and centre,
        "samples": samples,
    }
    if args.json:
        print(json.dumps(summary, indent=1))
        return EXIT_OK
    print(
        f"H(LN) and H(LN-G) at seeded inputs: d = {d}, {g} groups of {d // g}, eps {eps}, "
        + ("centred" if centre else "uncentred (RMS groups)")
    )
    if bound is not None:
        applies = "" if summary["bound_applies"] else " (proved for eps = 0, centred LN-G only)"
        print(f"bound: ratio >= g (d - 2g)/(d - 2) = {bound} ~ {float(bound):.6g}{applies}")
    print(f"{'input':<14} {'H(LN)':>12} {'H(LN-G)':>12} {'ratio':>12}  >= bound")
    for s in samples:
        name = f"{s['kind']} {s['index']}"
        if "undefined" in s:
            print(f"{name:<14} undefined: {s['undefined']}")
            continue
        mark = {True: "yes", False: "NO", None: "-"}[s["ratio_ge_bound"]]
        cells = [s["H_LN"][0], s["H_LNG"][0], s["ratio"][0] if s["ratio"] else "undefined"]
        print(f"{name:<14} " + " ".join(f"{c:>12}" for c in cells) + f"  {mark}")
    print("values are exact rationals shown rounded down to 6 digits (--json: [lo, hi])")
    if any(s.get("ratio_ge_bound") is False for s in samples):
        print("NO: below the bound (outside its assumptions); --json gives those inputs exactly")
    return EXIT_OK


def _bounds_json(q: Any, decimal: Callable[..., str]) -> list[str]:
    """An exact rational as a certified decimal enclosure ``[lo, hi]`` (6 significant digits)."""
    return [decimal(q, 6, up=False), decimal(q, 6, up=True)]


COMMANDS.update({"trace": cmd_trace, "hessian": cmd_hessian})


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
