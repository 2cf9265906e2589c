"""``octalgen rare CODE``: the rare-value table of a game, as YAML."""

from __future__ import annotations

import logging
import sys

from ..api import rare_table
from ..output import check_output, write_output
from ..rare import DEFAULT_TABLE_UPTO
from .arguments import add_game, positive_count_type

log = logging.getLogger("octalgen")


def register(sub) -> None:
    parser = sub.add_parser(
        "rare",
        help="print or write the rare-value table of a game (YAML)",
        description="Print the rare-value table of a game as YAML: its sparse space and every (heap, value) whose "
        "value is rare there.  A sparse space is a range (a value is rare when it has an even number of "
        "set bits under the mask) or one of positions (rare at heap n when the set bits under the mask "
        "plus n plus the beans t every two-heap move takes are even: Flammenkamp's sparse positions); "
        "octalgen finds which, and the mask.  The generated kernels are built from this table.  "
        "Without --upto the shipped table is printed when there is one; with --upto N it is cut to "
        "G(0) ... G(N-1) when it covers them; otherwise the table is computed from exact values "
        "G(0) ... G(N-1).",
        epilog="examples:\n"
        "  octalgen rare .6                            # the shipped table of Officers\n"
        "  octalgen rare .16 --upto 100000 -o 16.yaml  # exact for G(0) ... G(99999)\n"
        "  octalgen rare .104              # a sparse space of positions: 20 rare heaps",
    )
    add_game(parser)
    parser.add_argument(
        "--upto",
        type=positive_count_type,
        metavar="N",
        help=f"establish the table exactly for G(0) ... G(N-1) (default: the shipped table, "
        f"or N = {DEFAULT_TABLE_UPTO})",
    )
    parser.add_argument("--backend", metavar="NAME", help="exact backend to compute with (default: fastest)")
    parser.add_argument("-o", "--output", metavar="FILE", help="write the YAML here instead of stdout")
    parser.set_defaults(run=run)


def run(args) -> int:
    if args.output:
        check_output(args.output)  # before computing a table
    table = rare_table(args.game, args.upto, backend=args.backend)
    if args.output:
        write_output(args.output, table.to_yaml())
        log.info(
            "wrote %s: %d %s, sparse space %s",
            args.output,
            table.count,
            "rare values" if table.kind == "range" else "rare positions",
            table.describe(),
        )
    else:
        sys.stdout.write(table.to_yaml())
    return 0
