"""The FPGA kernel: its schedule, and amaranth.sim against the exact reference, value by value.

Verilator and synthesis checks live in tests/test_hdl_tools.py (slow, skipped without the tools).
"""

from __future__ import annotations

import numpy as np
import pytest

from octalgen.api import rare_table
from octalgen.errors import InputError
from octalgen.hdl.kernel import SpeculativePipeline
from octalgen.hdl.layout import DATA_VALID, READ_SAMPLE, layout_pipeline
from octalgen.hdl.simulate import SimulationRun, compare, simulate_amaranth
from octalgen.plan import make_plan
from octalgen.rare import shipped_table
from octalgen.reference import exact_values

SMALL_GAMES = (".356", ".156", ".45", ".644", ".16")


def plan_of(code):
    return make_plan(rare_table(code))


@pytest.fixture(scope="module")
def references():
    """Exact values per game, computed once (long enough for every simulation here)."""
    cache = {}

    def get(code, count):
        if code not in cache or len(cache[code]) < count:
            cache[code] = exact_values(code, count)
        return cache[code][:count]

    return get


def run_kernel(code, fold, values, references, **options):
    """Simulate ``values`` values of ``code`` at ``fold``; returns (kernel, run, comparison)."""
    plan = plan_of(code)
    reference = references(code, plan.start + values)
    kernel = SpeculativePipeline(plan, reference[: plan.start], fold=fold, **options)
    run = simulate_amaranth(kernel, kernel.latency + values * fold)
    return kernel, run, compare(run, reference, plan.start)


# -- the schedule ----------------------------------------------------------------


@pytest.mark.parametrize("code", (*SMALL_GAMES, ".6"))
@pytest.mark.parametrize(
    "fold, lanes_per_stage, mark_chain",
    [
        (1, 8, "vector"),
        (2, 8, "vector"),
        (5, 8, "vector"),
        (25, 8, "vector"),
        (12, 4, "vector"),
        (11, 5, "vector"),
        (11, 3, "vector"),
        (10, 2, "vector"),
        (3, 1, "vector"),
        (2, 8, "rows"),
        (3, 1, "rows"),
        (8, 2, "rows"),
    ],
)
def test_layout_places_every_term_once_and_in_time(code, fold, lanes_per_stage, mark_chain):
    plan = plan_of(code)
    layout = layout_pipeline(plan, fold, lanes_per_stage, mark_chain)
    assert all(len(stage) <= lanes_per_stage for stage in layout.stages)
    placed = [(t.offset, t.code) for lane in layout.lanes for t in lane.terms]
    placed += [(r.offset, r.code) for r in layout.recent]
    assert sorted(placed) == sorted(plan.encoded_terms())
    ages = {}
    for lane in layout.lanes:
        phases = [t.phase for t in lane.terms]
        assert len(set(phases)) == len(phases) and all(0 <= p < fold for p in phases)
        for t in lane.terms:
            assert t.age == (lane.stage + t.offset) * fold + t.phase
            ages[lane.stage, lane.index, t.phase] = t.age
    for lane in layout.lanes:
        source = lane.source
        if source.fresh:
            assert source.write_age == layout.latency
        else:  # fed by the reads of a younger term
            assert source.write_age == ages[source.stage, source.lane, source.phase] + DATA_VALID
        for t in lane.terms:
            # Written before it is read, and not overwritten before that.
            assert source.write_age <= t.age + 1
            assert lane.depth * fold >= t.age + READ_SAMPLE - source.write_age
    # Every recent term's value is in a register by the time it is compared.
    for r in layout.recent:
        clock = layout.select_clock if r in layout.late_terms else layout.shortlist_clock - 1
        assert layout.recent_register(r.offset, clock) >= 0


def test_layout_one_value_per_clock_keeps_memory_close_to_the_window():
    plan = plan_of(".6")
    layout = layout_pipeline(plan, 1)
    assert layout.mark_units >= len(plan.terms) - len(layout.recent)
    assert layout.history_bits < 2 * plan.window * 8


# -- simulation against the reference ----------------------------------------


@pytest.mark.parametrize(
    "code",
    [
        ".356",
        ".156",
        ".45",
        ".16",
        # .644's dense small offsets leave 37 recent terms at fold 1: a big select, slow in amaranth.sim
        # (its fold-3 run below is in CI).
        pytest.param(".644", marks=pytest.mark.slow),
    ],
)
def test_one_value_per_clock_equals_reference(code, references):
    _kernel, run, result = run_kernel(code, 1, 2000, references)
    assert result.checked == 2000 and result.ok, result.mismatch
    assert run.error_cycle is None


# .644 at fold 4: seven stages whose lane memories are fed from the reads of stages 0 to 5.
# .644 at fold 4 is slow (its dense small offsets at fold 3 run in the fast suite).
@pytest.mark.parametrize(
    "code, fold", [(".356", 3), (".156", 7), (".45", 2), (".644", 3), pytest.param(".644", 4, marks=pytest.mark.slow)]
)
def test_folded_kernel_equals_reference(code, fold, references):
    _, _, result = run_kernel(code, fold, 2000, references)
    assert result.checked == 2000 and result.ok, result.mismatch


@pytest.mark.parametrize("code, fold, lanes_per_stage", [(".644", 4, 2), (".156", 3, 1)])
def test_fewer_lanes_per_stage_equal_reference(code, fold, lanes_per_stage, references):
    """Smaller stages (what `synth --lanes-per-stage` builds): more of them, the same values."""
    kernel, _, result = run_kernel(code, fold, 2000, references, lanes_per_stage=lanes_per_stage)
    assert len(kernel.layout.stages) > len(layout_pipeline(kernel.plan, fold).stages)
    assert kernel.module_name.endswith(f"_f{fold}_l{lanes_per_stage}")
    assert result.checked == 2000 and result.ok, result.mismatch


# Folds 2, 3, 5 and 7: groups of 8, 6, 4 and 3 rows (banks by bit fields, and by division); .644 at
# fold 4: lane memories fed from other stages' reads, as with vectors.
# .644 at fold 4 with rows is slow: its lane memories fed from other stages' reads run with the
# vector chain (test_fewer_lanes_per_stage_equal_reference), rows with 2 lanes per stage with .156;
# .16 at fold 7 too (one lane per stage runs with .356 and .45).
@pytest.mark.parametrize(
    "code, fold, lanes_per_stage",
    [
        (".356", 2, 1),
        (".45", 3, 1),
        pytest.param(".644", 4, 2, marks=pytest.mark.slow),
        (".156", 5, 2),
        pytest.param(".16", 7, 1, marks=pytest.mark.slow),
    ],
)
def test_rows_mark_chain_equals_reference(code, fold, lanes_per_stage, references):
    """Stages that hand their marks on as rows, a group per clock (`synth --mark-chain rows`)."""
    kernel, _, result = run_kernel(code, fold, 2000, references, lanes_per_stage=lanes_per_stage, mark_chain="rows")
    layout = kernel.layout
    assert layout.rows_per_clock * layout.drain_clocks >= layout.mark_rows > layout.rows_per_clock
    assert kernel.module_name.endswith("_rows")
    assert result.checked == 2000 and result.ok, result.mismatch


def test_rows_mark_chain_needs_two_clocks_per_value():
    with pytest.raises(InputError, match="fold 2 or more"):
        layout_pipeline(plan_of(".356"), 1, mark_chain="rows")


@pytest.mark.parametrize("code, fold", [(".45", 1), (".356", 3)])
def test_u16_storage_equals_reference(code, fold, references):
    """Raw 16-bit storage: the mark vector holds only the common codes (plan.mex_order)."""
    plan = make_plan(rare_table(code), storage="u16")
    reference = references(code, plan.start + 2000)
    kernel = SpeculativePipeline(plan, reference[: plan.start], fold=fold)
    assert kernel.layout.mark_bits == len(plan.mex_order) < plan.mex_size
    result = compare(simulate_amaranth(kernel, kernel.latency + 2000 * fold), reference, plan.start)
    assert result.checked == 2000 and result.ok, result.mismatch


def test_comparator_decoders_equal_reference(references):
    plan = plan_of(".156")
    reference = references(".156", plan.start + 500)
    kernel = SpeculativePipeline(plan, reference[: plan.start], fold=2, decoder="compare")
    result = compare(simulate_amaranth(kernel, kernel.latency + 500 * 2), reference, plan.start)
    assert result.checked == 500 and result.ok, result.mismatch


# Fold 1 elaborates all 1,584 terms as marks of one clock (about 20 s): slow; the fast suite runs
# .6 at the fold synthesis chooses and at the bitstreams' folds, and fold 1 with smaller games
# (test_one_value_per_clock_equals_reference).
@pytest.mark.parametrize("fold", [pytest.param(1, marks=pytest.mark.slow), "synthesis"])
def test_officers_equals_reference(fold, references):
    """.6 at one value per clock and at the fold chosen for ECP5-85k (what `octalgen synth .6` builds)."""
    if fold == "synthesis":
        from octalgen.hdl.synth import TARGETS, choose_fold

        fold = choose_fold(plan_of(".6"), TARGETS["ecp5-85k"])[0]
    _, _, result = run_kernel(".6", fold, 100, references)
    assert result.checked == 100 and result.ok, result.mismatch


# Folds 12 and 11 with 5 lanes (earlier bitstreams' layouts) are slow: the vector chain with fewer
# lanes per stage runs for .6 at 11-3 and 10-2, and the bitstream's 8-4-rows, in the fast suite.
@pytest.mark.parametrize(
    "fold, lanes_per_stage, mark_chain",
    [
        pytest.param(12, 4, "vector", marks=pytest.mark.slow),
        pytest.param(11, 5, "vector", marks=pytest.mark.slow),
        (11, 3, "vector"),
        (10, 2, "vector"),
        (8, 4, "rows"),
    ],
)
def test_officers_with_fewer_lanes_per_stage_equals_reference(fold, lanes_per_stage, mark_chain, references):
    """.6 with 2 to 5 mark units per stage: layouts built for the ULX3S-85F (hdl/reports; not all routed)."""
    _, _, result = run_kernel(".6", fold, 100, references, lanes_per_stage=lanes_per_stage, mark_chain=mark_chain)
    assert result.checked == 100 and result.ok, result.mismatch


@pytest.mark.parametrize("fold", [1, 4])
def test_latency_property_and_one_value_every_fold_clocks(fold, references):
    """``latency`` is the clock of the first valid value; then one every ``fold`` clocks."""
    from amaranth.sim import Simulator

    plan = plan_of(".45")
    kernel = SpeculativePipeline(plan, references(".45", plan.start), fold=fold)
    clocks = []
    sim = Simulator(kernel)
    sim.add_clock(1e-8)

    async def bench(ctx):
        clock = 0
        async for _, _, valid in ctx.tick().sample(kernel.valid):
            if valid:
                clocks.append(clock)
            clock += 1
            if clock == kernel.latency + 20 * fold:
                return

    sim.add_testbench(bench)
    sim.run()
    assert clocks == [kernel.latency + i * fold for i in range(20)]


def test_extraction_yields_the_lowest_clear_codes():
    """The extraction alone (.644 at fold 1: 50 candidates, 25 steps) on mark vectors whose groups of
    16 have 0, 1, 2, 3 or many clear bits, so that every step meets each case (a group filled by
    one or two candidates, both candidates in one group or in two): the candidates are the lowest
    clear codes, in order, and a missing one is invalid.  (The whole-kernel tests still pass when a
    second group with one clear bit is taken as filled while both candidates come from the first.)"""
    from amaranth.hdl import Elaboratable, Module, Signal
    from amaranth.sim import Simulator

    from octalgen.hdl.mex import extract_candidates, full_groups

    plan = plan_of(".644")
    layout = layout_pipeline(plan, 1)
    assert layout.candidates == 50 and plan.mex_order == tuple(range(256))
    rng = np.random.default_rng(644)
    vectors = []
    for _ in range(40):
        vector = (1 << 256) - 1  # bit c: code c is marked
        for group in range(16):
            clear = rng.choice([0, 0, 1, 1, 2, 3, int(rng.integers(4, 17))])
            for bit in rng.choice(16, clear, replace=False):
                vector &= ~(1 << (group * 16 + int(bit)))
        vectors.append(vector)
    found = []

    class Extraction(Elaboratable):
        def __init__(self):
            self.marks = Signal(256)

        def elaborate(self, platform):
            m = Module()
            full = Signal(16)
            m.d.comb += full.eq(full_groups(self.marks))
            found.extend(extract_candidates(m, layout, self.marks, full, plan.mex_order))
            return m

    extraction = Extraction()
    sim = Simulator(extraction)
    sim.add_clock(1e-8)
    seen = []

    async def bench(ctx):
        settle = layout.candidate_clock(49) - layout.chain_output + 2
        for vector in vectors:
            ctx.set(extraction.marks, vector)
            await ctx.tick().repeat(settle)
            seen.append([ctx.get(code) if ctx.get(valid) else None for code, valid in found])

    sim.add_testbench(bench)
    sim.run()
    for vector, candidates in zip(vectors, seen):
        clear = [c for c in range(256) if not vector >> c & 1][:50]
        assert candidates == clear + [None] * (50 - len(clear))


def test_error_flag_when_every_code_is_marked(references):
    """A history whose marks cover all 256 codes: the value does not fit u8, so error instead of a value."""
    plan = plan_of(".6")
    encoding = plan.encoding
    history = np.array(references(".6", plan.start), dtype=np.int64)
    # G(first - offset) = constant ^ code i for the i-th term (mod 256): all codes are marked at heap first.
    for i, (offset, constant) in enumerate(plan.encoded_terms()):
        history[plan.start - offset] = encoding.decode((i % 256) ^ constant)
    kernel = SpeculativePipeline(plan, history, fold=25)
    run = simulate_amaranth(kernel, kernel.latency + 3 * 25)
    assert run.error_cycle == kernel.latency
    assert len(run.values) == 0
    result = compare(run, references(".6", plan.start + 1), plan.start)
    assert result.mismatch == (plan.start, None, int(references(".6", plan.start + 1)[plan.start]))


def test_compare_reports_the_first_mismatching_heap():
    run = SimulationRun(np.array([5, 6, 9, 9]), 10, None, 1.0, "amaranth")
    reference = np.array([0, 0, 5, 6, 7, 8])
    result = compare(run, reference, 2)
    assert (result.checked, result.mismatch) == (3, (4, 9, 7))


def test_kernel_rejects_a_start_inside_the_rare_region(references):
    plan = plan_of(".356")
    with pytest.raises(InputError, match="at the earliest"):
        SpeculativePipeline(plan, references(".356", plan.start), first=plan.start - 1)


# -- the command line -----------------------------------------------------------


@pytest.fixture
def eager_progress(monkeypatch):
    """``emit hdl``'s progress display, writing a plain line at every update (not every 10 s)."""
    import octalgen.cli.emit_hdl as emit_hdl

    made = emit_hdl.progress_for

    def eager(*args, **kwargs):
        progress = made(*args, **kwargs)
        progress.every = 0
        return progress

    monkeypatch.setattr(emit_hdl, "progress_for", eager)


def test_emit_hdl_sim_checks_every_value_and_shows_how_far_it_is(cli, eager_progress):
    result = cli("emit", "hdl", ".45", "--sim", "--cycles", "3000")
    assert result.code == 0, result.err
    plan = plan_of(".45")
    layout = layout_pipeline(plan, 1)
    values = 3000 - layout.latency
    assert f"{values} values checked" in result.out
    assert f"G({plan.start}) ... G({plan.start + values - 1})" in result.out
    assert "all values match the reference" in result.out
    assert "cycles/s" in result.out
    # In a log (stderr is not a terminal): plain lines, through elaboration to every value simulated.
    lines = result.err.splitlines()
    assert all(line.startswith("octalgen: .45 fold 1 ") for line in lines)
    assert any("elaborating the circuit for amaranth.sim" in line for line in lines)
    counts = [int(line.split(" of ")[0].rsplit(" ", 1)[1].replace(",", "")) for line in lines if "values done" in line]
    assert counts == sorted(counts) and counts[-1] == values and f"of {values:,} values done" in lines[-1]
    assert "simulating 3,000 clocks with amaranth.sim" in lines[-1]


def test_emit_hdl_sim_quiet_shows_no_progress(cli, eager_progress):
    result = cli("-q", "emit", "hdl", ".356", "--sim", "--fold", "2", "--cycles", "400")
    assert result.code == 0 and "all values match the reference" in result.out
    assert result.err == ""


def test_emit_hdl_sim_catches_a_planted_fault(cli, monkeypatch):
    """A kernel planned from a wrong table entry: the run names the first wrong heap and exits 1."""
    import octalgen.cli.emit_hdl as emit_hdl

    wrong = make_plan(shipped_table(".356").with_entry(24, 10))  # G(24) = 9 in truth; 10 is rare too
    # plan_game corrects a table from the exact values (a --table file would not get through): plant the plan.
    monkeypatch.setattr(emit_hdl, "plan_game", lambda *args, **kwargs: (wrong, exact_values(".356", wrong.start)))
    result = cli("emit", "hdl", ".356", "--sim")
    assert result.code == 1
    # The first heap where the wrong table changes the value (the reference solver, which
    # does not use the table's values, disagrees from there on).
    assert "first mismatch at heap 95: circuit G(95) = 15, reference G(95) = 8" in result.out


def test_emit_hdl_writes_verilog_with_provenance(cli, tmp_path):
    path = tmp_path / "kernel.v"  # one file: -o names it
    result = cli("emit", "hdl", ".356", "--fold", "4", "-o", path)
    assert result.code == 0, result.err
    assert result.out.startswith(f"wrote {path}: .356 at fold 4")
    assert [p.name for p in tmp_path.iterdir()] == ["kernel.v"]
    text = path.read_text()
    table = shipped_table(".356")
    header = text.split("\n\n")[0]
    assert f"rare table: {table.digest}" in header
    assert "fold: 4 (one value every 4 clocks)" in header
    latency = layout_pipeline(plan_of(".356"), 4).latency
    assert f"latency: {latency} clocks to the first value" in header
    assert "module octal_0_356_f4(" in text
    assert "/work/" not in text and "src =" not in text  # no source paths: reproducible anywhere


@pytest.mark.parametrize(
    "args, message",
    [
        (("--fold", "0"), "--fold must be at least 1"),
        (("--cycles", "100"), "--cycles and --simulator need --sim"),
        (("--sim", "--cycles", "5"), "ends before the first value"),
    ],
)
def test_emit_hdl_bad_options_are_one_line(cli, args, message):
    result = cli("emit", "hdl", ".356", *args)
    assert result.code == 2
    assert message in result.err and result.err.count("\n") == 1


@pytest.mark.parametrize("target", ["hdl", "cuda"])
def test_a_single_file_emit_refuses_a_directory_as_its_output(cli, tmp_path, target):
    """emit hdl and emit cuda write one file, so -o names a file (emit c's names a directory)."""
    result = cli("emit", target, ".356", "-o", tmp_path)
    assert result.code == 2 and result.err.count("\n") == 1  # a path that names no file: bad input
    assert f"cannot write {tmp_path}: it is a directory" in result.err
    assert list(tmp_path.iterdir()) == []


def test_verilator_missing_is_one_clear_line(cli, monkeypatch):
    import octalgen.hdl.simulate as simulate

    monkeypatch.setattr(simulate.shutil, "which", lambda name: None)
    result = cli("emit", "hdl", ".356", "--sim", "--simulator", "verilator", "--cycles", "100")
    assert result.code == 1
    assert "verilator not found" in result.err and result.err.count("\n") == 1


# -- generated/ -------------------------------------------------------------------


def test_generated_officers_verilog_is_current():
    """generated/0.6/ holds the .6 kernel at the fold chosen for ECP5-85k, as this octalgen emits it."""
    from pathlib import Path

    from octalgen.cli.emit_hdl import verilog_path
    from octalgen.engine.planning import plan_game
    from octalgen.game import parse_game
    from octalgen.hdl.synth import TARGETS, choose_fold
    from octalgen.hdl.verilog import emit_verilog, header_lines, toolchain

    plan, prefix = plan_game(parse_game(".6"))  # as `octalgen emit hdl .6` plans it
    fold = choose_fold(plan, TARGETS["ecp5-85k"])[0]
    kernel = SpeculativePipeline(plan, prefix, fold=fold)
    generated = Path(__file__).resolve().parent.parent / "generated"
    path = verilog_path(generated, kernel)
    regenerate = f"regenerate with: octalgen emit hdl .6 --fold {fold} (and remove the other folds)"
    assert sorted(path.parent.glob("octalgen_hdl_f*.v")) == [path], f"generated/ is stale; {regenerate}"
    committed = path.read_text()
    header = [line for line in header_lines(kernel) if not line.startswith("toolchain:")]
    committed_header = [line[3:] for line in committed.split("\n\n")[0].splitlines()]
    assert [line for line in committed_header if not line.startswith("toolchain:")] == header, (
        f"generated/ is stale; {regenerate}"
    )
    if f"// toolchain: {toolchain()}\n" not in committed:
        pytest.skip("header current; the body was emitted by another Amaranth toolchain than this one")
    assert emit_verilog(kernel) == committed, f"generated/ is stale; {regenerate}"


# -- synthesis planning (the flow itself is in test_hdl_tools.py) ----------------------


def test_chosen_fold_is_the_smallest_that_the_estimate_fits():
    from octalgen.hdl.synth import TARGETS, choose_fold, estimate

    plan = plan_of(".6")
    target = TARGETS["ecp5-85k"]
    fold, guess = choose_fold(plan, target)
    assert guess == estimate(layout_pipeline(plan, fold), target)
    assert guess.fraction(target) <= target.utilisation_limit
    assert estimate(layout_pipeline(plan, fold - 1), target).fraction(target) > target.utilisation_limit
    assert fold == 8  # .6 on the ECP5-85k at fold 8: the bitstream hdl/reports/0.6-ulx3s-85f.json


def test_officers_does_not_fit_an_ice40(cli, monkeypatch):
    """The history alone (20,628 values) exceeds the iCE40 HX8K's block RAM: one line, exit 1."""
    import octalgen.hdl.synth as synth

    monkeypatch.setattr(synth, "find_tool", lambda name: name)  # no tools needed to find that out
    result = cli("synth", ".6", "--target", "ice40-hx8k")
    assert result.code == 1
    assert "does not fit ice40-hx8k at any fold" in result.err and result.err.count("\n") == 1


def test_missing_synthesis_tools_name_the_extra(cli, monkeypatch):
    import octalgen.hdl.synth as synth

    monkeypatch.setattr(synth.shutil, "which", lambda *args, **kwargs: None)
    result = cli("synth", ".356", "--target", "ecp5-85k")
    assert result.code == 1
    assert "pip install 'octalgen[synth]'" in result.err and result.err.count("\n") == 1
