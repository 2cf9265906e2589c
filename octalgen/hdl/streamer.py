"""The kernel on a board: statistics of every value, and records to the host over a serial link.

:class:`ResultStreamer` wraps a :class:`~octalgen.hdl.kernel.SpeculativePipeline`
and folds each value it emits into what ``octalgen run`` keeps for proven
values (see :mod:`octalgen.engine.scan`): the heap reached, the FNV-1a-64
digest of all values so far, the largest value and its first heap, a count
of every value, and Grossman's rolling CRC-64 over the last W values with its
power-of-two anchors (the components of :mod:`octalgen.hdl.statistics`).
Every ``record_every`` values it sends a summary and a histogram over a UART
(8N1, :mod:`octalgen.hdl.uart`; :class:`~octalgen.hdl.sender.RecordSender`);
on request it sends a short range of values (:class:`~octalgen.hdl.capture.ValueCapture`).
The record format is in :mod:`octalgen.hdl.records`.

Everything starts from the values before the kernel's first heap: the
digest, counts, largest value, CRC and anchors of the preloaded prefix are
computed by the same :class:`~octalgen.engine.scan.Scanner` that ``run``
uses (:func:`~octalgen.hdl.statistics.prefix_state`) and become the
registers' and memories' initial contents, so a record at heap N covers
G(0) ... G(N - 1).

The values the statistics see are the kernel's speculative values: the host
(``octalgen fpga``) proves them by comparing the digest with the exact
engine's at the same heap.
"""

from __future__ import annotations

import numpy as np
from amaranth.hdl import Cat, Const, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .capture import ValueCapture
from .kernel import SpeculativePipeline
from .records import BoardSettings
from .sender import RecordSender
from .statistics import (
    WINDOW_BANK,
    Anchors,
    Fnv1aDigest,
    Histogram,
    RollingCrc,
    WindowValues,
    histogram_bins,
    prefix_state,
)
from .uart import UartRx, UartTx

__all__ = ["ResultStreamer"]


class ResultStreamer(wiring.Component):
    """A kernel, the statistics of its values and the serial records (see the module docstring).

    Parameters
    ----------
    kernel : SpeculativePipeline
    history : sequence of int
        G(0) ... G(kernel.first - 1): the statistics start from them.
    settings : BoardSettings
    window_bank : int
        Values per bank of the window memory at fold >= 4 (:class:`~octalgen.hdl.statistics.WindowValues`).

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

    def __init__(
        self,
        kernel: SpeculativePipeline,
        history,
        settings: BoardSettings = BoardSettings(),
        *,
        window_bank: int = WINDOW_BANK,
    ):
        history = np.asarray(history[: kernel.first], dtype=np.int64)
        self.kernel = kernel
        self.settings = settings
        self.window = WindowValues(kernel.plan.window, history, kernel.first, fold=kernel.fold, bank=window_bank)
        self.bins = histogram_bins(kernel, history)
        self.prefix = prefix_state(history, kernel.plan.window, self.bins)
        # At fold >= 2 a value comes at most every two clocks: the statistics take two clocks per value.
        self.pipelined = kernel.fold > 1
        self.digest = Fnv1aDigest(self.prefix.digest, pipelined=self.pipelined)
        self.crc = RollingCrc(kernel.plan.window, self.prefix.crc)
        self.anchors = Anchors(self.prefix, pipelined=self.pipelined)
        # At fold >= 3 no value comes in a snapshot's clock (two clocks after the value that ends the interval).
        self.histogram = Histogram(self.prefix.counts[: self.bins], bank_from_register=kernel.fold >= 3)
        self.capture = ValueCapture(settings.capture_depth, pipelined=self.pipelined)
        self.sender = RecordSender(len(self.histogram.code), settings.capture_depth)
        self.uart_tx = UartTx(settings.clocks_per_bit)
        self.uart_rx = UartRx(settings.clocks_per_bit)
        super().__init__({"tx": Out(1, init=1), "rx": In(1, init=1), "error": Out(1), "heartbeat": Out(8)})

    def elaborate(self, platform):
        m = Module()
        kernel, prefix = self.kernel, self.prefix
        m.submodules.kernel = kernel
        m.submodules.uart_tx = tx = self.uart_tx
        m.submodules.uart_rx = rx = self.uart_rx
        m.submodules.window = window = self.window
        m.submodules.digest = digest = self.digest
        m.submodules.crc = crc = self.crc
        m.submodules.anchors = anchors = self.anchors
        m.submodules.histogram = histogram = self.histogram
        m.submodules.capture = capture = self.capture
        m.submodules.sender = sender = self.sender
        m.d.comb += [self.tx.eq(tx.tx), rx.rx.eq(self.rx), self.error.eq(kernel.error)]

        # The value stream, registered once; the heap of the next value; the largest value.
        valid = Signal()
        value = Signal(16)
        m.d.sync += [valid.eq(kernel.valid), value.eq(kernel.value)]
        position = Signal(64, init=kernel.first)
        largest = Signal(16, init=prefix.largest)
        largest_at = Signal(64, init=prefix.largest_at)
        checking = Signal()  # the clock after a value: the CRC holds H(n), checked holds n
        checked = Signal(64)
        m.d.sync += checking.eq(valid)
        with m.If(valid):
            m.d.sync += [position.eq(position + 1), checked.eq(position)]
            with m.If(value > largest):
                m.d.sync += [largest.eq(value), largest_at.eq(position)]

        # The statistics.
        m.d.comb += [
            window.valid.eq(valid),
            window.value.eq(value),
            digest.valid.eq(valid),
            digest.value.eq(value),
            digest.after.eq(checking),
            crc.valid.eq(valid),
            crc.value.eq(value),
            crc.old.eq(window.old),
            anchors.checking.eq(checking),
            anchors.checked.eq(checked),
            anchors.crc.eq(crc.crc),
            histogram.valid.eq(valid),
            histogram.code.eq(value),  # the histogram counts by value
        ]

        # Snapshots: when the value whose statistics settle now ends a record interval (two clocks
        # after it when pipelined, one otherwise), and the sender is idle.
        every = self.settings.record_every.bit_length() - 1
        boundary = Signal()
        ends_interval = valid & (position[:every] == (1 << every) - 1)
        if self.pipelined:
            ending = Signal()
            m.d.sync += [ending.eq(ends_interval), boundary.eq(ending)]
        else:
            m.d.sync += boundary.eq(ends_interval)
        m.d.comb += self.heartbeat.eq(position[every:][:8])
        m.d.comb += [
            sender.summary_due.eq(boundary),
            histogram.swap.eq(sender.snapshot),
            sender.fields.eq(
                Cat(
                    position,
                    digest.digest,
                    largest,
                    largest_at,
                    crc.crc,
                    anchors.anchor,
                    anchors.anchor_crc,
                    anchors.matches,
                    anchors.last_match,
                    kernel.error,
                    Const(0, 7),
                )
            ),
            sender.largest.eq(largest),
        ]

        # The records: the histogram read bin by bin, the requested values one by one, bytes to the UART.
        m.d.comb += [
            histogram.address.eq(sender.bin_address),
            histogram.hold.eq(sender.bin_hold),
            histogram.add.eq(sender.bin_add),
            sender.bin_count.eq(histogram.cumulative),
            capture.byte.eq(rx.data),
            capture.byte_valid.eq(rx.valid),
            capture.valid.eq(valid),
            capture.value.eq(value),
            capture.position.eq(position),
            sender.answer.eq(capture.answer),
            sender.start.eq(capture.start),
            sender.count.eq(capture.count),
            capture.answered.eq(sender.answered),
            capture.read_address.eq(sender.value_address),
            sender.value_data.eq(capture.read_data),
            tx.data.eq(sender.data),
            tx.valid.eq(sender.valid),
            sender.ready.eq(tx.ready),
        ]
        return m
