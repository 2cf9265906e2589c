"""The exact solver in C against the Python reference and the definition."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from octalgen.cpu.exact import CExactSolver, exact_values_c
from octalgen.errors import ComputationError, InputError
from octalgen.game import OctalGame
from octalgen.reference import exact_values
from octalgen.sparse import find_solver_mask

METHODS = ["blocked", "classic"]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("code", [".6", ".16", ".77", ".07", "4.07", ".644", "S(1,2,5)"])
def test_equals_reference(code, method):
    assert exact_values_c(code, 4000, method=method).tolist() == exact_values(code, 4000).tolist()


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


def test_refuses_an_unknown_method():
    with pytest.raises(InputError, match="unknown exact method 'fast'"):
        CExactSolver(".6", method="fast")


def test_refuses_position_parity_when_takes_differ_in_parity():
    with pytest.raises(InputError, match="same parity"):
        CExactSolver(".44", mask=0x3, position_parity=True)


# -- games without a sparse space (issue 11): known answers of tczajka's tables -------------------


def _rare_count_and_last(values, mask):
    rare = np.flatnonzero(np.bitwise_count(values.astype(np.int64) & mask) % 2 == 0)
    return len(rare), int(rare[-1])


def test_dawsons_04_to_2_17():
    # .04 has no sparse space early on: the solver starts with mask 0 and picks a mask on its own.
    values = exact_values_c(".04", 1 << 17)
    assert values.max() == 1024 and int(np.argmax(values == 1024)) == 109363
    assert _rare_count_and_last(values, 0x7B8) == (18860, 131003)


def test_06_to_2_17_under_its_range_mask():
    # .06 stays dense (about 40 % rare under its best mask); the solver must be exact under it.
    solver = CExactSolver(".06", mask=0x5A0)
    values = solver.extend(1 << 17)
    assert values.max() == 1045 and int(np.argmax(values == 1045)) == 127083
    assert _rare_count_and_last(values, 0x5A0) == (52923, 131070)
    assert (
        solver.rare_positions.tolist()
        == np.flatnonzero(np.bitwise_count(values.astype(np.int64) & 0x5A0) % 2 == 0).tolist()
    )


@pytest.mark.parametrize("threads", [1, 2])
def test_blocked_and_classic_agree_on_dense_games_with_any_mask(threads):
    # Past the first blocks, with the best, a poor and no mask: only the speed may differ.
    for code, masks in ((".04", (0x7B8, 0x3, 0)), (".06", (0x5A0, 0x1, 0)), (".104", (0x1B, 0))):
        classic = exact_values_c(code, 12000, mask=0, method="classic")
        for mask in masks:
            assert np.array_equal(exact_values_c(code, 12000, mask=mask, threads=threads), classic), (code, hex(mask))


def test_solver_mask_is_the_cheapest_one():
    # Officers: Grossman's mask; .104: a mask with the heap's parity (take 3: odd); .06: none is
    # worth it (about 40 % rare under its best); .04 at 2^17 (tail 7.5 %): 0x3b8 or 0x7b8.
    assert find_solver_mask(exact_values_c(".6", 1 << 15), 1, 0.4) == (0x1EE, False)
    assert find_solver_mask(exact_values_c(".104", 1 << 15), 1, 0.4) == (0x17, True)
    assert find_solver_mask(exact_values_c(".06", 1 << 15), 0, 0.4) == (0, False)
    assert find_solver_mask(exact_values_c(".04", 1 << 17), None, 0.4) in ((0x3B8, False), (0x7B8, False))


def test_104_has_a_sparse_space_of_positions():
    # .104 has no rare mask of values, but under 0x17 with the heap's parity only 20 heaps below
    # 2^17 are rare (the last at 284): found by the solver itself, which then runs in linear time.
    # Flammenkamp: no value of .104 exceeds 27.
    values = exact_values(".104", 6000)
    solver = CExactSolver(".104")
    assert solver.extend(6000).tolist() == values.tolist()
    assert (solver.mask, solver.position_parity) == (0x17, True)
    assert np.array_equal(solver.extend(1 << 17)[:6000], values)
    assert np.array_equal(solver.values, exact_values_c(".104", 1 << 17, mask=0, method="classic"))
    heaps = np.arange(1 << 17)
    rare = np.flatnonzero((np.bitwise_count(solver.values.astype(np.int64) & 0x17) + heaps + 3) % 2 == 0)
    assert solver.rare_positions.tolist() == rare.tolist() and (len(rare), rare[-1]) == (20, 284)
    assert solver.extend(1 << 20).max() == 27


octal_games_with_splits = st.builds(
    lambda whole, digits: OctalGame((whole, *digits)),
    st.sampled_from([0, 4]),
    st.lists(st.integers(0, 7), min_size=1, max_size=4).filter(lambda d: any(x & 4 for x in d)),
)


@settings(max_examples=5, deadline=None)
@given(octal_games_with_splits, st.integers(1, 2999))
def test_blocked_equals_the_reference(game, resume_at):
    # 3000 heaps: the blocked path starts at heap 1024; from scratch and resumed from exact values,
    # with no mask (adaptive), mask 0 and masks that fit the game or not, with position parity
    # where the game allows it.
    expected = exact_values(game, 3000).tolist()
    parities = (False, True) if game.take_parity is not None else (False,)
    for mask in (None, 0, 0x1, 0x6, 0x1EE):
        for parity in parities if mask else (False,):
            for start in (0, resume_at):
                solver = CExactSolver(game, mask=mask, values=expected[:start], position_parity=parity)
                assert solver.extend(3000).tolist() == expected, (mask, parity, start)


def test_a_spilling_solver_holds_its_values_on_disk_and_gives_the_same(monkeypatch, tmp_path):
    # Past SPILL_FROM values (2^12 here) the solver's buffers, forwards and reversed, are unlinked files
    # in spill_dir: the values are those of a solver in memory, continuing from either.  A disk that
    # cannot hold them is one error line.
    import errno
    import mmap
    import os

    import octalgen.cpu.exact

    monkeypatch.setattr(octalgen.cpu.exact, "SPILL_FROM", 1 << 12)
    expected = CExactSolver(".6", mask=0x1EE).extend(30_000).copy()
    solver = CExactSolver(".6", mask=0x1EE, values=expected[:20_000], spill=True, spill_dir=tmp_path)
    for buffer in (solver._values, solver._reversed):
        assert isinstance(buffer.base, memoryview) and isinstance(buffer.base.obj, mmap.mmap)
    assert np.array_equal(solver.extend(30_000), expected)
    assert not any(tmp_path.iterdir())  # unlinked: nothing is left behind

    def full(fd, offset, length):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "posix_fallocate", full)
    with pytest.raises(
        ComputationError, match=f"cannot hold the exact solver's values on disk in {tmp_path}: No space left on device"
    ):
        CExactSolver(".6", mask=0x1EE, values=expected[:20_000], spill=True, spill_dir=tmp_path)
