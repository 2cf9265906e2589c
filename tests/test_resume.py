"""Stopped, crashed and killed runs resume to the uninterrupted run's figures: stops at many
positions, SIGTERMs in the exact phase, the exact solver's steps checkpointed as they go, small
first chunks, finished runs extended, ``kill -9`` at random moments, and (``-m slow``) a sweep of
stops over 10^8 values."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time

import pytest
from engine_helpers import StopAt, _command, _position, c_values, run_engine

from octalgen.checksum import fnv1a64
from octalgen.engine.checkpoint import read_checkpoint
from octalgen.engine.core import Engine, EngineOptions
from octalgen.engine.exact_steps import EXACT_STEP
from octalgen.engine.kept_values import read_kept_values
from octalgen.engine.options import FIRST_CHUNK
from octalgen.engine.run_summary import summarize, summarized_run
from octalgen.engine.tally import RecurrenceProof, Tally
from octalgen.errors import Interrupted
from octalgen.game import parse_game

# Small history limits make the cases of a long run happen early: proof scans and recoveries that
# need values the run no longer holds in memory (read back from its files, or recomputed).
SMALL_HISTORY = {"prefix_limit": 1 << 16, "recent_limit": 1 << 16}


@pytest.fixture(scope="module")
def officers_600k():
    return run_engine(".6", 600_000, workers=0, chunk=1 << 16, **SMALL_HISTORY).statistics


def test_stops_at_many_positions_then_resumes_give_the_uninterrupted_figures(officers_600k, tmp_path):
    # Inside the exact prefix, at the kernel's first heap, around the prefix and recent limits.
    stops = [1_000, 30_000, 41_256, 41_300, 65_535, 65_537, 131_072, 131_075, 300_000, 599_999]
    reached = []
    for stop in stops:
        with pytest.raises(Interrupted) as raised:
            run_engine(".6", 600_000, tmp_path, stop_at=stop, workers=0, chunk=1 << 16, **SMALL_HISTORY)
        reached.append(raised.value.proven)
        assert read_checkpoint(tmp_path)["position"] == raised.value.proven
    assert all(r >= s for r, s in zip(reached, stops)) and reached == sorted(reached)
    final = run_engine(".6", 600_000, tmp_path, workers=0, chunk=1 << 16, **SMALL_HISTORY).statistics
    assert final.to_json() == officers_600k.to_json()
    assert final.last == officers_600k.last  # the last heap of every value, kept in the checkpoints


def test_sigterms_in_the_exact_phase_keep_its_steps_and_the_run_ends_as_one_run(tmp_path):
    """An early stop keeps what the exact solver proved (issue 30): .04 has no kernel, so its whole run
    is exact steps; each SIGTERM's checkpoint is where the next run starts, and the end is the
    uninterrupted run's."""
    game = parse_game(".04")

    def run(directory, until, *stop):
        tally = Tally(0, RecurrenceProof(game.max_take))
        return summarized_run(
            game,
            EngineOptions(until=until, workers=0),
            tally,
            stop,
            directory=directory,
            identity={"command": "run", "digest_from": 0},
        )[1]

    whole = run(None, 100_000)
    starts = [0]
    for stop in (40_000, 70_000):
        with pytest.raises(Interrupted) as raised:
            run(tmp_path, 100_000, StopAt(stop, signal.SIGTERM))
        assert raised.value.signal_number == signal.SIGTERM and raised.value.proven >= stop
        starts.append(read_checkpoint(tmp_path)["position"])
        assert starts[-1] == raised.value.proven > starts[-2]
    final = run(tmp_path, 100_000)
    assert final.session_values == 100_000 - starts[-1]
    assert final.statistics.to_json() == whole.statistics.to_json()


class _Crash(Exception):
    pass


class CrashAt(StopAt):
    """A consumer that fails in the middle of handing values on, as ``kill -9`` would leave a run: the
    engine writes no checkpoint at exit, so only the ones it wrote as it went remain."""

    def accept(self, first, values) -> None:
        if first + len(values) >= self.position:
            raise _Crash


def test_exact_steps_are_checkpointed_as_they_go(tmp_path):
    game = parse_game(".04")
    with pytest.raises(_Crash):
        Engine(
            game,
            EngineOptions(until=100_000, workers=0, checkpoint_every=0),
            [Tally(), CrashAt(70_000)],
            directory=tmp_path,
        ).run()
    assert 70_000 - EXACT_STEP <= read_checkpoint(tmp_path)["position"] < 70_000  # the step before the crash
    tally = Tally()
    resumed = Engine(game, EngineOptions(until=100_000, workers=0), [tally], directory=tmp_path).run()
    assert summarize(resumed, tally).statistics.digest == fnv1a64(c_values(".04", 100_000))


def test_the_first_chunks_are_small_so_an_early_stop_keeps_proven_values():
    """After the exact prefix the producer starts with small chunks that double up to --chunk: the
    first kernel values are proven within a fraction of a second, not after a whole chunk."""
    sizes = []

    class Sizes(StopAt):
        def accept(self, first, values) -> None:
            if first >= self.position:
                sizes.append(len(values))

    game = parse_game(".6")
    Engine(game, EngineOptions(until=800_000, workers=0, chunk=1 << 18), [Sizes(41_256)]).run()
    assert sizes[:4] == [FIRST_CHUNK, 2 * FIRST_CHUNK, 1 << 18, 1 << 18]
    assert sum(sizes) == 800_000 - 41_256


def test_finished_runs_extended_with_a_larger_until_give_the_digest_of_one_run(officers_600k, tmp_path):
    for until in (20_000, 41_256, 65_536, 70_000, 200_000, 600_000):
        summary = run_engine(".6", until, tmp_path, workers=1, chunk=1 << 16, **SMALL_HISTORY)
        assert summary.statistics.values == until
    assert summary.statistics.to_json() == officers_600k.to_json()


def test_kill_9_at_random_moments_then_resume_gives_the_uninterrupted_figures(tmp_path):
    until = 8_000_000
    whole = run_engine(".6", until, tmp_path / "whole", workers=0, chunk=1 << 16, keep_all=True)
    directory = tmp_path / "killed"
    rng = random.Random(5)
    # Kill when the run has passed random points (so the test does not depend on the machine's
    # speed), plus a random fraction of a second: during kernel, verification, checkpoint writes.
    # A kill waits for a checkpoint past the one before, so each comes up to 0.4 M values after it (a
    # checkpoint interval and the extra wait, at 1.6 M values/s): the five end near 2.5 M of 8 M, and
    # none finishes before its kill at three times that speed.
    targets = sorted(rng.uniform(0.02, 0.25) * until for _ in range(5))
    positions = [0]
    for target in targets:
        process = subprocess.Popen(
            _command(directory, until, "--workers", "1"),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        # Each kill also waits for a checkpoint past the previous one, so every resume has work to redo.
        while process.poll() is None and _position(directory) < max(target, positions[-1] + 1):
            time.sleep(0.02)
        time.sleep(rng.uniform(0, 0.15))
        assert process.poll() is None, "the run finished before it was killed"
        os.killpg(process.pid, signal.SIGKILL)  # the run and its verifier process, with no warning
        process.wait()
        positions.append(_position(directory))
    assert positions[-1] < until and len(set(positions)) == len(targets) + 1
    finished = subprocess.run(_command(directory, until, "--workers", "1"), check=False, capture_output=True, text=True)
    assert finished.returncode == 0, finished.stderr
    figures = json.loads(finished.stdout)
    expected = whole.statistics.to_json()
    for key in ("fnv1a64", "values", "counts", "first_heap", "largest", "last_new", "zeros", "zero_positions"):
        assert figures[key] == expected[key], key
    assert fnv1a64(read_kept_values(directory)) == whole.statistics.digest


# Stops spread over G(0) ... G(10^8): inside the first 41,256, around 2^23 and 2^24 (the history's
# limits), and G(21,012,776), where a resumed run of octalgen 0.1 could not go on.
SWEEP_STOPS = [
    20_000,
    41_256,
    1_000_000,
    2_170_328,
    5_000_000,
    8_388_607,
    8_388_609,
    8_400_000,
    12_000_000,
    16_777_215,
    16_777_217,
    17_000_000,
    21_012_776,
    21_024_274,
    30_000_000,
    40_000_000,
    50_000_000,
    60_000_000,
    75_000_000,
    90_000_000,
    99_999_999,
]


@pytest.mark.slow
def test_resume_sweep_over_10_8_gives_the_agreed_digest(tmp_path):
    for stop in SWEEP_STOPS:
        with pytest.raises(Interrupted):
            run_engine(".6", 10**8, tmp_path / "stopped", stop_at=stop)
    assert run_engine(".6", 10**8, tmp_path / "stopped").statistics.digest == "0a4a3e704932696f"
    for until in [*SWEEP_STOPS, 10**8]:
        summary = run_engine(".6", until, tmp_path / "extended")
    assert summary.statistics.digest == "0a4a3e704932696f"
