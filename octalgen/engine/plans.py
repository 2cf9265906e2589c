"""What the engine decides from exact values: the rare table, the kernel plan, a failed proof.

The rare table is a hint, never trusted: :func:`reconcile` replaces its entries by the rare
values the exact solver found; :func:`plan_for` plans a kernel only where one can work;
:func:`decide_failure` computes G(m) exactly where a proof failed and says what follows.
"""

from __future__ import annotations

import logging

import numpy as np

from ..errors import ComputationError, InputError
from ..plan import KernelPlan, make_plan, plan_terms
from ..rare import RareTable, Rarity
from ..cpu.exact import CExactSolver

log = logging.getLogger("octalgen")


def rare_entries(values, rarity: Rarity) -> dict[int, int]:
    """``{position: value}`` of the rare positions among ``values`` (G(0) ...) under ``rarity``."""
    values = np.asarray(values, dtype=np.int64)
    rare = np.flatnonzero(rarity.rare_flags(values, 0))
    return {int(p): int(values[p]) for p in rare}


def exact_solver(game, rarity: Rarity | None, values=()) -> CExactSolver:
    """The exact solver, continuing from ``values``, under a table's rarity (None: it picks its own
    mask as it goes)."""
    if rarity is None:
        return CExactSolver(game, values=values)
    return CExactSolver(game, mask=rarity.mask, values=values, position_parity=rarity.parity is not None)


def reconcile(table: RareTable, values) -> RareTable:
    """``table`` with its entries below ``len(values)`` replaced by the rare values of ``values``.

    ``values`` are exact values G(0) ... G(N-1).  Each difference is logged as a warning naming
    the position; entries at N or beyond are kept as they are (nothing can check them yet).
    """
    found = rare_entries(values, table.rarity)
    listed = {p: v for p, v in table.entries if p < len(values)}
    if found == listed:
        return table if table.exact_to >= len(values) else table.with_entries(table.entries, len(values))
    for p in sorted(found.keys() | listed.keys()):
        if p not in listed:
            log.warning("rare table lacks G(%d) = %d (found by the exact solver); added", p, found[p])
        elif p not in found:
            log.warning("rare table lists G(%d) = %d, but G(%d) = %d is common; removed", p, listed[p], p,
                        values[p])
        elif found[p] != listed[p]:
            log.warning("rare table says G(%d) = %d, but it is %d; corrected", p, listed[p], found[p])
    entries = sorted(found.items()) + [e for e in table.entries if e[0] >= len(values)]
    return table.with_entries(entries, max(table.exact_to, len(values)))


def plan_for(table: RareTable, values, storage: str | None = None) -> KernelPlan | None:
    """The kernel plan of ``table`` (u8 storage only if the exact ``values`` so far allow it).

    None when the game has no speculative kernel: mask 0 (no sparse space) or no move that
    leaves a heap.
    """
    if table.mask == 0 or not plan_terms(table):
        return None
    known = np.asarray(values, dtype=np.int64)
    common = known[~table.rare_flags(known, 0)]
    max_common = int(common.max()) if len(common) else None
    if storage == "u8" and max_common is not None and max_common >= 512:
        raise InputError(f"{table.game.code}: G values of 512 or more cannot be stored in u8")
    return make_plan(table, max_common=max_common, storage=storage)


def decide_failure(table: RareTable, encoding, values, failure) -> tuple[int, RareTable, bool]:
    """The exact G(m) where a proof failed (m = ``len(values)``), and what follows from it.

    ``values`` are the proven G(0) ... G(m-1).  Returns ``(value, table, needs_u16)``: a rare
    value is added to the table (a new kernel is needed); a common one is a correction of the
    kernel's value (``needs_u16`` when it does not fit the storage).
    """
    m = failure.heap
    solver = exact_solver(table.game, table.rarity, values)
    value = int(solver.extend(m + 1)[m])
    if failure.true_value is not None and failure.true_value != value:
        raise ComputationError(f"the verifier says G({m}) = {failure.true_value}, the exact solver "
                               f"{value}: a bug, please report it")
    if table.is_rare(value, m):
        return value, table.with_entry(m, value), False
    return value, table, not encoding.fits(value)
