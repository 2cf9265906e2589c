"""The command line: output formats, files, exit codes and one-line errors."""

import io
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from octalgen.engine.checkpoint import read_checkpoint
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


def test_default_backend_is_exact(cli):
    result = cli("values", ".6", "-n", 20)
    assert result.code == 0 and [int(x) for x in result.out.split()] == OFFICERS_20


@pytest.mark.parametrize(
    "args",
    [
        ("values", ".6", "-n", "ten"),
        ("values", ".6", "-n", -1),
        ("values", ".6"),
        ("values", ".6", "-n", 5, "--backend", "abacus"),
        ("values", ".6", "-n", 5, "--format", "u8"),
        ("rare", ".9"),
        ("nonsense",),
    ],
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
        done = subprocess.run([*command, "values", ".6", "-n", "8"], check=False, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == [str(v) for v in OFFICERS_20[:8]]


def test_text_lines_are_what_str_gives():
    from octalgen.cli.values import decimal_lines

    for values in (
        np.arange(1 << 16),
        np.random.default_rng(3).integers(0, 1 << 16, 50_000),
        np.array([7, 1 << 20]),
        np.zeros(0, np.int64),
    ):
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


@pytest.mark.parametrize(
    "name, meant", [("officer", "officers"), ("Kayle", "kayles"), ("dawsons kayles", "dawsons-kayles")]
)
def test_a_mistyped_game_name_gets_the_name_meant(cli, name, meant):
    error = one_line_usage_error(cli("values", name, "-n", 3))
    assert f"no game is named {name!r}: did you mean {meant}?" in error and "bad character" not in error


def test_info_on_an_unsolved_game_says_how_to_find_out(cli):
    result = cli("info", ".167")
    assert result.code == 0
    assert "not in the table of solved games" in result.out and "octalgen period .167 --max 1e8" in result.out


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
    assert result.err == "octalgen: stopped by Ctrl-C: G(0) ... G(41255) proven; G(0) ... G(9) written to stdout\n"
    assert result.out.split() == [str(v) for v in OFFICERS_20[:10]]
    assert str(Interrupted(signal.SIGINT, 5)).endswith("(no checkpoint was asked for)")  # a run could have kept one


def test_a_stopped_values_says_its_file_was_not_written(cli, monkeypatch, tmp_path):
    import signal

    import octalgen.cli.values as values_command
    from octalgen.errors import Interrupted

    def stopped_after_some(*args, **kwargs):
        yield np.array(OFFICERS_20[:10], dtype=np.uint16)
        raise Interrupted(signal.SIGTERM, 41_256)

    monkeypatch.setattr(values_command, "iter_values", stopped_after_some)
    out = tmp_path / "g.txt"
    out.write_text("the old content\n")
    result = cli("values", ".6", "-n", 100_000, "-o", out)
    assert result.code == 143 and result.out == ""
    assert result.err == (
        f"octalgen: stopped by SIGTERM: G(0) ... G(41255) proven; nothing written to {out} (a file "
        "is written only once complete)\n"
    )
    assert out.read_text() == "the old content\n" and [p.name for p in tmp_path.iterdir()] == ["g.txt"]


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
    assert (
        main(
            [
                "run",
                ".04",
                "--until",
                str(1 << 17),
                "--keep-values",
                "--checkpoint",
                str(directory),
                "-q",
                "--workers",
                "0",
            ]
        )
        == 0
    )
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


# -- errors and results on a terminal, paths, -vv, binary output, thread bounds -----------------

# Runs the command line with the given arguments on a terminal; prints the exit status last.
COMMAND_IN_A_TERMINAL = """\
import sys
from octalgen.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
print("exit", code)
"""

BAD_CODE = "octalgen values: error: argument CODE: bad game code '.9': '9' at position 2 is not an octal digit"


def terminal_rows(columns: int, *arguments) -> list[str]:
    """The rows the command line leaves on a terminal of ``columns`` (rows longer than it would overflow)."""
    from terminal import run_in_terminal, screens

    shown = screens(run_in_terminal(columns, COMMAND_IN_A_TERMINAL, *arguments), 300)
    return shown[-1]


@pytest.mark.parametrize(
    "arguments, status, start",
    [
        (("values", ".9", "-n", 3), 2, BAD_CODE),
        (
            ("values", ".6", "-n", 3, "-o", "/nonexistent/d/some-rather-long-file-name-for-the-values.txt"),
            2,
            "octalgen: error: cannot write /nonexistent/d/",
        ),
    ],
)
def test_errors_are_wrapped_to_the_terminal_and_one_line_elsewhere(cli, arguments, status, start):
    rows = terminal_rows(80, *arguments)
    assert rows[-1] == f"exit {status}" and len(rows) > 2
    assert all(len(row) <= 80 for row in rows)
    assert " ".join(row.strip() for row in rows[:-1]).startswith(start)
    piped = cli(*arguments)  # a file or a pipe: one line, whatever its length
    assert piped.code == status and piped.err.count("\n") == 1 and len(piped.err) > 80
    assert " ".join(row.strip() for row in rows[:-1]) == piped.err.strip()


def test_the_stones_table_fits_the_terminal():
    rows = terminal_rows(80, "stones", "--moves", "1,2,3,4,5", "--no-repeat", "--memory", 1, "-n", 100, "--table")
    assert rows[-1] == "exit 0" and all(len(row) <= 80 for row in rows)
    assert rows[0].startswith("no-repeat game, S = {1, 2, 3, 4, 5}, memory 1: 2 = safe")


def test_binary_values_are_refused_on_a_terminal_and_written_to_a_pipe(cli):
    rows = terminal_rows(80, "values", ".6", "-n", 10, "--format", "u16")
    assert rows[-1] == "exit 2" and rows[0].startswith("octalgen: error: --format u16 is binary and stdout is a")
    piped = cli("values", ".6", "-n", 20, "--format", "u16")
    assert piped.code == 0 and np.frombuffer(piped.out.encode("latin-1"), "<u2").tolist() == OFFICERS_20


def test_export_refuses_binary_on_a_terminal(tmp_path):
    rows = terminal_rows(80, "export", tmp_path, "--format", "npy")
    assert rows[-1] == "exit 2" and rows[0].startswith("octalgen: error: --format npy is binary")


@pytest.mark.parametrize(
    "command",
    [
        ("values", ".6", "-n", 5, "-o", "{missing}/values.txt"),
        ("rare", ".6", "-o", "{missing}/6.yaml"),
        ("survey", "--digits", 1, "--max", 1000, "--out", "{missing}/survey"),
        ("run", ".6", "--until", 1000, "--checkpoint", "{missing}/ck"),
        ("period", ".137", "--checkpoint", "{missing}/ck"),
        ("emit", "c", ".16", "-o", "{missing}/generated"),
    ],
)
def test_a_missing_parent_directory_is_refused_the_same_way_everywhere(cli, tmp_path, command):
    missing = tmp_path / "no" / "such"
    result = cli(*(str(part).format(missing=missing) for part in command))
    assert result.code == 2 and result.out == ""
    assert result.err.startswith(f"octalgen: error: cannot write {missing}/") and result.err.count("\n") == 1
    assert result.err.endswith(f": the directory {missing} does not exist\n")
    assert list(tmp_path.iterdir()) == []  # nothing made on the way


@pytest.mark.parametrize("command", ["run", "period"])
def test_a_file_given_as_checkpoint_directory_is_called_a_file(cli, tmp_path, command):
    path = tmp_path / "notes.txt"
    path.write_text("mine\n")
    result = cli(command, ".137", *(("--until", 1000) if command == "run" else ()), "--checkpoint", path)
    assert result.code == 2
    assert result.err == f"octalgen: error: cannot use {path} as a checkpoint directory: it is a file\n"
    assert path.read_text() == "mine\n"


def test_a_directory_inside_an_existing_one_is_made(cli, tmp_path):
    result = cli("run", ".137", "--until", 1000, "--checkpoint", tmp_path / "ck", "-q")
    assert result.code == 0 and (tmp_path / "ck" / "checkpoint.json").is_file()
    result = cli("emit", "c", ".16", "-o", tmp_path / "generated")
    assert result.code == 0 and (tmp_path / "generated" / "0.16" / "octalgen_kernel.c").is_file()


def test_vv_adds_stamped_debugging_detail_to_v(cli, tmp_path):
    out = tmp_path / "g.txt"
    one = cli("values", ".6", "-n", 50_000, "-o", out, "-v")
    two = cli("values", ".6", "-n", 50_000, "-o", out, "-vv")
    assert one.code == two.code == 0
    assert not re.search(r"\[ *\d+\.\d{3} s\]", one.err)
    stamped = re.findall(r"^octalgen: \[ *\d+\.\d{3} s\] (.*)$", two.err, re.MULTILINE)
    assert len(stamped) == two.err.count("\n")  # every line stamped
    assert any(line.startswith(f"wrote {out}: {out.stat().st_size} bytes") for line in stamped)
    assert any(line.startswith(".6: running") for line in stamped)  # the engine's phases
    assert len(stamped) > one.err.count("\n")


def test_vv_shows_where_an_error_was_raised(cli):
    result = cli("values", ".6", "-n", 5, "--backend", "abacus", "-vv")
    assert result.code == 2 and "Traceback" in result.err
    assert result.err.splitlines()[-1].startswith("octalgen: error: unknown backend 'abacus'")
    assert "Traceback" not in cli("values", ".6", "-n", 5, "--backend", "abacus", "-v").err


def test_emit_c_threads_are_bounded_as_its_help_says(cli, tmp_path):
    from octalgen.cli.arguments import check_kernel_threads
    from octalgen.errors import InputError
    from octalgen.plan import make_plan

    result = cli("emit", "c", ".6", "--threads", 100, "-o", tmp_path)
    assert result.code == 2 and result.out == ""
    assert result.err == "octalgen: error: --threads 100: a kernel of .6 with u8 storage takes at most 57 threads\n"
    assert "57 threads with u8 storage, 29 with u16" in " ".join(cli("emit", "c", "--help").out.split())
    u8, u16 = make_plan(shipped_table(".6")), make_plan(shipped_table(".6"), storage="u16")
    check_kernel_threads(57, u8)
    check_kernel_threads(29, u16)
    with pytest.raises(InputError, match="with u16 storage takes at most 29 threads"):
        check_kernel_threads(30, u16)


def test_a_resumed_period_reports_this_sessions_values(cli, tmp_path):
    first = cli("period", ".16", "--max", 300_000, "--checkpoint", tmp_path / "p", "--workers", 0, "-q")
    assert first.code == 0 and re.search(r"^computed 300000 values in [\d.]+ s$", first.out, re.MULTILINE)
    second = cli("period", ".16", "--max", 600_000, "--checkpoint", tmp_path / "p", "--workers", 0, "-q")
    assert second.code == 0 and second.out.startswith("period 149459 preperiod 105351")
    assert re.search(
        r"^computed 209622 values in [\d.]+ s; G\(0\) \.\.\. G\(299999\) were proven before, in [\d.]+ s$",
        second.out,
        re.MULTILINE,
    )
    as_json = json.loads(cli("period", ".16", "--max", 600_000, "--checkpoint", tmp_path / "p", "--json").out)
    assert as_json["values"] == 509_622 and as_json["session"]["values"] == 0
    assert [(c["period"], c["outcome"]) for c in as_json["candidates"]] == [(149459, "proven")]


def test_a_resume_command_stays_whole_on_a_line_of_its_own_on_a_terminal(monkeypatch):
    from octalgen.cli import error_text

    class Screen(io.StringIO):
        def isatty(self):
            return True

    line = "octalgen: stopped by Ctrl-C: G(0) ... G(999) proven; checkpoint in runs/officers; resume with:"
    command = "octalgen run .6 --until 1e9 --checkpoint runs/officers"
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert error_text(line, command) == f"{line} {command}\n"  # a file or a pipe: one line
    monkeypatch.setattr(sys, "stderr", Screen())
    monkeypatch.setenv("COLUMNS", "40")
    shown = error_text(line, command).splitlines()
    assert shown[-1] == command and len(shown) > 2 and all(len(row) <= 40 for row in shown[:-1])
