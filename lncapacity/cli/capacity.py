"""``lncapacity capacity``: certified nets for random labels, LN against LN-G and RMSNorm."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from typing import Any

from ..errors import ConstructionError, InputError
from .common import EXIT_BAD, EXIT_OK, int_in, run, seed_int

MAX_POINTS = 100_000
"""``capacity --m``: the most points (LN-G at depth 1 certifies 100,000 in minutes)."""
MAX_CLASSES = 1000
LN_G_DEPTHS = (1, 2, 3)
"""The LN-G depths of the table, each built by ``build(points, arch="ln-g", depth=d)``."""
RANK_WIDTH, RANK_GROUPS, RANK_DEPTH = 64, 16, 6
"""The rank measurement: untrained nets of width 64, LayerNorm against 16 groups
of 4, depth 6 (layers 1 to 6)."""
BITS = 64
"""Bits per parameter in the counting bound (float64)."""
EQUAL_WIDTH, EQUAL_GROUPS, EQUAL_DEPTH = 16, 4, 2
"""``--train``'s comparison at equal parameter count: LayerNorm, RMSNorm (with a bias),
GroupNorm and RMSNorm in groups (PLS), each of width 16 (groups: 4 of 4), depth 2."""
TRAIN_MISSING = "n/a (needs lncapacity.train)"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    c = sub.add_parser(
        "capacity",
        help="certified LN, LN-G and RMSNorm nets for random labels, the counting bound, ranks",
        description="For m random points in R^dim with k random labels (each k of --classes): "
        "the width-3 LN-Net (ln3) and LN-G nets of depth 1, 2, 3 (arch ln-g), each built and "
        "certified, and their RMSNorm twins (rms: width 2; rms-g: groups of 2; "
        "proofs/rmsnorm.md), each certified on its own (total width, groups, depth, "
        "parameters, time); the counting lower bound "
        f"on {BITS}-bit parameters (proofs/ln_rank.md, Proposition 4); the train accuracy of "
        "a least-squares linear model and, with --train, of Adam on the same architectures "
        "and on LayerNorm, RMSNorm, GroupNorm and RMSNorm in groups of equal parameter count "
        f"(width {EQUAL_WIDTH}, depth {EQUAL_DEPTH}, {EQUAL_GROUPS} groups) "
        "(measured in floats, never certified); and the rank of each layer's LayerNorm "
        f"output of untrained width-{RANK_WIDTH} nets, LN against LN-G ({RANK_GROUPS} groups), "
        f"depth 1 to {RANK_DEPTH}, on the points: proved when a certified nonzero minor meets "
        "the rank lemma's exact upper bound (proofs/ln_rank.md).",
    )
    c.add_argument("--m", type=int_in(2, MAX_POINTS), required=True, help="number of random points")
    c.add_argument(
        "--classes",
        type=_class_list,
        default=(2, 10),
        metavar="K1,K2",
        help="comma-separated numbers of classes, each >= 2 (default 2,10)",
    )
    c.add_argument("--dim", type=int_in(1, 64), default=3, help="input dimension (default 3)")
    c.add_argument("--seed", type=seed_int, default=0, help="seed of the points and labels")
    c.add_argument(
        "--train",
        action="store_true",
        help="also train each architecture with Adam (lncapacity.train) and report its train "
        "accuracy",
    )
    c.add_argument(
        "--train-iter", type=int_in(1), default=2000, help="Adam steps with --train (2000)"
    )
    c.add_argument(
        "--no-ln3",
        action="store_true",
        help="skip the width-3 LN-Net (its depth is about m/2; with many classes its "
        "construction takes minutes from a few hundred points)",
    )
    c.add_argument("--no-rank", action="store_true", help="skip the rank measurement")
    c.add_argument("--json", action="store_true", help="print a JSON summary instead of text")
    c.add_argument("--quiet", action="store_true", help="no progress on stderr")
    c.set_defaults(handler=cmd_capacity)


def _class_list(text: str) -> tuple[int, ...]:
    parts = text.split(",")
    try:
        ks = tuple(int(p) for p in parts)
    except ValueError:
        ks = ()
    if not ks or any(k < 2 or k > MAX_CLASSES for k in ks) or len(set(ks)) != len(ks):
        raise argparse.ArgumentTypeError(
            f"expected distinct integers from 2 to {MAX_CLASSES:,}, comma-separated, "
            f"got {text[:40]!r}"
        )
    return ks


def cmd_capacity(args: argparse.Namespace) -> int:
    if args.train:  # its limit is train's, checked before any work
        from ..train import check_parameters

        try:
            check_parameters(max_iter=args.train_iter)
        except InputError as e:
            raise InputError(f"--train-iter: {str(e).partition(': ')[2]}") from None
    if max(args.classes) > args.m:
        raise InputError(
            f"--classes {max(args.classes)} needs at least as many points (--m {args.m})"
        )
    summary = capacity_summary(
        args.m,
        args.classes,
        args.dim,
        args.seed,
        ln3=not args.no_ln3,
        ranks=not args.no_rank,
        train=args.train,
        train_iter=args.train_iter,
        quiet=args.quiet,
    )
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        _print_text(summary, args.train)
    failed = [
        f"{n['arch']} depth {n['depth']} with {r['classes']} classes"
        for r in summary["results"]
        for n in r["nets"]
        if n["status"] == "not certified"
    ]
    if failed:
        print(f"lncapacity: certificate failed: {', '.join(failed)}", file=sys.stderr)
        return EXIT_BAD
    return EXIT_OK


def capacity_summary(
    m: int,
    classes: tuple[int, ...],
    dim: int = 3,
    seed: int = 0,
    *,
    ln3: bool = True,
    ranks: bool = True,
    train: bool = False,
    train_iter: int = 2000,
    quiet: bool = True,
) -> dict[str, Any]:
    """What ``lncapacity capacity`` prints (its ``--json``), for the benchmark too: per number
    of classes, each architecture's row, the counting bound and the linear model; the ranks."""
    from ..data import points_from_arrays
    from ..theory.capacity import counting_bound, linear_accuracy, random_labels

    trainer = _trainer() if train else None
    results = []
    for k in classes:
        X, y = random_labels(m, k, dim, seed)
        points = points_from_arrays(X, y)
        if points.m != m:  # pragma: no cover - standard normal points do not repeat
            raise InputError(f"the random points repeat ({points.m} distinct of {m})")
        archs: list[tuple[str, int | None]] = [("ln3", None)] if ln3 else []
        archs += [("ln-g", d) for d in LN_G_DEPTHS]
        nets = [_row(points, arch, depth, k, quiet) for arch, depth in archs]
        nets += [_twin_row(points, row, quiet) for row in list(nets)]
        if train:
            for row in nets:
                _train_row(row, X, y, trainer, seed, train_iter, quiet)
        results.append(
            {
                "classes": k,
                "counting_bound": counting_bound(m, k, BITS),
                "linear_train_accuracy": linear_accuracy(X, y),
                "nets": [{key: v for key, v in r.items() if key != "net"} for r in nets],
                **(
                    {"equal_parameters": _equal(X, y, trainer, seed, train_iter, quiet)}
                    if train
                    else {}
                ),
            }
        )
    return {
        "m": m,
        "dim": dim,
        "seed": seed,
        "bits_per_parameter": BITS,
        "results": results,
        "ranks": _ranks(m, dim, seed, quiet) if ranks else None,
    }


def _row(points: Any, arch: str, depth: int | None, k: int, quiet: bool) -> dict[str, Any]:
    """Build and certify one architecture; the row of the table (``net``: the net, or None)."""
    from ..construct import build

    name = arch if depth is None else f"{arch} depth {depth}"
    row: dict[str, Any] = {"arch": arch, "depth": depth, "net": None}
    start = time.perf_counter()
    try:
        label = f"{name}, k={k}"
        kwargs: dict[str, Any] = {"arch": arch} if depth is None else {"arch": arch, "depth": depth}
        net, _ = run(label, quiet, lambda bar: build(points, progress=bar, **kwargs))
    except (InputError, ConstructionError) as e:
        if arch == "ln3" or depth == 1:  # these are built today: a failure is an error
            raise
        return {**row, "status": "not built", "note": str(e)}
    return _certified_row(points, row, net, name, start, quiet)


def _twin_row(points: Any, ln_row: dict[str, Any], quiet: bool) -> dict[str, Any]:
    """The RMSNorm twin of a LayerNorm row's net (:func:`lncapacity.construct.rms.rms_net`,
    proofs/rmsnorm.md), certified on its own: arch ``rms`` (of ``ln3``) or ``rms-g``."""
    from ..construct.rms import rms_net

    arch = "rms" if ln_row["arch"] == "ln3" else "rms-g"
    row: dict[str, Any] = {"arch": arch, "depth": ln_row["depth"], "net": None}
    if ln_row["net"] is None:
        return {**row, "status": "not built", "note": ln_row.get("note", "its twin not built")}
    start = time.perf_counter()
    name = arch if arch == "rms" else f"{arch} depth {ln_row['depth']}"
    net, _ = run(name, quiet, lambda bar: rms_net(ln_row["net"]))
    return _certified_row(points, row, net, name, start, quiet)


def _certified_row(
    points: Any, row: dict[str, Any], net: Any, name: str, start: float, quiet: bool
) -> dict[str, Any]:
    """``row`` with ``net`` certified: its shape, parameters, verdict and time."""
    from ..certify import certify
    from ..theory.capacity import parameter_count

    cert, _ = run(f"certify {name}", quiet, lambda bar: certify(net, points, progress=bar))
    seconds = time.perf_counter() - start
    return {
        **row,
        "net": net,
        "depth": net.depth,
        "total_width": sum(net.widths),
        "widths": sorted(set(net.widths)),
        "groups": sum(net.groups),
        "parameters": parameter_count(net),
        "status": "certified" if cert.all_certified else "not certified",
        "certified_points": cert.certified,
        "seconds": round(seconds, 3),
    }


def _trainer() -> Callable[..., Any] | None:
    """``lncapacity.train.train``, or None when it cannot be imported."""
    try:
        from .. import train as training
    except ImportError:
        return None
    return getattr(training, "train", None)


def _train_row(
    row: dict[str, Any],
    X: Any,
    y: Any,
    trainer: Callable[..., Any] | None,
    seed: int,
    train_iter: int,
    quiet: bool,
) -> None:
    """Train ``row``'s architecture with Adam: its first layer's width and groups, its depth."""
    net = row["net"]
    if net is None:
        row["train_accuracy"], row["train_note"] = None, "no architecture (not built)"
        return
    if trainer is None:
        row["train_accuracy"], row["train_note"] = None, TRAIN_MISSING
        return
    rms = {"norm": "rms"} if net.rms else {}  # the fake trainers of the tests take no norm
    try:
        result, seconds = run(
            f"train {row['arch']} depth {net.depth}",
            quiet,
            lambda bar: trainer(
                X,
                y,
                width=net.widths[0],
                depth=net.depth,
                groups=net.groups[0],
                random_state=seed,
                max_iter=train_iter,
                **rms,
            ),
        )
    except InputError as e:  # the trainer's own limits (e.g. its widest layer): a row note
        row["train_accuracy"], row["train_note"] = None, f"not trained: {e}"
        return
    try:
        row["train_accuracy"] = float(result.train_accuracy)
        row["train_note"] = f"{train_iter} Adam steps at most, {seconds:.1f} s"
    except AttributeError:
        row["train_accuracy"], row["train_note"] = None, TRAIN_MISSING


def _equal(
    X: Any, y: Any, trainer: Callable[..., Any] | None, seed: int, train_iter: int, quiet: bool
) -> list[dict[str, Any]]:
    """Adam on LayerNorm, RMSNorm, GroupNorm and RMSNorm in groups of equal width, depth and
    parameter count (RMSNorm with a gain and a bias, ``ParallelLN(centering=False)``)."""
    rows = []
    for name, norm, groups in (
        ("LayerNorm", "ln", 1),
        ("RMSNorm", "rms", 1),
        ("GroupNorm", "ln", EQUAL_GROUPS),
        ("RMSNorm in groups", "rms", EQUAL_GROUPS),
    ):
        row: dict[str, Any] = {"norm": name, "width": EQUAL_WIDTH, "depth": EQUAL_DEPTH}
        row["groups"] = groups
        if trainer is None:
            rows.append({**row, "train_accuracy": None, "note": TRAIN_MISSING})
            continue
        try:
            result, seconds = run(
                f"train {name}",
                quiet,
                lambda bar, norm=norm, groups=groups: trainer(
                    X,
                    y,
                    width=EQUAL_WIDTH,
                    depth=EQUAL_DEPTH,
                    groups=groups,
                    random_state=seed,
                    max_iter=train_iter,
                    norm=norm,
                ),
            )
        except InputError as e:  # the trainer's own limits: a row note
            rows.append({**row, "train_accuracy": None, "note": f"not trained: {e}"})
            continue
        module = getattr(result, "module", None)
        params = sum(p.numel() for p in module.parameters()) if module is not None else None
        rows.append(
            {
                **row,
                "parameters": params,
                "train_accuracy": float(result.train_accuracy),
                "seconds": round(seconds, 3),
            }
        )
    return rows


def _ranks(m: int, dim: int, seed: int, quiet: bool) -> dict[str, Any]:
    """The rank measurement: each layer's LayerNorm output rank, LN against LN-G."""
    from ..theory.capacity import layer_ranks, lemma_bound, random_labels, random_net

    X, _ = random_labels(m, 2, dim, seed)
    kinds = {"ln": 1, "ln_g": RANK_GROUPS}
    measured = {}
    for name, g in kinds.items():
        net = random_net(dim, RANK_WIDTH, RANK_DEPTH, g, seed)
        measured[name], _ = run(f"ranks {name}", quiet, lambda _bar, net=net: layer_ranks(net, X))
    return {
        "width": RANK_WIDTH,
        "groups": RANK_GROUPS,
        "eps": "1/100000",
        "tolerance": "float64 SVD: singular values > sigma_max * max(m, n) * 2^-52",
        "layers": [
            {
                "layer": i + 1,
                **{
                    name: {
                        **measured[name][i].to_dict(),
                        "lemma_bound": lemma_bound(dim, [(RANK_WIDTH, g)] * (i + 1), m)[-1],
                    }
                    for name, g in kinds.items()
                },
            }
            for i in range(RANK_DEPTH)
        ],
    }


def _print_text(s: dict[str, Any], train: bool) -> None:
    print(
        f"random labels on m = {s['m']:,} standard normal points in R^{s['dim']} "
        f"(seed {s['seed']}); nets built and certified (exact arithmetic and balls)"
    )
    for r in s["results"]:
        k = r["classes"]
        print()
        print(f"k = {k} classes")
        print(
            f"  counting bound: memorising every labeling needs >= {r['counting_bound']} "
            f"parameters of {s['bits_per_parameter']} bits (proofs/ln_rank.md, Prop. 4)"
        )
        print(f"  linear model (least squares): train accuracy {r['linear_train_accuracy']:.3f}")
        head = f"  {'arch':<12} {'depth':>6} {'width':>7} {'groups':>7} {'params':>8}  certified"
        print(head + f"{'':>14}{'time':>9}" + ("   Adam train acc" if train else ""))
        for n in r["nets"]:
            name = n["arch"] if n["arch"] in ("ln3", "rms") else f"{n['arch']} d={n['depth']}"
            if n["status"] == "not built":
                why = "" if "not built yet" in n["note"] else f": {n['note']}"
                line = f"  {name:<12} not built{why}"
            else:
                ok = "yes" if n["status"] == "certified" else "NO"
                line = (
                    f"  {name:<12} {n['depth']:>6} {n['total_width']:>7} {n['groups']:>7} "
                    f"{n['parameters']:>8}  {ok:<3} {n['certified_points']:>6}/{s['m']:<6} "
                    f"{n['seconds']:>7.1f} s"
                )
            if train:
                acc = n.get("train_accuracy")
                line += f"   {acc:.3f}" if acc is not None else f"   {n.get('train_note')}"
            print(line)
        if equal := r.get("equal_parameters"):
            print(
                f"  Adam at equal parameter count (width {equal[0]['width']}, depth "
                f"{equal[0]['depth']}; RMSNorm with a gain and a bias):"
            )
            for e in equal:
                acc = e["train_accuracy"]
                shown = f"{acc:.3f}" if acc is not None else e.get("note", "")
                print(
                    f"    {e['norm']:<18} groups {e['groups']:>2}  params "
                    f"{e.get('parameters') or '-':>6}  train acc {shown}"
                )
    if s["ranks"] is None:
        return
    rk = s["ranks"]
    print()
    print(
        f"rank of each layer's LayerNorm output on the {s['m']:,} points, untrained width-"
        f"{rk['width']} nets (eps {rk['eps']}): LN against LN-G ({rk['groups']} groups of "
        f"{rk['width'] // rk['groups']})"
    )
    print(f"  {'layer':>5}  {'LN':>10} {'lemma':>6}   {'LN-G':>10} {'lemma':>6}")
    for row in rk["layers"]:
        cells = []
        for name in ("ln", "ln_g"):
            v = row[name]
            shown = str(v["rank"]) if v["rank"] is not None else f"~{v['numerical_rank']}"
            cells.append(f"{shown:>10} {v['lemma_bound']:>6}")
        print(f"  {row['layer']:>5}  {cells[0]}   {cells[1]}")
    print(
        "  ranks proved (a certified nonzero minor meets the exact upper bound; ~: float64 "
        "only); lemma: the bound from the shapes, d + l for LN whatever the width"
    )
