"""What the engine decides from exact values: the rare table, the kernel plan, a failed proof.

The rare table is a hint, never trusted: :func:`reconcile` replaces its entries by the rare
values the exact solver found; :func:`plan_for` plans a kernel only where one can work;
:func:`plan_game` is the one way to the plan a run starts with (what ``emit``, ``bench``,
``synth`` and ``fpga`` build from); :func:`decide_failure` computes G(m) exactly where a proof
failed and says what follows.
"""

from __future__ import annotations

import logging

import numpy as np

from ..cpu.exact import CExactSolver
from ..errors import ComputationError, InputError
from ..game import OctalGame
from ..mapped import SPILL_PIECE
from ..plan import KernelPlan, make_plan, no_kernel_reason
from ..rare import DEFAULT_TABLE_UPTO, RareTable, shipped_table
from ..sparse import Rarity

log = logging.getLogger("octalgen")

#: :func:`plan_game` plans no kernel whose first heap lies past this many values (seconds of
#: the exact solver).  The kernel of ``.6`` starts at 41,256; ``.14``'s rare values still
#: appear past 6 million.
PLAN_LIMIT = 1 << 21


def rare_entries(values, rarity: Rarity) -> dict[int, int]:
    """``{position: value}`` of the rare positions among ``values`` (G(0) ...) under ``rarity``."""
    found = {}
    for lo in range(0, len(values), SPILL_PIECE):  # in pieces: a far decision's values are on disk
        piece = np.asarray(values[lo: lo + SPILL_PIECE])
        found.update((lo + int(p), int(piece[p])) for p in np.flatnonzero(rarity.rare_flags(piece, lo)))
    return found


def exact_solver(game, rarity: Rarity | None, values=(), spill_dir=None) -> CExactSolver:
    """The exact solver, continuing from ``values``, under a table's rarity (None: it picks its own
    mask as it goes); past :data:`~octalgen.mapped.SPILL_FROM` values it holds them in files in
    ``spill_dir`` (default: the temporary directory)."""
    if rarity is None:
        return CExactSolver(game, values=values, spill=True, spill_dir=spill_dir)
    return CExactSolver(game, mask=rarity.mask, values=values, position_parity=rarity.parity is not None,
                        spill=True, spill_dir=spill_dir)


def reconcile(table: RareTable, values) -> RareTable:
    """``table`` with its entries below ``len(values)`` replaced by the rare values of ``values``.

    ``values`` are exact values G(0) ... G(N-1); entries at N or beyond are kept as they are
    (nothing can check them yet).  Rare values past the table's ``exact_to`` extend it (the
    table claimed nothing there): one line at info level says how many, each one is logged at
    debug level.  A difference below ``exact_to`` contradicts the table: one warning names the
    game, the first difference and how many there are (each one at debug level).
    """
    found = rare_entries(values, table.rarity)
    listed = {p: v for p, v in table.entries if p < len(values)}
    if found == listed:
        return table if table.exact_to >= len(values) else table.with_entries(table.entries, len(values))
    code = table.game.code
    added, wrong = 0, []
    for p in sorted(found.keys() | listed.keys()):
        if p not in listed and p >= table.exact_to:
            log.debug("%s: rare table extended by the exact solver: G(%d) = %d", code, p, found[p])
            added += 1
        elif p not in listed:
            wrong.append(f"rare table lacks G({p}) = {found[p]} (found by the exact solver)")
        elif p not in found:
            wrong.append(f"rare table lists G({p}) = {listed[p]}, but G({p}) = {values[p]} is common")
        elif found[p] != listed[p]:
            wrong.append(f"rare table says G({p}) = {listed[p]}, but it is {found[p]}")
    if added:
        log.info("%s: rare table extended past its exact_to %d by the exact solver: %d rare value%s added, "
                 "exact to %d now", code, table.exact_to, added, "" if added == 1 else "s", len(values))
    for difference in wrong:
        log.debug("%s: %s; corrected", code, difference)
    if len(wrong) == 1:
        log.warning("%s: %s; corrected", code, wrong[0])
    elif wrong:
        log.warning("%s: %s, and %d more of its entries below %d are wrong; corrected", code, wrong[0],
                    len(wrong) - 1, table.exact_to)
    entries = sorted(found.items()) + [e for e in table.entries if e[0] >= len(values)]
    return table.with_entries(entries, max(table.exact_to, len(values)))


def plan_for(table: RareTable, values, storage: str | None = None, *, position: int | None = None,
             far_from: int | None = None) -> KernelPlan | None:
    """The kernel plan of ``table`` (u8 storage only if the exact ``values`` so far allow it).

    None when the game has no speculative kernel: mask 0 (no sparse space) or no move that
    leaves a heap.  ``values``: exact values G(0) ... (under a mask, any values that appeared:
    only the largest common one matters).

    A rare value found far out, at heap m, moves the u8 kernel's first heap past 2m, and the
    u16 kernel's only to m plus the game's largest take (:attr:`~octalgen.plan.KernelPlan.start`;
    under a mask).  So, with no forced ``storage``, a run at ``position`` below the u8 plan's first
    heap whose table has a rare position at ``far_from`` or beyond (the engine gives the end of
    the values its history holds from G(0)) gets the u16 plan: the exact solver, which holds
    every value it computes, then steps over a few heaps, not m.  The engine goes back to u8
    at that plan's first heap.  Nearer rare values keep the u8 plan: where they come thick
    (``.14`` near G(100,000)) the exact solver finds them faster than a kernel built for each.
    """
    if no_kernel_reason(table) is not None:
        return None
    known = np.asarray(values, dtype=np.int64)
    common = known[~table.rare_flags(known, 0)]
    max_common = int(common.max()) if len(common) else None
    if storage == "u8" and max_common is not None and max_common >= 512:
        raise InputError(f"{table.game.code}: G values of 512 or more cannot be stored in u8")
    plan = make_plan(table, max_common=max_common, storage=storage)
    if (storage is None and position is not None and far_from is not None and table.kind == "range"
            and plan.encoding.kind == "u8" and position < plan.start and table.last_position >= far_from):
        sooner = make_plan(table, storage="u16")
        if sooner.start < plan.start:
            return sooner
    return plan


def plan_game(game: OctalGame, table: RareTable | None = None, *, required: bool = False,
              limit: int = PLAN_LIMIT) -> tuple[KernelPlan | None, np.ndarray]:
    """The kernel plan a run of ``game`` starts with, and the exact values before its first heap.

    The one way to a plan, without an engine: every command that builds a kernel (``emit c``,
    ``emit hdl``, ``emit cuda``, ``bench``, ``synth``, ``fpga``) plans here, as the engine's
    exact steps do.  The table is a hint: the exact solver computes G(0) ... up to the kernel's
    first heap, the table is reconciled with those values (:func:`reconcile`) and the kernel
    planned again, until its first heap stays put.

    Parameters
    ----------
    game : OctalGame
    table : RareTable, optional
        Default: the shipped table, else one found from the first
        :data:`~octalgen.rare.DEFAULT_TABLE_UPTO` exact values.
    required : bool
        Raise instead of returning no plan when the game has no speculative kernel.
    limit : int
        No kernel when its first heap would lie past G(limit - 1) (a game whose rare values
        have not died out by then; the exact values would take long to compute).

    Returns
    -------
    (KernelPlan or None, numpy.ndarray)
        The plan (its ``table`` the reconciled one) and G(0) ... G(plan.start - 1) as uint16.
        None for a game with no kernel (mask 0, no move that leaves a heap, or a first heap
        past ``limit``: the reason is logged at info level); the values are then those computed
        to decide it.

    Raises
    ------
    InputError
        With ``required``, when the game has no speculative kernel (the reason in one line).
    """
    values = np.zeros(0, dtype=np.uint16)
    if table is None:
        table = shipped_table(game)
    if table is None:  # the first values decide the sparse space, as in the engine's exact steps
        values = exact_solver(game, None).extend(DEFAULT_TABLE_UPTO).copy()
        table = RareTable.from_values(game, values)
    plan, too_far = plan_for(table, values), None
    while plan is not None and len(values) < plan.start:
        if plan.start > limit:  # rare values keep appearing: the first heap keeps moving on
            too_far = (f"{game.code}: rare values still appear at G({table.last_position}), and the kernel would "
                       f"start past G({limit - 1}): no speculative kernel; use an exact backend")
            plan = None
            break
        values = exact_solver(game, table.rarity, values).extend(plan.start).copy()
        table = reconcile(table, values)
        plan = plan_for(table, values)
    if plan is None:
        reason = too_far or no_kernel_reason(table)
        if required:
            raise InputError(reason)
        log.info("%s", reason)
        return None, values
    return plan, values[: plan.start]


def decide_failure(table: RareTable, encoding, values, failure, spill_dir=None) -> tuple[int, RareTable, bool,
                                                                                      CExactSolver]:
    """The exact G(m) where a proof failed (m = ``len(values)``), and what follows from it.

    ``values`` are the proven G(0) ... G(m-1).  Returns ``(value, table, needs_u16, solver)``: a
    rare value is added to the table (a new kernel is needed); a common one is a correction of the
    kernel's value (``needs_u16`` when it does not fit the storage).  ``solver``: the exact solver,
    holding G(0) ... G(m), for the exact steps that follow (one copy of the values, not two).
    """
    m = failure.heap
    solver = exact_solver(table.game, table.rarity, values, spill_dir)
    value = int(solver.extend(m + 1)[m])
    if failure.true_value is not None and failure.true_value != value:
        raise ComputationError(f"the verifier says G({m}) = {failure.true_value}, the exact solver "
                               f"{value}: a bug, please report it")
    if table.is_rare(value, m):
        return value, table.with_entry(m, value), False, solver
    return value, table, not encoding.fits(value), solver
