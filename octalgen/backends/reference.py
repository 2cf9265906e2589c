"""The pure-Python exact reference as a backend (see :mod:`octalgen.reference`)."""

from __future__ import annotations

from ..reference import ExactSolver
from . import Backend, register


def _compute(game, start, count, table=None, threads=None, progress=None):
    # The rare table only lends its mask (and positional parity): the solver finds every rare
    # value itself, so a wrong table can slow it down but never make it wrong.
    solver = ExactSolver(
        game, mask=table.mask if table is not None else None, parity=table.parity if table is not None else None
    )
    if progress is not None:
        progress.phase("pure-Python reference")
    solver.extend(start + count)
    if progress is not None:
        progress.update(start + count)
    yield solver.values[start : start + count].copy()


register(
    Backend(
        name="reference",
        exact=True,
        speed_rank=0,
        summary="pure-Python rare-value algorithm (exact, about 10^4 values/s)",
        compute=_compute,
    )
)
