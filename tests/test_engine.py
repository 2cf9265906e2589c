"""The engine behind run, period, values and stats: published checksums, stops and resumes at
many positions, kill -9, process hygiene, recovery, bad checkpoints, periods against known ones."""

from __future__ import annotations

import errno
import json
import logging
import os
import random
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from octalgen.backends import compute_values
from octalgen.checksum import fnv1a64
from octalgen.engine import checkpoint as checkpoint_module, pipeline
from octalgen.engine.checkpoint import read_checkpoint, write_checkpoint
from octalgen.engine.core import Engine, EngineOptions
from octalgen.engine.exact import EXACT_STEP
from octalgen.engine.period import ExactProof
from octalgen.engine.producer import FIRST_CHUNK
from octalgen.engine.scan import ANCHORED, HASH_MATCH, Scanner, crc_of_window
from octalgen.engine.seams import KernelPlugin, Kernels, ProofVerifier, Speculator
from octalgen.engine.store import read_kept_values
from octalgen.engine.summary import summarize, summary_of_checkpoint
from octalgen.engine.tally import RecurrenceProof, Tally
from octalgen.errors import Interrupted
from octalgen.game import parse_game
from octalgen.periodicity import solved_games
from octalgen.plan import make_plan
from octalgen.rare import RareTable, shipped_table
from octalgen.reference import exact_values

from engine_helpers import StopAt

OFFICERS_FNV_65536_2097152 = "73c2a53ce177d95a"


def run_engine(code, until, directory=None, stop_at=None, table=None, keep_all=False, digest_from=0,
               prover=RecurrenceProof, **options):
    """A run as ``octalgen run`` makes it, in this process; returns its summary."""
    game = parse_game(code)
    tally = Tally(digest_from, prover(game.max_take))
    consumers = [tally] + ([StopAt(stop_at)] if stop_at is not None else [])
    engine = Engine(game, EngineOptions(until=until, **options), consumers, table=table, directory=directory,
                    identity={"command": "run", "digest_from": digest_from}, keep_all=keep_all)
    engine.run()
    return summarize(engine, tally)


def c_values(code, count):
    """Values from the ``c`` backend (itself checked against the reference by test_backend_c)."""
    return compute_values(code, 0, count, backend="c", workers=0)


def digest_line(text: str) -> str:
    return next(line.split()[1] for line in text.splitlines() if line.startswith("fnv1a64 ") and "[" not in line)


# -- the scanner ----------------------------------------------------------------------------


@pytest.mark.parametrize("window", [1, 5, 64])
def test_scanner_digests_and_rolling_crc_match_their_definitions(window):
    values = np.random.default_rng(window).integers(0, 700, 3000).astype(np.uint16)
    scanner = Scanner(window, digest_from=1000)
    for part in np.array_split(values, 5):  # any split: the hash only depends on the last W values
        list(scanner.fold(part))
        assert int(scanner.state.crc) == crc_of_window(values[: scanner.position], window)
    assert scanner.digest() == fnv1a64(values)
    assert scanner.range_digest() == fnv1a64(values[1000:])
    assert np.array_equal(scanner.counts[:700], np.bincount(values, minlength=700))
    assert scanner.first_seen[int(values[0])] == 0
    for v in np.unique(values):  # the first and last heap of every value, by their definition
        heaps = np.flatnonzero(values == v)
        assert (scanner.first_seen[v], scanner.last_seen[v]) == (heaps[0], heaps[-1])


def test_scanner_anchors_at_powers_of_two_and_finds_repeated_windows():
    rng = np.random.default_rng(7)
    values = np.concatenate([rng.integers(0, 50, 300), np.tile(rng.integers(0, 50, 37), 40)]).astype(np.uint16)
    events = [(e.kind, e.heap) for e in Scanner(16).fold(values)]
    anchors = [heap for kind, heap in events if kind == ANCHORED]
    assert anchors == [16, 32, 64, 128, 256, 512, 1024]
    matches = [heap for kind, heap in events if kind == HASH_MATCH]
    assert matches[0] == 512 + 37  # the window ending at the anchor 512 recurs one period later
    assert all((heap - 512) % 37 == 0 for heap in matches if heap < 1024)


# -- run: published checksum, kept values, statistics ---------------------------------------


@pytest.fixture(scope="module")
def officers_run(tmp_path_factory):
    """.6 to 2^21 with a digest from 65536 and kept values."""
    directory = tmp_path_factory.mktemp("officers")
    summary = run_engine(".6", 1 << 21, directory, digest_from=65536, keep_all=True, workers=1)
    return directory, summary


def test_run_gives_the_published_checksum(officers_run):
    _directory, summary = officers_run
    assert summary.statistics.range_digest == OFFICERS_FNV_65536_2097152


def test_kept_values_give_the_published_checksum_and_the_statistics(officers_run):
    directory, summary = officers_run
    values = read_kept_values(directory)
    assert len(values) == 1 << 21
    assert fnv1a64(values[65536:]) == OFFICERS_FNV_65536_2097152
    stats = summary.statistics
    assert fnv1a64(values) == stats.digest
    assert stats.largest == (int(values.max()), int(np.argmax(values)))
    assert stats.zero_positions == np.flatnonzero(values == 0).tolist() and stats.zeros == 14
    assert stats.counts == {int(v): int(c) for v, c in enumerate(np.bincount(values)) if c}
    assert stats.rare_count(0x1EE) == 1584 and stats.last_rare == (20627, 277)
    assert not stats.rare_found
    files = sorted(p.suffix for p in (directory / "values").iterdir())
    assert ".u8" in files and ".u16" in files  # kernel values compressed, the exact prefix (rare values) raw


def test_stats_command_reads_the_checkpoint(officers_run, cli, tmp_path):
    directory, summary = officers_run
    result = cli("stats", directory, "--mask", "0x1fe")
    assert result.code == 0
    assert digest_line(result.out) == summary.statistics.digest
    assert f"fnv1a64 [65536, 2097152) {OFFICERS_FNV_65536_2097152}" in result.out
    assert "mask 0x1ee; 1584 rare values, the last G(20627) = 277" in result.out
    assert "zeros 14 at 0, 1, 4, 12, 20, 30, 46, 72, 98, 124, 150, 176, 314, 408" in result.out
    values = read_kept_values(directory)
    assert f"rare under mask 0x1fe: {int((np.bitwise_count(values & 0x1FE) % 2 == 0).sum())} of" in result.out
    as_json = json.loads(cli("stats", directory, "--json").out)
    assert as_json["fnv1a64"] == summary.statistics.digest and as_json["values"] == 1 << 21
    assert as_json["largest"]["value"] == summary.statistics.largest[0] and as_json["mask"] == "0x1ee"
    plot = tmp_path / "histogram.png"
    drawn = cli("stats", directory, "--plot", plot)
    assert drawn.code == 0 and f"wrote the histogram to {plot}" in drawn.err
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_stats_of_a_missing_directory_says_so(cli, tmp_path):
    result = cli("stats", tmp_path / "nowhere")
    assert result.code == 2 and "does not exist" in result.err and result.err.count("\n") == 1


def test_plot_without_matplotlib_is_one_line(officers_run, cli, tmp_path, monkeypatch):
    directory, _summary = officers_run
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now raises ImportError
    result = cli("stats", directory, "--plot", tmp_path / "h.png")
    assert result.code == 1 and result.err.count("\n") == 1 and "pip install 'octalgen[plot]'" in result.err


def test_run_command_prints_the_figures(cli, tmp_path):
    result = cli("run", ".6", "--until", 300_000, "--workers", 0, "--json")
    assert result.code == 0
    figures = json.loads(result.out)
    assert figures["fnv1a64"] == fnv1a64(c_values(".6", 300_000))
    assert figures["values"] == 300_000 and figures["period"] is None
    assert set(figures["cpu_roles"]) == {"kernel", "verifiers", "exact solver", "consumers", "coordinator"}


def test_a_game_without_sparse_space_runs_on_the_exact_solver(cli):
    result = cli("run", ".04", "--until", 5000, "--json")
    assert result.code == 0
    assert json.loads(result.out)["fnv1a64"] == fnv1a64(exact_values(".04", 5000))


def test_chunks_produced_ahead_are_proven_by_the_workers(monkeypatch):
    """While the prefix still grows, chunks produced ahead carry the codes their proof scans need:
    none comes back undecided to be verified again in this process."""
    retried = []
    again = pipeline.verify_again
    monkeypatch.setattr(pipeline, "verify_again",
                        lambda verifier, chunk, result, *more: retried.append(result.heap) or again(verifier, chunk,
                                                                                                   result, *more))
    until = 1_500_000
    summary = run_engine(".6", until, workers=1, chunk=1 << 18, backlog=8)  # all produced ahead
    assert retried == []
    assert summary.statistics.digest == fnv1a64(c_values(".6", until))


def test_both_kernel_plug_ins_implement_the_engines_seam():
    from octalgen.cuda.plugin import TwinKernels

    plan = make_plan(shipped_table(".6"))
    for plugin in (Kernels(), TwinKernels(64)):
        assert isinstance(plugin, KernelPlugin)
        producer, verifier = plugin(plan)
        assert isinstance(producer, Speculator) and isinstance(verifier, ProofVerifier)
        assert verifier.plan == plan


# -- stop and resume ------------------------------------------------------------------------

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
        engine = Engine(game, EngineOptions(until=until, workers=0), [tally, *stop], directory=directory,
                        identity={"command": "run", "digest_from": 0})
        engine.run()
        return summarize(engine, tally)

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
        Engine(game, EngineOptions(until=100_000, workers=0, checkpoint_every=0), [Tally(), CrashAt(70_000)],
               directory=tmp_path).run()
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


def _command(directory, until, *extra):
    return [sys.executable, "-m", "octalgen", "-q", "run", ".6", "--until", str(until), "--checkpoint",
            str(directory), "--chunk", str(1 << 16), "--checkpoint-every", "0.2", "--keep-values", "--json", *extra]


def _position(directory) -> int:
    try:
        body = read_checkpoint(directory)
    except Exception:  # noqa: BLE001 - a checkpoint being replaced is read again
        return 0
    return body["position"] if body else 0


def test_kill_9_at_random_moments_then_resume_gives_the_uninterrupted_figures(tmp_path):
    until = 3_000_000
    whole = run_engine(".6", until, tmp_path / "whole", workers=0, chunk=1 << 16, keep_all=True)
    directory = tmp_path / "killed"
    rng = random.Random(5)
    # Kill when the run has passed random points (so the test does not depend on the machine's
    # speed), plus a random fraction of a second: during kernel, verification, checkpoint writes.
    # The last point leaves half the run, more than a checkpoint interval and the extra wait can
    # cover at any speed this runs at (about 1.5 M values/s), so no run finishes before its kill.
    targets = sorted(rng.uniform(0.02, 0.5) * until for _ in range(5))
    positions = [0]
    for target in targets:
        process = subprocess.Popen(_command(directory, until, "--workers", "1"), stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, start_new_session=True)
        # Each kill also waits for a checkpoint past the previous one, so every resume has work to redo.
        while process.poll() is None and _position(directory) < max(target, positions[-1] + 1):
            time.sleep(0.02)
        time.sleep(rng.uniform(0, 0.3))
        assert process.poll() is None, "the run finished before it was killed"
        os.killpg(process.pid, signal.SIGKILL)  # the run and its verifier process, with no warning
        process.wait()
        positions.append(_position(directory))
    assert positions[-1] < until and len(set(positions)) == len(targets) + 1
    finished = subprocess.run(_command(directory, until, "--workers", "1"), capture_output=True, text=True)
    assert finished.returncode == 0, finished.stderr
    figures = json.loads(finished.stdout)
    expected = whole.statistics.to_json()
    for key in ("fnv1a64", "values", "counts", "first_heap", "largest", "last_new", "zeros", "zero_positions"):
        assert figures[key] == expected[key], key
    assert fnv1a64(read_kept_values(directory)) == whole.statistics.digest


def _descendants(pid: int) -> set[int]:
    """Every living process whose chain of parents leads to ``pid``."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    parents[int(entry)] = int(handle.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_killed_run_leaves_no_process_behind(tmp_path):
    process = subprocess.Popen(_command(tmp_path, 3_000_000, "--workers", "2"), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    while process.poll() is None and _position(tmp_path) < 100_000:
        time.sleep(0.05)
    children = _descendants(process.pid)
    assert len(children) >= 2  # the verifying processes
    process.kill()  # the run alone: its workers get no signal from us
    process.wait()
    deadline = time.monotonic() + 5
    while any(_alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [pid for pid in children if _alive(pid)]


@pytest.mark.parametrize("signal_number, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_ctrl_c_and_sigterm_stop_with_one_line_and_the_run_resumes(tmp_path, signal_number, status):
    # A goal far out of reach: a quiet machine proved 3e6 values within the second below (CI, stop 25).
    command = [sys.executable, "-m", "octalgen", "run", ".6", "--until", "1e9", "--checkpoint", str(tmp_path),
               "--workers", "1", "--chunk", str(1 << 16)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    while process.poll() is None and _position(tmp_path) < 50_000:
        time.sleep(0.05)
    time.sleep(1)
    process.send_signal(signal_number)
    out, err = process.communicate(timeout=30)  # a hang fails here; the time taken is measured elsewhere
    assert process.returncode == status, err
    last = err.strip().splitlines()[-1]
    proven = read_checkpoint(tmp_path)["position"]
    assert last.startswith("octalgen: stopped by ") and f"G(0) ... G({proven - 1}) proven" in last
    assert f"checkpoint in {tmp_path}" in last and "resume with: octalgen run .6 --until 1e9" in last
    assert "Traceback" not in err and out == ""
    resumed = run_engine(".6", proven + 10_000, tmp_path, workers=0)
    assert resumed.statistics.digest == fnv1a64(c_values(".6", proven + 10_000))


def test_sigterm_to_the_whole_process_group_is_a_clean_stop(tmp_path):
    # timeout(1), kill -- -PGID and batch systems signal the run's process group: its verifying
    # processes too.  They ignore it (the run kills them as it stops), so the run stops as for a
    # SIGTERM of its own, not with "a verifying process died".
    command = [sys.executable, "-m", "octalgen", "run", ".6", "--until", "1e9", "--checkpoint", str(tmp_path),
               "--workers", "2", "--chunk", str(1 << 16), "--checkpoint-every", "0.2"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)  # a process group of its own: the run and its workers
    while process.poll() is None and _position(tmp_path) < 50_000:  # past the exact prefix: workers at work
        time.sleep(0.05)
    workers = _descendants(process.pid)
    assert len(workers) >= 2
    for pid in workers:  # a worker alone: it lives on
        os.kill(pid, signal.SIGTERM)
    time.sleep(0.2)
    assert process.poll() is None and all(_alive(pid) for pid in workers)
    os.killpg(process.pid, signal.SIGTERM)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 143, err
    last = err.strip().splitlines()[-1]
    proven = read_checkpoint(tmp_path)["position"]
    assert last.startswith("octalgen: stopped by ") and f"G(0) ... G({proven - 1}) proven" in last, err
    assert "Traceback" not in err and "died" not in err and out == ""
    resumed = run_engine(".6", proven + 10_000, tmp_path, workers=0)
    assert resumed.statistics.digest == fnv1a64(c_values(".6", proven + 10_000))


def test_a_checkpoint_of_octalgen_0_1_is_refused_with_one_line(cli, tmp_path):
    write_checkpoint(tmp_path, {"octalgen_checkpoint": 1, "parameters": {"game": ".6"}, "position": 5})
    before = (tmp_path / "checkpoint.json").read_bytes()
    result = cli("run", ".6", "--until", 100_000, "--checkpoint", tmp_path)
    assert result.code == 2 and result.err.count("\n") == 1 and "written by octalgen 0.1" in result.err
    assert (tmp_path / "checkpoint.json").read_bytes() == before


def test_a_checkpoint_of_octalgen_0_2_is_refused_for_its_digest(cli, tmp_path):
    """0.2's digests started from a non-standard offset basis: continuing one would print a wrong digest."""
    write_checkpoint(tmp_path, {"octalgen_checkpoint": 2, "parameters": {"game": ".6"}, "position": 5})
    before = (tmp_path / "checkpoint.json").read_bytes()
    for command in (("run", ".6", "--until", 100_000, "--checkpoint", tmp_path), ("stats", tmp_path)):
        result = cli(*command)
        assert result.code == 2 and result.err.count("\n") == 1, result.err
        assert "the standard FNV-1a-64" in result.err and "start a new checkpoint directory" in result.err
    assert (tmp_path / "checkpoint.json").read_bytes() == before


# -- distributed ----------------------------------------------------------------------------


def test_dask_cluster_gives_the_local_digest():
    distributed = pytest.importorskip("distributed")
    local = run_engine(".6", 1 << 20, workers=0, chunk=1 << 18)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, protocol="tcp",
                                  host="127.0.0.1", scheduler_port=0, dashboard_address=":0") as cluster:
        remote = run_engine(".6", 1 << 20, scheduler=cluster.scheduler_address, chunk=1 << 18)
    assert remote.statistics.digest == local.statistics.digest
    assert remote.statistics.counts == local.statistics.counts


def test_an_unreachable_scheduler_is_one_line(cli, monkeypatch):
    monkeypatch.setattr("octalgen.engine.executors.CONNECT_TIMEOUT", 2.0)
    result = cli("run", ".6", "--until", 10_000_000, "--scheduler", "tcp://127.0.0.1:9")
    assert result.code == 2 and result.err.count("\n") == 1 and "cannot reach the Dask scheduler" in result.err


# -- recovery -------------------------------------------------------------------------------


def _cut_16():
    """.16's table cut after its rare value at 3604: the kernel then meets a new rare value at 13932."""
    table = shipped_table(".16")
    return RareTable(table.game, table.mask, tuple(e for e in table.entries if e[0] <= 3604), 3605)


def test_a_new_rare_value_is_announced_recorded_and_the_run_goes_on(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="octalgen"):
        summary = run_engine(".16", 60_000, tmp_path, table=_cut_16(), workers=0, chunk=1 << 13)
    assert "NEW RARE VALUE: G(13932)" in caplog.text
    assert summary.statistics.rare_found[0][0] == 13932
    assert summary.statistics.digest == fnv1a64(exact_values(".16", 60_000))
    assert (13932, summary.statistics.rare_found[0][1]) in summary.table.entries
    assert summary_of_checkpoint(tmp_path).statistics.rare_found == summary.statistics.rare_found


@pytest.mark.parametrize("directory", [False, True], ids=["in-memory", "checkpointed"])
def test_a_recovery_beyond_the_values_held_recomputes_them(tmp_path, caplog, monkeypatch, directory):
    monkeypatch.setattr("octalgen.engine.store.FILE_VALUES", 1 << 10)  # the recomputed values go to files
    # The prefix reaches the kernel's first heap, 7211, and the last 2^12 values are held (in chunks
    # of 2^10): deciding G(13932) needs G(7211) ... G(8811) too, which the run no longer holds (with a
    # checkpoint after every step, their files are gone from disk as well).
    with caplog.at_level(logging.WARNING, logger="octalgen"):
        summary = run_engine(".16", 40_000, tmp_path if directory else None, table=_cut_16(), workers=0,
                             chunk=1 << 10, prefix_limit=1 << 12, recent_limit=1 << 12, checkpoint_every=0)
    assert "no longer holds them: recomputing" in caplog.text
    assert summary.statistics.digest == fnv1a64(exact_values(".16", 40_000))


def test_a_wrong_kernel_value_is_corrected(kernel_fault, caplog):
    planted = kernel_fault
    with caplog.at_level(logging.WARNING, logger="octalgen"):
        summary = run_engine(".6", 150_000, workers=0, chunk=1 << 15)
    assert f"verification corrected G({planted[0]})" in caplog.text
    assert summary.statistics.digest == fnv1a64(c_values(".6", 150_000))


@pytest.mark.parametrize("code, count", [("4.07766", 16_000), ("4.43776", 12_000), (".366", 20_000)])
def test_games_with_late_rare_values_and_no_table(cli, code, count):
    # Their rare values at G(12414), G(9408), G(17244) come after the kernel's first start.
    result = cli("values", code, "-n", count)
    assert result.code == 0, result.err
    assert [int(v) for v in result.out.split()] == exact_values(code, count).tolist()


# -- bad checkpoints ------------------------------------------------------------------------


@pytest.fixture
def small_checkpoint(tmp_path):
    run_engine(".6", 100_000, tmp_path, workers=0)
    return tmp_path


def _refused(cli, directory, *args):
    before = (directory / "checkpoint.json").read_bytes()
    result = cli("run", *args, "--checkpoint", directory, "--workers", 0)
    assert result.code == 2 and result.err.count("\n") == 1 and "left untouched" in result.err, result.err
    assert (directory / "checkpoint.json").read_bytes() == before
    return result


def test_a_checkpoint_of_another_game_is_refused(cli, small_checkpoint):
    assert "belongs to another run: it is a run of .6, not .16;" in _refused(cli, small_checkpoint, ".16", "--until",
                                                                             200_000).err


def test_a_checkpoint_of_other_parameters_is_refused(cli, small_checkpoint):
    refused = _refused(cli, small_checkpoint, ".6", "--until", 200_000, "--digest-from", 5).err
    assert "it was started with --digest-from 0, this command gives --digest-from 5" in refused


def test_a_truncated_checkpoint_is_refused(cli, small_checkpoint):
    path = small_checkpoint / "checkpoint.json"
    path.write_bytes(path.read_bytes()[:5000])
    assert "truncated or corrupt" in _refused(cli, small_checkpoint, ".6", "--until", 200_000).err


def test_an_edited_checkpoint_fails_its_checksum(cli, small_checkpoint):
    path = small_checkpoint / "checkpoint.json"
    text = path.read_text()
    path.write_text(text.replace('"position":100000', '"position":100001'))
    assert "fails its checksum" in _refused(cli, small_checkpoint, ".6", "--until", 200_000).err


def test_a_damaged_value_file_is_refused(cli, small_checkpoint):
    files = sorted((small_checkpoint / "values").iterdir())
    files[0].write_bytes(files[0].read_bytes()[:-1] + b"\x07")
    result = cli("run", ".6", "--until", 200_000, "--checkpoint", small_checkpoint, "--workers", 0)
    assert result.code == 2 and result.err.count("\n") == 1 and "fail their checksum" in result.err


def test_a_read_only_checkpoint_directory_is_one_line(cli, small_checkpoint, monkeypatch):
    real_open = open

    def read_only(path, mode="r", *args, **kwargs):
        if "w" in mode and str(small_checkpoint) in str(path):
            raise OSError(errno.EROFS, "Read-only file system")
        return real_open(path, mode, *args, **kwargs)

    monkeypatch.setattr(checkpoint_module, "open", read_only, raising=False)
    before = (small_checkpoint / "checkpoint.json").read_bytes()
    result = cli("run", ".6", "--until", 200_000, "--checkpoint", small_checkpoint, "--workers", 0)
    assert result.code == 2 and result.err.count("\n") == 1 and "Read-only file system" in result.err
    assert (small_checkpoint / "checkpoint.json").read_bytes() == before


def test_a_full_disk_stops_the_run_with_one_line_and_loses_no_proven_work(cli, tmp_path, monkeypatch):
    writes = []
    real = checkpoint_module.write_file_atomically

    def filling_up(path, data):
        writes.append(path)
        if len(writes) > 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(path, data)

    monkeypatch.setattr(checkpoint_module, "write_file_atomically", filling_up)
    result = cli("run", ".6", "--until", 600_000, "--checkpoint", tmp_path, "--workers", 0, "--chunk", 1 << 15,
                 "--checkpoint-every", 0)
    assert result.code == 2 and result.err.strip().splitlines()[-1].startswith("octalgen: error: cannot write checkpoint")
    assert "the disk is full" in result.err
    saved = read_checkpoint(tmp_path)["position"]
    assert 0 < saved < 600_000
    monkeypatch.setattr(checkpoint_module, "write_file_atomically", real)
    resumed = run_engine(".6", 600_000, tmp_path, workers=0, chunk=1 << 15)
    assert resumed.session_values == 600_000 - saved
    assert resumed.statistics.digest == fnv1a64(c_values(".6", 600_000))


def test_cuda_backend_is_one_line_without_a_gpu(cli, tmp_path):
    result = cli("run", ".6", "--until", 1000, "--backend", "cuda", "--checkpoint", tmp_path)
    assert result.code == 1 and result.err.count("\n") == 1 and "backend 'cuda' cannot run here" in result.err
    assert not (tmp_path / "checkpoint.json").exists()


@pytest.mark.parametrize("args", [("run", ".6", "--until", "1e99"), ("run", ".6", "--until", "nan"),
                                  ("run", ".6", "--until", "-5"), ("values", ".6", "-n", "1e99"),
                                  ("values", ".6", "-n", "0"), ("values", ".6", "-n", "1.5"),
                                  ("values", ".6", "-n", "5", "--start", "1e99"),
                                  ("values", ".6", "-n", "1e15", "--start", "1e15"), ("run", ".6", "--until", "5",
                                                                                       "--threads", "0")])
def test_bad_numbers_are_one_line_exit_2(cli, args):
    result = cli(*args)
    assert result.code == 2 and result.err.count("\n") == 1 and "Traceback" not in result.err, result.err


def test_a_whole_number_in_scientific_notation_is_accepted(cli):
    result = cli("values", ".6", "-n", "1.2e1", "--backend", "reference")
    assert result.code == 0 and len(result.out.split()) == 12


# -- period ---------------------------------------------------------------------------------


def find_period(code, limit, directory=None, claim=None):
    game = parse_game(code)
    tally = Tally(0, ExactProof(game.max_take, claim, until=limit))
    engine = Engine(game, EngineOptions(until=limit, workers=0), [tally], directory=directory,
                    identity={"command": "period", "claim": list(claim) if claim else None}, keep_all=True)
    engine.run()
    return summarize(engine, tally)


def test_period_of_every_solved_game():
    wrong = {}
    for game, row in solved_games().items():
        found = find_period(game, 10**6).period or {}
        if (found.get("period"), found.get("preperiod")) != (row.period, row.preperiod):
            wrong[game.code] = (found, row.period, row.preperiod)
    assert not wrong


def test_period_command(cli):
    result = cli("period", ".16")
    assert result.code == 0
    assert result.out.splitlines()[0] == "period 149459 preperiod 105351"
    assert "105351 <= n < 360163" in result.out and "G(509621)" in result.out


def test_no_period_and_what_is_still_needed(cli):
    assert cli("period", ".6", "--max", 50_000).out.splitlines()[0] == "no period up to 50000"
    # .16 has seen its period by 420,000 values, but the proof needs 509,622.
    out = cli("period", ".16", "--max", 480_000).out
    assert out.splitlines()[0] == "no period up to 480000"
    assert "candidate period 149459 preperiod 105351" in out and "--max 509622" in out


@pytest.mark.parametrize("period, preperiod, says", [
    (149459, 105351, None),
    (149460, 105351, "G(n + 149460) != G(n) at n = 105351"),
    (149459, 105352, "the preperiod 105352 is not least"),
    (2 * 149459, 105351, "the period 298918 is not least: 149459 is also a period"),
])
def test_a_claimed_period_is_proven_or_refuted_where_it_fails(cli, period, preperiod, says):
    result = cli("period", ".16", "--period", period, "--preperiod", preperiod)
    if says is None:
        assert result.code == 0 and result.out.splitlines()[0] == "period 149459 preperiod 105351"
    else:
        assert result.code == 1 and says in result.out, result.out


def test_period_resumes_from_its_checkpoint(tmp_path):
    with pytest.raises(Interrupted):
        game = parse_game(".16")
        tally = Tally(0, ExactProof(game.max_take))
        engine = Engine(game, EngineOptions(until=10**6, workers=0, chunk=1 << 15), [tally, StopAt(300_000)],
                        directory=tmp_path, identity={"command": "period", "claim": None}, keep_all=True)
        engine.run()
    found = find_period(".16", 10**6, tmp_path).period
    assert (found["period"], found["preperiod"]) == (149459, 105351)


def test_run_proves_a_period_and_stops(tmp_path):
    summary = run_engine(".16", 2_000_000, tmp_path, workers=0, chunk=1 << 16)
    period = summary.period
    assert period["period"] == 149459 and period["from"] >= 105351
    assert summary.statistics.values < 2_000_000  # stopped once proven
    assert summary.statistics.digest == fnv1a64(c_values(".16", summary.statistics.values))


@pytest.mark.slow
def test_period_354_needs_tens_of_millions_of_values():
    found = find_period(".354", 30_000_000).period
    assert (found["period"], found["preperiod"]) == (1180, 10_061_916)


@pytest.mark.slow
def test_period_1777_flammenkamp():
    found = find_period(".1777", 500_000_000).period
    assert (found["period"], found["preperiod"]) == (60_620_715, 160_949_018)


# -- the bars at 10^8 -----------------------------------------------------------------------


@pytest.mark.slow
def test_officers_to_10_8_and_the_agreed_checksum(tmp_path, cli):
    result = cli("run", ".6", "--until", 10**8, "--checkpoint", tmp_path, "--digest-from", 65536)
    assert result.code == 0
    assert digest_line(result.out) == "0a4a3e704932696f"
    assert "largest value 325 first at G(19739543)" in result.out
    # Extend the same run to 100,065,536: the digest three independent programs agree on.
    result = cli("run", ".6", "--until", 100_065_536, "--checkpoint", tmp_path, "--digest-from", 65536)
    assert "fnv1a64 [65536, 100065536) 8e4b3a1160b8651d" in result.out


# Stops spread over G(0) ... G(10^8): inside the first 41,256, around 2^23 and 2^24 (the history's
# limits), and G(21,012,776), where a resumed run of octalgen 0.1 could not go on.
SWEEP_STOPS = [20_000, 41_256, 1_000_000, 2_170_328, 5_000_000, 8_388_607, 8_388_609, 8_400_000, 12_000_000,
               16_777_215, 16_777_217, 17_000_000, 21_012_776, 21_024_274, 30_000_000, 40_000_000, 50_000_000,
               60_000_000, 75_000_000, 90_000_000, 99_999_999]


@pytest.mark.slow
def test_resume_sweep_over_10_8_gives_the_agreed_digest(tmp_path):
    for stop in SWEEP_STOPS:
        with pytest.raises(Interrupted):
            run_engine(".6", 10**8, tmp_path / "stopped", stop_at=stop)
    assert run_engine(".6", 10**8, tmp_path / "stopped").statistics.digest == "0a4a3e704932696f"
    for until in SWEEP_STOPS + [10**8]:
        summary = run_engine(".6", until, tmp_path / "extended")
    assert summary.statistics.digest == "0a4a3e704932696f"


def test_a_long_run_replaces_the_start_up_rates_of_the_split(tmp_path, monkeypatch):
    """The rates a run measured per CPU second (one kernel thread) replace a poor start-up sample."""
    from octalgen.engine import split
    from octalgen.plan import make_plan

    monkeypatch.setenv("OCTALGEN_CACHE_DIR", str(tmp_path))
    plan = make_plan(shipped_table(".6"))
    split._store(plan, 2, {"kernel": {1: 4e5, 2: 5e5}, "verify": 4e4})  # sampled on a busy machine
    split.refine(plan, 2, threads=1, kernel_rate=9.6e5, verify_rate=3.6e5)
    rates = split._cached(plan, 2)
    threads, workers, predicted = split.predict({int(t): r for t, r in rates["kernel"].items()}, rates["verify"], 2)
    # One thread beside two verifying processes: the CPU per value is 1/k + 1/v on each of 2 cores.
    assert (threads, workers) == (1, 2) and predicted == pytest.approx(2 / (1 / 9.6e5 + 1 / 3.6e5))
    split.refine(plan, 2, threads=2, kernel_rate=2e6, verify_rate=None)  # two threads spin: no CPU rate
    assert split._cached(plan, 2)["kernel"]["1"] == 9.6e5 and split._cached(plan, 2)["kernel"]["2"] == 5e5
