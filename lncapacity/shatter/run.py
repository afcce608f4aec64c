"""Shattering: a net built and certified for every labeling, written as it is produced."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from contextlib import closing
from typing import Any

from flint import fmpq

from ..arith import epsilon, exact, format_rational, json_float, shown
from ..errors import InputError
from ..fileformat import to_dict, to_gadget
from ..model import LNNet
from ..version import __version__
from .journal import _journal_path, _locked, _resume, _writer
from .nets import _margins, _swapped, bump_net
from .points import _point_set, default_points, labels_of
from .records import (
    CLASSES,
    FORMAT,
    MAX_LINE_BYTES,
    MAX_POINTS,
    MAX_SHATTER_GROUPS,
    Progress,
    ShatterSummary,
    _decode,
    _Header,
    _is_int,
    _read_header,
    _tally,
    claim_problem,
)
from .workers import CHUNK, _imap


def _shatter_chunk(args: tuple[_Header, list[int], dict | Callable | None]) -> list[dict]:
    """A record per labeling of ``ks``, its margins certified on the net as the record has it
    (decoded as :func:`~lncapacity.shatter.verify.verify_shatter` decodes it), or an error."""
    from ..construct import build  # workers build; the verifier never imports this
    from ..construct.rms import ln_eps, rms_net

    header, ks, search = args
    X, depth, eps, groups = list(header.points), header.depth, header.eps, header.groups
    if header.rms:  # the LayerNorm nets are built with eps 2/3 of RMSNorm's, then twinned
        eps = ln_eps(eps)
    m, mask = len(X), (1 << len(X)) - 1
    out = []
    for k in ks:
        y = labels_of(k, m)
        try:
            record: dict[str, Any]
            if groups is not None:
                net = bump_net(X, y, groups, eps, depth)
                record = {"folds": "bumps", "lnnet": to_dict(net)}
            else:
                net = build(_point_set(X, y), eps=eps, depth=depth, method="pma", classes=CLASSES)
                record = {"folds": net.meta["folds"], "net": to_gadget(net)}
        except InputError as e:
            if groups is not None:
                out.append({"labeling": k, "error": str(e)})
                continue
            net = None
            if callable(search):  # a search of one's own, called as find_net is
                net = search(_point_set(X, y), depth, eps, CLASSES, seed=k)
            elif search is not None:
                from ..search import find_net

                net = find_net(_point_set(X, y), depth, eps, CLASSES, seed=k, **search)
            if net is None:
                out.append({"labeling": k, "error": str(e) if search is None else "none found"})
                continue
            record = {"folds": "search", "lnnet": to_dict(net)}
        if header.rms:  # the RMSNorm twin (proofs/rmsnorm.md), rounded, certified on its own
            record = {"folds": record["folds"], "lnnet": to_dict(rms_net(net))}
        net = _decode(record, header)  # what the verifier will certify
        comp = k ^ mask
        out.append(
            {
                "labeling": k,
                **record,
                "margins": [json_float(x) for x in _margins(net, X, y)],
                "complement": {
                    "labeling": comp,
                    "margins": [
                        json_float(x) for x in _margins(_swapped(net), X, labels_of(comp, m))
                    ],
                },
            }
        )
    return out


def _record_bytes(header: _Header) -> int:
    """About the bytes of an LN-G record of ``header`` (or of its RMSNorm twin's): its net (the
    layers after the first are alike, so nets of depth 1 and 2 tell) and room for two margins
    per point."""
    from ..construct.rms import ln_eps, rms_net

    X, g, eps = list(header.points), header.groups or 1, header.eps
    y = labels_of(0, len(X))
    nets = (bump_net(X, y, g, ln_eps(eps) if header.rms else eps, d) for d in (1, 2))
    one, two = (
        len(json.dumps(to_dict(rms_net(net) if header.rms else net), separators=(",", ":")))
        for net in nets
    )
    return one + (header.depth - 1) * (two - one) + 64 * len(X)


def shatter(
    X: Sequence[Sequence[object]] | None,
    depth: int,
    eps: object = 0,
    *,
    out: str | os.PathLike[str] | None = None,
    workers: int | None = None,
    progress: Progress | None = None,
    search: dict[str, Any] | Callable[..., LNNet[fmpq] | None] | None = None,
    groups: int | None = None,
    rms: bool = False,
    scheduler: str | None = None,
    resume: bool = False,
    status: Callable[[ShatterSummary], None] | None = None,
    chunk: int | None = None,
    note: Callable[[str], None] | None = None,
) -> ShatterSummary:
    """Build and certify a depth-``depth`` net for every labeling of ``X`` (``depth + 2`` points).

    The theorem of Ni, Guo, Jia and Huang ("On the Nonlinearity of Layer Normalization",
    ICML 2024; proofs/vc_theorem.md), certified for one point set: every labeling gets its
    own net, certified, and the shattering certificate written to ``out`` can be re-checked
    from scratch by :func:`~lncapacity.shatter.verify.verify_shatter`.

    Parameters
    ----------
    X
        The points (default :func:`~lncapacity.shatter.points.default_points`: ``0, 1, ...,
        depth + 1`` on a line).
    depth
        The LayerNorm layers of every net.
    eps
        LayerNorm's epsilon, read exactly.
    out
        Where to write the shattering certificate (only if every labeling is certified).
    workers
        Processes (default: all cores).
    progress
        Called as labelings are certified.
    search
        Keyword arguments of :func:`lncapacity.search.find_net` (e.g. ``{}``): then ``X`` may
        have more points; labelings the construction cannot do at this depth are searched
        for numerically and certified, and the ones not found are listed in
        ``summary.failures`` instead of raising.  Or a function called as ``find_net`` is,
        ``search(points, depth, eps, classes, seed=labeling)``, returning a net or None: a
        search of one's own (picklable when ``workers > 1``); its nets are certified like any.
    groups
        LN-G (``depth >= 1``): every net is :func:`~lncapacity.shatter.nets.bump_net` with
        exactly ``groups`` groups of 3 per layer, and ``X`` defaults to ``0, 1, ..., 2
        groups`` (``2 groups + 1`` points: proofs/ln_g_vc.md, Theorems 1, 2).
    rms
        Every net is the RMSNorm twin of the LayerNorm net
        (:func:`lncapacity.construct.rms.rms_net`, proofs/rmsnorm.md): width 2, or groups of
        2 with ``groups``; ``eps`` is RMSNorm's.  The certificate's header says ``"norm": "rms"``.
    scheduler
        ``"local:N"`` or a Dask scheduler's address: the chunks run on a Dask cluster
        (:mod:`lncapacity.cluster`) instead of the process pool; the certificate is the
        same, byte for byte.
    resume
        The records go to a journal ``out + ".part"`` kept when the run is interrupted; a new
        run with ``resume`` re-certifies the journal's records
        (:func:`~lncapacity.shatter.verify.verify_shatter`'s checks), keeps the longest
        correct prefix and continues after it.  One run at a time holds a journal (an
        advisory lock: another raises :class:`InputError` naming its pid); an incomplete
        header (a run stopped at its start) is started afresh, said in one line to ``note``.
    status
        Called with the summary so far after each chunk.
    chunk
        Pairs of labelings per chunk of work (default: enough chunks for 16 per worker, at
        most :data:`~lncapacity.shatter.workers.CHUNK` pairs each; the labelings are
        independent, so the certificate is the same).
    note
        Called with a line to say (a journal started afresh).

    Returns
    -------
    ShatterSummary
        The points, depth, labelings certified, the smallest certified margin and the
        layers each labeling needed before padding.

    Raises
    ------
    InputError
        For bad parameters, or naming the first labeling that cannot be realised.

    Examples
    --------
    >>> import os, tempfile
    >>> from lncapacity.shatter import shatter, verify_shatter
    >>> path = os.path.join(tempfile.mkdtemp(), "shatter-L2.jsonl")
    >>> summary = shatter(None, 2, out=path, workers=1)
    >>> summary.points, summary.labelings, summary.certified, summary.all_certified
    (4, 16, 16, True)
    >>> verify_shatter(path, workers=1)[1]  # no problem found
    []
    """
    if resume and out is None:
        raise InputError("--resume needs an output file")
    if chunk is not None and (not _is_int(chunk) or chunk < 1):
        raise InputError(f"chunk must be a positive integer, got {shown(chunk)}")
    if groups is not None:
        if not _is_int(groups) or not 1 <= groups <= MAX_SHATTER_GROUPS:
            raise InputError(
                f"groups must be an integer from 1 to {MAX_SHATTER_GROUPS}, got {shown(groups)}"
            )
        if search is not None:
            raise InputError("--search is for width-3 nets (ln3), not ln-g")
        if X is None:
            if 2 * groups + 1 > MAX_POINTS:
                raise InputError(
                    f"{groups} groups take {2 * groups + 1} points, beyond the limit of "
                    f"{MAX_POINTS}"
                )
            X = [(fmpq(k),) for k in range(2 * groups + 1)]
    if not _is_int(depth) or depth < 0:
        raise InputError(f"depth must be a non-negative integer, got {shown(depth)}")
    if groups is None and depth + 2 > MAX_POINTS:
        raise InputError(
            f"depth {depth} takes {depth + 2} points, beyond the limit of {MAX_POINTS}"
        )
    try:
        eps_q = epsilon(eps)
    except ValueError as e:
        raise InputError(str(e)) from None
    try:
        points = default_points(depth) if X is None else [tuple(exact(v) for v in x) for x in X]
    except (ValueError, TypeError) as e:
        raise InputError(f"the points must have finite coordinates: {e}") from None
    m = len(points)
    if groups is None and m != depth + 2 and (search is None or m < depth + 2):
        want = f"at least {depth + 2}" if search is not None else str(depth + 2)
        raise InputError(f"shattering at depth {depth} takes {want} points, got {m}")
    if (problem := claim_problem(m, depth, groups)) is not None:
        raise InputError(problem)
    if len({len(x) for x in points}) != 1 or not points[0]:
        raise InputError("the points must all have the same number (at least 1) of coordinates")
    if len(set(points)) != m:
        raise InputError("the points must be distinct")
    if eps_q < 0:
        raise InputError(f"eps must be >= 0, got {shown(eps)}")
    summary = ShatterSummary(m, depth, 1 << m)
    header = {
        "format": FORMAT,
        "generator": f"lncapacity {__version__}",
        "points": [[format_rational(v) for v in x] for x in points],
        "input_dim": len(points[0]),
        "eps": format_rational(eps_q),
        "depth": depth,
        "labelings": 1 << m,
        "classes": list(CLASSES),
    }
    if groups is not None:
        header["groups"] = groups
    if rms:
        header["norm"] = "rms"
    hdr = _read_header(header, "the certificate")  # the verifier's checks, before any work
    if groups is not None and (size := _record_bytes(hdr)) > MAX_LINE_BYTES:
        raise InputError(
            f"{groups} groups at depth {depth}: a record takes about {size >> 20} MiB, beyond "
            f"the {MAX_LINE_BYTES >> 20} MiB a line of a shattering certificate may have"
        )
    first = 0  # the first labeling to compute (after a journal's records)
    journal = None if not resume or out is None else _journal_path(out)
    pool = workers or os.cpu_count() or 1
    # one run at a time resumes, writes and publishes a journal; one pool, or one cluster
    with _locked(journal), _imap(scheduler, pool) as imap:
        if journal is not None:
            first = _resume(journal, header, summary, pool, imap, note)
        canonical = range(first, 1 << m, 2)  # point 0 labelled 0; the complement has it 1
        if chunk is None:  # several chunks for every worker (the labelings are independent)
            chunk = max(1, min(CHUNK, len(canonical) // (16 * pool)))
        tasks = (
            (hdr, list(canonical[i : i + chunk]), search) for i in range(0, len(canonical), chunk)
        )
        start = time.perf_counter()
        pool = min(pool, max(-(-len(canonical) // chunk), 1))
        writer = _writer(out, journal)
        with writer as (write, discard), closing(imap(_shatter_chunk, tasks, pool)) as results:
            if first == 0:
                write(header)
            for records in results:
                for rec in records:
                    if "error" in rec:
                        if search is not None:
                            summary.failures += [rec["labeling"], rec["labeling"] ^ ((1 << m) - 1)]
                            continue
                        bits = "".join(map(str, labels_of(rec["labeling"], m)))
                        raise InputError(f"labeling {bits} (point i has digit i): {rec['error']}")
                    summary.folds[rec["folds"]] += 2
                    for k, margins in (
                        (rec["labeling"], rec["margins"]),
                        (rec["complement"]["labeling"], rec["complement"]["margins"]),
                    ):
                        _tally(summary, k, margins)
                    write(rec)
                if progress:
                    progress(summary.certified + len(summary.failures), summary.labelings)
                if status:
                    status(summary)
            summary.seconds = time.perf_counter() - start
            write({"summary": summary.to_dict()})
            if not summary.all_certified:
                discard()
    return summary
