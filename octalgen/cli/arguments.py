"""Argument types shared by the sub-commands."""

from __future__ import annotations

import argparse
import os
import sys
from contextlib import contextmanager
from pathlib import Path

from ..errors import InputError, OctalgenError
from ..game import OctalGame, parse_game
from ..rare import RareTable, rare_table, table_filename

#: Where ``octalgen emit`` writes by default (the repository's generated/).
GENERATED_DIRECTORY = "generated"


def game_folder(directory, game: OctalGame) -> Path:
    """``directory/<game>``: the folder ``emit c`` and ``emit hdl`` write a game's files into (``0.6`` for .6)."""
    return Path(directory) / table_filename(game).removesuffix(".yaml")


def game_type(text: str) -> OctalGame:
    """argparse type for CODE: an octal code, a name or S(...)."""
    try:
        return parse_game(text)
    except OctalgenError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def count_type(text: str) -> int:
    """argparse type for counts and positions: a non-negative integer, 10**6 and 1e6 allowed."""
    try:
        if "**" in text:
            base, exponent = text.split("**")
            value = int(base) ** int(exponent)
        elif "e" in text.lower():
            mantissa, exponent = text.lower().split("e")
            value = int(mantissa) * 10 ** int(exponent)
        else:
            value = int(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is negative")
    return value


def add_game(parser) -> None:
    parser.add_argument("game", metavar="CODE", type=game_type,
                        help="octal code (.6, 4.07), name (officers, kayles, ...) or subtraction set S(1,2)")


def add_table(parser) -> None:
    parser.add_argument("--table", metavar="FILE",
                        help="rare-value table (YAML) to use instead of the shipped or computed one")


def load_table(args) -> RareTable:
    """The table named by ``--table``, checked against the game, else the default one."""
    if getattr(args, "table", None):
        return RareTable.load(args.table, game=args.game)
    return rare_table(args.game)


@contextmanager
def output_stream(path=None):
    """A binary file to write a command's output to: ``path`` atomically, else stdout.

    ``path`` is written as ``path.partial`` and renamed when the block ends normally; on any
    error the partial file is removed, so a failed command leaves no half-written output.
    """
    if path is None:
        yield sys.stdout.buffer
        sys.stdout.flush()
        return
    path = Path(path)
    partial = path.with_name(path.name + ".partial")
    try:
        with open(partial, "wb") as out:
            yield out
        os.replace(partial, path)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise InputError(f"cannot write {path}: {exc.strerror}") from None
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
