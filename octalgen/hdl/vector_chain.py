"""The ``vector`` mark chain: each stage hands the whole mark vector to the next, once per heap.

A stage's mark vector holds one bit per code of ``plan.mex_order``.  When a
heap moves on, the stage loads the previous stage's vector (complete for
that heap) together with this heap's first marks, then ORs in one mark per
lane per clock.  A mark is the product of two registered one-hot halves of
the lane's code, decoded by one of :data:`DECODERS` (see
:meth:`VectorChain.add_lane` for why halves).  Every lane's halves reach all
of the vector's bits; :mod:`.rows_chain` keeps a lane's wires local instead.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Mux, Signal

from .layout import MARK, ROW, PipelineLayout
from .mex import in_mex_order

__all__ = ["DECODERS", "VectorChain"]

#: How the two halves of a code are decoded into one-hots: ``shift`` (one shift) or ``compare``
#: (one comparator per entry).  ``shift`` is the default: it simulates faster in both simulators
#: (``benchmarks/bench_hdl.py`` compares them).
DECODERS = ("shift", "compare")


class VectorChain:
    """The stages' mark vectors, built stage by stage (the kernel's :class:`~octalgen.hdl.kernel.MarkChain`).

    Parameters
    ----------
    layout : PipelineLayout
        The schedule (``layout.mark_chain == "vector"``).
    order : tuple of int
        ``plan.mex_order``: bit i of the vector marks code ``order[i]``.
    decoder : {"shift", "compare"}
        How a code's halves are decoded (:data:`DECODERS`).
    """

    def __init__(self, layout: PipelineLayout, order: tuple[int, ...], decoder: str):
        self.layout = layout
        self.order = order
        self.decoder = decoder
        self._previous = None  # the last stage's mark vector
        self._load = None
        self._products: list = []

    def begin_stage(self, m, s: int, at_phase) -> None:
        """Start stage ``s``; ``at_phase(c)`` is true in its clock c of the slot."""
        fold = self.layout.fold
        # The mark of phase 0 arrives: a new heap starts.  A register, set from the phase a clock
        # ahead: the phase compare reaches all the vector's bits, and as logic after the phase
        # token it would add two hops of routing to the vector's update.
        load = Const(1, 1)
        if fold > 1:
            load = Signal(name=f"s{s}_load", init=MARK % fold == 0)
            m.d.sync += load.eq(at_phase(MARK - 1))
        self._load = load
        self._products = []

    def add_lane(self, m, name: str, x, enable) -> None:
        """Mark code ``x`` (one bit per code of ``plan.mex_order``), from registered halves.

        ``x`` is decoded into two registered one-hot halves, ``high`` (x >> 4)
        and ``low`` (x & 15); the mark of code c is ``high[c >> 4] & low[c & 15]``.
        Each mark bit is then an AND of two registers, so a four-input LUT ORs
        the marks of two lanes, and a stage's vector update (load, its own bit,
        the previous stage's bit and two per lane) maps to about (2 L + 2) / 3
        LUTs per bit for L lanes, where decoding a whole code per bit takes two
        or three.  ``enable`` (for lanes with an empty phase) clears ``high``.
        """
        rows = self.layout.mark_rows
        high_code, low_code = x[4:], x[:4]
        if self.decoder == "compare":
            high_hot = Cat(high_code == j for j in range(rows))
            low_hot = Cat(low_code == j for j in range(ROW))
        else:
            span = max(1, (rows - 1).bit_length())
            shifted = Const(1, 1) << high_code[:span]
            high_hot = shifted[:rows] if len(high_code) <= span else Mux(high_code < rows, shifted[:rows], 0)
            low_hot = Const(1, 1) << low_code
        high = Signal(rows, name=f"{name}_high", reset_less=True)
        low = Signal(ROW, name=f"{name}_low", reset_less=True)
        m.d.sync += [high.eq(high_hot if enable is None else Mux(enable, high_hot, 0)), low.eq(low_hot)]
        # bit c: code c is marked
        self._products.append(in_mex_order(Cat(Mux(high[j], low, 0) for j in range(rows)), self.order))

    def end_stage(self, m, s: int) -> None:
        """The stage's mark vector: loaded with the previous stage's (complete for the heap that
        moves on) and this heap's first marks, then ORed with one mark per lane per clock."""
        marks = Signal(self.layout.mark_bits, name=f"s{s}_marks", reset_less=True)
        combined = self._products[0]
        for product in self._products[1:]:
            combined = combined | product
        m.d.sync += marks.eq(Mux(self._load, 0 if self._previous is None else self._previous, marks) | combined)
        self._previous = marks

    def result(self, m):
        """The last stage's vector and the condition in which it is complete, or None without stages."""
        if self._previous is None:
            return None
        return self._previous, self._load
