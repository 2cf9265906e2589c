"""What follows a proof that did not go through: a second try with more values, or G(m) decided.

* :func:`verify_again`: a chunk came back *undecided* (its proof scans needed values from
  further back than its task held): it is proven here, with the recent values, then (unless
  another mask helps, below) with every value (read back, or recomputed).
* :func:`late_switch`: a proof *failed* (or stayed undecided with the recent values) at heap m
  far past the prefix, where a new rare value would be a term at offset m (a window of m
  values): another mask under which every value since the prefix is common, if there is one
  (:func:`switch_for_late_value`; the engine then goes on under it, and its verifier proves G(m));
* :func:`decide`: a proof *failed* at heap m: G(m) is computed exactly
  (:func:`~.plans.decide_failure`, or the verifier's own value where it is a common one) and
  the :class:`Recovery` says what follows — a new rare value (a new table, a new kernel, exact
  steps from m), or a correction of the kernel's value (16-bit storage where it does not fit).

The engine applies the decision; nothing here changes the run's state.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..cpu.exact import CExactSolver
from ..cpu.verify import UNDECIDED, VerifyResult
from ..mapped import SPILL_FROM
from ..plan import Encoding
from ..rare import RareTable
from ..sparse import find_late_switch
from .history import History
from .plans import decide_failure, plan_for
from .producer import Chunk
from .seams import ProofVerifier

log = logging.getLogger("octalgen")


def verify_again(verifier: ProofVerifier, chunk: Chunk, undecided: VerifyResult, history: History,
                 values_before: Callable[[int], np.ndarray] | None = None) -> tuple[VerifyResult, float]:
    """Prove ``chunk`` from the undecided heap on: with the recent values, or (given ``values_before``)
    with every value.

    ``values_before(n)`` gives G(0) ... G(n-1) (from the history, or recomputed).  Returns the
    result and the CPU seconds it took in this thread.
    """
    plan = chunk.plan
    earliest = plan.start - plan.window  # every value from here on is common: codes hold it
    if values_before is None and chunk.tape is not None:  # the tape holds the window and more: mapped, not copied
        start = max(chunk.tape.first, earliest)
        codes = chunk.tape.view(start, chunk.stop)
    else:
        if values_before is None:
            start, held = history.recent_values()
            held = held[max(0, earliest - start):]
            start = max(start, earliest)
        else:
            log.info("G(%d) needs values from further back than this run holds in memory", undecided.heap)
            start, held = earliest, values_before(chunk.first)[earliest:]
        codes = np.concatenate([plan.encoding.encode_array(held).astype(chunk.codes.dtype), chunk.codes])
    began = time.thread_time()
    result = verifier.verify(codes, start, history.prefix, undecided.heap, chunk.stop)
    return result, time.thread_time() - began


def late_switch(table: RareTable, history: History, chunk: Chunk, failure: VerifyResult,
                storage: str | None) -> RareTable | None:
    """The table under another mask, for a proof of ``chunk`` that failed (or stayed undecided) at m
    past the prefix, where its kernel (under ``storage``) starts by m; None where none helps
    (:func:`switch_for_late_value`)."""
    m = failure.heap
    pending = chunk.plan.encoding.decode_array(chunk.codes[: m - chunk.first + 1], chunk.first)
    switched = switch_for_late_value(table, history, failure, int(pending[-1]), pending[:-1])
    plan = plan_for(switched, history.prefix, storage) if switched is not None else None
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
class Recovery:
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
           values_before: Callable[[int], np.ndarray], spill_dir=None) -> Recovery:
    """Decide G(m) at ``failure.heap`` (m = the proven position) under ``table`` and the kernel's ``encoding``.

    ``values_before(m)`` gives G(0) ... G(m-1) (past :data:`~octalgen.mapped.SPILL_FROM` values in a
    file on disk), and the solver that decides G(m) holds them in files in ``spill_dir`` from there on.
    """
    m = failure.heap
    known = history.values_before(m) if m < SPILL_FROM else None  # far out: read in pieces, not joined here
    if known is None and failure.true_value is not None and not table.is_rare(failure.true_value, m):
        # The verifier decided a common value: recomputing every value below m would only confirm it.
        value = failure.true_value
        return Recovery(m, value, table, False, not encoding.fits(value), None)
    if known is None:
        known = values_before(m)
    value, decided, needs_u16, solver = decide_failure(table, encoding, known, failure, spill_dir)
    return Recovery(m, value, decided, decided is not table, needs_u16, solver)


def announce_switch(heap: int, old: RareTable, new: RareTable, prefix_length: int, game_code: str) -> None:
    """Tell that a run switched its mask where a value rare under the old one appeared far out."""
    banner = "!" * 72
    log.warning("%s\nG(%d) of %s is rare under mask %#x, far past the %d values held: every value since G(%d) is "
                "common under mask %#x, so the run goes on under it (%d rare positions, all below G(%d)); the "
                "kernel is regenerated and the period search restarted\n%s", banner, heap, game_code, old.mask,
                prefix_length, prefix_length, new.mask, new.count, prefix_length, banner)


def announce(recovery: Recovery, game_code: str) -> None:
    """Tell what a recovery found: a banner for a new rare value, a warning for a corrected one."""
    if recovery.new_rare:
        banner = "!" * 72
        log.warning("%s\nNEW RARE VALUE: G(%d) = %d of %s, found by verification; added to the rare table, "
                    "kernel regenerated\n%s", banner, recovery.heap, recovery.value, game_code, banner)
    else:
        log.warning("verification corrected G(%d) to %d (the kernel's value was wrong)", recovery.heap,
                    recovery.value)
