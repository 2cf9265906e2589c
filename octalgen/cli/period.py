"""``octalgen period CODE [--max N]``: the least period and preperiod, proven (Guy–Smith).

Also ``--period P --preperiod I``: check a claimed result instead of searching.
"""

from __future__ import annotations

import json
import sys

from ..api import DEFAULT_PERIOD_MAX, PeriodResult, period, period_limit
from ..errors import InputError
from . import fit_to_terminal, progress_for
from .arguments import add_game, add_table, count_type, load_table, positive_count_type
from .run import add_engine_options

DESCRIPTION = """\
Search the nim-sequence of a game for its period and prove it.  Values are proven by the same
engine as octalgen run (at its speed) and kept on disk, not in memory: in the --checkpoint
directory, else in a temporary one removed at the end (about one byte per value).  A rolling
CRC-64 over the last W values finds repeated windows; a repeat gives a candidate period p, its
least preperiod i is found by comparing G(n) with G(n + p) backwards, every later value is
compared with the one p before it, and once G(0) ... G(2i + 2p + t - 1) are proven the period
holds for ever by the Guy-Smith theorem (t: the game's largest move).  The values are also
searched directly (each time they grow by a quarter, and at N), so every period that
G(0) ... G(N-1) prove is found, and the search stops once a proof is complete.  The answer is the least
period and the least preperiod; nothing rests on the hash.  With --period P --preperiod I it
checks that claim: it proves it, or names the first n >= I where G(n + P) != G(n), or the
shorter period or the witness that I - 1 is a preperiod too (exit status 1).  With
--checkpoint the search resumes like octalgen run."""

EXAMPLES = """\
examples:
  octalgen period .16                     period 149459 preperiod 105351
  octalgen period .354 --max 3e7          period 1180 preperiod 10061916
  octalgen period .1777 --max 5e8 --checkpoint runs/1777
  octalgen period .16 --period 149459 --preperiod 105351"""


def register(sub) -> None:
    parser = sub.add_parser(
        "period",
        help="find and prove the least period and preperiod (CRC search, Guy-Smith)",
        description=DESCRIPTION,
        epilog=EXAMPLES,
    )
    add_game(parser)
    parser.add_argument(
        "--max",
        type=positive_count_type,
        metavar="N",
        help=f"compute at most G(0) ... G(N-1) (default {DEFAULT_PERIOD_MAX:.0e}; with a claim, "
        "exactly the values its proof needs)".replace("e+", "e"),
    )
    parser.add_argument("--period", type=positive_count_type, metavar="P", help="check this claimed period")
    parser.add_argument("--preperiod", type=count_type, metavar="I", help="... with this claimed preperiod")
    parser.add_argument(
        "--checkpoint",
        metavar="DIR",
        help="checkpoint directory (and where the values are kept): the same command resumes",
    )
    add_engine_options(parser)
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    add_table(parser)
    parser.set_defaults(run=run)


def run(args) -> int:
    if (args.period is None) != (args.preperiod is None):
        raise InputError("give both --period P and --preperiod I to check a claim (or neither to search)")
    claim = (args.period, args.preperiod) if args.period is not None else None
    limit = period_limit(args.game, args.max, claim)
    table = load_table(args) if args.table else None
    with progress_for(args, limit, label=f"period {args.game.code}") as progress:
        result = period(
            args.game,
            args.max,
            claim=claim,
            table=table,
            checkpoint=args.checkpoint,
            threads=args.threads,
            workers=args.workers,
            scheduler=args.scheduler,
            chunk=args.chunk,
            checkpoint_every=args.checkpoint_every,
            progress=progress,
        )
    if args.json:
        json.dump(as_json(result), sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        print("\n".join(fit_to_terminal(report_lines(result, args.game.max_take))))
    return 1 if result.refuted else 0


def as_json(result: PeriodResult) -> dict:
    """What ``period --json`` prints."""
    proven = (
        {"period": result.period, "preperiod": result.preperiod, "proof_length": result.proof_length}
        if result.proven
        else None
    )
    candidates = [
        {
            "period": c.period,
            "preperiod": c.preperiod,
            "checked_to": c.checked_to,
            "proof_length": c.proof_length,
            "outcome": c.outcome,
        }
        for c in result.candidates
    ]
    return {
        "game": result.game,
        "max": result.limit,
        "values": result.values,
        "period": proven,
        "candidates": candidates,
        "refuted": result.refuted,
        "seconds": round(result.seconds, 3),
        "session": {"values": result.session_values, "seconds": round(result.session_seconds, 3)},
    }


def report_lines(result: PeriodResult, t: int) -> list[str]:
    """What ``period`` prints: the proven period, a refuted claim, or what is still needed (t: the largest move)."""
    computed = result.values
    timing = f"computed {result.session_values} values in {result.session_seconds:.1f} s"
    before = computed - result.session_values
    if before:  # resumed from a checkpoint
        timing += f"; G(0) ... G({before - 1}) were proven before, in {result.seconds - result.session_seconds:.1f} s"
    if result.proven:
        p, i, length = result.period, result.preperiod, result.proof_length
        assert p is not None and i is not None and length is not None  # all set once proven
        return [
            f"period {p} preperiod {i}",
            f"proof: G(n + {p}) = G(n) for {i} <= n < {2 * i + p + t} (Guy-Smith, t = {t}), "
            f"checked on G(0) ... G({length - 1})",
            timing,
        ]
    if result.refuted:
        return [f"claim refuted: {result.refuted}", timing]
    lines = [f"no period up to {result.limit}"]
    for c in result.open_candidates:
        lines.append(
            f"candidate period {c.period} preperiod {c.preperiod}: G(n + {c.period}) = G(n) checked "
            f"for {c.preperiod} <= n < {computed - c.period}; the proof needs G(0) ... "
            f"G({c.proof_length - 1}): run with --max {c.proof_length}"
        )
    lines.append(f"(a period p with preperiod i is proven by N >= 2i + 2p + t values, t = {t})")
    lines.append(timing)
    return lines
