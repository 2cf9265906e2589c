"""The ``octalgen`` command line.

Each sub-command lives in its own module of this package, listed in
:data:`COMMANDS`; a module provides ``register(subparsers)``, which adds its
parser and sets ``run`` (a function of the parsed arguments returning an exit
status).  Library code raises :class:`~octalgen.errors.OctalgenError`; this
module prints its message as one line on stderr and exits with its code.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys

from .. import __version__
from ..errors import OctalgenError

#: Sub-command modules, in the order ``--help`` lists them.
COMMANDS = ("info", "values", "rare", "emit", "bench", "stones", "run", "period", "stats", "synth", "fpga")


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on stderr, exit status 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="octalgen",
        description="Sprague-Grundy values of octal games: exact reference, generated C, hardware.",
    )
    parser.add_argument("--version", action="version", version=f"octalgen {__version__}")
    parser.add_argument("-q", "--quiet", action="store_true", help="only warnings and errors on stderr")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)
    sub.required = True
    for name in COMMANDS:
        importlib.import_module(f"{__name__}.{name}").register(sub)
    return parser


def main(argv=None) -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.WARNING if args.quiet else logging.INFO,
        format="octalgen: %(message)s",
        stream=sys.stderr,
    )
    try:
        return args.run(args) or 0
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
