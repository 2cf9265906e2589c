"""A plan that starts early, after a rare value found far out (``.034``: G(71,722) = 116 and
G(374,473) = 102 under 0x1ff), against the exact solver's values: its crossing heaps are the heaps
at which a term reads a rare position; the producer speculates them apart and produces the true
codes; the verifier proves the true codes (from codes before the far rare positions too) and finds
a fault at a crossing heap with its true value; planning takes such a plan only where it pays; and
a single heap is decided exactly from the values read in pieces."""

from __future__ import annotations

import numpy as np
import pytest

from octalgen.build import DEFAULT_CFLAGS
from octalgen.cpu.plugin import CKernels
from octalgen.cpu.verify import PLAIN_SCAN_FLAGS, Verifier
from octalgen.engine.exact_heap import exact_value
from octalgen.engine.exact_steps import exact_solver
from octalgen.engine.planning import plan_for
from octalgen.engine.producer import Producer
from octalgen.engine.tape import Tape
from octalgen.game import parse_game
from octalgen.plan import make_plan
from octalgen.rare import RareTable, shipped_table
from octalgen.sparse import find_rare_space

GAME = parse_game(".034")
UNTIL = 800_000
FAR, FAR_2 = 71_722, 374_473


@pytest.fixture(scope="module")
def values():
    return exact_solver(GAME, None).extend(UNTIL).astype(np.int64)


@pytest.fixture(scope="module")
def plans(values):
    """The early plans after each late rare value (the table from the first 2^16 values)."""
    table = RareTable.from_values(GAME, values[: 1 << 16], mask=0x1FF)
    first = make_plan(table.with_entry(FAR, 116), early=True)
    return first, make_plan(first.table.with_entry(FAR_2, 102), early=True)


def test_an_early_plan_starts_past_its_window_and_lists_every_heap_whose_term_reads_a_rare_position(plans):
    for plan in plans:
        late = plan.table.last_position
        assert plan.early and plan.start == late + 4 == plan.window + 1
        assert make_plan(plan.table).start == plan.window + late + 1  # where no term reads a rare position
        rare = np.zeros(plan.window + late + 2, dtype=bool)
        rare[[p for p in plan.table.positions if p >= 1]] = True
        heaps = np.arange(plan.start, plan.window + late + 2)
        crossed = np.zeros(len(heaps), dtype=bool)
        for offset in {t.offset for t in plan.terms}:
            crossed |= rare[heaps - offset]
        crossing, listed = heaps[crossed].tolist(), plan.crossings.tolist()
        assert listed[: len(crossing)] == crossing  # then those of far pairs only (2 x 71,722 + 2, ...)
        assert all(n >= plan.window + late + 1 for n in listed[len(crossing) :])
    assert not len(make_plan(plans[1].table).crossings) and not len(make_plan(plans[1].table, storage="u16").crossings)


def test_the_speculation_at_each_crossing_heap_is_the_true_code(plans, values):
    for plan in plans[1:]:
        codes = plan.encoding.encode_array(values).astype(np.uint8)
        for n in plan.crossings[plan.crossings < UNTIL].tolist():
            assert plan.crossing_code(codes, n, n) == codes[n], n


def test_the_kernel_takes_the_crossing_heaps_one_by_one_to_the_true_codes(plans, values):
    """Every heap from the start on, crossing or not, from the terms that read a common heap (the way the
    producer takes stretches of crossings): the true codes; as the kernel's own way, a code off."""
    plan = plans[1]
    codes = plan.encoding.encode_array(values).astype(np.uint8)
    kernel, _ = CKernels()(plan)
    first, count = plan.start, 3_000
    assert np.isin(np.arange(first, first + count), plan.crossings).sum() > 100
    buffer = codes[first - plan.window : first + count].copy()
    buffer[plan.window :] = 0
    kernel.fill_crossings(buffer, first)
    assert np.array_equal(buffer[plan.window :], codes[first : first + count])
    kernel.fill(buffer, first)  # every term marks: wrong at some crossing heap
    assert not np.array_equal(buffer[plan.window :], codes[first : first + count])


@pytest.mark.parametrize("on_tape", [False, True], ids=["ring", "tape"])
def test_the_producer_speculates_the_crossings_apart_and_produces_the_true_codes(plans, values, on_tape, tmp_path):
    plan = plans[1]
    codes = plan.encoding.encode_array(values).astype(np.uint8)
    producer = Producer(CKernels(), lambda: None)
    tape = None
    if on_tape:
        tape = Tape(plan.encoding, 1, UNTIL - 1, tmp_path)
        tape.write(1, values[1 : plan.start])
    producer.reset(plan, plan.start, values[plan.start - plan.window : plan.start], tape)
    while producer.produced_to < UNTIL:
        chunk = producer.produce(UNTIL, 1 << 16, 2, None)
        assert np.array_equal(chunk.codes, codes[chunk.first : chunk.stop]), chunk.first


#: The vector paths of the u8 scan and of the round in lanes (AVX-512 with byte permutes where this CPU has
#: them, AVX-512BW without, AVX2), each compared with the plain C path.
VECTOR_SCANS = {
    "native": DEFAULT_CFLAGS,
    "64-byte vectors, no byte permutes": (
        *DEFAULT_CFLAGS,
        "-DSCAN_VECTOR_BYTES=64",
        "-mno-avx512vbmi",
        "-mno-avx512vbmi2",
        "-Wno-psabi",
    ),
    "32-byte vectors": (*DEFAULT_CFLAGS, "-DSCAN_VECTOR_BYTES=32"),
}


@pytest.mark.parametrize("scan", VECTOR_SCANS)
def test_the_verifier_proves_the_true_codes_and_finds_a_fault_at_a_crossing(plans, values, scan):
    plan = plans[1]
    codes = plan.encoding.encode_array(values).astype(np.uint8)
    verifier, prefix = Verifier(plan, flags=VECTOR_SCANS[scan]), values[: 1 << 16]  # both rare values far ones
    plain = Verifier(plan, flags=PLAIN_SCAN_FLAGS)
    for length in (1 << 16, FAR_2 + 1):  # ... or within it
        result = verifier.verify(codes[1:], 1, values[:length], plan.start, UNTIL)
        assert result.proven
        # Within it, the pairs of the scan reach heaps flagged rare, those of the round too while the heap
        # is below twice the rare values' end: every path leaves out the pairs of one rare heap and one
        # common alike (the vector scan by the flags of both heaps, the round in lanes by leaving out the
        # heaps whose round meets a flagged heap; the plain path pair by pair).
        assert result == plain.verify(codes[1:], 1, values[:length], plan.start, UNTIL)
    for n in (plan.crossings[0], plan.crossings[len(plan.crossings) // 2], plan.crossings[-1], plan.start + 1):
        wrong = codes.copy()
        wrong[n] ^= 1
        result = verifier.verify(wrong[1:], 1, prefix, plan.start, UNTIL)
        assert (result.status, result.heap, result.true_value) == ("failed", n, values[n])
    # The first plan, without G(374,473): its verifier finds the rare value it lacks.
    first = plans[0]
    result = Verifier(first).verify(
        plan.encoding.encode_array(values).astype(np.uint8)[1:], 1, prefix, first.start, UNTIL
    )
    assert (result.status, result.heap, result.true_value) == ("failed", FAR_2, 102)


def test_planning_starts_early_only_where_the_crossings_cost_less_than_the_exact_steps(plans, values):
    assert plan_for(plans[1].table, values[: 1 << 16], early=True) == plans[1]
    assert not plan_for(plans[1].table, values[: 1 << 16]).early  # a plug-in without crossings: 2m
    six = shipped_table(".6")  # its rare values come thick: nearly every heap up to 2 x 20,627 would cross
    assert plan_for(six, [], early=True) == make_plan(six)


@pytest.mark.parametrize("code", [".6", ".014", ".172", ".034"])
def test_the_floor_of_an_early_plans_crossings_is_one(plans, code):
    """Planning rules an early start out by a floor of its crossings where it can, without listing them."""
    candidates = [*plans] if code == ".034" else [make_plan(shipped_table(code), early=True)]
    for plan in candidates:
        assert plan.early
        assert 0 < plan.crossings_at_least() <= len(plan.crossings)
    assert make_plan(candidates[0].table).crossings_at_least() == 0  # a plan past 2m crosses nothing


@pytest.mark.parametrize(
    "code, count",
    [
        (".6", 60_000),
        (".034", 400_000),
        (".167", 100_000),
        (".104", 20_000),
        (".77", 3_000),
        (".051", 2_000),
        (".72", 5_000),
        (".16", 30_000),
    ],
)
def test_one_heap_decided_from_the_values_read_in_pieces_is_the_exact_solvers(code, count, monkeypatch):
    from octalgen.engine import exact_heap

    monkeypatch.setattr(exact_heap, "PIECE", 1 << 10)
    game = parse_game(code)
    truth = exact_solver(game, None).extend(count).astype(np.uint16)
    rarity = find_rare_space(truth[: count // 2], game.take_parity)
    table = RareTable.from_values(game, truth, rarity.mask, rarity.parity)
    heaps = set(np.random.default_rng(7).integers(1, count, 60).tolist()) | {1, 2, 3, count - 1}
    heaps |= set(table.positions[-10:])  # rare values: every pair scanned
    read = lambda lo, hi: truth[lo:hi]  # noqa: E731
    assert {h: exact_value(table, h, read) for h in sorted(heaps)} == {h: int(truth[h]) for h in sorted(heaps)}
    assert exact_value(table, count - 1, lambda lo, hi: None) is None
