"""The exact solver in C against the Python reference and the definition."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from octalgen.cpu.exact import CExactSolver, exact_values_c
from octalgen.errors import ComputationError
from octalgen.game import OctalGame
from octalgen.reference import exact_values, naive_values


@pytest.mark.parametrize("code", [".6", ".16", ".77", ".07", "4.07", ".644", "S(1,2,5)"])
def test_equals_reference(code):
    assert exact_values_c(code, 4000).tolist() == exact_values(code, 4000).tolist()


def test_officers_rare_values_found_without_a_table():
    solver = CExactSolver(".6", mask=0x1EE)
    solver.extend(21000)
    assert len(solver.rare_positions) == 1584
    assert solver.rare_positions[-1] == 20627 and solver.values[20627] == 277


def test_adaptive_mask_gives_the_same_values():
    adaptive = CExactSolver(".6")
    adaptive.extend(20000)
    assert adaptive.mask == 0x1EE
    assert np.array_equal(adaptive.values, exact_values_c(".6", 20000, mask=0x1EE))


def test_continues_from_given_values():
    full = exact_values_c(".16", 6000, mask=0x1E)
    resumed = CExactSolver(".16", mask=0x1E, values=full[:3000])
    assert np.array_equal(resumed.extend(6000), full)


def test_a_wrong_mask_is_slow_but_right():
    assert exact_values_c(".6", 3000, mask=0x3).tolist() == exact_values(".6", 3000).tolist()


def test_dawsons_game_without_sparse_space_beyond_511():
    # .04 has no sparse space (mask 0: a full mex per heap); its values reach 459 by 2^15.
    values = exact_values_c(".04", 1 << 15)
    assert values.tolist() == exact_values(".04", 1 << 15).tolist()


def test_refuses_values_beyond_16_bits():
    with pytest.raises(ComputationError, match="below 65536"):
        CExactSolver(".6", values=[0, 0, 70000])


octal_games = st.builds(
    lambda whole, digits: OctalGame((whole, *digits)),
    st.sampled_from([0, 4]),
    st.lists(st.integers(0, 7), min_size=1, max_size=3),
)


@settings(max_examples=12, deadline=None)
@given(octal_games)
def test_equals_the_definition(game):
    assert exact_values_c(game, 200).tolist() == naive_values(game, 200)
