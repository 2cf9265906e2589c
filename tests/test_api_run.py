"""``octalgen.run``: the run ``octalgen run`` makes, from code; its limits are the command line's; and a
bug (an :class:`~octalgen.errors.InternalError`) reported with its traceback by the command line."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from engine_helpers import c_values, run_octalgen

import octalgen
from octalgen.checksum import fnv1a64
from octalgen.errors import INTERNAL_ERROR_EXIT, InputError, InternalError, OctalgenError
from octalgen.rare import shipped_table

UNTIL = 200_000


def test_run_proves_the_values_and_reports_what_the_command_prints(cli, tmp_path):
    summary = octalgen.run(".6", UNTIL, workers=0)
    assert summary.statistics.digest == fnv1a64(c_values(".6", UNTIL))
    result = cli("-q", "run", ".6", "--until", UNTIL, "--workers", 0, "--json")
    assert result.code == 0, result.err
    printed, ours = json.loads(result.out), summary.to_json()
    session = {"seconds", "session", "cpu_roles", "cores", "kernel_fallbacks"}  # this session's figures
    assert {k: v for k, v in ours.items() if k not in session} == {k: v for k, v in printed.items() if k not in session}


def test_a_run_from_a_script_resumes_and_extends_in_a_checkpoint_the_command_shares(tmp_path):
    """As a user runs it: a plain script, run as a subprocess (no ``__main__`` guard), then the command
    line going on in the same checkpoint directory."""
    checkpoint = tmp_path / "six"
    script = tmp_path / "six.py"
    script.write_text(
        textwrap.dedent(f"""\
        import octalgen
        first = octalgen.run(".6", 100_000, {str(checkpoint)!r}, workers=0)
        again = octalgen.run(".6", {UNTIL}, {str(checkpoint)!r}, workers=0)
        print(first.statistics.values, again.statistics.values, again.statistics.digest)
        """)
    )
    result = subprocess.run([sys.executable, str(script)], check=False, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["100000", str(UNTIL), fnv1a64(c_values(".6", UNTIL))]
    command = run_octalgen(
        "-q", "run", ".6", "--until", UNTIL, "--checkpoint", checkpoint, "--workers", 0, "--json", timeout=300
    )
    figures = json.loads(command.stdout)
    assert figures["fnv1a64"] == fnv1a64(c_values(".6", UNTIL)) and figures["session"]["values"] == 0


@pytest.mark.parametrize(
    "arguments, options, message",
    [
        ((".6", True), {}, "until must be a whole number, not True"),
        ((".6", 0), {}, "until must be at least 1"),
        ((".6", 10**15 + 1), {}, "until must be at most 1e15"),
        ((".6", 2.5), {}, "until must be a whole number"),
        ((".6", 1000), {"threads": 0}, "threads must be at least 1"),
        ((".6", 1000), {"workers": 5000}, "workers must be at most 1024"),
        ((".6", 1000), {"chunk": 100}, "chunk must be at least 1024"),
        ((".6", 1000), {"checkpoint_every": True}, "checkpoint_every must be a number of seconds"),
        ((".6", 1000), {"checkpoint_every": -1}, "checkpoint_every must be a number of seconds"),
        ((".6", 1000), {"digest_from": False}, "digest_from must be a whole number"),
        ((".6", 1000), {"keep_values": True}, "keep_values needs a checkpoint directory"),
        ((".6", 1000, 7), {}, "checkpoint must be a directory's path"),
        ((".6", 1000), {"backend": "reference"}, "does not prove values through the engine"),
        ((".6", 1000), {"table": shipped_table(".16")}, "the rare table is for .16, not .6"),
        (("nonsense", 1000), {}, "nonsense"),
    ],
)
def test_bad_arguments_are_one_input_error_line(arguments, options, message):
    with pytest.raises(InputError, match=message) as raised:
        octalgen.run(*arguments, **options)
    assert "\n" not in str(raised.value)


def test_run_is_loaded_with_the_package_and_listed():
    assert "run" in dir(octalgen) and octalgen.run.__module__ == "octalgen.api"


def test_an_internal_error_is_a_bug_not_a_user_error():
    assert not issubclass(InternalError, OctalgenError)
    with pytest.raises(InternalError):  # no `except OctalgenError` swallows it
        try:
            raise InternalError("an invariant")
        except OctalgenError:
            pass


def test_the_command_line_reports_a_bug_with_its_traceback_and_status_70(cli, monkeypatch):
    def broken(*args, **kwargs):
        raise InternalError("an invariant that does not hold")

    monkeypatch.setattr(octalgen.api, "run", broken)
    result = cli("run", ".6", "--until", 1000)
    assert result.code == INTERNAL_ERROR_EXIT == 70
    assert "Traceback (most recent call last)" in result.err
    assert "InternalError: an invariant that does not hold" in result.err
    assert result.err.rstrip().splitlines()[-1].startswith("octalgen: internal error: this is a bug in octalgen")
    assert "please report it" in result.err


def test_the_help_names_the_exit_status_of_a_bug(cli):
    result = cli("--help")
    assert result.code == 0 and "70 an internal error" in " ".join(result.out.split())
