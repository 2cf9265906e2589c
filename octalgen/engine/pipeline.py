"""The pipeline: chunks produced ahead of the proven position, proven elsewhere, taken back in order.

:func:`start_pipeline` decides where proofs run (this process, local worker processes, a Dask
cluster: :mod:`.executors`) and how the cores are shared with the kernel's threads
(:mod:`.split`).  :class:`Pipeline` drives the :class:`~.producer.Producer` at most
``backlog`` chunks ahead, hands each chunk to the executor, and gives the chunks back with
their results in the order they were produced; what to do with a result (hand the values on,
or recover) is the engine's.
"""

from __future__ import annotations

import logging
from collections import deque
from typing import Iterator

from ..cpu.kernel import default_threads
from ..cpu.verify import VerifyResult
from ..errors import ComputationError
from ..plan import KernelPlan
from . import split
from .executors import InProcess, make_executor, verify_task
from .history import History
from .options import SMALL_JOB, EngineOptions
from .producer import Chunk, Producer
from .recovery import verify_again
from .seams import KernelPlugin
from .signals import StopRequest

log = logging.getLogger("octalgen")

#: Seconds between looks at the stop request while a result is awaited.
WAIT_SLICE = 0.2


class Pipeline:
    """The producer, and the chunks in flight on ``executor``.

    Parameters
    ----------
    producer : Producer
    kernels : KernelPlugin
        Gives each chunk's verifier.
    executor : object
        See :mod:`.executors`.
    backlog : int
        The most chunks in flight.
    verify : bool
        False: chunks come back unverified (``c-speculative``), with no result.
    stop : StopRequest
        Looked at while a result is awaited.

    Attributes
    ----------
    cpu_seconds, cpu_seconds_here : float
        The proofs' CPU time, and the part of it spent in this process.
    values : int
        Heaps whose proofs came back.
    """

    def __init__(self, producer: Producer, kernels: KernelPlugin, executor, backlog: int, verify: bool,
                 stop: StopRequest):
        self.producer = producer
        self.kernels = kernels
        self.executor = executor
        self.backlog = backlog
        self.verify = verify
        self.stop = stop
        self.here = isinstance(executor, InProcess)  # proofs run in this process
        self.cpu_seconds = self.cpu_seconds_here = 0.0
        self.values = 0
        self._pending: deque[tuple[Chunk, object]] = deque()
        self._shared = (None, None)  # the prefix last shared with the executor, and its handle

    def step(self, until: int, size: int, threads: int, reach: int | None,
             prefix) -> Iterator[tuple[Chunk, VerifyResult | None]]:
        """Produce a chunk if the backlog allows, else wait for the oldest; yield what came back, in order.

        ``until``, ``size``, ``threads``, ``reach``: see :meth:`~.producer.Producer.produce`;
        ``prefix``: the exact values the proofs need.  Yields ``(chunk, result)``, ``result`` None
        for an unverified chunk; the caller may stop taking at any point.
        """
        if self.producer.produced_to < until and len(self._pending) < self.backlog:
            chunk = self.producer.produce(until, size, threads, reach)
            if chunk.first < chunk.stop and self.verify:
                self._submit(chunk, prefix)
            elif chunk.first < chunk.stop:
                yield chunk, None
            yield from self._results(block=False)
        elif self._pending:
            yield from self._results(block=True)
        else:
            raise ComputationError(f"the run stalled: nothing in flight, produced to G({self.producer.produced_to}); "
                                   "a bug, please report it")

    def _submit(self, chunk: Chunk, prefix) -> None:
        if self._shared[0] is None or len(self._shared[0]) != len(prefix):  # the prefix grew: share it anew
            self._shared = (prefix, self.executor.share(prefix))
        future = self.executor.submit(verify_task, self.kernels(chunk.plan)[1], chunk.history, chunk.base,
                                      self._shared[1], chunk.first, chunk.stop)
        self._pending.append((chunk, future))

    def _results(self, block: bool) -> Iterator[tuple[Chunk, VerifyResult]]:
        while self._pending and (block or self._pending[0][1].done()):
            block = False
            chunk, future = self._pending[0]
            while True:  # in short waits, so that a stop request is noticed
                self.stop.check()
                try:
                    result, seconds = future.result(timeout=WAIT_SLICE)
                    break
                except TimeoutError:
                    continue
                except ComputationError:
                    # A worker killed by the very signal that stops the run (sent to the process group
                    # while the worker started, before it could ignore it): a stop, not a failure.
                    self.stop.check()
                    raise
            self._pending.popleft()
            self.cpu_seconds += seconds
            self.cpu_seconds_here += seconds if self.here else 0.0
            self.values += chunk.stop - chunk.first
            yield chunk, result

    def verify_again(self, chunk: Chunk, undecided: VerifyResult, history: History, values_before) -> VerifyResult:
        """An undecided chunk proven here with more values (:func:`~.recovery.verify_again`)."""
        result, seconds = verify_again(self.kernels(chunk.plan)[1], chunk, undecided, history, values_before)
        self.cpu_seconds += seconds
        self.cpu_seconds_here += seconds
        return result

    def cancel(self) -> None:
        """Forget every chunk in flight (the producer starts again from the proven position)."""
        for _, future in self._pending:
            future.cancel()
        self._pending.clear()

    def close(self) -> None:
        """Cancel what is in flight and end the executor's processes at once."""
        self.cancel()
        self.executor.close(kill=True)


def start_pipeline(options: EngineOptions, kernels: KernelPlugin, plan: KernelPlan, history: History,
                   producer: Producer, stop: StopRequest) -> tuple[Pipeline, split.Split | None]:
    """The pipeline from the proven position on, and the automatic split of the cores where one is made."""
    chosen = None
    if not options.verify or kernels.verify_here:
        workers = 0
    elif options.workers is not None:
        workers = options.workers
    elif options.scheduler is None and options.until - history.position <= SMALL_JOB:
        workers = 0  # starting worker processes would cost more than they save
    elif options.threads is None and options.scheduler is None:
        kernel, verifier = kernels(plan)
        window = plan.encoding.encode_array(history.tail(plan.window)).astype(kernel.dtype)
        chosen = split.choose(plan, kernel, verifier, window, history.prefix, history.position)
        log.info("cores: %s", chosen.describe())
        workers = chosen.workers
    else:
        workers = default_threads()
    executor = make_executor(workers, options.scheduler, stop.requested, kernels.verify_piece)
    backlog = options.backlog or 2 * executor.workers + 2
    return Pipeline(producer, kernels, executor, backlog, options.verify, stop), chosen
