"""``octalgen survey``: every game of a shape, periods proven, identical sequences grouped, resumable."""

import json

import pytest

from octalgen.checksum import fnv1a64
from octalgen.cli.survey import open_hints
from octalgen.engine.executors import InProcess
from octalgen.game import parse_game
from octalgen.periodicity import is_proven_period, proof_length, solved_games
from octalgen.reference import exact_values
from octalgen.survey import Survey, run_survey, survey_game, survey_games


def test_the_games_of_a_shape():
    games = survey_games(3, (0, 4))
    codes = {g.code for g in games}
    assert len(games) == len(codes) == 2 * 8**3 - 1  # 0.000 has no move; 4.000 splits heaps
    assert {".6", ".07", ".137", "4.07", "4.0", ".777", "4.777"} <= codes and ".0" not in codes


# Those whose proofs a survey of up to 2^17 values per game reaches (.354, .104 and .1777 need millions).
ROWS = sorted(
    (row for row in solved_games().values() if proof_length(row.period, row.preperiod, row.game.max_take) <= 1 << 17),
    key=lambda row: str(row.game),
)


@pytest.mark.parametrize("row", ROWS, ids=lambda row: str(row.game))
def test_every_solved_game_through_the_survey(row):
    # The proof needs 2i + 2p + t values; give the survey a little more, as a user would.
    limit = max(proof_length(row.period, row.preperiod, row.game.max_take) + 1000, 1 << 15)
    result = survey_game(row.game.code, limit)
    assert result["status"] == "periodic"
    assert (result["period"], result["preperiod"], result["largest"]) == (row.period, row.preperiod, row.max_value)
    assert result["proof_values"] == proof_length(row.period, row.preperiod, row.game.max_take)


def test_an_open_game_says_what_was_computed():
    result = survey_game(".6", 30_000)
    values = exact_values(".6", 30_000)
    assert result["status"] == "open" and result["values"] == 30_000
    assert (result["largest"], result["largest_at"]) == (int(values.max()), int(values.argmax()))
    assert (result["sparse_space"], result["mask"], result["rare_count"], result["last_rare"]) == (
        "range",
        "0x1ee",
        1584,
        20627,
    )
    assert result["digest"] == fnv1a64(values)


def test_a_periodic_games_digest_covers_n_values_by_its_period():
    result = survey_game(".77", 5000)  # Kayles: period 12 from 71, proven with 168 values
    assert result["status"] == "periodic" and result["digest"] == fnv1a64(exact_values(".77", 5000))


def test_survey_groups_identical_sequences_and_resumes(tmp_path, cli):
    out = tmp_path / "one"
    first = cli("survey", "--digits", 1, "--max", 5000, "--out", out, "--workers", 0)
    assert first.code == 0, first.err
    table = json.loads((tmp_path / "one.json").read_text())
    games = {g["code"]: g for g in table["games"]}
    assert len(games) == 15 and table["counts"]["periodic"] + table["counts"]["open"] == 15
    # .3, .5 and .7 all play like Nim heaps mod 2 (period 2), as exact values say
    for code in (".5", ".7"):
        assert games[code]["group"] == ".3"
    assert exact_values(".5", 5000).tolist() == exact_values(".3", 5000).tolist()
    assert [".3", ".5", ".7"] in table["identical_sequences"]
    lines = (tmp_path / "one.tsv").read_text().splitlines()
    assert lines[0].startswith("code\tstatus") and len(lines) == 16
    # Drop two finished games from the record: the same command computes only those two.
    record = tmp_path / "one.done.jsonl"
    kept = record.read_text().splitlines()[:-2]
    record.write_text("\n".join(kept) + "\n")
    again = cli("survey", "--digits", 1, "--max", 5000, "--out", out, "--workers", 0)
    assert again.code == 0 and "2 games computed" in again.out and "(13 finished before)" in again.out

    def without_time(games):
        return [{key: value for key, value in g.items() if key != "seconds"} for g in games]

    assert without_time(json.loads((tmp_path / "one.json").read_text())["games"]) == without_time(table["games"])


def test_a_record_of_another_survey_is_refused(tmp_path, cli):
    survey = Survey(tmp_path / "s", survey_games(1), 5000)
    run_survey(survey, InProcess())
    result = cli("survey", "--digits", 1, "--max", 6000, "--out", tmp_path / "s", "--workers", 0)
    assert result.code == 2 and "belongs to another survey" in result.err and result.err.count("\n") == 1


def test_a_survey_proves_what_its_values_prove_and_hints_at_the_rest(tmp_path):
    # .127: period 4, preperiod 46,578 (Gangolli and Plambeck); its proof needs G(0) ... G(93,166), within 2^17,
    # though the hash's power-of-two anchors see the period only past 2^17.  .6 and .16 stay open at 2^17.
    codes = (".127", ".77", ".6", ".16")
    survey = Survey(tmp_path / "s", [parse_game(code) for code in codes], 1 << 17)
    run_survey(survey, InProcess())
    results = {r["code"]: r for r in survey.finished()}
    assert is_proven_period(exact_values(".127", 93_167), ".127", 4, 46_578)
    assert (
        results[".127"]["status"],
        results[".127"]["period"],
        results[".127"]["preperiod"],
        results[".127"]["proof_values"],
    ) == ("periodic", 4, 46_578, 93_167)
    assert (results[".77"]["period"], results[".77"]["preperiod"]) == (12, 71)
    assert [code for code in codes if results[code]["status"] == "open"] == [".6", ".16"]
    open_games = [r for r in survey.finished() if r["status"] == "open"]
    assert open_hints(open_games, 1 << 17) == ["(a period may need more values: try octalgen period .6 --max 1e6)"]


def test_an_open_game_with_a_period_in_sight_names_the_values_its_proof_needs():
    result = survey_game(".127", 90_000)
    assert result["status"] == "open" and result["period"] is None
    assert (result["candidate_period"], result["candidate_preperiod"], result["candidate_proof_values"]) == (
        4,
        46_578,
        93_167,
    )
    assert open_hints([result], 90_000) == ["  .127: period 4 preperiod 46578 seen: octalgen period .127 --max 93167"]


def test_a_record_of_the_earlier_survey_is_refused(tmp_path, cli):
    survey = Survey(tmp_path / "s", survey_games(1), 5000)
    record = dict(survey.header, survey=1)
    survey.done_path.write_text(json.dumps(record) + "\n")
    result = cli("survey", "--digits", 1, "--max", 5000, "--out", tmp_path / "s", "--workers", 0)
    assert result.code == 2 and "written by an earlier octalgen" in result.err and result.err.count("\n") == 1


SURVEY_IN_A_TERMINAL = r"""
import sys
from octalgen.cli import main

sys.exit(main(["-q", "survey", "--digits", "1", "--max", "2000", "--workers", "0", "--out", sys.argv[1]]))
"""


def test_survey_output_fits_the_terminal(tmp_path):
    from terminal import run_in_terminal, screens

    output = run_in_terminal(40, SURVEY_IN_A_TERMINAL, tmp_path / "one-digit")
    # A wider emulator than the program's terminal: a line too wide shows as a long row instead of wrapping.
    rows = [row for rows in screens(output, 200) for row in rows]
    assert any(row.startswith("survey of 15 games") for row in rows), rows
    assert any(row.startswith("open to 2000: ") for row in rows), rows
    assert not [row for row in rows if len(row) > 40]
