"""The game model: parsing codes, names and subtraction sets, and rejecting bad ones."""

import pytest

from octalgen.errors import GameCodeError
from octalgen.game import NAMED_GAMES, parse_game, subtraction_game


@pytest.mark.parametrize(
    "text, code",
    [
        (".6", ".6"),
        ("0.6", ".6"),
        ("0.60", ".6"),
        ("0.77", ".77"),
        (".137", ".137"),
        (".007", ".007"),
        ("4.07", "4.07"),
        ("4.0", "4."),
        ("4.00", "4."),
        (" .6 ", ".6"),
        (".0", ".0"),
    ],
)
def test_codes_parse_to_canonical_text(text, code):
    expected = code if code != "4." else "4.0"
    assert parse_game(text).code == expected


def test_equal_games_are_equal_values():
    assert parse_game(".6") == parse_game("0.6") == parse_game("officers")
    assert hash(parse_game(".6")) == hash(parse_game("0.60"))
    assert parse_game(".6") != parse_game(".06")


def test_digits_mean_what_the_code_says():
    kayles = parse_game(".77")
    assert list(kayles.moves()) == [(1, True, True, True), (2, True, True, True)]
    officers = parse_game(".6")
    assert list(officers.moves()) == [(1, False, True, True)]
    assert list(parse_game("4.07").moves()) == [(0, False, False, True), (2, True, True, True)]
    assert officers.max_take == 1 and parse_game(".007").max_take == 3


def test_long_codes():
    text = "." + "1234567" * 6  # 42 digits
    game = parse_game(text)
    assert game.code == text and game.max_take == 42


@pytest.mark.parametrize("name, code", sorted(NAMED_GAMES.items()))
def test_named_games(name, code):
    assert parse_game(name).code == code
    assert parse_game(code).name == name


@pytest.mark.parametrize(
    "text, code",
    [("S(1,2)", ".33"), ("S(1, 5, 8, 10)", ".3000300303"), ("S(3)", ".003"), ("S(2,1)", ".33")],
)
def test_subtraction_sets(text, code):
    assert parse_game(text).code == code
    assert subtraction_game([1, 2]) == parse_game(".33")


@pytest.mark.parametrize(
    "text, culprit",
    [
        (".8", "'8'"),
        ("6", "no point"),
        (".6.6", "more than one point"),
        ("abc", "'a'"),
        (".", "no digits"),
        ("", "empty"),
        ("5.1", "'5'"),
        ("S()", "empty"),
        ("S(0)", "count 0"),
        ("S(1,x)", "'x'"),
    ],
)
def test_bad_codes_name_the_problem(text, culprit):
    with pytest.raises(GameCodeError) as info:
        parse_game(text)
    message = str(info.value)
    assert culprit in message
    assert "\n" not in message


@pytest.mark.parametrize("text", [".8", "6", ".6.6", "abc", ".", "", "5.1", "S()", "S(0)"])
def test_cli_rejects_bad_codes_with_one_line(cli, text):
    result = cli("info", text)
    assert result.code == 2
    assert result.out == ""
    assert len(result.err.strip().splitlines()) == 1
    assert "Traceback" not in result.err
