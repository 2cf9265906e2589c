"""Values as a stream: the engine behind ``octalgen values`` and the engine's backends."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator

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
            self.ready.append(values[lo - first : hi - first].copy())  # kept past the call: the array is the engine's


class ValueStream:
    """G(start) ... G(start+count-1) in uint16 chunks, as the engine proves them: the one way a value
    stream runs the engine (``octalgen values``, the ``c`` and ``cuda`` backends, ``bench``).

    Iterating runs the engine (:attr:`engine`, whose figures stay readable after it).

    Parameters
    ----------
    game : OctalGame
    start, count : int
    table : RareTable, optional
        A hint (see :class:`~octalgen.engine.core.Engine`).
    progress : object, optional
        Progress display (see :class:`~octalgen.engine.core.Engine`).
    kernels : KernelPlugin, optional
        The kernel plug-in (default: the generated C; see :class:`~octalgen.engine.seams.KernelPlugin`).
    **options
        :class:`~octalgen.engine.options.EngineOptions` fields: ``threads``, ``workers``, ``chunk``,
        ``verify`` (False: the kernel's values unproven), ``storage`` ...
    """

    def __init__(self, game, start: int, count: int, table=None, *, progress=None, kernels=None, **options):
        self.sink = ValueSink(start, start + count)
        self.engine = Engine(
            game,
            EngineOptions(until=start + count, **options),
            (self.sink,),
            table=table,
            progress=progress,
            kernels=kernels,
        )

    def __iter__(self) -> Iterator[np.ndarray]:
        ready = self.sink.ready
        for _ in self.engine.steps():
            while ready:
                yield ready.popleft()
        while ready:
            yield ready.popleft()


def stream_values(
    game, start: int, count: int, table=None, *, progress=None, kernels=None, **options
) -> Iterator[np.ndarray]:
    """Yield G(start) ... G(start+count-1) in uint16 chunks, computed by the engine (:class:`ValueStream`)."""
    yield from ValueStream(game, start, count, table, progress=progress, kernels=kernels, **options)
