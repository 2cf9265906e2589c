"""The command line: output formats, files, exit codes and one-line errors."""

import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from octalgen.cli.values import _write
from octalgen.engine.checkpoint import read_checkpoint
from octalgen.errors import InputError
from octalgen.rare import RareTable, shipped_table
from octalgen.reference import naive_values

OFFICERS_20 = [0, 0, 1, 2, 0, 1, 2, 3, 1, 2, 3, 4, 0, 3, 4, 2, 1, 3, 2, 1]


def test_values_text(cli):
    result = cli("values", ".6", "-n", 20, "--backend", "reference")
    assert result.code == 0
    assert [int(x) for x in result.out.split()] == OFFICERS_20


def test_values_start(cli):
    result = cli("values", "officers", "-n", 5, "--start", 15, "--backend", "reference")
    assert [int(x) for x in result.out.split()] == OFFICERS_20[15:20]


def test_values_u16_file(cli, tmp_path):
    out = tmp_path / "kayles.u16"
    result = cli("values", "kayles", "-n", 300, "--format", "u16", "-o", out, "--backend", "reference")
    assert result.code == 0 and result.out == ""
    assert np.fromfile(out, dtype="<u2").tolist() == naive_values(".77", 300)
    assert not list(tmp_path.glob("*.partial"))


def test_u16_refuses_a_value_it_cannot_hold():
    with pytest.raises(InputError, match=r"G\(12\) = 70000 does not fit --format u16"):
        _write([np.array([1, 2, 70000])], "u16", 10, io.BytesIO())


def test_default_backend_is_exact(cli):
    result = cli("values", ".6", "-n", 20)
    assert result.code == 0 and [int(x) for x in result.out.split()] == OFFICERS_20


@pytest.mark.parametrize(
    "args",
    [("values", ".6", "-n", "ten"), ("values", ".6", "-n", -1), ("values", ".6"), ("values", ".6", "-n", 5, "--backend", "abacus"),
     ("values", ".6", "-n", 5, "--format", "u8"), ("rare", ".9"), ("nonsense",)],
)
def test_usage_errors_are_one_line_exit_2(cli, args):
    result = cli(*args)
    assert result.code == 2
    assert len(result.err.strip().splitlines()) == 1, result.err
    assert "Traceback" not in result.err


def test_rare_prints_the_shipped_table(cli):
    result = cli("rare", ".6")
    assert result.code == 0
    assert RareTable.from_yaml(result.out, game=".6") == shipped_table(".6")


def test_rare_computes_and_writes(cli, tmp_path):
    out = tmp_path / "t.yaml"
    result = cli("rare", "S(1,5,8,10)", "--upto", 3000, "-o", out)
    assert result.code == 0
    table = RareTable.load(out, game=".3000300303")
    assert table.exact_to == 3000


def test_table_of_another_game_is_refused(cli, tmp_path):
    out = tmp_path / "t.yaml"
    shipped_table(".356").save(out)
    result = cli("values", ".6", "-n", 5, "--table", out)
    assert result.code == 2
    assert "is for .356, not .6" in result.err and len(result.err.strip().splitlines()) == 1


def test_missing_table_file(cli, tmp_path):
    result = cli("values", ".6", "-n", 5, "--table", tmp_path / "nope.yaml")
    assert result.code == 2 and "cannot read rare table" in result.err


def test_info(cli):
    result = cli("info", "officers")
    assert result.code == 0
    assert ".6 (officers)" in result.out
    assert "0x1ee (bits 1, 2, 3, 5, 6, 7, 8)" in result.out
    assert "1584, the last at G(20627) = 277" in result.out
    kayles = cli("info", ".77").out
    assert "12, preperiod 71" in kayles


def test_entry_points():
    script = Path(sys.executable).parent / "octalgen"  # installed next to the interpreter
    for command in ([str(script)], [sys.executable, "-m", "octalgen"]):
        done = subprocess.run([*command, "values", ".6", "-n", "8"], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == [str(v) for v in OFFICERS_20[:8]]


def test_text_lines_are_what_str_gives():
    from octalgen.cli.values import decimal_lines

    for values in (np.arange(1 << 16), np.random.default_rng(3).integers(0, 1 << 16, 50_000), np.array([7, 1 << 20]),
                   np.zeros(0, np.int64)):
        assert decimal_lines(values) == "".join(f"{v}\n" for v in values.tolist()).encode()


# -- messages in a user's words (issue 30) ---------------------------------------------------------


def one_line_usage_error(result) -> str:
    assert result.code == 2 and result.out == "" and result.err.count("\n") == 1, result
    assert "Traceback" not in result.err
    return result.err


def test_a_mistyped_option_is_named_before_what_it_causes(cli):
    # --until is required: the unknown --untill, not the missing --until, is what the user must hear about
    error = one_line_usage_error(cli("run", ".6", "--untill", "1e6"))
    assert "unrecognized option --untill: did you mean --until?" in error and "required" not in error
    error = one_line_usage_error(cli("values", ".6", "-n", 5, "--frmat", "u16"))
    assert "unrecognized option --frmat: did you mean --format?" in error
    assert "did you mean" not in one_line_usage_error(cli("values", ".6", "-n", 5, "--zzz"))  # nothing alike


def test_an_abbreviated_option_is_still_accepted(cli):
    result = cli("values", ".6", "-n", 5, "--back", "reference")
    assert result.code == 0 and [int(v) for v in result.out.split()] == OFFICERS_20[:5]


def test_a_mistyped_command_or_choice_gets_the_one_meant(cli):
    assert "invalid choice: 'valuse': did you mean values?" in one_line_usage_error(cli("valuse", ".6"))
    assert "did you mean cuda?" in one_line_usage_error(cli("run", ".6", "--until", 10, "--backend", "cudda"))


@pytest.mark.parametrize("name, meant", [("officer", "officers"), ("Kayle", "kayles"),
                                         ("dawsons kayles", "dawsons-kayles")])
def test_a_mistyped_game_name_gets_the_name_meant(cli, name, meant):
    error = one_line_usage_error(cli("values", name, "-n", 3))
    assert f"no game is named {name!r}: did you mean {meant}?" in error and "bad character" not in error


def test_info_on_an_unsolved_game_says_how_to_find_out(cli):
    result = cli("info", ".354")
    assert result.code == 0
    assert "not in the table of solved games" in result.out and "octalgen period .354 --max 1e8" in result.out


def test_a_stopped_values_speaks_of_no_checkpoint(cli, monkeypatch):
    import signal

    import octalgen.cli.values as values_command
    from octalgen.errors import Interrupted

    def stopped_after_some(*args, **kwargs):
        yield np.array(OFFICERS_20[:10])
        raise Interrupted(signal.SIGINT, 41_256)  # what the engine raises on Ctrl-C, without a directory

    monkeypatch.setattr(values_command, "iter_values", stopped_after_some)
    result = cli("values", ".6", "-n", 100_000)
    assert result.code == 130
    assert result.err == "octalgen: stopped by Ctrl-C: G(0) ... G(41255) proven\n"
    assert str(Interrupted(signal.SIGINT, 5)).endswith("(no checkpoint was asked for)")  # a run could have kept one


def test_values_shows_the_engines_phases(monkeypatch):
    import octalgen

    class Recorder:
        def __init__(self):
            self.phases, self.proven = [], 0

        def phase(self, text, eta=True):
            self.phases.append((text, eta))

        def update(self, proven, produced=None, force=False):
            self.proven = proven

    recorder = Recorder()
    values = np.concatenate(list(octalgen.iter_values(".6", 200_000, progress=recorder)))
    assert len(values) == 200_000
    assert ("exact prefix", False) in recorder.phases  # no ETA from the prefix's rate
    assert ("running", True) in recorder.phases and recorder.proven == 200_000


def test_rare_upto_gives_the_table_of_those_values(cli):
    from octalgen.reference import exact_values

    result = cli("rare", ".16", "--upto", 20_000)
    assert result.code == 0
    table = RareTable.from_yaml(result.out, game=".16")
    assert table.exact_to == 20_000  # not the shipped table's 200000
    values = exact_values(".16", 20_000)
    assert [p for p, _v in table.entries] == [n for n, v in enumerate(values) if table.is_rare(v, n)]


@pytest.fixture(scope="module")
def kept_run(tmp_path_factory):
    """``run .04 --until 2^17 --keep-values``: the game and length of tczajka's table of rare values."""
    from octalgen.cli import main

    directory = tmp_path_factory.mktemp("kept04")
    assert main(["run", ".04", "--until", str(1 << 17), "--keep-values", "--checkpoint", str(directory), "-q",
                 "--workers", "0"]) == 0
    return directory


def test_stats_says_where_the_last_value_rare_under_a_mask_is(cli, kept_run):
    # tczajka's tables: .04 has 18,860 values rare under 0x7b8 below 2^17, the last at heap 131,003
    result = cli("stats", kept_run, "--mask", "0x7b8")
    assert result.code == 0
    assert "rare under mask 0x7b8: 18860 of 131072 values, the last G(131003) = " in result.out
    as_json = json.loads(cli("stats", kept_run, "--mask", "0x7b8", "--json").out)
    assert as_json["rare_under_mask"] == {"0x7b8": 18860}
    assert as_json["last_rare_under_mask"]["0x7b8"]["heap"] == 131003


def test_stats_says_where_the_last_value_rare_under_a_mask_is_without_kept_values(cli, tmp_path):
    # The same figures from the run's counts and last heaps alone, the values not kept.
    assert cli("run", ".04", "--until", 1 << 17, "--checkpoint", tmp_path, "-q", "--workers", 0).code == 0
    assert read_checkpoint(tmp_path)["parameters"]["keep_values"] is False
    result = cli("stats", tmp_path, "--mask", "0x7b8")
    assert result.code == 0
    assert "rare under mask 0x7b8: 18860 of 131072 values, the last G(131003) = " in result.out


def test_stats_takes_the_checkpoint_file_too(cli, kept_run, tmp_path):
    by_directory, by_file = cli("stats", kept_run), cli("stats", kept_run / "checkpoint.json")
    assert by_file.code == 0 and by_file.out == by_directory.out
    other = tmp_path / "notes.txt"
    other.write_text("not a checkpoint\n")
    error = cli("stats", other)
    assert error.code == 2 and "is a file: give the --checkpoint directory of a run" in error.err


def test_a_checkpoint_of_another_command_is_refused_in_words(cli, kept_run):
    before = (kept_run / "checkpoint.json").read_bytes()
    result = cli("period", ".04", "--checkpoint", kept_run, "--max", 1 << 17)
    assert result.code == 2 and result.err.count("\n") == 1
    assert "it was written by octalgen run, not octalgen period" in result.err
    assert "keep_values" not in result.err and "(command" not in result.err  # no field names
    assert (kept_run / "checkpoint.json").read_bytes() == before


def test_the_summary_leads_with_the_mathematics(cli, tmp_path):
    plain = cli("run", ".6", "--until", 200_000, "--workers", 0)
    assert plain.code == 0, plain.err
    lines = plain.out.splitlines()
    assert lines[0].startswith("fnv1a64 ") and lines[2].startswith("largest value ")
    assert "sparse space: range, mask 0x1ee; 1584 rare values, the last G(20627) = 277" in lines
    assert not any(line.startswith(("cores:", "CPU seconds", "rare table sha256")) for line in lines)
    verbose = cli("run", ".6", "--until", 200_000, "--workers", 0, "-v")
    assert verbose.out.startswith(plain.out.split("values/s")[0])  # the same figures first ...
    assert "\nCPU seconds per 10^8 values: " in verbose.out and "\nrare table sha256:" in verbose.out  # ... then these
    as_json = json.loads(cli("run", ".6", "--until", 200_000, "--workers", 0, "--json").out)
    assert as_json["cpu_roles"] and as_json["rare_table"].startswith("sha256:")  # --json keeps everything
