"""The ``rows`` mark chain: lanes mark rows of small memories, stages hand the rows on a group per clock.

Each lane ORs the mark of its code into one of two small memories of rows
(code c is bit c & 15 of row c >> 4), the two taking turns by slot.  In the
next slot the other memory marks while this one hands its rows on,
``layout.rows_per_clock`` rows (a *group*) per clock for
``layout.drain_clocks`` clocks, and is cleared as it is read.  Each stage ORs
its lanes' groups with the previous stage's (held for a slot in a small delay
memory) into its stream register.  So a lane's wires stay within its own
memories, and the stages are linked by ``16 * rows_per_clock`` wires instead
of a vector of every code (:mod:`.vector_chain`).  It needs a fold of 2 or
more.
"""

from __future__ import annotations

from collections.abc import Callable

from amaranth.hdl import Cat, Const, Mux, Signal, Value
from amaranth.lib.memory import Memory

from .layout import MARK, ROW, PipelineLayout
from .mex import in_mex_order

__all__ = ["RowsChain"]


class RowsChain:
    """The stages' row streams, built stage by stage (the kernel's :class:`~octalgen.hdl.kernel.MarkChain`).

    Parameters
    ----------
    layout : PipelineLayout
        The schedule (``layout.mark_chain == "rows"``).
    order : tuple of int
        ``plan.mex_order``: bit i of the finished vector marks code ``order[i]``.
    """

    def __init__(self, layout: PipelineLayout, order: tuple[int, ...]):
        self.layout = layout
        self.order = order
        self._previous: tuple[Signal, Signal] | None = None  # the last stage's stream register, its group
        self._at_phase: Callable[[int], Value] = lambda clock: Const(0, 1)  # set by begin_stage
        self._lanes: list = []

    def begin_stage(self, m, s: int, at_phase) -> None:
        """Start stage ``s``; ``at_phase(c)`` is true in its clock c of the slot."""
        self._at_phase = at_phase
        self._lanes = []

    def add_lane(self, m, name: str, x, enable) -> None:
        """Mark code ``x`` in the lane's row memories (``enable``: None for a lane with a term in every phase)."""
        self._lanes.append((name, x, enable))

    def end_stage(self, m, s: int) -> None:
        """Build stage ``s`` from its lanes: row memories, delay memory, stream register.

        Clock t of stage s (any fold): ``k`` = (t - MARK) mod F; a term of
        phase j is marked in the clock with k = j, and group k of the previous
        heap's rows is handed on in the same clock (k < drain clocks).
        """
        name = f"s{s}"
        layout = self.layout
        fold, rows, per_clock, drain = layout.fold, layout.mark_rows, layout.rows_per_clock, layout.drain_clocks
        width = ROW * per_clock
        # Counted from this stage's own phase token (as `load` is for vectors), so synthesis cannot
        # merge the stages' counters into one net across the chip.
        k = Signal(range(fold), name=f"{name}_k", init=-MARK % fold)
        group = Signal(range(fold), name=f"{name}_group", init=(-MARK - 1) % fold)  # k a clock ago: the stream's group
        turn = self._at_phase(MARK - 1)  # a new slot of marks starts in the next clock
        k_next = Mux(turn, 0, k + 1)
        m.d.sync += [k.eq(k_next), group.eq(k)]
        marks_first = (-MARK // fold) % 2  # the memory that marks in clock 0 (they swap every slot)
        handing = k < drain
        abits = (drain - 1).bit_length()

        stream = Signal(width, name=f"{name}_rows", reset_less=True)
        combined = Const(0, width)
        if self._previous is not None:
            # The previous stage's stream a slot later (F - 1 clocks in this memory).
            before, _ = self._previous
            delay = Memory(shape=width, depth=drain, init=[])
            m.submodules[f"{name}_delay"] = delay
            write, read = delay.write_port(), delay.read_port(domain="comb")
            m.d.comb += [
                write.addr.eq(group[:abits]),
                write.data.eq(before),
                write.en.eq(group < drain),
                read.addr.eq(k[:abits]),
            ]
            combined = read.data
        for lane_name, x, enable in self._lanes:
            row_code, low_code = x[4:], x[:4]
            hit = row_code < rows if enable is None else enable & (row_code < rows)
            if per_clock & (per_clock - 1) == 0:  # a power of two: bank and address are bit fields
                shift = per_clock.bit_length() - 1
                bank_code, address_code = row_code[:shift], row_code[shift:]
            else:
                bank_code, address_code = row_code % per_clock, row_code // per_clock
            banks = Signal(per_clock, name=f"{lane_name}_banks", reset_less=True)  # one-hot, 0 when no mark
            low = Signal(ROW, name=f"{lane_name}_low", reset_less=True)
            m.d.sync += [banks.eq(Mux(hit, Const(1, 1) << bank_code, 0)[:per_clock]), low.eq(Const(1, 1) << low_code)]
            reads: list[list] = [[], []]
            turns = []
            for memory_index in (0, 1):
                # Each memory's own turn, a toggle (synthesis cannot merge the copies: a stage's
                # single parity register reaching every memory's data and address is a long route),
                # and its address, registered a clock ahead (the row it marks, or the group it
                # hands on).  A read-modify-write in one clock: an asynchronous read, LUT RAM.
                marking = Signal(name=f"{lane_name}_marking{memory_index}", init=marks_first == memory_index)
                at = Signal(max(abits, 1), name=f"{lane_name}_at{memory_index}", reset_less=True)
                m.d.sync += [marking.eq(marking ^ turn), at.eq(Mux(marking ^ turn, address_code, k_next))]
                for b in range(per_clock):
                    memory = Memory(shape=ROW, depth=drain, init=[])
                    m.submodules[f"{lane_name}_rows{memory_index}_{b}"] = memory
                    write, read = memory.write_port(), memory.read_port(domain="comb")
                    m.d.comb += [
                        read.addr.eq(at[:abits]),
                        write.addr.eq(at[:abits]),
                        write.data.eq(Mux(marking, read.data | low, 0)),
                        write.en.eq(Mux(marking, banks[b], handing)),
                    ]
                    reads[memory_index].append(read.data)
                turns.append(marking)
            combined = combined | Mux(turns[0], Cat(*reads[1]), Cat(*reads[0]))  # the memory handing on
        m.d.sync += stream.eq(combined)
        self._previous = stream, group

    def result(self, m):
        """The heap's mark vector (bit i: code ``order[i]``) and the condition in which it is complete,
        or None without stages.

        The last stage hands its rows on a group per clock: all but the last
        group are kept, and the vector is complete in the clock in which the
        last group is in the stream register.
        """
        if self._previous is None:
            return None
        layout = self.layout
        stream, group = self._previous
        held = [Signal(len(stream), name=f"chain_rows{g}", reset_less=True) for g in range(layout.drain_clocks - 1)]
        for g, register in enumerate(held):
            with m.If(group == g):
                m.d.sync += register.eq(stream)
        complete = group == layout.drain_clocks - 1
        return in_mex_order(Cat(*held, stream)[: layout.mark_rows * ROW], self.order), complete
