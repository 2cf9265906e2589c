"""The CUDA algorithm's numpy twin against the reference: fixed point, verifier, exact driver loop.

These run without a GPU; the kernels in templates/cuda/ implement the same
rounds and decisions (tests/test_cuda_gpu.py compares them on a GPU).
"""

from functools import lru_cache

import numpy as np
import pytest

from octalgen.cuda import driver, twin
from octalgen.cuda.plan import CODES, CudaOptions, make_cuda_plan, spread
from octalgen.errors import ComputationError, InputError
from octalgen.rare import RareTable, is_rare, rare_table
from octalgen.reference import exact_values

GAMES = [".6", ".16", ".356", ".644"]
#: Positions past the plan's first heap that each test computes.
SPAN = {".6": 1200, ".16": 2500, ".356": 3000, ".644": 3000}


@lru_cache(maxsize=None)
def exact_codes(game: str):
    """The plan and the exact codes of G(0) ... G(start + SPAN - 1)."""
    table = rare_table(game)
    plan = make_cuda_plan(table)
    values = exact_values(game, plan.start + SPAN[game], mask=table.mask)
    return plan, plan.kernel.encoding.encode_array(values)


@pytest.mark.parametrize("game", GAMES)
@pytest.mark.parametrize("window", [64, 352])
def test_fixed_point_is_the_exact_sequence(game, window):
    plan, codes = exact_codes(game)
    run = twin.FixedPoint(plan, codes[: plan.start], len(codes), window)
    assert np.array_equal(run.run(), codes)
    advances = run.advances()
    assert advances.min() >= 1  # the front moves every round
    assert advances.sum() == len(codes) - plan.start


@pytest.mark.parametrize("game", GAMES)
def test_window_from_plan_start_and_later(game):
    plan, codes = exact_codes(game)
    for lo in (plan.start, plan.start + 300):
        rounds = twin.window_rounds(plan, codes, lo, 512)  # checks the fixed point == exact
        assert 1 <= rounds <= 512


def test_the_next_read_buffer_is_complete_at_convergence():
    """The GPU engine reads buffer[rounds % 2] as soon as the front reaches the end."""
    plan, codes = exact_codes(".644")
    run = twin.FixedPoint(plan, codes[: plan.start], len(codes), 96)
    while run.front < run.end:
        run.round()
    assert np.array_equal(run.buffers[run.rounds % 2][: run.end], codes)


@pytest.mark.parametrize("game", GAMES)
def test_a_wrong_prefix_value_changes_the_fixed_point(game):
    plan, codes = exact_codes(game)
    prefix = codes[: plan.start].copy()
    prefix[plan.start - 1] ^= 1  # read by every term of the smallest offset
    result = twin.FixedPoint(plan, prefix, len(codes), 256).run()
    assert not np.array_equal(result[plan.start :], codes[plan.start :])


@pytest.mark.parametrize("game", GAMES)
def test_verifier_proves_the_exact_sequence(game):
    plan, codes = exact_codes(game)
    verdict = twin.verify(plan, codes, plan.start, len(codes))
    assert verdict.first_bad is None
    assert verdict.scan_steps.min() >= plan.options.scan_chunk  # every position needed the pair scan


@pytest.mark.parametrize("game", GAMES)
def test_verifier_points_at_the_first_wrong_position(game):
    plan, codes = exact_codes(game)
    for fault in (plan.start, plan.start + 77, len(codes) - 1):
        wrong = codes.copy()
        wrong[fault] ^= 2
        # Later positions follow from the wrong value, so only the fault contradicts its inputs.
        wrong = _continue_fixed_point(plan, wrong, fault + 1)
        assert twin.verify(plan, wrong, plan.start, len(codes)).first_bad == fault
        assert twin.verify(plan, wrong, fault + 1, len(codes)).first_bad is None


def _continue_fixed_point(plan, codes, lo):
    """Codes with positions from ``lo`` on recomputed one by one from the earlier ones."""
    codes = codes.copy()
    for n in range(lo, len(codes)):
        codes[n] = twin.speculative_codes(plan, codes, np.array([n]))[0]
    return codes


def test_new_rare_values_are_found_and_added():
    """With the last three rare values of .16 left out of its table, the verifier rejects
    G(3604) and G(13932); the driver computes them exactly and plans again."""
    full = rare_table(".16")
    truncated = RareTable(full.game, full.mask, full.entries[:50], full.entries[49][0] + 1)
    assert make_cuda_plan(truncated).start < 3604
    end = 14500
    values = driver.compute(".16", end, driver.TwinEngine(256), table=truncated)
    assert np.array_equal(values, exact_values(".16", end, mask=full.mask))


def test_a_scan_that_gives_up_is_settled_on_the_cpu():
    table = rare_table(".644")
    options = CudaOptions(scan_chunk=4, scan_steps=8)
    plan = make_cuda_plan(table, options=options)
    end = plan.start + 400
    exact = exact_values(".644", end, mask=table.mask)
    verdict = twin.verify(plan, plan.kernel.encoding.encode_array(exact), plan.start, end)
    assert verdict.first_bad is not None  # eight steps are too few somewhere
    assert np.array_equal(driver.compute(".644", end, driver.TwinEngine(128), options=options), exact)


@pytest.mark.parametrize("game", [".6", ".356"])
def test_driver_speculative_and_exact_agree_with_the_reference(game):
    plan, codes = exact_codes(game)
    end = plan.start + 300
    expected = exact_values(game, end, mask=plan.table.mask)
    for exact in (True, False):
        assert np.array_equal(driver.compute(game, end, driver.TwinEngine(128), exact=exact), expected)


def test_small_counts_never_reach_the_kernels():
    class NoEngine:
        def speculate(self, *args):
            raise AssertionError("not needed below the plan's first heap")

        verify = speculate

    assert driver.compute(".16", 50, NoEngine()).tolist() == exact_values(".16", 50).tolist()


def test_a_value_too_large_for_a_byte_stops_the_front():
    plan, codes = exact_codes(".6")
    prefix = codes[: plan.start].copy()
    # Make the terms of position start mark every one of the 256 codes.
    for code, (offset, constant) in zip(range(CODES), plan.kernel.encoded_terms()):
        prefix[plan.start - offset] = code ^ constant
    run = twin.FixedPoint(plan, prefix, plan.start + 64, 32)
    with pytest.raises(OverflowError) as raised:
        run.run()
    assert raised.value.args[0] == plan.start
    assert run.front == plan.start


def test_driver_reports_an_overflow_as_a_computation_error(monkeypatch):
    class Overflowing:
        def speculate(self, plan, prefix, end):
            raise OverflowError(plan.start + 5)

    with pytest.raises(ComputationError, match=r"G\(27878\) is 512 or more"):
        driver.compute(".16", 30000, Overflowing())


def test_games_needing_16_bit_storage_are_refused():
    table = rare_table(".6")
    assert is_rare(518, table.mask)
    with pytest.raises(InputError, match="use the C backend"):
        make_cuda_plan(table.with_entry(30000, 518))


def test_spread_is_xor_linear_and_rare_codes_below_counts_rare_values():
    a, b = np.meshgrid(np.arange(CODES), np.arange(CODES))
    assert np.array_equal(spread(a ^ b), spread(a) ^ spread(b))
    plan = make_cuda_plan(rare_table(".6"))
    encoding = plan.kernel.encoding
    for s in (0, 1, 77, 200, 255):
        value = encoding.decode(s)
        assert plan.rare_codes_below[s] == sum(is_rare(v, plan.table.mask) for v in range(value))
    # The u8 codes of rare values are in value order, which the coverage check relies on.
    rare_values = [v for v in range(2 * CODES) if is_rare(v, plan.table.mask)]
    assert [encoding.encode(v) for v in rare_values] == list(range(CODES))


def test_scan_table_lists_common_heaps_in_order():
    plan = make_cuda_plan(rare_table(".16"))
    _, codes = exact_codes(".16")
    table = plan.scan_table(codes, len(codes))
    heaps = table[:, 0]
    assert np.all(np.diff(heaps) > 0) and heaps[0] >= 1
    assert not set(heaps.tolist()) & set(plan.table.positions)
    assert set(range(1, heaps[-1] + 1)) - set(heaps.tolist()) <= set(plan.table.positions)
    assert np.array_equal(table[:, 1], spread(codes[heaps]))


def test_benchmark_figures_with_the_twin_engine():
    from octalgen.checksum import fnv1a64
    from octalgen.cuda.bench import run_benchmark

    figures = run_benchmark(".644", 4000, engine=driver.TwinEngine(64))
    assert figures["checksum"] == fnv1a64(exact_values(".644", 4000))
    assert figures["first_unproven"] is None
    start = make_cuda_plan(rare_table(".644")).start
    assert figures["rounds"] == figures["advance_per_round"]["count"]
    assert figures["advance_per_round"]["mean"] * figures["rounds"] == pytest.approx(4000 - start)
    assert figures["rounds_per_window"]["count"] == (4000 - start) // 64


def test_bench_command_on_the_twin_engine_reports_the_checksum(cli, monkeypatch):
    from octalgen.checksum import fnv1a64
    from octalgen.cuda import runtime

    monkeypatch.setattr(runtime, "require_gpu", lambda: None)
    monkeypatch.setattr(runtime, "CudaEngine", lambda **_: driver.TwinEngine(64))
    result = cli("bench", ".644", "-n", 4000, "--backend", "cuda")
    assert result.code == 0, result.err
    assert f"fnv1a64 {fnv1a64(exact_values('.644', 4000))}" in result.out
    assert "x the C kernel, 1 thread" in result.out


def test_bench_command_without_a_gpu_is_one_line(cli):
    from octalgen.cuda.runtime import unavailable

    if unavailable() is None:
        pytest.skip("a GPU is here")
    result = cli("bench", ".6", "-n", 1000, "--backend", "cuda")
    assert result.code == 1 and result.err.count("\n") == 1 and unavailable() in result.err
