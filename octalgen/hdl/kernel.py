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
from .layout import DATA_VALID, MARK, PipelineLayout, lane_first_write, layout_pipeline

#: Decoder styles: ``shift`` (one shift: fast in amaranth.sim) or ``compare`` (one
#: comparator per code: fast in Verilator).  Both give the same circuit after synthesis.
DECODERS = ("shift", "compare")


class SpeculativeKernel(wiring.Component):
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
    decoder : {"shift", "compare"}
        How a value is decoded into its mark (see :data:`DECODERS`).

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
    to three mark units that OR one decoded mark per clock into an
    accumulator, passes the mark vector from neighbour to neighbour; each mark
    unit reads its values from its own slice of the history (a block RAM with
    one read and one write per clock).  After the chain, the lowest few
    unmarked codes are extracted one per pipeline stage, and a single
    compare-and-select against the marks of the most recent values (the only
    feedback loop) picks the value.
    """

    def __init__(self, plan: KernelPlan, history, *, fold: int = 1, first: int | None = None,
                 decoder: str = "shift"):
        first = plan.start if first is None else first
        if first < plan.start:
            raise InputError(f"the kernel for {plan.game.code} can start at heap {plan.start} at the earliest, "
                             f"not {first}")
        if len(history) < first:
            raise InputError(f"the preloaded history has {len(history)} values; heap {first} needs {first}")
        if decoder not in DECODERS:
            raise InputError(f"unknown decoder {decoder!r}; choose {' or '.join(DECODERS)}")
        self.plan = plan
        self.layout: PipelineLayout = layout_pipeline(plan, fold)
        self.first = first
        self.decoder = decoder
        low = first + self.layout.oldest_index
        self._codes = {i: plan.encoding.encode(int(history[i])) for i in range(max(low, 0), first)}
        too_wide = [i for i, code in self._codes.items() if not 0 <= code < plan.encoding.capacity]
        if too_wide:
            raise InputError(f"G({too_wide[0]}) = {history[too_wide[0]]} does not fit {plan.encoding.describe()}")
        super().__init__({
            "value": Out(self.value_bits),
            "valid": Out(1),
            "error": Out(1),
        })

    @property
    def fold(self) -> int:
        return self.layout.fold

    @property
    def latency(self) -> int:
        """Clocks from configuration to the clock in which G(first) is valid."""
        return self.layout.latency

    @property
    def module_name(self) -> str:
        """Name of the emitted Verilog module (and file), e.g. ``octal_0_6_f25`` for ``.6`` at fold 25."""
        code = self.plan.game.code
        code = ("0" + code if code.startswith(".") else code).replace(".", "_")
        return f"octal_{code}_f{self.fold}"

    @property
    def value_bits(self) -> int:
        """Width of :attr:`value`: 9 for u8 storage (values below 512), 16 for u16."""
        return 9 if self.plan.encoding.kind == "u8" else 16

    def _code(self, relative: int) -> int:
        """The stored code of G(first + relative) for the preload (0 before heap 0)."""
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

        chain_out, memories, data_of = self._chain(m, newest)

        # History memories: each written with the stream of its source term or the fresh values.
        for lane, memory, stage_phase, primed in memories:
            write = memory.write_port()
            pointer = Signal(lane.address_bits, name=f"wptr_{lane.stage}_{lane.index}",
                             init=(self.first + lane_first_write(lane, fold)) % lane.depth)
            source = lane.source
            if source.fresh:
                data, when = newest, layout.latency % fold
                enable = stage_phase == when
            else:
                data = data_of[source.stage, source.lane]
                when = (source.phase + DATA_VALID) % fold
                enable = (stage_phase == when) & primed
            m.d.comb += [write.addr.eq(pointer), write.data.eq(data), write.en.eq(enable)]
            m.d.sync += pointer.eq(pointer + enable)

        candidates = self._extract(m, chain_out, order)
        self._select(m, candidates, recent)
        return m

    def _counters(self, m, name: str, slot_bits: int):
        """A local phase counter (and slot counter) for one stage, so no control net spans the chip."""
        fold = self.layout.fold
        phase = Signal(range(fold), name=f"{name}_phase")
        slot = Signal(slot_bits, name=f"{name}_slot")
        if fold > 1:
            wrap = phase == fold - 1
            m.d.sync += phase.eq(Mux(wrap, 0, phase + 1))
        else:
            wrap = Const(1)
        if slot_bits:
            m.d.sync += slot.eq(slot + wrap)
        return phase, slot

    def _chain(self, m, newest):
        """The stages; returns the chain's mark vector, the lane memories and their read data."""
        layout = self.layout
        fold, width, bits = layout.fold, layout.code_bits, layout.mark_bits
        memories, data_of = [], {}
        previous = None
        for s, stage in enumerate(layout.stages):
            slot_bits = max(lane.address_bits for lane in stage)
            phase, slot = self._counters(m, f"s{s}", slot_bits)
            primed_shift = Signal(3, name=f"s{s}_primed")  # ones from clock 3 on: the read pipeline is full
            m.d.sync += primed_shift.eq(Cat(1, primed_shift[:2]))
            primed = primed_shift[2]
            load = phase == MARK % fold  # the mark of phase 0 arrives: a new heap starts
            accumulators = []
            for lane in stage:
                name = f"s{s}_l{lane.index}"
                partial = len(lane.terms) < fold
                abits = lane.address_bits
                # Term ROM, one word per phase: read address constant, XOR constant, enable.
                words = {}
                for t in lane.terms:
                    step = 1 if t.phase == fold - 1 else 0  # the slot counter advances before the address is formed
                    words[t.phase] = ((self.first - s - t.offset - step) % lane.depth, t.code, 1)
                rom_addr, rom_code, rom_en = self._rom(m, name, phase, words, abits, width, partial)
                address = Signal(abits, name=f"{name}_addr", reset_less=True)
                code1 = Signal(width, name=f"{name}_code1", reset_less=True)
                code2 = Signal(width, name=f"{name}_code2", reset_less=True)
                en1, en2, en3 = (Signal(name=f"{name}_en{k}", reset_less=True) for k in (1, 2, 3))
                m.d.sync += [address.eq(slot[:abits] + rom_addr), code1.eq(rom_code), code2.eq(code1),
                             en1.eq(rom_en), en2.eq(en1), en3.eq(en2)]

                init = [0] * lane.depth
                first_write = lane_first_write(lane, fold)
                for rel in range(first_write - lane.depth, first_write):
                    init[(self.first + rel) % lane.depth] = self._code(rel)
                memory = Memory(shape=width, depth=lane.depth, init=init)
                m.submodules[f"{name}_history"] = memory
                read = memory.read_port()
                m.d.comb += read.addr.eq(address)
                data_of[s, lane.index] = read.data
                memories.append((lane, memory, phase, primed))

                x = Signal(width, name=f"{name}_x", reset_less=True)
                m.d.sync += x.eq(read.data ^ code2)
                mark = self._decode(x, self.plan.mex_order)
                if partial:
                    mark = Mux(en3, mark, 0)
                accumulator = Signal(bits, name=f"{name}_acc", reset_less=True)
                m.d.sync += accumulator.eq(Mux(load, 0, accumulator) | mark)
                accumulators.append(accumulator)

            marks = Signal(bits, name=f"s{s}_marks", reset_less=True)
            incoming = [previous] if previous is not None else []
            total = incoming + accumulators
            combined = total[0]
            for term in total[1:]:
                combined = combined | term
            with m.If(load):
                m.d.sync += marks.eq(combined)
            previous = marks
        if previous is None:  # every term is recent: nothing is marked before the final select
            previous = Const(0, bits)
        return previous, memories, data_of

    def _rom(self, m, name, phase, words, abits, width, partial):
        """The lane's per-phase constants, one clock after ``phase`` (a ROM; plain constants at fold 1)."""
        fold = self.layout.fold
        if fold == 1:
            a, c, e = words[0]
            return Const(a, abits), Const(c, width), Const(e, 1)
        packed = [0] * fold
        for j, (a, c, e) in words.items():
            packed[j] = a | c << abits | (e << (abits + width) if partial else 0)
        rom = Memory(shape=abits + width + partial, depth=fold, init=packed)
        m.submodules[f"{name}_terms"] = rom
        port = rom.read_port()
        m.d.comb += port.addr.eq(phase)
        word = port.data
        enable = word[abits + width] if partial else Const(1, 1)
        return word[:abits], word[abits : abits + width], enable

    def _decode(self, x, order):
        """The mark of code ``x`` as a vector with one bit per code of ``order``."""
        if self.decoder == "compare":
            return Cat(x == code for code in order)
        if order == tuple(range(len(order))) and len(order) == 1 << len(x):
            return Const(1, 1) << x
        span = max(order).bit_length()
        onehot = Mux(x < (1 << span), Const(1, 1) << x[:span], 0)
        return Cat(onehot[code] for code in order)

    def _extract(self, m, marks, order):
        """The lowest ``layout.candidates`` unmarked codes, one per pipeline stage, aligned at the end."""
        layout = self.layout
        width, count = layout.code_bits, layout.candidates
        vector = marks
        found = []
        for k in range(count):
            index, present, onehot = _lowest_zero(m, vector, f"cand{k}")
            code = Signal(width, name=f"cand{k}_code", reset_less=True)
            valid = Signal(name=f"cand{k}_valid", reset_less=True)
            rest = Signal(len(vector), name=f"cand{k}_marks", reset_less=True)
            if order == tuple(range(len(order))):
                code_of_index = index
            else:  # u16 storage: the mark vector holds only the common codes, in order
                table = Memory(shape=width, depth=len(order), init=order)
                m.submodules[f"cand{k}_codes"] = table
                lookup = table.read_port(domain="comb")
                m.d.comb += lookup.addr.eq(index)
                code_of_index = lookup.data
            m.d.sync += [code.eq(code_of_index), valid.eq(present), rest.eq(vector | onehot)]
            found.append((code, valid))
            vector = rest
        # Delay the earlier candidates so that all of them belong to the same heap.
        aligned = []
        for k, (code, valid) in enumerate(found):
            for d in range(count - 1 - k):
                later_code = Signal(width, name=f"cand{k}_code_d{d}", reset_less=True)
                later_valid = Signal(name=f"cand{k}_valid_d{d}", reset_less=True)
                m.d.sync += [later_code.eq(code), later_valid.eq(valid)]
                code, valid = later_code, later_valid
            aligned.append((code, valid))
        return aligned

    def _select(self, m, candidates, recent):
        """The final compare-and-select, the warm-up injection and the output ports."""
        layout = self.layout
        fold, width = layout.fold, layout.code_bits
        newest = recent[0]
        phase, _ = self._counters(m, "out", 0)
        finish = phase == layout.select_clock % fold

        # Candidate k is free unless a recent term marks it: the only logic after the feedback.
        free = Signal(len(candidates), name="free")
        m.d.comb += free.eq(Cat(
            present & ~Cat((code ^ term.code) == recent[term.offset - 1] for term in layout.recent).any()
            for code, present in candidates
        ))
        none = ~free.any()
        result = Const(0, width)
        for k, (code, _) in reversed(list(enumerate(candidates))):
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
                m.d.sync += warm.eq(warm - 1)
            with m.If(warm != 0):
                m.d.sync += newest.eq(inject)
            with m.Elif(~error & ~none):
                m.d.sync += newest.eq(result)
            with m.If((warm != 0) | (~error & ~none)):
                m.d.sync += [recent[k].eq(recent[k - 1]) for k in range(1, len(recent))]
            with m.If(computing & none):
                m.d.sync += error.eq(1)
        m.d.comb += [self.valid.eq(valid), self.error.eq(error), self.value.eq(self._decode_value(newest))]

    def _decode_value(self, code):
        """The common value stored as ``code`` (restores the dropped bit of u8 storage)."""
        encoding = self.plan.encoding
        if encoding.kind == "u16":
            return code
        b = encoding.dropped_bit
        low, high = code[:b], code[b:]
        bare = Cat(low, Const(0, 1), high)
        parity = (bare & encoding.mask).xor()
        return Cat(low, ~parity, high)


def _lowest_zero(m, vector, name: str, group: int = 16):
    """The lowest clear bit of ``vector``: its index, whether there is one, and its one-hot.

    The vector is cut into groups of ``group`` bits: the lowest group with a
    clear bit is found first (a short adder over the groups), then the lowest
    clear bit of that group alone (a short adder), so no carry chain or OR
    tree spans the whole vector.
    """
    n = len(vector)
    groups = -(-n // group)
    pad = groups * group - n
    padded = Cat(vector, Const((1 << pad) - 1, pad)) if pad else vector  # padding counts as marked
    local_bits = (group - 1).bit_length()
    full = Signal(groups, name=f"{name}_full")
    chosen = Signal(groups, name=f"{name}_group")  # one-hot: the lowest group with a clear bit
    word = Signal(group, name=f"{name}_word")  # that group's bits
    local = Signal(group, name=f"{name}_local")  # one-hot: its lowest clear bit
    index = Signal(local_bits + max(1, (groups - 1).bit_length()), name=f"{name}_index")
    onehot = Signal(n, name=f"{name}_onehot")
    group_index = _encode(chosen)
    m.d.comb += [
        full.eq(Cat(padded[i * group : (i + 1) * group].all() for i in range(groups))),
        chosen.eq((~full & (full + 1))[:groups]),
        word.eq(padded.word_select(group_index, group)),
        local.eq((~word & (word + 1))[:group]),
        index.eq(Cat(_encode(local), group_index)),
        onehot.eq(Mux(full.all(), 0, Const(1, 1) << index)),
    ]
    return index, ~full.all(), onehot


def _encode(onehot):
    """Binary index of a one-hot value (for each index bit, an OR of the positions that have it)."""
    bits = max(1, (len(onehot) - 1).bit_length())
    return Cat((onehot & sum(1 << k for k in range(len(onehot)) if k >> b & 1)).any() for b in range(bits))
