"""``octalgen run CODE --until N --checkpoint DIR``: a long, resumable, proven run."""

from __future__ import annotations

import json
import sys

from ..engine.engine import CHECKPOINT_EVERY, CHUNK, LongRun, RunOptions
from . import progress_for
from .arguments import add_game, add_table, count_type


def register(sub) -> None:
    parser = sub.add_parser(
        "run", help="long run: prove G(0) ... G(N-1) with statistics, digests and period search; resumable",
        description="Speculative kernel, parallel verification, statistics and the CRC-64 period search, "
                    "in bounded memory.  With --checkpoint, running the same command again resumes.")
    add_game(parser)
    parser.add_argument("--until", type=count_type, required=True, metavar="N", help="prove G(0) ... G(N-1)")
    parser.add_argument("--checkpoint", metavar="DIR",
                        help="checkpoint directory: written every few seconds and at exit; resumed from")
    parser.add_argument("--threads", type=count_type, default=1, metavar="T", help="kernel threads (default 1)")
    parser.add_argument("--workers", type=count_type, metavar="W",
                        help="local verification processes (default: all cores; 0: in this process)")
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="send verification to a running Dask scheduler, e.g. tcp://host:8786")
    parser.add_argument("--keep-values", action="store_true",
                        help="also write the proven values to DIR/values/ (compressed bytes where the game allows)")
    parser.add_argument("--digest-from", type=count_type, default=0, metavar="S",
                        help="also print the FNV-1a-64 digest of G(S) ... G(N-1)")
    parser.add_argument("--backend", choices=("c", "cuda"), default="c",
                        help="c: generated kernel and verifier here (default); cuda: proven values from the GPU")
    parser.add_argument("--chunk", type=count_type, default=CHUNK, metavar="HEAPS",
                        help=f"heaps per kernel chunk and verification task (default {CHUNK})")
    parser.add_argument("--checkpoint-every", type=float, default=CHECKPOINT_EVERY, metavar="SECONDS",
                        help=f"seconds between checkpoints (default {CHECKPOINT_EVERY:g})")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    add_table(parser)
    parser.set_defaults(run=run)


def run(args) -> int:
    from ..errors import InputError
    from ..rare import RareTable

    if args.keep_values and not args.checkpoint:
        raise InputError("--keep-values needs --checkpoint DIR (the values go to DIR/values/)")
    if args.chunk < 1:
        raise InputError("--chunk must be at least 1")
    table = RareTable.load(args.table, game=args.game) if args.table else None
    options = RunOptions(until=args.until, digest_from=args.digest_from, keep_values=args.keep_values,
                         threads=max(1, args.threads), workers=args.workers, scheduler=args.scheduler,
                         chunk=args.chunk, backend=args.backend,
                         checkpoint_every=args.checkpoint_every)
    progress = progress_for(args, args.until, label=args.game.code)
    summary = LongRun(args.game, options, args.checkpoint, table=table, progress=progress).run()
    print_summary(summary, args.json)
    return 0


def print_summary(summary, as_json: bool) -> None:
    if as_json:
        json.dump(summary.to_json(), sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        sys.stdout.write("\n".join(summary.lines()) + "\n")
    sys.stdout.flush()
