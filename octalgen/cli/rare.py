"""``octalgen rare CODE``: the rare-value table of a game, as YAML."""

from __future__ import annotations

import logging
import sys

from ..backends import compute_values, get_backend
from ..rare import DEFAULT_TABLE_UPTO, RareTable, shipped_table
from .arguments import add_game, count_type

log = logging.getLogger("octalgen")


def register(sub) -> None:
    parser = sub.add_parser(
        "rare", help="print or write the rare-value table of a game (YAML)",
        description="Print the rare-value table of a game as YAML: its sparse space and every (heap, value) whose "
                    "value is rare there.  A sparse space is a range (a value is rare when it has an even number of "
                    "set bits under the mask) or one of positions (rare at heap n when the set bits under the mask "
                    "plus n plus the beans t every two-heap move takes are even: Flammenkamp's sparse positions); "
                    "octalgen finds which, and the mask.  The generated kernels are built from this table.  "
                    "Without --upto the shipped table is printed when there is one; otherwise (or when --upto "
                    "asks for more than it covers) the table is computed from exact values G(0) ... G(N-1).",
        epilog="examples:\n"
               "  octalgen rare .6                          # the shipped table of Officers\n"
               "  octalgen rare .16 --upto 100000 -o 16.yaml  # computed from 100,000 exact values\n"
               "  octalgen rare .104                        # a sparse space of positions: 20 rare heaps")
    add_game(parser)
    parser.add_argument("--upto", type=count_type, metavar="N",
                        help=f"establish the table exactly for G(0) ... G(N-1) (default: the shipped table, "
                             f"or N = {DEFAULT_TABLE_UPTO})")
    parser.add_argument("--backend", metavar="NAME", help="exact backend to compute with (default: fastest)")
    parser.add_argument("-o", "--output", metavar="FILE", help="write the YAML here instead of stdout")
    parser.set_defaults(run=run)


def run(args) -> int:
    table = shipped_table(args.game)
    if table is None or (args.upto is not None and args.upto > table.exact_to):
        upto = args.upto or DEFAULT_TABLE_UPTO
        backend = get_backend(args.backend)
        if not backend.exact:
            from ..errors import InputError

            raise InputError(f"backend {backend.name} is speculative; a rare table must be exact")
        log.info("computing %d exact values of %s with the %s backend", upto, args.game.code, backend.name)
        table = RareTable.from_values(args.game, compute_values(args.game, 0, upto, backend=backend.name))
    else:
        log.info("shipped table for %s (exact below %d)", args.game.code, table.exact_to)
    if args.output:
        table.save(args.output)
        log.info("wrote %s: %d rare positions, sparse space %s", args.output, table.count, table.describe())
    else:
        sys.stdout.write(table.to_yaml())
    return 0
