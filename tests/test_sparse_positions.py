"""Sparse spaces of positions (issue 11): rarity that depends on the heap's parity, end to end.

Independent truth: Flammenkamp's sparse positions of ``.051`` under the all-ones mask (0, 3, 7,
13, 17, 27, 37) and its period 48 and preperiod 48 (shared/README.md), values by the definition
(``naive_values``) and by the pure-Python reference, which every backend here is compared with.
``.104`` (20 rare positions under 0x17, the last at 284) is the showcase; ``.106`` also has a
one-heap move of odd take (an option rare at every heap: ``KernelPlan.rare_options``) and a rare
position at 320 that a table cut after 101 meets only in the kernel.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from functools import cache
from importlib import resources

import numpy as np
import pytest
from engine_helpers import run_engine

from octalgen.checksum import fnv1a64
from octalgen.cpu.exact import CExactSolver
from octalgen.cpu.generate import CUnit, compile_unit, kernel_unit
from octalgen.cpu.kernel import NaiveKernel, SpeculativeKernel
from octalgen.cpu.verify import Verifier
from octalgen.cuda import plugin, twin
from octalgen.cuda.cuda_plan import CODES, CudaPlan
from octalgen.engine.kept_values import read_kept_values
from octalgen.engine.run_summary import summary_of_checkpoint
from octalgen.errors import InputError, Interrupted, TableError
from octalgen.game import parse_game
from octalgen.hdl.kernel import SpeculativePipeline
from octalgen.hdl.simulate import compare, simulate_amaranth
from octalgen.plan import make_plan
from octalgen.rare import SCHEMA_1, RareTable, shipped_table
from octalgen.reference import ExactSolver, exact_values, naive_values
from octalgen.sparse import Rarity
from octalgen.survey import survey_game

FLAMMENKAMP_051 = (0, 3, 7, 13, 17, 27, 37)


@cache
def reference(code: str, count: int) -> np.ndarray:
    """The pure-Python reference (positional rarity taught to it; checked against the definition below)."""
    values = exact_values(code, count)
    values.setflags(write=False)
    return values


# -- rarity and its detection --------------------------------------------------------------


def test_051_has_flammenkamps_sparse_positions():
    values = np.array(naive_values(".051", 2000))  # the definition
    n = np.arange(len(values))
    # Flammenkamp: n is sparse iff popcount(G(n) & m) mod 2 = (n - t) mod 2, t = 2 (d2 = 5), m all ones.
    sparse = np.flatnonzero(np.bitwise_count(values & 0xFF) % 2 == (n - 2) % 2)
    assert tuple(sparse) == FLAMMENKAMP_051
    found = RareTable.from_values(".051", values)
    assert (found.kind, found.mask, found.parity, found.positions) == ("positions", 0x7, 0, FLAMMENKAMP_051)
    assert RareTable.from_values(".051", values, mask=0xFF, parity=0).positions == FLAMMENKAMP_051
    assert shipped_table(".051").positions == FLAMMENKAMP_051


def test_104_has_twenty_rare_positions_the_last_at_284():
    values = CExactSolver(".104").extend(1 << 22)  # the exact solver finds its own (positional) mask
    table = RareTable.from_values(".104", values)
    assert (table.kind, table.mask, table.parity, table.count, table.last_position) == ("positions", 0x17, 1, 20, 284)
    assert table.entries == shipped_table(".104").entries
    head = reference(".104", 30_000)
    assert [(p, v) for p, v in table.entries if p < 30_000] == [
        (int(p), int(head[p])) for p in np.flatnonzero(table.rare_flags(head, 0))
    ]
    assert RareTable.from_values(".6", reference(".6", 40_000)).kind == "range"  # fewer rare positions


@pytest.mark.parametrize(
    "code, mask, parity",
    [(".104", 0x17, 1), (".051", 0x7, 0), (".106", 0xD, 1), (".205", 0x27, 1), (".6", 0x1EE, None)],
)
def test_reference_with_either_rarity_equals_the_definition(code, mask, parity):
    truth = naive_values(code, 1500)
    assert ExactSolver(parse_game(code), mask=mask, parity=parity).extend(1500).tolist() == truth
    assert exact_values(code, 1500).tolist() == truth  # and the adaptive choice
    assert CExactSolver(code, mask=mask, position_parity=parity is not None).extend(1500).tolist() == truth


def test_rarity_by_heap():
    rarity = Rarity(0x17, 1)
    assert rarity.is_rare(0, 3) and not rarity.is_rare(0, 4) and rarity.is_rare(1, 4)
    assert rarity.rare_flags([0, 0, 1, 1], 3).tolist() == [True, False, False, True]
    with pytest.raises(ValueError):
        rarity.is_rare(0)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32, np.int64])
@pytest.mark.parametrize("rarity", [Rarity(0x1EE), Rarity(0x17, 1), Rarity(0x7, 0), Rarity(0x3FFFF)])
def test_rare_flags_in_every_width_equal_the_definition(rarity, dtype):
    # rare_flags works in the values' own width (a 2^23-value uint16 prefix is checked per process):
    # a mask wider than the values, and a first heap past 255, change nothing.
    values = np.random.default_rng(7).integers(0, 256 if dtype == np.uint8 else 60_000, 999).astype(dtype)
    first = 70_001
    assert rarity.rare_flags(values, first).tolist() == [
        rarity.is_rare(int(v), first + i) for i, v in enumerate(values)
    ]


# -- tables: schema 2, and schema 1 still loads ---------------------------------------------


def test_positional_tables_round_trip_and_range_digests_are_unchanged():
    table = shipped_table(".104")
    text = table.to_yaml()
    assert "kind: positions" in text and "parity: 1" in text
    assert RareTable.from_yaml(text, game=".104") == table
    # The shipped .6 table is schema 1: it loads as a range table with the digest it was written with.
    officers = shipped_table(".6")
    assert officers.kind == "range" and officers.parity is None
    shipped_text = (resources.files("octalgen") / "tables" / "0.6.yaml").read_text()
    assert f"schema: {SCHEMA_1}" in shipped_text and f"digest: {officers.digest}" in shipped_text
    assert RareTable.from_yaml(officers.to_yaml(), game=".6") == officers
    # The same entries (rare under either rule) as a range and as a positions table: other digests.
    game = parse_game(".051")
    as_range, as_positions = (RareTable(game, 0x7, ((0, 0), (2, 3)), 10, parity) for parity in (None, 0))
    assert as_range.digest != as_positions.digest


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda t: t.replace("parity: 1\n", ""), "needs parity 0 or 1"),
        (lambda t: t.replace("parity: 1", "parity: 0"), "does not fit the game"),
        (lambda t: t.replace("- [284, ", "- [285, "), "common"),
        (lambda t: t.replace("schema: octalgen-rare-table/2", f"schema: {SCHEMA_1}"), "unknown key 'kind'"),
    ],
)
def test_bad_positional_tables_are_refused(edit, message):
    with pytest.raises(TableError, match=message):
        RareTable.from_yaml(edit(shipped_table(".104").to_yaml()), game=".104")


def test_info_says_the_kind(cli):
    out = cli("info", ".104").out
    assert "sparse space positions (popcount(G(n) & 0x17) + n + 3 even)" in out
    assert "rare heaps   20, the last at G(284)" in out
    assert "sparse space range (popcount(G(n) & 0x1ee) even)" in cli("info", ".6").out


# -- generated C: kernel, naive baseline, verifier ------------------------------------------


@pytest.mark.parametrize("code, count", [(".104", 100_000), (".106", 20_000), (".051", 3000)])
@pytest.mark.parametrize("storage", ["u8", "u16"])
def test_kernel_and_verifier_equal_the_reference(code, count, storage):
    truth = reference(code, count)
    table = shipped_table(code) or RareTable.from_values(code, truth)
    plan = make_plan(table, storage=storage)
    assert plan.heap_classes == 2 and plan.rare_options == ((3,) if code == ".106" else ())
    codes = plan.encoding.encode_array(truth).astype(SpeculativeKernel(plan).dtype)
    for threads in (1, 3):
        made = SpeculativeKernel(plan).run(
            codes[plan.start - plan.window : plan.start], plan.start, count - plan.start, threads
        )
        assert np.array_equal(plan.encoding.decode_array(made, plan.start), truth[plan.start :])
    naive = codes[plan.start - plan.window :].copy()
    NaiveKernel(plan).fill(naive, plan.start)
    assert np.array_equal(naive, codes[plan.start - plan.window :])
    # Proven from the exact prefix and the codes of common heaps alone (decoded by each heap's parity).
    base = plan.start - plan.window
    result = Verifier(plan).verify(codes[base:], base, truth[: plan.start], plan.start, count)
    assert result.proven, result


def test_a_value_rare_at_its_heap_is_not_proven():
    # u16 codes are raw values: flip bit 0 (in the mask) of one value past the prefix, so that it is
    # rare at its heap (and would be common at the next): the verifier must refute it.
    truth = reference(".104", 20_000)
    plan = make_plan(shipped_table(".104"), storage="u16")
    heap, base = plan.start + 1001, plan.start - plan.window
    planted = truth.copy()
    planted[heap] ^= 1
    assert plan.table.is_rare(planted[heap], heap) and not plan.table.is_rare(planted[heap], heap + 1)
    result = Verifier(plan).verify(planted[base:].astype(np.uint16), base, truth[: plan.start], plan.start, len(truth))
    assert (result.status, result.heap, result.true_value) == ("failed", heap, truth[heap])


def test_the_rare_test_is_the_heaps():
    # .106's table cut after 101: the kernel's value at 320 misses the rare value G(320).  The verifier
    # refutes it; built with the rare set of the other class (a parity mistake) it errs: it refutes a
    # right value before 320.
    truth = reference(".106", 2000)
    full = RareTable.from_values(".106", truth)
    plan = make_plan(full.with_entries([e for e in full.entries if e[0] <= 101], 102))
    kernel = SpeculativeKernel(plan)
    codes = np.concatenate(
        [
            plan.encoding.encode_array(truth[plan.start - plan.window : plan.start]).astype(np.uint8),
            kernel.run(plan.encoding.encode_array(truth[: plan.start]).astype(np.uint8), plan.start, 400 - plan.start),
        ]
    )
    base = plan.start - plan.window
    result = Verifier(plan).verify(codes, base, truth[: plan.start], plan.start, 400)
    assert (result.status, result.heap, result.true_value) == ("failed", 320, truth[320])
    unit = kernel_unit(plan)
    swapped = unit.standalone.replace("NEED_BELOW[CLASS(n)]", "NEED_BELOW[CLASS(n) ^ 1u]")
    assert swapped != unit.standalone
    wrong = Verifier(plan)
    wrong.module = compile_unit(CUnit(unit.name, swapped, unit.declarations, unit.header, "a parity mistake"))
    mistaken = wrong.verify(codes, base, truth[: plan.start], plan.start, 400)
    assert mistaken.status == "failed" and mistaken.heap < 320 and mistaken.true_value != truth[mistaken.heap]


# -- the engine and the commands -------------------------------------------------------------


def test_run_values_and_stats_on_104(cli, tmp_path):
    count = 100_000
    truth = reference(".104", count)
    result = cli("run", ".104", "--until", count, "--checkpoint", tmp_path, "--keep-values", "--workers", 0)
    assert result.code == 0, result.err
    assert f"fnv1a64 {fnv1a64(truth)}" in result.out
    assert "sparse space: positions (popcount(G(n) & 0x17) + n + 3 even); 20 rare positions" in result.out
    assert np.array_equal(read_kept_values(tmp_path), truth)  # u8 files, decoded by the heap's parity
    assert summary_of_checkpoint(tmp_path).statistics.to_json()["sparse_space"] == "positions"
    for backend in ("c", "c-speculative"):
        out = cli("values", ".104", "-n", count, "--backend", backend).out
        assert [int(v) for v in out.split()] == truth.tolist(), backend


def test_survey_says_positions():
    result = survey_game(".104", 20_000)
    assert (result["status"], result["sparse_space"], result["mask"], result["rare_count"], result["last_rare"]) == (
        "open",
        "positions",
        "0x17",
        20,
        284,
    )
    assert result["digest"] == fnv1a64(reference(".104", 20_000))


def test_051_period_through_the_command(cli):
    result = cli("period", ".051")
    assert result.code == 0, result.err
    assert result.out.splitlines()[0] == "period 48 preperiod 48"


def test_stops_and_resumes_give_the_uninterrupted_digest(tmp_path):
    count = 60_000
    for stop in (300, 572, 10_000, 33_333):  # in the exact prefix, at the kernel's first heap, inside chunks
        with pytest.raises(Interrupted):
            run_engine(".104", count, tmp_path, stop_at=stop, workers=0, chunk=1 << 13)
    summary = run_engine(".104", count, tmp_path, workers=0, chunk=1 << 13)
    assert summary.statistics.digest == fnv1a64(reference(".104", count))


def test_a_planted_fault_is_corrected(kernel_fault, caplog):
    with caplog.at_level(logging.WARNING, logger="octalgen"):
        summary = run_engine(".104", 60_000, workers=0, chunk=1 << 15)
    assert kernel_fault and f"verification corrected G({kernel_fault[0]})" in caplog.text
    assert summary.statistics.digest == fnv1a64(reference(".104", 60_000))


def test_a_cut_table_meets_a_new_rare_position_in_the_kernel(tmp_path, caplog):
    full = RareTable.from_values(".106", reference(".106", 20_000))
    cut = full.with_entries([e for e in full.entries if e[0] <= 101], 102)
    assert make_plan(cut).start < 320 and (320, reference(".106", 400)[320]) in full.entries
    with caplog.at_level(logging.WARNING, logger="octalgen"):
        summary = run_engine(".106", 20_000, tmp_path, table=cut, workers=0, chunk=1 << 11)
    assert "NEW RARE VALUE: G(320)" in caplog.text
    assert summary.statistics.digest == fnv1a64(reference(".106", 20_000))
    assert summary.table.entries == full.entries


# -- the GPU's numpy twin, and the FPGA pipeline ------------------------------------------------


def test_cuda_rare_codes_below_count_by_the_heaps_parity():
    plan = CudaPlan(make_plan(shipped_table(".104")))
    rarity, rows = plan.table.rarity, plan.rare_codes_below
    assert rows.shape == (2, CODES)
    for heap in (572, 573):
        for s in (0, 5, 13, 200):
            value = plan.kernel.encoding.decode(s, heap)
            assert rows[plan.heap_classes([heap])[0], s] == sum(rarity.is_rare(v, heap) for v in range(value))


@pytest.mark.parametrize("code, count", [(".104", 30_000), (".106", 12_000)])
def test_twin_plugin_through_the_engine(code, count):
    kernels = plugin.TwinKernels(128)
    summary = run_engine(code, count, kernels=kernels, chunk=1 << 12)
    assert summary.statistics.digest == fnv1a64(reference(code, count))
    assert not kernels.figures()[1].settled_on_cpu


def test_the_verifiers_count_one_heap_options_rare_at_the_heap():
    # .724 (t = 1 or 3) takes 1 bean leaving one heap: that option is rare at every heap (odd take),
    # no term marks it, and without it neither verifier can prove G(4).  No position is rare at all.
    truth = reference(".724", 3000)
    table = RareTable.from_values(".724", truth)
    plan = make_plan(table)
    assert (table.kind, table.count, plan.rare_options) == ("positions", 0, (1,))
    without = replace(plan, rare_options=())
    base = plan.start - plan.window
    codes = plan.encoding.encode_array(truth[base:]).astype(np.uint8)
    assert Verifier(plan).verify(codes, base, truth[: plan.start], plan.start, len(truth)).proven
    assert not Verifier(without).verify(codes, base, truth[: plan.start], plan.start, len(truth)).proven
    scan = CudaPlan(plan).scan_table(truth)
    assert twin.verify(CudaPlan(plan), codes, base, scan, plan.start, len(truth)).first_bad is None
    assert twin.verify(CudaPlan(without), codes, base, scan, plan.start, len(truth)).first_bad == 4


@pytest.mark.parametrize("code, fold, count", [(".051", 1, 400), (".104", 3, 1200), (".106", 2, 2700)])
def test_fpga_pipeline_decodes_by_the_heaps_parity(code, fold, count):
    truth = reference(code, count)
    plan = make_plan(shipped_table(code) or RareTable.from_values(code, truth))
    for first in (plan.start, plan.start + 1):  # the output's first heap of either parity
        kernel = SpeculativePipeline(plan, truth[:first], fold=fold, first=first)
        run = simulate_amaranth(kernel, kernel.latency + (len(truth) - first) * fold)
        assert compare(run, truth, first).ok and len(run.values) == len(truth) - first


def test_fpga_pipeline_refuses_16_bit_codes_of_positions():
    # Which 16-bit codes are common differs by heap: the pipeline's one mex order cannot serve both.
    plan = make_plan(shipped_table(".104"), storage="u16")
    with pytest.raises(InputError, match="one mex order does not fit every heap"):
        SpeculativePipeline(plan, reference(".104", plan.start), fold=2)
