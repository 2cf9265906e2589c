"""The CUDA algorithm's numpy twin against the reference: streaming fixed point, cached marks, verifier.

These run without a GPU; the kernels in templates/cuda/ implement the same rounds and
decisions (tests/test_cuda_gpu.py compares them on a GPU).  The plug-in through the engine
is tested in tests/test_cuda_plugin.py.
"""

from functools import cache

import numpy as np
import pytest

from octalgen.api import rare_table
from octalgen.cuda import twin
from octalgen.cuda.cuda_plan import CODES, CudaOptions, make_cuda_plan, spread, unspread
from octalgen.errors import InputError
from octalgen.reference import exact_values
from octalgen.sparse import is_rare

GAMES = [".6", ".16", ".356", ".644"]
#: Heaps computed past the first heap the tests start from.
SPAN = {".6": 1500, ".16": 2500, ".356": 3000, ".644": 3000}


@cache
def exact(game: str):
    """The plan, the exact values and their codes up to 300 heaps past the plan's first heap + SPAN."""
    table = rare_table(game)
    plan = make_cuda_plan(table)
    values = exact_values(game, plan.start + 300 + SPAN[game], mask=table.mask)
    return plan, values, plan.kernel.encoding.encode_array(values)


def stream(speculator, history, count, pieces):
    """Codes of ``count`` positions after ``history``, asked for in ``pieces`` (then the rest),
    each at most the ring's capacity, as the producer does."""
    speculator.reset(history)
    served, out = len(history), []
    for size in [*pieces, count - sum(pieces)]:
        left = size
        while left:
            part = min(left, speculator.capacity)
            speculator.advance(served + part)
            out.append(speculator.read(served, served + part))
            served, left = served + part, left - part
            speculator.release(served)
    return np.concatenate(out)


@pytest.mark.parametrize("game", GAMES)
@pytest.mark.parametrize("cache_final", [True, False], ids=["cached", "recomputed"])
@pytest.mark.parametrize("window", [64, 352])
def test_streaming_fixed_point_is_the_exact_sequence(game, cache_final, window):
    plan, _, codes = exact(game)
    plan = make_cuda_plan(plan.table, options=CudaOptions(cache_final=cache_final))
    w, first = plan.kernel.window, plan.start + 300  # any heap past the first: not the plan's start
    speculator = twin.Speculator(plan, window, cache_final=cache_final)
    got = stream(speculator, codes[first - w : first], SPAN[game], [1, 700, 33])
    assert np.array_equal(got, codes[first : first + SPAN[game]])
    fronts = np.array([front for front, _, _ in speculator.log] + [speculator.front])
    computed = np.array([hi > front for front, hi, _ in speculator.log])
    assert np.all(np.diff(fronts)[computed] >= 1)  # a round with a window makes a position final
    assert np.all(np.diff(fronts)[~computed] == 0)  # the first round after a release may find none
    # The marks counted in the kernel's way are the ones the twin made.
    previous = [0, *fronts[:-2]]
    assert [marks for _, _, marks in speculator.log] == [
        twin.round_marks(speculator.terms, p, f, h, cache_final) for p, (f, h, _) in zip(previous, speculator.log)
    ]


@pytest.mark.parametrize("game", [".6", ".16"])
def test_cached_marks_change_nothing_but_the_work(game):
    plan, _, codes = exact(game)
    w, first = plan.kernel.window, plan.start
    runs = {}
    for cache_final in (True, False):
        speculator = twin.Speculator(plan, 256, cache_final=cache_final)
        got = stream(speculator, codes[first - w : first], SPAN[game], [])
        # Round 0 caches the marks of the whole history once; the rounds after it repeat.
        runs[cache_final] = (got, [(f, h) for f, h, _ in speculator.log], sum(m for *_, m in speculator.log[1:]))
    assert np.array_equal(runs[True][0], runs[False][0]) and runs[True][1] == runs[False][1]
    assert runs[True][2] < runs[False][2]


def test_a_small_ring_wraps_many_times():
    plan, _, codes = exact(".356")
    w = plan.kernel.window
    speculator = twin.Speculator(plan, 64, ring=128)  # W + window = 110 codes in use
    got = stream(speculator, codes[plan.start - w : plan.start], SPAN[".356"], [5, 100])
    assert np.array_equal(got, codes[plan.start : plan.start + SPAN[".356"]])
    with pytest.raises(ValueError, match="power of two holding"):
        twin.Speculator(plan, 64, ring=64)


def test_reading_past_the_front_or_the_limit_is_refused():
    plan, _, codes = exact(".644")
    w = plan.kernel.window
    speculator = twin.Speculator(plan, 64)
    speculator.reset(codes[plan.start - w : plan.start])
    with pytest.raises(ValueError, match="final only below"):
        speculator.read(w, w + 10)
    with pytest.raises(ValueError, match="past the limit"):
        speculator.advance(w + speculator.ring + 1)


@pytest.mark.parametrize("game", GAMES)
def test_a_wrong_history_value_changes_the_fixed_point(game):
    plan, _, codes = exact(game)
    w = plan.kernel.window
    history = codes[plan.start - w : plan.start].copy()
    history[-1] ^= 1  # read by every term of the smallest offset
    got = stream(twin.Speculator(plan, 256), history, SPAN[game], [])
    assert not np.array_equal(got, codes[plan.start : plan.start + SPAN[game]])


def test_a_value_too_large_for_a_byte_stops_the_front():
    plan, _, codes = exact(".6")
    w = plan.kernel.window
    history = codes[plan.start - w : plan.start].copy()
    # Make the terms of the first position mark every one of the 256 codes.
    for code, (offset, constant) in zip(range(CODES), plan.kernel.encoded_terms()):
        history[w - offset] = code ^ constant
    speculator = twin.Speculator(plan, 64)
    speculator.reset(history)
    speculator.advance(w + 64)
    assert speculator.overflow == w and speculator.front == w


# -- the verifier -------------------------------------------------------------


def stretch(game, extra=0):
    """Codes from W + extra heaps before the first verified heap, and the scan table from the prefix."""
    plan, values, codes = exact(game)
    lo, hi = plan.start + 300, plan.start + 300 + SPAN[game]
    base = lo - plan.kernel.window - extra
    return plan, codes[base:hi], base, plan.scan_table(values[:lo]), lo, hi


@pytest.mark.parametrize("game", GAMES)
def test_verifier_proves_the_exact_sequence(game):
    plan, codes, base, scan, lo, hi = stretch(game, extra=lo_extra(game))
    verdict = twin.verify(plan, codes, base, scan, lo, hi)
    assert verdict.first_bad is None
    assert verdict.scan_steps.min() >= plan.options.scan_chunk  # every position needed the pair scan


def lo_extra(game):
    """History past W that holds every partner the scans of these tests need."""
    plan = exact(game)[0]
    return plan.start + 300 - plan.kernel.window


@pytest.mark.parametrize("game", GAMES)
def test_verifier_points_at_the_first_wrong_position(game):
    plan, codes, base, scan, lo, hi = stretch(game, extra=lo_extra(game))
    for fault in (lo, lo + 77, hi - 1):
        wrong = codes.copy()
        wrong[fault - base] ^= 2
        # Later positions follow from the wrong value, so only the fault contradicts its inputs.
        for n in range(fault + 1, hi):
            wrong[n - base] = twin.speculative_codes(plan, wrong, np.array([n - base]))[0]
        assert twin.verify(plan, wrong, base, scan, lo, hi).first_bad == fault
        assert twin.verify(plan, wrong, base, scan, fault + 1, hi).first_bad is None


@pytest.mark.parametrize("game", GAMES)
def test_bounded_scans_and_their_tail_queue_decide_as_one_long_scan(game):
    """A bound of one chunk queues almost every heap for the tail pass: the same decisions and steps."""
    plan, codes, base, scan, lo, hi = stretch(game, extra=lo_extra(game))
    chunk = 16
    bounded, unbounded = (
        make_cuda_plan(plan.table, options=CudaOptions(scan_chunk=chunk, scan_bound=bound))
        for bound in (chunk, 1 << 20)
    )
    fault = lo + (hi - lo) // 2
    wrong = codes.copy()
    wrong[fault - base] ^= 2
    for stretch_codes, first_bad in ((codes, None), (wrong, fault)):
        queued = twin.verify(bounded, stretch_codes, base, scan, lo, hi)
        whole = twin.verify(unbounded, stretch_codes, base, scan, lo, hi)
        assert queued.first_bad == whole.first_bad == first_bad
        assert np.array_equal(queued.scan_steps, whole.scan_steps)
        assert queued.queued > 0 and whole.queued == 0
    with pytest.raises(InputError, match="scan_bound must be a positive multiple"):
        CudaOptions(scan_chunk=16, scan_bound=24)


def test_a_pair_before_the_stretch_is_skipped_not_guessed():
    """.644's longest scan here pairs heaps more than W back: with only W codes of history the
    heap is left unproven (not called wrong), with the whole stretch it is proven."""
    plan, codes, base, scan, lo, hi = stretch(".644", extra=lo_extra(".644"))
    steps = twin.verify(plan, codes, base, scan, lo, hi).scan_steps
    n = lo + int(np.argmax(steps))
    assert scan[steps.max() - 1, 0] > plan.kernel.window  # its scan reaches past W
    near = n - plan.kernel.window
    assert twin.verify(plan, codes[near - base :], near, scan, n, n + 1).first_bad == n
    assert twin.verify(plan, codes, base, scan, n, n + 1).first_bad is None


def test_a_short_scan_table_leaves_positions_unproven():
    plan, codes, base, _, lo, hi = stretch(".644", extra=lo_extra(".644"))
    short = make_cuda_plan(plan.table, options=CudaOptions(scan_chunk=4, scan_steps=8))
    scan = short.scan_table(exact(".644")[1][:lo])
    assert len(scan) == 8
    assert twin.verify(short, codes, base, scan, lo, hi).first_bad is not None


def test_games_needing_16_bit_storage_are_refused():
    table = rare_table(".6")
    assert is_rare(518, table.mask)
    with pytest.raises(InputError, match="use the C backend"):
        make_cuda_plan(table.with_entry(30000, 518))


def test_spread_is_xor_linear_and_rare_codes_below_counts_rare_values():
    a, b = np.meshgrid(np.arange(CODES), np.arange(CODES))
    assert np.array_equal(spread(a ^ b), spread(a) ^ spread(b))
    assert np.array_equal(unspread(spread(a)), a)
    plan = make_cuda_plan(rare_table(".6"))
    encoding = plan.kernel.encoding
    for s in (0, 1, 77, 200, 255):
        value = encoding.decode(s)
        assert plan.rare_codes_below[0, s] == sum(is_rare(v, plan.table.mask) for v in range(value))
    # The u8 codes of rare values are in value order, which the coverage check relies on.
    rare_values = [v for v in range(2 * CODES) if is_rare(v, plan.table.mask)]
    assert [encoding.encode(v) for v in rare_values] == list(range(CODES))


def test_scan_table_lists_common_heaps_of_the_prefix_in_order():
    plan, values, codes = exact(".16")
    table = plan.scan_table(values[:5000])
    heaps = table[:, 0]
    assert np.all(np.diff(heaps) > 0) and heaps[0] >= 1 and heaps[-1] == 4999
    assert not set(heaps.tolist()) & set(plan.table.positions)
    assert set(range(1, 5000)) - set(heaps.tolist()) <= set(plan.table.positions)
    assert np.array_equal(table[:, 1], spread(codes[heaps]))


def test_term_counts_by_offset():
    plan = exact(".6")[0]
    terms = twin.TermIndex.of(plan)
    offsets = np.sort(plan.offsets)
    for d in (0, 1, 5, 4224, 20628, 30000):
        assert terms.upto(d) == np.count_nonzero(offsets <= d)
        assert terms.marks_upto(d) == sum(np.count_nonzero(offsets <= e) for e in range(d))
