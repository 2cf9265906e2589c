"""``octalgen run`` and ``octalgen stats``: the published checksum of .6, the kept values and the
figures printed from them, a game without sparse space (all exact solver), and bad numbers or a
missing GPU as one line.  The runs to 10^8 are behind ``-m slow``."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from engine_helpers import c_values, run_engine

from octalgen.checksum import fnv1a64
from octalgen.engine.kept_values import read_kept_values
from octalgen.reference import exact_values

OFFICERS_FNV_65536_2097152 = "73c2a53ce177d95a"


def digest_line(text: str) -> str:
    return next(line.split()[1] for line in text.splitlines() if line.startswith("fnv1a64 ") and "[" not in line)


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
    assert set(figures["cpu_roles"]) == {
        "kernel",
        "verifiers",
        "exact solver",
        "consumers",
        "split measurement",
        "coordinator",
    }


def test_a_game_without_sparse_space_runs_on_the_exact_solver(cli):
    result = cli("run", ".04", "--until", 5000, "--json")
    assert result.code == 0
    assert json.loads(result.out)["fnv1a64"] == fnv1a64(exact_values(".04", 5000))


def test_cuda_backend_is_one_line_without_a_gpu(cli, tmp_path):
    result = cli("run", ".6", "--until", 1000, "--backend", "cuda", "--checkpoint", tmp_path)
    assert result.code == 1 and result.err.count("\n") == 1 and "backend 'cuda' cannot run here" in result.err
    assert not (tmp_path / "checkpoint.json").exists()


@pytest.mark.parametrize(
    "args",
    [
        ("run", ".6", "--until", "1e99"),
        ("run", ".6", "--until", "nan"),
        ("run", ".6", "--until", "-5"),
        ("values", ".6", "-n", "1e99"),
        ("values", ".6", "-n", "0"),
        ("values", ".6", "-n", "1.5"),
        ("values", ".6", "-n", "5", "--start", "1e99"),
        ("values", ".6", "-n", "1e15", "--start", "1e15"),
        ("run", ".6", "--until", "5", "--threads", "0"),
    ],
)
def test_bad_numbers_are_one_line_exit_2(cli, args):
    result = cli(*args)
    assert result.code == 2 and result.err.count("\n") == 1 and "Traceback" not in result.err, result.err


def test_a_whole_number_in_scientific_notation_is_accepted(cli):
    result = cli("values", ".6", "-n", "1.2e1", "--backend", "reference")
    assert result.code == 0 and len(result.out.split()) == 12


@pytest.mark.slow
def test_officers_to_10_8_and_the_agreed_checksum(tmp_path, cli):
    result = cli("run", ".6", "--until", 10**8, "--checkpoint", tmp_path, "--digest-from", 65536)
    assert result.code == 0
    assert digest_line(result.out) == "0a4a3e704932696f"
    assert "largest value 325 first at G(19739543)" in result.out
    # Extend the same run to 100,065,536: the digest three independent programs agree on.
    result = cli("run", ".6", "--until", 100_065_536, "--checkpoint", tmp_path, "--digest-from", 65536)
    assert "fnv1a64 [65536, 100065536) 8e4b3a1160b8651d" in result.out
