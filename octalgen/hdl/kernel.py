"""The speculative kernel as an Amaranth component: one value per ``fold`` clocks.

Everything is decided by :func:`~octalgen.hdl.layout.layout_pipeline`; this
module only builds the registers, memories and gates it describes.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import Out

from ..errors import InputError
from ..plan import KernelPlan
from .layout import (DATA_VALID, GROUP, LANES_PER_STAGE, MARK, PipelineLayout, lane_first_write, lane_skipped_writes,
                     layout_pipeline)

#: Bits per row of the mark grid: code c is bit c & 15 of row c >> 4.
ROW = 16

#: Decoder styles for the two one-hot halves of a code: ``shift`` (one shift) or ``compare`` (one
#: comparator per entry).  ``shift`` was the faster in both simulators when whole codes were decoded
#: (benchmarks/bench_hdl.py: compare/shift 0.54 under Verilator, 0.18 under amaranth.sim for .156 at
#: fold 1), so it is the default.
DECODERS = ("shift", "compare")


class SpeculativePipeline(wiring.Component):
    """Speculative Grundy values of an octal game, streamed one every ``fold`` clocks.

    For heap n (from ``first`` on) the circuit marks ``constant ^ G(n - offset)``
    for every term of the plan and emits the least unmarked common value.  Like
    the C kernels it assumes that no rare value appears past the table; a
    verifier proves that separately.

    Parameters
    ----------
    plan : KernelPlan
        Terms, window and storage (the same plan the C backend is generated from).
    history : sequence of int
        G(0) ... G(first - 1), exact values (from the reference or a backend):
        the circuit's memories start with the last ``window`` of them.
    fold : int
        Clocks per value F (>= 1): each mark unit marks one term per clock,
        so there are about ``len(plan.terms) / F`` of them.
    first : int, optional
        The first heap size computed; at least (and by default) ``plan.start``.
    block_ram_depth : int, optional
        History memories at least this deep are marked ``ram_style = "block"``
        (the synthesis target's :attr:`~octalgen.hdl.synth.Target.block_ram_depth`);
        by default yosys chooses.
    decoder : {"shift", "compare"}
        How the halves of a code are decoded into their one-hots (see :data:`DECODERS`).
    lanes_per_stage : int, optional
        Mark units per chain stage (see :data:`~octalgen.hdl.layout.LANES_PER_STAGE`);
        fewer spread the wires of a stage's vector update over more, smaller stages.
    mark_chain : {"vector", "rows"}
        How a stage hands its marks to the next (see
        :data:`~octalgen.hdl.layout.MARK_CHAINS`, :meth:`_rows_stage`).

    Attributes
    ----------
    value : Signal(value_bits), out
        The value G(n), decoded from storage (9 bits for u8 storage: the dropped
        bit restored; 16 for u16).  Combinational from the output register.
    valid : Signal(1), out
        High for exactly one clock per value: the clock in which ``value`` holds
        G(first), G(first + 1), ... in order.
    error : Signal(1), out
        Set (and kept) when a value does not fit its storage: every code of the
        mark array is marked, so the mex is not representable.  ``valid``
        stays low from then on; the values before it were all emitted.

    Notes
    -----
    Latency: G(first) is valid in clock :attr:`latency` after configuration
    (clock 0 is the first; so after ``latency`` rising edges).  Throughput: one
    value every ``fold`` clocks, so G(first + i) is valid in clock
    ``latency + i * fold``; there is no back-pressure.  The memories start with
    the preloaded history and the circuit runs from configuration: asserting
    the domain's reset later restarts the counters but not the memories, so
    reload the design to start again.

    Structure (see :mod:`octalgen.hdl.layout`): a chain of stages, each with up
    to ``LANES_PER_STAGE`` mark units whose decoded marks (one per unit per
    clock) are ORed into the stage's mark vector, which starts each heap from
    the previous stage's vector, so the vector moves from neighbour to
    neighbour (see :meth:`_mark` for why each mark is a pair of one-hot
    halves; with ``mark_chain="rows"`` the stages hand the vector on a few
    rows per clock instead: :meth:`_rows_stage`); each mark
    unit reads its values from its own slice of the history (a block RAM with
    one read and one write per clock, written from a neighbour's reads), so
    no wire spans the chain.  The terms whose values come too late for the
    chain (the smallest offsets) are *recent*: after the chain, the lowest
    ``len(recent) + 1`` unmarked codes are extracted, two per three-clock
    step; each is compared with the recent terms' marks as their values
    arrive, the first few left are shortlisted, and in the last clock (the
    only feedback loop: a few comparators and a small multiplexer) the newest
    values' marks are compared with the shortlist and the first code left is
    the value: Grossman's speculative mex in hardware.
    """

    def __init__(self, plan: KernelPlan, history, *, fold: int = 1, first: int | None = None,
                 decoder: str = "shift", block_ram_depth: int | None = None,
                 lanes_per_stage: int = LANES_PER_STAGE, mark_chain: str = "vector"):
        self._MustUse__silence = True  # no "never used" warning when the checks below refuse the input
        first = plan.start if first is None else first
        if first < plan.start:
            raise InputError(f"the kernel for {plan.game.code} can start at heap {plan.start} at the earliest, "
                             f"not {first}")
        if len(history) < first:
            raise InputError(f"the preloaded history has {len(history)} values; heap {first} needs {first}")
        if decoder not in DECODERS:
            raise InputError(f"unknown decoder {decoder!r}; choose {' or '.join(DECODERS)}")
        self.plan = plan
        self.layout: PipelineLayout = layout_pipeline(plan, fold, lanes_per_stage, mark_chain)
        self.first = first
        self.decoder = decoder
        self.block_ram_depth = block_ram_depth
        # Heaps from `first` on read G(first - window) ... only; older memory slots are never read.
        encoding = plan.encoding
        self._codes = {i: encoding.encode(int(history[i])) for i in range(max(first - plan.window, 0), first)}
        for i, code in self._codes.items():
            if not 0 <= code < encoding.capacity or encoding.decode(code, i) != history[i]:
                raise InputError(f"the preloaded G({i}) = {history[i]} cannot be stored as {encoding.describe()}: "
                                 "too large, or rare past the table's last rare value")
        super().__init__({
            "value": Out(self.value_bits),
            "valid": Out(1),
            "error": Out(1),
        })
        self._MustUse__silence = False

    @property
    def fold(self) -> int:
        return self.layout.fold

    @property
    def latency(self) -> int:
        """Clocks from configuration to the clock in which G(first) is valid."""
        return self.layout.latency

    @property
    def module_name(self) -> str:
        """Name of the emitted Verilog module (and file), e.g. ``octal_0_6_f25`` for ``.6`` at fold 25
        (``octal_0_6_f12_l4`` at fold 12 with 4 lanes per stage instead of the default,
        ``octal_0_6_f8_l1_rows`` with the ``rows`` mark chain)."""
        code = self.plan.game.code
        code = ("0" + code if code.startswith(".") else code).replace(".", "_")
        lanes = self.layout.lanes_per_stage
        return (f"octal_{code}_f{self.fold}" + ("" if lanes == LANES_PER_STAGE else f"_l{lanes}")
                + ("" if self.layout.mark_chain == "vector" else f"_{self.layout.mark_chain}"))

    @property
    def value_bits(self) -> int:
        """Width of :attr:`value`: 9 for u8 storage (values below 512), 16 for u16."""
        return 9 if self.plan.encoding.kind == "u8" else 16

    def _code(self, relative: int) -> int:
        """The stored code of G(first + relative) for the preload (0 where it is never read)."""
        return self._codes.get(self.first + relative, 0)

    # -- construction ---------------------------------------------------------

    def elaborate(self, platform):
        m = Module()
        layout = self.layout
        fold, width = layout.fold, layout.code_bits
        order = self.plan.mex_order

        # The output register holds the newest value; `recent[k]` the one k slots older.
        max_recent = max((r.offset for r in layout.recent), default=1)
        before = -layout.warmup_values - 1  # the heap whose value the output register starts with
        recent = [Signal(width, name=f"recent_{k}", init=self._code(before - k)) for k in range(max_recent)]
        newest = recent[0]

        chain_out, chain_full, memories, data_of, token = self._chain(m, newest)

        # History memories: each written with the stream of its source term or the fresh values.
        for lane, memory, at_phase in memories:
            write = memory.write_port()
            pointer = Signal(lane.address_bits, name=f"wptr_{lane.stage}_{lane.index}",
                             init=(self.first + lane_first_write(lane, fold)) % lane.depth)
            source = lane.source
            if source.fresh:
                data = newest
                enable = at_phase(layout.latency)
            else:
                # The source lane's read of that term, once its read pipeline holds a real read.  The
                # slots before that are counted here, in each lane: a valid bit carried with the
                # reads is the same register in every full lane, which yosys merged into one net
                # across the chip (12.89 ns for .6 at fold 12, the critical path once the statistics
                # were pipelined).
                data = data_of[source.stage, source.lane]
                enable = at_phase(source.phase + DATA_VALID)
                skipped = lane_skipped_writes(lane, fold)
                if skipped:
                    left = Signal(range(skipped + 1), name=f"wskip_{lane.stage}_{lane.index}", init=skipped)
                    m.d.sync += left.eq(left - (enable & (left != 0)))
                    enable = enable & (left == 0)
            m.d.comb += [write.addr.eq(pointer), write.data.eq(data), write.en.eq(enable)]
            m.d.sync += pointer.eq(pointer + enable)

        candidates = self._extract(m, chain_out, chain_full, order)
        self._select(m, candidates, recent, token)
        return m

    def _phase_token(self, m, name: str, previous):
        """The phase of the slot, as this block sees it: one clock behind ``previous``'s.

        Block k of the chain holds phase(t - k) (phase(t) = t mod fold), passed
        from neighbour to neighbour, so no control net spans the chip and
        synthesis cannot merge the copies into one.  Returns the register and
        ``at(c)``, true when phase(t) = c mod fold.
        """
        fold = self.layout.fold
        delay = 0 if previous is None else previous[2] + 1
        phase = Signal(range(fold), name=f"{name}_phase", init=-delay % fold)
        if fold > 1:
            if previous is None:
                m.d.sync += phase.eq(Mux(phase == fold - 1, 0, phase + 1))
            else:
                m.d.sync += phase.eq(previous[0])

        def at(clock: int):
            return phase == (clock - delay) % fold if fold > 1 else Const(1, 1)

        return phase, at, delay

    def _chain(self, m, newest):
        """The stages; returns the chain's mark vector and full groups, the lane memories, their
        read data, and the last stage's phase token."""
        layout = self.layout
        fold, width, bits = layout.fold, layout.code_bits, layout.mark_bits
        memories, data_of = [], {}
        previous = None
        token = None
        for s, stage in enumerate(layout.stages):
            token = self._phase_token(m, f"s{s}", token)
            phase, at_phase, delay = token
            # slot(t) = t // fold, counted here from this stage's own phase.
            slot = Signal(max(lane.address_bits for lane in stage), name=f"s{s}_slot")
            m.d.sync += slot.eq(slot + at_phase(fold - 1))
            # The mark of phase 0 arrives: a new heap starts.  A register, set from the phase a clock
            # ahead: the phase compare reaches all the vector's bits, and as logic after the phase
            # token it was 12.4 ns of routing in two hops (.6 at fold 11, hdl/reports/README.md).
            load = Const(1, 1)
            if fold > 1 and layout.mark_chain == "vector":
                load = Signal(name=f"s{s}_load", init=MARK % fold == 0)
                m.d.sync += load.eq(at_phase(MARK - 1))
            products, marked = [], []  # per lane: its mark (vector), or what it marks and when (rows)
            for lane in stage:
                name = f"s{s}_l{lane.index}"
                partial = len(lane.terms) < fold
                abits = lane.address_bits
                # Term ROM, one word per phase: read address constant, XOR constant, enable.
                words = {}
                for t in lane.terms:
                    step = 1 if t.phase == fold - 1 else 0  # the slot counter advances before the address is formed
                    # This stage's phase register lags by `delay`: the ROM is read at phase(t) - delay.
                    words[(t.phase - delay) % fold] = ((self.first - s - t.offset - step) % lane.depth, t.code, 1)
                rom_addr, rom_code, rom_en = self._rom(m, name, phase, words, abits, width)
                address = Signal(abits, name=f"{name}_addr", reset_less=True)
                codes = [Signal(width, name=f"{name}_code{k}", reset_less=True) for k in (1, 2, 3)]
                # en_k: the term in flight k clocks after the ROM word is real (0 until then).
                en1, en2, en3, en4 = (Signal(name=f"{name}_en{k}") for k in (1, 2, 3, 4))
                m.d.sync += [address.eq(slot[:abits] + rom_addr),
                             codes[0].eq(rom_code), codes[1].eq(codes[0]), codes[2].eq(codes[1]),
                             en1.eq(rom_en), en2.eq(en1), en3.eq(en2), en4.eq(en3)]

                init = [0] * lane.depth
                first_write = lane_first_write(lane, fold)
                for rel in range(first_write - lane.depth, first_write):
                    init[(self.first + rel) % lane.depth] = self._code(rel)
                # Deep histories in block RAM where asked (yosys would put some in LUT RAM).
                block = self.block_ram_depth is not None and lane.depth >= self.block_ram_depth
                memory = Memory(shape=width, depth=lane.depth, init=init,
                                attrs={"ram_style": "block"} if block else None)
                m.submodules[f"{name}_history"] = memory
                read = memory.read_port()
                data = Signal(width, name=f"{name}_data", reset_less=True)
                m.d.comb += read.addr.eq(address)
                m.d.sync += data.eq(read.data)
                data_of[s, lane.index] = data
                memories.append((lane, memory, at_phase))

                x = Signal(width, name=f"{name}_x", reset_less=True)
                m.d.sync += x.eq(data ^ codes[2])
                if layout.mark_chain == "rows":
                    marked.append((name, x, en4 if partial else None))
                else:
                    products.append(self._mark(m, name, x, en4 if partial else None))

            if layout.mark_chain == "rows":
                previous = self._rows_stage(m, f"s{s}", marked, at_phase, previous)
                continue
            # The stage's mark vector: loaded with the previous stage's (complete for the heap that
            # moves on) and this heap's first marks, then ORed with one mark per lane per clock.
            marks = Signal(bits, name=f"s{s}_marks", reset_less=True)
            combined = products[0]
            for product in products[1:]:
                combined = combined | product
            m.d.sync += marks.eq(Mux(load, 0 if previous is None else previous, marks) | combined)
            previous, complete, vector = marks, load, marks
        if previous is None:  # every term is recent: nothing is marked before the final select
            return Const(0, bits), Const(0, _groups(bits)), memories, data_of, token
        if layout.mark_chain == "rows":
            # The last stage hands its rows on a group per clock: keep all but the last group, and
            # the heap's vector is complete in the clock that the last group is in the stream register.
            stream, group = previous
            held = [Signal(len(stream), name=f"chain_rows{g}", reset_less=True) for g in range(layout.drain_clocks - 1)]
            for g, register in enumerate(held):
                with m.If(group == g):
                    m.d.sync += register.eq(stream)
            complete = group == layout.drain_clocks - 1
            vector = self._in_mex_order(Cat(*held, stream)[: layout.mark_rows * ROW])
        # The last stage's vector is complete: hold it for the extraction, and which of its groups
        # are fully marked (the extraction starts from these).
        chain = Signal(bits, name="chain_marks", reset_less=True)
        full = Signal(_groups(bits), name="chain_full", reset_less=True)
        with m.If(complete):
            m.d.sync += [chain.eq(vector), full.eq(_full_groups(vector))]
        return chain, full, memories, data_of, token

    def _rows_stage(self, m, name: str, lanes, at_phase, previous):
        """One stage of the ``rows`` mark chain; returns its row stream register and the group it holds.

        Each lane ORs the mark of its code into one of two small memories of
        rows (code c is bit c & 15 of row c >> 4: a read-modify-write in one
        clock, so an asynchronous read: LUT RAM), the two taking turns by
        slot.  In the next slot the other memory marks while this one hands
        its rows on, ``layout.rows_per_clock`` rows (a *group*) per clock for
        ``layout.drain_clocks`` clocks, and is cleared as it is read.  The
        stage ORs its lanes' groups with the previous stage's (held for a slot
        in a small delay memory) into its stream register.  So each lane's
        wires stay within its own memories, and the stages are linked by
        ``16 * rows_per_clock`` wires instead of a vector of every code.

        Clock t of stage s (any fold): ``k`` = (t - MARK) mod F; a term
        of phase j is marked in the clock with k = j, and group k of the
        previous heap's rows is handed on in the same clock (k < drain clocks).
        """
        layout = self.layout
        fold, rows, per_clock, drain = layout.fold, layout.mark_rows, layout.rows_per_clock, layout.drain_clocks
        width = ROW * per_clock
        # Counted from this stage's own phase token (as `load` is for vectors), so synthesis cannot
        # merge the stages' counters into one net across the chip.
        k = Signal(range(fold), name=f"{name}_k", init=-MARK % fold)
        group = Signal(range(fold), name=f"{name}_group", init=(-MARK - 1) % fold)  # k a clock ago: the stream's group
        turn = at_phase(MARK - 1)  # a new slot of marks starts in the next clock
        k_next = Mux(turn, 0, k + 1)
        m.d.sync += [k.eq(k_next), group.eq(k)]
        marks_first = (-MARK // fold) % 2  # the memory that marks in clock 0 (they swap every slot)
        handing = k < drain
        abits = (drain - 1).bit_length()

        stream = Signal(width, name=f"{name}_rows", reset_less=True)
        combined = Const(0, width)
        if previous is not None:
            # The previous stage's stream a slot later (F - 1 clocks in this memory).
            before, _ = previous
            delay = Memory(shape=width, depth=drain, init=[])
            m.submodules[f"{name}_delay"] = delay
            write, read = delay.write_port(), delay.read_port(domain="comb")
            m.d.comb += [write.addr.eq(group[:abits]), write.data.eq(before), write.en.eq(group < drain),
                         read.addr.eq(k[:abits])]
            combined = read.data
        for lane_name, x, enable in lanes:
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
            reads, turns = [[], []], []
            for memory_index in (0, 1):
                # Each memory's own turn, a toggle (synthesis cannot merge the copies: a stage's single
                # parity register reaching every memory's data and address was 5.7 ns of routing at
                # fold 8), and its address, registered a clock ahead (the row it marks, or the group it
                # hands on).
                marking = Signal(name=f"{lane_name}_marking{memory_index}", init=marks_first == memory_index)
                at = Signal(max(abits, 1), name=f"{lane_name}_at{memory_index}", reset_less=True)
                m.d.sync += [marking.eq(marking ^ turn),
                             at.eq(Mux(marking ^ turn, address_code, k_next))]
                for b in range(per_clock):
                    memory = Memory(shape=ROW, depth=drain, init=[])
                    m.submodules[f"{lane_name}_rows{memory_index}_{b}"] = memory
                    write, read = memory.write_port(), memory.read_port(domain="comb")
                    m.d.comb += [read.addr.eq(at[:abits]), write.addr.eq(at[:abits]),
                                 write.data.eq(Mux(marking, read.data | low, 0)),
                                 write.en.eq(Mux(marking, banks[b], handing))]
                    reads[memory_index].append(read.data)
                turns.append(marking)
            combined = combined | Mux(turns[0], Cat(*reads[1]), Cat(*reads[0]))  # the memory handing on
        m.d.sync += stream.eq(combined)
        return stream, group

    def _rom(self, m, name, phase, words, abits, width):
        """The lane's per-phase constants, one clock after ``phase`` (a ROM; plain constants at fold 1).

        A word: the read address constant, the XOR constant, and an enable bit
        (0 for a phase without a term, and in the ROM's output register before
        its first read).
        """
        fold = self.layout.fold
        if fold == 1:
            a, c, e = words[0]
            return Const(a, abits), Const(c, width), Const(e, 1)
        packed = [0] * fold
        for j, (a, c, e) in words.items():
            packed[j] = a | c << abits | e << (abits + width)
        rom = Memory(shape=abits + width + 1, depth=fold, init=packed)
        m.submodules[f"{name}_terms"] = rom
        port = rom.read_port(domain="comb")
        # An explicit register (starting at 0: no term) rather than the memory's own output register,
        # whose value before the first read is not defined everywhere.
        word = Signal(abits + width + 1, name=f"{name}_word")
        m.d.comb += port.addr.eq(phase)
        m.d.sync += word.eq(port.data)
        return word[:abits], word[abits : abits + width], word[abits + width]

    def _mark(self, m, name: str, x, enable):
        """The mark of code ``x`` (one bit per code of ``plan.mex_order``), from registered halves.

        ``x`` is decoded into two registered one-hot halves, ``high`` (x >> 4)
        and ``low`` (x & 15); the mark of code c is ``high[c >> 4] & low[c & 15]``.
        Each mark bit is then an AND of two registers, so a four-input LUT ORs
        the marks of two lanes, and a stage's vector update (load, its own bit,
        the previous stage's bit and two per lane) maps to about (2 L + 2) / 3
        LUTs per bit for L lanes, where decoding a whole code per bit took two
        or three.  ``enable`` (for lanes with an empty phase) clears ``high``.
        """
        rows = self.layout.mark_rows
        high_code, low_code = x[4:], x[:4]
        if self.decoder == "compare":
            high_hot = Cat(high_code == j for j in range(rows))
            low_hot = Cat(low_code == j for j in range(16))
        else:
            span = max(1, (rows - 1).bit_length())
            shifted = Const(1, 1) << high_code[:span]
            high_hot = shifted[:rows] if len(high_code) <= span else Mux(high_code < rows, shifted[:rows], 0)
            low_hot = Const(1, 1) << low_code
        high = Signal(rows, name=f"{name}_high", reset_less=True)
        low = Signal(16, name=f"{name}_low", reset_less=True)
        m.d.sync += [high.eq(high_hot if enable is None else Mux(enable, high_hot, 0)), low.eq(low_hot)]
        return self._in_mex_order(Cat(Mux(high[j], low, 0) for j in range(rows)))  # bit c: code c is marked

    def _in_mex_order(self, grid):
        """The mark vector (bit i: code ``plan.mex_order[i]``) of ``grid`` (bit c: code c)."""
        order = self.plan.mex_order
        if order == tuple(range(len(grid))):
            return grid
        return Cat(grid[code] for code in order)

    def _extract(self, m, marks, full, order):
        """The lowest ``layout.candidates`` unmarked codes, two per step of :data:`EXTRACT` clocks.

        Returns ``(code, valid)`` registers; candidate k is there from
        ``layout.candidate_clock(k)`` on.  A step (``full`` says which groups
        of the mark vector have no clear bit):

        1. mark the previous step's two candidates; the two lowest open groups;
        2. their bits;
        3. the lowest clear bit of the first group, and the next one there or
           the lowest of the second group.

        Every carry chain is at most one group long.
        """
        layout = self.layout
        groups = _groups(len(marks))
        width = len(marks)
        found = []
        vector, full, previous = marks, full, None
        for step in range(-(-layout.candidates // 2) + 1):
            name = f"step{step}"
            if previous is not None:
                # Clock 1 (continued from the previous step): mark its candidates and emit their codes.
                (held, held_full, group1, group2, word1, word2, low1, next1, low2, in_first,
                 filled1_once, filled1_twice, filled2) = previous
                new1 = word1 | low1 | Mux(in_first, next1, 0)
                new2 = word2 | Mux(in_first, 0, low2)
                parts = [_padded(held)[i * GROUP : (i + 1) * GROUP] for i in range(groups)]
                vector = Signal(width, name=f"{name}_marks_in")
                full = Signal(groups, name=f"{name}_full_in")
                m.d.comb += [
                    vector.eq(Cat(Mux(group1[i], new1, Mux(group2[i], new2, part))
                                  for i, part in enumerate(parts))[:width]),
                    full.eq(held_full | Mux(Mux(in_first, filled1_twice, filled1_once), group1, 0)
                            | Mux(~in_first & filled2, group2, 0)),
                ]
                for which, (group, local, valid) in enumerate((
                    (group1, low1, group1.any()),
                    (Mux(in_first, group1, group2), Mux(in_first, next1, low2), in_first | group2.any()),
                )):
                    k = 2 * (step - 1) + which
                    if k >= layout.candidates:
                        break
                    code = Signal(layout.code_bits, name=f"cand{k}_code", reset_less=True)
                    present = Signal(name=f"cand{k}_valid", reset_less=True)
                    m.d.sync += [code.eq(self._code_of_index(m, Cat(_encode(local), _encode(group)), order, k)),
                                 present.eq(valid)]
                    found.append((code, present))
            if step * 2 >= layout.candidates:
                break
            # Clock 1: the two lowest open groups.
            open_groups = _LowestSet(m, ~full, 2, f"{name}_groups")
            stage1 = [Signal(width, name=f"{name}_marks_1", reset_less=True),
                      Signal(groups, name=f"{name}_full_1", reset_less=True),
                      Signal(groups, name=f"{name}_group1_1", reset_less=True),
                      Signal(groups, name=f"{name}_group2_1", reset_less=True)]
            m.d.sync += [stage1[0].eq(vector), stage1[1].eq(full), stage1[2].eq(open_groups.nth(0)),
                         stage1[3].eq(open_groups.nth(1))]
            held, held_full, group1, group2 = stage1
            # Clock 2: the bits of both groups.
            stage2 = [Signal(width, name=f"{name}_marks_2", reset_less=True),
                      Signal(groups, name=f"{name}_full_2", reset_less=True),
                      Signal(groups, name=f"{name}_group1_2", reset_less=True),
                      Signal(groups, name=f"{name}_group2_2", reset_less=True),
                      Signal(GROUP, name=f"{name}_word1", reset_less=True),
                      Signal(GROUP, name=f"{name}_word2", reset_less=True)]
            m.d.sync += [stage2[0].eq(held), stage2[1].eq(held_full), stage2[2].eq(group1), stage2[3].eq(group2),
                         stage2[4].eq(word_of(held, group1)), stage2[5].eq(word_of(held, group2))]
            held, held_full, group1, group2, word1, word2 = stage2
            # Clock 3: the two lowest clear bits, and whether each group fills up.  The groups' words
            # pass on too, so the next step marks its candidates in registers: clock 2's AND-OR over
            # every group again there, in front of the marks' multiplexers, held .6 at fold 8 to 73.16 MHz.
            clear1 = _LowestSet(m, ~word1, 3, f"{name}_clear1")
            clear2 = _LowestSet(m, ~word2, 2, f"{name}_clear2")
            low1, next1, low2 = clear1.nth(0), clear1.nth(1), clear2.nth(0)
            stage3 = [Signal(width, name=f"{name}_marks_3", reset_less=True),
                      Signal(groups, name=f"{name}_full_3", reset_less=True),
                      Signal(groups, name=f"{name}_group1_3", reset_less=True),
                      Signal(groups, name=f"{name}_group2_3", reset_less=True),
                      Signal(GROUP, name=f"{name}_word1_3", reset_less=True),
                      Signal(GROUP, name=f"{name}_word2_3", reset_less=True),
                      Signal(GROUP, name=f"{name}_low1", reset_less=True),
                      Signal(GROUP, name=f"{name}_next1", reset_less=True),
                      Signal(GROUP, name=f"{name}_low2", reset_less=True),
                      Signal(name=f"{name}_in_first", reset_less=True),
                      Signal(name=f"{name}_filled1_once", reset_less=True),
                      Signal(name=f"{name}_filled1_twice", reset_less=True),
                      Signal(name=f"{name}_filled2", reset_less=True)]
            # Whether each group fills up once its candidates are marked.
            m.d.sync += [a.eq(b) for a, b in zip(stage3, (
                held, held_full, group1, group2, word1, word2, low1, next1, low2,
                group1.any() & clear1.at_least(2), ~clear1.at_least(2), ~clear1.at_least(3), ~clear2.at_least(2)))]
            previous = stage3
        return found

    def _code_of_index(self, m, index, order, k):
        """The stored code at position ``index`` of ``order`` (the index itself for u8 storage)."""
        if order == tuple(range(len(order))):
            return index
        table = Memory(shape=self.layout.code_bits, depth=len(order), init=order)  # u16: common codes only
        m.submodules[f"cand{k}_codes"] = table
        lookup = table.read_port(domain="comb")
        m.d.comb += lookup.addr.eq(index)
        return lookup.data

    def _select(self, m, candidates, recent, token):
        """Check the candidates against the recent terms' marks, pick the value; warm-up and outputs.

        Each candidate is compared with every recent term's mark as soon as both
        are known, while it waits for the last candidate.  Then the first few
        unmarked candidates are shortlisted; in the select clock (the only
        feedback loop) the shortlist is compared with the marks of the values
        that arrived last, and the first one left is the value.
        """
        layout = self.layout
        width = layout.code_bits
        newest = recent[0]
        _, at_phase, _ = self._phase_token(m, "out", token)
        finish = at_phase(layout.select_clock)
        shortlist_clock = layout.shortlist_clock
        late = layout.late_terms
        early = [t for t in layout.recent if t not in late]

        def marked(code, terms, clock):
            """Whether any of ``terms`` marks ``code``, in ``clock``."""
            return Cat((code ^ t.code) == recent[layout.recent_register(t.offset, clock)] for t in terms).any()

        # Compare every candidate with each early term once both are known, until the shortlist clock.
        checked = []
        for k, (code, valid) in enumerate(candidates):
            clock = layout.candidate_clock(k)
            blocked = ~valid
            pending = list(early)
            while clock < shortlist_clock:
                now = [t for t in pending if layout.available(t.offset) <= clock]
                pending = [t for t in pending if t not in now]
                later_code = Signal(width, name=f"cand{k}_code_c{clock}", reset_less=True)
                later_blocked = Signal(name=f"cand{k}_blocked_c{clock}", reset_less=True)
                m.d.sync += [later_code.eq(code), later_blocked.eq(blocked | marked(code, now, clock))]
                code, blocked, clock = later_code, later_blocked, clock + 1
            assert not pending, "an early term arrives after the shortlist"
            checked.append((code, blocked))

        # The shortlist: the first len(late) + 1 candidates not marked by an early term.
        shortlist = []
        remaining = Signal(len(checked), name="unmarked")
        m.d.comb += remaining.eq(Cat(~blocked for _, blocked in checked))
        for i in range(min(len(late) + 1, len(checked))):
            pick = _LowestSet(m, remaining, 1, f"short{i}_pick").nth(0)
            code = Signal(width, name=f"short{i}_code", reset_less=True)
            ok = Signal(name=f"short{i}_ok", reset_less=True)
            choice = Const(0, width)
            for k, (candidate, _) in enumerate(checked):
                choice = choice | Mux(pick[k], candidate, 0)
            m.d.sync += [code.eq(choice), ok.eq(remaining.any())]
            shortlist.append((code, ok))
            rest = Signal(len(checked), name=f"short{i}_rest")
            m.d.comb += rest.eq(remaining & ~pick)
            remaining = rest

        # The select clock: the late terms' marks, then the first shortlisted candidate left.
        select = layout.select_clock
        free = Signal(len(shortlist), name="free")
        m.d.comb += free.eq(Cat(ok & ~marked(code, late, select) for code, ok in shortlist))
        none = ~free.any()
        result = Const(0, width)
        for k, (code, _) in reversed(list(enumerate(shortlist))):
            result = Mux(free[k], code, result)

        warmup = layout.warmup_values
        warm = Signal(range(warmup + 1), name="warmup_left", init=warmup)
        if warmup:
            injected = Memory(shape=width, depth=warmup, init=[self._code(h) for h in range(-warmup, 0)])
            m.submodules.warmup_values = injected
            port = injected.read_port(domain="comb")
            m.d.comb += port.addr.eq(warmup - warm)
            inject = port.data
        else:
            inject = Const(0, width)

        error = Signal(name="error_flag")
        valid = Signal(name="valid_flag")
        computing = (warm == 0) & ~error
        m.d.sync += valid.eq(finish & computing & ~none)
        with m.If(finish):
            with m.If(warm != 0):
                m.d.sync += [warm.eq(warm - 1), newest.eq(inject)]
            with m.Elif(~error & ~none):
                m.d.sync += newest.eq(result)
            with m.If((warm != 0) | (~error & ~none)):
                m.d.sync += [recent[k].eq(recent[k - 1]) for k in range(1, len(recent))]
            with m.If(computing & none):
                m.d.sync += error.eq(1)
        heap_class = None
        if self.plan.heap_classes == 2:  # positional rarity: the class of the heap whose value is in newest
            heap_class = Signal(name="newest_class", init=self.plan.table.rarity.heap_class(
                self.first - layout.warmup_values - 1))
            with m.If(finish & ((warm != 0) | (~error & ~none))):
                m.d.sync += heap_class.eq(~heap_class)
        m.d.comb += [self.valid.eq(valid), self.error.eq(error),
                     self.value.eq(self._decode_value(newest, heap_class))]

    def _decode_value(self, code, heap_class=None):
        """The value common at the heap stored as ``code``: restores the dropped bit of u8 storage,
        set when the value without it is rare there (positional rarity: at a heap of ``heap_class``)."""
        encoding = self.plan.encoding
        if encoding.kind == "u16":
            return code
        b = encoding.dropped_bit
        low, high = code[:b], code[b:]
        bare = Cat(low, Const(0, 1), high)
        parity = (bare & encoding.mask).xor()
        return Cat(low, ~parity if heap_class is None else ~(parity ^ heap_class), high)


def _groups(bits: int) -> int:
    return -(-bits // GROUP)


def _padded(vector):
    """``vector`` extended to whole groups with set bits (padding counts as marked)."""
    pad = _groups(len(vector)) * GROUP - len(vector)
    return Cat(vector, Const((1 << pad) - 1, pad)) if pad else vector


def _full_groups(vector):
    """One bit per group of ``vector``: all its bits are set."""
    padded = _padded(vector)
    return Cat(padded[i * GROUP : (i + 1) * GROUP].all() for i in range(_groups(len(vector))))


def word_of(vector, onehot):
    """The group of ``vector`` that the one-hot ``onehot`` selects (an AND-OR: no binary index)."""
    padded = _padded(vector)
    word = Const(0, GROUP)
    for i in range(len(onehot)):
        word = word | Mux(onehot[i], padded[i * GROUP : (i + 1) * GROUP], 0)
    return word


class _LowestSet:
    """The lowest few set bits of a value, by a log-step prefix count (no carry chains).

    ``at_least(k)`` (k <= ``most``) is true when ``k`` bits are set;
    ``nth(j)`` (j < ``most``) is the one-hot of the ``j``-th lowest set bit
    (zero when there are not that many).  Each of the log2(width) steps is
    one LUT level per bit, and in amaranth.sim a handful of word operations.
    """

    def __init__(self, m, value, most: int, name: str):
        width = len(value)
        self.value = Signal(width, name=f"{name}_bits")
        m.d.comb += self.value.eq(value)
        # counts[k - 1][i]: at least k of bits 0 ... i are set (inclusive prefix).
        counts = [self.value] + [Const(0, width)] * (most - 1)
        shift, level = 1, 0
        while shift < width:
            earlier = [(c << shift)[:width] for c in counts]
            combined = []
            for k in range(1, most + 1):
                term = counts[k - 1] | earlier[k - 1]
                for i in range(1, k):
                    term = term | (counts[i - 1] & earlier[k - i - 1])
                step = Signal(width, name=f"{name}_p{level}_{k}")
                m.d.comb += step.eq(term)
                combined.append(step)
            counts, shift, level = combined, shift * 2, level + 1
        self.counts = counts
        self.most = most

    def at_least(self, k: int):
        return self.counts[k - 1][-1]

    def nth(self, j: int):
        """One-hot of the (j+1)-th lowest set bit: set, with exactly j set bits below it."""
        below = [(c << 1)[: len(self.value)] for c in self.counts]  # exclusive prefix counts
        exactly = ~below[0] if j == 0 else below[j - 1] & ~below[j]
        return self.value & exactly


def _encode(onehot):
    """Binary index of a one-hot value (for each index bit, an OR of the positions that have it)."""
    bits = max(1, (len(onehot) - 1).bit_length())
    return Cat((onehot & sum(1 << k for k in range(len(onehot)) if k >> b & 1)).any() for b in range(bits))
