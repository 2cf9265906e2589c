"""The producer in a thread of its own, up to a number of chunks ahead of the coordinating thread.

While :class:`ProducerThread` calls :meth:`~.producer.Producer.produce` in its thread, the
coordinating thread hands out verification tasks and takes results: the kernel's cffi calls
release the GIL, so the kernel does not wait while the coordinator decodes, tallies and pickles.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections import deque

import numpy as np

from ..plan import KernelPlan
from .producer import Chunk, Producer
from .tape import Tape


class _Halted(Exception):
    """Raised in the producer's thread where it was told to stop producing (a reset, the run's end)."""


class ProducerThread:
    """A :class:`Producer` run in a thread of its own, up to ``ahead`` chunks ahead of the coordinator.

    The coordinator calls :meth:`run` with the production's parameters (again whenever they change),
    :meth:`take` for the next produced chunk, and waits on :attr:`wake` (a file descriptor readable
    while a chunk is ready or the thread ended).  :meth:`reset` stops the thread and resets the
    producer, so that every chunk taken comes in order from the proven position, as the unthreaded
    producer gives them.  A stop request ends the thread at the producer's next look at it (it is
    the coordinator that raises :class:`~.signals.StopRequested`), and any error ends the thread and
    is raised by :meth:`take`.
    """

    def __init__(self, producer: Producer):
        self.producer = producer
        self.kernels = producer.kernels
        self._check_stop = producer.check_stop
        self._cond = threading.Condition()
        self._ready: deque[Chunk] = deque()
        # (until, size, threads, proof_history) of the next chunk
        self._params: tuple[int, int, int, int | None] | None = None
        self.ahead = 1
        self._thread: threading.Thread | None = None
        self._halt = False
        self._producing = False  # in produce(): it may have moved produced_to on before its chunk is ready
        self._error: BaseException | None = None
        self.wake, self._wake_w = os.pipe()
        os.set_blocking(self.wake, False)
        self._coordinator_clock = time.pthread_getcpuclockid(threading.get_ident())  # made by the coordinator

    @property
    def plan(self) -> KernelPlan | None:
        return self.producer.plan

    @property
    def produced_to(self) -> int:
        return self.producer.produced_to

    @property
    def cpu_seconds(self) -> float:
        return self.producer.cpu_seconds

    @property
    def values(self) -> int:
        return self.producer.values

    @property
    def overflow(self):
        """The producer's :attr:`~.producer.Producer.overflow`."""
        return self.producer.overflow

    def prepare(self) -> None:
        """Make the plan's kernel now (see :meth:`Producer.prepare`)."""
        self.producer.prepare()

    def reset(
        self, plan: KernelPlan | None, position: int, window: np.ndarray | None, tape: Tape | None = None
    ) -> None:
        """Stop producing, forget the chunks produced ahead, produce again from ``position``."""
        self.halt()
        self.producer.reset(plan, position, window, tape)

    @property
    def tape(self) -> Tape | None:
        return self.producer.tape

    def run(self, until: int, size: int, threads: int, proof_history: int | None, ahead: int) -> None:
        """Produce with these parameters (see :meth:`Producer.produce`), at most ``ahead`` chunks ready."""
        with self._cond:
            self._params, self.ahead = (until, size, threads, proof_history), max(1, ahead)
            self._cond.notify_all()
        if self._thread is None and self._error is None:
            self._halt = False
            self._thread = threading.Thread(target=self._main, daemon=True, name="octalgen-producer")
            self._thread.start()

    def take(self) -> Chunk | None:
        """The next chunk produced, or None where none is ready; raises the error that ended the thread."""
        with self._cond:
            chunk = self._ready.popleft() if self._ready else None
            if not self._ready:
                self._drain()
            if chunk is None and self._error is not None:
                error, self._error = self._error, None
                raise error
            self._cond.notify_all()
            return chunk

    def idle(self) -> bool:
        """True where nothing is ready and nothing will be: the thread ended, or it has nothing more to
        produce (:meth:`~.producer.Producer.exhausted`)."""
        with self._cond:
            return (
                not self._ready
                and self._error is None
                and not self._producing
                and (self._thread is None or self._params is None or self.producer.exhausted(self._params[0]))
            )

    def halt(self) -> None:
        """Stop the thread (at its next look between kernel calls) and forget the chunks ready."""
        thread = self._thread
        if thread is not None:
            with self._cond:
                self._halt = True
                self._cond.notify_all()
            thread.join()
        with self._cond:
            self._thread, self._halt, self._error = None, False, None
            self._ready.clear()
            self._drain()

    def close(self) -> None:
        """Stop the thread and close the wake-up pipe."""
        self.halt()
        for fd in (self.wake, self._wake_w):
            with contextlib.suppress(OSError):
                os.close(fd)

    def _drain(self) -> None:
        try:
            while os.read(self.wake, 4096):
                pass
        except (BlockingIOError, OSError):
            pass

    def _signal(self) -> None:
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"x")

    def _check(self) -> None:
        if self._halt:
            raise _Halted
        self._check_stop()

    def _main(self) -> None:
        producer = self.producer
        producer.own_thread, producer.check_stop = True, self._check
        producer.coordinator_clock = self._coordinator_clock
        try:
            while True:
                with self._cond:
                    assert self._params is not None  # run() sets them before it starts this thread
                    while not self._halt and (len(self._ready) >= self.ahead or producer.exhausted(self._params[0])):
                        self._cond.wait()
                    if self._halt:
                        return
                    params, self._producing = self._params, True
                try:
                    chunk = producer.produce(*params)
                except BaseException:
                    with self._cond:
                        self._producing = False
                    raise
                with self._cond:  # the chunk ready as produced_to tells of it, at once for idle()
                    self._producing = False
                    if self._halt:
                        return
                    self._ready.append(chunk)
                    self._signal()
        except _Halted:
            return
        except BaseException as exc:  # noqa: BLE001 - a stop request, or an error: the coordinator raises it
            with self._cond:
                self._error = exc
                self._signal()
        finally:
            producer.own_thread, producer.check_stop = False, self._check_stop
