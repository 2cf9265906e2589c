"""The kernel on a board: statistics of every value, and records to the host over a serial link.

:class:`ResultStreamer` wraps a :class:`~octalgen.hdl.kernel.SpeculativeKernel`
and folds each value it emits into what ``octalgen run`` keeps for proven
values (see :mod:`octalgen.engine.scan`): the heap reached, the FNV-1a-64
digest of all values so far, the largest value and its first heap, a count
of every value, and Grossman's rolling CRC-64 over the last W values with its
power-of-two anchors.  Every ``record_every`` values it sends a summary and a
histogram over a UART (8N1); on request it sends a short range of values.
The record format is in :mod:`octalgen.hdl.records`.

Everything starts from the values before the kernel's first heap: the
digest, counts, largest value, CRC and anchors of the preloaded prefix are
computed here (by the same :class:`~octalgen.engine.scan.Scanner` that
``run`` uses) and become the registers' and memories' initial contents, so
a record at heap N covers G(0) ... G(N - 1).

The values the statistics see are the kernel's speculative values: the host
(``octalgen fpga``) proves them by comparing the digest with the exact
engine's at the same heap.
"""

from __future__ import annotations

import binascii
from dataclasses import dataclass

import numpy as np
from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ..checksum import FNV_PRIME
from ..errors import InputError
from .kernel import SpeculativeKernel
from .records import HISTOGRAM, REQUEST, SUMMARY, SUMMARY_BYTES, SYNC, VALUES, BoardSettings


def linear_map(value, columns: list[int], width: int):
    """The GF(2)-linear map whose input bit k contributes ``columns[k]``, as XOR trees."""
    masks = [sum(1 << k for k, column in enumerate(columns) if column >> j & 1) for j in range(width)]
    return Cat((value & mask).xor() if mask else Const(0, 1) for mask in masks)


def carry_save_rows(operands, width: int) -> tuple:
    """Two operands with the sum of ``operands`` mod ``2**width``: 3:2 compressors, no adder.

    A chain of adders would put one carry chain per operand on the path;
    this puts one LUT level per compressor, and leaves the one carry chain to the caller.
    """
    operands = list(operands)
    while len(operands) > 2:
        a, b, c = operands[:3]
        operands = operands[3:] + [(a ^ b ^ c)[:width], (((a & b) | (a & c) | (b & c)) << 1)[:width]]
    return operands[0], operands[1]


def fnv_rows(digest, value) -> tuple:
    """One FNV-1a-64 step before its add: two rows whose sum mod ``2**64`` is
    ``(digest ^ value) * FNV_PRIME mod 2**64`` (the prime's shifted copies, compressed)."""
    x = (digest ^ value)[:64]
    return carry_save_rows([(x << k)[:64] for k in range(64) if FNV_PRIME >> k & 1], 64)


def crc16_step_columns() -> tuple[list[int], list[int]]:
    """CRC-16/CCITT-FALSE after one byte, as linear maps of the old CRC and of the byte."""
    state = [binascii.crc_hqx(b"\0", 1 << k) for k in range(16)]
    data = [binascii.crc_hqx(bytes([1 << k]), 0) for k in range(8)]
    return state, data


@dataclass(frozen=True)
class PrefixState:
    """The statistics of G(0) ... G(first - 1): the streamer's starting point."""

    digest: int
    largest: int
    largest_at: int
    counts: np.ndarray  # by value
    crc: int
    anchor: int
    anchor_crc: int
    next_anchor: int
    matches: int
    last_match: int


def prefix_state(kernel: SpeculativeKernel, history) -> PrefixState:
    """Fold ``history`` (G(0) ... G(first - 1)) with the long runs' scanner (W: the plan's window)."""
    from ..engine.scan import HASH_MATCH, Scanner

    history = np.asarray(history[: kernel.first], dtype=np.int64)
    scanner = Scanner(kernel.plan.window)
    last_match = 0
    for event in scanner.fold(history.astype(np.uint16)):
        if event.kind == HASH_MATCH:
            last_match = event.heap
    state = scanner.to_dict()
    counts = np.bincount(history, minlength=histogram_bins(kernel, history))
    largest_at = int(np.argmax(history))
    return PrefixState(
        digest=state["fnv"], largest=int(history[largest_at]), largest_at=largest_at, counts=counts,
        crc=state["crc"], anchor=state["anchor"], anchor_crc=state["anchor_crc"],
        next_anchor=state["next_anchor"], matches=state["hash_matches"], last_match=last_match,
    )


def histogram_bins(kernel: SpeculativeKernel, history) -> int:
    """Values the histogram counts: every value the kernel can emit, and every value of the prefix."""
    emitted = 1 << kernel.value_bits if kernel.plan.encoding.kind == "u8" else kernel.plan.mex_size
    return max(emitted, int(np.max(history[: kernel.first])) + 1)


class UartTx(wiring.Component):
    """8N1 transmitter: takes ``data`` when ``valid`` and ``ready``; each bit lasts ``clocks_per_bit``."""

    def __init__(self, clocks_per_bit: int):
        self.clocks_per_bit = clocks_per_bit
        super().__init__({"data": In(8), "valid": In(1), "ready": Out(1), "tx": Out(1, init=1)})

    def elaborate(self, platform):
        m = Module()
        shift = Signal(10)
        left = Signal(range(11))
        timer = Signal(range(self.clocks_per_bit))
        m.d.comb += self.ready.eq((left == 0) & (timer == 0))
        with m.If(timer != 0):
            m.d.sync += timer.eq(timer - 1)
        with m.Elif(left != 0):
            m.d.sync += [self.tx.eq(shift[0]), shift.eq(shift >> 1), left.eq(left - 1),
                         timer.eq(self.clocks_per_bit - 1)]
        with m.Elif(self.valid):
            m.d.sync += [shift.eq(Cat(Const(0, 1), self.data, Const(1, 1))), left.eq(10)]
        return m


class UartRx(wiring.Component):
    """8N1 receiver: ``valid`` is high for one clock with each byte whose stop bit is high."""

    def __init__(self, clocks_per_bit: int):
        self.clocks_per_bit = clocks_per_bit
        super().__init__({"rx": In(1, init=1), "data": Out(8), "valid": Out(1)})

    def elaborate(self, platform):
        m = Module()
        cpb = self.clocks_per_bit
        meta, line = Signal(init=1), Signal(init=1)
        m.d.sync += [meta.eq(self.rx), line.eq(meta)]  # two flip-flops against metastability
        timer = Signal(range(cpb + cpb // 2 + 1))
        bit = Signal(range(10))
        shift = Signal(8)
        m.d.sync += self.valid.eq(0)
        with m.FSM():
            with m.State("IDLE"):
                with m.If(~line):
                    m.d.sync += [timer.eq(cpb + cpb // 2 - 1), bit.eq(0)]  # to the middle of data bit 0
                    m.next = "BITS"
            with m.State("BITS"):
                with m.If(timer != 0):
                    m.d.sync += timer.eq(timer - 1)
                with m.Elif(bit == 8):
                    m.d.sync += [self.data.eq(shift), self.valid.eq(line)]  # the stop bit
                    m.next = "IDLE"
                with m.Else():
                    m.d.sync += [shift.eq(Cat(shift[1:], line)), bit.eq(bit + 1), timer.eq(cpb - 1)]
        return m


def count_values(m, valid, code, bank_now, bank, serial_address, serial_clear):
    """Count each value in one of two banks of block RAM; returns the banks' registered outputs.

    Each value is a read-add-write of its count, pipelined so that no clock
    holds more than one of its steps: in the value's clock its count is read
    (bank ``bank_now``, address ``code``), in the next the block RAM's output
    is registered, in the third the count + 1 is written.  (A block RAM's
    clock-to-output is slow, 5.6 ns on the ECP5: the read-add-write in one
    clock held the ``.356`` board to 77.31 MHz.)  The read is transparent, so
    it sees the write in its own clock; the value just before it writes one
    clock later, so its count is forwarded when it counted the same code in
    the same bank (known a clock ahead, from registered codes).

    The bank that is not counting (``bank`` when no value is in flight)
    belongs to the serializer: it reads ``serial_address`` and, with
    ``serial_clear``, writes 0 there.  The returned registers hold each
    bank's read of the clock before.
    """
    width = len(code)
    # The pipeline: A (the value's clock: the read), B (the count in the block RAM's output), C (the write).
    b_valid, b_code, b_bank = Signal(), Signal(width), Signal()
    c_valid, c_code, c_bank = Signal(), Signal(width), Signal()
    m.d.sync += [b_valid.eq(valid), b_code.eq(code), b_bank.eq(bank_now),
                 c_valid.eq(b_valid), c_code.eq(b_code), c_bank.eq(b_bank)]
    # The count written in the clock before (the read of the value now in C came too early for it),
    # and whether that value counted the same code in the same bank.
    written, same = Signal(32), Signal()
    m.d.sync += same.eq(c_valid & (c_code == b_code) & (c_bank == b_bank))
    fetched = [Signal(32, name=f"counts_fetched_{i}") for i in range(2)]
    count = (Mux(same, written, Mux(c_bank, fetched[1], fetched[0])) + 1)[:32]
    m.d.sync += written.eq(count)
    for i in range(2):
        delta = Memory(shape=32, depth=1 << width, init=[])
        m.submodules[f"counts_since_{i}"] = delta
        write = delta.write_port()
        read = delta.read_port(transparent_for=(write,))
        mine = c_valid & (c_bank == i)
        m.d.comb += [
            read.addr.eq(Mux(bank_now == i, code, serial_address)),
            write.addr.eq(Mux(mine, c_code, serial_address)),
            write.data.eq(Mux(mine, count, 0)),
            write.en.eq(mine | (serial_clear & (bank != i))),
        ]
        m.d.sync += fetched[i].eq(read.data)
    return fetched


#: Values per bank of the statistics' window memory at fold >= 3: one ECP5 block RAM (DP16KD) of 16-bit words.
WINDOW_BANK = 1024


class ResultStreamer(wiring.Component):
    """A kernel, the statistics of its values and the serial records (see the module docstring).

    Parameters
    ----------
    kernel : SpeculativeKernel
    history : sequence of int
        G(0) ... G(kernel.first - 1): the statistics start from them.
    settings : BoardSettings

    Attributes
    ----------
    tx : Signal, out
        The UART line to the host (idle high).
    rx : Signal, in
        The UART line from the host.
    error : Signal, out
        The kernel's error flag.
    heartbeat : Signal(8), out
        Bits of the heap reached (for LEDs): bit 0 toggles every ``record_every`` values.
    """

    def __init__(self, kernel: SpeculativeKernel, history, settings: BoardSettings = BoardSettings(), *,
                 window_bank: int = WINDOW_BANK):
        if kernel.plan.window < 2:
            raise InputError("the board needs a window of at least two values")
        if window_bank < 2 or window_bank & (window_bank - 1):
            raise InputError(f"window bank {window_bank} must be a power of two, at least 2")
        self.window_bank = window_bank
        self.kernel = kernel
        self.settings = settings
        self.prefix = prefix_state(kernel, history)
        self._history = np.asarray(history[: kernel.first], dtype=np.int64)
        super().__init__({"tx": Out(1, init=1), "rx": In(1, init=1), "error": Out(1), "heartbeat": Out(8)})

    def elaborate(self, platform):
        m = Module()
        kernel, settings, prefix = self.kernel, self.settings, self.prefix
        plan = kernel.plan
        m.submodules.kernel = kernel
        m.submodules.uart_tx = tx = UartTx(settings.clocks_per_bit)
        m.submodules.uart_rx = rx = UartRx(settings.clocks_per_bit)
        m.d.comb += [self.tx.eq(tx.tx), rx.rx.eq(self.rx), self.error.eq(kernel.error)]

        # -- the value stream, registered once ---------------------------------------------
        valid = Signal()
        value = Signal(16)
        m.d.sync += [valid.eq(kernel.valid), value.eq(kernel.value)]
        bins = histogram_bins(kernel, self._history)
        code = value[: max(1, (bins - 1).bit_length())]  # the histogram counts by value
        code_bits = max(1, (bins - 1).bit_length())

        # -- per value: heap, digest, largest, CRC-64 with the value W before ----------------
        position = Signal(64, init=kernel.first)  # the heap of the next value
        digest = Signal(64, init=prefix.digest)
        largest = Signal(16, init=prefix.largest)
        largest_at = Signal(64, init=prefix.largest_at)
        crc = Signal(64, init=prefix.crc)
        window = plan.window
        old = self._window_old(m, valid, value)  # G(n - W) in the clock of G(n)

        from ..engine.scan import crc_tables

        tables = [int(t) for t in crc_tables(window)]

        def table_columns(first_table: int) -> list[int]:
            low, high = tables[256 * first_table : 256 * first_table + 256], tables[256 * first_table + 256 :
                                                                                     256 * first_table + 512]
            return [low[1 << k] if k < 8 else high[1 << (k - 8)] for k in range(16)]

        top = (crc[48:] ^ value)[:16]
        crc_next = (crc << 16)[:64] ^ linear_map(top, table_columns(0), 64) ^ linear_map(old, table_columns(2), 64)
        checking = Signal()  # the clock after a value: crc holds H(n), checked holds n
        checked = Signal(64)
        m.d.sync += checking.eq(valid)
        with m.If(valid):
            m.d.sync += [position.eq(position + 1), crc.eq(crc_next), checked.eq(position)]
            with m.If(value > largest):
                m.d.sync += [largest.eq(value), largest_at.eq(position)]
        # Values come at most one every two clocks at fold >= 2, so the statistics take two clocks
        # per value there: the FNV-1a step's compressors end in a register and its carry chain runs
        # the clock after (13.28 ns in one clock held .6 at fold 10 to 75.32 MHz), and the anchors'
        # compares end in registers before the updates they select (12.07 ns, fold 11).
        pipelined = kernel.fold > 1
        low, high = fnv_rows(digest, value)
        adding = valid  # the clock whose rows the digest takes
        if pipelined:
            registered = Signal(64, name="fnv_low"), Signal(64, name="fnv_high")
            with m.If(valid):
                m.d.sync += [registered[0].eq(low), registered[1].eq(high)]
            (low, high), adding = registered, checking
        with m.If(adding):
            m.d.sync += digest.eq((low + high)[:64])

        # -- anchors: crc against the anchor's, and heap against the next anchor --------------
        anchor = Signal(64, init=prefix.anchor)
        anchor_crc = Signal(64, init=prefix.anchor_crc)
        next_anchor = Signal(64, init=prefix.next_anchor)
        matches = Signal(32, init=prefix.matches)
        last_match = Signal(64, init=prefix.last_match)
        compares = [checked == next_anchor, anchor != 0, crc == anchor_crc]
        if pipelined:
            settling = Signal()  # two clocks after a value: its compares are in registers
            seen = [Signal(name=name) for name in ("anchor_due", "anchor_set", "crc_seen")]
            m.d.sync += [settling.eq(checking)] + [s.eq(c) for s, c in zip(seen, compares)]
        else:
            settling, seen = checking, compares
        anchor_due, anchor_set, crc_seen = seen
        at_anchor = settling & anchor_due
        match = settling & ~anchor_due & anchor_set & crc_seen
        anchor_next = Mux(at_anchor, checked, anchor)
        anchor_crc_next = Mux(at_anchor, crc, anchor_crc)
        # The +1 from the register alone, then a select: the compare ends in one LUT, not a carry chain
        # (matches + match held the .356 board to 86.47 MHz).
        matches_next = Mux(match, (matches + 1)[:32], matches)
        last_match_next = Mux(match, checked, last_match)
        m.d.sync += [anchor.eq(anchor_next), anchor_crc.eq(anchor_crc_next), matches.eq(matches_next),
                     last_match.eq(last_match_next), next_anchor.eq(Mux(at_anchor, next_anchor << 1, next_anchor))]

        # -- snapshots ---------------------------------------------------------------------------
        every = settings.record_every.bit_length() - 1
        boundary = Signal()  # the value whose statistics settle now ends a record interval
        ends_interval = valid & (position[:every] == (1 << every) - 1)
        if pipelined:
            ending = Signal()
            m.d.sync += [ending.eq(ends_interval), boundary.eq(ending)]
        else:
            m.d.sync += boundary.eq(ends_interval)
        idle = Signal()
        take = boundary & idle
        m.d.comb += self.heartbeat.eq(position[every:][:8])
        summary = Signal(8 * SUMMARY_BYTES)
        snapshot_largest_code = Signal(code_bits)
        with m.If(take):
            m.d.sync += [
                summary.eq(Cat(position, digest, largest, largest_at, crc, anchor_next, anchor_crc_next,
                               matches_next, last_match_next, kernel.error, Const(0, 7))),
                snapshot_largest_code.eq(largest),
            ]

        # -- histogram: two banks of counts since the last snapshot, cumulative counts ----------
        bank = Signal()
        bank_now = bank ^ take  # a snapshot's value and the ones after it count in the other bank
        m.d.sync += bank.eq(bank_now)
        serial_address = Signal(code_bits)
        serial_clear = Signal()
        # At fold >= 3 no value comes in a snapshot's clock (two clocks after the value that ends the
        # interval), so the counts can take the bank from its register: `take` (the serializer's
        # state and the boundary) into the counts' read address held .6 at fold 11 to 77.91 MHz.
        counting_bank = bank if kernel.fold >= 3 else bank_now
        fetched = count_values(m, valid, code, counting_bank, bank, serial_address, serial_clear)
        total = Memory(shape=64, depth=bins, init=[int(c) for c in prefix.counts[:bins]])
        m.submodules.counts_total = total
        total_read, total_write = total.read_port(), total.write_port()
        m.d.comb += [total_read.addr.eq(serial_address), total_write.addr.eq(serial_address)]
        idle_delta = Mux(bank, fetched[0], fetched[1])  # the bank the serializer reads (registered)

        # -- requested values ---------------------------------------------------------------------
        depth = settings.capture_depth
        captured = Memory(shape=16, depth=depth, init=[])
        m.submodules.captured_values = captured
        capture_write, capture_read = captured.write_port(), captured.read_port()
        request = Signal(8 * 11)
        received = Signal(range(12))
        with m.If(rx.valid):
            with m.If((received != 0) | (rx.data == REQUEST)):
                m.d.sync += [request.eq(Cat(request[8:], rx.data)), received.eq(received + 1)]
        asked = received == 11
        ask_start, ask_count = request[8:72], request[72:88]
        start, count = Signal(64), Signal(17)
        armed, capturing, answer = Signal(), Signal(), Signal()
        filled = Signal(17)
        # A request is decided in three registered steps (the compare with the 64-bit heap counter
        # and the count's update in one clock were the critical path of .6 at fold 8 with rows:
        # 12.25 ns, hdl/reports/README.md): taken, compared, then answered or armed.
        taken, compared, too_many, late = Signal(), Signal(), Signal(), Signal()
        m.d.sync += [taken.eq(0), compared.eq(taken)]
        with m.If(asked):
            m.d.sync += received.eq(0)
            with m.If(~armed & ~capturing & ~answer & ~taken & ~compared):
                m.d.sync += [start.eq(ask_start), count.eq(ask_count), filled.eq(0), taken.eq(1),
                             too_many.eq((ask_count == 0) | (ask_count > depth))]
        with m.If(taken):
            # Too late: G(start) has passed (or passes now); two compares, not an add then a compare.
            m.d.sync += late.eq(Mux(valid, start <= position, start < position))
        refused = late | too_many
        with m.If(compared):
            with m.If(refused):
                m.d.sync += [count.eq(0), answer.eq(1)]
            with m.Else():
                m.d.sync += armed.eq(1)
        # Armed from the clock after the compare: G(start) may arrive in that clock already.  At fold
        # >= 2 the clock before a value has none, so the heap counter held then what it holds in the
        # value's clock, and the 64-bit compare with the start ends in a register (in front of the
        # capture's count it was .6's critical path at fold 8 asked for 90 MHz: 84.52 MHz).
        reached = position == start
        if pipelined:
            reached_before = Signal()
            m.d.sync += reached_before.eq(reached)
            reached = reached_before
        begin = (armed | compared & ~refused) & valid & reached
        storing = valid & (capturing | begin)
        m.d.comb += [capture_write.addr.eq(filled), capture_write.data.eq(value), capture_write.en.eq(storing)]
        with m.If(storing):
            m.d.sync += [filled.eq(filled + 1), armed.eq(0), capturing.eq(1)]
            with m.If(filled + 1 == count):
                m.d.sync += [capturing.eq(0), answer.eq(1)]

        # -- the records ---------------------------------------------------------------------------
        crc16 = Signal(16)
        state_columns, data_columns = crc16_step_columns()
        send_data = Signal(8)
        send = Signal()  # send_data goes out in this clock (tx.ready is high)
        checked_byte = Signal()  # and it is covered by the CRC
        m.d.comb += [tx.data.eq(send_data), tx.valid.eq(send)]
        # The CRC takes each byte a clock after it went out (the link is busy for a bit time then, so
        # the CRC is complete before its own bytes are sent): the byte's selection and the CRC's XOR
        # network in one clock held the .356 board to 96.39 MHz.
        crc_byte, crc_due = Signal(8), Signal()
        m.d.sync += [crc_byte.eq(send_data), crc_due.eq(send & checked_byte)]
        with m.If(crc_due):
            m.d.sync += crc16.eq(linear_map(crc16, state_columns, 16) ^ linear_map(crc_byte, data_columns, 16))
        index = Signal(range(SUMMARY_BYTES + 2))
        item = Signal(17)
        items = Signal(17)
        word = Signal(64)
        held_total = Signal(64)
        head = Signal(8 * 11)
        after_crc = Signal()  # a histogram follows the summary's CRC

        def send_byte(data, then):
            """Send one byte that the CRC does not cover (sync, and the CRC itself)."""
            m.d.comb += [send_data.eq(data), send.eq(tx.ready)]
            with m.If(tx.ready):
                m.next = then

        # A byte of a vector is selected into `staged` before it goes out, in two registered steps
        # (its 8-byte group, then the byte): the selection of 61 bytes of the summary ending in the
        # UART's shift register held the .6 board to 82.60 MHz, and in one step into `staged`, across
        # the summary's 488 registers, to 71.71 MHz at fold 11.  `primed` says that `staged` holds the
        # byte at `index` (`grouped`: that `group` holds its group; both cleared when a byte goes and
        # in every other state), so no byte depends on how long the link stays busy after the one before.
        staged, primed = Signal(8), Signal()
        group, grouped = Signal(64), Signal()
        m.d.sync += [primed.eq(0), grouped.eq(0)]

        def send_bytes(vector, count, then):
            """Send ``count`` bytes of ``vector`` (from ``index`` 0), covered by the CRC."""
            go = tx.ready & primed
            m.d.comb += [send_data.eq(staged), send.eq(go), checked_byte.eq(1)]
            padded = Cat(vector, Const(0, -len(vector) % 64))
            m.d.sync += [group.eq(padded.word_select(index[3:], 64)), grouped.eq(~go),
                         staged.eq(group.word_select(index[:3], 8)), primed.eq(grouped & ~go)]
            with m.If(go):
                m.d.sync += index.eq(index + 1)
                with m.If(index == count - 1):
                    m.d.sync += index.eq(0)
                    m.next = then

        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += idle.eq(1)
                m.d.sync += [crc16.eq(0xFFFF), index.eq(0), item.eq(0)]
                with m.If(take):
                    m.next = "SYNC_S"
                with m.Elif(answer):
                    m.d.sync += [head.eq(Cat(Const(VALUES, 8), start, count[:16])), items.eq(count)]
                    m.next = "SYNC_V"
            # Summary: sync, kind, payload, CRC; then the histogram.
            with m.State("SYNC_S"):
                send_byte(SYNC, "SUMMARY")
            with m.State("SUMMARY"):
                send_bytes(Cat(Const(SUMMARY, 8), summary), 1 + SUMMARY_BYTES, "CRC_LOW")
                m.d.sync += after_crc.eq(1)
            # Histogram: sync, kind, heap, bins, then per bin: fetch, add, write back, send.
            with m.State("SYNC_H"):
                send_byte(SYNC, "HEAD_H")
                m.d.sync += [crc16.eq(0xFFFF), after_crc.eq(0), items.eq(snapshot_largest_code + 1),
                             head.eq(Cat(Const(HISTOGRAM, 8), summary[:64], (snapshot_largest_code + 1)[:16]))]
            with m.State("HEAD_H"):
                send_bytes(head, 11, "FETCH_H")
            with m.State("FETCH_H"):  # the address into both memories
                m.d.comb += serial_address.eq(item)
                m.next = "HOLD_H"
            with m.State("HOLD_H"):  # both memories' outputs into registers
                m.d.comb += serial_address.eq(item)
                m.d.sync += held_total.eq(total_read.data)
                m.next = "ADD_H"
            with m.State("ADD_H"):  # the 64-bit add from registers; the bin is cleared in its bank
                m.d.comb += [serial_address.eq(item), serial_clear.eq(1),
                             total_write.data.eq(held_total + idle_delta), total_write.en.eq(1)]
                m.d.sync += [word.eq(held_total + idle_delta), item.eq(item + 1)]
                m.next = "BIN_H"
            with m.State("BIN_H"):
                send_bytes(word, 8, "NEXT_H")
            with m.State("NEXT_H"):
                with m.If(item == items):
                    m.next = "CRC_LOW"
                with m.Else():
                    m.next = "FETCH_H"
            # Values: sync, kind, start, count, then each value.
            with m.State("SYNC_V"):
                send_byte(SYNC, "HEAD_V")
            with m.State("HEAD_V"):
                send_bytes(head, 11, "FETCH_V")
            with m.State("FETCH_V"):
                with m.If(item == items):
                    m.d.sync += answer.eq(0)
                    m.next = "CRC_LOW"
                with m.Else():
                    m.d.comb += capture_read.addr.eq(item)
                    m.next = "LOAD_V"
            with m.State("LOAD_V"):
                m.d.sync += [word.eq(capture_read.data), item.eq(item + 1)]
                m.next = "VALUE_V"
            with m.State("VALUE_V"):
                send_bytes(word, 2, "FETCH_V")
            with m.State("CRC_LOW"):
                send_byte(crc16[:8], "CRC_HIGH")
            with m.State("CRC_HIGH"):
                m.d.comb += [send_data.eq(crc16[8:]), send.eq(tx.ready)]
                with m.If(tx.ready & after_crc):
                    m.next = "SYNC_H"
                with m.Elif(tx.ready):
                    m.next = "IDLE"
        return m

    def _window_old(self, m, valid, value):
        """G(n - W) in the clock of G(n), from a memory of the last W values written with each value.

        The read moves to the next value's slot in the clock of a value, so at
        fold >= 2 its result has clocks to spare before the next value: there
        it passes one more register (the memory's clock-to-output and its
        cascade multiplexers then end in a register, not in the CRC's XOR
        network: 59.94 MHz for .6 at fold 12 without it).  At fold >= 4 a
        window deeper than ``window_bank`` is cut into banks of that many
        values, each read into its own register, and the bank is chosen the
        clock after (yosys's own cascade of block RAMs, 5.83 ns clock-to-output
        and then multiplexers across a column, set the clock of .6 at fold 11,
        81.95 MHz); the banks read at the pointer register itself, so a clock
        after the value, and each is written when a one-hot register of the
        pointer's bank says so (the pointer's increment and compare in front of
        the addresses of banks across the chip held .6 at fold 8 to 81.17 and
        82.28 MHz).  Hence four clocks from one value to the next.
        """
        kernel = self.kernel
        window = kernel.plan.window
        contents = [int(self._history[p]) if p >= 0 else 0
                    for p in ((kernel.first - window + ((j - kernel.first) % window)) for j in range(window))]
        pointer = Signal(range(window), name="window_pointer", init=kernel.first % window)
        wraps = pointer == window - 1
        following = Mux(wraps, 0, pointer + 1)
        with m.If(valid):
            m.d.sync += pointer.eq(following)
        if kernel.fold < 4 or window <= self.window_bank:
            memory = Memory(shape=16, depth=window, init=contents)
            m.submodules.window_values = memory
            read, write = memory.read_port(), memory.write_port()
            m.d.comb += [read.addr.eq(Mux(valid, following, pointer)),
                         write.addr.eq(pointer), write.data.eq(value), write.en.eq(valid)]
            if kernel.fold == 1:
                return read.data
            held = Signal(16, name="window_old")
            m.d.sync += held.eq(read.data)
            return held
        bank = self.window_bank
        bits = bank.bit_length() - 1  # address bits within a bank (banks are a power of two deep)
        banks = -(-window // bank)
        writing = Signal(banks, name="window_writing", init=1 << (kernel.first % window >> bits))  # one-hot
        with m.If(valid & wraps):
            m.d.sync += writing.eq(1)
        with m.Elif(valid & pointer[:bits].all()):
            m.d.sync += writing.eq(writing << 1)
        registered = [Signal(16, name=f"window_old_{k}") for k in range(banks)]
        for k, first in enumerate(range(0, window, bank)):
            memory = Memory(shape=16, depth=min(bank, window - first), init=contents[first : first + bank])
            m.submodules[f"window_values_{k}"] = memory
            read, write = memory.read_port(), memory.write_port()
            m.d.comb += [read.addr.eq(pointer[:bits]), write.addr.eq(pointer[:bits]), write.data.eq(value),
                         write.en.eq(valid & writing[k])]
            m.d.sync += registered[k].eq(read.data)
        chosen = Signal(range(banks), name="window_bank")
        held = Signal(16, name="window_old")
        m.d.sync += [chosen.eq(pointer[bits:]), held.eq(Array(registered)[chosen])]
        return held
