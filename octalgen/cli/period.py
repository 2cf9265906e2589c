"""``octalgen period CODE [--max N]``: the least period and preperiod, proven (Guy–Smith).

Also ``--period P --preperiod I``: check a claimed result instead of searching.
"""

from __future__ import annotations

import argparse
import json
import sys

from ..engine.core import Engine
from ..engine.period import ExactProof
from ..engine.summary import summarize
from ..engine.tally import Tally
from ..errors import InputError
from ..periodicity import proof_length
from . import progress_for
from .arguments import add_game, add_table, count_type, load_table, positive_count_type
from .run import add_engine_options, engine_options

DEFAULT_MAX = 10**8

DESCRIPTION = """\
Search the nim-sequence of a game for its period and prove it.  Values are proven by the same
engine as octalgen run (at its speed) and kept on disk, not in memory: in the --checkpoint
directory, else in a temporary one removed at the end (about one byte per value).  A rolling
CRC-64 over the last W values finds repeated windows; a repeat gives a candidate period p, its
least preperiod i is found by comparing G(n) with G(n + p) backwards, every later value is
compared with the one p before it, and once G(0) ... G(2i + 2p + t - 1) are proven the period
holds for ever by the Guy-Smith theorem (t: the game's largest move).  The answer is the least
period and the least preperiod; nothing rests on the hash.  With --period P --preperiod I it
checks that claim: it proves it, or names the first n where G(n + P) != G(n) or why I or P is
not least (exit status 1).  With --checkpoint the search resumes like octalgen run."""

EXAMPLES = """\
examples:
  octalgen period .16                               period 149459 preperiod 105351
  octalgen period .354 --max 3e7                    period 1180 preperiod 10061916
  octalgen period .1777 --max 5e8 --checkpoint runs/1777
  octalgen period .16 --period 149459 --preperiod 105351"""


def register(sub) -> None:
    parser = sub.add_parser("period", help="find and prove the least period and preperiod (CRC search, Guy-Smith)",
                            description=DESCRIPTION, epilog=EXAMPLES,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    add_game(parser)
    parser.add_argument("--max", type=positive_count_type, metavar="N",
                        help=f"compute at most G(0) ... G(N-1) (default {DEFAULT_MAX:.0e}; with a claim, exactly the "
                             "values its proof needs)".replace("e+", "e"))
    parser.add_argument("--period", type=positive_count_type, metavar="P", help="check this claimed period")
    parser.add_argument("--preperiod", type=count_type, metavar="I", help="... with this claimed preperiod")
    parser.add_argument("--checkpoint", metavar="DIR",
                        help="checkpoint directory (and where the values are kept): the same command resumes")
    add_engine_options(parser)
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    add_table(parser)
    parser.set_defaults(run=run)


def run(args) -> int:
    if (args.period is None) != (args.preperiod is None):
        raise InputError("give both --period P and --preperiod I to check a claim (or neither to search)")
    claim = (args.period, args.preperiod) if args.period is not None else None
    t = args.game.max_take
    limit = args.max or (proof_length(*claim, t) if claim else DEFAULT_MAX)
    table = load_table(args) if args.table else None
    prover = ExactProof(t, claim)
    tally = Tally(0, prover)
    with progress_for(args, limit, label=f"period {args.game.code}") as progress:
        engine = Engine(args.game, engine_options(args, limit), [tally], table=table, directory=args.checkpoint,
                        identity={"command": "period", "claim": list(claim) if claim else None}, keep_all=True,
                        progress=progress)
        engine.run()
    summary = summarize(engine, tally)
    if args.json:
        json.dump({"game": args.game.code, "max": limit, "values": engine.position, "period": summary.period,
                   "candidates": summary.candidates, "refuted": summary.refuted,
                   "seconds": round(engine.elapsed, 3)}, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        print("\n".join(report_lines(summary, engine.position, limit, t, engine.elapsed)))
    return 1 if summary.refuted else 0


def report_lines(summary, computed: int, limit: int, t: int, seconds: float) -> list[str]:
    """What ``period`` prints: the proven period, a refuted claim, or what is still needed."""
    timing = f"computed {computed} values in {seconds:.1f} s"
    if summary.period:
        p, i, length = summary.period["period"], summary.period["preperiod"], summary.period["proof_length"]
        return [f"period {p} preperiod {i}",
                f"proof: G(n + {p}) = G(n) for {i} <= n < {2 * i + p + t} (Guy-Smith, t = {t}), "
                f"checked on G(0) ... G({length - 1})", timing]
    if summary.refuted:
        return [f"claim refuted: {summary.refuted}", timing]
    lines = [f"no period up to {limit}"]
    for c in summary.candidates:
        lines.append(f"candidate period {c['period']} preperiod {c['preperiod']}: G(n + {c['period']}) = G(n) checked "
                     f"for {c['preperiod']} <= n < {computed - c['period']}; the proof needs G(0) ... "
                     f"G({c['proof_length'] - 1}): run with --max {c['proof_length']}")
    lines.append("(a period p with preperiod i is found once N > 2i + 2p + t and N > a + p, a the first power of two "
                 "with a > p and a >= i + W - 1, W the window of the hash)")
    lines.append(timing)
    return lines
