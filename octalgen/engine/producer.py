"""The producer: the speculative kernel's codes, chunk after chunk, from a ring of the last ones.

The producer's whole state is its plan, the heap it has produced up to, and the ring: the last
codes it produced, at least the plan's window (each fill starts from the W codes before it), and
as many more as the chunks' proof scans may need (a far term's window, too long for memory, is on
a tape instead, :mod:`.tape`: the kernel fills its chunks there, and they are views of it).  It
knows nothing of verification, consumers or checkpoints: it is reset at the proven position (after
a start, a resume or a recovery) and asked for the next chunk, which comes with the codes before
it that its proofs may read (its *history*).  One object with a narrow interface (:meth:`Producer.reset`,
:meth:`Producer.prepare`, :meth:`Producer.produce`) so that it can run in a thread of its own:
:class:`ProducerThread` calls :meth:`Producer.produce` there, up to a number of chunks ahead,
while the coordinating thread hands out tasks and takes results (the kernel's cffi calls release
the GIL, so the kernel no longer waits while the coordinator decodes, tallies and pickles).

The first chunks after a reset are small (:data:`FIRST_CHUNK` heaps, doubling up to the chunk
size): the first kernel values are then proven within about a second of the kernel's start,
not once a whole chunk of two million heaps is produced and verified (ten seconds and more on
a busy two-core machine), so a run stopped early keeps them.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from dataclasses import dataclass
from functools import cached_property
from typing import Callable

import numpy as np

from ..cpu.kernel import StorageOverflow, code_dtype
from ..plan import KernelPlan, make_plan
from .seams import KernelPlugin
from .tape import Tape

log = logging.getLogger("octalgen")

#: Heaps per call into the kernel: a stop request is noticed between calls.
FILL_STEP = 1 << 18

#: Heaps of the first chunk after a reset (each next chunk is twice as large, up to the chunk size).
FIRST_CHUNK = 1 << 16


@dataclass(frozen=True)
class Chunk:
    """Produced codes of heaps [first, stop) under ``plan``'s encoding.

    Its proof scans are given the codes of heaps ``base`` ... ``stop - 1`` (the chunk's own last):
    ``before`` (heaps ``base`` ... ``first - 1``) and ``codes``, kept apart so that they are copied
    once, where they are staged for a task, not joined here first.
    """

    first: int
    stop: int
    plan: KernelPlan
    codes: np.ndarray
    base: int
    before: np.ndarray
    tape: Tape | None = None  # where the codes are views of a tape (a far term's window)

    @cached_property
    def history(self) -> np.ndarray:
        """The codes of heaps ``base`` ... ``stop - 1``, in one array (a view of the tape, where there is one)."""
        if self.tape is not None:
            return self.tape.view(self.base, self.stop)
        return np.concatenate([self.before, self.codes])


class Producer:
    """Fills chunks with a plug-in's kernel (see the module docstring).

    Parameters
    ----------
    kernels : KernelPlugin
    check_stop : callable
        Called between kernel calls; raises to stop (:meth:`~.signals.StopRequest.check`).

    Attributes
    ----------
    plan : KernelPlan or None
        The plan it produces with (it moves to 16-bit storage by itself where a value needs it).
    produced_to : int
        Heaps below it are produced (or were proven when it was reset).
    cpu_seconds, values : float, int
        The kernel's CPU time and the heaps it produced, since the producer was made.
    fallbacks, first_fallback : int, int or None
        Kernel calls whose threads kept waiting for each other and went on with one thread (the
        cores were busy), and the heap where the first did.
    """

    def __init__(self, kernels: KernelPlugin, check_stop: Callable[[], None]):
        self.kernels = SerialKernels(kernels)
        self.check_stop = check_stop
        self.own_thread = False  # set by ProducerThread: then the kernel's CPU is counted per thread
        self.coordinator_clock = None  # the CPU clock of the coordinating thread, where it is another
        self.plan: KernelPlan | None = None
        self.produced_to = 0
        self.ring = np.zeros(0, dtype=np.uint8)
        self.ring_base = 0
        self.tape: Tape | None = None  # the codes on disk instead of the ring, for a far term's window
        self.cpu_seconds = 0.0
        self.values = 0
        self.fallbacks, self.first_fallback = 0, None
        self._next_size = FIRST_CHUNK

    def reset(self, plan: KernelPlan | None, position: int, window: np.ndarray | None, tape: Tape | None = None) -> None:
        """Produce again from ``position`` with ``plan``.

        ``window``: the last ``plan.window`` proven values, where the kernel runs from ``position``
        (None before the kernel's first heap: exact steps come first).  ``tape``: instead, a tape
        under the plan's encoding that holds them (:mod:`.tape`); the producer writes its chunks there.
        """
        self.plan = plan
        self.produced_to = position
        self._next_size = FIRST_CHUNK
        self.tape = tape
        if tape is not None:
            self.ring = np.zeros(0, dtype=np.uint8)
        elif plan is not None and position >= plan.start:
            self.ring = plan.encoding.encode_array(window).astype(code_dtype(plan))
            self.ring_base = position - plan.window

    def prepare(self) -> None:
        """Make the plan's kernel now (building it, or loading it from the cache)."""
        self.kernels(self.plan)

    def produce(self, until: int, size: int, threads: int, reach: int | None) -> Chunk:
        """The next chunk: up to ``size`` heaps, none at ``until`` or beyond.

        ``threads``: kernel threads.  ``reach``: heaps before the chunk (beyond the window) that its
        history covers and the ring keeps; None keeps every code produced since the last reset.
        A value too large for the storage ends the chunk before it; the producer goes on in 16 bits.
        """
        plan = self.plan
        kernel, _ = self.kernels(plan)
        w, a = plan.window, self.produced_to
        b = min(until, a + min(size, self._next_size))
        self._next_size *= 2
        tape = self.tape
        if tape is not None:  # filled in place: the window is read back from the file
            tape.writable(a, b)
            buffer = tape.view(a - w, b)
        else:
            buffer = np.empty(w + b - a, dtype=kernel.dtype)
            buffer[:w] = self.ring[len(self.ring) - w:]
        overflow = None
        kernel_threads = min(threads, kernel.max_threads)
        began = self._cpu(kernel_threads)
        try:
            for lo in range(0, b - a, FILL_STEP):
                self.check_stop()
                hi = min(b - a, lo + FILL_STEP)
                fell_back = kernel.fill(buffer[lo: w + hi], a + lo, min(threads, kernel.max_threads))
                if fell_back is not None:
                    self.fallbacks += 1
                    self.first_fallback = fell_back if self.first_fallback is None else self.first_fallback
        except StorageOverflow as exc:
            overflow, b = exc, exc.heap
        finally:
            self.cpu_seconds += self._cpu(kernel_threads) - began
        codes = buffer[w: w + b - a]
        self.values += b - a
        self.produced_to = b
        if tape is not None:  # every code on the tape: mapped, not copied, and no scan stops short of them
            chunk = Chunk(a, b, plan, codes, tape.first, tape.view(tape.first, a), tape)
            # What the next fill reads stays mapped; the rest of the pages go back (the file keeps them).
            tape.release(term_reads(plan, b, b + min(size, self._next_size)) + [(b, tape.stop)])
        else:
            start = self.ring_base if reach is None else max(self.ring_base, a - w - reach)
            before = self.ring[start - self.ring_base:]
            # The ring keeps every code since the reset (reach None), or the last w + reach: drop the rest.
            drop = 0 if reach is None else max(0, len(before) + len(codes) - (w + reach))
            self.ring = np.concatenate([before[drop:], codes[max(0, drop - len(before)):]])
            self.ring_base = b - len(self.ring)
            chunk = Chunk(a, b, plan, codes, start, before)
        if overflow is not None:
            log.warning("%s; continuing with 16-bit storage", overflow)
            self.plan = make_plan(plan.table, storage="u16")
            log_plan(self.plan)
            if tape is not None:
                self.tape = recoded(tape, self.plan.encoding, b, self.check_stop)
            else:
                self.ring = plan.encoding.decode_array(self.ring, self.ring_base).astype(np.uint16)
        return chunk

    def _cpu(self, threads: int) -> float:
        if not self.own_thread:
            return time.process_time()
        if threads == 1:  # the process's CPU time would count the coordinator's too
            return time.thread_time()
        # The kernel's other threads live only during the fill: the process's CPU time less the
        # coordinator's (verification runs elsewhere where the producer has a thread of its own).
        return time.process_time() - time.clock_gettime(self.coordinator_clock)


def term_reads(plan: KernelPlan, a: int, b: int) -> list[tuple[int, int]]:
    """The stretches of heaps the terms of ``plan`` read for heaps ``a`` ... ``b - 1``, merged: few where
    the offsets fall in clusters (a far term's, and the near ones)."""
    offsets = np.unique(np.array([t.offset for t in plan.terms] + list(plan.rare_options), dtype=np.int64))
    starts = a - offsets[::-1]  # ascending
    gaps = np.flatnonzero(starts[1:] > starts[:-1] + (b - a))  # the next read starts past this one's end
    firsts = np.concatenate([[0], gaps + 1])
    lasts = np.concatenate([gaps, [len(starts) - 1]])
    return [(int(starts[i]), int(starts[j]) + b - a) for i, j in zip(firsts, lasts)]


def recoded(tape: Tape, encoding, stop: int, check_stop: Callable[[], None]) -> Tape:
    """A new tape under ``encoding`` holding the values of ``tape`` up to heap ``stop``."""
    new = Tape(encoding, tape.first, tape.capacity, tape.directory, tape.rare.items())

    def read(lo: int, hi: int) -> np.ndarray:  # the old tape's pages go back as they are read
        values = tape.values(lo, hi)
        tape.release([(hi, tape.stop)])
        return values

    new.fill(tape.first, stop, read, check_stop)
    return new


class SerialKernels:
    """A kernel plug-in called by one thread at a time (the producer's and the coordinator's).

    The plug-ins keep the current plan's kernel only; two threads asking at once could each
    replace the other's.  The last plan asked for is known by identity: a plug-in's lookup hashes
    the whole plan (milliseconds for a large table), once per chunk and twice without this.  Its
    attributes are the plug-in's.
    """

    def __init__(self, plugin: KernelPlugin):
        self.plugin = plugin
        self._lock = threading.Lock()
        self._last = (None, None)  # the last plan asked for, and what the plug-in gave

    def __call__(self, plan: KernelPlan):
        with self._lock:
            if self._last[0] is not plan:
                self._last = (plan, self.plugin(plan))
            return self._last[1]

    def __getattr__(self, name):
        return getattr(self.plugin, name)


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
        self._params = None  # (until, size, threads, reach) of the next chunk
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

    def prepare(self) -> None:
        """Make the plan's kernel now (see :meth:`Producer.prepare`)."""
        self.producer.prepare()

    def reset(self, plan: KernelPlan | None, position: int, window: np.ndarray | None, tape: Tape | None = None) -> None:
        """Stop producing, forget the chunks produced ahead, produce again from ``position``."""
        self.halt()
        self.producer.reset(plan, position, window, tape)

    @property
    def tape(self) -> Tape | None:
        return self.producer.tape

    def run(self, until: int, size: int, threads: int, reach: int | None, ahead: int) -> None:
        """Produce with these parameters (see :meth:`Producer.produce`), at most ``ahead`` chunks ready."""
        with self._cond:
            self._params, self.ahead = (until, size, threads, reach), max(1, ahead)
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
        """True where nothing is ready and nothing will be: the thread ended, or produced to ``until``."""
        with self._cond:
            return not self._ready and self._error is None and not self._producing and (
                self._thread is None or self._params is None or self.producer.produced_to >= self._params[0])

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
            try:
                os.close(fd)
            except OSError:
                pass

    def _drain(self) -> None:
        try:
            while os.read(self.wake, 4096):
                pass
        except (BlockingIOError, OSError):
            pass

    def _signal(self) -> None:
        try:
            os.write(self._wake_w, b"x")
        except OSError:
            pass

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
                    while not self._halt and (len(self._ready) >= self.ahead
                                              or producer.produced_to >= self._params[0]):
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


def log_plan(plan: KernelPlan, previous: KernelPlan | None = None) -> None:
    """Say (at -v) which kernel a run now produces with, unless it is the ``previous`` one (its table
    exact to further on, say)."""
    said = len(plan.terms), plan.window, plan.start, plan.encoding.kind
    if previous is None or said != (len(previous.terms), previous.window, previous.start, previous.encoding.kind):
        log.info("kernel plan for %s: %d terms, window %d, first heap %d, storage %s", plan.game.code, *said)
