"""Values computed anew: recovery's last resort when the history no longer holds them.

:func:`recompute_values` is :meth:`Engine.recompute <octalgen.engine.core.Engine.recompute>`, the
history's ``recompute`` (:mod:`.history`): G(0) ... G(heap-1) proven again by a run of their own,
under the enclosing run's table, options and plug-in.
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Protocol

import numpy as np

from ..errors import InternalError, Interrupted
from ..game import OctalGame
from ..rare import RareTable
from .history import History
from .options import EngineOptions
from .planning import Planning
from .seams import KernelPlugin
from .signals import StopRequest, StopRequested

__all__ = ["RecomputingRun", "recompute_values"]


class RecomputingRun(Protocol):
    """What a recomputation reads of the run it serves (an :class:`~octalgen.engine.core.Engine`,
    named here only in words: the engine imports this module), and what it makes of it: a run of
    the same class."""

    game: OctalGame
    options: EngineOptions
    planning: Planning
    start_table: RareTable | None
    directory: Path | None
    kernels: KernelPlugin
    stop: StopRequest

    def __init__(
        self,
        game: OctalGame,
        options: EngineOptions,
        *,
        table: RareTable | None,
        directory: str,
        keep_all: bool,
        kernels: KernelPlugin,
        stop: StopRequest,
    ) -> None: ...

    @property
    def history(self) -> History: ...

    def run(self) -> object: ...


def recompute_values(engine: RecomputingRun, heap: int, out: np.ndarray | None = None) -> np.ndarray:
    """G(0) ... G(heap-1), computed anew by a run of their own under ``engine``'s table, options and
    plug-in.

    That run keeps every value in a temporary directory under ``engine``'s, so that a recovery of
    its own reads them back, and shares ``engine``'s stop request (a stop asked of the enclosing run
    stops it, and is raised there as :class:`~.signals.StopRequested`).  ``out``: an array of
    ``heap`` values to write them to in pieces (one on disk), instead of joining them in memory.
    """
    table = engine.planning.table if engine.planning.table is not None else engine.start_table
    with tempfile.TemporaryDirectory(prefix="octalgen-recompute-", dir=engine.directory) as directory:
        run = type(engine)(
            engine.game,
            replace(engine.options, until=heap, backlog=None),
            table=table,
            directory=directory,
            keep_all=True,
            kernels=engine.kernels,
            stop=engine.stop,
        )
        try:
            run.run()
        except Interrupted:  # the enclosing run's stop request: it stops where it stands
            raise StopRequested from None
        held = run.history.values(0, heap) if out is None else out if run.history.copy_values(out) else None
        if held is None:  # it kept every value
            raise InternalError(f"a recomputation to G({heap}) lost values it kept")
        return held
