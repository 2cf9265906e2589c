"""The exact reference against the definition and against published sequences."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from octalgen.game import OctalGame, parse_game
from octalgen.reference import ExactSolver, exact_values, naive_values


def test_oeis_sequences(oeis_sequences):
    for seq in oeis_sequences:
        count = seq["offset"] + len(seq["data"])
        assert naive_values(seq["game"], count)[seq["offset"] :] == seq["data"], seq["oeis"]
        assert exact_values(seq["game"], count)[seq["offset"] :].tolist() == seq["data"], seq["oeis"]


@pytest.fixture(scope="module")
def officers_100k():
    solver = ExactSolver(parse_game(".6"))
    solver.extend(100_000)
    return solver


def test_officers_zeros_below_100000(officers_100k):
    # The P-positions of Officers (Grossman; "Officers on the GPU").
    zeros = np.flatnonzero(officers_100k.values == 0).tolist()
    assert zeros == [0, 1, 4, 12, 20, 30, 46, 72, 98, 124, 150, 176, 314, 408]


def test_officers_rare_values(officers_100k):
    # 1584 rare values, the last G(20627) = 277, under the mask of bits 1,2,3,5,6,7,8.
    assert officers_100k.mask == 0x1EE
    assert len(officers_100k.rare_positions) == 1584
    assert officers_100k.rare_positions[-1] == 20627
    assert officers_100k.values[20627] == 277


def test_exact_equals_naive_for_officers():
    assert exact_values(".6", 3000).tolist() == naive_values(".6", 3000)


@pytest.mark.parametrize("code", [".07", ".137", ".04", ".15", "4.07", ".77", ".16"])
def test_exact_equals_naive_with_and_without_sparse_space(code):
    assert exact_values(code, 1500).tolist() == naive_values(code, 1500)


def test_a_given_mask_never_changes_the_values():
    # The mask only decides speed: a wrong one (or none) still gives exact values.
    truth = naive_values(".6", 800)
    for mask in (0, 0x1EE, 0x3, 0xFFF):
        assert exact_values(".6", 800, mask=mask).tolist() == truth


def test_values_are_not_truncated():
    # .04 first exceeds 511 (9 bits) at heap 35663; the plain mex over every
    # option (mask 0) is an independent path through the solver.
    values = exact_values(".04", 36_000)
    assert values.max() > 511
    assert values.tolist() == exact_values(".04", 36_000, mask=0).tolist()


def test_solver_continues_from_a_prefix():
    prefix = naive_values(".6", 500)
    solver = ExactSolver(parse_game(".6"), values=prefix)
    assert solver.extend(1200).tolist() == naive_values(".6", 1200)


octal_digits = st.integers(0, 7)
random_games = st.builds(
    lambda whole, digits: OctalGame((whole, *digits)),
    st.sampled_from([0, 4]),
    st.lists(octal_digits, min_size=1, max_size=4),
)


@settings(max_examples=60, deadline=None)
@given(random_games)
def test_exact_equals_naive_on_random_codes(game):
    assert exact_values(game, 300).tolist() == naive_values(game, 300)


@pytest.mark.slow
def test_officers_agreed_checksum_2m():
    from octalgen.checksum import fnv1a64

    values = exact_values(".6", 2_097_152, mask=0x1EE)
    assert fnv1a64(values[65536:]) == "73c2a53ce177d95a"


def test_digest_is_the_standard_fnv1a64():
    """Values below 256 fold as FNV-1a-64 folds bytes: the test vectors of the FNV reference code hold,
    in Python and in the C scanner that ``run`` uses."""
    from octalgen.checksum import fnv1a64
    from octalgen.engine.scan import Scanner

    assert fnv1a64([]) == "cbf29ce484222325"  # the standard offset basis
    for text, digest in (("a", "af63dc4c8601ec8c"), ("foobar", "85944171f73967e8")):
        symbols = np.frombuffer(text.encode(), dtype=np.uint8).astype(np.uint16)
        assert fnv1a64(symbols) == digest
        scanner = Scanner(1, anchor_from=1 << 62)
        list(scanner.fold(symbols))
        assert scanner.digest() == digest
