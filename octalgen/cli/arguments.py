"""Argument types shared by the sub-commands."""

from __future__ import annotations

import argparse
import sys
from contextlib import contextmanager
from pathlib import Path

from ..errors import InputError, OctalgenError
from ..game import OctalGame, parse_game
from ..limits import CHUNK_RANGE, MAX_HEAP, MAX_WORKERS, seconds, whole
from ..output import output_file
from ..rare import RareTable, table_filename

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


def whole_number(text: str, low: int, high: int) -> int:
    """``text`` as a whole number in [low, high]: 1000000, 1_000_000, 1e6, 1.05e8 and 10**6 allowed.

    The text is parsed here; the range is checked by :func:`octalgen.limits.whole`, as the Python
    interface checks its numbers.

    Raises
    ------
    argparse.ArgumentTypeError
        With one line saying what is wrong (not a number, not whole, below ``low``, above ``high``).
    """
    from decimal import Decimal, InvalidOperation

    cleaned = text.strip().replace("_", "")
    try:
        if "**" in cleaned:
            base, exponent = cleaned.split("**")
            value = Decimal(int(base)) ** int(exponent) if len(exponent) < 4 else Decimal("Infinity")
        else:
            value = Decimal(cleaned)
    except (InvalidOperation, ValueError):
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not value.is_finite():
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    if value != value.to_integral_value():
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number")
    try:
        return whole(repr(text), int(value), low, high)
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def count_type(text: str) -> int:
    """argparse type for counts and heap positions: 0 ... :data:`MAX_HEAP`."""
    return whole_number(text, 0, MAX_HEAP)


def positive_count_type(text: str) -> int:
    """argparse type for counts that must be at least 1 (up to :data:`MAX_HEAP`)."""
    return whole_number(text, 1, MAX_HEAP)


def threads_type(text: str) -> int:
    """argparse type for thread counts: 1 ... :data:`MAX_WORKERS`."""
    return whole_number(text, 1, MAX_WORKERS)


def workers_type(text: str) -> int:
    """argparse type for process counts: 0 (this process) ... :data:`MAX_WORKERS`."""
    return whole_number(text, 0, MAX_WORKERS)


def check_kernel_threads(threads: int, plan) -> None:
    """Refuse more kernel threads than a kernel of ``plan`` takes (57 with u8 storage, 29 with u16).

    Raises
    ------
    InputError
        Naming the most the kernel takes.
    """
    from ..cpu.generate import max_threads_for

    most = max_threads_for(plan, MAX_WORKERS)
    if threads > most:
        raise InputError(
            f"--threads {threads}: a kernel of {plan.game.code} with {plan.encoding.kind} storage "
            f"takes at most {most} threads"
        )


def seconds_type(text: str) -> float:
    """argparse type for a finite number of seconds, 0 or more (checked by :func:`octalgen.limits.seconds`)."""
    try:
        return seconds(repr(text), float(text))
    except (ValueError, InputError):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds (0 or more, finite)") from None


def chunk_type(text: str) -> int:
    """argparse type for heaps per kernel chunk: :data:`octalgen.limits.CHUNK_RANGE`."""
    return whole_number(text, *CHUNK_RANGE)


def add_game(parser) -> None:
    parser.add_argument(
        "game",
        metavar="CODE",
        type=game_type,
        help="octal code (.6, 4.07), name (officers, kayles, ...) or subtraction set S(1,2)",
    )


def add_table(parser) -> None:
    parser.add_argument(
        "--table", metavar="FILE", help="rare-value table (YAML) to use instead of the shipped or computed one"
    )


def load_table(args) -> RareTable | None:
    """The table named by ``--table``, checked against the game; None without one.

    Without one, the engine and :func:`~octalgen.engine.planning.plan_game` take the shipped table,
    else find one from the first exact values.
    """
    if getattr(args, "table", None):
        return RareTable.load(args.table, game=args.game)
    return None


def mask_type(text: str) -> int:
    """argparse type for a rare mask: hexadecimal (0x1ee) or decimal, 0 ... 2^16 - 1."""
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a mask (write it in hexadecimal, e.g. 0x1ee)") from None
    if not 0 <= value < 1 << 16:
        raise argparse.ArgumentTypeError(f"mask {text!r} must lie in 0 ... 0xffff (values are 16-bit)")
    return value


def add_masks(parser, example: str) -> None:
    """``--mask M``, repeatable: the values rare under M counted too (``example``: a mask for the help)."""
    parser.add_argument(
        "--mask",
        type=mask_type,
        action="append",
        default=[],
        metavar="M",
        help=f"also count the values that are rare under mask M (hexadecimal, e.g. {example}), and say "
        "where the last one is; repeatable",
    )


def refuse_binary_on_terminal(fmt: str, path=None) -> None:
    """Refuse ``--format fmt`` (a binary one) written to stdout when stdout is a terminal.

    Raw bytes on a screen are unreadable and can leave the terminal in a strange state; to a file
    (``-o``) or a pipe they go as asked.

    Raises
    ------
    InputError
        With one line saying where binary output can go.
    """
    from ..progress import is_terminal

    if path is None and is_terminal(sys.stdout):
        raise InputError(
            f"--format {fmt} is binary and stdout is a terminal: give -o FILE, or pipe it into a "
            "program (| od -An -tu2)"
        )


@contextmanager
def output_stream(path=None):
    """A binary file for a command's output: ``path``, by :func:`octalgen.output.output_file`, else stdout.

    A regular file is replaced atomically (nothing half-written is ever left), a device, FIFO or
    symbolic link is written through, and a failure is one :class:`~octalgen.errors.OutputError`.
    """
    if path is None:
        yield sys.stdout.buffer
        sys.stdout.flush()
        return
    with output_file(path) as out:
        yield out
