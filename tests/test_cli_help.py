"""The command line as a person meets it: quiet by default, -q/-v anywhere, help that explains, early checks."""

import re

import pytest

OFFICERS_10 = [0, 0, 1, 2, 0, 1, 2, 3, 1, 2]


def test_quiet_by_default_and_verbose_on_request(cli):
    quiet = cli("values", ".6", "-n", 10)
    assert quiet.code == 0 and [int(v) for v in quiet.out.split()] == OFFICERS_10
    assert quiet.err == ""  # no build or plan chatter
    for args in (("-v", "values", ".6", "-n", 10), ("values", ".6", "-n", 10, "-v")):
        verbose = cli(*args)
        assert verbose.code == 0 and [int(v) for v in verbose.out.split()] == OFFICERS_10
        assert "octalgen: kernel plan for .6: 1584 terms" in verbose.err


@pytest.mark.parametrize(
    "args", [("-q", "values", ".6", "-n", 10), ("values", ".6", "-n", 10, "-q"), ("emit", "-q", "c", ".6", "--help")]
)
def test_quiet_goes_before_or_after_the_command(cli, args):
    result = cli(*args)
    assert result.code == 0 and result.err == ""


def test_quiet_and_verbose_together_is_a_usage_error(cli):
    result = cli("values", ".6", "-n", 10, "-q", "-v")
    assert result.code == 2 and result.err.count("\n") == 1 and "-q and -v" in result.err


COMMANDS = [
    ("info",),
    ("values",),
    ("rare",),
    ("emit",),
    ("emit", "c"),
    ("emit", "cuda"),
    ("emit", "hdl"),
    ("bench",),
    ("stones",),
    ("run",),
    ("period",),
    ("stats",),
    ("synth",),
    ("export",),
    ("survey",),
    ("fpga",),
]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_explains_itself_with_an_example(cli, command):
    result = cli(*command, "--help")
    assert result.code == 0
    _usage, description, *_rest = result.out.split("\n\n")
    assert len(description.split()) >= 25, f"no description paragraph: {description!r}"
    examples = result.out.split("example")[-1].splitlines()[1:]
    assert any(line.strip().startswith("octalgen " + " ".join(command)) for line in examples), result.out


def test_threads_help_says_what_the_baton_is(cli):
    assert "pass a baton at the end of each block" in " ".join(cli("emit", "c", "--help").out.split())


def test_a_missing_verilator_is_said_before_any_work(cli, monkeypatch):
    import octalgen.cli.emit_hdl as emit_hdl
    import octalgen.hdl.simulate as simulate

    def no_work(*args, **kwargs):
        pytest.fail("work was done before verilator was looked for")

    monkeypatch.setattr(simulate.shutil, "which", lambda name: None)
    monkeypatch.setattr(emit_hdl, "plan_game", no_work)
    monkeypatch.setattr(emit_hdl, "compute_values", no_work)
    result = cli("emit", "hdl", ".6", "--sim", "--simulator", "verilator", "--cycles", "1e6")
    assert result.code == 1 and result.err.count("\n") == 1
    assert "verilator not found" in result.err and "apt-get install verilator" in result.err


# Every help page, then a short run with -v (progress line, summary and the engineering figures), in one process.
HELP_PAGES_AND_A_RUN = r"""
import sys
from octalgen.cli import main

until, commands = sys.argv[1], sys.argv[2:]
for command in commands:
    try:
        main([*command.split(), "--help"])
    except SystemExit as exc:
        assert exc.code == 0, command
sys.exit(main(["run", ".6", "--until", until, "-v"]))
"""


def every_command() -> list[str]:
    """Every command and sub-command of the parser, as typed after ``octalgen`` ("" for the main page)."""
    import argparse

    from octalgen.cli import build_parser

    found, parsers = [], [("", build_parser())]
    while parsers:
        name, parser = parsers.pop()
        found.append(name)
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                parsers += [(f"{name} {sub}".strip(), child) for sub, child in action.choices.items()]
    return sorted(found)


def test_help_pages_and_a_run_fit_an_80_column_terminal():
    from terminal import run_in_terminal, screens

    commands = every_command()
    assert {"", "run", "emit c", "survey"} <= set(commands)
    output = run_in_terminal(80, HELP_PAGES_AND_A_RUN, 300_000, *commands)
    # A wider emulator than the program's terminal: a line too wide shows as a long row instead of wrapping.
    shown = screens(output, 200)
    too_wide = {row for rows in shown for row in rows if len(row) > 80}
    assert not too_wide, sorted(too_wide)
    rows = {row for rows in shown for row in rows}
    for command in commands:
        assert any(row.startswith(f"usage: octalgen {command}".rstrip()) for row in rows), command
    assert any(re.fullmatch(r"fnv1a64 [0-9a-f]{16}", row) for row in rows)  # the summary, whose first line it is
    assert any(row.startswith("CPU seconds per 10^8 values:") for row in rows)  # -v: the engineering figures too


def test_help_prose_is_reflowed_and_examples_kept_or_split_where_they_may_be():
    from octalgen.cli import HelpFormatter

    text = (
        "A description written with\nits line breaks anywhere, which the page\nreflows.\n\nexamples:\n"
        "  octalgen values .6 -n 10                  short enough: kept as written\n"
        "  octalgen run .6 --until 1e9 --checkpoint runs/officers   # too wide for 40 columns\n"
    )
    lines = HelpFormatter("octalgen", width=40)._fill_text(text, 40, "").splitlines()
    assert lines[:2] == ["A description written with its line", "breaks anywhere, which the page reflows."]
    assert all(len(line) <= 40 for line in lines), lines
    # the command, continued as a shell reads it, then its explanation below it
    assert lines[-3:] == [
        "  octalgen run .6 --until 1e9 \\",
        "      --checkpoint runs/officers",
        "      # too wide for 40 columns",
    ]
    wide = HelpFormatter("octalgen", width=120)._fill_text(text, 120, "").splitlines()
    assert "  octalgen values .6 -n 10                  short enough: kept as written" in wide


def test_results_are_wrapped_only_on_a_terminal():
    import io

    from octalgen.cli import fit_to_terminal

    long_line = "zeros 38 at " + ", ".join(str(n) for n in range(0, 400, 7))
    assert fit_to_terminal([long_line], io.StringIO()) == [long_line]  # a file or a pipe: one figure per line
