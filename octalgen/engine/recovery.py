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
(:func:`decide_failure`, or the verifier's own value where it is a common one), and the
:class:`Decision` says what follows — a new rare value (a new table, a new kernel, exact steps
from m), or a correction of the kernel's value (16-bit storage where it does not fit).  A
second failure at the heap where this session switched its mask is decided, not switched again.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np

from ..cpu.exact import CExactSolver
from ..cpu.verify import FAILED, PROVEN, UNDECIDED, VerifyResult
from ..errors import InternalError
from ..mapped import SPILL_FROM
from ..plan import Encoding
from ..rare import RareTable
from ..sparse import find_late_switch
from .exact_steps import ExactSteps, exact_solver
from .history import History
from .planning import Planning
from .producer import Chunk
from .seams import KernelPlugin, ProofVerifier

log = logging.getLogger("octalgen")


class Recovery:
    """The tries after a proof that did not go through, G(m) decided, and what the run found so.

    It applies what it decides to the plan state (:class:`~.planning.Planning`: a table under
    another mask, a new rare value, 16-bit storage) and to the exact steps (the solver that decided
    a new rare value goes on); the engine then re-plans and restarts its consumers.

    Parameters
    ----------
    kernels : KernelPlugin
        Gives each chunk's verifier.
    planning : Planning
    exact : ExactSteps
    spill_dir : path, optional
        Where deciding far out holds every value below m (the run's directory, else the temporary one).

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

    def __init__(self, kernels: KernelPlugin, planning: Planning, exact: ExactSteps, spill_dir=None):
        self.kernels = kernels
        self.planning = planning
        self.exact = exact
        self.spill_dir = spill_dir
        self.rare_found: list[tuple[int, int]] = []
        self.mask_switches: list[tuple[int, int, int]] = []
        self.cpu_seconds = 0.0
        self.switched_at: int | None = None

    def try_again(self, chunk: Chunk, result: VerifyResult, history: History) -> tuple[VerifyResult,
                                                                                       RareTable | None]:
        """The chunk's result after the tries of the module docstring, and the table under another mask
        to go on under where one helps (None: decide where the result is not proven)."""
        verifier = self.kernels(chunk.plan)[1]
        if result.status == UNDECIDED:
            result = self._verify_again(verifier, chunk, result, history, every_value=False)
        switch = self._late_switch(chunk, result, history) if result.status != PROVEN else None
        if switch is None and result.status == UNDECIDED:
            result = self._verify_again(verifier, chunk, result, history, every_value=True)
            switch = self._late_switch(chunk, result, history) if result.status == FAILED else None
        return result, switch

    def go_on(self, chunk: Chunk, failure: VerifyResult, switch: RareTable | None,
              history: History) -> "Decision | None":
        """Go on past the heap m where the proof of ``chunk`` did not go through: under ``switch`` (then
        None is returned), or with G(m) decided (its :class:`Decision`); each said as it is found."""
        m, table = failure.heap, self.planning.table
        if switch is not None:
            self.mask_switches.append((m, table.mask, switch.mask))
            announce_switch(m, table, switch, len(history.prefix), table.game.code)
            self.switched_at = m  # a second failure there is decided
            self.planning.adopt(switch)
            return None
        found = decide(table, chunk.plan.encoding, history, failure, self.spill_dir)
        announce(found, table.game.code)
        if found.new_rare:
            self.rare_found.append((m, found.value))
            self.planning.adopt(found.table)
            self.exact.adopt(found.table.rarity, found.solver)
        elif found.needs_u16:
            self.planning.widen_storage()
        return found

    def _verify_again(self, verifier: ProofVerifier, chunk: Chunk, undecided: VerifyResult, history: History,
                      every_value: bool) -> VerifyResult:
        result, seconds = verify_again(verifier, chunk, undecided, history, every_value)
        self.cpu_seconds += seconds
        return result

    def _late_switch(self, chunk: Chunk, failure: VerifyResult, history: History) -> RareTable | None:
        if failure.heap == self.switched_at:
            return None
        return late_switch(self.planning, history, chunk, failure)


def verify_again(verifier: ProofVerifier, chunk: Chunk, undecided: VerifyResult, history: History,
                 every_value: bool = False) -> tuple[VerifyResult, float]:
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
            held = held[max(0, earliest - start):]
            start = max(start, earliest)
        else:
            log.info("G(%d) needs values from further back than this run holds in memory", undecided.heap)
            start, held = earliest, history.values_before(chunk.first)[earliest:]
        codes = np.concatenate([plan.encoding.encode_array(held).astype(chunk.codes.dtype), chunk.codes])
    began = time.thread_time()
    result = verifier.verify(codes, start, history.prefix, undecided.heap, chunk.stop)
    return result, time.thread_time() - began


def late_switch(planning: Planning, history: History, chunk: Chunk, failure: VerifyResult) -> RareTable | None:
    """The table under another mask, for a proof of ``chunk`` that failed (or stayed undecided) at m
    past the prefix, where its kernel (under the run's storage) starts by m; None where none helps
    (:func:`switch_for_late_value`)."""
    m = failure.heap
    pending = chunk.plan.encoding.decode_array(chunk.codes[: m - chunk.first + 1], chunk.first)
    switched = switch_for_late_value(planning.table, history, failure, int(pending[-1]), pending[:-1])
    plan = planning.plan_with(switched, history.prefix) if switched is not None else None
    return switched if plan is not None and plan.start <= m else None


def switch_for_late_value(table: RareTable, history: History, failure: VerifyResult, speculated: int,
                          pending: np.ndarray) -> RareTable | None:
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
    m, late, prefix = failure.heap, history.late_values(), history.prefix
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
        With G(m) added where it is a new rare value; else the table the run had.
    new_rare : bool
        G(m) is rare: a new kernel, and exact steps from m.
    needs_u16 : bool
        A common G(m) too large for the kernel's 8-bit storage.
    solver : CExactSolver or None
        The exact solver holding G(0) ... G(m), where deciding needed every value (always for a
        new rare value): the exact steps from m go on with it.
    """

    heap: int
    value: int
    table: RareTable
    new_rare: bool
    needs_u16: bool
    solver: CExactSolver | None


def decide(table: RareTable, encoding: Encoding, history: History, failure: VerifyResult,
           spill_dir=None) -> Decision:
    """Decide G(m) at ``failure.heap`` (m = the proven position) under ``table`` and the kernel's ``encoding``.

    G(0) ... G(m-1) come from the history (past :data:`~octalgen.mapped.SPILL_FROM` values in a
    file on disk, or recomputed), and the solver that decides G(m) holds them in files in
    ``spill_dir`` from there on.
    """
    m = failure.heap
    known = history.values(0, m) if m < SPILL_FROM else None  # far out: read in pieces, not joined here
    if known is None and failure.true_value is not None and not table.is_rare(failure.true_value, m):
        # The verifier decided a common value: recomputing every value below m would only confirm it.
        value = failure.true_value
        return Decision(m, value, table, False, not encoding.fits(value), None)
    if known is None:
        known = history.values_before(m)
    value, decided, needs_u16, solver = decide_failure(table, encoding, known, failure, spill_dir)
    return Decision(m, value, decided, decided is not table, needs_u16, solver)


def decide_failure(table: RareTable, encoding: Encoding, values, failure: VerifyResult,
                   spill_dir=None) -> tuple[int, RareTable, bool, CExactSolver]:
    """The exact G(m) where a proof failed (m = ``len(values)``), and what follows from it.

    ``values`` are the proven G(0) ... G(m-1).  Returns ``(value, table, needs_u16, solver)``: a
    rare value is added to the table (a new kernel is needed); a common one is a correction of the
    kernel's value (``needs_u16`` when it does not fit the storage).  ``solver``: the exact solver,
    holding G(0) ... G(m), for the exact steps that follow (one copy of the values, not two).

    Raises
    ------
    InternalError
        Where the verifier's value of G(m) is not the exact solver's.
    """
    m = failure.heap
    solver = exact_solver(table.game, table.rarity, values, spill_dir)
    value = int(solver.extend(m + 1)[m])
    if failure.true_value is not None and failure.true_value != value:
        raise InternalError(f"the verifier says G({m}) = {failure.true_value}, the exact solver {value}")
    if table.is_rare(value, m):
        return value, table.with_entry(m, value), False, solver
    return value, table, not encoding.fits(value), solver


def announce_switch(heap: int, old: RareTable, new: RareTable, prefix_length: int, game_code: str) -> None:
    """Tell that a run switched its mask where a value rare under the old one appeared far out."""
    banner = "!" * 72
    log.warning("%s\nG(%d) of %s is rare under mask %#x, far past the %d values held: every value since G(%d) is "
                "common under mask %#x, so the run goes on under it (%d rare positions, all below G(%d)); the "
                "kernel is regenerated and the period search restarted\n%s", banner, heap, game_code, old.mask,
                prefix_length, prefix_length, new.mask, new.count, prefix_length, banner)


def announce(decision: Decision, game_code: str) -> None:
    """Tell what a decision found: a banner for a new rare value, a warning for a corrected one."""
    if decision.new_rare:
        banner = "!" * 72
        log.warning("%s\nNEW RARE VALUE: G(%d) = %d of %s, found by verification; added to the rare table, "
                    "kernel regenerated\n%s", banner, decision.heap, decision.value, game_code, banner)
    else:
        log.warning("verification corrected G(%d) to %d (the kernel's value was wrong)", decision.heap,
                    decision.value)
