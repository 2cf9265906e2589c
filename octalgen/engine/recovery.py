"""What follows a proof that did not go through, in the order it is tried.

A chunk's proof comes back *undecided* (its scans needed values from further back than its
task held) or *failed* at heap m.  :meth:`Recovery.try_again` tries, in this order:

1. an undecided proof again here, with the recent values (:func:`verify_again`);
2. where it still does not go through far past the prefix, where a new rare value would be a
   term at offset m (a window of m values): another mask under which every value since the
   prefix is common, if there is one (:func:`late_switch`; the engine then goes on under it,
   and its verifier proves G(m));
3. where it is still undecided, again with every value (read back, or recomputed), and where
   that fails, another mask as in 2.

What does not go through after that is decided (:meth:`Recovery.go_on`): G(m) computed exactly
from the values before it, read in pieces (:func:`decide`, :mod:`.exact_heap`), and the
:class:`Decision` says what follows — a new rare value (a new table and kernel, the heaps up to
its first decided too), or a correction of the kernel's value (16-bit storage where it does not
fit).  A second failure at the heap where this session switched its mask is decided, not
switched again.  Nothing here holds the values below m: a far decision reads them from the run's
files or its far term's tape, as the scans go.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..cpu.verify import FAILED, PROVEN, UNDECIDED, VerifyResult
from ..errors import InternalError
from ..mapped import SPILL_FROM
from ..plan import Encoding
from ..rare import RareTable
from ..sparse import find_late_switch
from .exact_heap import Reader, exact_value
from .history import History
from .planning import Planning
from .producer import Chunk
from .seams import KernelPlugin, ProofVerifier

log = logging.getLogger("octalgen")


class Recovery:
    """The tries after a proof that did not go through, G(m) decided, and what the run found so.

    It applies what it decides to the plan state (:class:`~.planning.Planning`: a table under
    another mask, a new rare value, 16-bit storage); the engine then re-plans, restarts its
    consumers and hands the decided values on.

    Parameters
    ----------
    kernels : KernelPlugin
        Gives each chunk's verifier.
    planning : Planning
    check_stop : callable
        Called between the pieces a decision reads; raises to stop.

    Attributes
    ----------
    rare_found : list of (int, int)
        ``(heap, value)`` of the rare values found by verification (the run's, resumed included).
    mask_switches : list of (int, int, int)
        ``(heap, old mask, new mask)`` where the run went on under another mask.
    cpu_seconds : float
        The CPU time of the proofs tried again here, since :class:`~.accounting.Accounting` last took it.
    switched_at : int or None
        The heap of this session's last mask switch.
    """

    def __init__(self, kernels: KernelPlugin, planning: Planning, check_stop: Callable[[], None] = lambda: None):
        self.kernels = kernels
        self.planning = planning
        self.check_stop = check_stop
        self.rare_found: list[tuple[int, int]] = []
        self.mask_switches: list[tuple[int, int, int]] = []
        self.cpu_seconds = 0.0
        self.switched_at: int | None = None

    def try_again(self, chunk: Chunk, result: VerifyResult, history: History) -> tuple[VerifyResult, RareTable | None]:
        """The chunk's result after the tries of the module docstring, and the table under another mask
        to go on under where one helps (None: decide where the result is not proven)."""
        verifier = self.kernels(chunk.plan)[1]
        if result.status == UNDECIDED:
            result = self._verify_again(verifier, chunk, result, history, every_value=False)
        switch = self._late_switch(chunk, result, history) if result.status != PROVEN else None
        if switch is None and result.status == UNDECIDED and chunk.first < SPILL_FROM:  # else decided in pieces
            result = self._verify_again(verifier, chunk, result, history, every_value=True)
            switch = self._late_switch(chunk, result, history) if result.status == FAILED else None
        return result, switch

    def go_on(self, chunk: Chunk, failure: VerifyResult, switch: RareTable | None, history: History) -> Decision | None:
        """Go on past the heap m where the proof of ``chunk`` did not go through: under ``switch`` (then
        None is returned), or with G(m) decided (its :class:`Decision`); each said as it is found."""
        m, table = failure.unproven_heap, self.planning.known_table
        if switch is not None:
            self.mask_switches.append((m, table.mask, switch.mask))
            announce_switch(m, table, switch, len(history.prefix), table.game.code)
            self.switched_at = m  # a second failure there is decided
            self.planning.adopt(switch)
            return None
        speculated = int(chunk.plan.encoding.decode_array(chunk.codes[m - chunk.first : m - chunk.first + 1], m)[0])
        found = decide(table, chunk.plan.encoding, history, failure, self.check_stop)
        announce(found, table.game.code, speculated)
        if found.new_rare:
            self.rare_found.extend((n, v) for n, v in found.table.entries if n >= m)
            self.planning.adopt(found.table)
        elif found.needs_u16:
            self.planning.widen_storage()
        return found

    def _verify_again(
        self, verifier: ProofVerifier, chunk: Chunk, undecided: VerifyResult, history: History, every_value: bool
    ) -> VerifyResult:
        result, seconds = verify_again(verifier, chunk, undecided, history, every_value)
        self.cpu_seconds += seconds
        return result

    def _late_switch(self, chunk: Chunk, failure: VerifyResult, history: History) -> RareTable | None:
        if failure.heap == self.switched_at:
            return None
        return late_switch(self.planning, history, chunk, failure)


def verify_again(
    verifier: ProofVerifier, chunk: Chunk, undecided: VerifyResult, history: History, every_value: bool = False
) -> tuple[VerifyResult, float]:
    """Prove ``chunk`` from the undecided heap on: with the recent values, or with every value
    (``every_value``: read back from the history, or recomputed).

    Returns the result and the CPU seconds it took in this thread.
    """
    plan = chunk.plan
    earliest = plan.start - plan.window  # every value from here on is common: codes hold it
    if not every_value and chunk.tape is not None:  # the tape holds the window and more: mapped, not copied
        start = max(chunk.tape.first, earliest)
        codes = chunk.tape.view(start, chunk.stop)
    else:
        if not every_value:
            start, held = history.recent_values()
            held = held[max(0, earliest - start) :]
            start = max(start, earliest)
        else:
            log.info("G(%d) needs values from further back than this run holds in memory", undecided.heap)
            start, held = earliest, history.values_before(chunk.first)[earliest:]
        codes = np.concatenate([plan.encoding.encode_array(held).astype(chunk.codes.dtype), chunk.codes])
    began = time.thread_time()
    result = verifier.verify(codes, start, history.prefix, undecided.unproven_heap, chunk.stop)
    return result, time.thread_time() - began


def late_switch(planning: Planning, history: History, chunk: Chunk, failure: VerifyResult) -> RareTable | None:
    """The table under another mask, for a proof of ``chunk`` that failed (or stayed undecided) at m
    past the prefix, where its kernel (under the run's storage) starts by m; None where none helps
    (:func:`switch_for_late_value`)."""
    m = failure.unproven_heap
    pending = chunk.plan.encoding.decode_array(chunk.codes[: m - chunk.first + 1], chunk.first)
    switched = switch_for_late_value(planning.known_table, history, failure, int(pending[-1]), pending[:-1])
    plan = planning.plan_with(switched, history.prefix) if switched is not None else None
    return switched if plan is not None and plan.start <= m else None


def switch_for_late_value(
    table: RareTable, history: History, failure: VerifyResult, speculated: int, pending: np.ndarray
) -> RareTable | None:
    """The table under another mask, for a proof that failed (or stayed undecided) at m past the prefix.

    At the first proof that does not go through every value below m is proven and every rare
    position below m is in ``table``, so the kernel's value at m, ``speculated``, is the least
    common value that is not an option: G(m) is ``speculated`` (a proof that stayed undecided,
    its scan reaching further back than the values held) or a rare value below it (a failed
    one, unless the verifier decided it: ``failure.true_value``).  The values G(P) ... G(m-1)
    past the prefix are not all held, but which values they are is
    (:meth:`~.history.History.late_values`, and ``pending``: G(position) ... G(m-1), proven but
    not handed to the history yet): under a mask that makes every one of them common
    (:func:`~octalgen.sparse.find_late_switch`), the rare positions are those of the prefix, and
    the table is exact to m without reading a value back.

    Returns None where the failure is a correction (a common value), where m lies within the
    prefix (every value is held: a new term is cheap), or where no mask helps.
    """
    m, late, prefix = failure.unproven_heap, history.late_values(), history.prefix
    if late is None or not history.prefix_complete or m < len(prefix):
        return None
    known = failure.true_value
    if known is not None and not table.is_rare(known, m):
        return None
    late = np.concatenate([late, pending, [known] if known is not None else []]).astype(np.int64)
    below = known + 1 if known is not None else speculated + (failure.status == UNDECIDED)
    rarity = find_late_switch(prefix, late, table.rarity, below)
    if rarity is None:
        return None
    switched = RareTable.from_values(table.game, prefix, rarity.mask, rarity.parity)
    return switched.with_entries(switched.entries, m)


@dataclass(frozen=True)
class Decision:
    """G(m) where a proof failed, and what follows.

    Attributes
    ----------
    heap, value : int
        m and the exact G(m).
    table : RareTable
        With G(m) added where it is a new rare value (and any other among :attr:`values`); else the
        table the run had.
    new_rare : bool
        G(m) is rare: a new kernel, whose first heap comes after :attr:`values`.
    needs_u16 : bool
        A common G(m) too large for the kernel's 8-bit storage.
    values : numpy.ndarray
        G(m), and after a new rare value G(m + 1) ... up to m plus the game's largest take (the
        first heap of the kernel that goes on: :attr:`~octalgen.plan.KernelPlan.start`), uint16.
    """

    heap: int
    value: int
    table: RareTable
    new_rare: bool
    needs_u16: bool
    values: np.ndarray


def decide(
    table: RareTable,
    encoding: Encoding,
    history: History,
    failure: VerifyResult,
    check_stop: Callable[[], None] = lambda: None,
) -> Decision:
    """Decide G(m) at ``failure.heap`` (m = the proven position) under ``table`` and the kernel's ``encoding``.

    Each value is computed by :func:`~.exact_heap.exact_value` from the values before it, read from
    the history (memory, the run's files or the far term's tape), or, where it no longer holds them,
    from a recomputation (:meth:`~.history.History.values_before`).  A new rare value is followed by
    the heaps up to m plus the game's largest take, so that the kernel goes on after it at once.
    ``check_stop`` is called before each piece is read.

    Raises
    ------
    InternalError
        Where the verifier's value of G(m) is not the exact one.
    """
    m = failure.unproven_heap
    if failure.true_value is not None and not table.is_rare(failure.true_value, m):
        # The verifier decided a common value: reading every value below m would only confirm it.
        common = failure.true_value
        return Decision(m, common, table, False, not encoding.fits(common), np.array([common], np.uint16))
    decided: list[int] = []
    everything: np.ndarray | None = None  # G(0) ... G(m - 1), once read back or recomputed

    def read(lo: int, hi: int) -> np.ndarray | None:
        check_stop()
        if lo >= m:
            below: np.ndarray | None = np.zeros(0, np.uint16)
        else:  # below m: the history's, or all of them read back
            below = history.values(lo, min(hi, m)) if everything is None else everything[lo : min(hi, m)]
        after = np.array(decided[max(lo, m) - m : max(hi, m) - m], dtype=np.uint16)
        return None if below is None else np.concatenate([below, after]) if len(after) else below

    value = exact_value(table, m, read)
    if value is None:  # not held: read back, or recomputed, once
        everything = history.values_before(m)
        value = held_value(table, m, read)
    if failure.true_value is not None and failure.true_value != value:
        raise InternalError(f"the verifier says G({m}) = {failure.true_value}, the exact value is {value}")
    decided.append(value)
    if not table.is_rare(value, m):
        return Decision(m, value, table, False, not encoding.fits(value), np.array(decided, np.uint16))
    decided_table = table.with_entry(m, value)
    for n in range(m + 1, m + 1 + table.game.max_take):
        value = held_value(decided_table, n, read)
        decided.append(value)
        if decided_table.is_rare(value, n):
            decided_table = decided_table.with_entry(n, value)
    return Decision(m, decided[0], decided_table, True, False, np.array(decided, np.uint16))


def held_value(table: RareTable, heap: int, read: Reader) -> int:
    """:func:`~.exact_heap.exact_value` where ``read`` holds every value it needs (G(0) ... read back or
    recomputed, and the values decided since)."""
    value = exact_value(table, heap, read)
    if value is None:
        raise InternalError(f"G({heap}) needs values that are not held though every value before it was read back")
    return value


def announce_switch(heap: int, old: RareTable, new: RareTable, prefix_length: int, game_code: str) -> None:
    """Tell that a run switched its mask where a value rare under the old one appeared far out."""
    banner = "!" * 72
    log.warning(
        "%s\nG(%d) of %s is rare under mask %#x, far past the %d values held: every value since G(%d) is "
        "common under mask %#x, so the run goes on under it (%d rare positions, all below G(%d)); the "
        "kernel is regenerated and the period search restarted\n%s",
        banner,
        heap,
        game_code,
        old.mask,
        prefix_length,
        prefix_length,
        new.mask,
        new.count,
        prefix_length,
        banner,
    )


def announce(decision: Decision, game_code: str, speculated: int | None = None) -> None:
    """Tell what a decision found: a banner for a new rare value, a warning for a corrected one (the
    kernel's value, ``speculated``, proven exactly after all: a line at info level)."""
    if decision.new_rare:
        banner = "!" * 72
        log.warning(
            "%s\nNEW RARE VALUE: G(%d) = %d of %s, found by verification; added to the rare table, "
            "kernel regenerated\n%s",
            banner,
            decision.heap,
            decision.value,
            game_code,
            banner,
        )
    elif decision.value == speculated:
        log.info("G(%d) = %d, the kernel's value, proven from every value before it", decision.heap, decision.value)
    else:
        log.warning("verification corrected G(%d) to %d (the kernel's value was wrong)", decision.heap, decision.value)
