"""``octalgen stones``: who wins pick-up stones (Fisher) at each pile size.

Classic (``--moves``), no-repeat (``--moves ... --no-repeat [--memory K]``) and
asymmetric (``--left ... --right ...``) games; see :mod:`octalgen.stones.rules`.
Prints one digit per line for pile sizes 0 ... N-1 (1 = the player to move
wins, 2 = the other player wins), or ``--table``, or ``--summary``.
"""

from __future__ import annotations

import logging
import sys

import numpy as np

from ..errors import ComputationError, InputError
from ..stones import BACKENDS, Asymmetric, Classic, NoRepeat, compute, default_backend, parse_moves
from ..stones.eventual_period import eventual_periods_of_game
from . import fit_to_terminal
from .arguments import count_type

log = logging.getLogger("octalgen")

#: Pile sizes per row of ``--table``, and per group of digits in a row.
TABLE_ROW = 50
TABLE_GROUP = 10

#: At most this many residues are listed by ``--summary``.
SUMMARY_RESIDUES = 24

_LEGEND = {
    "classic": "1 = the player to move wins, 2 = the other player wins",
    "no-repeat": "2 = safe (the player to move loses whatever the previous moves were), 1 = not safe",
    "asymmetric": "1 = the player to move wins, 2 = the other player wins",
}


def register(sub) -> None:
    parser = sub.add_parser(
        "stones",
        help="pick-up stones (Fisher): who wins at each pile size, classic, no-repeat or asymmetric",
        description="Pick-up stones (T. Fisher): players take turns removing a number of stones allowed by a "
        "move set; who cannot move loses.  Print who wins at pile sizes 0 ... N-1, one digit per "
        "line: 1 = the player to move wins, 2 = the other player wins (no-repeat: 2 = safe, i.e. the "
        "player to move loses whatever the previous moves were), or a --table, or a --summary with "
        "the eventual period of the outcomes.",
        epilog="examples:\n"
        "  octalgen stones --moves 1,5,8,10 -n 1e6 --summary\n"
        "  octalgen stones --moves 1,2,3,4,5 --no-repeat --memory 1 -n 100 --table\n"
        "  octalgen stones --left 2,5,9 --right 3,4,8 --first left -n 1e7 --summary",
    )
    parser.add_argument("--moves", metavar="LIST", help="removal counts of both players, e.g. 1,5,8,10")
    parser.add_argument(
        "--no-repeat",
        action="store_true",
        help="nobody may remove a count the opponent removed in one of their last K moves",
    )
    parser.add_argument(
        "--memory", type=count_type, metavar="K", help="K for --no-repeat: 1 <= K < number of counts (default 1)"
    )
    parser.add_argument("--left", metavar="LIST", help="removal counts of Left (asymmetric game, with --right)")
    parser.add_argument("--right", metavar="LIST", help="removal counts of Right (asymmetric game, with --left)")
    parser.add_argument(
        "--first",
        choices=("left", "right"),
        help="asymmetric game: who is to move in the digits printed (default left)",
    )
    parser.add_argument(
        "-n",
        "--count",
        type=count_type,
        required=True,
        metavar="N",
        help="pile sizes 0 ... N-1 (10**6 and 1e6 are accepted)",
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--table", action="store_true", help=f"a compact table, {TABLE_ROW} pile sizes a row")
    mode.add_argument(
        "--summary",
        action="store_true",
        help="the eventual period of the outcomes and where it starts, proven from pile sizes "
        "below N; for asymmetric games the size from which one player wins whoever starts",
    )
    parser.add_argument(
        "--backend",
        choices=BACKENDS,
        help="python (the reference) or c (generated C); default c when a C compiler is present",
    )
    parser.set_defaults(run=run)


def game_from_arguments(args) -> Classic | NoRepeat | Asymmetric:
    """The game the options describe; :class:`InputError` for a contradictory combination."""
    asymmetric = args.left is not None or args.right is not None
    if args.moves is not None and asymmetric:
        raise InputError("give either --moves or --left and --right, not both")
    if args.first is not None and not asymmetric:
        raise InputError("--first is for asymmetric games (--left and --right)")
    if asymmetric:
        if args.left is None or args.right is None:
            raise InputError("an asymmetric game needs both --left and --right")
        if args.no_repeat or args.memory is not None:
            raise InputError("--no-repeat is for one move set (--moves), not --left/--right")
        return Asymmetric(parse_moves(args.left, "move set of Left"), parse_moves(args.right, "move set of Right"))
    if args.moves is None:
        raise InputError("give the removal counts: --moves 1,5,8,10, or --left ... --right ...")
    moves = parse_moves(args.moves)
    if args.no_repeat:
        return NoRepeat(moves, 1 if args.memory is None else args.memory)
    if args.memory is not None:
        raise InputError("--memory goes with --no-repeat")
    return Classic(moves)


def run(args) -> int:
    game = game_from_arguments(args)
    backend = args.backend or default_backend()
    if args.backend is None and backend == "python":
        log.info("no C compiler found: using the Python reference (slow)")
    if args.summary:
        _print_summary(game, args.count, backend, sys.stdout)
        return 0
    outcomes = compute(game, args.count, backend=backend)
    if args.table:
        _print_table(outcomes, sys.stdout)
    else:
        channel = args.first or game.channels[0]
        _write_digits(outcomes.digits(channel), sys.stdout.buffer)
    sys.stdout.flush()
    return 0


def _write_digits(digits: np.ndarray, out, chunk: int = 1 << 20) -> None:
    """One digit per line, in chunks (pile counts of 10^8 and more)."""
    for first in range(0, len(digits), chunk):
        part = digits[first : first + chunk]
        lines = np.empty((len(part), 2), dtype=np.uint8)
        lines[:, 0] = part + ord("0")
        lines[:, 1] = ord("\n")
        out.write(lines.tobytes())


def _print_table(outcomes, out) -> None:
    game = outcomes.game
    print("\n".join(fit_to_terminal([f"{game.describe()}: {_LEGEND[game.rule]}"], out)), file=out)
    labels = {"left": "Left first", "right": "Right first"} if isinstance(game, Asymmetric) else {}
    label_width = max(map(len, labels.values()), default=0)
    digit_rows = {name: (outcomes.digits(name) + ord("0")).tobytes().decode() for name in outcomes.second_wins}
    pile_width = max(4, len(str(max(outcomes.count - 1, 0))))
    header = " ".join(f"+{g}".ljust(TABLE_GROUP) for g in range(0, TABLE_ROW, TABLE_GROUP))
    print(f"{'pile':>{pile_width}}  {'':{label_width}}{'  ' if labels else ''}{header}".rstrip(), file=out)
    for start in range(0, outcomes.count, TABLE_ROW):
        for i, (name, digits) in enumerate(digit_rows.items()):
            row = digits[start : start + TABLE_ROW]
            groups = " ".join(row[g : g + TABLE_GROUP] for g in range(0, len(row), TABLE_GROUP))
            pile = str(start) if i == 0 else ""
            label = f"{labels[name]:{label_width}}  " if labels else ""
            print(f"{pile:>{pile_width}}  {label}{groups}", file=out)


def _print_summary(game, limit: int, backend: str, out) -> None:
    summary, count = eventual_periods_of_game(game, limit, backend)
    if summary is None:
        raise ComputationError(
            f"no period is proven among pile sizes below {limit} (the states of {game.reach} "
            f"consecutive pile sizes never repeat there); try a larger -n"
        )
    wins = compute(game, count, backend=backend).second_wins
    print(game.describe(), file=out)
    names = {"mover": "outcomes", "safe": "safe positions", "left": "Left first", "right": "Right first"}
    width = max(len(names[name]) for name in summary.periods) + 2
    for name, period in summary.periods.items():
        block = wins[name][period.start : period.start + period.period]
        residues = sorted((period.start + int(t)) % period.period for t in np.flatnonzero(block))
        if not residues:
            pattern = f"1 for every n >= {period.start}"
        elif len(residues) == period.period:
            pattern = f"2 for every n >= {period.start}"
        else:
            shown = ", ".join(map(str, residues[:SUMMARY_RESIDUES]))
            more = f", ... ({len(residues)} residues)" if len(residues) > SUMMARY_RESIDUES else ""
            pattern = f"for n >= {period.start}, 2 exactly at n = {shown}{more} (mod {period.period})"
        print(f"{names[name]:{width}}period {period.period} from n = {period.start}: {pattern}", file=out)
    if isinstance(game, Asymmetric):
        if summary.always_wins is None:
            verdict = "no player wins whoever starts from some size on"
        else:
            player, start = summary.always_wins
            verdict = f"{player} wins whoever starts from n = {start} on"
        print(f"{'winner':{width}}{verdict}", file=out)
