"""Pick-up stones (issue 6): the rules, the reference, the generated C, proven periods, the command.

Known answers come from Fisher's paper (seed 001): its Table 1 (checked against
the definition, the copy in the seed being garbled), theorem A.1 (no-repeat
safe positions), section 4.3 / A.2 (the asymmetric Game 1), and from the
octal games: the classic game is the subtraction game S(...).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from octalgen import __version__
from octalgen.backends import compute_values
from octalgen.build import find_compiler
from octalgen.errors import InputError, ToolMissingError
from octalgen.game import subtraction_game
from octalgen.stones import Asymmetric, Classic, NoRepeat, StonesRuleError, compute, parse_moves
from octalgen.stones.eventual_period import (
    Period,
    eventual_periods,
    eventual_periods_of_game,
    least_period,
    state_period,
)
from octalgen.stones.reference import reference_outcomes
from octalgen.stones.stones_plan import MAX_HISTORY_EDGES, make_stones_plan


def _have_compiler() -> bool:
    try:
        find_compiler()
    except ToolMissingError:
        return False
    return True


needs_cc = pytest.mark.skipif(not _have_compiler(), reason="no C compiler")
BACKENDS = ["python", pytest.param("c", marks=needs_cc)]

GAME_1 = Asymmetric((2, 5, 9), (3, 4, 8))  # the paper's Lillian {2, 5, 9} and Rekha {3, 4, 8}

small_sets = st.lists(st.integers(1, 12), min_size=1, max_size=5, unique=True)
# Counts above 64 take the word-at-a-time path of the shift-register kernel.
sets_with_far_counts = st.lists(
    st.one_of(st.integers(1, 12), st.integers(60, 140)), min_size=1, max_size=5, unique=True
)


# -- rules -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda: Classic(()), "empty"),
        (lambda: Classic((1, 0, 3)), "count 0 is not positive"),
        (lambda: Classic((2, -1)), "count -1 is not positive"),
        (lambda: Classic((1, 5, 1)), "count 1 appears more than once"),
        (lambda: NoRepeat((1, 2, 3), 3), r"memory 3 must be less than the number of counts \(3\)"),
        (lambda: NoRepeat((1, 2, 3), 0), "at least 1"),
        (lambda: NoRepeat((4,), 1), "memory 1 must be less"),
        (lambda: Asymmetric((2, 5), ()), "move set of Right is empty"),
        (lambda: Asymmetric((2, 2), (3,)), "move set of Left"),
        (lambda: parse_moves("1,,5"), "an empty entry is not a whole number"),
        (lambda: parse_moves("1,x"), "'x' is not a whole number"),
    ],
)
def test_bad_rules_are_input_errors(make, words):
    with pytest.raises(StonesRuleError, match=words) as caught:
        make()
    assert isinstance(caught.value, InputError)
    assert "\n" not in str(caught.value)


def test_rules_store_sorted_counts():
    assert Classic((10, 1, 8, 5)).moves == (1, 5, 8, 10)
    assert Asymmetric((9, 2, 5), (8, 3, 4)) == GAME_1


def test_no_repeat_histories_follow_the_opponents_moves():
    game = NoRepeat((1, 2, 3), 2)
    # The mover faces the opponent's last 2 moves (entries 0 and 2); their own (entry 1) never restricts them.
    assert game.forbidden((1, 2, 3)) == {1, 3}
    assert game.legal((1, 2, 3)) == (2,)
    assert game.after((1, 2, 3), 2) == (2, 1, 2)
    # At the start of a game nothing is forbidden; after one move only that move.
    assert game.legal(()) == (1, 2, 3)
    assert game.legal((3,)) == (1, 2)
    histories = set(game.histories)
    assert () in histories and (1, 2, 1) in histories
    assert (2, 1, 2) in histories  # a player may repeat their own move: the opponent removed 2 twice
    assert (1, 1, 2) not in histories  # the opponent could not remove 1 right after the mover removed 1


# -- known answers -----------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_classic_table_1(backend):
    outcomes = compute(Classic((1, 5, 8, 10)), 101, backend=backend)
    assert outcomes.digits()[:20].tolist() == [2, 1, 2, 1, 2, 1, 2, 1, 1, 1, 1, 1, 1, 2, 1, 2, 1, 2, 1, 2]
    assert outcomes.digits()[68] == 1  # "with 68 stones on the table, the player going first is going to win"


@pytest.mark.parametrize("backend, count", [("python", 400), pytest.param("c", 100_000, marks=needs_cc)])
def test_no_repeat_theorem_a1(backend, count):
    safe = compute(NoRepeat((1, 2, 3, 4, 5)), count, backend=backend).second_wins["safe"]
    n = np.arange(count)
    assert np.array_equal(safe, (n % 13 == 0) | (n % 13 == 7))


@pytest.mark.parametrize("backend", BACKENDS)
def test_asymmetric_game_1_left_wins_from_ten(backend):
    outcomes = compute(GAME_1, 2000, backend=backend)
    left_first, right_first = outcomes.digits("left"), outcomes.digits("right")
    # Left wins whoever starts: as the player to move (1) and as the second player (2).
    assert (left_first[10:] == 1).all() and (right_first[10:] == 2).all()
    assert right_first[9] == 1  # and not from 9 on


@pytest.mark.parametrize("backend", BACKENDS)
def test_summaries_of_the_papers_games(backend):
    assert eventual_periods_of_game(GAME_1, 10_000, backend)[0].always_wins == ("Left", 10)
    assert eventual_periods_of_game(NoRepeat((1, 2, 3, 4, 5)), 10_000, backend)[0].periods == {"safe": Period(0, 13)}
    # Section 4.3: with Rekha on {3, 5, 9} no player wins whoever starts.
    assert eventual_periods_of_game(Asymmetric((2, 5, 9), (3, 5, 9)), 10_000, backend)[0].always_wins is None


@settings(max_examples=40, deadline=None)
@given(small_sets)
def test_classic_is_the_subtraction_game(moves):
    count = 200
    # The octal reference, not the generated C: 40 games would be 40 compiles (the C exact solver
    # is checked against this reference in test_cpu_exact.py).
    grundy = compute_values(subtraction_game(moves), 0, count, backend="reference")
    assert np.array_equal(reference_outcomes(Classic(tuple(moves)), count).second_wins["mover"], grundy == 0)


def _papers_no_repeat_safe(moves, count):
    """Fisher's section 3.4 matrix A[prev][n], bottom-up: n is safe when every row is 2."""
    matrix = {}  # (previous move, n) -> 2 when the player to move loses
    safe = []
    for n in range(count):
        for prev in moves:
            wins = any(s != prev and s <= n and matrix[s, n - s] == 2 for s in moves)
            matrix[prev, n] = 1 if wins else 2
        safe.append(all(matrix[prev, n] == 2 for prev in moves))
    return np.array(safe)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(1, 12), min_size=2, max_size=6, unique=True))
def test_memory_one_is_the_papers_matrix(moves):
    ours = reference_outcomes(NoRepeat(tuple(moves)), 150).second_wins["safe"]
    assert np.array_equal(ours, _papers_no_repeat_safe(moves, 150))


# -- generated C == reference ---------------------------------------------------------------------------


def _same(game, count):
    c = compute(game, count, backend="c", states=True)
    python = reference_outcomes(game, count)
    for channel in game.channels:
        assert np.array_equal(c.second_wins[channel], python.second_wins[channel]), channel
    assert np.array_equal(c.states, python.states)


@needs_cc
@settings(max_examples=8, deadline=None)
@given(sets_with_far_counts, st.integers(1, 700))
def test_c_classic_equals_reference(moves, count):
    _same(Classic(tuple(moves)), count)


@needs_cc
@settings(max_examples=8, deadline=None)
@given(sets_with_far_counts, sets_with_far_counts, st.integers(1, 700))
def test_c_asymmetric_equals_reference(left, right, count):
    _same(Asymmetric(tuple(left), tuple(right)), count)


@needs_cc
@settings(max_examples=8, deadline=None)
@given(st.lists(st.integers(1, 12), min_size=2, max_size=5, unique=True), st.integers(1, 3), st.integers(1, 300))
def test_c_no_repeat_equals_reference(moves, memory, count):
    _same(NoRepeat(tuple(moves), min(memory, len(moves) - 1)), count)


@needs_cc
def test_c_counts_far_beyond_the_pile_sizes():
    _same(Classic((2, 10**9)), 500)
    _same(Asymmetric((1, 3, 10**6), (2, 65)), 500)


@needs_cc
def test_c_packed_bits_match_outcomes():
    from octalgen.stones.ccode import StonesKernel

    kernel = StonesKernel(GAME_1)
    packed = kernel.packed(1000)
    assert packed.shape == (2, 16)
    bits = np.unpackbits(packed.astype("<u8").view(np.uint8), axis=1, bitorder="little")[:, :1000]
    assert np.array_equal(bits.astype(bool), reference_outcomes(GAME_1, 1000).states.T)


def test_generated_source_has_a_reproducible_provenance_header():
    from octalgen.stones.ccode import generate_source

    for game in (Classic((1, 5, 8, 10)), NoRepeat((1, 2, 3, 4, 5), 2), GAME_1):
        source = generate_source(make_stones_plan(game))
        assert source == generate_source(make_stones_plan(game))
        header = source[: source.index("*/")]
        assert f"generator: octalgen {__version__}" in header
        assert f"rule: {game.rule}" in header
        for key, value in game.options().items():
            assert f"{key}: {value}" in header
    assert "left: 2,5,9" in source and "right: 3,4,8" in source


def test_history_kernel_refuses_a_huge_state_graph():
    with pytest.raises(InputError, match=f"more than the {MAX_HISTORY_EDGES}"):
        make_stones_plan(NoRepeat((1, 2, 3, 4, 5, 6), 4))


# -- periods ---------------------------------------------------------------------------------------------


def test_least_period_shrinks_a_proven_period():
    sequence = np.array([5, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3])
    assert least_period(sequence, Period(4, 6)) == Period(1, 3)


def test_state_period_finds_the_first_repeated_window():
    states = np.array([[1], [0], [1], [1], [0], [1], [1], [0], [1], [1]], dtype=bool)
    # Windows of 2 before piles 0, 1, ...: 00, 01, 10, 01, ... (the first repeat: before 3 = before 1).
    assert state_period(states, 2) == Period(1, 2)
    assert state_period(states[:2], 2) is None


@settings(max_examples=25, deadline=None)
@given(small_sets)
def test_classic_period_holds_far_beyond(moves):
    game = Classic(tuple(moves))
    summary = eventual_periods(reference_outcomes(game, 600))
    if summary is None:
        return  # no repeat below 600 pile sizes: nothing claimed
    period = summary.periods["mover"]
    far = reference_outcomes(game, 2000).second_wins["mover"]
    n = np.arange(period.start, 2000 - period.period)
    assert np.array_equal(far[n], far[n + period.period])
    if period.start > 0:  # least: pile start - 1 breaks the period
        assert far[period.start - 1] != far[period.start - 1 + period.period]


# -- octalgen stones -------------------------------------------------------------------------------------


def _stones(cli, *argv):
    result = cli("-q", "stones", *argv)
    return result.code, result.out, result.err


@pytest.mark.parametrize("backend", BACKENDS)
def test_digits_one_per_line(cli, backend):
    status, out, err = _stones(cli, "--moves", "1,5,8,10", "-n", "20", "--backend", backend)
    assert status == 0 and err == ""
    assert out == "".join(f"{d}\n" for d in [2, 1, 2, 1, 2, 1, 2, 1, 1, 1, 1, 1, 1, 2, 1, 2, 1, 2, 1, 2])


@pytest.mark.parametrize("backend", BACKENDS)
def test_asymmetric_first_player(cli, backend):
    game = ["--left", "2,5,9", "--right", "3,4,8", "-n", "12", "--backend", backend]
    assert _stones(cli, *game)[1].split() == list("221111111111")
    assert _stones(cli, *game, "--first", "right")[1].split() == list("222111221122")


def test_no_repeat_memory(cli):
    status, out, _ = _stones(cli, "--moves", "1,2,3,4,5", "--no-repeat", "--memory", "1", "-n", "14")
    assert status == 0 and out.split() == list("21111112111112")


def test_table(cli):
    status, out, _ = _stones(cli, "--moves", "1,5,8,10", "-n", "101", "--table")
    lines = out.splitlines()
    assert status == 0
    assert lines[0].startswith("classic game, S = {1, 5, 8, 10}: 1 = the player to move wins")
    assert lines[1].split() == ["pile", "+0", "+10", "+20", "+30", "+40"]
    assert lines[2].split() == ["0", "2121212111", "1112121212", "1111112121", "2121111112", "1212121111"]
    assert lines[-1].split() == ["100", "1"]


def test_table_of_an_asymmetric_game_shows_both_starts(cli):
    _, out, _ = _stones(cli, "--left", "2,5,9", "--right", "3,4,8", "-n", "20", "--table")
    lines = out.splitlines()
    assert lines[2].split() == ["0", "Left", "first", "2211111111", "1111111111"]
    assert lines[3].split() == ["Right", "first", "2221112211", "2222222222"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_summary(cli, backend):
    _, out, _ = _stones(cli, "--moves", "1,2,3,4,5", "--no-repeat", "-n", "10**6", "--summary", "--backend", backend)
    assert "period 13 from n = 0: for n >= 0, 2 exactly at n = 0, 7 (mod 13)" in out
    _, out, _ = _stones(cli, "--left", "2,5,9", "--right", "3,4,8", "-n", "1000", "--summary", "--backend", backend)
    assert "Right first  period 1 from n = 10: 2 for every n >= 10" in out
    assert "winner       Left wins whoever starts from n = 10 on" in out


def test_summary_without_a_period_in_range(cli):
    status, out, err = _stones(cli, "--moves", "3,17,40,100", "-n", "1000", "--summary")
    assert status == 1 and out == ""
    assert err.startswith("octalgen: error: no period is proven among pile sizes below 1000")
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    "argv, words",
    [
        (["--moves", ""], "empty"),
        (["--moves", "1,x"], "'x' is not a whole number"),
        (["--moves=-3,1"], "count -3 is not positive"),
        (["--moves", "0,1"], "count 0 is not positive"),
        (["--moves", "1,5,1"], "count 1 appears more than once"),
        (["--moves", "1,2", "--no-repeat", "--memory", "2"], "memory 2 must be less than the number of counts"),
        (["--moves", "1,2", "--no-repeat", "--memory", "0"], "at least 1"),
        (["--moves", "1,2", "--memory", "1"], "--memory goes with --no-repeat"),
        (["--left", "1,2"], "needs both --left and --right"),
        (["--moves", "1", "--left", "2", "--right", "3"], "either --moves or --left and --right"),
        (["--moves", "1,2", "--first", "right"], "--first is for asymmetric games"),
        (["--left", "1", "--right", "2", "--no-repeat"], "--no-repeat is for one move set"),
        ([], "give the removal counts"),
        (["--moves", "1", "--table", "--summary"], "not allowed with argument"),
        (["--moves", "1", "--backend", "fpga"], "invalid choice"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(cli, argv, words):
    status, out, err = _stones(cli, *argv, "-n", "10")
    assert status == 2 and out == ""
    assert words in err and err.count("\n") == 1
