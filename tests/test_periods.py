"""Known periods, checked on the reference's values with the Guy–Smith theorem."""

import pytest

from octalgen.periodicity import is_proven_period, proof_length, solved_games
from octalgen.reference import exact_values

KNOWN = [(".77", 12, 71), (".07", 34, 53), (".137", 34, 52), (".4", 34, 54), (".16", 149459, 105351)]


@pytest.mark.parametrize("code, period, preperiod", KNOWN)
def test_known_periods(code, period, preperiod):
    values = exact_values(code, proof_length(period, preperiod, len(code) - 1))
    assert is_proven_period(values, code, period, preperiod)
    # And not one value less would do, nor a shorter period or preperiod.
    assert not is_proven_period(values[:-1], code, period, preperiod)
    assert not is_proven_period(values, code, period, preperiod - 1)


def test_guy_smith_proof_length():
    # G(n + p) = G(n) for i <= n < 2i + p + t needs G(0) ... G(2i + 2p + t - 1).
    assert proof_length(12, 71, 2) == 2 * 71 + 2 * 12 + 2
    assert proof_length(149459, 105351, 2) == 509_622  # within the 510,622 values the issue asks for


SMALL = [row for row in solved_games().values() if proof_length(row.period, row.preperiod, row.game.max_take) < 5000]


@pytest.mark.parametrize("row", SMALL, ids=[row.game.code for row in SMALL])
def test_solved_games_table(row):
    values = exact_values(row.game, proof_length(row.period, row.preperiod, row.game.max_take))
    assert is_proven_period(values, row.game, row.period, row.preperiod)
    assert int(values.max()) == row.max_value


def test_a_wrong_period_is_not_proven():
    values = exact_values(".77", 400)
    assert not is_proven_period(values, ".77", 24, 71)  # a multiple of the least period
    assert not is_proven_period(values, ".77", 11, 71)
