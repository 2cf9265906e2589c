"""The board's serial link: an 8N1 transmitter and receiver, ``clocks_per_bit`` clocks per bit."""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["UartRx", "UartTx"]


class UartTx(wiring.Component):
    """8N1 transmitter: takes ``data`` when ``valid`` and ``ready``; each bit lasts ``clocks_per_bit``.

    Attributes
    ----------
    data : Signal(8), in
        The byte to send.
    valid : Signal(1), in
        ``data`` is to be sent (taken in a clock where ``ready`` is high).
    ready : Signal(1), out
        The line is idle: a byte offered now is taken.
    tx : Signal(1), out
        The serial line (idle high).
    """

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
            m.d.sync += [
                self.tx.eq(shift[0]),
                shift.eq(shift >> 1),
                left.eq(left - 1),
                timer.eq(self.clocks_per_bit - 1),
            ]
        with m.Elif(self.valid):
            m.d.sync += [shift.eq(Cat(Const(0, 1), self.data, Const(1, 1))), left.eq(10)]
        return m


class UartRx(wiring.Component):
    """8N1 receiver: ``valid`` is high for one clock with each byte whose stop bit is high.

    Attributes
    ----------
    rx : Signal(1), in
        The serial line (idle high); synchronised here.
    data : Signal(8), out
        The last byte received.
    valid : Signal(1), out
        High for one clock with each byte, the first in which ``data`` holds it.
    """

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
            with m.State("IDLE"), m.If(~line):
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
