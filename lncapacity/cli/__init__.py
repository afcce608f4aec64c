"""The ``lncapacity`` command line: a thin layer over the library.

Exit codes: 0 success; 2 bad input, or a certificate that fails; 1 an internal
error (a bug: please report it); 128 + the signal's number when interrupted (130
Ctrl-C/SIGINT, 143 SIGTERM, 129 SIGHUP), leaving no partial file and no worker.
Output files are written atomically and only after every check has passed.

One module per command, each with the function that adds its subparser (``add_parser``)
next to the one that runs it (``cmd_*``); :mod:`.common` holds what they share (exit codes,
argparse types and options, progress, interruptions) and :mod:`.report` the reports several
print.  :func:`build_parser` is the whole command line (the manual's command pages read it).
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import signal
import sys
from collections.abc import Sequence
from typing import NoReturn

from .. import __version__
from ..arith import printable
from ..errors import ConstructionError, InputError
from . import (
    capacity,
    certify,
    explain,
    explore,
    export,
    hessian,
    import_,
    plot,
    report,
    shatter,
    trace,
    train,
    vc,
    verify,
    verify_shatter,
)
from .capacity import cmd_capacity as cmd_capacity
from .certify import cmd_certify as cmd_certify
from .common import EXIT_BAD as EXIT_BAD
from .common import EXIT_INTERNAL as EXIT_INTERNAL
from .common import EXIT_OK as EXIT_OK
from .common import STOP_SIGNALS as STOP_SIGNALS
from .common import Bar as Bar
from .common import Interrupted as Interrupted
from .common import raise_interrupted
from .explain import cmd_explain as cmd_explain
from .explore import cmd_explore as cmd_explore
from .export import cmd_export as cmd_export
from .hessian import MAX_SAMPLES as MAX_SAMPLES
from .hessian import cmd_hessian as cmd_hessian
from .import_ import cmd_import as cmd_import
from .plot import cmd_plot as cmd_plot
from .shatter import cmd_shatter as cmd_shatter
from .trace import cmd_trace as cmd_trace
from .train import cmd_train as cmd_train
from .vc import cmd_vc as cmd_vc
from .verify import cmd_verify as cmd_verify
from .verify_shatter import cmd_verify_shatter as cmd_verify_shatter

__all__ = ["build_parser", "main"]

_margin_text = report.margin_text  # by its name before the commands had modules

COMMAND_MODULES = (
    certify, train, verify, shatter, import_, export, verify_shatter, vc, plot, explore,
    explain, trace, hessian, capacity,
)  # fmt: skip
"""The commands' modules, in the order ``lncapacity --help`` lists them."""


def _nearest(word: str, candidates: Sequence[str]) -> str:
    """`` (did you mean X?)`` for the candidate nearest to a mistyped ``word``, or nothing."""
    close = difflib.get_close_matches(word, candidates, n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


class Parser(argparse.ArgumentParser):
    """argparse, suggesting the nearest choice for a mistyped command or choice.

    (Python 3.14's ``suggest_on_error``; the subparsers are of this class too.)
    """

    commands: dict[str, argparse.ArgumentParser]
    """The subparsers by command name (set by :func:`build_parser`)."""

    def error(self, message: str) -> NoReturn:
        """The usage and ``message`` on stderr, with the nearest choice if one was mistyped;
        exit 2."""
        typo = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if typo:
            message += _nearest(typo[1], re.findall(r"'([^']*)'", typo[2]))
        super().error(message)


def build_parser() -> Parser:
    """The whole command line: every command's subparser runs its command (``handler``)."""
    p = Parser(
        prog="lncapacity",
        description="Certified LayerNorm networks (Ni et al., ICML 2024): build, certify, verify.",
    )
    p.add_argument("--version", action="version", version=f"lncapacity {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMAND_MODULES:
        command.add_parser(sub)
    p.commands = sub.choices
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # the command's own usage, and its option nearest to the first one unknown
        command = parser.commands[args.command]
        options = [o for action in command._actions for o in action.option_strings]
        command.error(
            f"unrecognized arguments: {' '.join(unknown)}"
            + _nearest(unknown[0].split("=")[0], options)
        )
    try:
        previous = {s: signal.signal(s, raise_interrupted) for s in STOP_SIGNALS}
    except ValueError:  # not the main thread: leave the signals alone
        previous = {}
    try:
        return _main(args)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _main(args: argparse.Namespace) -> int:
    try:
        return args.handler(args)
    except InputError as e:
        print(f"lncapacity: error: {printable(e)}", file=sys.stderr)
        return EXIT_BAD
    except ConstructionError as e:
        print(f"lncapacity: construction failed: {printable(e)}", file=sys.stderr)
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
            f"lncapacity: internal error: {type(e).__name__}: {printable(e)} "
            "(set LNCAPACITY_DEBUG=1 for the traceback, and please report it)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL
