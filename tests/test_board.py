"""The board's top level in amaranth.sim with a UART model, record by record against the reference.

No board is attached here: this simulation of the whole top level (kernel, statistics, serial
records, the request path) is the evidence that the design works.  The host side (`octalgen fpga`)
reads the simulated session's bytes as if they came from the serial port.
"""

from __future__ import annotations

import struct
import time

import numpy as np
import pytest

from octalgen.api import rare_table
from octalgen.checksum import fnv1a64
from octalgen.engine.scan import HASH_MATCH, Scanner, crc_of_window
from octalgen.hdl.kernel import SpeculativePipeline
from octalgen.hdl.records import (
    SUMMARY,
    BoardSettings,
    BoardSummary,
    Histogram,
    RecordReader,
    Values,
    crc16,
    frame,
    request,
)
from octalgen.hdl.simulate import simulate_board, uart_levels
from octalgen.hdl.statistics import WINDOW_BANK
from octalgen.hdl.streamer import ResultStreamer
from octalgen.hdl.synth import TARGETS, choose_fold
from octalgen.plan import make_plan
from octalgen.reference import exact_values

#: Small enough for amaranth.sim: a record every 256 values, 4 clocks per UART bit.
SIM_SETTINGS = BoardSettings(record_every=256, clocks_per_bit=4, capture_depth=64)


def expected_summary(values, window: int) -> dict:
    """A summary's fields for G(0) ... G(N - 1) = ``values``, from the values themselves."""
    scanner = Scanner(window)
    last_match = 0
    for event in scanner.fold(np.asarray(values, dtype=np.uint16)):
        if event.kind == HASH_MATCH:
            last_match = event.heap
    state = scanner.to_dict()
    values = np.asarray(values)
    return {
        "heap": len(values),
        "digest": int(fnv1a64(values), 16),
        "largest": int(values.max()),
        "largest_at": int(np.argmax(values)),
        "crc": crc_of_window(values, window),
        "anchor": state["anchor"],
        "anchor_crc": state["anchor_crc"],
        "matches": state["hash_matches"],
        "last_match": last_match,
        "flags": 0,
    }


def board_session(code, fold, cycles, requests, settings=SIM_SETTINGS, window_bank=WINDOW_BANK, **options):
    """Simulate the top level of ``code`` at ``fold``; returns (plan, reference, run)."""
    plan = make_plan(rare_table(code))
    reference = exact_values(code, plan.start + cycles)
    kernel = SpeculativePipeline(plan, reference[: plan.start], fold=fold, **options)
    streamer = ResultStreamer(kernel, reference[: plan.start], settings, window_bank=window_bank)
    return plan, reference, simulate_board(streamer, cycles, requests)


#: .356 at the fold of its bitstream; a request for 16 values, sent from clock 0.
DOT356_FOLD = 1
DOT356_VALUES = (1000, 16)


@pytest.fixture(scope="module")
def dot356_session():
    assert choose_fold(make_plan(rare_table(".356")), TARGETS["ecp5-85k"])[0] == DOT356_FOLD
    return board_session(".356", DOT356_FOLD, 22_500, [(0, request(*DOT356_VALUES))])


def test_dot356_board_session_record_by_record(dot356_session):
    """Summary and histogram at heap 256, the requested values, the next summary and histogram (the
    link was busy until then: counted in the other bank, added to the totals): each equal to the
    reference's."""
    plan, reference, run = dot356_session
    assert run.rejected == 0
    kinds = [type(r) for r in run.records]
    assert kinds == [BoardSummary, Histogram, Values, BoardSummary, Histogram], run.records
    summary, histogram, values, later, later_histogram = run.records
    assert summary.__dict__ == expected_summary(reference[:256], plan.window)
    assert histogram.heap == 256 and list(histogram.counts) == list(np.bincount(reference[:256]))
    start, count = DOT356_VALUES
    assert (values.start, list(values.values)) == (start, list(reference[start : start + count]))
    heap = later.heap
    assert heap % 256 == 0 and heap > 256
    assert later.__dict__ == expected_summary(reference[:heap], plan.window)
    assert later_histogram.heap == heap and list(later_histogram.counts) == list(np.bincount(reference[:heap]))


def test_fpga_command_checks_the_simulated_session(dot356_session, cli, monkeypatch):
    """`octalgen fpga` reads the simulated board's bytes and agrees with the exact engine."""
    _, _, run = dot356_session
    link = _replay(monkeypatch, run.data)
    start, count = DOT356_VALUES
    # --until the session's last summary: the command must check every record the session sent, the
    # later summary too (its counts added across the bank the busy link left).  --until 256 would stop
    # at the first record or the later one, whichever the exact engine's thread had reached.
    last = run.records[-2].heap
    result = cli("fpga", ".356", "--port", "simulated", "--until", str(last), "--values", f"{start}:{count}")
    assert result.code == 0, result.err
    assert link.written == request(start, count)
    assert f"G({start:,}) ... G({start + count - 1:,}) from the board: all equal the exact values" in result.out
    assert f"board checked to G({last - 1:,}): digest fnv1a64" in result.out
    assert "agrees with the exact engine" in result.out


def test_fpga_command_names_where_the_digests_part(dot356_session, cli, monkeypatch):
    """A digest changed in the summary (CRC recomputed, so the link cannot tell): exit 1, the heap named."""
    _, _, run = dot356_session
    summary = run.records[0]
    length = 2 + 63 + 2  # sync, kind, payload, CRC
    payload = struct.pack("<QQ", summary.heap, summary.digest ^ 1) + run.data[2 + 16 : length - 2]
    forged = frame(SUMMARY, payload) + run.data[length:]
    assert RecordReader().feed(forged)[0].digest == summary.digest ^ 1
    _replay(monkeypatch, forged)
    result = cli("fpga", ".356", "--port", "simulated", "--until", "256")
    assert result.code == 1
    assert "MISMATCH at the record of heap 256: digest" in result.out
    assert "part before heap 256: at or before G(255)" in result.out


def test_fpga_command_with_a_run_checkpoint(dot356_session, cli, monkeypatch, tmp_path):
    """The digest of an `octalgen run` checkpoint at the record's heap, without the engine."""
    _, _, run = dot356_session
    result = cli("run", ".356", "--until", "256", "--checkpoint", tmp_path / "run")
    assert result.code == 0, result.err
    _replay(monkeypatch, run.data)
    result = cli("fpga", ".356", "--port", "simulated", "--checkpoint", tmp_path / "run")
    assert result.code == 0, result.err
    assert "G(256): board digest" in result.out and "agree" in result.out


class _Link:
    def __init__(self, data: bytes):
        self.data, self.written = data, b""

    def read(self, size):
        piece, self.data = self.data[:size], self.data[size:]
        if not piece:
            time.sleep(0.05)  # a serial read timing out: the board sends nothing more
        return piece

    def write(self, data):
        self.written += data


def _replay(monkeypatch, data: bytes) -> _Link:
    import octalgen.cli.fpga as fpga

    link = _Link(data)
    monkeypatch.setattr(fpga, "open_link", lambda port, baud: link)
    return link


# -- the record format and the link model, without hardware ---------------------------------------


def test_histogram_counts_repeated_values_in_both_banks():
    """The histogram against np.bincount: runs of equal values, gaps, a bank swap, read-outs.

    .356 has no two equal values in a row before heap 256, so the board session alone never
    forwards a count; this stream repeats values one and two clocks apart, and swaps banks in
    the middle of a run.  Each read-out (as the record sender does it: address, hold, add) gives
    the cumulative counts from ``init`` on and clears the idle bank: a bank read out twice would
    count its values twice in the last read-out.
    """
    from amaranth.sim import Simulator

    from octalgen.hdl.statistics import Histogram

    rng = np.random.default_rng(14)
    stream = [(int(rng.random() < 0.8), int(c)) for c in rng.choice(3, size=400, p=[0.6, 0.3, 0.1])]
    swap = 200
    while not (stream[swap - 1] == stream[swap] == (1, stream[swap][1])):  # a run across the swap
        swap += 1
    counted = [np.bincount([c for v, c in part if v], minlength=8) for part in (stream[:swap], stream[swap:])]
    init = np.array([5, 0, 1, 0, 0, 0, 0, 9])
    dut = Histogram(init, bank_from_register=False)
    seen = {}

    async def bench(ctx):
        async def read_out():
            """Every bin of the idle bank: its cumulative count, written back; the bin cleared."""
            counts = []
            for address in range(8):
                ctx.set(dut.address, address)
                await ctx.tick()  # the address into both memories
                ctx.set(dut.hold, 1)
                await ctx.tick()  # their outputs into registers
                ctx.set(dut.hold, 0)
                ctx.set(dut.add, 1)
                counts.append(ctx.get(dut.cumulative))
                await ctx.tick()  # written back, the bin cleared
                ctx.set(dut.add, 0)
            return counts

        async def swap_banks():
            ctx.set(dut.swap, 1)
            await ctx.tick()
            ctx.set(dut.swap, 0)

        for clock, (valid, code) in enumerate(stream):
            ctx.set(dut.valid, valid)
            ctx.set(dut.code, code)
            ctx.set(dut.swap, clock == swap)
            await ctx.tick()
        ctx.set(dut.valid, 0)
        ctx.set(dut.swap, 0)
        await ctx.tick().repeat(3)  # the last writes
        seen["bank 0"] = await read_out()  # while bank 1 counts (it holds the stream after the swap)
        await swap_banks()
        seen["bank 1"] = await read_out()
        await swap_banks()
        seen["bank 0 again"] = await read_out()  # cleared by the first read-out: adds nothing

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert seen["bank 0"] == list(init + counted[0])
    assert seen["bank 1"] == seen["bank 0 again"] == list(init + counted[0] + counted[1])
    assert counted[0][0] > 0 and counted[1][0] > 0


def test_records_survive_noise_and_bad_crcs():
    good = frame(SUMMARY, struct.pack("<QQHQQQQIQB", 256, 7, 3, 4, 5, 0, 0, 0, 0, 0))
    bad = bytearray(good)
    bad[5] ^= 0xFF  # inside the payload: the CRC no longer matches
    reader = RecordReader()
    records = reader.feed(b"\x00\x13" + bytes(bad) + b"\xa5" + good[:10]) + reader.feed(good[10:])
    assert [r.heap for r in records] == [256] and records[0].digest == 7
    assert reader.rejected >= 1


def test_crc16_is_ccitt_false():
    assert crc16(b"123456789") == 0x29B1  # the check value of CRC-16/CCITT-FALSE


def test_uart_levels_are_8n1():
    levels = uart_levels(b"\x01", 2)
    assert levels == [0, 0] + [1, 1] + [0, 0] * 7 + [1, 1]


def test_pll_dividers_are_those_of_ecppll():
    """Project Trellis's ecppll -i 25 -o 90 prints dividers 5, 18, 7 (VCO 630 MHz); -o 100: 1, 4, 6."""
    from octalgen.hdl.boards import ecp5_pll

    setting = ecp5_pll(25, 90)
    assert (setting.input_divider, setting.feedback_divider, setting.output_divider) == (5, 18, 7)
    assert setting.vco_mhz == 630
    setting = ecp5_pll(25, 100)
    assert (setting.input_divider, setting.feedback_divider, setting.output_divider) == (1, 4, 6)


# Fold 2 is slow; the window bank runs at fold 3 in the fast suite.
@pytest.mark.parametrize(
    "fold, window_bank", [pytest.param(2, WINDOW_BANK, marks=pytest.mark.slow), (3, WINDOW_BANK), (4, 16)]
)
def test_folded_board_summaries_equal_the_reference(fold, window_bank):
    """At fold 2 and more the window's old value passes one more register before the CRC, and at
    fold 4 a window deeper than a bank (here 46 values in banks of 16, 16 and 14) is read bank by
    bank into registers first, at the pointer register: the summaries from heap 256 on (their
    CRC-64 of the window took G(n - 46) through them from heap 46 on; anchors, digest) and the
    histograms equal the reference's."""
    plan, reference, run = board_session(".356", fold, 2_600 * fold + 10_000, [], window_bank=window_bank)
    summaries = [r for r in run.records if isinstance(r, BoardSummary)]
    assert run.rejected == 0 and summaries[0].heap == 256 and plan.window == 46
    for summary in summaries:
        assert summary.__dict__ == expected_summary(reference[: summary.heap], plan.window)
    # The histograms after them: at fold 3 the counts take the bank from its register.
    histograms = [r for r in run.records if isinstance(r, Histogram)]
    assert [h.heap for h in histograms] == [s.heap for s in summaries][: len(histograms)] and histograms
    for histogram in histograms:
        assert list(histogram.counts) == list(np.bincount(reference[: histogram.heap]))


# Fold 1 is slow: the fast suite checks fold 1's anchors and CRC in the .356 session's summaries
# (test_dot356_board_session_record_by_record) and the matches themselves at fold 2.
@pytest.mark.parametrize("fold", [pytest.param(1, marks=pytest.mark.slow), 2])
def test_rolling_hash_matches_in_the_summary(fold):
    """Kayles (.77) repeats with period 12 from heap 71, so its rolling hash of the last 72 values
    matches the anchor's from heap 2 W on: the summary at heap 512 (matches, the last match, the
    anchors, and the histogram after it) equals the reference's, with the anchors' compares and
    updates in one clock (fold 1) and with the compares registered first (fold 2)."""
    settings = BoardSettings(record_every=512, clocks_per_bit=4, capture_depth=64)
    plan, reference, run = board_session(".77", fold, 8_000, [], settings)
    assert run.rejected == 0 and [type(r) for r in run.records[:2]] == [BoardSummary, Histogram]
    summary, histogram = run.records[:2]
    expected = expected_summary(reference[:512], plan.window)
    assert summary.__dict__ == expected and expected["matches"] > 0
    assert histogram.heap == 512 and list(histogram.counts) == list(np.bincount(reference[:512]))


# Fold 1 is slow: its requests are answered exactly in the fast suite by the .356 board session
# (test_dot356_board_session_record_by_record), and the late-or-exact boundary runs at fold 2.
@pytest.mark.parametrize("fold", [pytest.param(1, marks=pytest.mark.slow), 2])
def test_requests_around_the_heap_reached_are_answered_late_or_exactly(fold):
    """Requests for G(start) ... whose start the board reaches just before, while or just after it
    decides (three registered steps; at fold 2 the compare with the heap counter is registered
    too): each answer is late (no values) or the reference's values, the late ones are those that
    start earliest, and none is lost."""
    settings = BoardSettings(record_every=4096, clocks_per_bit=4, capture_depth=8)
    plan = make_plan(rare_table(".356"))
    reference = exact_values(".356", plan.start + 2_000)
    kernel = SpeculativePipeline(plan, reference[: plan.start], fold=fold)
    # The heap that the board reaches as the request's last stop bit ends.
    arrival = plan.start + (len(uart_levels(request(0, 4), settings.clocks_per_bit)) - kernel.latency) // fold
    late = []
    for start in range(arrival - 2, arrival + 7):
        # The request and its answer take about 1,600 clocks of the serial link whatever the fold.
        run = simulate_board(
            ResultStreamer(kernel, reference[: plan.start], settings),
            1_600 + 400 * (fold - 1),
            [(0, request(start, 4))],
        )
        (answer,) = [r for r in run.records if isinstance(r, Values)]
        assert answer.start == start
        assert answer.late or list(answer.values) == list(reference[start : start + 4])
        late.append(answer.late)
    assert late[0] and not late[-1] and late == sorted(late, reverse=True)


@pytest.mark.slow
@pytest.mark.parametrize(
    "fold, lanes_per_stage, mark_chain",
    [(None, 8, "vector"), (12, 4, "vector"), (11, 3, "vector"), (10, 2, "vector"), (8, 4, "rows")],
)
def test_officers_board_session_at_its_fold(fold, lanes_per_stage, mark_chain):
    """.6 at the fold `synth` chooses, and at the folds and stages of its ULX3S-85F builds (folds
    10, 11 and 12 with 2, 3 and 4 lanes per stage, fold 8 with 4 and rows: hdl/reports): the first
    summary against the reference (a late request too)."""
    plan = make_plan(rare_table(".6"))
    fold = fold or choose_fold(plan, TARGETS["ecp5-85k"])[0]
    # G(start - 1) is preloaded, never computed: late at every latency (a request for G(start) is
    # late or not by whether the pipeline's latency ends before the request's 11 bytes arrive).
    plan, reference, run = board_session(
        ".6", fold, 6_000, [(0, request(plan.start - 1, 4))], lanes_per_stage=lanes_per_stage, mark_chain=mark_chain
    )
    assert run.rejected == 0
    summary = next(r for r in run.records if isinstance(r, BoardSummary))
    assert summary.__dict__ == expected_summary(reference[: summary.heap], plan.window)
    late = next(r for r in run.records if isinstance(r, Values))
    assert late.late and late.start == plan.start - 1
