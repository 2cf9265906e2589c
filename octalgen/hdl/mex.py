"""The lowest unmarked codes of a mark vector, in hardware: the kernel's mex before its last clock.

After the mark chain, the kernel (:class:`~octalgen.hdl.kernel.SpeculativePipeline`)
holds a heap's mark vector (bit i: code ``plan.mex_order[i]`` is marked).
:func:`extract_candidates` takes its lowest ``layout.candidates`` clear bits,
two per step of :data:`~octalgen.hdl.layout.EXTRACT` clocks, in groups of
:data:`~octalgen.hdl.layout.GROUP` bits, so that no carry chain is longer
than a group.  The helpers below it (:class:`LowestSet`, :func:`word_of`,
:func:`full_groups`, :func:`encode`) are the one-hot arithmetic it is built
from; the kernel's shortlist uses :class:`LowestSet` too.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Mux, Signal
from amaranth.lib.memory import Memory

from .layout import GROUP, PipelineLayout

__all__ = ["LowestSet", "encode", "extract_candidates", "full_groups", "groups", "in_mex_order", "padded", "word_of"]


def extract_candidates(m, layout: PipelineLayout, marks, full, order):
    """The lowest ``layout.candidates`` unmarked codes, two per step of :data:`~octalgen.hdl.layout.EXTRACT` clocks.

    Returns ``(code, valid)`` registers; candidate k is there from
    ``layout.candidate_clock(k)`` on.  A step (``full`` says which groups
    of the mark vector have no clear bit):

    1. mark the previous step's two candidates; the two lowest open groups;
    2. their bits;
    3. the lowest clear bit of the first group, and the next one there or
       the lowest of the second group.

    Every carry chain is at most one group long.
    """
    count = groups(len(marks))
    width = len(marks)
    found = []
    vector, previous = marks, None
    for step in range(-(-layout.candidates // 2) + 1):
        name = f"step{step}"
        if previous is not None:
            # Clock 1 (continued from the previous step): mark its candidates and emit their codes.
            (
                held,
                held_full,
                group1,
                group2,
                word1,
                word2,
                low1,
                next1,
                low2,
                in_first,
                filled1_once,
                filled1_twice,
                filled2,
            ) = previous
            new1 = word1 | low1 | Mux(in_first, next1, 0)
            new2 = word2 | Mux(in_first, 0, low2)
            parts = [padded(held)[i * GROUP : (i + 1) * GROUP] for i in range(count)]
            vector = Signal(width, name=f"{name}_marks_in")
            full = Signal(count, name=f"{name}_full_in")
            m.d.comb += [
                vector.eq(
                    Cat(Mux(group1[i], new1, Mux(group2[i], new2, part)) for i, part in enumerate(parts))[:width]
                ),
                full.eq(
                    held_full
                    | Mux(Mux(in_first, filled1_twice, filled1_once), group1, 0)
                    | Mux(~in_first & filled2, group2, 0)
                ),
            ]
            for which, (group, local, valid) in enumerate(
                (
                    (group1, low1, group1.any()),
                    (Mux(in_first, group1, group2), Mux(in_first, next1, low2), in_first | group2.any()),
                )
            ):
                k = 2 * (step - 1) + which
                if k >= layout.candidates:
                    break
                code = Signal(layout.code_bits, name=f"cand{k}_code", reset_less=True)
                present = Signal(name=f"cand{k}_valid", reset_less=True)
                m.d.sync += [
                    code.eq(_code_of_index(m, layout, Cat(encode(local), encode(group)), order, k)),
                    present.eq(valid),
                ]
                found.append((code, present))
        if step * 2 >= layout.candidates:
            break
        # Clock 1: the two lowest open groups.
        open_groups = LowestSet(m, ~full, 2, f"{name}_groups")
        stage1 = [
            Signal(width, name=f"{name}_marks_1", reset_less=True),
            Signal(count, name=f"{name}_full_1", reset_less=True),
            Signal(count, name=f"{name}_group1_1", reset_less=True),
            Signal(count, name=f"{name}_group2_1", reset_less=True),
        ]
        m.d.sync += [
            stage1[0].eq(vector),
            stage1[1].eq(full),
            stage1[2].eq(open_groups.nth(0)),
            stage1[3].eq(open_groups.nth(1)),
        ]
        held, held_full, group1, group2 = stage1
        # Clock 2: the bits of both groups.
        stage2 = [
            Signal(width, name=f"{name}_marks_2", reset_less=True),
            Signal(count, name=f"{name}_full_2", reset_less=True),
            Signal(count, name=f"{name}_group1_2", reset_less=True),
            Signal(count, name=f"{name}_group2_2", reset_less=True),
            Signal(GROUP, name=f"{name}_word1", reset_less=True),
            Signal(GROUP, name=f"{name}_word2", reset_less=True),
        ]
        m.d.sync += [
            stage2[0].eq(held),
            stage2[1].eq(held_full),
            stage2[2].eq(group1),
            stage2[3].eq(group2),
            stage2[4].eq(word_of(held, group1)),
            stage2[5].eq(word_of(held, group2)),
        ]
        held, held_full, group1, group2, word1, word2 = stage2
        # Clock 3: the two lowest clear bits, and whether each group fills up.  The groups' words
        # pass on too, so that the next step marks its candidates in registers: clock 2's AND-OR
        # over every group again there, in front of the marks' multiplexers, is a long path.
        clear1 = LowestSet(m, ~word1, 3, f"{name}_clear1")
        clear2 = LowestSet(m, ~word2, 2, f"{name}_clear2")
        low1, next1, low2 = clear1.nth(0), clear1.nth(1), clear2.nth(0)
        stage3 = [
            Signal(width, name=f"{name}_marks_3", reset_less=True),
            Signal(count, name=f"{name}_full_3", reset_less=True),
            Signal(count, name=f"{name}_group1_3", reset_less=True),
            Signal(count, name=f"{name}_group2_3", reset_less=True),
            Signal(GROUP, name=f"{name}_word1_3", reset_less=True),
            Signal(GROUP, name=f"{name}_word2_3", reset_less=True),
            Signal(GROUP, name=f"{name}_low1", reset_less=True),
            Signal(GROUP, name=f"{name}_next1", reset_less=True),
            Signal(GROUP, name=f"{name}_low2", reset_less=True),
            Signal(name=f"{name}_in_first", reset_less=True),
            Signal(name=f"{name}_filled1_once", reset_less=True),
            Signal(name=f"{name}_filled1_twice", reset_less=True),
            Signal(name=f"{name}_filled2", reset_less=True),
        ]
        # Whether each group fills up once its candidates are marked.
        m.d.sync += [
            a.eq(b)
            for a, b in zip(
                stage3,
                (
                    held,
                    held_full,
                    group1,
                    group2,
                    word1,
                    word2,
                    low1,
                    next1,
                    low2,
                    group1.any() & clear1.at_least(2),
                    ~clear1.at_least(2),
                    ~clear1.at_least(3),
                    ~clear2.at_least(2),
                ),
            )
        ]
        previous = stage3
    return found


def _code_of_index(m, layout: PipelineLayout, index, order, k):
    """The stored code at position ``index`` of ``order`` (the index itself for u8 storage)."""
    if order == tuple(range(len(order))):
        return index
    table = Memory(shape=layout.code_bits, depth=len(order), init=order)  # u16: common codes only
    m.submodules[f"cand{k}_codes"] = table
    lookup = table.read_port(domain="comb")
    m.d.comb += lookup.addr.eq(index)
    return lookup.data


def in_mex_order(grid, order):
    """The mark vector (bit i: code ``order[i]``) of ``grid`` (bit c: code c)."""
    if order == tuple(range(len(grid))):
        return grid
    return Cat(grid[code] for code in order)


def groups(bits: int) -> int:
    """Groups of :data:`~octalgen.hdl.layout.GROUP` bits in a vector of ``bits`` (the last may be partial)."""
    return -(-bits // GROUP)


def padded(vector):
    """``vector`` extended to whole groups with set bits (padding counts as marked)."""
    pad = groups(len(vector)) * GROUP - len(vector)
    return Cat(vector, Const((1 << pad) - 1, pad)) if pad else vector


def full_groups(vector):
    """One bit per group of ``vector``: all its bits are set."""
    whole = padded(vector)
    return Cat(whole[i * GROUP : (i + 1) * GROUP].all() for i in range(groups(len(vector))))


def word_of(vector, onehot):
    """The group of ``vector`` that the one-hot ``onehot`` selects (an AND-OR: no binary index)."""
    whole = padded(vector)
    word = Const(0, GROUP)
    for i in range(len(onehot)):
        word = word | Mux(onehot[i], whole[i * GROUP : (i + 1) * GROUP], 0)
    return word


class LowestSet:
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
        """Whether at least ``k`` bits are set."""
        return self.counts[k - 1][-1]

    def nth(self, j: int):
        """One-hot of the (j+1)-th lowest set bit: set, with exactly j set bits below it."""
        below = [(c << 1)[: len(self.value)] for c in self.counts]  # exclusive prefix counts
        exactly = ~below[0] if j == 0 else below[j - 1] & ~below[j]
        return self.value & exactly


def encode(onehot):
    """Binary index of a one-hot value (for each index bit, an OR of the positions that have it)."""
    bits = max(1, (len(onehot) - 1).bit_length())
    return Cat((onehot & sum(1 << k for k in range(len(onehot)) if k >> b & 1)).any() for b in range(bits))
