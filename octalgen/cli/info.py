"""``octalgen info CODE``: what a game is and what is known about it."""

from __future__ import annotations

from ..api import DEFAULT_PERIOD_MAX, info
from ..limits import largest
from . import fit_to_terminal
from .arguments import add_game


def register(sub) -> None:
    parser = sub.add_parser(
        "info",
        help="describe a game: moves, rare values, known period",
        description="Describe an octal game: its moves in words, its rare mask (the bits whose parity tells the "
        "few rare values from the common ones) and the rare-value table octalgen ships for it, and "
        "its period and preperiod when the game is in the table of solved games, with the command "
        "that proves them; for any other game, the command that searches for its period.  Computes "
        "nothing.",
        epilog="examples:\n"
        "  octalgen info officers   # .6: moves, mask 0x1ee, 1584 rare values, open\n"
        "  octalgen info .16        # solved: period 149459, preperiod 105351",
    )
    add_game(parser)
    parser.set_defaults(run=run)


#: Each line starts with a label of this width; a line too long for the terminal goes on under its text.
LABEL = 13


def describe_table(table, source: str) -> list[str]:
    """The ``info`` lines of a rare table: its sparse space (kind, mask, rule) and rare positions."""
    if table.mask == 0:
        return [f"rare mask    0 (no sparse space below {table.exact_to}: every value is rare)"]
    bits = ", ".join(str(b) for b in range(table.mask.bit_length()) if table.mask >> b & 1)
    last = f", the last at G({table.entries[-1][0]}) = {table.entries[-1][1]}" if table.entries else ""
    what = "rare values " if table.kind == "range" else "rare heaps  "
    return [
        f"sparse space {table.describe()}",
        f"rare mask    {table.mask:#x} (bits {bits})",
        f"{what} {table.count}{last} ({source}, exact below {table.exact_to})",
    ]


def period_lines(about) -> list[str]:
    """The ``info`` lines of what is known of a game's period, with the command that proves or finds it."""
    if not about.solved:
        search = f"octalgen period {about.code} --max {largest(DEFAULT_PERIOD_MAX)}"
        return [
            "period       not in the table of solved games; to find it and prove it:",
            f"             {search}   (a larger --max searches further)",
        ]
    prove = f"octalgen period {about.code} --period {about.period} --preperiod {about.preperiod}"
    return [
        f"period       {about.period}, preperiod {about.preperiod}, largest value {about.max_value} (known answer)",
        f"proof        {prove}   (proves it with G(0) ... G({about.proof_length - 1}))",
    ]


def run(args) -> int:
    about = info(args.game)
    name = f" ({about.name})" if about.name else ""
    lines = [f"game         {about.code}{name}"]
    lines += [f"{'moves' if i == 0 else '':12} {line}" for i, line in enumerate(about.moves)]
    if about.table is None:
        lines.append("rare values  no shipped table (octalgen rare computes one)")
    else:
        lines += describe_table(about.table, "shipped table")
    lines += period_lines(about)
    print("\n".join(fit_to_terminal(lines, indent=" " * LABEL)))
    return 0
