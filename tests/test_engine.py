"""Long runs (``octalgen run``, ``stats``, ``period``): published checksums, kill -9 and resume,
distributed == local, recovery, bad checkpoints, the period search against known periods."""

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
from octalgen.engine import checkpoint as checkpoint_module
from octalgen.engine.checkpoint import read_checkpoint
from octalgen.engine.engine import LongRun, RunOptions, summary_of_checkpoint
from octalgen.engine.period import find_period
from octalgen.engine.progress import Progress
from octalgen.engine.scan import ANCHORED, HASH_MATCH, Scanner, crc_of_window
from octalgen.engine.store import read_kept_values
from octalgen.periodicity import solved_games
from octalgen.rare import RareTable, shipped_table
from octalgen.reference import exact_values

OFFICERS_FNV_65536_2097152 = "fceb5187c44e10c4"


def run_in_process(code, until, directory=None, **options):
    return LongRun(code, RunOptions(until=until, **options), directory).run()


def c_values(code, count):
    """Values from the ``c`` backend (itself checked against the reference by test_backend_c)."""
    return compute_values(code, 0, count, backend="c", workers=1)


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
    """.6 to 2^21 with a digest from 65536 and kept values (about 10 s)."""
    directory = tmp_path_factory.mktemp("officers")
    summary = run_in_process(".6", 1 << 21, directory, digest_from=65536, keep_values=True, workers=1)
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
    largest = int(values.max())
    assert stats.largest == (largest, int(np.argmax(values)))
    assert stats.zeros == int((values == 0).sum())
    assert stats.counts == {int(v): int(c) for v, c in enumerate(np.bincount(values)) if c}
    assert not stats.rare_found
    files = sorted(p.suffix for p in (directory / "values").iterdir())
    assert files.count(".u8") >= 1 and files.count(".u16") == 1  # kernel values compressed, prefix raw


def test_stats_command_reads_the_checkpoint(officers_run, cli, tmp_path):
    directory, summary = officers_run
    result = cli("stats", directory)
    assert result.code == 0
    assert digest_line(result.out) == summary.statistics.digest
    assert f"fnv1a64 [65536, 2097152) {OFFICERS_FNV_65536_2097152}" in result.out
    as_json = json.loads(cli("stats", directory, "--json").out)
    assert as_json["fnv1a64"] == summary.statistics.digest and as_json["values"] == 1 << 21
    assert as_json["largest"]["value"] == summary.statistics.largest[0]
    plot = tmp_path / "histogram.png"
    assert cli("stats", directory, "--plot", plot).code == 0
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


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


# -- resume ---------------------------------------------------------------------------------


def _command(directory, until, *extra):
    return [sys.executable, "-m", "octalgen", "-q", "run", ".6", "--until", str(until), "--checkpoint",
            str(directory), "--chunk", str(1 << 16), "--checkpoint-every", "0.2", "--keep-values", "--json", *extra]


def test_chunks_produced_ahead_are_proven_by_the_workers(monkeypatch):
    """While the verifiers' prefix still grows, chunks produced ahead carry the codes their proof
    scans need: none comes back undecided to be re-verified in this process (that serialised
    the first 8 million values).  .6 first needs G(x) for x past the starting prefix at 2,170,328."""
    retried = []
    retry = LongRun._verify_with_recent
    monkeypatch.setattr(LongRun, "_verify_with_recent",
                        lambda self, head, result: retried.append(result.heap) or retry(self, head, result))
    until = 2_400_000
    summary = run_in_process(".6", until, workers=1, chunk=1 << 19, backlog=8)  # all produced ahead
    assert retried == []
    assert summary.statistics.digest == fnv1a64(c_values(".6", until))


def _position(directory) -> int:
    try:
        body = read_checkpoint(directory)
    except Exception:  # noqa: BLE001 - a checkpoint being replaced is read again
        return 0
    return body["position"] if body else 0


def test_kill_9_at_random_moments_then_resume_gives_the_uninterrupted_figures(tmp_path):
    until = 2_000_000
    whole = run_in_process(".6", until, tmp_path / "whole", workers=0, chunk=1 << 16, keep_values=True)
    directory = tmp_path / "killed"
    rng = random.Random(5)
    # Kill when the run has passed random points (so the test does not depend on the machine's
    # speed), plus a random fraction of a second: during kernel, verification, checkpoint writes.
    targets = sorted(rng.uniform(0.02, 0.8) * until for _ in range(6))
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
    for key in ("fnv1a64", "values", "counts", "first_heap", "largest", "last_new", "zeros"):
        assert figures[key] == expected[key], key
    assert fnv1a64(read_kept_values(directory)) == whole.statistics.digest


def test_same_command_resumes_and_a_longer_until_extends(tmp_path):
    first = run_in_process(".6", 200_000, tmp_path, workers=0, chunk=1 << 16)
    again = run_in_process(".6", 200_000, tmp_path, workers=0, chunk=1 << 16)
    assert again.session_values == 0 and again.statistics.digest == first.statistics.digest
    longer = run_in_process(".6", 400_000, tmp_path, workers=0, chunk=1 << 16)
    assert longer.session_values == 200_000
    assert longer.statistics.digest == fnv1a64(c_values(".6", 400_000))


# -- distributed ----------------------------------------------------------------------------


def test_dask_cluster_gives_the_local_digest():
    distributed = pytest.importorskip("distributed")
    local = run_in_process(".6", 1 << 20, workers=0, chunk=1 << 18)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, protocol="tcp",
                                  host="127.0.0.1", scheduler_port=0, dashboard_address=":0") as cluster:
        remote = run_in_process(".6", 1 << 20, scheduler=cluster.scheduler_address, chunk=1 << 18)
    assert remote.statistics.digest == local.statistics.digest
    assert remote.statistics.counts == local.statistics.counts


def test_an_unreachable_scheduler_is_one_line(cli, monkeypatch):
    monkeypatch.setattr("octalgen.engine.executors.CONNECT_TIMEOUT", 2.0)
    result = cli("run", ".6", "--until", 100_000, "--scheduler", "tcp://127.0.0.1:9")
    assert result.code == 2 and result.err.count("\n") == 1 and "cannot reach the Dask scheduler" in result.err


# -- recovery -------------------------------------------------------------------------------


def test_a_new_rare_value_is_announced_recorded_and_the_run_goes_on(tmp_path, caplog):
    # .16 cut after its rare value at 3604: verification stops the kernel at 13932, a new rare value.
    table = shipped_table(".16")
    cut = RareTable(table.game, table.mask, tuple(e for e in table.entries if e[0] <= 3604), 3605)
    with caplog.at_level(logging.WARNING, logger="octalgen"):
        summary = LongRun(".16", RunOptions(until=60_000, workers=0, chunk=1 << 13), tmp_path, table=cut).run()
    assert "NEW RARE VALUE: G(13932)" in caplog.text
    assert summary.statistics.rare_found[0][0] == 13932
    assert summary.statistics.digest == fnv1a64(exact_values(".16", 60_000))
    assert summary.table.digest != cut.digest and (13932, summary.statistics.rare_found[0][1]) in summary.table.entries
    assert summary_of_checkpoint(tmp_path).statistics.rare_found == summary.statistics.rare_found


def test_a_wrong_kernel_value_is_corrected(kernel_fault, caplog):
    planted = kernel_fault
    with caplog.at_level(logging.WARNING, logger="octalgen"):
        summary = run_in_process(".6", 150_000, workers=0, chunk=1 << 15)
    assert f"verification corrected G({planted[0]})" in caplog.text
    assert summary.statistics.digest == fnv1a64(c_values(".6", 150_000))


# -- bad checkpoints ------------------------------------------------------------------------


@pytest.fixture
def small_checkpoint(tmp_path):
    run_in_process(".6", 100_000, tmp_path, workers=0)
    return tmp_path


def _refused(cli, directory, *args):
    before = (directory / "checkpoint.json").read_bytes()
    result = cli("run", *args, "--checkpoint", directory, "--workers", 0)
    assert result.code == 2 and result.err.count("\n") == 1 and "left untouched" in result.err, result.err
    assert (directory / "checkpoint.json").read_bytes() == before
    return result


def test_a_checkpoint_of_another_game_is_refused(cli, small_checkpoint):
    assert "belongs to another run (game '.6'" in _refused(cli, small_checkpoint, ".16", "--until", 200_000).err


def test_a_checkpoint_of_other_parameters_is_refused(cli, small_checkpoint):
    _refused(cli, small_checkpoint, ".6", "--until", 200_000, "--digest-from", 5)


def test_a_truncated_checkpoint_is_refused(cli, small_checkpoint):
    path = small_checkpoint / "checkpoint.json"
    path.write_bytes(path.read_bytes()[:5000])
    assert "truncated or corrupt" in _refused(cli, small_checkpoint, ".6", "--until", 200_000).err


def test_an_edited_checkpoint_fails_its_checksum(cli, small_checkpoint):
    path = small_checkpoint / "checkpoint.json"
    text = path.read_text()
    path.write_text(text.replace('"position":100000', '"position":100001'))
    assert "fails its checksum" in _refused(cli, small_checkpoint, ".6", "--until", 200_000).err


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
    resumed = run_in_process(".6", 600_000, tmp_path, workers=0, chunk=1 << 15)
    assert resumed.session_values == 600_000 - saved
    assert resumed.statistics.digest == fnv1a64(c_values(".6", 600_000))


def test_cuda_backend_is_one_line_without_a_gpu(cli, tmp_path):
    result = cli("run", ".6", "--until", 1000, "--backend", "cuda", "--checkpoint", tmp_path)
    assert result.code == 1 and result.err.count("\n") == 1 and "backend 'cuda' cannot run here" in result.err
    assert not (tmp_path / "checkpoint.json").exists()


def test_a_game_without_sparse_space_is_one_line(cli):
    result = cli("run", ".04", "--until", 1000)
    assert result.code == 2 and "no speculative kernel" in result.err


# -- period ---------------------------------------------------------------------------------


def test_period_of_every_solved_game():
    wrong = {}
    for game, row in solved_games().items():
        report = find_period(game, 10**6)
        if (report.period, report.preperiod) != (row.period, row.preperiod):
            wrong[game.code] = (report.period, report.preperiod, row.period, row.preperiod)
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


def test_run_proves_a_period_and_stops(tmp_path):
    summary = run_in_process(".16", 2_000_000, tmp_path, workers=0, chunk=1 << 16)
    period = summary.period
    assert period["period"] == 149459 and period["from"] >= 105351
    assert summary.statistics.values < 2_000_000  # stopped once proven
    assert summary.statistics.digest == fnv1a64(c_values(".16", summary.statistics.values))


@pytest.mark.slow
def test_period_354_needs_tens_of_millions_of_values():
    report = find_period(".354", 30_000_000)
    assert (report.period, report.preperiod) == (1180, 10_061_916)


# -- progress -------------------------------------------------------------------------------


def test_progress_is_a_bar_on_a_terminal_and_lines_otherwise(io_stream=None):
    import io

    plain, bar = io.StringIO(), io.StringIO()
    for stream, interactive in ((plain, False), (bar, True)):
        progress = Progress(1000, stream=stream, interactive=interactive, every=0)
        progress.update(0, 0, force=True)
        time.sleep(0.01)
        progress.update(500, 700, force=True)
        progress.close()
    assert plain.getvalue().count("\n") == 2 and "values/s" in plain.getvalue() and "ETA" in plain.getvalue()
    assert "\r[############............]  50.0%" in bar.getvalue()


# -- the bars at 10^8 -----------------------------------------------------------------------


@pytest.mark.slow
def test_officers_to_10_8_and_the_agreed_checksum(tmp_path, cli):
    result = cli("run", ".6", "--until", 10**8, "--checkpoint", tmp_path, "--digest-from", 65536)
    assert result.code == 0
    assert digest_line(result.out) == "454292924ee5b56d"
    assert "largest value 325 first at G(19739543)" in result.out
    # Extend the same run to 100,065,536: the digest three independent programs agree on.
    result = cli("run", ".6", "--until", 100_065_536, "--checkpoint", tmp_path, "--digest-from", 65536)
    assert "fnv1a64 [65536, 100065536) 48e5957e44f1849b" in result.out
