"""``octalgen info CODE``: what a game is and what is known about it."""

from __future__ import annotations

from ..periodicity import solved_games
from ..rare import shipped_table
from .arguments import add_game


def register(sub) -> None:
    parser = sub.add_parser(
        "info", help="describe a game: moves, rare values, known period",
        description="Describe an octal game: its moves in words, its rare mask (the bits whose parity tells the "
                    "few rare values from the common ones) and the rare-value table octalgen ships for it, and "
                    "its period and preperiod when the game is in the table of solved games.  Computes nothing.",
        epilog="example:\n  octalgen info officers     # .6: moves, mask 0x1ee, 1584 rare values, open question")
    add_game(parser)
    parser.set_defaults(run=run)


def describe_table(table, source: str) -> None:
    """The ``info`` lines of a rare table: its sparse space (kind, mask, rule) and rare positions."""
    if table.mask == 0:
        print(f"rare mask    0 (no sparse space below {table.exact_to}: every value is rare)")
        return
    bits = ", ".join(str(b) for b in range(table.mask.bit_length()) if table.mask >> b & 1)
    print(f"sparse space {table.describe()}")
    print(f"rare mask    {table.mask:#x} (bits {bits})")
    last = f", the last at G({table.entries[-1][0]}) = {table.entries[-1][1]}" if table.entries else ""
    what = "rare values " if table.kind == "range" else "rare heaps  "
    print(f"{what} {table.count}{last} ({source}, exact below {table.exact_to})")


def run(args) -> int:
    game = args.game
    name = f" ({game.name})" if game.name else ""
    print(f"game         {game.code}{name}")
    for i, line in enumerate(game.describe()):
        print(f"{'moves' if i == 0 else '':12} {line}")
    table = shipped_table(game)
    if table is None:
        print("rare values  no shipped table (octalgen rare computes one)")
    else:
        describe_table(table, "shipped table")
    solved = solved_games().get(game)
    if solved is None:
        print("period       not in the table of solved games")
    else:
        print(f"period       {solved.period}, preperiod {solved.preperiod}, largest value {solved.max_value} "
              "(known answer)")
    return 0
