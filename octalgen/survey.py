"""``octalgen survey``: every octal game of a shape, computed and searched for a period.

Flammenkamp's tables cover every game 0.d1d2d3 and 4.d1d2d3; a survey computes each of them
with the engine, up to N values, and proves its period where one shows (the exact proof of
``octalgen period``: least period and least preperiod, Guy–Smith; nothing is reported periodic
without it).  Games run in parallel (local processes or a Dask cluster), one game per task;
each finished game is appended at once to the survey's record of finished games, so a survey
stopped at any moment goes on from there.  Games whose sequences agree on G(0) ... G(N-1) are
grouped (a periodic game's values beyond its proof follow from its period).
"""

from __future__ import annotations

import itertools
import json
import tempfile
import time
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

from .engine.options import EngineOptions
from .engine.period_proof import ExactProof
from .engine.run_summary import summarized_run
from .engine.scan import Scanner
from .engine.seams import KernelPlugin
from .engine.tally import Tally
from .errors import CheckpointError, InputError, Interrupted
from .game import OctalGame, parse_game
from .output import write_output
from .rare import RareTable

#: Values computed per step of the periodic extension of a digest.
_EXTEND = 1 << 20

#: Seconds a game stopped in a worker process (Ctrl-C, SIGTERM) is given to end as it stands, before
#: its process is killed: its temporary directory is removed, a compile under way is cancelled.
STOP_GRACE = 5.0


def survey_games(digits: int = 3, wholes=(0, 4)) -> list[OctalGame]:
    """Every game ``w.d1 ... d_digits`` (w in ``wholes``), by canonical code, without move-less games.

    Codes with trailing zeros are the shorter games (0.600 is .6), so each game appears once.
    """
    games: dict[str, OctalGame] = {}
    for whole in wholes:
        for rest in itertools.product(range(8), repeat=digits):
            game = OctalGame((whole, *rest))
            if any(True for _ in game.moves()):
                games.setdefault(game.code, game)
    return list(games.values())


@dataclass
class GameResult:
    """What the survey found for one game.

    ``status`` is ``periodic`` (then period, preperiod and the values the proof used) or
    ``open`` (N values computed, no period proven; then the sparse space, its mask, the rare
    positions below N and the last one, and a repetition seen whose proof needs more than N
    values, if any: ``candidate_period``, ``candidate_preperiod``, ``candidate_proof_values``).
    ``digest`` is the FNV-1a-64 of G(0) ... G(N-1) (for a periodic game, with the values past
    its proof given by the period).
    """

    code: str
    status: str
    values: int
    largest: int
    largest_at: int
    sparse_space: str | None
    mask: str | None
    rare_count: int | None
    last_rare: int | None
    digest: str
    period: int | None = None
    preperiod: int | None = None
    proof_values: int | None = None
    candidate_period: int | None = None
    candidate_preperiod: int | None = None
    candidate_proof_values: int | None = None
    seconds: float = 0.0
    group: str | None = None


def survey_game(
    code: str,
    limit: int,
    *,
    table: RareTable | None = None,
    options: EngineOptions | None = None,
    kernels: KernelPlugin | None = None,
) -> dict:
    """Compute one game up to ``limit`` values and prove its period if one shows (a survey task).

    Runs in a worker process: verification in this process, the values on a temporary disk.  The
    engine is the one every command runs: a rare value that appears far out switches the mask
    (the result gives the mask the game ends under) rather than stalling the game.  ``table``,
    ``options`` (its ``until`` is ``limit``) and ``kernels`` replace the engine's defaults.
    """
    game = parse_game(code)
    began = time.perf_counter()
    prover = ExactProof(game.max_take, until=limit)
    tally = Tally(0, prover)
    options = (
        replace(options, until=limit)
        if options is not None
        else EngineOptions(until=limit, threads=1, workers=0, checkpoint_every=1e9)
    )
    with tempfile.TemporaryDirectory(prefix="octalgen-survey-") as directory:
        engine, summary = summarized_run(
            game,
            options,
            tally,
            table=table,
            directory=directory,
            identity={"command": "survey"},
            keep_all=True,
            kernels=kernels,
        )
        stats = summary.statistics
        proven = summary.period
        digest = stats.digest
        if proven is not None and engine.position < limit:
            digest = _extended_digest(engine, tally.scanner, proven["period"], proven["preperiod"], limit)
    assert stats.largest is not None  # the run computed at least G(0)
    largest, largest_at = stats.largest
    sparse = proven is None  # the sparse space matters for games still open
    # The repetition closest to a proof, for the hint that more values may prove it.
    candidate = min(summary.candidates, key=lambda c: c["proof_length"], default=None) if sparse else None
    result = GameResult(
        code=game.code,
        status="periodic" if proven else "open",
        values=engine.position,
        largest=largest,
        largest_at=largest_at,
        sparse_space=stats.sparse_space if sparse else None,
        mask=f"{stats.mask:#x}" if sparse and stats.mask is not None else None,
        rare_count=stats.rare_positions if sparse else None,
        last_rare=stats.last_rare[0] if sparse and stats.last_rare else None,
        digest=digest,
        period=proven["period"] if proven else None,
        preperiod=proven["preperiod"] if proven else None,
        proof_values=proven["proof_length"] if proven else None,
        candidate_period=candidate["period"] if candidate else None,
        candidate_preperiod=candidate["preperiod"] if candidate else None,
        candidate_proof_values=candidate["proof_length"] if candidate else None,
        seconds=round(time.perf_counter() - began, 3),
    )
    return asdict(result)


def _extended_digest(engine, scanner, period: int, preperiod: int, limit: int) -> str:
    """FNV-1a-64 of G(0) ... G(limit-1), the values past the engine's position given by the period."""
    one_period = engine.history.values(preperiod, preperiod + period)
    extension = Scanner(1, anchor_from=1 << 62)
    extension.state.fnv = scanner.state.fnv
    for start in range(engine.position, limit, _EXTEND):
        n = np.arange(start, min(limit, start + _EXTEND), dtype=np.int64)
        for _ in extension.fold(one_period[(n - preperiod) % period]):
            pass
    return extension.digest()


class Survey:
    """A survey and its files: ``PATH.tsv`` and ``PATH.json`` (the table), ``PATH.done.jsonl`` (finished games).

    Parameters
    ----------
    path : path
        Where the results go (the suffix, if any, is replaced).
    games : list of OctalGame
    limit : int
        N: values per game at most.
    """

    def __init__(self, path, games: list[OctalGame], limit: int):
        self.path = Path(path)
        self.base = self.path.with_suffix("") if self.path.suffix in (".tsv", ".json") else self.path
        self.games = games
        self.limit = limit
        # Format 2: games searched directly for periods too (a format-1 record left some provable
        # periods open: resume() refuses it).
        self.header = {"survey": 2, "limit": limit, "games": [g.code for g in games]}
        self.results: dict[str, dict] = {}

    @property
    def done_path(self) -> Path:
        return self.base.with_name(self.base.name + ".done.jsonl")

    @property
    def table_paths(self) -> tuple[Path, Path]:
        """Where :meth:`write` puts the table: ``PATH.tsv`` and ``PATH.json``."""
        return self.base.with_suffix(".tsv"), self.base.with_suffix(".json")

    def resume(self) -> int:
        """Read the games finished by an earlier run of the same survey; returns how many."""
        path = self.done_path
        if not path.exists():
            return 0
        lines = path.read_text().splitlines()
        try:
            header = json.loads(lines[0])
        except (IndexError, ValueError):
            raise CheckpointError(f"{path} is not a survey record (remove it to start again)") from None
        if isinstance(header, dict) and header.get("survey") == 1:
            raise CheckpointError(
                f"{path} was written by an earlier octalgen, whose period search left some provable "
                "periods open: remove it (or use another --out) to survey again"
            )
        if header != self.header:
            raise CheckpointError(f"{path} belongs to another survey (other games or --max); use another --out")
        for line in lines[1:]:
            try:
                result = json.loads(line)
            except ValueError:
                break  # a line cut short by a kill: that game runs again
            self.results[result["code"]] = result
        return len(self.results)

    def start_record(self) -> None:
        if not self.done_path.exists():
            self.done_path.parent.mkdir(parents=True, exist_ok=True)
            self.done_path.write_text(json.dumps(self.header) + "\n")

    def record(self, result: dict) -> None:
        """Keep a finished game (appended and flushed at once)."""
        self.results[result["code"]] = result
        with open(self.done_path, "a") as out:
            out.write(json.dumps(result) + "\n")

    def interrupted(self, signal_number: int) -> Interrupted:
        """What a survey stopped by Ctrl-C or SIGTERM says: the games done, and where they are kept."""
        return Interrupted(
            signal_number, None, self.done_path, what=f"{len(self.results)} of {len(self.games)} games done"
        )

    def pending(self) -> list[OctalGame]:
        return [g for g in self.games if g.code not in self.results]

    def finished(self) -> list[dict]:
        """Every game's result, in survey order, with its group (the first game of equal sequences)."""
        results = [dict(self.results[g.code]) for g in self.games if g.code in self.results]
        first_of: dict[str, str] = {}  # digest -> the first game with it
        for result in results:
            result["group"] = first_of.setdefault(result["digest"], result["code"])
        return results

    def write(self) -> list[Path]:
        """Write the table as TSV and JSON; returns the paths."""
        results = self.finished()
        columns = [f.name for f in fields(GameResult)]
        tsv, path = self.table_paths
        lines = ["\t".join(columns)] + ["\t".join("" if r[c] is None else str(r[c]) for c in columns) for r in results]
        write_output(tsv, "\n".join(lines) + "\n")
        groups: dict[str, list[str]] = {}
        for r in results:
            groups.setdefault(r["group"], []).append(r["code"])
        document = {
            "limit": self.limit,
            "counts": self.counts(),
            "games": results,
            "identical_sequences": [codes for codes in groups.values() if len(codes) > 1],
        }
        write_output(path, json.dumps(document, indent=1) + "\n")
        return [tsv, path]

    def counts(self) -> dict:
        results = self.finished()
        groups = {r["group"] for r in results}
        return {
            "games": len(self.games),
            "finished": len(results),
            "periodic": sum(r["status"] == "periodic" for r in results),
            "open": sum(r["status"] == "open" for r in results),
            "distinct_sequences": len(groups),
        }


def run_survey(survey: Survey, executor, progress=None, should_stop=lambda: False) -> None:
    """Run the survey's pending games through ``executor`` (``submit``/``done``/``result``/``close``).

    Every game that finishes is recorded at once; when ``should_stop()`` turns true the
    remaining games are dropped (recorded ones stay).

    Raises
    ------
    Interrupted
        A game computed in this process was stopped by Ctrl-C or SIGTERM (its engine caught the
        signal): the survey's own (:meth:`Survey.interrupted`).
    """
    survey.start_record()
    try:
        _run_pending(survey, executor, progress, should_stop)
    except Interrupted as stop:  # a game computed in this process: its engine caught the signal
        raise survey.interrupted(stop.signal_number) from None


def _run_pending(survey: Survey, executor, progress, should_stop) -> None:
    """Games are handed out as executors come free (one at a time in this process), so that each is
    recorded once it is done and a stop drops no finished game."""
    waiting = survey.pending()
    pending: dict[str, Any] = {}  # code -> the executor's future of its result (done, result)
    if progress is not None:
        progress.phase("computing")
        progress.update(len(survey.results))
    while waiting or pending:
        while waiting and len(pending) < max(1, executor.workers) and not should_stop():
            game = waiting.pop(0)
            pending[game.code] = executor.submit(survey_game, game.code, survey.limit)
        finished = [code for code, future in pending.items() if future.done()]
        for code in finished:
            survey.record(pending.pop(code).result())
        if progress is not None:
            progress.update(len(survey.results))
        if should_stop():
            return
        if not finished:
            executor.wait(0.05)


def parse_wholes(text: str) -> tuple[int, ...]:
    """``--whole 0,4`` as a tuple of whole-number digits."""
    try:
        wholes = tuple(sorted({int(part) for part in text.split(",")}))
    except ValueError:
        raise InputError(f"--whole {text!r}: give whole-number digits 0 and/or 4, e.g. 0,4") from None
    if not wholes or any(w not in (0, 4) for w in wholes):
        raise InputError(f"--whole {text!r}: the whole-number digit of an octal game is 0 or 4")
    return wholes
