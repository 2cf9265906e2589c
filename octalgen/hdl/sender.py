"""The records a board sends: a summary and its histogram at each snapshot, and the answers to requests.

The format (sync byte, kind, payload, CRC-16/CCITT-FALSE) is in
:mod:`octalgen.hdl.records`; this is the hardware that writes it, one byte
at a time into the UART transmitter.
"""

from __future__ import annotations

import binascii

from amaranth.hdl import Cat, Const, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .linear import linear_map
from .records import HISTOGRAM, SUMMARY, SUMMARY_BYTES, SYNC, VALUES

__all__ = ["RecordSender", "crc16_step_columns"]


def crc16_step_columns() -> tuple[list[int], list[int]]:
    """CRC-16/CCITT-FALSE after one byte, as linear maps of the old CRC and of the byte."""
    state = [binascii.crc_hqx(b"\0", 1 << k) for k in range(16)]
    data = [binascii.crc_hqx(bytes([1 << k]), 0) for k in range(8)]
    return state, data


class RecordSender(wiring.Component):
    """Takes a snapshot when a record interval ends and the link is free; sends the records.

    In its idle state the sender takes the summary's fields into a register
    in the clock the interval ends (``snapshot``: the histogram swaps its
    banks in the same clock), then sends the summary and the histogram,
    reading the histogram bin by bin.  A summary that falls due while it is
    busy is skipped.  Otherwise, when the request's answer is ready, it
    sends that, reading the captured values one by one.

    Parameters
    ----------
    bins_bits : int
        Bits of a histogram bin's address.
    capture_depth : int
        The most values a request may ask for (:class:`~octalgen.hdl.capture.ValueCapture`'s ``depth``).

    Attributes
    ----------
    summary_due : Signal(1), in
        A record interval ends in this clock: take a snapshot, if idle.
    fields : Signal(8 * SUMMARY_BYTES), in
        The summary's fields through this clock (:data:`~octalgen.hdl.records.SUMMARY_FORMAT`).
    largest : Signal(bins_bits), in
        The largest value so far: the histogram sends bins 0 to it.
    snapshot : Signal(1), out
        The snapshot is taken in this clock.
    bin_address, bin_hold, bin_add : Signal, out
        The histogram's read-out (:class:`~octalgen.hdl.statistics.Histogram`'s ``address``,
        ``hold`` and ``add``) ...
    bin_count : Signal(64), in
        ... and the bin's cumulative count (its ``cumulative``).
    answer : Signal(1), in
        The answer to a request is ready (:class:`~octalgen.hdl.capture.ValueCapture`) ...
    start : Signal(64), in
    count : Signal(17), in
        ... ``count`` values from ``start``.
    answered : Signal(1), out
        The answer is sent.
    value_address : Signal(range(capture_depth)), out
        The captured value to read ...
    value_data : Signal(16), in
        ... and that value, a clock later.
    data, valid : Signal, out
        The byte to the UART transmitter, and that it goes out now ...
    ready : Signal(1), in
        ... while the transmitter is ready.
    """

    def __init__(self, bins_bits: int, capture_depth: int):
        super().__init__(
            {
                "summary_due": In(1),
                "fields": In(8 * SUMMARY_BYTES),
                "largest": In(bins_bits),
                "snapshot": Out(1),
                "bin_address": Out(bins_bits),
                "bin_hold": Out(1),
                "bin_add": Out(1),
                "bin_count": In(64),
                "answer": In(1),
                "start": In(64),
                "count": In(17),
                "answered": Out(1),
                "value_address": Out(range(capture_depth)),
                "value_data": In(16),
                "data": Out(8),
                "valid": Out(1),
                "ready": In(1),
            }
        )

    def elaborate(self, platform):
        m = Module()
        ready = self.ready
        idle = Signal()
        take = self.summary_due & idle
        m.d.comb += self.snapshot.eq(take)
        summary = Signal(8 * SUMMARY_BYTES)
        snapshot_largest_code = Signal(len(self.largest))
        with m.If(take):
            m.d.sync += [summary.eq(self.fields), snapshot_largest_code.eq(self.largest)]

        crc16 = Signal(16)
        state_columns, data_columns = crc16_step_columns()
        send_data = Signal(8)
        send = Signal()  # send_data goes out in this clock (ready is high)
        checked_byte = Signal()  # and it is covered by the CRC
        m.d.comb += [self.data.eq(send_data), self.valid.eq(send)]
        # The CRC takes each byte a clock after it went out (the link is busy for a bit time then, so
        # the CRC is complete before its own bytes are sent): the byte's selection and the CRC's XOR
        # network in one clock are too long a path for a board at 100 MHz.
        crc_byte, crc_due = Signal(8), Signal()
        m.d.sync += [crc_byte.eq(send_data), crc_due.eq(send & checked_byte)]
        with m.If(crc_due):
            m.d.sync += crc16.eq(linear_map(crc16, state_columns, 16) ^ linear_map(crc_byte, data_columns, 16))
        index = Signal(range(SUMMARY_BYTES + 2))
        item = Signal(17)
        items = Signal(17)
        word = Signal(64)
        head = Signal(8 * 11)
        after_crc = Signal()  # a histogram follows the summary's CRC

        def send_byte(data, then):
            """Send one byte that the CRC does not cover (sync, and the CRC itself)."""
            m.d.comb += [send_data.eq(data), send.eq(ready)]
            with m.If(ready):
                m.next = then

        # A byte of a vector is selected into `staged` before it goes out, in two registered steps
        # (its 8-byte group, then the byte): the selection of 61 bytes of the summary ending in the
        # UART's shift register, or in one step into `staged` across the summary's 488 registers, is
        # too long a path for the board's clock.  `primed` says that `staged` holds the
        # byte at `index` (`grouped`: that `group` holds its group; both cleared when a byte goes and
        # in every other state), so no byte depends on how long the link stays busy after the one before.
        staged, primed = Signal(8), Signal()
        group, grouped = Signal(64), Signal()
        m.d.sync += [primed.eq(0), grouped.eq(0)]

        def send_bytes(vector, count, then):
            """Send ``count`` bytes of ``vector`` (from ``index`` 0), covered by the CRC."""
            go = ready & primed
            m.d.comb += [send_data.eq(staged), send.eq(go), checked_byte.eq(1)]
            padded = Cat(vector, Const(0, -len(vector) % 64))
            m.d.sync += [
                group.eq(padded.word_select(index[3:], 64)),
                grouped.eq(~go),
                staged.eq(group.word_select(index[:3], 8)),
                primed.eq(grouped & ~go),
            ]
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
                with m.Elif(self.answer):
                    m.d.sync += [head.eq(Cat(Const(VALUES, 8), self.start, self.count[:16])), items.eq(self.count)]
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
                m.d.sync += [
                    crc16.eq(0xFFFF),
                    after_crc.eq(0),
                    items.eq(snapshot_largest_code + 1),
                    head.eq(Cat(Const(HISTOGRAM, 8), summary[:64], (snapshot_largest_code + 1)[:16])),
                ]
            with m.State("HEAD_H"):
                send_bytes(head, 11, "FETCH_H")
            with m.State("FETCH_H"):  # the address into both memories
                m.d.comb += self.bin_address.eq(item)
                m.next = "HOLD_H"
            with m.State("HOLD_H"):  # both memories' outputs into registers
                m.d.comb += [self.bin_address.eq(item), self.bin_hold.eq(1)]
                m.next = "ADD_H"
            with m.State("ADD_H"):  # the 64-bit add from registers; the bin is cleared in its bank
                m.d.comb += [self.bin_address.eq(item), self.bin_add.eq(1)]
                m.d.sync += [word.eq(self.bin_count), item.eq(item + 1)]
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
                    m.d.comb += self.answered.eq(1)
                    m.next = "CRC_LOW"
                with m.Else():
                    m.d.comb += self.value_address.eq(item)
                    m.next = "LOAD_V"
            with m.State("LOAD_V"):
                m.d.sync += [word.eq(self.value_data), item.eq(item + 1)]
                m.next = "VALUE_V"
            with m.State("VALUE_V"):
                send_bytes(word, 2, "FETCH_V")
            with m.State("CRC_LOW"):
                send_byte(crc16[:8], "CRC_HIGH")
            with m.State("CRC_HIGH"):
                m.d.comb += [send_data.eq(crc16[8:]), send.eq(ready)]
                with m.If(ready & after_crc):
                    m.next = "SYNC_H"
                with m.Elif(ready):
                    m.next = "IDLE"
        return m
