"""The pipeline: chunks produced ahead of the proven position, proven elsewhere, taken back in order.

:func:`start_pipeline` decides where proofs run (this process, local worker processes, a Dask
cluster: :mod:`.executors`) and how the cores are shared with the kernel's threads
(:mod:`.split`).  :class:`Pipeline` drives the :class:`~.producer.Producer` at most
``backlog`` chunks ahead, hands each chunk to the executor, and gives the chunks back with
their results in the order they were produced; what to do with a result (hand the values on,
or recover) is the engine's.

Where proofs run in other processes, the producer runs in a thread of its own
(:class:`~.producer_thread.ProducerThread`): the coordinating thread then only hands out chunks as they
come, takes results, and waits on both at once, so a verifying process that finishes is given
the next chunk at once rather than when the kernel's current chunk is done, and the kernel never
waits for the coordinator.  The last chunk before the goal is split among the processes, so that
the run does not end on one process proving it alone.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections import deque
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..cpu.kernel import default_threads
from ..cpu.verify import PROVEN, VerifyResult
from ..errors import ComputationError, InternalError
from ..plan import KernelPlan
from . import split
from .executors import VERIFY_HISTORY, Executor, InProcess, VerifyFuture, make_executor, verify_task
from .history import History
from .options import SMALL_JOB, EngineOptions
from .producer import Chunk, Producer
from .producer_thread import ProducerThread
from .seams import KernelPlugin
from .signals import StopRequest

log = logging.getLogger("octalgen")

#: Seconds between looks at the stop request while a result is awaited.
WAIT_SLICE = 0.2

#: Fewest heaps of a piece of the last chunk (smaller pieces cost more to send than they save).
LAST_PIECE = 1 << 16


class Pipeline:
    """The producer, and the chunks in flight on ``executor``.

    Parameters
    ----------
    producer : Producer or ProducerThread
        A :class:`~.producer_thread.ProducerThread` produces ahead in its own thread.
    kernels : KernelPlugin
        Gives each chunk's verifier.
    executor : Executor
        See :mod:`.executors`.
    backlog : int
        The most chunks in flight.
    verify : bool
        False: chunks come back unverified (``c-speculative``), with no result.
    stop : StopRequest
        Looked at while a result is awaited.
    measuring_seconds : float, optional
        See below.

    Attributes
    ----------
    cpu_seconds, cpu_seconds_here : float
        The proofs' CPU time, and the part of it spent in this process.
    measuring_seconds : float
        The process's CPU time spent choosing the split of the cores (:func:`start_pipeline`: the
        kernel and verifier samples, once per machine, and a block length for ``--threads``).
    values : int
        Heaps whose proofs came back.
    """

    def __init__(
        self,
        producer: Producer | ProducerThread,
        kernels: KernelPlugin,
        executor: Executor,
        backlog: int,
        verify: bool,
        stop: StopRequest,
        measuring_seconds: float = 0.0,
    ):
        self.producer = producer
        self.kernels = kernels
        self.executor = executor
        self.backlog = backlog
        self.verify = verify
        self.stop = stop
        self.here = isinstance(executor, InProcess)  # proofs run in this process
        self.cpu_seconds = self.cpu_seconds_here = 0.0
        self.measuring_seconds = measuring_seconds
        self.values = 0
        self._pending: deque[tuple[Chunk, VerifyFuture, Any]] = deque()  # chunk, future, staged history
        self._shared = (None, None)  # the prefix last shared with the executor, and its handle

    def step(
        self, until: int, size: int, threads: int, proof_history: int | None, prefix
    ) -> Iterator[tuple[Chunk, VerifyResult | None]]:
        """Produce a chunk if the backlog allows, else wait for the oldest; yield what came back, in order.

        ``until``, ``size``, ``threads``, ``proof_history``: see :meth:`~.producer.Producer.produce`;
        ``prefix``: the exact values the proofs need.  Yields ``(chunk, result)``, ``result`` None
        for an unverified chunk; the caller may stop taking at any point.
        """
        producer = self.producer
        if isinstance(producer, ProducerThread):
            yield from self._step_threaded(producer, until, size, threads, proof_history, prefix)
        elif not producer.exhausted(until) and len(self._pending) < self.backlog:
            chunk = producer.produce(until, size, threads, proof_history)
            if chunk.first < chunk.stop and self.verify:
                self._submit(chunk, prefix, until)
            elif chunk.first < chunk.stop:
                yield chunk, None
            yield from self._results(block=False)
        elif self._pending:
            yield from self._results(block=True)
        else:
            self._stalled()

    def _step_threaded(
        self, producer: ProducerThread, until: int, size: int, threads: int, proof_history: int | None, prefix
    ) -> Iterator[tuple[Chunk, VerifyResult | None]]:
        # Hand out every chunk ready (up to the backlog) and take every result back; where neither
        # happened, wait for either (a result, a chunk, or WAIT_SLICE for a look at the stop request).
        producer.run(until, size, threads, proof_history, ahead=1)  # one chunk ready beyond the backlog
        for attempt in (0, 1):
            moved = False
            while len(self._pending) < self.backlog:
                chunk = producer.take()
                if chunk is None:
                    break
                moved = True
                if chunk.first < chunk.stop and self.verify:
                    self._submit(chunk, prefix, until)
                elif chunk.first < chunk.stop:
                    yield chunk, None
            for item in self._results(block=False):
                moved = True
                yield item
            if moved or attempt:
                return
            if not self._pending and producer.idle():
                self._stalled()
            self.stop.check()
            # A chunk ready is worth waking for only where the backlog has room for it.
            self.executor.wait(WAIT_SLICE, producer.wake if len(self._pending) < self.backlog else None)

    def _stalled(self):
        raise InternalError(f"the run stalled: nothing in flight, produced to G({self.producer.produced_to})")

    def _submit(self, chunk: Chunk, prefix, until: int) -> None:
        if self._shared[0] is None or len(self._shared[0]) != len(prefix):  # the prefix grew: share it anew
            self._shared = (prefix, self.executor.share(prefix))
        verifier = self.kernels(chunk.plan)[1]
        pieces = 1
        if chunk.stop >= until and not self.here:  # the last chunk: every process takes a part
            pieces = max(1, min(self.executor.workers, (chunk.stop - chunk.first) // LAST_PIECE))
        bounds = [chunk.first + (chunk.stop - chunk.first) * i // pieces for i in range(pieces + 1)]
        base = chunk.base
        if chunk.tape is not None:  # mapped by the task, not copied (a cluster is sent the window and more)
            if self.executor.tape_access == "copy":
                base = max(base, chunk.first - chunk.plan.window - VERIFY_HISTORY)
            staged = chunk.tape.stage(base, chunk.stop, self.executor.tape_access)
        else:
            staged = self.executor.stage(chunk.history)  # written once, read by every piece
        futures = []
        for a, b in itertools.pairwise(bounds):
            # Each piece gets the history up to its own end: what the whole chunk's task would read.
            codes = staged[: b - base] if isinstance(staged, np.ndarray) else staged.head(b - base)
            futures.append(self.executor.submit(verify_task, verifier, codes, base, self._shared[1], a, b))
        self._pending.append((chunk, futures[0] if pieces == 1 else _Pieces(futures), staged))

    def _results(self, block: bool) -> Iterator[tuple[Chunk, VerifyResult]]:
        while self._pending and (block or self._pending[0][1].done()):
            block = False
            chunk, future, staged = self._pending[0]
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
            self.executor.release(staged, finished=future.done())  # a piece may run on after one failed
            self.cpu_seconds += seconds
            self.cpu_seconds_here += seconds if self.here else 0.0
            self.values += chunk.stop - chunk.first
            yield chunk, result

    def cancel(self) -> None:
        """Forget every chunk in flight, and stop a producer's thread (it starts again from the proven position)."""
        if isinstance(self.producer, ProducerThread):
            self.producer.halt()
        for _, future, staged in self._pending:
            future.cancel()
            self.executor.release(staged, finished=False)  # a worker still reading it keeps its mapping
        self._pending.clear()

    def close(self) -> None:
        """Cancel what is in flight, stop a producer's thread, and end the executor's processes at once."""
        self.cancel()
        if isinstance(self.producer, ProducerThread):
            self.producer.close()
        self.executor.close(kill=True)


class _Pieces:
    """One chunk's result from the tasks that prove its pieces (in order): the first piece not proven
    decides (a later piece's proof read codes that this one did not prove), else all are proven."""

    def __init__(self, futures):
        self._futures = futures

    def done(self) -> bool:
        return all(f.done() for f in self._futures)

    def result(self, timeout=None):
        scanned, seconds = 0, 0.0
        for future in self._futures:
            result, spent = future.result(timeout=timeout)
            seconds += spent
            if result.status != PROVEN:
                return result, seconds
            scanned += result.options_scanned
        return VerifyResult(PROVEN, options_scanned=scanned), seconds

    def cancel(self) -> bool:
        return all([f.cancel() for f in self._futures])  # noqa: C419 (cancel every one, not up to the first False)


def _window(plan: KernelPlan, kernel, history: History) -> np.ndarray:
    """The kernel's codes of the window before the proven position (what a measurement starts from)."""
    return plan.encoding.encode_array(history.tail(plan.window)).astype(kernel.dtype)


def start_pipeline(
    options: EngineOptions,
    kernels: KernelPlugin,
    plan: KernelPlan,
    history: History,
    producer: Producer,
    stop: StopRequest,
) -> tuple[Pipeline, split.Split | None]:
    """The pipeline from the proven position on, and the automatic split of the cores where one is made."""
    chosen = None
    began = time.process_time()  # the measurements below: the kernel's threads spin in this process
    far = plan.window > history.recent_limit  # a far term's window: on the tape, filled by one thread
    if not options.verify or kernels.verify_here:
        workers = 0
    elif options.workers is not None:
        workers = options.workers
    elif options.scheduler is None and options.until - history.position <= SMALL_JOB:
        workers = 0  # starting worker processes would cost more than they save
    elif options.scheduler is None and default_threads() == 1:
        workers = 0  # one core: a worker would take turns with the kernel, adding only its start-up
    elif options.threads is None and options.scheduler is None and not far:
        kernel, verifier = kernels(plan)
        chosen = split.choose(
            plan,
            kernel,
            verifier,
            _window(plan, kernel, history),
            history.prefix,
            history.position,
            backend=kernels.backend,
        )
        log.info("cores: %s", chosen.describe())
        workers = chosen.workers
    else:
        workers = default_threads()
    threads = options.threads or 1
    if chosen is None and threads > 1 and not far:  # threads chosen by hand: their block length
        kernel, _ = kernels(plan)
        split.tune_blocks(
            plan,
            kernel,
            _window(plan, kernel, history),
            history.position,
            min(threads, kernel.max_threads),
            kernels.backend,
        )
    measuring = time.process_time() - began
    executor = make_executor(workers, options.scheduler, stop.requested, kernels.verify_piece)
    backlog = options.backlog or 2 * executor.workers + 2
    # The producer gets a thread of its own where proofs run elsewhere; a plug-in that verifies
    # here (the GPU's) and an in-process executor share this thread with it, as before.
    threaded = options.verify and not kernels.verify_here and not isinstance(executor, InProcess)
    return Pipeline(
        ProducerThread(producer) if threaded else producer,
        producer.kernels,
        executor,
        backlog,
        options.verify,
        stop,
        measuring,
    ), chosen
