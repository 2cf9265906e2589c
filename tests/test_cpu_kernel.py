"""The generated kernel and exact verifier against published checksums, the exact solver and the reference."""

import functools
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from octalgen.build import DEFAULT_CFLAGS, find_compiler
from octalgen.checksum import fnv1a64
from octalgen.cpu.exact import exact_values_c
from octalgen.cpu.generate import exact_unit, kernel_unit, naive_unit
from octalgen.cpu.kernel import NaiveKernel, SpeculativeKernel, StorageOverflow
from octalgen.cpu.verify import PLAIN_SCAN_FLAGS, Verifier
from octalgen.errors import InputError
from octalgen.plan import make_plan
from octalgen.rare import RareTable, shipped_table
from octalgen.reference import exact_values

# Agreed by independent programs (shared/README.md): FNV-1a-64 of .6 over heaps [65536, 2097152).
OFFICERS_FNV_65536_2097152 = "73c2a53ce177d95a"


class Officers:
    """The exact prefix of .6 up to the kernel's first heap, and helpers around one plan."""

    def __init__(self, storage=None):
        self.plan = make_plan(shipped_table(".6"), storage=storage)
        self.prefix = exact_values_c(".6", self.plan.start, mask=0x1EE)
        self.kernel = SpeculativeKernel(self.plan)
        self.verifier = Verifier(self.plan)

    def codes(self, stop, threads=1):
        """Stored codes of heaps start - window ... stop - 1 (window from the prefix, rest by the kernel)."""
        plan = self.plan
        buffer = np.empty(stop - plan.start + plan.window, dtype=self.kernel.dtype)
        buffer[: plan.window] = plan.encoding.encode_array(self.prefix[plan.start - plan.window :])
        self.kernel.fill(buffer, plan.start, threads, patient=True)  # all heaps by all threads
        return buffer

    @property
    def base(self):
        return self.plan.start - self.plan.window


@pytest.fixture(scope="module")
def officers():
    return Officers()


@pytest.fixture(scope="module")
def officers_codes(officers):
    return officers.codes(1 << 21)


def test_kernel_matches_the_published_checksum(officers, officers_codes):
    values = np.concatenate(
        [officers.prefix, officers.plan.encoding.decode_array(officers_codes[officers.plan.window :])]
    )
    assert fnv1a64(values[65536 : 1 << 21]) == OFFICERS_FNV_65536_2097152


def test_threaded_kernel_matches_the_published_checksum(officers):
    # Independent of the one-thread kernel: 2 threads in blocks against the agreed digest.
    codes = officers.codes(1 << 21, threads=2)
    values = np.concatenate([officers.prefix, officers.plan.encoding.decode_array(codes[officers.plan.window :])])
    assert fnv1a64(values[65536 : 1 << 21]) == OFFICERS_FNV_65536_2097152


@pytest.mark.parametrize("threads", [2, 3, 8])
def test_threads_give_the_same_values(officers, officers_codes, threads):
    # Fewer heaps beyond two threads: with more threads than cores every baton waits for a context switch.
    stop = officers.plan.start + (50_000 if threads == 2 else 20_000)
    assert np.array_equal(officers.codes(stop, threads), officers_codes[: stop - officers.base])


# -- blocks of heaps between threads ----------------------------------------------------------


@functools.cache
def _small(storage=None):
    """.16 (53 terms, quick to build): its plan and the exact values of its first 60 000 heaps."""
    plan = make_plan(shipped_table(".16"), storage=storage)
    return plan, exact_values_c(".16", 60_000, mask=plan.table.mask)


def _fill_at(kernel, values, first, count, threads, shift, patient=True, block=None):
    """Fills heaps first ... first+count-1 in a buffer that starts `shift` bytes past a 64-byte
    boundary (so the output starts anywhere in a cache line), from the exact window before them."""
    plan, size = kernel.plan, kernel.dtype.itemsize
    room = np.zeros((plan.window + count) * size + 128, np.uint8)
    lead = (-room.ctypes.data + shift) % 64
    buffer = room[lead : lead + (plan.window + count) * size].view(kernel.dtype)
    assert buffer.ctypes.data % 64 == shift
    buffer[: plan.window] = plan.encoding.encode_array(values[first - plan.window : first])
    kernel.fill(buffer, first, threads, patient=patient, block=block)
    return plan.encoding.decode_array(buffer[plan.window :])


@pytest.mark.parametrize("block", [64, 128, 192])
def test_blocks_of_every_length_give_the_exact_values(block):
    # Every thread count, odd counts (a last block cut short, fewer heaps than threads x block:
    # the last three end within the first blocks, one a thread, which ramp up in length) and
    # outputs starting anywhere in a cache line give the exact values.
    plan, exact = _small()
    kernel = SpeculativeKernel(plan, block_heaps=block)
    for threads, count, shift in [
        (2, 20_001, 0),
        (2, 9_999, 1),
        (3, 12_345, 37),
        (4, 4_097, 63),
        (5, 1_000, 13),
        (2, 1, 5),
        (3, 2, 0),
        (8, 3 * block + 1, 61),
    ]:
        first = plan.start + 7 * threads + shift  # a start of any parity and line position
        assert np.array_equal(_fill_at(kernel, exact, first, count, threads, shift), exact[first : first + count]), (
            threads,
            count,
            shift,
        )


def test_a_call_may_hand_its_threads_shorter_blocks_than_the_kernel_was_built_for():
    # One kernel of 256-heap blocks, called with each length it takes (the split's choice per thread
    # count), directly and through tuned_blocks: the exact values, and no length it does not take.
    plan, exact = _small()
    kernel = SpeculativeKernel(plan, block_heaps=256)
    assert kernel.blocks() == [256, 128, 64]
    for block in kernel.blocks():
        for threads, count, shift in [(2, 9_999, 1), (4, 4_097, 63), (8, 8 * block + 65, 17)]:
            first = plan.start + 5 * threads + shift
            assert np.array_equal(
                _fill_at(kernel, exact, first, count, threads, shift, block=block), exact[first : first + count]
            ), (block, threads, count)
    kernel.tuned_blocks = {3: 64}
    first = plan.start + 11
    assert np.array_equal(_fill_at(kernel, exact, first, 20_001, 3, 5), exact[first : first + 20_001])
    for wrong in (0, 32, 96, 512):
        with pytest.raises(InputError, match="this kernel takes 256, 128, 64"):
            kernel.fill(np.zeros(plan.window + 10, kernel.dtype), plan.start, 2, block=wrong)


def test_u16_blocks_give_the_exact_values():
    plan, exact = _small("u16")
    for block in (32, 96):
        kernel = SpeculativeKernel(plan, block_heaps=block)
        for threads, count, shift in [(2, 15_001, 2), (3, 7_777, 62)]:
            first = plan.start + 3
            assert np.array_equal(
                _fill_at(kernel, exact, first, count, threads, shift), exact[first : first + count]
            ), (block, threads, count, shift)


def test_blocks_under_positional_rarity_give_the_exact_values():
    # .104: what is common depends on the heap's parity, so each heap of a block takes its own row.
    plan = make_plan(shipped_table(".104"))
    exact = exact_values_c(".104", 40_000, mask=plan.table.mask)
    kernel = SpeculativeKernel(plan, block_heaps=64)
    for threads, shift in [(2, 3), (3, 0)]:
        first = plan.start + shift
        buffer = np.empty(plan.window + 40_000 - first, kernel.dtype)
        buffer[: plan.window] = plan.encoding.encode_array(exact[first - plan.window : first])
        kernel.fill(buffer, first, threads, patient=True)
        assert np.array_equal(plan.encoding.decode_array(buffer[plan.window :], first), exact[first:])


def test_a_split_fill_with_blocks_gives_the_same_values():
    # Two calls, the second resuming from the window the first left, at a heap that is no block
    # boundary of either: the same as one call.
    plan, exact = _small()
    kernel = SpeculativeKernel(plan, block_heaps=64)
    first, middle, stop = plan.start + 1, plan.start + 10_007, 60_000
    left = _fill_at(kernel, exact, first, middle - first, 3, 9)
    values = np.concatenate([exact[:first], left])
    right = _fill_at(kernel, values, middle, stop - middle, 2, 40)
    assert np.array_equal(np.concatenate([left, right]), exact[first:stop])


def test_impatient_threads_give_the_same_values_when_they_fall_back():
    # More threads than cores, not patient: the threads may stop and one thread finish; either way
    # the values are exact, and a fall-back names a heap of the fill.
    plan, exact = _small()
    kernel = SpeculativeKernel(plan, block_heaps=64)
    first, count = plan.start, 60_000 - plan.start
    assert np.array_equal(_fill_at(kernel, exact, first, count, 8, 0, patient=False), exact[first:])
    assert kernel.fell_back_at is None or first <= kernel.fell_back_at < first + count


def test_block_lengths_must_be_whole_cache_lines():
    plan, _ = _small()
    for block in (0, 32, 100):
        with pytest.raises(InputError, match="multiple of 64 heaps"):
            SpeculativeKernel(plan, block_heaps=block)


def test_kernel_resumes_from_its_window(officers, officers_codes):
    plan, w = officers.plan, officers.plan.window
    middle = plan.start + 123_457  # resume in the middle: the state is the heap and the window before it
    window = officers_codes[middle - w - officers.base : middle - officers.base]
    resumed = officers.kernel.run(window, middle, 20_000, threads=2, patient=True)
    assert np.array_equal(resumed, officers_codes[middle - officers.base : middle + 20_000 - officers.base])


def test_u16_storage_gives_the_same_values(officers, officers_codes):
    # The u16 kernel starts past its window alone, at 20,629 (the u8 one at 41,256): the rare values it
    # reads there mark rare codes, which its mex never looks at.
    wide = Officers(storage="u16")
    assert wide.plan.encoding.kind == "u16" and wide.plan.start == wide.plan.window + 1 < officers.plan.start
    stop = officers.plan.start + 100_000
    codes = wide.codes(stop, threads=1)
    truth = np.concatenate(
        [
            officers.prefix[wide.base : officers.base],
            officers.plan.encoding.decode_array(officers_codes[: stop - officers.base]),
        ]
    )
    assert np.array_equal(codes.astype(np.int64), truth)
    assert np.array_equal(wide.codes(wide.plan.start + 20_000, threads=2), codes[: 20_000 + wide.plan.window])
    assert wide.verifier.verify(codes, wide.base, wide.prefix, wide.plan.start, stop).proven


def test_naive_baseline_gives_the_same_values(officers, officers_codes):
    stop = officers.plan.start + 20_000
    buffer = officers_codes[: stop - officers.base].copy()
    NaiveKernel(officers.plan).fill(buffer, officers.plan.start)
    assert np.array_equal(buffer, officers_codes[: stop - officers.base])


def test_a_value_beyond_u8_storage_names_its_heap(officers):
    # A random history marks every one of the 256 codes within a few heaps.
    rng = np.random.default_rng(1)
    plan = officers.plan
    buffer = rng.integers(0, 256, plan.window + 1000, dtype=np.uint8)
    for threads in (1, 2, 3):
        trial = buffer.copy()
        with pytest.raises(StorageOverflow) as raised:
            officers.kernel.fill(trial, plan.start, threads, patient=True)
        heap = raised.value.heap
        assert plan.start <= heap < plan.start + 1000 and f"G({heap})" in str(raised.value)
        done = heap - plan.start  # the heaps before it were computed, and agree with one thread
        assert np.array_equal(trial[: plan.window + done], _one_by_one(officers.kernel, buffer, plan, done))


def _one_by_one(kernel, buffer, plan, count):
    trial = buffer[: plan.window + count].copy()
    kernel.fill(trial, plan.start, 1)
    return trial


def test_kernel_refuses_heaps_before_its_start(officers):
    with pytest.raises(InputError, match="starts at heap 41256"):
        officers.kernel.fill(np.zeros(officers.plan.window + 10, np.uint8), 41255)


# -- the verifier ---------------------------------------------------------------------------


def test_verifier_proves_the_kernel(officers, officers_codes):
    result = officers.verifier.verify(officers_codes, officers.base, officers.prefix, officers.plan.start, 300_000)
    assert result.proven and result.options_scanned > 0


@pytest.mark.parametrize("heap", [41256, 41257, 500_000, 2_097_151])
def test_verifier_finds_a_planted_error(officers, officers_codes, heap):
    bad = officers_codes.copy()
    truth = int(bad[heap - officers.base])
    bad[heap - officers.base] ^= 0x21
    result = officers.verifier.verify(
        bad, officers.base, officers.prefix, max(officers.plan.start, heap - 5000), min(heap + 5000, 1 << 21)
    )
    assert (result.status, result.heap) == ("failed", heap)
    assert result.true_value == officers.plan.encoding.decode(truth)


@pytest.mark.parametrize("scan", ["native", "plain"])
def test_verifier_with_bounded_memory_never_proves_what_it_cannot(officers, officers_codes, scan):
    plan, base = officers.plan, officers.base
    verifier = Verifier(plan, flags=SCANS[scan])
    a, b = 1_900_000, 1_910_000
    recent = officers_codes[a - plan.window - base : b - base]
    short_prefix = officers.prefix[: plan.table.last_position + 1]  # as short as allowed
    undecided = []
    n = a
    while n < b:  # every heap is proven or undecided: all values here are right
        result = verifier.verify(recent, a - plan.window, short_prefix, n, b)
        assert result.status in ("proven", "undecided")
        if result.proven:
            break
        undecided.append(result.heap)
        n = result.heap + 1
    assert undecided, "no heap needed the history that was left out"
    values = plan.encoding.decode_array(officers_codes)
    for heap in undecided:
        # A rare value below G(heap) is missing from the options whose heaps were both given ...
        given = _given_options(plan.game, heap, short_prefix, values[a - plan.window - base :], a - plan.window)
        below = {v for v in range(values[heap - base]) if plan.table.is_rare(v)}
        assert below - given
        # ... and with all of the history the heap is proven.
        assert verifier.verify(officers_codes, base, officers.prefix, heap, heap + 1).proven


def _given_options(game, n, prefix, recent, recent_base):
    """The two-heap options of heap n whose heaps are in the prefix or in recent (heaps recent_base ...)."""
    found = set()
    for k, _none, _one, two in game.moves():
        if not two or n < k + 2:
            continue
        rest = n - k
        x = np.arange(1, rest // 2 + 1)
        pair = []
        for heaps in (x, rest - x):
            in_prefix, in_recent = heaps < len(prefix), (heaps >= recent_base) & (heaps < recent_base + len(recent))
            value = np.where(
                in_prefix,
                prefix[np.minimum(heaps, len(prefix) - 1)],
                recent[np.clip(heaps - recent_base, 0, len(recent) - 1)],
            )
            pair.append((value, in_prefix | in_recent))
        (gx, x_given), (gy, y_given) = pair
        found.update((gx ^ gy)[x_given & y_given].tolist())
    return found


def test_verifier_finds_a_missing_rare_value():
    # .16 has rare values at 3604, 13932, 13935: a table that stops at 3604 lets the kernel start
    # at 7211, and the verifier must stop at 13932 with the true (rare) value.
    table = shipped_table(".16")
    cut = RareTable(table.game, table.mask, tuple(e for e in table.entries if e[0] <= 3604), 3605)
    plan = make_plan(cut)
    exact = exact_values_c(".16", 20_000, mask=table.mask)
    codes = np.empty(20_000 - plan.start + plan.window, np.uint8)
    codes[: plan.window] = plan.encoding.encode_array(exact[plan.start - plan.window : plan.start])
    SpeculativeKernel(plan).fill(codes, plan.start)
    result = Verifier(plan).verify(codes, plan.start - plan.window, exact[: plan.start], plan.start, 20_000)
    assert (result.status, result.heap, result.true_value) == ("failed", 13932, exact[13932])
    assert table.is_rare(result.true_value)


def test_verifier_refuses_a_prefix_that_contradicts_the_table(officers, officers_codes):
    wrong = officers.prefix.copy()
    wrong[20627] = 278  # a common value where the table has the rare 277
    with pytest.raises(InputError, match="contradicts the rare table"):
        officers.verifier.verify(officers_codes, officers.base, wrong, officers.plan.start, 50_000)


def test_verifier_needs_the_window_before_the_interval(officers, officers_codes):
    with pytest.raises(InputError, match="must cover heaps"):
        officers.verifier.verify(
            officers_codes[100:], officers.base + 100, officers.prefix, officers.plan.start, 50_000
        )


def test_u16_verifier_rejects_a_rare_value_in_its_history():
    wide = Officers(storage="u16")
    stop = wide.plan.start + 30_000
    codes = wide.codes(stop)
    heap = wide.plan.start + 1000
    codes[heap - wide.base] = 0  # 0 is rare: a rare value the table lacks, or an error
    with pytest.raises(InputError, match=rf"G\({heap}\) = 0 is rare"):
        wide.verifier.verify(codes, wide.base, wide.prefix, heap + 100, stop)
    result = wide.verifier.verify(codes, wide.base, wide.prefix, wide.plan.start, stop)
    assert (result.status, result.heap) == ("failed", heap)


# -- the verifier's proof scans against the reference ------------------------------------------

#: The proof scans the verifier can be built with: this CPU's vector path, the plain C path, and
#: the vector logic at the widths of other CPUs, run here.  u16 values: GCC vectors of 16 bytes
#: (SSE, NEON), 32 or 64 (AVX-512), at any width on any CPU; with AVX-512 VBMI the table look-up, and
#: with AVX-512BW the marks of 64 heaps at once.  u8 codes: AVX2 for widths below 64, AVX-512BW for
#: 64 where the CPU has it (else AVX2), the plain path without AVX2, every vector path taking the
#: scan's round in lanes; with AVX-512 VBMI byte permutes look options up and sort 128 heaps' marks, with VBMI2 a
#: group's hits are listed by a compress, and "no compress" takes them bit by bit.  A CPU without
#: an extension runs the path that does not need it (the build's -march decides).
SCANS = {
    "native": DEFAULT_CFLAGS,
    "plain": PLAIN_SCAN_FLAGS,
    "16-byte vectors": (*DEFAULT_CFLAGS, "-DSCAN_VECTOR_BYTES=16"),
    "32-byte vectors": (*DEFAULT_CFLAGS, "-DSCAN_VECTOR_BYTES=32"),
    "64-byte vectors": (*DEFAULT_CFLAGS, "-DSCAN_VECTOR_BYTES=64", "-Wno-psabi"),
    "64-byte vectors, no compress": (*DEFAULT_CFLAGS, "-DSCAN_VECTOR_BYTES=64", "-mno-avx512vbmi2", "-Wno-psabi"),
    "64-byte vectors, no byte permutes": (
        *DEFAULT_CFLAGS,
        "-DSCAN_VECTOR_BYTES=64",
        "-mno-avx512vbmi",
        "-mno-avx512vbmi2",
        "-Wno-psabi",
    ),
}

#: Games (code, storage, heaps) whose reference values take seconds: u8 and u16 storage.
REFERENCE_GAMES = [(".6", None, 56_000), (".16", None, 50_000), (".644", None, 20_000), (".644", "u16", 20_000)]


@functools.cache
def _reference(code, count):
    return exact_values(code, count, mask=shipped_table(code).mask)


class Reference:
    """One game's plan, its reference values G(0) ... G(count-1) and their stored codes."""

    def __init__(self, code, storage, count):
        self.plan = make_plan(shipped_table(code), storage=storage)
        self.values = _reference(code, count)
        self.codes = self.plan.encoding.encode_array(self.values).astype(
            np.uint8 if self.plan.encoding.kind == "u8" else np.uint16
        )

    def verify(self, scan, codes=None, a=None, b=None, prefix_length=None):
        """Verify [a, b) (default: every kernel heap) from all codes after the shortest allowed base."""
        plan = self.plan
        base = plan.start - plan.window
        codes = self.codes if codes is None else codes
        prefix = self.values[: prefix_length or plan.start]
        return Verifier(plan, flags=SCANS[scan]).verify(
            codes[base:], base, prefix, a or plan.start, b or len(self.values)
        )


@pytest.fixture(scope="module", params=REFERENCE_GAMES, ids=lambda g: f"{g[0]} {g[1] or 'u8'}")
def reference(request):
    return Reference(*request.param)


def test_every_proof_scan_proves_the_reference(reference):
    shortest = reference.plan.table.last_position + 1  # the prefix as short as allowed: x runs into values
    results = {
        (scan, length): reference.verify(scan, prefix_length=length) for scan in SCANS for length in (None, shortest)
    }
    assert all(result.proven for result in results.values()), results
    # Every path scans the same pairs: the vector blocks take their matches in order.
    for length in (None, shortest):
        assert len({results[scan, length].options_scanned for scan in SCANS}) == 1


@pytest.mark.parametrize("scan", SCANS)
def test_every_proof_scan_catches_planted_faults(reference, scan):
    plan, values = reference.plan, reference.values
    mask = plan.table.mask
    low = mask & -mask
    flip = 0x21 if plan.encoding.kind == "u8" else low | ((mask ^ low) & -(mask ^ low))  # stays common
    for heap in (plan.start, plan.start + 1, (plan.start + len(values)) // 2, len(values) - 1):
        bad = reference.codes.copy()
        bad[heap] ^= flip
        result = reference.verify(scan, bad, max(plan.start, heap - 2000), min(len(values), heap + 2000))
        assert (result.status, result.heap, result.true_value) == ("failed", heap, values[heap])


@functools.cache
def _short_scans():
    """.167 from 2^13 on: a heap's proof scans some 80 pairs a take, so the verifier takes a round cut
    to 96 pairs (verify.h's fit_round), where the whole round of 1,280 would cost more than it finds."""
    values = exact_values(".167", 30_000)
    plan = make_plan(RareTable.from_values(".167", values))
    return plan, values, plan.encoding.encode_array(values).astype(np.uint8)


#: The paths that take the round differently: in lanes of the machine's widest vectors, in AVX2 lanes,
#: and pair by pair in plain C (the other vector widths differ only in the scan after it).
FITTED_SCANS = ("native", "32-byte vectors", "plain")


def _verify_short_scans(scan, codes, a, b):
    plan, values, _ = _short_scans()
    base = plan.start - plan.window
    return Verifier(plan, flags=SCANS[scan]).verify(codes[base:b], base, values[: plan.start], a, b)


def test_the_proof_scans_take_the_fitted_round_alike():
    _, values, codes = _short_scans()
    first = 1 << 13
    results = {scan: _verify_short_scans(scan, codes, first, len(values)) for scan in FITTED_SCANS}
    assert all(result.proven for result in results.values()), results
    assert len({result.options_scanned for result in results.values()}) == 1
    # the round taken: each heap past the probe counts its 96 pairs for each of the two takes, at least
    assert results["plain"].options_scanned >= 2 * 96 * (len(values) - first - 64)


@pytest.mark.parametrize("scan", FITTED_SCANS)
def test_the_proof_scans_with_the_fitted_round_catch_planted_faults(scan):
    _, values, codes = _short_scans()
    for heap in (9_000, 20_001, len(values) - 1):
        bad = codes.copy()
        bad[heap] ^= 0x21
        result = _verify_short_scans(scan, bad, heap - 1000, min(len(values), heap + 1000))
        assert (result.status, result.heap, result.true_value) == ("failed", heap, values[heap])


@pytest.mark.parametrize("scan", SCANS)
def test_a_wrong_code_is_caught_in_every_lane_of_the_marks(scan):
    """The vector check of the kernel's marks holds 8 or 16 heaps a batch, from the first heap asked
    for: a code one too high (a lower code unmarked), one too low (its own code marked) or 33 off
    (another range of 32 codes) is caught in every lane and in the heaps past the last whole batch,
    with the true value, as the plain path catches it."""
    reference = Reference(".6", None, 56_000)
    plan, values = reference.plan, reference.values
    a = plan.start + 1000
    for heap in range(a, a + 40):
        for flip in (1, 0x21):
            bad = reference.codes.copy()
            bad[heap] ^= flip
            result = reference.verify(scan, bad, a, a + 37)
            expected = ("failed", heap, values[heap]) if heap < a + 37 else ("proven", None, None)
            assert (result.status, result.heap, result.true_value) == expected, (heap, flip)


# -- the generated C itself -----------------------------------------------------------------

FLAG_SETS = [
    ("-O2", "-march=native", "-std=gnu11"),
    ("-O2", "-march=x86-64-v3", "-std=gnu11"),  # AVX2 paths
    ("-O2", "-march=x86-64", "-std=gnu11"),  # portable C paths
    ("-O2", "-march=native", "-std=gnu11", "-DOCTALGEN_PORTABLE"),
    ("-O2", "-march=native", "-std=gnu11", "-DOCTALGEN_PLAIN_SCAN"),
]
# Strict C11 (POSIX names by the units' own feature-test macro), and the AVX-512 paths without and
# with the verifier's compress (VBMI2), which this CPU may lack
COMPILE_ONLY_FLAG_SETS = [
    ("-O2", "-march=native", "-std=c11"),
    ("-O2", "-march=x86-64-v4", "-std=c11"),
    ("-O2", "-march=x86-64-v4", "-std=gnu11", "-mavx512vbmi2"),
]


def _table_106():
    return RareTable.from_values(".106", exact_values_c(".106", 1 << 13))


def _units():
    officers = make_plan(shipped_table(".6"))
    return {
        "kernel .6 u8": kernel_unit(officers),
        "kernel .6 u16": kernel_unit(make_plan(shipped_table(".6"), storage="u16")),
        "kernel .16": kernel_unit(make_plan(shipped_table(".16"))),
        "kernel .16, blocks of 64": kernel_unit(make_plan(shipped_table(".16")), block_heaps=64),
        # benchmarks/bench_kernel_threads.py --clock builds it
        "kernel .16, clocked": _benchmark_module("kernel_clock").clocked_unit(make_plan(shipped_table(".16"))),
        # positional rarity: rows per heap class; .106 has a one-heap option rare at every heap
        "kernel .104": kernel_unit(make_plan(shipped_table(".104"))),
        "kernel .106 u16": kernel_unit(make_plan(_table_106(), storage="u16")),
        "naive .106 u16": naive_unit(make_plan(_table_106(), storage="u16")),
        "exact .6": exact_unit(".6"),
        "exact 4.07": exact_unit("4.07"),
        "naive .6": naive_unit(officers),
    }


@pytest.mark.skipif(shutil.which("gcc") is None and shutil.which("cc") is None, reason="no C compiler")
@pytest.mark.parametrize("flags", FLAG_SETS + COMPILE_ONLY_FLAG_SETS, ids=lambda f: " ".join(f[1:]))
def test_generated_c_compiles_without_warnings(tmp_path, flags):
    if "x86-64" in " ".join(flags) and not _is_x86():
        pytest.skip("x86-64 flags")
    compiler = find_compiler()
    for name, unit in _units().items():
        source = tmp_path / f"{unit.name}.c"
        source.write_text(unit.standalone)  # as `octalgen emit c` writes it
        header = tmp_path / f"{unit.name}.h"
        header.write_text(unit.header)
        for path in (source, header):
            done = subprocess.run(
                [
                    *compiler,
                    "-pthread",
                    "-Wall",
                    "-Wextra",
                    "-Werror",
                    *flags,
                    "-c",
                    "-x",
                    "c",
                    str(path),
                    "-o",
                    str(tmp_path / "out.o"),
                ],
                check=False,
                capture_output=True,
                text=True,
            )
            assert done.returncode == 0, f"{name} ({path.name}):\n{done.stderr}"


def _is_x86():
    import platform

    return platform.machine() in ("x86_64", "AMD64")


@pytest.mark.skipif(not _is_x86(), reason="x86-64 flags")
@pytest.mark.parametrize("flags", FLAG_SETS[1:], ids=lambda f: " ".join(f[1:]))
def test_portable_builds_compute_the_same(flags):
    # The assembly, AVX-512, AVX2 and plain C paths of kernel and verifier agree (.16: quick to build).
    plan = make_plan(shipped_table(".16"))
    exact = exact_values_c(".16", 60_000, mask=plan.table.mask)
    results = []
    for build_flags in (("-O3", "-march=native", "-std=gnu11", "-pthread"), (*flags, "-pthread")):
        codes = np.empty(60_000 - plan.start + plan.window, np.uint8)
        codes[: plan.window] = plan.encoding.encode_array(exact[plan.start - plan.window : plan.start])
        SpeculativeKernel(plan, flags=build_flags).fill(codes, plan.start)
        verdict = Verifier(plan, flags=build_flags).verify(
            codes, plan.start - plan.window, exact[: plan.start], plan.start, 60_000
        )
        results.append((codes.tobytes(), verdict.status, verdict.options_scanned))
    assert results[0] == results[1]
    assert np.array_equal(
        plan.encoding.decode_array(np.frombuffer(results[0][0], np.uint8)[plan.window :]), exact[plan.start :]
    )


def _benchmark_module(name: str):
    """``benchmarks/<name>.py``, imported from the checkout."""
    import importlib.util

    path = Path(__file__).resolve().parent.parent / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_clocked_benchmark_build_is_the_kernel_with_a_clock():
    # benchmarks/kernel_clock.py adds the clock to the production unit and nothing else, so the
    # benchmark measures the kernel that computes values; the production unit carries none of it.
    plan = make_plan(shipped_table(".104"))
    production = kernel_unit(plan, block_heaps=192)
    clocked = _benchmark_module("kernel_clock").clocked_unit(plan, block_heaps=192)
    assert "baton_clock" not in production.standalone + production.declarations
    assert "void octalgen_baton_clock(uint64_t *counts);" in clocked.declarations
    assert clocked.declarations.startswith(production.declarations)
    clock = (Path(__file__).resolve().parent.parent / "benchmarks" / "c" / "baton_clock.h").read_text()
    assert clock in clocked.source and clocked.source.replace(clock + "\n", "", 1) == production.source
