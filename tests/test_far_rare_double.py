"""A value made rare at a far heap where no mask helps, on games small enough to run far past it.

The test double is the rarity: under the mask chosen here, the first rare value past the run's
prefix appears far out, and every mask that would make it common makes a value seen since the
prefix rare (or more than doubles the kernel's terms).  That is the case of ``.034``'s
G(71,722) = 116 and of rogalski's heights, where new values keep appearing; here it comes at a
heap the test chooses through the mask, on games small enough for CI.  The run must decide the
value, add it as a term at offset m, go on with its kernel at once (no exact steps to 2m), hold its
prefix and recent values only, and end with the exact solver's digest, stopped and resumed or not.
"""

from __future__ import annotations

import logging
import signal
from typing import NamedTuple

import numpy as np
import pytest

from octalgen.checksum import fnv1a64
from octalgen.engine.core import Engine, EngineOptions
from octalgen.engine.exact_steps import ExactSteps, exact_solver
from octalgen.engine.run_summary import summarize
from octalgen.engine.tally import RecurrenceProof, Tally
from octalgen.errors import Interrupted
from octalgen.game import OctalGame, parse_game
from octalgen.rare import RareTable
from octalgen.sparse import Rarity, find_late_switch

RECENT = 1 << 13

# game: (prefix P, the mask that makes the far value rare, the rare values past P up to N, N)
CASES = {
    ".64": (1 << 15, 0x1BE, [(156_751, 58)], 250_000),
    ".16": (1 << 12, 0x1E, [(13_932, 6), (13_935, 6)], 60_000),  # the second three heaps after the first
}


class Case(NamedTuple):
    game: OctalGame
    prefix: int
    mask: int
    events: list[tuple[int, int]]
    until: int
    values: np.ndarray  # G(0) ... G(until - 1) from the exact solver alone


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request) -> Case:
    game = parse_game(request.param)
    prefix, mask, events, until = CASES[request.param]
    return Case(game, prefix, mask, events, until, exact_solver(game, None).extend(until).astype(np.int64))


def test_the_double_makes_a_far_value_rare_and_no_mask_helps(case):
    rarity = Rarity(case.mask)
    rare = np.flatnonzero(rarity.rare_flags(case.values))
    assert [(int(n), int(case.values[n])) for n in rare[rare >= case.prefix]] == case.events
    m, value = case.events[0]
    # The kernel starts (twice the last rare position of the prefix) well before m: a far value.
    assert 2 * int(rare[rare < case.prefix][-1]) + case.game.max_take + 1 < m
    late = np.unique(case.values[case.prefix : m + 1])
    assert find_late_switch(case.values[: case.prefix], late, rarity, below=value + 1) is None


def _run(case: Case, monkeypatch, directory=None, stop_after=None):
    """The run from the first P values under the double's mask; returns the engine, its summary, the
    exact steps it took and the most recent values it held at once past the first event."""
    steps: list[tuple[int, int]] = []
    computed = ExactSteps.values

    def recorded(self, position, stop, *args):
        steps.append((position, stop))
        return computed(self, position, stop, *args)

    monkeypatch.setattr(ExactSteps, "values", recorded)
    tally = Tally(0, RecurrenceProof(case.game.max_take))
    engine = Engine(
        case.game,
        EngineOptions(
            until=case.until,
            workers=0,
            chunk=1 << 12,
            checkpoint_every=0,
            prefix_limit=case.prefix,
            recent_limit=RECENT,
        ),
        [tally],
        table=RareTable.from_values(case.game, case.values[: case.prefix], mask=case.mask),
        directory=directory,
        identity={"command": "run", "digest_from": 0},
    )
    held = 0
    for _ in engine.steps():
        if engine.position > case.events[0][0]:
            held = max(held, sum(len(v) for _, v in engine.history.recent))
        if stop_after is not None and engine.position > stop_after:
            engine.stop.request(signal.SIGINT)
    return engine, summarize(engine, tally), steps, held


def test_a_far_rare_value_becomes_a_term_and_the_kernel_goes_on_at_once(case, monkeypatch, tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger="octalgen"):
        engine, summary, steps, held = _run(case, monkeypatch, tmp_path)
    assert summary.statistics.digest == fnv1a64(case.values[: case.until])
    assert engine.recovery.rare_found == case.events and engine.recovery.mask_switches == []
    # Exact steps up to the first kernel's first heap only; each value was decided from the values on
    # disk (a byte a heap), none recomputed, and the kernel went on after the last event's largest take.
    first_kernel = 2 * int(np.flatnonzero(Rarity(case.mask).rare_flags(case.values[: case.prefix]))[-1]) + 2
    assert max(stop for _, stop in steps) <= first_kernel + case.game.max_take
    assert "recomputing" not in caplog.text
    plan = engine.planning.plan
    assert plan.early and plan.start == case.events[-1][0] + case.game.max_take + 1
    assert all(f"NEW RARE VALUE: G({m}) = {v} of {case.game.code}" in caplog.text for m, v in case.events)
    # The window (m + the largest take values) is on the tape: memory holds the prefix and the recent values.
    assert plan.window > RECENT and held <= 3 * RECENT
    assert len(engine.history.prefix) == case.prefix


def test_without_a_checkpoint_directory_the_values_are_recomputed_once_and_exact(case, monkeypatch):
    engine, summary, _, _ = _run(case, monkeypatch)
    assert summary.statistics.digest == fnv1a64(case.values[: case.until])
    assert engine.recovery.rare_found == case.events
    # The tape holds the values past the prefix from then on: the run keeps no copy of G(0) ... G(m).
    assert engine.history.recomputed is None


@pytest.mark.parametrize("after", [1_000, 20_000], ids=["during-crossings", "after"])
def test_a_run_stopped_after_a_far_value_goes_on_to_the_same_digest(case, monkeypatch, tmp_path, after):
    with pytest.raises(Interrupted):
        _run(case, monkeypatch, tmp_path, stop_after=case.events[0][0] + after)
    engine, summary, steps, _ = _run(case, monkeypatch, tmp_path)
    assert not steps  # resumed on a kernel: no exact step, no value recomputed
    assert summary.statistics.digest == fnv1a64(case.values[: case.until])
    assert engine.recovery.rare_found == case.events and engine.planning.plan.early


def test_rare_values_the_exact_solver_finds_past_the_recent_values_are_read_from_it(monkeypatch):
    """``.172`` under 0x1cd from 2^15 values: the exact solver itself finds G(46,785) = 298 and three
    more rare values before the first kernel starts, and the next plan's window (51,383 values) is
    longer than the 2^13 recent values, with no tape yet: the period search reads the values leaving
    its window from the solver, which holds them all."""
    game, until = parse_game(".172"), 120_000
    values = exact_solver(game, None).extend(until).astype(np.int64)
    tally = Tally(0, RecurrenceProof(game.max_take))
    engine = Engine(
        game,
        EngineOptions(
            until=until, workers=0, chunk=1 << 12, checkpoint_every=0, prefix_limit=1 << 15, recent_limit=RECENT
        ),
        [tally],
        table=RareTable.from_values(game, values[: 1 << 15], mask=0x1CD),
        identity={"command": "run", "digest_from": 0},
    )
    engine.run()
    assert summarize(engine, tally).statistics.digest == fnv1a64(values[:until])
    assert engine.planning.table.entries[-4:] == tuple((n, int(values[n])) for n in (46_785, 50_660, 51_084, 51_381))
    assert engine.planning.plan.window == 51_383 > RECENT
