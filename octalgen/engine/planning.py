"""Planning: the one owner of a run's plan and of every decision about it.

The plan of a run is its rare table, the value storage of its kernel (u8 or u16) and the
:class:`~octalgen.plan.KernelPlan` made from them.  :class:`Planning` holds that state and is the only
code that changes it; the engine tells it what happened (exact values computed, a recovery's
decision, a value the producer's storage cannot hold) and takes the plan it answers with.  The
producer decides nothing: where a value does not fit its storage it stops and reports the
:class:`~octalgen.cpu.kernel.StorageOverflow`, and the engine asks :meth:`Planning.widen_storage`.

The rare table is a hint, never trusted: :func:`reconcile` replaces its entries by the rare
values the exact solver found; :func:`plan_for` plans a kernel only where one can work;
:func:`plan_game` is the one way to the plan a run starts with outside the engine (what
``emit``, ``bench``, ``synth`` and ``fpga`` build from).
"""

from __future__ import annotations

import logging
from typing import Literal, overload

import numpy as np

from ..errors import InputError, InternalError
from ..game import OctalGame
from ..mapped import SPILL_PIECE
from ..plan import KernelPlan, make_plan, no_kernel_reason
from ..rare import DEFAULT_TABLE_UPTO, RareTable, shipped_table
from ..sparse import Rarity
from .exact_steps import exact_solver

log = logging.getLogger("octalgen")

#: :func:`plan_game` plans no kernel whose first heap lies past this many values: the exact solver
#: would take long to reach it, and a game whose rare values have not died out by then (``.14``'s
#: still appear past 6 million) is one for an exact backend.
PLAN_LIMIT = 1 << 21

#: An early start costs about this many exact steps a crossing heap
#: (:attr:`~octalgen.plan.KernelPlan.crossings`): the producer takes each by itself, the verifier its
#: terms from a table, and the heaps up to twice the last rare position, which the exact solver would
#: have computed, cost the kernel and a proof slowed by the rare heaps it reads.  ``.172`` (6,008
#: crossings for 51,381 exact steps) runs no faster early; ``.014`` (2,111 for 64,126) does.
CROSSING_STEPS = 10


class Planning:
    """The plan state of one run, and every decision about it (see the module docstring).

    Parameters
    ----------
    game : OctalGame
    storage : {"u8", "u16"} or None
        A forced storage (None: the plan's choice, until a value needs 16 bits).
    early : bool
        The kernel plug-in takes plans that start early (:attr:`~.seams.KernelPlugin.early_start`).

    Attributes
    ----------
    table : RareTable or None
        The run's rare table (None until the first values decide it).
    storage : str or None
        The forced storage: given, or ``"u16"`` once a value needed it.
    plan : KernelPlan or None
        The kernel plan (None before there is a table, or for a game without a kernel).
    """

    def __init__(self, game: OctalGame, storage: str | None = None, early: bool = True):
        self.game = game
        self.table: RareTable | None = None
        self.storage = storage
        self.plan: KernelPlan | None = None
        self.early = early

    @property
    def known_table(self) -> RareTable:
        """:attr:`table`, where the engine knows there is one (a kernel plan, or exact values, made it)."""
        if self.table is None:
            raise InternalError(f"{self.game.code}: the run's rare table is needed before the first values decide it")
        return self.table

    @property
    def kernel_plan(self) -> KernelPlan:
        """:attr:`plan`, where the kernel runs (it runs only where there is one)."""
        if self.plan is None:
            raise InternalError(f"{self.game.code}: the kernel runs without a kernel plan")
        return self.plan

    def restore(self, table: RareTable | None, storage: str | None, history) -> None:
        """The plan of a run resumed from its checkpoint's table and storage."""
        self.table, self.storage = table, storage
        if table is not None:
            self.plan = plan_for(table, self.known_values(history), storage, early=self.early)

    def replan(self, history) -> bool:
        """Plan the kernel for the current table and storage (the run's :class:`~.history.History`
        tells what storage must hold); True when the plan changed."""
        plan = plan_for(self.known_table, self.known_values(history), self.storage, early=self.early)
        if plan is None:
            log.info(
                "%s has no sparse space or no move leaving a heap: the exact solver computes every value",
                self.game.code,
            )
        else:
            log_plan(plan, self.plan)
        changed = plan != self.plan
        self.plan = plan
        return changed

    def change_due(self, position: int, overflow=None) -> bool:
        """Whether the plan changes at ``position`` (then :meth:`replan`): the producer reported a value
        its storage cannot hold (``overflow``, a :class:`~octalgen.cpu.kernel.StorageOverflow`) and
        every heap before it is proven, so storage widens to 16 bits."""
        if overflow is not None and position >= overflow.heap:
            self.widen_storage(overflow)
            return True
        return False

    def first_table(self, table: RareTable | None) -> None:
        """The table a fresh run starts from: ``table``, else the shipped one (None: the first values decide)."""
        self.table = table if table is not None else shipped_table(self.game)

    def table_from(self, values: np.ndarray) -> None:
        """The table the first exact ``values`` decide (a game without a shipped table)."""
        self.table = RareTable.from_values(self.game, values)
        log.info(
            "rare table of %s from its first %d values: sparse space %s, %d rare positions",
            self.game.code,
            len(values),
            self.table.describe(),
            self.table.count,
        )

    def reconcile(self, values) -> None:
        """The table reconciled with the exact ``values`` G(0) ... (:func:`reconcile`)."""
        self.table = reconcile(self.known_table, values)

    def adopt(self, table: RareTable) -> None:
        """Go on under ``table``: a new rare value added, or a table under another mask."""
        self.table = table

    def widen_storage(self, overflow: Exception | None = None) -> None:
        """Store values in 16 bits from now on: a common value does not fit 8 (``overflow``: the
        producer's report, said as a warning)."""
        if overflow is not None:
            log.warning("%s; continuing with 16-bit storage", overflow)
        self.storage = "u16"

    def plan_with(self, table: RareTable, values) -> KernelPlan | None:
        """The plan of ``table`` under the current storage, from the exact ``values`` (a table the
        run may switch to)."""
        return plan_for(table, values, self.storage, early=self.early)

    def known_values(self, history) -> np.ndarray:
        """The prefix, and under a mask the values that appeared past it: what u8 storage must hold."""
        late = history.late_values() if self.known_table.kind == "range" else None
        return history.prefix if late is None else np.concatenate([history.prefix, late])


def rare_entries(values, rarity: Rarity) -> dict[int, int]:
    """``{position: value}`` of the rare positions among ``values`` (G(0) ...) under ``rarity``."""
    found: dict[int, int] = {}
    for lo in range(0, len(values), SPILL_PIECE):  # in pieces: a far decision's values are on disk
        piece = np.asarray(values[lo : lo + SPILL_PIECE])
        found.update((lo + int(p), int(piece[p])) for p in np.flatnonzero(rarity.rare_flags(piece, lo)))
    return found


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
        log.info(
            "%s: rare table extended past its exact_to %d by the exact solver: %d rare value%s added, exact to %d now",
            code,
            table.exact_to,
            added,
            "" if added == 1 else "s",
            len(values),
        )
    for difference in wrong:
        log.debug("%s: %s; corrected", code, difference)
    if len(wrong) == 1:
        log.warning("%s: %s; corrected", code, wrong[0])
    elif wrong:
        log.warning(
            "%s: %s, and %d more of its entries below %d are wrong; corrected",
            code,
            wrong[0],
            len(wrong) - 1,
            table.exact_to,
        )
    entries = sorted(found.items()) + [e for e in table.entries if e[0] >= len(values)]
    return table.with_entries(entries, max(table.exact_to, len(values)))


def plan_for(table: RareTable, values, storage: str | None = None, *, early: bool = False) -> KernelPlan | None:
    """The kernel plan of ``table`` (u8 storage only if the exact ``values`` so far allow it).

    None when the game has no speculative kernel: mask 0 (no sparse space) or no move that
    leaves a heap.  ``values``: exact values G(0) ... (under a mask, any values that appeared:
    only the largest common one matters).

    A rare value found far out, at heap m, is a term at offset m + k, and a u8 kernel could start
    again only past 2m, once no term reads a rare position (:attr:`~octalgen.plan.KernelPlan.start`):
    the exact solver would step from m to 2m, holding every value it computes.  With ``early``
    (the kernel plug-in takes such plans) the u8 plan that starts early, at m plus the game's
    largest take, is taken instead where its crossings, which the producer and the verifier take
    apart, cost less than those exact steps (:data:`CROSSING_STEPS`): a rare value found far past
    the last one.  Where rare values come thick (a table's first ones; ``.14`` near G(100,000))
    nearly every heap up to 2m is a crossing, and the exact solver finds the next ones faster
    than a kernel built for each.
    """
    if no_kernel_reason(table) is not None:
        return None
    known = np.asarray(values, dtype=np.int64)
    common = known[~table.rare_flags(known, 0)]
    max_common = int(common.max()) if len(common) else None
    if storage == "u8" and max_common is not None and max_common >= 512:
        raise InputError(f"{table.game.code}: G values of 512 or more cannot be stored in u8")
    plan = make_plan(table, max_common=max_common, storage=storage)
    if early and plan.encoding.kind == "u8" and table.kind == "range":
        sooner = make_plan(table, max_common=max_common, storage=storage, early=True)
        gain = plan.start - sooner.start  # the exact steps an early start saves
        if sooner.crossings_at_least() * CROSSING_STEPS < gain and len(sooner.crossings) * CROSSING_STEPS < gain:
            return sooner
    return plan


@overload
def plan_game(
    game: OctalGame, table: RareTable | None = None, *, required: Literal[True], limit: int = PLAN_LIMIT
) -> tuple[KernelPlan, np.ndarray]: ...


@overload
def plan_game(
    game: OctalGame, table: RareTable | None = None, *, required: bool = False, limit: int = PLAN_LIMIT
) -> tuple[KernelPlan | None, np.ndarray]: ...


def plan_game(
    game: OctalGame, table: RareTable | None = None, *, required: bool = False, limit: int = PLAN_LIMIT
) -> tuple[KernelPlan | None, np.ndarray]:
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
            too_far = (
                f"{game.code}: rare values still appear at G({table.last_position}), and the kernel would "
                f"start past G({limit - 1}): no speculative kernel; use an exact backend"
            )
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


def log_plan(plan: KernelPlan, previous: KernelPlan | None = None) -> None:
    """Say (at -v) which kernel a run now produces with, unless it is the ``previous`` one (its table
    exact to further on, say)."""
    said = len(plan.terms), plan.window, plan.start, plan.encoding.kind
    if previous is None or said != (len(previous.terms), previous.window, previous.start, previous.encoding.kind):
        log.info("kernel plan for %s: %d terms, window %d, first heap %d, storage %s", plan.game.code, *said)
