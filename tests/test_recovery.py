"""Recovery when the speculative kernel is wrong: a rare value the table does not hold (announced,
recorded, the run goes on), a recovery that needs values the run no longer holds (recomputed), a
flipped bit in the kernel's output (corrected), and games whose rare values come late, without a table."""

from __future__ import annotations

import logging

import pytest
from engine_helpers import c_values, run_engine

from octalgen.checksum import fnv1a64
from octalgen.engine.run_summary import summary_of_checkpoint
from octalgen.rare import RareTable, shipped_table
from octalgen.reference import exact_values


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
    # checkpoint after every step and keep_late off, their files are gone from disk as well).
    with caplog.at_level(logging.WARNING, logger="octalgen"):
        summary = run_engine(
            ".16",
            40_000,
            tmp_path if directory else None,
            table=_cut_16(),
            workers=0,
            chunk=1 << 10,
            prefix_limit=1 << 12,
            recent_limit=1 << 12,
            checkpoint_every=0,
            keep_late=False,
        )
    assert "no longer holds them: recomputing" in caplog.text
    assert summary.statistics.digest == fnv1a64(exact_values(".16", 40_000))


def test_a_checkpointed_run_keeps_its_values_and_decides_far_out_from_them(tmp_path, caplog, monkeypatch):
    monkeypatch.setattr("octalgen.engine.store.FILE_VALUES", 1 << 10)
    with caplog.at_level(logging.WARNING, logger="octalgen"):
        summary = run_engine(
            ".16",
            40_000,
            tmp_path,
            table=_cut_16(),
            workers=0,
            chunk=1 << 10,
            prefix_limit=1 << 12,
            recent_limit=1 << 12,
            checkpoint_every=0,
        )
    assert "NEW RARE VALUE: G(13932)" in caplog.text and "recomputing" not in caplog.text
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
