"""``octalgen emit c CODE``: write the generated C of a game (what ``--backend c`` compiles).

Writes ``DIR/<game>/octalgen_exact.{c,h}`` (the exact solver) and, for a game with a sparse
space, ``octalgen_kernel.{c,h}`` (speculative kernel and verifier), and prints their paths.
The kernel is planned as the backend plans it: the table reconciled with the exact values
before the kernel's first heap, and the storage chosen from them.
"""

from __future__ import annotations

from ..cpu.generate import DEFAULT_MAX_THREADS, exact_unit, kernel_unit
from ..engine.planning import plan_game
from ..output import check_directory, write_output
from ..rare import RareTable
from .arguments import (
    GENERATED_DIRECTORY,
    add_game,
    add_table,
    check_kernel_threads,
    game_folder,
    load_table,
    threads_type,
)


def register(targets) -> None:
    parser = targets.add_parser(
        "c",
        help="the generated C of a game: exact solver, speculative kernel, verifier",
        description="Write the generated C of a game into DIR/<game>/: octalgen_exact.{c,h} (the exact solver) "
        "and, for a game whose values have a sparse space (a rare mask), octalgen_kernel.{c,h}: the "
        "speculative kernel, unrolled over the rare-value terms, and the verifier that proves its "
        "values.  Prints the paths written.",
        epilog="examples:\n"
        "  octalgen emit c .6                     # generated/0.6/...\n"
        "  octalgen emit c .16 -o /tmp/gen --threads 4",
    )
    add_game(parser)
    parser.add_argument(
        "-o",
        "--output",
        metavar="DIR",
        default=GENERATED_DIRECTORY,
        help=f"directory to write into, in a folder per game (default: {GENERATED_DIRECTORY}/)",
    )
    add_table(parser)
    parser.add_argument(
        "--threads",
        type=threads_type,
        metavar="T",
        help="the most threads the kernel will run with (default: as many as it takes).  Threads "
        "take blocks of heaps in turn and pass a baton at the end of each block (Grossman "
        "section 3.3): at most 57 threads with u8 storage, 29 with u16",
    )
    parser.set_defaults(run=run)


def units(game, table: RareTable | None = None, threads: int | None = None):
    """The units ``emit c`` writes for ``game``: the exact solver, and the kernel if the game has one.

    ``threads``: the most the kernel runs with (refused beyond what it takes); None: as many as it takes.
    """
    plan, _prefix = plan_game(game, table)  # with no kernel, plan_game logs why
    if plan is not None and threads is not None:
        check_kernel_threads(threads, plan)
    return [exact_unit(game)] + ([kernel_unit(plan, threads or DEFAULT_MAX_THREADS)] if plan is not None else [])


def run(args) -> int:
    table = load_table(args)
    folder = game_folder(args.output, args.game)
    check_directory(folder)  # before generating anything
    for unit in units(args.game, table, args.threads):
        for suffix, text in ((".c", unit.standalone), (".h", unit.header)):
            path = folder / (unit.name + suffix)
            write_output(path, text)
            print(path)
    return 0
