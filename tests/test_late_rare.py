"""A rare value far past the prefix: the run switches to a mask under which every value since the
prefix is common (``.167``: G(332,129,728) = 64 is rare under 0x3d, common under 0x7d), and goes on
with the kernel it had; where no mask helps, the value is decided and becomes a term as before."""

from __future__ import annotations

import json
import logging
import signal
from pathlib import Path

import numpy as np
import pytest
from engine_helpers import run_octalgen

from octalgen.checksum import fnv1a64
from octalgen.cpu.plugin import CKernels
from octalgen.cpu.verify import FAILED, UNDECIDED, VerifyResult
from octalgen.engine.core import Engine, EngineOptions
from octalgen.engine.exact_steps import exact_solver
from octalgen.engine.run_summary import summarize, summary_of_checkpoint
from octalgen.engine.tally import RecurrenceProof, Tally
from octalgen.errors import Interrupted
from octalgen.game import parse_game
from octalgen.rare import RareTable
from octalgen.sparse import Rarity, find_late_switch

GAME = parse_game(".167")
UNTIL = 300_000
HEAP = 200_000  # where the proof is made to fail


@pytest.fixture(scope="module")
def values():
    """G(0) ... of .167 from the exact solver alone (no kernel, no verifier)."""
    return exact_solver(GAME, None).extend(UNTIL).astype(np.int64)


def test_the_late_value_of_167_is_common_under_rogalskis_mask(values):
    prefix, late = values[: 1 << 16], np.unique(values[1 << 16 :])
    assert late.max() < 64  # 64 first appears at G(332,129,728)
    switched = find_late_switch(prefix, np.append(late, 64), Rarity(0x3D), below=65)
    assert switched == Rarity(0x7D)
    assert not switched.rare_flags(np.append(late, 64)).any()
    # The same rare positions in the prefix: the kernel the run goes on with is the one it had.
    assert (switched.rare_flags(prefix) == Rarity(0x3D).rare_flags(prefix)).all()
    # A rare value below 64 cannot be made common without making a late value rare.
    assert find_late_switch(prefix, late, Rarity(0x3D), below=64) is None


def test_no_mask_helps_where_a_late_rare_value_shares_the_late_values_bits(values):
    # .034 under 0x1ff: G(71722) = 116 is rare, and every mask that makes it common makes a value
    # seen since G(65536) rare.
    game = parse_game(".034")
    v = exact_solver(game, None).extend(71723).astype(np.int64)
    assert Rarity(0x1FF).is_rare(v[71722])
    assert find_late_switch(v[: 1 << 16], np.unique(v[1 << 16 :]), Rarity(0x1FF), below=int(v[71722]) + 1) is None


class _FailingVerifier:
    """The C verifier, except that the proof of ``heap`` goes wrong the first ``times[0]`` times it is
    asked for: it fails, as for a rare value the verifier cannot decide, or stays undecided, as for a
    scan that reaches further back than the values at hand."""

    def __init__(self, verifier, heap, times, status):
        self.verifier, self.heap, self.times, self.status = verifier, heap, times, status
        self.plan = verifier.plan

    def verify(self, codes, base, prefix, a, b):
        if a <= self.heap < b and self.times[0]:
            self.times[0] -= 1
            result = self.verifier.verify(codes, base, prefix, a, self.heap)
            return result if not result.proven else VerifyResult(self.status, self.heap)
        return self.verifier.verify(codes, base, prefix, a, b)


class _FailingKernels(CKernels):
    def __init__(self, times, status):
        super().__init__()
        self.times, self.status = [times], status

    def __call__(self, plan):
        kernel, verifier = super().__call__(plan)
        return kernel, _FailingVerifier(verifier, HEAP, self.times, self.status)


def _run(values, directory=None, failures=1, until=UNTIL, stop_after=None, status=FAILED):
    """.167 from rogalski's mask 0x7d, with a prefix of 2^14 values, the proof of G(200,000) failing
    (``failures`` times; an undecided proof is also tried again with the recent values)."""
    table = RareTable.from_values(GAME, values[: 1 << 15], mask=0x7D)
    tally = Tally(0, RecurrenceProof(GAME.max_take))
    engine = Engine(
        GAME,
        EngineOptions(
            until=until, workers=0, chunk=1 << 14, prefix_limit=1 << 14, recent_limit=1 << 14, checkpoint_every=0
        ),
        [tally],
        table=table,
        directory=directory,
        identity={"command": "run", "digest_from": 0},
        kernels=_FailingKernels(failures, status),
    )
    for _ in engine.steps():
        if stop_after is not None and engine.position > stop_after:
            engine.stop.request(signal.SIGINT)
    return engine, summarize(engine, tally)


@pytest.mark.parametrize("status, failures", [(FAILED, 1), (UNDECIDED, 2)], ids=["failed", "undecided"])
def test_a_far_rare_value_switches_the_mask_and_the_values_stay_exact(values, caplog, status, failures):
    with caplog.at_level(logging.WARNING, logger="octalgen"):
        engine, summary = _run(values, failures=failures, status=status)
    assert f"G({HEAP}) of .167 is rare under mask 0x7d" in caplog.text
    assert engine.recovery.mask_switches == [(HEAP, 0x7D, 0x3D)]
    assert engine.planning.table.mask == 0x3D and engine.planning.table.exact_to >= HEAP
    assert engine.recovery.rare_found == []  # nothing recomputed, no term added
    assert "recomputing" not in caplog.text
    assert summary.statistics.digest == fnv1a64(values[:UNTIL])
    assert any("mask switched at G(200000): 0x7d -> 0x3d" in line for line in summary.statistics.lines())


def test_a_second_failure_at_the_switch_is_decided_exactly(values, caplog):
    with caplog.at_level(logging.INFO, logger="octalgen"):
        engine, summary = _run(values, failures=2)
    assert engine.recovery.mask_switches == [(HEAP, 0x7D, 0x3D)]
    # Decided from every value before it: the kernel's value after all (the double's failure was false).
    assert f"G({HEAP}) = {values[HEAP]}, the kernel's value, proven from every value before it" in caplog.text
    assert summary.statistics.digest == fnv1a64(values[:UNTIL])


def test_an_undecided_proof_past_the_switch_is_proven_with_every_value(values, caplog):
    with caplog.at_level(logging.INFO, logger="octalgen"):
        engine, summary = _run(values, failures=4, status=UNDECIDED)
    assert engine.recovery.mask_switches == [(HEAP, 0x7D, 0x3D)]
    assert f"G({HEAP}) needs values from further back" in caplog.text
    assert summary.statistics.digest == fnv1a64(values[:UNTIL])


@pytest.mark.parametrize("stop_after", [HEAP - 50_000, HEAP + 10_000], ids=["before", "after"])
def test_a_run_stopped_before_or_after_the_switch_goes_on_to_the_same_values(values, tmp_path, stop_after):
    with pytest.raises(Interrupted):
        _run(values, tmp_path, stop_after=stop_after)
    engine, summary = _run(values, tmp_path)  # resumed: the late values came from the checkpoint
    assert engine.recovery.mask_switches == [(HEAP, 0x7D, 0x3D)]
    assert summary.statistics.digest == fnv1a64(values[:UNTIL])
    assert summary_of_checkpoint(tmp_path).statistics.mask_switches == [(HEAP, 0x7D, 0x3D)]


def _published_counts(heaps: int) -> dict[int, int]:
    """Value counts of .167 over heaps 1 ... ``heaps`` from rogalski's published tables (public
    repository rogalski-wmii-uni-lodz-pl/octal, ``results/0.167/<n>``)."""
    path = Path(__file__).parent / "data" / "rogalski-0.167.tsv"
    rows = [line.split("\t") for line in path.read_text().splitlines()[1:]]
    return {int(value): int(count) for n, value, count in rows if int(n) == heaps and int(count)}


@pytest.mark.slow
def test_167_to_2_30_has_rogalskis_counts_and_switches_its_mask_at_the_late_64(tmp_path):
    # G(332,129,728) = 64, rare under the mask the first values choose (0x3d), common under
    # rogalski's 0x7d.
    heaps = 1 << 30
    result = run_octalgen("-q", "run", ".167", "--until", heaps + 1, "--checkpoint", tmp_path, "--json")
    figures = json.loads(result.stdout)
    counts = {int(v): c for v, c in figures["counts"].items()}
    counts[0] -= 1  # G(0): the published tables count heaps 1 ... n
    assert {v: c for v, c in counts.items() if c} == _published_counts(heaps)
    assert figures["mask_switches"] == [{"heap": 332_129_728, "from": "0x3d", "to": "0x7d"}]
    assert figures["rare_found"] == []


def _stop_during(monkeypatch, target: str):
    """Replace ``target`` (a module-level name) by a call that sends this process SIGTERM first, once."""
    import os
    import signal
    from importlib import import_module

    module_name, name = target.rsplit(".", 1)
    module = import_module(module_name)
    original = getattr(module, name)
    sent = []

    def stopping(*args, **kwargs):
        if not sent:
            sent.append(True)
            os.kill(os.getpid(), signal.SIGTERM)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, stopping)
    return sent


@pytest.mark.parametrize(
    "during, failures",
    [
        ("octalgen.engine.recovery.announce_switch", 1),  # the plan switch
        ("octalgen.engine.recovery.decide", 2),  # a recovery that recomputes every value below m
        ("octalgen.engine.resume.write_checkpoint", 1),  # a checkpoint being written
    ],
    ids=["switch", "recovery", "checkpoint"],
)
def test_a_sigterm_in_each_state_stops_the_run_and_the_resumed_run_ends_the_same(
    values, tmp_path, monkeypatch, during, failures
):
    import signal

    sent = _stop_during(monkeypatch, during)
    with pytest.raises(Interrupted) as stopped:
        _run(values, tmp_path, failures=failures)
    assert sent and stopped.value.signal_number == signal.SIGTERM
    assert stopped.value.checkpoint == tmp_path  # the run's own position, not a recomputation's
    monkeypatch.undo()
    engine, summary = _run(values, tmp_path, failures=0)
    assert summary.statistics.digest == fnv1a64(values[:UNTIL])
    # The switch was made before the recovery's stop (the proof failed at m twice); the checkpoint's
    # stop came at the first one, long before m, and the resumed run's proofs do not fail.
    assert engine.recovery.mask_switches == ([] if during.endswith("write_checkpoint") else [(HEAP, 0x7D, 0x3D)])


def test_the_period_search_of_period_goes_on_over_a_switch(values, tmp_path):
    """``period``'s consumer (every value kept on disk, the least preperiod read back) across a switch."""
    from octalgen.engine.period_proof import ExactProof

    table = RareTable.from_values(GAME, values[: 1 << 15], mask=0x7D)
    tally = Tally(0, ExactProof(GAME.max_take, until=UNTIL))
    engine = Engine(
        GAME,
        EngineOptions(until=UNTIL, workers=0, chunk=1 << 14, prefix_limit=1 << 14, recent_limit=1 << 14),
        [tally],
        table=table,
        directory=tmp_path,
        identity={"command": "period"},
        keep_all=True,
        kernels=_FailingKernels(1, FAILED),
    )
    engine.run()
    summary = summarize(engine, tally)
    assert engine.recovery.mask_switches == [(HEAP, 0x7D, 0x3D)]
    assert summary.statistics.digest == fnv1a64(values[:UNTIL])
    assert summary.period is None  # .167's period, if it has one, is far beyond 300,000


def test_a_survey_game_switches_its_mask_where_a_late_rare_value_appears(values):
    """``survey``'s task runs the same engine: the late value switches the game's mask (the result
    gives the one it ends under) and the values stay exact, with nothing recomputed."""
    from octalgen.survey import survey_game

    table = RareTable.from_values(GAME, values[: 1 << 15], mask=0x7D)
    result = survey_game(
        GAME.code,
        UNTIL,
        table=table,
        kernels=_FailingKernels(1, FAILED),
        options=EngineOptions(
            until=UNTIL,
            threads=1,
            workers=0,
            chunk=1 << 14,
            prefix_limit=1 << 14,
            recent_limit=1 << 14,
            checkpoint_every=1e9,
        ),
    )
    assert (result["status"], result["values"], result["mask"]) == ("open", UNTIL, "0x3d")
    assert result["digest"] == fnv1a64(values[:UNTIL])
    assert result["rare_count"] == RareTable.from_values(GAME, values[: 1 << 14], mask=0x3D).count


# -- where no mask helps: .034 under 0x1ff, G(71,722) = 116 and G(374,473) = 102 past a prefix of 2^16 ----

FAR, FAR_2 = 71_722, 374_473
FAR_UNTIL = 450_000


@pytest.fixture(scope="module")
def values_034():
    return exact_solver(parse_game(".034"), None).extend(FAR_UNTIL).astype(np.int64)


def _run_034(values, monkeypatch, directory=None, stop_after=None, workers=0, **options):
    """.034 from its first 2^16 values under 0x1ff, a prefix of 2^16 and 2^14 recent values: the proofs of
    G(71,722) and G(374,473) fail, no mask helps, and each becomes a term at offsets m + 1 and m + 3 (the
    exact steps recorded, and what the run held in memory: the most recent values once past the first
    event, and the longest prefix)."""
    from octalgen.engine.exact_steps import ExactSteps

    steps = []
    computed = ExactSteps.values

    def recorded(self, position, stop, *args):
        steps.append((position, stop))
        return computed(self, position, stop, *args)

    monkeypatch.setattr(ExactSteps, "values", recorded)
    game = parse_game(".034")
    tally = Tally(0, RecurrenceProof(game.max_take))
    options = {"prefix_limit": 1 << 16, "recent_limit": 1 << 14, **options}
    engine = Engine(
        game,
        EngineOptions(until=FAR_UNTIL, workers=workers, chunk=1 << 14, checkpoint_every=0, **options),
        [tally],
        table=RareTable.from_values(game, values[: 1 << 16], mask=0x1FF),
        directory=directory,
        identity={"command": "run", "digest_from": 0},
    )
    engine.held = [0, 0]
    for _ in engine.steps():
        recent = sum(len(v) for _, v in engine.history.recent) if engine.position > FAR + (1 << 15) else 0
        engine.held = [max(engine.held[0], recent), max(engine.held[1], len(engine.history.prefix))]
        if stop_after is not None and engine.position > stop_after:
            engine.stop.request(signal.SIGINT)
    return engine, summarize(engine, tally), steps


def test_far_rare_values_no_mask_helps_with_are_terms_of_a_kernel_that_starts_at_once(
    values_034, monkeypatch, tmp_path, caplog
):
    assert (
        find_late_switch(values_034[: 1 << 16], np.unique(values_034[1 << 16 : FAR + 1]), Rarity(0x1FF), below=117)
        is None
    )
    with caplog.at_level(logging.INFO, logger="octalgen"):
        engine, summary, steps = _run_034(values_034, monkeypatch, tmp_path)
    assert engine.recovery.rare_found == [(FAR, 116), (FAR_2, 102)] and engine.recovery.mask_switches == []
    assert summary.statistics.digest == fnv1a64(values_034[:FAR_UNTIL])
    # The exact solver computed the values up to the kernel's first heap, 31,029, and none after: the
    # first plan starts early, at m + 4 past the table's last rare position m = 31,025 (2,686 crossings),
    # and each decision computed G(m) ... G(m + 3) itself and the kernel went on at m + 4, past its window
    # (the far term's offset, m + the largest take, 3); never at the 2m + 4 where no term reads a rare
    # position.
    assert max(b for _, b in steps) == 31_029
    plans = [r.getMessage() for r in caplog.records if r.getMessage().startswith("kernel plan for .034")]
    assert plans[-2:] == [
        "kernel plan for .034: 1078 terms, window 71725, first heap 71726, storage u8",
        "kernel plan for .034: 1079 terms, window 374476, first heap 374477, storage u8",
    ]
    plan = engine.planning.plan
    assert plan.early and plan.start == FAR_2 + 4 and len(plan.crossings) < 2000
    # Decided from the values on disk (the run keeps them: a byte a heap), none recomputed.
    assert "recomputing" not in caplog.text


@pytest.mark.parametrize("workers", [0, 2], ids=["in-process", "processes"])
def test_a_far_terms_window_is_on_a_tape_not_in_memory(values_034, monkeypatch, workers):
    """The window, 374,476 values, is longer than the 2^14 recent values: the kernel and the verifiers
    (in worker processes, by mapping it) read it from the tape, and the run holds its prefix and its
    recent values only (the rare positions G(71,722) and G(374,473) are past the prefix: far ones)."""
    engine, summary, _ = _run_034(values_034, monkeypatch, workers=workers)
    assert summary.statistics.digest == fnv1a64(values_034[:FAR_UNTIL])
    tape = engine.producer.tape
    assert tape is not None and tape.encoding == engine.planning.plan.encoding and tape.first == 1
    assert np.array_equal(tape.values(tape.first, FAR_UNTIL), values_034[tape.first : FAR_UNTIL])
    recent, prefix = engine.held
    assert prefix == 1 << 16 and recent < (1 << 14) + 2 * (1 << 14)  # the limit, and the pieces past it


@pytest.mark.parametrize(
    "stop_after",
    [FAR + 2_000, FAR + 50_000, FAR_2 + 2_000, 420_000],
    ids=["crossings", "after", "second-crossings", "after-second"],
)
def test_a_run_stopped_during_or_after_an_event_goes_on_to_the_same_values(
    values_034, monkeypatch, tmp_path, stop_after
):
    with pytest.raises(Interrupted):
        _run_034(values_034, monkeypatch, tmp_path, stop_after=stop_after)
    engine, summary, steps = _run_034(values_034, monkeypatch, tmp_path)
    assert not steps  # resumed on a kernel: no exact step, no value recomputed
    assert summary.statistics.digest == fnv1a64(values_034[:FAR_UNTIL])
    assert engine.recovery.rare_found == [(FAR, 116), (FAR_2, 102)] and engine.planning.plan.early


def test_a_sigterm_while_a_far_value_is_decided_stops_the_run_and_it_goes_on(values_034, monkeypatch, tmp_path):
    import signal

    sent = _stop_during(monkeypatch, "octalgen.engine.recovery.exact_value")
    with pytest.raises(Interrupted) as stopped:
        _run_034(values_034, monkeypatch, tmp_path)
    assert sent and stopped.value.signal_number == signal.SIGTERM and stopped.value.checkpoint == tmp_path
    monkeypatch.undo()
    engine, summary, _ = _run_034(values_034, monkeypatch, tmp_path)
    assert summary.statistics.digest == fnv1a64(values_034[:FAR_UNTIL])
    assert engine.recovery.rare_found == [(FAR, 116), (FAR_2, 102)]


def test_deciding_a_far_rare_value_reads_the_values_before_it_in_pieces(values_034, monkeypatch, tmp_path):
    # No exact solver, and no array of the values below m: each value G(m), G(m + 1), ... is decided
    # from the values read a piece at a time from the run's files and its tape.
    from octalgen.cpu.exact import CExactSolver
    from octalgen.engine import exact_heap
    from octalgen.engine.history import History

    solvers, reads, before = [], [], []
    made = CExactSolver.__init__

    def solver(self, game, *args, values=(), **kwargs):
        solvers.append(len(values))
        made(self, game, *args, values=values, **kwargs)

    monkeypatch.setattr(CExactSolver, "__init__", solver)
    every = History.values_before
    monkeypatch.setattr(History, "values_before", lambda self, heap: before.append(heap) or every(self, heap))
    monkeypatch.setattr(exact_heap, "PIECE", 1 << 14)
    scan = exact_heap.scan

    def counted(rests, need, read):
        return scan(rests, need, lambda lo, hi: reads.append(hi - lo) or read(lo, hi))

    monkeypatch.setattr(exact_heap, "scan", counted)
    engine, summary, _ = _run_034(values_034, monkeypatch, tmp_path)
    assert engine.recovery.rare_found == [(FAR, 116), (FAR_2, 102)]
    assert summary.statistics.digest == fnv1a64(values_034[:FAR_UNTIL])
    assert max(before) <= 31_029 and max(solvers) <= 31_029 and max(reads) <= 1 << 14  # the exact steps' only
    assert sum(reads) >= FAR_2  # the new rare values: every pair, both ways


def test_a_recomputation_writes_the_values_into_the_array_it_is_given(values_034):
    # Recovery's last resort, where the run no longer holds the values: a run of their own, which
    # keeps them on disk and writes them into the (mapped) array in pieces, not joined in memory.
    from octalgen import mapped

    game = parse_game(".034")
    out = mapped.mapped_array(FAR, np.uint16)
    table = RareTable.from_values(game, values_034[: 1 << 16], mask=0x1FF)
    got = Engine(game, EngineOptions(until=FAR, workers=0, chunk=1 << 14), table=table).recompute(FAR, out=out)
    assert got is out and np.array_equal(out, values_034[:FAR])


def test_a_full_disk_under_the_tape_is_one_error_and_the_run_goes_on_from_its_checkpoint(
    values_034, monkeypatch, tmp_path
):
    import errno
    import os

    from octalgen.engine.checkpoint import read_checkpoint
    from octalgen.errors import ComputationError

    def full(fd, offset, length):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with monkeypatch.context() as patch:
        patch.setattr(os, "posix_fallocate", full)
        with pytest.raises(ComputationError, match=r"cannot write the far term's tape in .*: No space left on device"):
            _run_034(values_034, monkeypatch, tmp_path)
    # The exact values before the kernel's first heap (31,029), where the tape is made (the window,
    # 31,028 values, is longer than the recent ones), were kept.
    assert read_checkpoint(tmp_path)["position"] == 31_029
    _, summary, steps = _run_034(values_034, monkeypatch, tmp_path)
    assert not steps  # resumed at the kernel's first heap
    assert summary.statistics.digest == fnv1a64(values_034[:FAR_UNTIL])


def _rogalski_counts(directory: Path, heaps: int) -> dict[int, int]:
    rows = (line.split() for line in (directory / str(heaps)).read_text().splitlines() if line.strip())
    return {int(value): int(count) for value, count in rows if int(count)}


@pytest.mark.slow
def test_034_past_both_events_has_rogalskis_counts_in_bounded_memory(tmp_path):
    """``octalgen run .034`` to 2^24 as a user runs it: both late rare values found (no mask helps with
    either), the kernel going on after each, the count tables equal to rogalski's at every power of two,
    and the largest process's peak RSS well within the bound the history and the chunks set."""
    import resource

    heaps = 1 << 24
    tables = tmp_path / "tables"
    result = run_octalgen(
        "-q", "run", ".034", "--until", heaps + 1, "--checkpoint", tmp_path / "run", "--counts", tables, "--json"
    )
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    figures = json.loads(result.stdout)
    assert figures["rare_found"] == [{"heap": FAR, "value": 116}, {"heap": FAR_2, "value": 102}]
    assert figures["mask_switches"] == []
    published = Path(__file__).parent / "data" / "rogalski" / "0.034"
    for n in sorted(int(p.name) for p in published.iterdir()):
        assert _rogalski_counts(tables / "0.034", n) == _rogalski_counts(published, n), n
    assert peak_mb < 400, peak_mb
