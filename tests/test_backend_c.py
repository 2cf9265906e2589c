"""The ``c`` backend (exact) and ``c-speculative`` against the reference, published data and planted faults."""

import logging
import stat

import numpy as np
import pytest

from octalgen.backends import compute_values, get_backend
from octalgen.checksum import fnv1a64
from octalgen.cpu.generate import compile_unit, kernel_unit
from octalgen.cpu.kernel import SpeculativeKernel, StorageOverflow
from octalgen.errors import BuildError, ToolMissingError
from octalgen.periodicity import is_proven_period, solved_games
from octalgen.plan import make_plan
from octalgen.rare import RareTable, shipped_table
from octalgen.reference import exact_values

OFFICERS_FNV_65536_2097152 = "73c2a53ce177d95a"
OFFICERS_FNV_65536_10065536 = "2d4e78a4ea132875"


@pytest.fixture(scope="module")
def officers_reference():
    """The first 2*10^5 values of .6 from the pure-Python reference (about 15 s)."""
    return exact_values(".6", 200_000)


def values(code, count, backend="c", **options):
    return compute_values(code, 0, count, backend=backend, **options)


def test_c_is_the_default_exact_backend():
    assert get_backend().name == "c"
    assert not get_backend("c-speculative").exact


def test_officers_first_2097152_values(officers_reference):
    # Verification runs in worker processes here (2^21 heaps per chunk, two workers).
    found = values(".6", 1 << 21, workers=2, chunk=1 << 21)
    assert np.array_equal(found[:200_000], officers_reference)
    assert fnv1a64(found[65536:]) == OFFICERS_FNV_65536_2097152


@pytest.mark.slow
def test_officers_first_10065536_values():
    found = values(".6", 10_065_536)
    assert fnv1a64(found[65536:]) == OFFICERS_FNV_65536_10065536


def test_officers_in_16_bit_storage(officers_reference):
    assert np.array_equal(values(".6", 200_000, storage="u16"), officers_reference)


def test_speculative_backend(officers_reference):
    assert np.array_equal(values(".6", 200_000, backend="c-speculative", threads=2), officers_reference)


def test_values_from_a_start(officers_reference):
    assert np.array_equal(compute_values(".6", 41_000, 1000, backend="c"), officers_reference[41_000:42_000])


@pytest.mark.parametrize("game", sorted(solved_games(), key=str), ids=str)
def test_solved_games_first_3000(game):
    assert np.array_equal(values(game, 3000), exact_values(game, 3000))


SPARSE_SOLVED = [".44", ".53", ".57", ".77", ".045", ".153", ".176", ".375", ".772", "4.12", "4.304", "4.444", ".16"]


@pytest.mark.parametrize("code", SPARSE_SOLVED)
def test_kernel_and_verifier_on_solved_games(code):
    # A table from the first 2048 values makes the kernel start well before 3000 (and the
    # verifier extend the table where it is short).
    reference = exact_values(code, 3000)
    table = RareTable.from_values(code, reference[:2048])
    assert make_plan(table).start < 2500
    assert np.array_equal(values(code, 3000, table=table), reference)


def test_game_16_period_is_proven():
    # .16: period 149459, preperiod 105351 (Gangolli and Plambeck); Guy-Smith needs 509622 values.
    found = values(".16", 510_622)
    assert is_proven_period(found, ".16", 149_459, 105_351)


def test_game_04_has_no_sparse_space():
    assert shipped_table(".04") is None
    assert np.array_equal(values(".04", 1 << 15), exact_values(".04", 1 << 15))


# -- the table is a hint --------------------------------------------------------------------


@pytest.mark.parametrize("index", [800, -1], ids=["middle", "last"])
def test_a_table_missing_a_rare_value_still_gives_exact_values(officers_reference, caplog, index):
    table = shipped_table(".6")
    removed, value = table.entries[index]
    damaged = RareTable(table.game, table.mask, tuple(e for e in table.entries if e[0] != removed), table.exact_to)
    with caplog.at_level(logging.WARNING, logger="octalgen"):
        found = values(".6", 100_000, table=damaged)
    assert np.array_equal(found, officers_reference[:100_000])
    assert f"rare table lacks G({removed}) = {value}" in caplog.text


def test_a_wrong_table_entry_is_corrected(caplog):
    table = shipped_table(".16")
    entries = dict(table.entries)
    entries[1244] = 1 if entries[1244] != 1 else 6  # still rare, but not G(1244)
    damaged = RareTable(table.game, table.mask, tuple(sorted(entries.items())), table.exact_to)
    with caplog.at_level(logging.WARNING, logger="octalgen"):
        found = values(".16", 30_000, table=damaged)
    assert np.array_equal(found, exact_values(".16", 30_000))
    assert "rare table says G(1244)" in caplog.text


def test_verification_finds_new_rare_values_and_regenerates(caplog):
    # .16 cut after its rare value at 3604: the kernel starts at 7211 and the verifier stops it at
    # 13932, a new rare value; the exact solver goes on to the new start and finds 13935 as well.
    # Small chunks put verification into two worker processes.
    table = shipped_table(".16")
    cut = RareTable(table.game, table.mask, tuple(e for e in table.entries if e[0] <= 3604), 3605)
    with caplog.at_level(logging.WARNING, logger="octalgen"):
        found = values(".16", 40_000, table=cut, threads=2, workers=2, chunk=1 << 13)
    assert np.array_equal(found, exact_values(".16", 40_000))
    assert "NEW RARE VALUE: G(13932) = 6 of .16, found by verification" in caplog.text


def test_a_wrong_kernel_value_is_corrected(officers_reference, kernel_fault, caplog):
    # The run corrects the value and resumes the kernel after it.
    planted = kernel_fault
    with caplog.at_level(logging.WARNING, logger="octalgen"):
        found = values(".6", 60_000)
    assert np.array_equal(found, officers_reference[:60_000])
    assert f"verification corrected G({planted[0]})" in caplog.text


def test_a_value_beyond_u8_switches_to_u16(officers_reference, monkeypatch, caplog):
    # No known game with a sparse space reaches 512 soon, so the kernel is made to report one.
    fill = SpeculativeKernel.fill

    def overflowing_fill(self, buffer, first_heap, threads=1, patient=False):
        if self.plan.encoding.kind == "u8" and len(buffer) > self.plan.window + 3000:
            fill(self, buffer[: self.plan.window + 3000], first_heap, threads, patient)
            raise StorageOverflow(first_heap + 3000, self.plan)
        fill(self, buffer, first_heap, threads, patient)

    monkeypatch.setattr(SpeculativeKernel, "fill", overflowing_fill)
    with caplog.at_level(logging.INFO, logger="octalgen"):
        found = values(".6", 50_000)
    assert np.array_equal(found, officers_reference[:50_000])
    assert "continuing with 16-bit storage" in caplog.text and "storage u16" in caplog.text


# -- tools ----------------------------------------------------------------------------------


def test_no_compiler_is_one_clear_line(monkeypatch):
    monkeypatch.setenv("CC", "/nonexistent/cc")
    with pytest.raises(ToolMissingError, match=r"backend 'c' cannot run here: .*set CC"):
        get_backend("c")
    assert get_backend().name == "reference"  # the default falls back to an exact backend that runs


def test_compiler_failure_keeps_the_source(monkeypatch, tmp_path):
    fake = tmp_path / "failing-cc"
    fake.write_text(
        '#!/bin/sh\nif [ "$1" = "--version" ]; then echo "failing-cc 1.0"; exit 0; fi\n'
        'echo "generated.c:7:1: error: the compiler says no" >&2\nexit 1\n'
    )
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("CC", str(fake))
    monkeypatch.setenv("OCTALGEN_CACHE_DIR", str(tmp_path / "cache"))
    unit = kernel_unit(make_plan(shipped_table(".16")))
    with pytest.raises(BuildError, match="error: the compiler says no") as raised:
        compile_unit(unit)
    assert (raised.value.kept / "generated.c").read_text() == unit.source
