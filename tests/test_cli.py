"""The command line: output formats, files, exit codes and one-line errors."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from octalgen.cli.values import _write
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
        _write([np.array([1, 2, 70000])], "u16", 10, open("/dev/null", "wb"))


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
