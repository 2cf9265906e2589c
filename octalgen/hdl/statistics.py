"""The statistics of every value on the board, as components: what ``octalgen run`` keeps, in hardware.

Each component folds the kernel's value stream (``valid``, ``value``, one
value at most every ``fold`` clocks) into one of the fields of a board's
summary (:mod:`octalgen.hdl.records`), the same as the long runs' scanner
(:mod:`octalgen.engine.scan`) computes them in C:

* :class:`WindowValues` — G(n - W) in the clock of G(n), for the rolling CRC;
* :class:`Fnv1aDigest` — the FNV-1a-64 digest of all values so far;
* :class:`RollingCrc` — Grossman's rolling CRC-64 over the last W values;
* :class:`Anchors` — the CRC at power-of-two anchors, and the heaps whose CRC equals it;
* :class:`Histogram` — a count of every value, in two banks that swap at a snapshot.

Every register and memory starts from the statistics of the values before
the kernel's first heap (:func:`prefix_state`), so a summary at heap N
covers G(0) ... G(N - 1).  :class:`~octalgen.hdl.streamer.ResultStreamer`
composes them.

At fold >= 2 values come at most one every two clocks, and several of
these components take two clocks per value there (``pipelined``): a long
path ends in a register and its result is used the clock after.  The
comment at each such register names the path it cuts: each was the
critical path of a board build without it (the builds' reports are in
``hdl/reports/``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from amaranth.hdl import Array, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ..checksum import FNV_PRIME
from ..engine.scan import HASH_MATCH, Scanner, crc_tables
from ..errors import InputError
from .linear import carry_save_rows, linear_map

__all__ = [
    "WINDOW_BANK",
    "Anchors",
    "Fnv1aDigest",
    "Histogram",
    "PrefixState",
    "RollingCrc",
    "WindowValues",
    "fnv_rows",
    "histogram_bins",
    "prefix_state",
]

#: Values per bank of the window memory at fold >= 4: one ECP5 block RAM (DP16KD) of 16-bit words.
WINDOW_BANK = 1024


@dataclass(frozen=True)
class PrefixState:
    """The statistics of G(0) ... G(first - 1): where the components start."""

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


def prefix_state(history, window: int, bins: int) -> PrefixState:
    """Fold ``history`` (G(0) ... G(first - 1)) with the long runs' scanner over a window of ``window``.

    ``counts`` has at least ``bins`` entries (the histogram's bins).
    """
    history = np.asarray(history, dtype=np.int64)
    scanner = Scanner(window)
    last_match = 0
    for event in scanner.fold(history.astype(np.uint16)):
        if event.kind == HASH_MATCH:
            last_match = event.heap
    state = scanner.to_dict()
    largest_at = int(np.argmax(history))
    return PrefixState(
        digest=state["fnv"],
        largest=int(history[largest_at]),
        largest_at=largest_at,
        counts=np.bincount(history, minlength=bins),
        crc=state["crc"],
        anchor=state["anchor"],
        anchor_crc=state["anchor_crc"],
        next_anchor=state["next_anchor"],
        matches=state["hash_matches"],
        last_match=last_match,
    )


def histogram_bins(kernel, history) -> int:
    """Values the histogram counts: every value ``kernel`` (a
    :class:`~octalgen.hdl.kernel.SpeculativePipeline`) can emit, and every value of the prefix."""
    emitted = 1 << kernel.value_bits if kernel.plan.encoding.kind == "u8" else kernel.plan.mex_size
    return max(emitted, int(np.max(history[: kernel.first])) + 1)


def fnv_rows(digest, value) -> tuple:
    """One FNV-1a-64 step before its add: two rows whose sum mod ``2**64`` is
    ``(digest ^ value) * FNV_PRIME mod 2**64`` (the prime's shifted copies, compressed)."""
    x = (digest ^ value)[:64]
    return carry_save_rows([(x << k)[:64] for k in range(64) if FNV_PRIME >> k & 1], 64)


class WindowValues(wiring.Component):
    """G(n - W) in the clock of G(n), from a memory of the last W values written with each value.

    The read moves to the next value's slot in the clock of a value, so at
    fold >= 2 its result has clocks to spare before the next value: there
    it passes one more register (the memory's clock-to-output and its
    cascade multiplexers then end in a register, not in the CRC's XOR
    network).  At fold >= 4 a window deeper than ``bank`` is cut into banks
    of that many values, each read into its own register, and the bank is
    chosen the clock after (rather than yosys's own cascade of block RAMs: a
    slow clock-to-output, then multiplexers across a column); the banks read
    at the pointer register itself, so a clock after the value, and each is
    written when a one-hot register of the pointer's bank says so (rather
    than the pointer's increment and compare in front of the addresses of
    banks across the chip).  Hence four clocks from one value to the next.

    Parameters
    ----------
    window : int
        W (at least 2).
    history : sequence of int
        G(0) ... G(first - 1): the memory starts with the last W of them.
    first : int
        The heap of the first value that comes in.
    fold : int
        Clocks per value (at least this many clocks between two values).
    bank : int
        Values per bank at fold >= 4 (a power of two).

    Attributes
    ----------
    valid : Signal(1), in
        A value comes in this clock.
    value : Signal(16), in
        G(n), written in this clock.
    old : Signal(16), out
        G(n - W) in the clock of G(n) (0 for n < W).
    """

    def __init__(self, window: int, history, first: int, *, fold: int, bank: int = WINDOW_BANK):
        if window < 2:
            raise InputError("the board needs a window of at least two values")
        if bank < 2 or bank & (bank - 1):
            raise InputError(f"window bank {bank} must be a power of two, at least 2")
        self.window, self.first, self.fold, self.bank = window, first, fold, bank
        # Slot j holds the value of the heap that is j modulo W.
        self.contents = [
            int(history[p]) if p >= 0 else 0 for p in ((first - window + ((j - first) % window)) for j in range(window))
        ]
        super().__init__({"valid": In(1), "value": In(16), "old": Out(16)})

    def elaborate(self, platform):
        m = Module()
        window, valid, value = self.window, self.valid, self.value
        pointer = Signal(range(window), name="window_pointer", init=self.first % window)
        wraps = pointer == window - 1
        following = Mux(wraps, 0, pointer + 1)
        with m.If(valid):
            m.d.sync += pointer.eq(following)
        if self.fold < 4 or window <= self.bank:
            memory = Memory(shape=16, depth=window, init=self.contents)
            m.submodules.window_values = memory
            read, write = memory.read_port(), memory.write_port()
            m.d.comb += [
                read.addr.eq(Mux(valid, following, pointer)),
                write.addr.eq(pointer),
                write.data.eq(value),
                write.en.eq(valid),
            ]
            if self.fold == 1:
                m.d.comb += self.old.eq(read.data)
                return m
            held = Signal(16, name="window_old")
            m.d.sync += held.eq(read.data)
            m.d.comb += self.old.eq(held)
            return m
        bank = self.bank
        bits = bank.bit_length() - 1  # address bits within a bank (banks are a power of two deep)
        banks = -(-window // bank)
        writing = Signal(banks, name="window_writing", init=1 << (self.first % window >> bits))  # one-hot
        with m.If(valid & wraps):
            m.d.sync += writing.eq(1)
        with m.Elif(valid & pointer[:bits].all()):
            m.d.sync += writing.eq(writing << 1)
        registered = [Signal(16, name=f"window_old_{k}") for k in range(banks)]
        for k, first in enumerate(range(0, window, bank)):
            memory = Memory(shape=16, depth=min(bank, window - first), init=self.contents[first : first + bank])
            m.submodules[f"window_values_{k}"] = memory
            read, write = memory.read_port(), memory.write_port()
            m.d.comb += [
                read.addr.eq(pointer[:bits]),
                write.addr.eq(pointer[:bits]),
                write.data.eq(value),
                write.en.eq(valid & writing[k]),
            ]
            m.d.sync += registered[k].eq(read.data)
        chosen = Signal(range(banks), name="window_bank")
        held = Signal(16, name="window_old")
        m.d.sync += [chosen.eq(pointer[bits:]), held.eq(Array(registered)[chosen])]
        m.d.comb += self.old.eq(held)
        return m


class Fnv1aDigest(wiring.Component):
    """The FNV-1a-64 digest of every value so far.

    Pipelined, the step's 3:2 compressors end in two registers in the value's
    clock and their one carry chain runs the clock after (both in one clock
    are too long a path at the board's clock).

    Parameters
    ----------
    init : int
        The digest of the values before the first.
    pipelined : bool
        Two clocks per value (fold >= 2).

    Attributes
    ----------
    valid : Signal(1), in
    value : Signal(16), in
    after : Signal(1), in
        The clock after a value (``valid`` delayed by a clock): pipelined, the digest takes its sum then.
    digest : Signal(64), out
        The digest of the values so far (a register).
    """

    def __init__(self, init: int, *, pipelined: bool):
        self.pipelined = pipelined
        super().__init__({"valid": In(1), "value": In(16), "after": In(1), "digest": Out(64, init=init)})

    def elaborate(self, platform):
        m = Module()
        low, high = fnv_rows(self.digest, self.value)
        adding = self.valid  # the clock whose rows the digest takes
        if self.pipelined:
            registered = Signal(64, name="fnv_low"), Signal(64, name="fnv_high")
            with m.If(self.valid):
                m.d.sync += [registered[0].eq(low), registered[1].eq(high)]
            (low, high), adding = registered, self.after
        with m.If(adding):
            m.d.sync += self.digest.eq((low + high)[:64])
        return m


class RollingCrc(wiring.Component):
    """Grossman's rolling CRC-64 H(n) over the last W values (:func:`~octalgen.engine.scan.crc_tables`).

    One step takes G(n) in and G(n - W) out, both as GF(2)-linear maps of 16
    bits each (:func:`~octalgen.hdl.linear.linear_map`), in the value's clock.

    Parameters
    ----------
    window : int
        W.
    init : int
        H(first - 1), the CRC of the values before the first.

    Attributes
    ----------
    valid : Signal(1), in
    value : Signal(16), in
        G(n).
    old : Signal(16), in
        G(n - W) (:class:`WindowValues`).
    crc : Signal(64), out
        H(n) from the clock after G(n) (a register).
    """

    def __init__(self, window: int, init: int):
        self.window = window
        super().__init__({"valid": In(1), "value": In(16), "old": In(16), "crc": Out(64, init=init)})

    def elaborate(self, platform):
        m = Module()
        tables = [int(t) for t in crc_tables(self.window)]

        def table_columns(first_table: int) -> list[int]:
            low, high = (
                tables[256 * first_table : 256 * first_table + 256],
                tables[256 * first_table + 256 : 256 * first_table + 512],
            )
            return [low[1 << k] if k < 8 else high[1 << (k - 8)] for k in range(16)]

        crc = self.crc
        top = (crc[48:] ^ self.value)[:16]
        crc_next = (crc << 16)[:64] ^ linear_map(top, table_columns(0), 64) ^ linear_map(self.old, table_columns(2), 64)
        with m.If(self.valid):
            m.d.sync += crc.eq(crc_next)
        return m


class Anchors(wiring.Component):
    """The rolling CRC at power-of-two anchors, and the heaps whose CRC equals the anchor's.

    At heap n = the next anchor (a power of two) the anchor becomes n and its
    CRC H(n); the anchor after it is 2n.  Any other heap whose H(n) equals
    the anchor's is a match (a candidate period: ``octalgen run`` proves it).
    Pipelined, the three compares end in registers before the updates they
    select (compare and update in one clock are too long a path); the +1 of
    the count comes from the register alone, then a select, so no compare
    feeds a carry chain (as ``matches + match`` would).

    Parameters
    ----------
    prefix : PrefixState
        The anchors of the values before the first.
    pipelined : bool
        Two clocks per value (fold >= 2): a value settles two clocks after it, not one.

    Attributes
    ----------
    checking : Signal(1), in
        The clock after a value: ``crc`` holds H(n) and ``checked`` holds n.
    checked : Signal(64), in
    crc : Signal(64), in
    anchor, anchor_crc, matches, last_match : Signal, out
        The summary's fields (:mod:`~octalgen.hdl.records`) through the value settling in this
        clock: what the registers take at its end (combinational), so that a snapshot in that
        clock includes that value.
    """

    def __init__(self, prefix: PrefixState, *, pipelined: bool):
        self.prefix, self.pipelined = prefix, pipelined
        super().__init__(
            {
                "checking": In(1),
                "checked": In(64),
                "crc": In(64),
                "anchor": Out(64),
                "anchor_crc": Out(64),
                "matches": Out(32),
                "last_match": Out(64),
            }
        )

    def elaborate(self, platform):
        m = Module()
        prefix, checking, checked, crc = self.prefix, self.checking, self.checked, self.crc
        anchor = Signal(64, name="anchor_held", init=prefix.anchor)
        anchor_crc = Signal(64, name="anchor_crc_held", init=prefix.anchor_crc)
        next_anchor = Signal(64, init=prefix.next_anchor)
        matches = Signal(32, name="matches_held", init=prefix.matches)
        last_match = Signal(64, name="last_match_held", init=prefix.last_match)
        compares = [checked == next_anchor, anchor != 0, crc == anchor_crc]
        if self.pipelined:
            settling = Signal()  # two clocks after a value: its compares are in registers
            seen = [Signal(name=name) for name in ("anchor_due", "anchor_set", "crc_seen")]
            m.d.sync += [settling.eq(checking)] + [s.eq(c) for s, c in zip(seen, compares)]
        else:
            settling, seen = checking, compares
        anchor_due, anchor_set, crc_seen = seen
        at_anchor = settling & anchor_due
        match = settling & ~anchor_due & anchor_set & crc_seen
        m.d.comb += [
            self.anchor.eq(Mux(at_anchor, checked, anchor)),
            self.anchor_crc.eq(Mux(at_anchor, crc, anchor_crc)),
            self.matches.eq(Mux(match, (matches + 1)[:32], matches)),
            self.last_match.eq(Mux(match, checked, last_match)),
        ]
        m.d.sync += [
            anchor.eq(self.anchor),
            anchor_crc.eq(self.anchor_crc),
            matches.eq(self.matches),
            last_match.eq(self.last_match),
            next_anchor.eq(Mux(at_anchor, next_anchor << 1, next_anchor)),
        ]
        return m


class Histogram(wiring.Component):
    """A count of every value: two banks of counts since the last snapshot, and the cumulative counts.

    The values count in one bank (block RAM) while the record sender reads
    the other, bin by bin: it adds the bin to the cumulative count (a second
    memory, ``init`` at configuration), writes the sum back and clears the
    bin.  At a snapshot (``swap``) the banks change roles, so every count a
    record sends describes the same values as its summary while the kernel
    runs on.

    Each value is a read-add-write of its count, pipelined so that no clock
    holds more than one of its steps: in the value's clock its count is read
    (address ``code``), in the next the block RAM's output is registered, in
    the third the count + 1 is written.  (A block RAM's clock-to-output is
    slow on the ECP5: the read-add-write in one clock would set the board's
    clock.)  The read is transparent, so it sees the
    write in its own clock; the value just before it writes one clock
    later, so its count is forwarded when it counted the same code in the
    same bank (known a clock ahead, from registered codes).

    Parameters
    ----------
    init : sequence of int
        The cumulative count of each bin at configuration (its length: the bins).
    bank_from_register : bool
        The values count in the bank of the register, not of this clock's
        ``swap``: right where no value comes in a snapshot's clock (fold >= 3,
        two clocks after the value that ends the interval).  It keeps
        ``swap`` (the sender's state and the interval's end) out of the
        counts' read address, a critical path otherwise.

    Attributes
    ----------
    valid : Signal(1), in
    code : Signal(bits), in
        The value to count (its low bits: the bin).
    swap : Signal(1), in
        A snapshot: from this clock's value on, the values count in the other bank.
    address : Signal(bits), in
        The bin the sender reads: its cumulative count and its count in the idle bank
        are in registers two clocks later.
    hold : Signal(1), in
        The clock after ``address``: the cumulative count's read goes into its register.
    add : Signal(1), in
        Write ``cumulative`` to the bin's cumulative count, and clear its count in the idle bank.
    cumulative : Signal(64), out
        The bin's cumulative count plus its count in the idle bank (from the registers).
    """

    def __init__(self, init, *, bank_from_register: bool):
        self.init = [int(count) for count in init]
        self.bank_from_register = bank_from_register
        bits = max(1, (len(self.init) - 1).bit_length())
        super().__init__(
            {
                "valid": In(1),
                "code": In(bits),
                "swap": In(1),
                "address": In(bits),
                "hold": In(1),
                "add": In(1),
                "cumulative": Out(64),
            }
        )

    def elaborate(self, platform):
        m = Module()
        bank = Signal()  # the bank that counts (the other one is the sender's)
        bank_now = bank ^ self.swap  # a snapshot's value and the ones after it count in the other bank
        m.d.sync += bank.eq(bank_now)
        fetched = self._count(m, bank if self.bank_from_register else bank_now, bank)
        idle_delta = Mux(bank, fetched[0], fetched[1])  # the bank the sender reads (registered)
        total = Memory(shape=64, depth=len(self.init), init=self.init)
        m.submodules.counts_total = total
        total_read, total_write = total.read_port(), total.write_port()
        held_total = Signal(64)
        m.d.comb += [
            total_read.addr.eq(self.address),
            total_write.addr.eq(self.address),
            self.cumulative.eq(held_total + idle_delta),
        ]
        with m.If(self.hold):
            m.d.sync += held_total.eq(total_read.data)
        with m.If(self.add):
            m.d.comb += [total_write.data.eq(self.cumulative), total_write.en.eq(1)]
        return m

    def _count(self, m, counting, bank):
        """The read-add-write of each value's count in bank ``counting``; the banks' registered reads.

        The bank that is not counting (``bank`` when no value is in flight)
        belongs to the sender: it reads ``address`` and, with ``add``, writes
        0 there.  The returned registers hold each bank's read of the clock before.
        """
        valid, code = self.valid, self.code
        width = len(code)
        # The pipeline: A (the value's clock: the read), B (the count in the block RAM's output), C (the write).
        b_valid, b_code, b_bank = Signal(), Signal(width), Signal()
        c_valid, c_code, c_bank = Signal(), Signal(width), Signal()
        m.d.sync += [
            b_valid.eq(valid),
            b_code.eq(code),
            b_bank.eq(counting),
            c_valid.eq(b_valid),
            c_code.eq(b_code),
            c_bank.eq(b_bank),
        ]
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
                read.addr.eq(Mux(counting == i, code, self.address)),
                write.addr.eq(Mux(mine, c_code, self.address)),
                write.data.eq(Mux(mine, count, 0)),
                write.en.eq(mine | (self.add & (bank != i))),
            ]
            m.d.sync += fetched[i].eq(read.data)
        return fetched
