"""Where every term of a kernel plan goes in the hardware pipeline, and when.

This module decides everything about the circuit in plain Python (Amaranth
only places what it computes), so the schedule can be read and tested on
its own.

The pipeline (see :class:`~octalgen.hdl.kernel.SpeculativePipeline`) computes
one heap every ``fold`` clocks, a *slot*.  Heap ``first + h`` enters stage 0
in slot h and moves one stage per slot along a chain of *stages*; each stage
has up to ``lanes_per_stage`` *lanes* (mark units), and a lane marks one term
per clock, so one term per phase of the slot.  A stage ORs its lanes' marks
into the mark vector that it passes on, so all wires of the chain go between
neighbours.  The chain holds the terms with the largest offsets (the oldest
values) first; the terms whose values are computed too late for the chain
(the *recent* terms, the smallest offsets) are left out of it: after the
chain, the lowest ``len(recent) + 1`` unmarked codes (the *candidates*) are
extracted, two per step of :data:`EXTRACT` clocks; each is checked against
the recent terms' marks as their values arrive; the first few left are
shortlisted, and in the select clock the newest values' marks are compared
with the shortlist.  That last step is the only feedback loop: Grossman's
speculative mex in hardware.

Timing, for term j (its phase) of a lane in stage s, with offset o, and
heap index h = n - first (clock 0 is the first clock after configuration):

* clock t0 = (h + s) F + j: the lane's term ROM is read (at its stage's
  phase, which lags phase j by s clocks: the phase is passed along the chain);
* t0 + 1: the history address is registered;
* t0 + 2: the history memory samples it; index ``m = n - o`` must be written
  by then, and not yet overwritten;
* t0 + 3: the value arrives and is registered;
* t0 + 4: it is XORed with the term's constant;
* t0 + 5: the code's two one-hot halves are registered;
* t0 + 6: its mark (their product) is ORed into the stage's mark vector
  (``rows``: into a row of the lane's row memory, which the stage hands on,
  a group of rows per clock, in the next slot: :attr:`PipelineLayout.drain_clocks`
  more clocks before the chain's vector is complete).

So a term reads its value ``alpha = (s + o) F + j`` clocks after index m's own
slot began: its *age*.  History memories are per lane (one read per clock, one
write per slot: a simple dual-port block RAM).  Each lane memory is written
with the stream of values read by one *source* term elsewhere in the chain,
or with the freshly computed values; in both cases a value arrives
``write_age`` clocks after its slot began, and the lane's terms must be at
least ``write_age - 1`` old and at most ``depth * F + write_age - 2``.  The
chain thus forms one delay line (about ``window`` values long in total)
without any memory serving more than one read per clock.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError
from ..plan import KernelPlan

__all__ = [
    "DATA_VALID",
    "EXTRACT",
    "GROUP",
    "LANES_PER_STAGE",
    "MARK",
    "MARK_CHAINS",
    "READ_SAMPLE",
    "ROW",
    "Lane",
    "LaneTerm",
    "PipelineLayout",
    "RecentTerm",
    "Source",
    "lane_first_write",
    "lane_skipped_writes",
    "layout_pipeline",
    "primed",
]

#: Mark units per stage.  Each mark bit of a unit is the AND of two one-hot registers, so a
#: stage's update of one bit (load, the bit itself, the previous stage's bit, two per unit) is
#: (2 L + 3) inputs: ceil((2 L + 2) / 3) four-input LUTs, 0.75 per unit at L = 8, 0.8 at 5,
#: 1 at 2 to 4; longer stages save little more and gather more wires into one place (congestion:
#: a kernel that nearly fills its chip routes more easily with 2 to 4 lanes a stage, as the
#: ``.6`` builds for the ECP5-85k in ``hdl/reports/`` do).
LANES_PER_STAGE = 8

#: Clocks from a term's phase to its history read being sampled (ROM, address register).
READ_SAMPLE = 2
#: Clocks from a term's phase to its value being in the register after the memory (a block
#: RAM's clock-to-output is slow: nothing but that register follows it).
DATA_VALID = 4
#: Clocks from a term's phase to its mark being ORed into the stage's mark vector (the code's
#: one-hot halves are registered in between).
MARK = 6


#: Clocks per extraction step, which yields two candidates (the two lowest groups with a
#: clear bit; their bits; the two lowest clear bits in them).
EXTRACT = 3
#: Bits per group of the mark vector in the extraction.
GROUP = 16
#: Codes per row of the mark grid: code c is bit c & 15 of row c >> 4 (:attr:`PipelineLayout.mark_rows`).
ROW = 16

#: How a stage hands its marks to the next (:attr:`PipelineLayout.mark_chain`).  ``vector``: the
#: whole mark vector in one clock; every lane's two one-hot halves reach all its bits (16 sinks
#: each), which is what congests the routing of a large chain.  ``rows``: each lane ORs its marks
#: into a small memory of rows (code c is bit c & 15 of row c >> 4), and the stages pass the
#: finished rows on a few per clock, over :attr:`PipelineLayout.drain_clocks` clocks of the next
#: slot: a lane's wires stay local and the chain is ``16 * rows_per_clock`` bits wide.
MARK_CHAINS = ("vector", "rows")


def primed(fold: int) -> int:
    """First clock in which a lane's memory output holds a value that was read on purpose.

    Its valid bit travels with the read; feed writes start then.  At fold 1
    there is no term ROM in front of the address, so one clock earlier.
    """
    return DATA_VALID - 1 if fold == 1 else DATA_VALID


@dataclass(frozen=True)
class LaneTerm:
    """One term as a lane marks it.

    Attributes
    ----------
    phase : int
        Clock of the slot in which it is marked (0 <= phase < fold).
    offset : int
        It marks ``code ^ G(n - offset)``.
    code : int
        The term's constant, encoded as stored.
    age : int
        Clocks between the start of the slot of ``n - offset`` and the
        term's phase for heap n (see the module docstring).
    """

    phase: int
    offset: int
    code: int
    age: int


@dataclass(frozen=True)
class Source:
    """Where a lane memory's values come from: a term's reads, or the fresh values.

    Attributes
    ----------
    stage, lane, phase : int or None
        The source term (its reads, on that lane's memory data output), or all
        None for the freshly computed values.
    write_age : int
        Clocks from the start of a value's slot to its write into the lane memory.
    """

    stage: int | None
    lane: int | None
    phase: int | None
    write_age: int

    @property
    def fresh(self) -> bool:
        return self.stage is None


@dataclass(frozen=True)
class Lane:
    """One mark unit: its terms (at most one per phase) and its history memory."""

    stage: int
    index: int
    terms: tuple[LaneTerm, ...]
    source: Source
    depth: int

    @property
    def address_bits(self) -> int:
        return (self.depth - 1).bit_length()


@dataclass(frozen=True)
class RecentTerm:
    """A term finished in the final compare-and-select: it marks ``code ^ G(n - offset)``."""

    offset: int
    code: int


@dataclass(frozen=True)
class PipelineLayout:
    """The complete schedule of a speculative kernel circuit.

    Build it with :func:`layout_pipeline`.

    Attributes
    ----------
    plan : KernelPlan
    fold : int
        Clocks per value (F).
    stages : tuple of tuple of Lane
        The chain, oldest terms first.
    recent : tuple of RecentTerm
        Terms left to the final compare-and-select, largest offset first.
    lanes_per_stage : int
        The most mark units a stage holds.
    mark_chain : {"vector", "rows"}
        How a stage hands its marks to the next (see :data:`MARK_CHAINS`).
    """

    plan: KernelPlan
    fold: int
    stages: tuple[tuple[Lane, ...], ...]
    recent: tuple[RecentTerm, ...]
    lanes_per_stage: int = LANES_PER_STAGE
    mark_chain: str = "vector"

    # -- sizes --------------------------------------------------------------

    @property
    def lanes(self) -> tuple[Lane, ...]:
        return tuple(lane for stage in self.stages for lane in stage)

    @property
    def mark_units(self) -> int:
        """Number of lanes (each marks one term per clock)."""
        return len(self.lanes)

    @property
    def candidates(self) -> int:
        """Unmarked codes extracted from the chain's marks: one more than the recent terms."""
        return min(len(self.recent) + 1, self.mark_bits)

    @property
    def mark_bits(self) -> int:
        """Entries of the mark vector (one per code of ``plan.mex_order``)."""
        return len(self.plan.mex_order)

    @property
    def mark_rows(self) -> int:
        """Rows of 16 codes that hold every code of ``plan.mex_order`` (code c in row c >> 4)."""
        return (max(self.plan.mex_order) >> 4) + 1

    @property
    def rows_per_clock(self) -> int:
        """Rows a stage hands on per clock: all of them for ``vector``, enough to finish in a slot for ``rows``."""
        return self.mark_rows if self.mark_chain == "vector" else -(-self.mark_rows // self.fold)

    @property
    def drain_clocks(self) -> int:
        """Clocks a stage takes to hand one heap's rows on (1 for ``vector``)."""
        return -(-self.mark_rows // self.rows_per_clock)

    @property
    def code_bits(self) -> int:
        """Width of a stored value (8 for u8 storage, 16 for u16)."""
        return self.plan.encoding.bits

    @property
    def history_bits(self) -> int:
        """Bits of history memory over all lanes."""
        return sum(lane.depth for lane in self.lanes) * self.code_bits

    # -- timing -------------------------------------------------------------

    @property
    def chain_output(self) -> int:
        """Clock (for heap index 0) from which the chain's mark vector holds heap 0."""
        # A vector is complete in the clock after its last mark; rows are handed on after that.
        return len(self.stages) * self.fold + MARK + 1 + (self.drain_clocks if self.mark_chain == "rows" else 0)

    def candidate_clock(self, k: int) -> int:
        """Clock (for heap 0) from which candidate k is in its register."""
        return self.chain_output + EXTRACT * (k // 2 + 1) + 1

    @property
    def shortlist_clock(self) -> int:
        """Clock in which the first unmarked candidates are picked (after at least one check each)."""
        return self.candidate_clock(self.candidates - 1) + 1

    @property
    def select_clock(self) -> int:
        """Clock of heap 0's final compare-and-select (its value is registered at its end)."""
        return self.shortlist_clock + 1

    def available(self, offset: int) -> int:
        """First clock (for heap 0) in which G(n - offset) is in the output or recent registers."""
        return self.select_clock - offset * self.fold + 1

    def recent_register(self, offset: int, clock: int) -> int:
        """Index k of the register ``recent[k]`` that holds G(n - offset) in ``clock`` (for heap 0)."""
        return offset - 1 - (self.select_clock - clock) // self.fold

    @property
    def late_terms(self) -> tuple[RecentTerm, ...]:
        """Recent terms compared only in the select clock (their values arrive after the shortlist)."""
        return tuple(t for t in self.recent if self.available(t.offset) >= self.shortlist_clock)

    @property
    def latency(self) -> int:
        """Clocks from configuration to the first value: G(first) is valid during this clock."""
        return self.select_clock + 1

    @property
    def warmup_values(self) -> int:
        """Values before ``first`` that the circuit re-emits internally while its pipeline fills."""
        return self.select_clock // self.fold


def lane_first_write(lane: Lane, fold: int) -> int:
    """``index - first`` of the first value written into the lane's memory after configuration.

    Every earlier index is in the memory's initial contents.
    """
    return _first_write(lane.source, fold)


def lane_skipped_writes(lane: Lane, fold: int) -> int:
    """Write slots of the lane's memory that pass before its first write.

    Index ``first + k`` is written ``write_age`` clocks into its slot, clock
    ``k * fold + write_age``; the first slot after configuration is that of
    ``k = -(write_age // fold)``, and :func:`lane_first_write` says which slot
    writes first (for a source that is not fresh, the first after its read
    pipeline holds a real read, clock :func:`primed`).
    """
    return lane_first_write(lane, fold) + lane.source.write_age // fold


def _first_write(source: Source, fold: int) -> int:
    earliest = 0 if source.fresh else primed(fold)
    clock = earliest + (source.write_age - earliest) % fold
    return (clock - source.write_age) // fold


def layout_pipeline(
    plan: KernelPlan, fold: int, lanes_per_stage: int = LANES_PER_STAGE, mark_chain: str = "vector"
) -> PipelineLayout:
    """Assign every term of ``plan`` to the chain or to the final select, and size the memories.

    Parameters
    ----------
    plan : KernelPlan
    fold : int
        Clocks per value, at least 1.
    lanes_per_stage : int
        Mark units per chain stage.
    mark_chain : {"vector", "rows"}
        How a stage hands its marks to the next (see :data:`MARK_CHAINS`).

    Notes
    -----
    The recent terms are the fewest smallest-offset terms such that every
    chain term's value is written into some memory in time; each added recent
    term delays the select by one clock, so the search stops at the first
    consistent count.
    """
    if fold < 1:
        raise InputError(f"fold {fold} must be at least 1")
    if lanes_per_stage < 1:
        raise InputError(f"lanes per stage {lanes_per_stage} must be at least 1")
    if mark_chain not in MARK_CHAINS:
        raise InputError(f"unknown mark chain {mark_chain!r}; choose {' or '.join(MARK_CHAINS)}")
    if mark_chain == "rows" and fold < 2:
        raise InputError("the rows mark chain hands rows on in the slot after they are marked: it needs fold 2 or more")
    terms = plan.encoded_terms()  # by decreasing offset
    for recent_count in range(len(terms) + 1):
        chain = terms[: len(terms) - recent_count]
        recent = tuple(RecentTerm(o, c) for o, c in terms[len(terms) - recent_count :])
        stages = _place(chain, fold, lanes_per_stage)
        trial = PipelineLayout(plan, fold, stages, recent, lanes_per_stage, mark_chain)
        youngest = min((t.age for lane in trial.lanes for t in lane.terms), default=None)
        if youngest is None or youngest >= trial.latency - 1:
            return PipelineLayout(
                plan, fold, _connect(stages, fold, trial.latency), recent, lanes_per_stage, mark_chain
            )
    raise AssertionError("unreachable: an empty chain is always consistent")


def _place(chain, fold: int, lanes_per_stage: int) -> tuple[tuple[Lane, ...], ...]:
    """Cut the chain terms into lanes of ``fold`` terms and stages of lanes (memories not yet sized)."""
    per_stage = fold * lanes_per_stage
    stages = []
    for s in range(-(-len(chain) // per_stage)):
        lanes = []
        stage_terms = chain[s * per_stage : (s + 1) * per_stage]
        for i in range(-(-len(stage_terms) // fold)):
            lane_terms = tuple(
                LaneTerm(j, o, c, (s + o) * fold + j) for j, (o, c) in enumerate(stage_terms[i * fold : (i + 1) * fold])
            )
            lanes.append(Lane(s, i, lane_terms, Source(None, None, None, 0), 1))
        stages.append(tuple(lanes))
    return tuple(stages)


def _connect(stages, fold: int, latency: int) -> tuple[tuple[Lane, ...], ...]:
    """Give every lane memory its source (the youngest usable one) and its depth."""
    # Candidate sources: every chain term, and the fresh values (written at age `latency`).
    sources = [Source(None, None, None, latency)]
    for stage in stages:
        for lane in stage:
            for t in lane.terms:
                sources.append(Source(lane.stage, lane.index, t.phase, t.age + DATA_VALID))
    sources.sort(key=lambda src: src.write_age)
    connected = []
    for stage in stages:
        lanes = []
        for lane in stage:
            youngest = min(t.age for t in lane.terms)
            oldest = max(t.age for t in lane.terms)
            usable = [src for src in sources if src.write_age <= youngest + 1]
            source = usable[-1]  # the oldest usable stream: the smallest memory
            # In steady state the memory holds the values between its write and its oldest read.
            needed = -(-(oldest + READ_SAMPLE - source.write_age) // fold)
            # After configuration it must also hold, from its initial contents, every value
            # read before its first write (earlier writes are skipped while the pipeline fills).
            first_read = -((oldest + DATA_VALID - primed(fold)) // fold)  # reads whose data is used
            needed = max(needed, _first_write(source, fold) - first_read, 1)
            depth = 1 << (needed - 1).bit_length()
            lanes.append(Lane(lane.stage, lane.index, lane.terms, source, depth))
        connected.append(tuple(lanes))
    return tuple(connected)
