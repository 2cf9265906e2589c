"""Values as a stream: the engine behind ``octalgen values`` and the ``c`` backends."""

from __future__ import annotations

from collections import deque

import numpy as np

from .core import Engine, EngineOptions
from .seams import Consumer


class ValueSink(Consumer):
    """A consumer that keeps the values G(start) ... G(stop-1) until they are taken (nothing in checkpoints)."""

    name = "values"

    def __init__(self, start: int, stop: int):
        self.start, self.stop = start, stop
        self.ready: deque[np.ndarray] = deque()

    def accept(self, first: int, values: np.ndarray) -> None:
        lo, hi = max(first, self.start), min(first + len(values), self.stop)
        if lo < hi:
            self.ready.append(values[lo - first: hi - first].astype(np.int64))


def stream_values(game, start: int, count: int, table=None, *, progress=None, kernels=None, **options):
    """Yield G(start) ... G(start+count-1) in int64 chunks, computed by the engine.

    Parameters
    ----------
    game : OctalGame
    start, count : int
    table : RareTable, optional
        A hint (see :class:`~octalgen.engine.core.Engine`).
    progress : object, optional
        Progress display (see :class:`~octalgen.engine.core.Engine`).
    kernels : callable, optional
        The kernel plug-in (default: the generated C; see :class:`~octalgen.engine.seams.KernelPlugin`).
    **options
        :class:`~octalgen.engine.options.EngineOptions` fields: ``threads``, ``workers``, ``chunk``,
        ``verify`` (False: the kernel's values unproven), ``storage`` ...
    """
    sink = ValueSink(start, start + count)
    engine = Engine(game, EngineOptions(until=start + count, **options), [sink], table=table, progress=progress,
                    kernels=kernels)
    for _ in engine.steps():
        while sink.ready:
            yield sink.ready.popleft()
    while sink.ready:
        yield sink.ready.popleft()
