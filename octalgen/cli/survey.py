"""``octalgen survey``: every octal game of a shape, computed and searched for a period."""

from __future__ import annotations

import math
import sys
import time

from ..cpu.kernel import default_threads
from ..engine.executors import make_executor
from ..engine.signals import StopRequest
from ..output import check_output
from ..survey import STOP_GRACE, Survey, parse_wholes, run_survey, survey_games
from . import fit_to_terminal, progress_for
from .arguments import positive_count_type, whole_number, workers_type

#: Values per game by default: enough to prove most periods of the 3-digit games, while the whole
#: survey stays a matter of minutes (the dense games' time grows with the square of N).
DEFAULT_MAX = 1 << 17

DESCRIPTION = """\
Compute every octal game of a shape - 0.d1d2d3 and 4.d1d2d3 for --digits 3, skipping games with
no move - up to N values each, and prove each game's period where one shows (least period and
least preperiod, by the Guy-Smith theorem, as octalgen period does; a game whose proof needs
more than N values is 'open').  Games run in parallel in local processes (or on a Dask
cluster), one game per task.  The result is a table, OUT.tsv and OUT.json: per game its status
(periodic: period, preperiod, the values the proof used, the largest value; open: the values
computed, the largest value and where, the sparse space and its mask, the rare positions and
the last one) and the group of games with identical sequences.  Every finished game is kept in
OUT.done.jsonl at once, so the same command goes on after Ctrl-C or a kill."""

EXAMPLES = """\
examples:
  octalgen survey                   every game 0.ddd and 4.ddd, N = 2^17
  octalgen survey --digits 2 --max 1e5 --out two-digit
  octalgen survey --whole 0 --max 1e6 --scheduler tcp://host:8786"""


def register(sub) -> None:
    parser = sub.add_parser(
        "survey",
        help="every octal game of a shape: computed, periods proven, identical sequences grouped",
        description=DESCRIPTION,
        epilog=EXAMPLES,
    )
    parser.add_argument(
        "--digits",
        type=lambda text: whole_number(text, 1, 4),
        default=3,
        metavar="D",
        help="digits after the point (1 to 4; default 3)",
    )
    parser.add_argument("--whole", default="0,4", metavar="W", help="whole-number digits: 0, 4 or 0,4 (default 0,4)")
    parser.add_argument(
        "--max",
        type=positive_count_type,
        default=DEFAULT_MAX,
        metavar="N",
        help=f"values per game at most (default {DEFAULT_MAX})",
    )
    parser.add_argument(
        "--out",
        default="survey",
        metavar="FILE",
        help="results go to FILE.tsv and FILE.json, finished games to FILE.done.jsonl (default: survey)",
    )
    parser.add_argument(
        "--workers",
        type=workers_type,
        metavar="W",
        help="local processes, one game each (default: one per core; 0: this process)",
    )
    parser.add_argument("--scheduler", metavar="ADDRESS", help="run the games on a Dask cluster instead")
    parser.set_defaults(run=run)


def run(args) -> int:
    games = survey_games(args.digits, parse_wholes(args.whole))
    survey = Survey(args.out, games, args.max)
    for path in (*survey.table_paths, survey.done_path):  # every file it writes, before any game is computed
        check_output(path)
    already = survey.resume()
    workers = default_threads() if args.workers is None else args.workers
    began = time.monotonic()
    stop = StopRequest()
    restore_signals = stop.catch_signals()
    try:
        executor = make_executor(workers, args.scheduler, stop.requested, grace=STOP_GRACE)
        try:
            with progress_for(args, len(games), label=f"survey of {len(games)} games", items="games") as progress:
                run_survey(survey, executor, progress, stop.requested)
        finally:
            executor.close(kill=True)
    finally:
        restore_signals()
        written = survey.write()
    if stop.signal is not None:  # a stop was requested
        raise survey.interrupted(stop.signal)
    counts = survey.counts()
    results = survey.finished()
    lines = [
        f"survey of {counts['games']} games (digits {args.digits}, whole {args.whole}), up to {args.max} values "
        f"each: {counts['periodic']} periodic, {counts['open']} open; {counts['distinct_sequences']} distinct "
        "sequences",
        f"{len(results) - already} games computed in {time.monotonic() - began:.0f} s"
        + (f" ({already} finished before)" if already else ""),
    ]
    open_games = [r for r in results if r["status"] == "open"]
    if open_games:
        lines.append(f"open to {args.max}: " + " ".join(r["code"] for r in open_games))
        lines += open_hints(open_games, args.max)
    print("\n".join(fit_to_terminal(lines)))
    print("\n".join(fit_to_terminal(["wrote " + " and ".join(str(p) for p in written)], sys.stderr)), file=sys.stderr)
    return 0


#: Games whose unproven repetition is shown, at most (the others are in the table's candidate columns).
SHOWN_CANDIDATES = 5


def open_hints(open_games: list[dict], limit: int) -> list[str]:
    """What more values may prove: the repetitions seen with the values their proofs need, and a larger --max."""
    seen = sorted((r for r in open_games if r["candidate_proof_values"]), key=lambda r: r["candidate_proof_values"])
    lines = [
        f"  {r['code']}: period {r['candidate_period']} preperiod {r['candidate_preperiod']} seen: "
        f"octalgen period {r['code']} --max {r['candidate_proof_values']}"
        for r in seen[:SHOWN_CANDIDATES]
    ]
    if len(seen) > SHOWN_CANDIDATES:
        lines.append(f"  ... and {len(seen) - SHOWN_CANDIDATES} more (the candidate columns of the table)")
    unseen = next((r["code"] for r in open_games if not r["candidate_proof_values"]), None)
    if unseen is not None:
        more = f"1e{math.ceil(math.log10(4 * limit))}"  # a power of ten, four times --max or more
        lines.append(f"(a period may need more values: try octalgen period {unseen} --max {more})")
    return lines
