"""The speculative kernel as an Amaranth component: one value per ``fold`` clocks.

Everything is decided by :func:`~octalgen.hdl.layout.layout_pipeline`; this
module builds what it describes around two seams:

* the lanes (mark units): each reads its terms' values from its own slice of
  the history and XORs them with the terms' constants (:meth:`SpeculativePipeline._lane`);
* the mark chain (a :class:`MarkChain`), which turns the lanes' codes into a
  heap's mark vector, stage by stage: :mod:`.vector_chain` or :mod:`.rows_chain`;
* after the chain, the lowest unmarked codes (:mod:`.mex`), checked against
  the recent terms, and the value picked in the select clock
  (:meth:`SpeculativePipeline._select`).
"""

from __future__ import annotations

from typing import Protocol

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import Out

from ..errors import InputError
from ..plan import KernelPlan
from .layout import DATA_VALID, LANES_PER_STAGE, PipelineLayout, lane_first_write, lane_skipped_writes, layout_pipeline
from .mex import LowestSet, extract_candidates, full_groups, groups
from .rows_chain import RowsChain
from .vector_chain import DECODERS, VectorChain

__all__ = ["MarkChain", "SpeculativePipeline"]


class MarkChain(Protocol):
    """How the stages of the chain turn their lanes' codes into a heap's mark vector.

    The kernel calls, for each stage in order, :meth:`begin_stage`, then
    :meth:`add_lane` for each of its lanes, then :meth:`end_stage`; after the
    last stage, :meth:`result`.  Each call adds its registers and memories to
    the kernel's module ``m``.  Implementations: :class:`~.vector_chain.VectorChain`,
    :class:`~.rows_chain.RowsChain` (:data:`~octalgen.hdl.layout.MARK_CHAINS`).
    """

    def begin_stage(self, m: Module, s: int, at_phase) -> None:
        """Start stage ``s``; ``at_phase(c)`` is true in its clock c of the slot."""

    def add_lane(self, m: Module, name: str, x, enable) -> None:
        """Mark code ``x`` (a register, valid :data:`~octalgen.hdl.layout.MARK` - 2 clocks after its
        term's phase) when ``enable`` is high (``enable`` None: in every clock)."""

    def end_stage(self, m: Module, s: int) -> None:
        """Finish stage ``s``: combine its lanes' marks with the previous stage's."""

    def result(self, m: Module):
        """The heap's mark vector (bit i: code ``plan.mex_order[i]``) and the condition in which it is
        complete, or None when the chain has no stage."""


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
        How the vector chain decodes the halves of a code into their one-hots
        (see :data:`~octalgen.hdl.vector_chain.DECODERS`).
    lanes_per_stage : int, optional
        Mark units per chain stage (see :data:`~octalgen.hdl.layout.LANES_PER_STAGE`);
        fewer spread the wires of a stage's vector update over more, smaller stages.
    mark_chain : {"vector", "rows"}
        How a stage hands its marks to the next (see
        :data:`~octalgen.hdl.layout.MARK_CHAINS`, :mod:`.vector_chain`, :mod:`.rows_chain`).

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
    neighbour (see :meth:`.VectorChain.add_lane` for why each mark is a pair
    of one-hot halves; with ``mark_chain="rows"`` the stages hand the vector
    on a few rows per clock instead: :mod:`.rows_chain`); each mark
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

    def __init__(
        self,
        plan: KernelPlan,
        history,
        *,
        fold: int = 1,
        first: int | None = None,
        decoder: str = "shift",
        block_ram_depth: int | None = None,
        lanes_per_stage: int = LANES_PER_STAGE,
        mark_chain: str = "vector",
    ):
        self._MustUse__silence = True  # no "never used" warning when the checks below refuse the input
        first = plan.start if first is None else first
        if first < plan.start:
            raise InputError(
                f"the kernel for {plan.game.code} can start at heap {plan.start} at the earliest, not {first}"
            )
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
                raise InputError(
                    f"the preloaded G({i}) = {history[i]} cannot be stored as {encoding.describe()}: "
                    "too large, or rare past the table's last rare value"
                )
        super().__init__(
            {
                "value": Out(self.value_bits),
                "valid": Out(1),
                "error": Out(1),
            }
        )
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
        return (
            f"octal_{code}_f{self.fold}"
            + ("" if lanes == LANES_PER_STAGE else f"_l{lanes}")
            + ("" if self.layout.mark_chain == "vector" else f"_{self.layout.mark_chain}")
        )

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
        width = layout.code_bits

        # The output register holds the newest value; `recent[k]` the one k slots older.
        max_recent = max((r.offset for r in layout.recent), default=1)
        before = -layout.warmup_values - 1  # the heap whose value the output register starts with
        recent = [Signal(width, name=f"recent_{k}", init=self._code(before - k)) for k in range(max_recent)]
        newest = recent[0]

        chain_out, chain_full, memories, data_of, token = self._chain(m)
        self._feed_histories(m, memories, data_of, newest)

        candidates = extract_candidates(m, layout, chain_out, chain_full, self.plan.mex_order)
        self._select(m, candidates, recent, token)
        return m

    def _feed_histories(self, m, memories, data_of, newest):
        """Write each lane's history memory with the stream of its source term's reads, or the fresh values."""
        layout = self.layout
        fold = layout.fold
        for lane, memory, at_phase in memories:
            write = memory.write_port()
            pointer = Signal(
                lane.address_bits,
                name=f"wptr_{lane.stage}_{lane.index}",
                init=(self.first + lane_first_write(lane, fold)) % lane.depth,
            )
            source = lane.source
            if source.fresh:
                data = newest
                enable = at_phase(layout.latency)
            else:
                # The source lane's read of that term, once its read pipeline holds a real read.  The
                # slots before that are counted here, in each lane: a valid bit carried with the
                # reads would be the same register in every full lane, which yosys merges into one
                # net across the chip, a critical path.
                data = data_of[source.stage, source.lane]
                enable = at_phase(source.phase + DATA_VALID)
                skipped = lane_skipped_writes(lane, fold)
                if skipped:
                    left = Signal(range(skipped + 1), name=f"wskip_{lane.stage}_{lane.index}", init=skipped)
                    m.d.sync += left.eq(left - (enable & (left != 0)))
                    enable = enable & (left == 0)
            m.d.comb += [write.addr.eq(pointer), write.data.eq(data), write.en.eq(enable)]
            m.d.sync += pointer.eq(pointer + enable)

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

    def _chain(self, m):
        """The stages; returns the chain's mark vector and full groups, the lane memories, their
        read data, and the last stage's phase token.

        Each stage's lanes read their terms' values and XOR them with the
        terms' constants; the mark chain (:meth:`_mark_chain`) turns each
        lane's code into marks and hands them from stage to stage.
        """
        layout = self.layout
        fold, bits = layout.fold, layout.mark_bits
        chain = self._mark_chain()
        memories, data_of = [], {}
        token = None
        for s, stage in enumerate(layout.stages):
            token = self._phase_token(m, f"s{s}", token)
            phase, at_phase, delay = token
            # slot(t) = t // fold, counted here from this stage's own phase.
            slot = Signal(max(lane.address_bits for lane in stage), name=f"s{s}_slot")
            m.d.sync += slot.eq(slot + at_phase(fold - 1))
            chain.begin_stage(m, s, at_phase)
            for lane in stage:
                name = f"s{s}_l{lane.index}"
                memory, data, x, enable = self._lane(m, name, s, lane, phase, delay, slot)
                data_of[s, lane.index] = data
                memories.append((lane, memory, at_phase))
                chain.add_lane(m, name, x, enable)
            chain.end_stage(m, s)
        result = chain.result(m)
        if result is None:  # every term is recent: nothing is marked before the final select
            return Const(0, bits), Const(0, groups(bits)), memories, data_of, token
        vector, complete = result
        # The last stage's vector is complete: hold it for the extraction, and which of its groups
        # are fully marked (the extraction starts from these).
        marks = Signal(bits, name="chain_marks", reset_less=True)
        full = Signal(groups(bits), name="chain_full", reset_less=True)
        with m.If(complete):
            m.d.sync += [marks.eq(vector), full.eq(full_groups(vector))]
        return marks, full, memories, data_of, token

    def _mark_chain(self) -> MarkChain:
        """The mark chain that :attr:`layout` names (:data:`~octalgen.hdl.layout.MARK_CHAINS`)."""
        if self.layout.mark_chain == "rows":
            return RowsChain(self.layout, self.plan.mex_order)
        return VectorChain(self.layout, self.plan.mex_order, self.decoder)

    def _lane(self, m, name: str, s: int, lane, phase, delay: int, slot):
        """One mark unit: its term ROM, its slice of the history and the XOR of a value with its term's constant.

        Returns its history memory (written by :meth:`elaborate`), the register
        of its reads (which feed other lanes' memories), the register of the
        code to mark, and its enable (None for a lane with a term in every
        phase: it marks in every clock).
        """
        fold, width = self.layout.fold, self.layout.code_bits
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
        m.d.sync += [
            address.eq(slot[:abits] + rom_addr),
            codes[0].eq(rom_code),
            codes[1].eq(codes[0]),
            codes[2].eq(codes[1]),
            en1.eq(rom_en),
            en2.eq(en1),
            en3.eq(en2),
            en4.eq(en3),
        ]

        init = [0] * lane.depth
        first_write = lane_first_write(lane, fold)
        for rel in range(first_write - lane.depth, first_write):
            init[(self.first + rel) % lane.depth] = self._code(rel)
        # Deep histories in block RAM where asked (yosys would put some in LUT RAM).
        block = self.block_ram_depth is not None and lane.depth >= self.block_ram_depth
        memory = Memory(shape=width, depth=lane.depth, init=init, attrs={"ram_style": "block"} if block else None)
        m.submodules[f"{name}_history"] = memory
        read = memory.read_port()
        data = Signal(width, name=f"{name}_data", reset_less=True)
        m.d.comb += read.addr.eq(address)
        m.d.sync += data.eq(read.data)

        x = Signal(width, name=f"{name}_x", reset_less=True)
        m.d.sync += x.eq(data ^ codes[2])
        return memory, data, x, en4 if len(lane.terms) < fold else None

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
        for k, (candidate, valid) in enumerate(candidates):
            clock = layout.candidate_clock(k)
            code, blocked = candidate, ~valid
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
            pick = LowestSet(m, remaining, 1, f"short{i}_pick").nth(0)
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
            heap_class = Signal(
                name="newest_class", init=self.plan.table.rarity.heap_class(self.first - layout.warmup_values - 1)
            )
            with m.If(finish & ((warm != 0) | (~error & ~none))):
                m.d.sync += heap_class.eq(~heap_class)
        m.d.comb += [self.valid.eq(valid), self.error.eq(error), self.value.eq(self._decode_value(newest, heap_class))]

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
