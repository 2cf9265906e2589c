"""Count tables: the counts of each value among G(1) ... G(n) at every power of two a run passes, written
in rogalski's layout (``run --counts``, ``export --counts``) and compared (``stats --compare``).

The truth they are checked against is independent: rogalski's own tables (tests/data/rogalski, copied
byte for byte from rogalski-wmii-uni-lodz-pl/octal), and counts taken with numpy from the exact solver's
values.
"""

from __future__ import annotations

import json
import shutil
import signal
from pathlib import Path

import numpy as np
import pytest
from engine_helpers import run_engine, run_octalgen

from octalgen.engine.checkpoint import read_checkpoint, write_checkpoint
from octalgen.engine.counts import CountTables, compare_tables, format_table, read_tables
from octalgen.engine.exact_steps import exact_solver
from octalgen.engine.tally import Tally
from octalgen.errors import Interrupted
from octalgen.game import parse_game

ROGALSKI = Path(__file__).parent / "data" / "rogalski"
TO_2_20 = (1 << 20) + 1  # heaps 1 ... 2^20 need G(0) ... G(2^20)


def rogalski(code: str, up_to: int = 1 << 20) -> dict[int, str]:
    """rogalski's tables of ``code`` for n = 2 ... ``up_to``, as the text of their files."""
    return {n: text for n, text in read_tables(ROGALSKI / ("0" + code)).items() if n <= up_to}


def written(directory: Path, code: str) -> dict[int, str]:
    """The tables a command wrote into ``directory``, by n."""
    where = directory / ("0" + code)
    return {int(p.name): p.read_text() for p in sorted(where.iterdir(), key=lambda p: int(p.name))}


def one_line_error(result, code, message):
    assert result.code == code, result
    assert result.err.count("\n") == 1 and message in result.err, result.err


# -- the tables a tally takes, against numpy's counts of the exact values ------------------------------


@pytest.fixture(scope="module")
def values_167():
    return exact_solver(parse_game(".167"), None).extend(70_000).astype(np.int64)


def expected_table(values: np.ndarray, n: int) -> np.ndarray:
    """The counts of each value among G(1) ... G(n), 0 ... the largest, from numpy."""
    return np.bincount(values[1 : n + 1]).astype(np.uint64)


def test_a_tally_takes_a_table_at_every_power_of_two_whatever_its_pieces(values_167):
    rng = np.random.default_rng(7)
    tally, first = Tally(), 0
    while first < len(values_167):  # pieces of random lengths: most cross a power of two or end at one
        piece = values_167[first : first + int(rng.integers(1, 5000))]
        tally.accept(first, piece.astype(np.uint16))
        first += len(piece)
    tables = tally.tables()
    powers = [1 << k for k in range(1, 17)]
    assert list(tables) == [*powers, len(values_167) - 1]  # and the end: heaps 1 ... 69,999
    for n, table in tables.items():
        assert table.dtype == np.uint64 and np.array_equal(table, expected_table(values_167, n)), n
    assert format_table(tables[16]) == "0 1\n1 5\n2 4\n3 2\n4 3\n5 0\n6 1\n"  # rogalski's results/0.167/16


class Held:
    """What a restored tally reads the values leaving its hash window from (the run's history)."""

    recent_limit = 1 << 20

    def __init__(self, values):
        self._values = values.astype(np.uint16)

    def values(self, start, stop):
        return self._values[start:stop]


def test_a_restored_tally_goes_on_to_the_same_tables(values_167):
    whole = Tally()
    whole.accept(0, values_167.astype(np.uint16))
    for stop in (3, 4097, 20_000):  # just past 2, just past 4096, between two powers
        broken = Tally()
        broken.accept(0, values_167[:stop].astype(np.uint16))
        state = json.loads(json.dumps(broken.state()))  # as a checkpoint holds it
        resumed = Tally()
        resumed.restore(state)
        resumed.attach(Held(values_167))
        resumed.accept(stop, values_167[stop:].astype(np.uint16))
        assert resumed.count_tables.since == 0
        assert {n: format_table(t) for n, t in resumed.tables().items()} == {
            n: format_table(t) for n, t in whole.tables().items()
        }


def test_a_state_without_tables_takes_them_from_where_it_was_resumed(values_167):
    broken = Tally()
    broken.accept(0, values_167[:5000].astype(np.uint16))
    state = broken.state()
    del state["count_tables"]  # a checkpoint of an octalgen that took no tables
    resumed = Tally()
    resumed.restore(state)
    resumed.attach(Held(values_167))
    resumed.accept(5000, values_167[5000:].astype(np.uint16))
    assert resumed.count_tables.since == 5000
    assert list(resumed.tables()) == [8192, 16384, 32768, 65536, len(values_167) - 1]
    assert np.array_equal(resumed.tables()[8192], expected_table(values_167, 8192))


# -- whole runs against rogalski's tables --------------------------------------------------------------


@pytest.mark.parametrize("code", [".161", pytest.param(".172", marks=pytest.mark.slow)])
def test_run_counts_are_rogalskis_tables_to_2_20(cli, tmp_path, code):
    result = cli("-q", "run", code, "--until", TO_2_20, "--checkpoint", tmp_path / "run", "--counts", tmp_path / "out")
    assert result.code == 0, result.err
    assert f"wrote 20 tables (n = 2 ... 1048576) of {code} to {tmp_path / 'out' / ('0' + code)}" in result.err
    assert written(tmp_path / "out", code) == rogalski(code)  # byte for byte, every power of two
    compared = cli("stats", tmp_path / "run", "--compare", ROGALSKI)
    assert (
        compared.code == 0 and compared.out == f"equal: 20 tables (n = 2 ... 1048576) match {ROGALSKI / ('0' + code)}\n"
    )
    # export writes the same tables from the checkpoint.
    assert cli("export", tmp_path / "run", "--counts", tmp_path / "exported").code == 0
    assert written(tmp_path / "exported", code) == rogalski(code)


def test_034_past_both_rare_values_no_mask_helps_with_from_a_script(tmp_path):
    # G(71,722) = 116 and G(374,473) = 102 become terms: the tables on both sides of each are rogalski's.
    # Run as a user runs it: a separate process, from the table of the first 2^15 values (the shipped
    # one holds both).
    first = tmp_path / "first.yaml"
    run_octalgen("-q", "rare", ".034", "--upto", 1 << 15, "-o", first)
    out = tmp_path / "tables"
    result = run_octalgen("-q", "run", ".034", "--until", TO_2_20, "--counts", out, "--json", "--table", first)
    assert [e["heap"] for e in json.loads(result.stdout)["rare_found"]] == [71_722, 374_473]
    assert written(out, ".034") == rogalski(".034")


@pytest.fixture(scope="module")
def unbroken_167(tmp_path_factory):
    """The tables of .167 from one run to 2^20 + 1, and from one to 1,000,001 (whose end is no power of two)."""
    from octalgen.cli import main

    tables = {}
    for until in (TO_2_20, 1_000_001):
        out = tmp_path_factory.mktemp("unbroken")
        assert main(["-q", "run", ".167", "--until", str(until), "--counts", str(out), "--workers", "0"]) == 0
        tables[until] = written(out, ".167")
    assert tables[TO_2_20] == rogalski(".167")
    assert list(tables[1_000_001]) == [1 << k for k in range(1, 20)] + [1_000_000]
    return tables


@pytest.mark.parametrize("until", [TO_2_20, 1_000_001], ids=["to-2^20", "to-10^6"])
def test_a_run_stopped_by_a_smaller_until_writes_the_tables_of_an_unbroken_one(cli, tmp_path, unbroken_167, until):
    run = tmp_path / "run"
    assert cli("-q", "run", ".167", "--until", 300_001, "--checkpoint", run, "--workers", 0).code == 0
    assert cli("export", run, "--counts", tmp_path / "early").code == 0
    assert list(written(tmp_path / "early", ".167")) == [1 << k for k in range(1, 19)] + [300_000]
    assert (
        cli(
            "-q", "run", ".167", "--until", until, "--checkpoint", run, "--workers", 0, "--counts", tmp_path / "out"
        ).code
        == 0
    )
    assert written(tmp_path / "out", ".167") == unbroken_167[until]
    assert cli("export", run, "--counts", tmp_path / "exported").code == 0
    assert written(tmp_path / "exported", ".167") == unbroken_167[until]


@pytest.mark.parametrize("stop_at", [131_073, 500_000], ids=["just-past-2^17", "between"])
def test_a_run_stopped_by_ctrl_c_writes_the_tables_of_an_unbroken_one(cli, tmp_path, unbroken_167, stop_at):
    run = tmp_path / "run"
    with pytest.raises(Interrupted) as stopped:
        run_engine(".167", TO_2_20, run, stop_at=stop_at, workers=0, chunk=1 << 14)  # a real signal to this process
    assert stopped.value.signal_number == signal.SIGINT
    position = read_checkpoint(run)["position"]
    assert stop_at <= position < TO_2_20
    assert cli("-q", "run", ".167", "--until", TO_2_20, "--checkpoint", run, "--workers", 0).code == 0
    assert cli("export", run, "--counts", tmp_path / "out").code == 0
    assert written(tmp_path / "out", ".167") == unbroken_167[TO_2_20]


def test_a_run_resumed_from_a_checkpoint_without_tables_says_which_it_lacks(cli, tmp_path):
    run = tmp_path / "run"
    assert cli("-q", "run", ".167", "--until", 5000, "--checkpoint", run, "--workers", 0).code == 0
    body = read_checkpoint(run)
    del body["consumers"]["tally"]["count_tables"]  # as an octalgen that took no tables wrote it
    write_checkpoint(run, body)
    result = cli(
        "-q", "run", ".167", "--until", 70_000, "--checkpoint", run, "--workers", 0, "--counts", tmp_path / "out"
    )
    assert result.code == 0, result.err
    assert (
        "resumed at G(5000) from a checkpoint that kept no count tables: the powers of two below 5000 have none"
        in result.err
    )
    assert list(written(tmp_path / "out", ".167")) == [8192, 16384, 32768, 65536, 69_999]
    compared = cli("stats", run, "--compare", ROGALSKI)
    assert compared.code == 0 and compared.out.startswith("equal: 4 tables (n = 8192 ... 65536) match")


# -- the comparison ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def run_161(tmp_path_factory):
    """A checkpoint of .161 to 2^16 + 1."""
    from octalgen.cli import main

    directory = tmp_path_factory.mktemp("run161")
    assert (
        main(["-q", "run", ".161", "--until", str((1 << 16) + 1), "--checkpoint", str(directory), "--workers", "0"])
        == 0
    )
    return directory


def test_compare_says_where_the_tables_first_differ(cli, tmp_path, run_161):
    theirs = tmp_path / "0.161"
    shutil.copytree(ROGALSKI / "0.161", theirs)
    (theirs / "1048576").unlink()  # beyond the run: not compared
    lines = (theirs / "1024").read_text().splitlines(keepends=True)
    assert lines[5] == "5 72\n"
    lines[5] = "5 73\n"
    (theirs / "1024").write_text("".join(lines))
    (theirs / "4096").write_text((theirs / "4096").read_text() + "105 0\n")  # a line past the largest
    result = cli("stats", run_161, "--compare", tmp_path)  # the directory that holds 0.161/
    assert result.code == 1 and result.out == f"differ at n = 1024, value 5: ours 72, {theirs}'s 73\n"
    as_json = json.loads(cli("stats", run_161, "--compare", theirs, "--json").out)
    assert as_json == {
        "equal": False,
        "compared": 10,
        "first_n": 2,
        "last_n": 1024,
        "directory": str(theirs),
        "difference": {"n": 1024, "value": 5, "ours": "5 72\n", "theirs": "5 73\n"},
    }
    (theirs / "1024").write_text((ROGALSKI / "0.161" / "1024").read_text())
    result = cli("stats", run_161, "--compare", theirs)
    assert result.code == 1 and result.out == f"differ at n = 4096, value 105: ours no line, {theirs}'s 0\n"
    (theirs / "4096").write_text((ROGALSKI / "0.161" / "4096").read_text()[:-1])  # no newline at its end
    result = cli("stats", run_161, "--compare", theirs)
    assert result.code == 1 and result.out == f"differ at n = 4096, value 104: ours 1, {theirs}'s '104 1'\n"


def test_compare_and_export_refuse_bad_input_in_one_line(cli, tmp_path, run_161):
    one_line_error(cli("stats", run_161, "--compare", tmp_path / "missing"), 2, "missing: no such directory")
    one_line_error(cli("stats", run_161, "--compare", tmp_path), 2, "holds no count tables of .161")
    one_line_error(cli("stats", run_161, "--compare", ROGALSKI, "--histogram"), 2, "leave out --plot")
    one_line_error(cli("stats", tmp_path, "--compare", ROGALSKI), 2, "holds no run checkpoint")
    one_line_error(
        cli("export", run_161, "--counts", tmp_path / "t", "--format", "npy"), 2, "--format does not go with it"
    )
    one_line_error(cli("export", tmp_path / "missing", "--counts", tmp_path / "t"), 2, "no such directory")
    (tmp_path / "file").write_text("")
    one_line_error(cli("export", run_161, "--counts", tmp_path / "file"), 2, "as a directory: it is a file")
    # run checks where its tables go before it computes anything
    one_line_error(
        cli("run", ".161", "--until", 1000, "--counts", tmp_path / "file"), 2, "as a directory: it is a file"
    )
    one_line_error(
        cli("run", ".161", "--until", 1000, "--counts", tmp_path / "no" / "t"),
        2,
        f"the directory {tmp_path / 'no'} does not exist",
    )


def test_tables_are_compared_over_the_n_both_have():
    ours = {2: np.array([1, 1], np.uint64), 4: np.array([1, 1, 2], np.uint64), 5: np.array([1, 2, 2], np.uint64)}
    assert compare_tables(ours, {4: "0 1\n1 1\n2 2\n", 8: "0 9\n"}).describe("r") == "equal: 1 table (n = 4) match r"
    nothing = compare_tables(ours, {8: "0 9\n"})
    assert not nothing.equal and nothing.describe("r") == "no table in common with r"
    assert CountTables(5).due == 9 and CountTables(0).due == 3 and CountTables(3).due == 5


# -- further out (minutes) -----------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("code", [".161", ".167"])
def test_run_counts_are_rogalskis_tables_to_2_24(tmp_path, code):
    heaps = 1 << 24
    run_octalgen(
        "-q", "run", code, "--until", heaps + 1, "--checkpoint", tmp_path / "run", "--counts", tmp_path / "out"
    )
    assert written(tmp_path / "out", code) == rogalski(code, heaps)
    compared = run_octalgen("stats", tmp_path / "run", "--compare", ROGALSKI, check=False)
    assert compared.returncode == 0 and compared.stdout.startswith("equal: 24 tables (n = 2 ... 16777216)")
