"""``octalgen period CODE [--max N]``: find the period of a nim-sequence and prove it (Guy-Smith)."""

from __future__ import annotations

from ..engine.period import find_period
from .arguments import add_game, add_table, count_type, load_table

DEFAULT_MAX = 10**8


def register(sub) -> None:
    parser = sub.add_parser("period", help="find and prove the least period and preperiod (CRC search, Guy-Smith)")
    add_game(parser)
    parser.add_argument("--max", type=count_type, default=DEFAULT_MAX, metavar="N",
                        help=f"compute at most G(0) ... G(N-1), kept in memory (default {DEFAULT_MAX})")
    parser.add_argument("--threads", type=count_type, metavar="T", help="kernel threads")
    parser.add_argument("--workers", type=count_type, metavar="W", help="verification processes")
    add_table(parser)
    parser.set_defaults(run=run)


def run(args) -> int:
    table = load_table(args) if args.table else None
    report = find_period(args.game, args.max, table=table, threads=args.threads, workers=args.workers)
    print("\n".join(report.lines(args.max)))
    return 0
