"""``octalgen info``: every game the README calls solved is known, with a command that proves it."""

import re
import shlex
from pathlib import Path

import pytest

import octalgen
from octalgen.api import period_limit
from octalgen.periodicity import proof_length, solved_games

README = Path(__file__).resolve().parent.parent / "README.md"

#: An example in the README: ``octalgen period CODE [options]   # period P preperiod I ...``.
_EXAMPLE = re.compile(
    r"^octalgen period (?P<command>[^#]*?)\s+#.*?"
    r"\bperiod (?P<period>\d+) preperiod (?P<preperiod>\d+)",
    re.MULTILINE,
)


def readme_periods() -> dict[str, tuple[int, int, list[str]]]:
    """{code: (period, preperiod, the example's arguments)} of every period the README's examples state."""
    found = {}
    for match in _EXAMPLE.finditer(README.read_text()):
        arguments = shlex.split(match["command"])
        found[arguments[0]] = (int(match["period"]), int(match["preperiod"]), arguments[1:])
    return found


def proof_command(cli, code: str) -> list[str]:
    """The arguments (``period CODE ...``) of the command that ``octalgen info CODE`` says proves the period."""
    result = cli("info", code)
    assert result.code == 0, result.err
    line = next(line for line in result.out.splitlines() if line.startswith("proof "))
    command = shlex.split(line.split("proof", 1)[1].split("(")[0])
    assert command[:3] == ["octalgen", "period", code]
    return command[1:]


def test_the_readme_states_periods():
    assert {".16", ".354", ".104"} <= set(readme_periods())


@pytest.mark.parametrize("code", sorted(readme_periods()))
def test_info_knows_every_period_the_readme_states_and_the_example_reaches_its_proof(code):
    period, preperiod, arguments = readme_periods()[code]
    about = octalgen.info(code)
    assert about.solved and (about.period, about.preperiod) == (period, preperiod)
    # the README's own example computes at least the values the proof needs
    given = dict(zip(arguments[::2], arguments[1::2]))
    assert period_limit(code, float(given["--max"]) if "--max" in given else None) >= about.proof_length


@pytest.mark.parametrize(
    "row", sorted(solved_games().values(), key=lambda row: row.game.code), ids=lambda row: row.game.code
)
def test_infos_command_for_a_solved_game_computes_exactly_its_proof(cli, row):
    arguments = proof_command(cli, row.game.code)
    claim = (int(arguments[arguments.index("--period") + 1]), int(arguments[arguments.index("--preperiod") + 1]))
    assert claim == (row.period, row.preperiod)
    assert period_limit(row.game, claim=claim) == proof_length(row.period, row.preperiod, row.game.max_take)


@pytest.mark.parametrize("code, answer", [(".127", "period 4 preperiod 46578"), (".051", "period 48 preperiod 48")])
def test_infos_command_proves_the_period(cli, code, answer):
    result = cli(*proof_command(cli, code), "-q", "--workers", 0)
    assert result.code == 0, result.err
    assert result.out.splitlines()[0] == answer


@pytest.mark.slow
def test_infos_command_proves_the_period_of_dot354(cli):
    result = cli(*proof_command(cli, ".354"), "-q")  # 20.1 million values
    assert result.code == 0 and result.out.splitlines()[0] == "period 1180 preperiod 10061916"


@pytest.mark.parametrize("code", [".127", ".104"])
def test_solved_games_with_long_preperiods_are_known(cli, code):
    result = cli("info", code)
    assert "not in the table of solved games" not in result.out and "(known answer)" in result.out
    assert "--max 1e8" not in result.out


def test_an_open_game_gets_the_search_command(cli):
    result = cli("info", ".6")
    assert result.code == 0
    assert "not in the table of solved games" in result.out and "octalgen period .6 --max 1e8" in result.out
    assert octalgen.info(".6").proof_length is None
