"""``octalgen run CODE --until N --checkpoint DIR``: a long, resumable, proven run."""

from __future__ import annotations

import json
import sys

from ..engine.counts import FIRST_TABLE, count_words, output_directory, write_tables
from ..engine.options import CHECKPOINT_EVERY, CHUNK
from . import fit_to_terminal, progress_for
from .arguments import (
    add_game,
    add_masks,
    add_table,
    chunk_type,
    count_type,
    load_table,
    positive_count_type,
    seconds_type,
    threads_type,
    workers_type,
)

DESCRIPTION = """\
Prove G(0) ... G(N-1) of a game and report what a long search needs: the FNV-1a-64 digest
that independent programs agree on, the largest value and where it first appears, the zeros,
rare values found by verification, and the period search (a rolling CRC-64 over the last W
values, anchored at powers of two; a repeated window is proven a period with the Guy-Smith
theorem).  The speculative kernel (generated C) runs ahead; verifying processes prove every
value; a failed proof is recovered exactly (a new rare value extends the table).  Memory stays
bounded whatever N.  With --checkpoint the run is written to DIR every few seconds and at exit,
and the same command resumes it, also after kill -9; a larger --until extends a finished run.
Ctrl-C or SIGTERM stops within a second or two and prints the command that resumes
(exit status 130 and 143).  The figures printed are the mathematics; -v adds the rare table's
digest, how the cores were used and the CPU seconds of each part, and --json gives them all."""

EXAMPLES = """\
examples:
  octalgen run .6 --until 1e8 --checkpoint runs/officers
  octalgen run .6 --until 1e9 --checkpoint runs/officers   # goes on from 1e8
  octalgen run .6 --until 1e7 --checkpoint runs/kept --keep-values
      # keeps the values, for octalgen export
  octalgen run .161 --until 1073741825 --checkpoint runs/161 --counts tables
      # tables/0.161/2 ... /1073741824: the counts at every power of two
  octalgen run .16 --until 1e6          # stops once its period is proven
  octalgen run .6 --until 1e6 -v        # also the cores and CPU time used"""


def register(sub) -> None:
    parser = sub.add_parser(
        "run",
        help="long run: prove G(0) ... G(N-1) with statistics, digests and period search; resumable",
        description=DESCRIPTION,
        epilog=EXAMPLES,
    )
    add_game(parser)
    parser.add_argument(
        "--until",
        type=positive_count_type,
        required=True,
        metavar="N",
        help="prove G(0) ... G(N-1) (N up to 1e15; 1e8, 1.05e8 and 10**8 are accepted)",
    )
    parser.add_argument(
        "--checkpoint",
        metavar="DIR",
        help="checkpoint directory: written every few seconds and at exit; the same command resumes from it",
    )
    add_engine_options(parser)
    parser.add_argument(
        "--keep-values",
        action="store_true",
        help="keep every proven value in DIR/values/ (one byte per value where the game allows); "
        "octalgen export reads them back",
    )
    parser.add_argument(
        "--counts",
        metavar="OUT",
        help="at the end, write the counts of each value among G(1) ... G(n), at every power of two "
        "n >= 2 passed and at N-1, as OUT/0.<code>/<n> (rogalski's layout: 'value count' lines, "
        "zero counts included); octalgen export --counts writes them from a checkpoint",
    )
    parser.add_argument(
        "--digest-from",
        type=count_type,
        default=0,
        metavar="S",
        help="also print the FNV-1a-64 digest of G(S) ... G(N-1)",
    )
    parser.add_argument(
        "--backend",
        choices=("c", "cuda"),
        default="c",
        help="c: generated kernel and verifier on this machine's cores (default); cuda: the kernel "
        "and verifier on an NVIDIA GPU",
    )
    add_masks(parser, "0x1ee")
    parser.add_argument(
        "--json", action="store_true", help="print the figures as JSON (all of them: the cores and CPU seconds too)"
    )
    add_table(parser)
    parser.set_defaults(run=run)


def add_engine_options(parser) -> None:
    """--threads, --workers, --scheduler, --chunk, --checkpoint-every: how the engine computes."""
    parser.add_argument(
        "--threads",
        type=threads_type,
        metavar="T",
        help="kernel threads: the threads take blocks of heaps in turn and pass a baton at the end "
        "of each block (Grossman's baton passing), so T threads need T free cores.  Default: "
        "chosen with --workers from the cores and the rates measured on this machine (or 1 when "
        "--workers is given)",
    )
    parser.add_argument(
        "--workers",
        type=workers_type,
        metavar="W",
        help="verifying processes (default: chosen with --threads, or one per core; none on one core "
        "or for a small job; 0: verify in this process)",
    )
    parser.add_argument(
        "--scheduler", metavar="ADDRESS", help="send verification to a running Dask scheduler, e.g. tcp://host:8786"
    )
    parser.add_argument(
        "--chunk",
        type=chunk_type,
        default=CHUNK,
        metavar="HEAPS",
        help=f"heaps per kernel chunk and verification task (default {CHUNK})",
    )
    parser.add_argument(
        "--checkpoint-every",
        type=seconds_type,
        default=CHECKPOINT_EVERY,
        metavar="SECONDS",
        help=f"seconds between checkpoints (default {CHECKPOINT_EVERY:g})",
    )


def run(args) -> int:
    from .. import api
    from ..errors import InputError

    if args.keep_values and not args.checkpoint:
        raise InputError("--keep-values needs --checkpoint DIR (the values go to DIR/values/)")
    if args.counts is not None:
        output_directory(args.counts, args.game.code)  # before the run: a path it could never write fails now
    table = load_table(args) if args.table else None
    with progress_for(args, args.until, label=args.game.code) as progress:
        summary = api.run(
            args.game,
            args.until,
            args.checkpoint,
            backend=args.backend,
            table=table,
            keep_values=args.keep_values,
            digest_from=args.digest_from,
            threads=args.threads,
            workers=args.workers,
            scheduler=args.scheduler,
            chunk=args.chunk,
            checkpoint_every=args.checkpoint_every,
            progress=progress,
        )
    if args.counts is not None and summary.count_tables:
        write_counts(args.counts, summary)
    print_summary(summary, args.json, args.mask, engineering=args.verbose > 0)
    return 0


def write_counts(directory, summary) -> None:
    """Write a run's count tables into ``directory/0.<code>/`` and say so on stderr (also where some are missing)."""
    code = summary.statistics.game
    where = write_tables(directory, code, summary.count_tables)
    print(f"octalgen: wrote {count_words(summary.count_tables)} of {code} to {where}", file=sys.stderr)
    since = summary.count_tables_since
    if since > FIRST_TABLE:
        print(
            f"octalgen: the run was resumed at G({since}) from a checkpoint that kept no count tables: the powers "
            f"of two below {since} have none",
            file=sys.stderr,
        )


def print_summary(summary, as_json: bool, masks=(), engineering: bool = False) -> None:
    """Print a :class:`~octalgen.engine.run_summary.RunSummary`: every figure as JSON, or the lines a
    reader wants (``engineering``: also the cores and CPU seconds), fitted to the terminal."""
    if as_json:
        json.dump(summary.to_json(masks), sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        sys.stdout.write("\n".join(fit_to_terminal(summary.lines(masks, engineering))) + "\n")
    sys.stdout.flush()
