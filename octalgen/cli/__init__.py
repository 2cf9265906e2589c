"""The ``octalgen`` command line.

Each sub-command lives in its own module of this package, listed in
:data:`COMMANDS`; a module provides ``register(subparsers)``, which adds its
parser and sets ``run`` (a function of the parsed arguments returning an exit
status).  Library code raises :class:`~octalgen.errors.OctalgenError`; this
module prints its message as one line on stderr and exits with its code.

Every sub-command's parser is a :class:`CommandParser`: it accepts ``-q`` and ``-v`` after the
sub-command too, and shows its description and example as written.  Output is quiet by
default: warnings and errors, and the progress display of long computations; ``-v`` adds what
octalgen is doing (builds, plans, cache), ``-vv`` debugging detail, ``-q`` drops the progress
display.  Commands make their display with :func:`progress_for`.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import shlex
import sys
import textwrap

from .. import __version__
from ..errors import Interrupted, OctalgenError

#: Sub-command modules, in the order ``--help`` lists them.
COMMANDS = ("info", "values", "rare", "emit", "bench", "stones", "run", "period", "stats", "export", "survey",
            "synth", "fpga")

_QUIET_HELP = "no progress display: only warnings, errors and the results"
_VERBOSE_HELP = "also say what octalgen is doing (builds, plans, cache); -vv for debugging detail"


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on stderr, exit status 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


class HelpFormatter(argparse.HelpFormatter):
    """Wraps descriptions to the terminal's width, but keeps indented lines (the examples) as written."""

    def _fill_text(self, text, width, indent):
        lines = []
        for line in text.splitlines():
            if line.startswith(" ") or not line.strip():
                lines.append(indent + line)
            else:
                lines.extend(textwrap.wrap(line, width, initial_indent=indent, subsequent_indent=indent))
        return "\n".join(lines)


class CommandParser(OneLineParser):
    """The parser of a sub-command: ``-q``/``-v`` accepted after it too, examples kept as written."""

    def __init__(self, **kwargs):
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(**kwargs)
        # Own destinations (merged in main): a sub-parser's default would overwrite the main parser's value.
        self.add_argument("-q", "--quiet", dest="sub_quiet", action="store_true", default=argparse.SUPPRESS,
                          help=_QUIET_HELP)
        self.add_argument("-v", "--verbose", dest="sub_verbose", action="count", default=argparse.SUPPRESS,
                          help=_VERBOSE_HELP)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="octalgen",
        formatter_class=HelpFormatter,
        description="Sprague-Grundy values of octal games: exact reference, generated C, hardware.",
        epilog="Every command has its own --help.  -q and -v may also follow the command.",
    )
    parser.add_argument("--version", action="version", version=f"octalgen {__version__}")
    parser.add_argument("-q", "--quiet", action="store_true", help=_QUIET_HELP)
    parser.add_argument("-v", "--verbose", action="count", default=0, help=_VERBOSE_HELP)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=CommandParser)
    sub.required = True
    for name in COMMANDS:
        importlib.import_module(f"{__name__}.{name}").register(sub)
    return parser


class _CurrentStderr(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is when a record is emitted.

    While a live progress line is shown, rich replaces ``sys.stderr`` so that what is written
    appears above the line instead of through it.
    """

    def __init__(self):
        super().__init__(sys.stderr)

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _value):
        pass


_HANDLER = _CurrentStderr()
_HANDLER.setFormatter(logging.Formatter("octalgen: %(message)s"))


def set_verbosity(verbose: int) -> None:
    """Show the ``octalgen`` logger's warnings (0), also its info lines (1), or everything (2)."""
    level = logging.WARNING if verbose <= 0 else logging.INFO if verbose == 1 else logging.DEBUG
    logger = logging.getLogger("octalgen")
    if _HANDLER not in logger.handlers:
        logger.addHandler(_HANDLER)
    _HANDLER.setLevel(level)
    if logger.level == logging.NOTSET or logger.level > level:  # never hide what a caller asked to see
        logger.setLevel(level)


def progress_for(args, goal: int | None, label: str = "", writes_stdout: bool = False, items: str | None = None):
    """The progress display of a command: a live line on a terminal, plain lines in a log.

    None of it with ``-q``, nor when the command writes its results to the same terminal
    (``writes_stdout`` and stdout is a terminal: the values would run through the line).
    """
    from ..progress import Progress, is_terminal

    shown = not args.quiet and not (writes_stdout and is_terminal(sys.stdout))
    return Progress(goal, label=label, enabled=shown, items=items)


def main(argv=None) -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    args.quiet = args.quiet or getattr(args, "sub_quiet", False)
    args.verbose += getattr(args, "sub_verbose", 0)
    if args.quiet and args.verbose:
        parser.error("-q and -v contradict each other: give one")
    set_verbosity(args.verbose)
    try:
        return args.run(args) or 0
    except Interrupted as exc:
        resume = ""
        if exc.checkpoint is not None:
            resume = "; resume with: " + shlex.join(["octalgen", *(sys.argv[1:] if argv is None else argv)])
        print(f"octalgen: {exc}{resume}", file=sys.stderr)
        return exc.exit_code
    except OctalgenError as exc:
        print(f"octalgen: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("octalgen: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader (e.g. `head`) went away: not an error of ours.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except Exception as exc:  # a bug: still one line, the traceback only on request
        if os.environ.get("OCTALGEN_DEBUG"):
            raise
        print(f"octalgen: internal error: {type(exc).__name__}: {exc} (set OCTALGEN_DEBUG=1 for the traceback)",
              file=sys.stderr)
        return 1
