"""The host's requests for values: G(start) ... G(start + count - 1) captured as the kernel passes them.

The host sends an 11-byte request (``R``, ``start`` u64, ``count`` u16; see
:mod:`octalgen.hdl.records`).  The kernel cannot wait, so a request whose
start the board has passed is refused (answered with no values); otherwise
the values are written into a memory as they stream by, and the record
sender (:class:`~octalgen.hdl.sender.RecordSender`) reads them out.  One
request at a time: one that arrives before the previous one is answered is
ignored.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from .records import REQUEST

__all__ = ["ValueCapture"]


class ValueCapture(wiring.Component):
    """Decides each request, and captures the values it asks for.

    Parameters
    ----------
    depth : int
        The most values one request may ask for (the memory's depth).
    pipelined : bool
        Two clocks per value (fold >= 2): the compare with the heap counter ends in a register.

    Attributes
    ----------
    byte : Signal(8), in
        A byte from the host (the UART receiver's), when ``byte_valid``.
    byte_valid : Signal(1), in
    valid : Signal(1), in
        A value comes in this clock.
    value : Signal(16), in
    position : Signal(64), in
        The heap of the value that comes next (the one in this clock, if ``valid``).
    answer : Signal(1), out
        The answer is ready: ``count`` values from ``start`` (``count`` 0: refused).
    start : Signal(64), out
    count : Signal(17), out
    answered : Signal(1), in
        The sender has sent the answer: the next request may come.
    read_address : Signal, in
        The captured value the sender reads (the first is at 0) ...
    read_data : Signal(16), out
        ... and that value, a clock later.
    """

    def __init__(self, depth: int, *, pipelined: bool):
        self.depth, self.pipelined = depth, pipelined
        super().__init__(
            {
                "byte": In(8),
                "byte_valid": In(1),
                "valid": In(1),
                "value": In(16),
                "position": In(64),
                "answer": Out(1),
                "start": Out(64),
                "count": Out(17),
                "answered": In(1),
                "read_address": In(range(depth)),
                "read_data": Out(16),
            }
        )

    def elaborate(self, platform):
        m = Module()
        depth, valid, position = self.depth, self.valid, self.position
        start, count, answer = self.start, self.count, self.answer
        captured = Memory(shape=16, depth=depth, init=[])
        m.submodules.captured_values = captured
        capture_write, capture_read = captured.write_port(), captured.read_port()
        m.d.comb += [capture_read.addr.eq(self.read_address), self.read_data.eq(capture_read.data)]
        request = Signal(8 * 11)
        received = Signal(range(12))
        with m.If(self.byte_valid), m.If((received != 0) | (self.byte == REQUEST)):
            m.d.sync += [request.eq(Cat(request[8:], self.byte)), received.eq(received + 1)]
        asked = received == 11
        ask_start, ask_count = request[8:72], request[72:88]
        armed, capturing = Signal(), Signal()
        filled = Signal(17)
        # A request is decided in three registered steps (the compare with the 64-bit heap counter
        # and the count's update in one clock are too long a path for the board's clock): taken,
        # compared, then answered or armed.
        taken, compared, too_many, late = Signal(), Signal(), Signal(), Signal()
        m.d.sync += [taken.eq(0), compared.eq(taken)]
        with m.If(asked):
            m.d.sync += received.eq(0)
            with m.If(~armed & ~capturing & ~answer & ~taken & ~compared):
                m.d.sync += [
                    start.eq(ask_start),
                    count.eq(ask_count),
                    filled.eq(0),
                    taken.eq(1),
                    too_many.eq((ask_count == 0) | (ask_count > depth)),
                ]
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
        # capture's count it would be a critical path).
        reached = position == start
        if self.pipelined:
            reached_before = Signal()
            m.d.sync += reached_before.eq(reached)
            reached = reached_before
        begin = (armed | compared & ~refused) & valid & reached
        storing = valid & (capturing | begin)
        m.d.comb += [capture_write.addr.eq(filled), capture_write.data.eq(self.value), capture_write.en.eq(storing)]
        with m.If(storing):
            m.d.sync += [filled.eq(filled + 1), armed.eq(0), capturing.eq(1)]
            with m.If(filled + 1 == count):
                m.d.sync += [capturing.eq(0), answer.eq(1)]
        with m.If(self.answered):
            m.d.sync += answer.eq(0)
        return m
