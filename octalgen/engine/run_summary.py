"""What a run reports, at its end or read back from its checkpoint (``octalgen stats``).

:func:`summarized_run` is the one way a front-end runs the engine for a report: ``octalgen.run``
(and through it ``octalgen run``), ``period``, ``survey`` and the benchmarks build their runs there.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import CheckpointError
from ..game import OctalGame, parse_game
from ..rare import RareTable
from .checkpoint import FILENAME, check_layout, read_checkpoint
from .core import Engine
from .counts import CountTables
from .options import FIRST_CHUNK, EngineOptions
from .seams import Consumer
from .split import Split
from .tally import Tally, counts_of
from .value_statistics import Statistics

#: An achieved rate this far from the one the split of the cores expected (either way) is reported
#: as the model's miss.
MISS = 0.25


@dataclass
class RunSummary:
    """The figures of a run.

    Attributes
    ----------
    statistics : Statistics
    table : RareTable or None
        The rare table the run ended with.
    period : dict or None
        A proven period: ``{"period", "from", "proof_length", ...}`` (``from`` is an upper
        bound of the least preperiod: ``run``) or ``{"period", "preperiod", "proof_length"}``
        (least period and least preperiod: ``period``).
    candidates : list of dict
        Periods seen but not proven yet (the values they need).
    refuted : str or None
        Why a claimed period does not hold (``period --period P --preperiod I``).
    hash_matches : int
    seconds : float
        Wall seconds of every session of the run.
    session_values, session_seconds : int, float
        Values proven and wall seconds of this session (0 when read from a checkpoint).
    roles : dict or None
        CPU seconds per role of this session (:meth:`~.accounting.Accounting.roles`).
    split : Split or None
        The automatic split of the cores, with its predicted rate (:mod:`.split`).
    expected : float or None
        The values/s the split expected of this session, its start and drain included
        (:meth:`~.split.Split.expected`).
    fallbacks : (int, int) or None
        Kernel calls of this session whose threads kept waiting for each other and went on with one
        thread, and the heap of the first (None: none did).
    count_tables : dict of int to ndarray
        The counts of each value among G(1) ... G(n) at every power of two n the run passed and at
        its end (:mod:`.counts`).
    count_tables_since : int
        The heap from which every power of two has its table (0, unless the run was resumed from a
        checkpoint of an octalgen that kept none).
    """

    statistics: Statistics
    table: RareTable | None
    period: dict | None
    candidates: list = field(default_factory=list)
    refuted: str | None = None
    hash_matches: int = 0
    seconds: float = 0.0
    session_values: int = 0
    session_seconds: float = 0.0
    roles: dict | None = None
    split: Split | None = None
    fallbacks: tuple | None = None
    expected: float | None = None
    count_tables: dict = field(default_factory=dict)
    count_tables_since: int = 0

    @property
    def values_per_second(self) -> float | None:
        """This session's values per wall second (None when it proved nothing or is a checkpoint)."""
        if self.session_values <= 0 or self.session_seconds <= 0:
            return None
        return self.session_values / self.session_seconds

    def period_lines(self) -> list[str]:
        p = self.period
        if p and "preperiod" in p:
            return [
                f"period {p['period']} preperiod {p['preperiod']} (least period and least preperiod, proven by "
                f"Guy-Smith with G(0) ... G({p['proof_length'] - 1}))"
            ]
        if p:
            return [
                f"period {p['period']} from G({p['from']}) proven by Guy-Smith with G(0) ... "
                f"G({p['proof_length'] - 1}) (least preperiod at most {p['from']}; octalgen period finds it)"
            ]
        if self.refuted:
            return [f"claim refuted: {self.refuted}"]
        lines = []
        for c in self.candidates:
            start = c.get("preperiod", c.get("from"))
            lines.append(
                f"period candidate {c['period']} from G({start}): proven once G(0) ... "
                f"G({c['proof_length'] - 1}) are verified"
            )
        return lines or [f"period none found (hash matches {self.hash_matches}, none a repeated window)"]

    def lines(self, masks=(), engineering: bool = False) -> list[str]:
        """The figures as text lines: first what a mathematician reads (the digest, the values, the
        largest value, the sparse space, the zeros, rare values found, the period), then how fast.

        ``engineering`` (``-v``) adds the rare table's digest, the split of the cores and the CPU
        seconds of each role; :meth:`to_json` always has them.
        """
        lines = self.statistics.lines(masks) + self.period_lines()
        rate = self.values_per_second
        if rate is not None:
            lines.append(
                f"values/s {rate:,.0f} ({self.session_values} values in {self.session_seconds:.1f} s this session)"
            )
        elif self.session_seconds > 0:
            lines.append(f"nothing left to do ({self.statistics.values} values were already proven)")
        missed = self.missed_expectation()
        if missed:
            lines.append(missed)
        if self.fallbacks:
            count, first = self.fallbacks
            lines.append(
                f"kernel threads fell back to one thread {count} time{'s' if count > 1 else ''}, first at "
                f"G({first}): the cores were busy with other work"
            )
        if engineering:
            lines += self.engineering_lines()
        return lines

    def missed_expectation(self) -> str | None:
        """A line where this session's rate is more than :data:`MISS` off the split's expectation."""
        rate = self.values_per_second
        if not rate or not self.expected or abs(rate / self.expected - 1) <= MISS:
            return None
        return (
            f"{rate / 1e6:.2f} M values/s, {rate / self.expected:.0%} of the {self.expected / 1e6:.2f} M the "
            "split of the cores expected: other work took the cores, or its cached rates were off (a long "
            "enough run replaces them with its own)"
        )

    def engineering_lines(self) -> list[str]:
        """The rare table's digest, the split of the cores and the CPU seconds of each role."""
        lines = []
        rate = self.values_per_second
        if self.table is not None:
            lines.append(f"rare table {self.table.digest} ({self.table.count} rare values)")
        if self.split is not None:
            lines.append(f"cores: {self.split.describe()}")
            if rate and self.expected:
                lines.append(
                    f"achieved {rate / 1e6:.2f} M values/s, {rate / self.expected:.0%} of the "
                    f"{self.expected / 1e6:.2f} M expected for {self.session_values:,} values (start and "
                    "drain included)"
                )
        if self.roles and self.session_values:
            shown = [(role, figures) for role, figures in self.roles.items() if figures["cpu_seconds"]]
            lines.append(
                "CPU seconds per 10^8 values: "
                + ", ".join(f"{role} {figures['per_1e8_values']:,.1f}" for role, figures in shown)
            )
            rates = [
                (role, figures["values_per_cpu_second"])
                for role, figures in shown
                if figures["values_per_cpu_second"] and role in ("kernel", "verifiers")
            ]
            if rates:
                lines.append(
                    "values per CPU-second: " + ", ".join(f"{role} {rate / 1e6:.2f} M" for role, rate in rates)
                )
        return lines

    def to_json(self, masks=()) -> dict:
        result = self.statistics.to_json(masks)
        rate = self.values_per_second
        result.update(
            period=self.period,
            period_candidates=self.candidates,
            refuted=self.refuted,
            hash_matches=self.hash_matches,
            rare_table=self.table.digest if self.table is not None else None,
            seconds=self.seconds,
            session={
                "values": self.session_values,
                "seconds": round(self.session_seconds, 3),
                "values_per_second": round(rate) if rate is not None else None,
            },
            cpu_roles=self.roles,
            kernel_fallbacks=None
            if self.fallbacks is None
            else {"count": self.fallbacks[0], "first_heap": self.fallbacks[1]},
            cores=None
            if self.split is None
            else {
                "kernel_threads": self.split.threads,
                "verifying_processes": self.split.workers,
                "predicted_values_per_second": round(self.split.predicted),
                "expected_values_per_second": round(self.expected) if self.expected else None,
                "kernel_values_per_second": {str(t): round(r) for t, r in self.split.kernel_rates.items()},
                "kernel_block_heaps": {str(t): b for t, b in self.split.blocks.items()},
                "verifier_values_per_second_per_core": round(self.split.verify_rate),
            },
        )
        return result


def summarized_run(
    game: OctalGame, options: EngineOptions, tally: Tally, consumers: tuple[Consumer, ...] = (), **settings
) -> tuple[Engine, RunSummary]:
    """Run the engine to its end with ``tally`` (then ``consumers``) and summarize it.

    ``settings``: the :class:`~.core.Engine`'s keyword arguments (``table``, ``directory``,
    ``identity``, ``keep_all``, ``progress``, ``kernels``).  Returns the engine, for what a
    front-end reads back from its history, and the :class:`RunSummary`.

    Raises
    ------
    Interrupted
        Ctrl-C or SIGTERM (the checkpoint, if any, written first).
    """
    engine = Engine(game, options, (tally, *consumers), **settings).run()
    return engine, summarize(engine, tally)


def summarize(engine: Engine, tally: Tally) -> RunSummary:
    """The summary of a finished (or stopped) engine run with a :class:`~.tally.Tally`."""
    table, recovery = engine.planning.table, engine.recovery
    statistics = _statistics(
        engine.game,
        table,
        tally.state(),
        engine.position,
        tally.digest_from,
        recovery.rare_found,
        recovery.mask_switches,
    )
    prover = tally.prover
    return RunSummary(
        statistics,
        table,
        *_period(prover.state() if prover is not None else None),
        hash_matches=int(tally.scanner.state.hash_matches),
        seconds=engine.session.elapsed,
        session_values=engine.session.values,
        session_seconds=engine.session.wall,
        roles=engine.session.roles(),
        split=engine.split,
        fallbacks=(engine.session.kernel_fallbacks, engine.session.first_fallback)
        if engine.session.kernel_fallbacks
        else None,
        expected=engine.split.expected(engine.session.values, engine.options.chunk, FIRST_CHUNK)
        if engine.split is not None and engine.session.values > 0
        else None,
        count_tables=tally.tables(),
        count_tables_since=tally.count_tables.since,
    )


def summary_of_checkpoint(directory) -> RunSummary:
    """The figures of the run whose checkpoint is in ``directory`` (``octalgen stats``).

    ``directory`` may also be the checkpoint file itself (``DIR/checkpoint.json``).
    """
    from pathlib import Path

    path = Path(directory)
    if path.name == FILENAME and path.is_file():
        directory = path.parent
    elif path.is_file():
        raise CheckpointError(
            f"{directory} is a file: give the --checkpoint directory of a run, which holds {FILENAME}"
        )
    elif not path.is_dir():
        raise CheckpointError(f"{directory} does not exist (give the --checkpoint directory of a run)")
    body = read_checkpoint(directory)
    if body is None:
        raise CheckpointError(
            f"{directory} holds no run checkpoint (checkpoint.json): give the --checkpoint directory of a run"
        )
    check_layout(body, directory)
    game = parse_game(body["parameters"]["game"])
    table = (
        RareTable.from_yaml(body["table"], game=game, source=f"checkpoint in {directory}")
        if body["table"] is not None
        else None
    )
    state = body["consumers"]["tally"]
    statistics = _statistics(
        game,
        table,
        state,
        body["position"],
        body["parameters"].get("digest_from", 0),
        [tuple(e) for e in body["rare_found"]],
        [tuple(e) for e in body.get("mask_switches", ())],
    )
    position = state["scanner"]["position"]
    tables = CountTables.restore(state.get("count_tables"), position)
    return RunSummary(
        statistics,
        table,
        *_period(state["prover"]),
        hash_matches=state["scanner"]["hash_matches"],
        seconds=body["elapsed"],
        count_tables=tables.with_end(counts_of(state)[0], position),
        count_tables_since=tables.since,
    )


def _statistics(game, table, state: dict, position: int, digest_from: int, rare_found, mask_switches) -> Statistics:
    counts, first_seen, last_seen = counts_of(state)
    scanner = state["scanner"]
    return Statistics.from_arrays(
        game.code,
        counts,
        first_seen,
        last_seen,
        values=position,
        digest=f"{scanner['fnv']:016x}",
        digest_from=digest_from,
        range_digest=f"{scanner['fnv_range']:016x}",
        mask=table.mask if table is not None else None,
        parity=table.parity if table is not None else None,
        rule=table.describe() if table is not None else None,
        rare_positions=sum(1 for p, _ in table.entries if p < position) if table is not None else 0,
        last_rare=next(((p, v) for p, v in reversed(table.entries) if p < position), None) if table else None,
        zero_positions=list(state["zeros"]),
        rare_found=list(rare_found),
        mask_switches=list(mask_switches),
        name=game.name,
    )


def _period(prover_state: dict | None) -> tuple[dict | None, list, str | None]:
    """(period, candidates, refuted) from a prover's state."""
    if prover_state is None:
        return None, [], None
    if "candidates" in prover_state:  # the exact proof of ``period``
        return prover_state["proven"], list(prover_state["candidates"]), prover_state["refuted"]
    candidate = prover_state["candidate"]
    return prover_state["proven"], [candidate] if candidate else [], None
