"""The command line as a person meets it: quiet by default, -q/-v anywhere, help that explains, early checks."""

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


@pytest.mark.parametrize("args", [("-q", "values", ".6", "-n", 10), ("values", ".6", "-n", 10, "-q"),
                                  ("emit", "-q", "c", ".6", "--help")])
def test_quiet_goes_before_or_after_the_command(cli, args):
    result = cli(*args)
    assert result.code == 0 and result.err == ""


def test_quiet_and_verbose_together_is_a_usage_error(cli):
    result = cli("values", ".6", "-n", 10, "-q", "-v")
    assert result.code == 2 and result.err.count("\n") == 1 and "-q and -v" in result.err


COMMANDS = [("info",), ("values",), ("rare",), ("emit",), ("emit", "c"), ("emit", "cuda"), ("emit", "hdl"),
            ("bench",), ("stones",), ("run",), ("period",), ("stats",), ("synth",), ("export",), ("survey",),
            ("fpga",)]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_explains_itself_with_an_example(cli, command):
    result = cli(*command, "--help")
    assert result.code == 0
    _usage, description, *_rest = result.out.split("\n\n")
    assert len(description.split()) >= 25, f"no description paragraph: {description!r}"
    examples = result.out.split("example")[-1].splitlines()[1:]
    assert any(line.strip().startswith("octalgen " + " ".join(command)) for line in examples), result.out


def test_threads_help_says_what_the_baton_is(cli):
    assert "the 'baton'" in " ".join(cli("emit", "c", "--help").out.split())


def test_a_missing_verilator_is_said_before_any_work(cli, monkeypatch):
    import octalgen.cli.emit_hdl as emit_hdl
    import octalgen.hdl.simulate as simulate

    def no_work(*args, **kwargs):
        pytest.fail("work was done before verilator was looked for")

    monkeypatch.setattr(simulate.shutil, "which", lambda name: None)
    monkeypatch.setattr(emit_hdl, "make_plan", no_work)
    monkeypatch.setattr(emit_hdl, "compute_values", no_work)
    result = cli("emit", "hdl", ".6", "--sim", "--simulator", "verilator", "--cycles", "1e6")
    assert result.code == 1 and result.err.count("\n") == 1
    assert "verilator not found" in result.err and "apt-get install verilator" in result.err
