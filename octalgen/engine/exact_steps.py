"""The exact steps: values from the exact solver, in steps, before the kernel takes over.

Up to the kernel's first heap (and through the whole run of a game without a kernel) values
come from the exact solver (:class:`~octalgen.cpu.exact.CExactSolver`), :data:`EXACT_STEP`
heaps at a time: between steps the engine notices a stop request and writes its checkpoints,
so a run stopped in its exact phase goes on from its last step, not from G(0).  The solver is
kept between steps and continues where it stopped; a new one starts from the proven values
after a resume or when the rarity it works under changes.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from ..cpu.exact import CExactSolver
from ..game import OctalGame
from ..plan import KernelPlan
from ..rare import DEFAULT_TABLE_UPTO, RareTable
from ..sparse import Rarity

#: Heaps per exact step.
EXACT_STEP = 1 << 15


def exact_solver(game, rarity: Rarity | None, values=(), spill_dir=None) -> CExactSolver:
    """The exact solver, continuing from ``values``, under a table's rarity (None: it picks its own
    mask as it goes); past :data:`~octalgen.mapped.SPILL_FROM` values it holds them in files in
    ``spill_dir`` (default: the temporary directory)."""
    if rarity is None:
        return CExactSolver(game, values=values, spill=True, spill_dir=spill_dir)
    return CExactSolver(
        game,
        mask=rarity.mask,
        values=values,
        position_parity=rarity.parity is not None,
        spill=True,
        spill_dir=spill_dir,
    )


def exact_target(
    table: RareTable | None, plan: KernelPlan | None, position: int, until: int
) -> tuple[int, Rarity | None]:
    """Where the exact step from ``position`` ends, and the rarity the solver works under (None: its own).

    Without a table the first :data:`~octalgen.rare.DEFAULT_TABLE_UPTO` values are computed (they
    decide the table); without a kernel the solver goes on to ``until`` under the table's
    rarity, or the mask it finds fastest where the game has no sparse space; otherwise it stops
    at the kernel's first heap.
    """
    if table is None:
        return min(until, DEFAULT_TABLE_UPTO, position + EXACT_STEP), None
    if plan is None:
        return min(until, position + EXACT_STEP), table.rarity if table.mask else None
    return min(until, plan.start, position + EXACT_STEP), table.rarity


class ExactSteps:
    """The exact solver of a game, kept between steps.

    Attributes
    ----------
    cpu_seconds : float
        The solver's CPU time since this object was made.
    """

    def __init__(self, game: OctalGame, spill_dir=None):
        self.game = game
        self.spill_dir = spill_dir  # where a solver continuing from many values holds them (see mapped.py)
        self.cpu_seconds = 0.0
        self._solver: CExactSolver | None = None
        self._rarity: Rarity | None = None

    def values(
        self, position: int, stop: int, rarity: Rarity | None, values_before: Callable[[int], np.ndarray]
    ) -> np.ndarray:
        """G(position) ... G(stop-1) under ``rarity``; ``values_before(n)`` gives G(0) ... G(n-1) for a new solver."""
        if self.held(position) is None or self._rarity != rarity:
            self.continue_from(rarity, values_before(position))
        assert self._solver is not None  # it held the values, or was just made
        began = time.thread_time()
        values = self._solver.extend(stop)[position:stop].copy()
        self.cpu_seconds += time.thread_time() - began
        return values

    def held(self, position: int) -> np.ndarray | None:
        """G(0) ... G(position-1) when the solver holds those values (and perhaps more), else None."""
        if self._solver is not None and len(self._solver) >= position:
            return self._solver.values[:position]
        return None

    def continue_from(self, rarity: Rarity | None, values: np.ndarray) -> None:
        """Go on after ``values`` (G(0) ...) under ``rarity``."""
        self._solver, self._rarity = exact_solver(self.game, rarity, values, self.spill_dir), rarity

    def forget(self) -> None:
        """Let the solver and every value it holds go (the kernel took over; a later exact step starts
        a new one from the proven values)."""
        self._solver = self._rarity = None

    def tail(self, position: int, window: int) -> np.ndarray | None:
        """G(position - window) ... G(position - 1) (zeros before G(0)) when the solver holds
        G(0) ... G(position - 1), else None: a view of the solver's values, where they reach back that far."""
        held = self.held(position)
        if held is None:
            return None
        if position >= window:  # a view: a far term's window is not copied
            return held[position - window :]
        tail = np.zeros(window, dtype=np.uint16)
        have = min(window, position)
        tail[window - have :] = held[position - have :]
        return tail
