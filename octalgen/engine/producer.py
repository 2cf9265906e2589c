"""The producer: the speculative kernel's codes, chunk after chunk, from a ring of the last ones.

The producer's whole state is its plan, the heap it has produced up to, and the ring: the last
codes it produced, at least the plan's window (each fill starts from the W codes before it), and
as many more as the chunks' proof scans may need (a far term's window, too long for memory, is on
a tape instead, :mod:`.tape`: the kernel fills its chunks there, and they are views of it).  It
knows nothing of verification, consumers or checkpoints, and decides nothing about its plan: it
is reset at the proven position (after a start, a resume or a recovery) with the engine's plan
and asked for the next chunk, which comes with the codes before it that its proofs may read (its
*history*).  A value its storage cannot hold ends the chunk before it: the producer then
produces nothing more and reports the overflow (:attr:`Producer.overflow`), and the engine
re-plans (:meth:`~.planning.Planning.widen_storage`) once every heap before it is proven.

One object with a narrow interface (:meth:`Producer.reset`, :meth:`Producer.prepare`,
:meth:`Producer.produce`) so that it can run in a thread of its own
(:class:`~.producer_thread.ProducerThread`).

The first chunks after a reset are small (:data:`~.options.FIRST_CHUNK` heaps, doubling up to
the chunk size): the first kernel values are then proven soon after the kernel's start, not
once a whole chunk is produced and verified, so a run stopped early keeps them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..cpu.kernel import StorageOverflow, code_dtype
from ..errors import InternalError
from ..plan import KernelPlan
from .options import FIRST_CHUNK
from .seams import ChunkFiller, KernelPlugin, ProofVerifier
from .tape import Tape

#: Heaps per call into the kernel: a stop request is noticed between calls.
FILL_STEP = 1 << 18

#: Crossing heaps (:attr:`~octalgen.plan.KernelPlan.crossings`) closer than this share a stretch taken
#: heap by heap: a heap taken so costs several times less than a call into the kernel, so the few heaps
#: between two crossings are cheaper taken along than filled by a call of their own.
CROSSING_GAP = 32


@dataclass(frozen=True)
class Chunk:
    """Produced codes of heaps [first, stop) under ``plan``'s encoding.

    Its proof scans are given :attr:`history`, the codes of heaps ``base`` ... ``stop - 1`` (the
    chunk's own last) in one array: the producer's ring of codes, which it joins once a chunk
    anyway, or a view of the tape.
    """

    first: int
    stop: int
    plan: KernelPlan
    base: int
    history: np.ndarray
    tape: Tape | None = None  # where the codes are views of a tape (a far term's window)

    @property
    def codes(self) -> np.ndarray:
        """The chunk's own codes, of heaps ``first`` ... ``stop - 1`` (a view of :attr:`history`)."""
        return self.history[self.first - self.base :]

    @property
    def before(self) -> np.ndarray:
        """The codes of heaps ``base`` ... ``first - 1`` (a view of :attr:`history`)."""
        return self.history[: self.first - self.base]


def crossing_stretches(crossings: np.ndarray, a: int, b: int) -> list[tuple[int, int]]:
    """The crossing heaps in [a, b) as stretches [first, stop), ascending: crossings less than
    :data:`CROSSING_GAP` heaps apart share one, the heaps between them taken one by one too (a kernel
    call between them would cost more than those heaps)."""
    heaps = crossings[np.searchsorted(crossings, a) : np.searchsorted(crossings, b)].astype(np.int64)
    if not len(heaps):
        return []
    cut = np.flatnonzero(np.diff(heaps) > CROSSING_GAP) + 1
    return list(zip(heaps[np.r_[0, cut]].tolist(), (heaps[np.r_[cut - 1, len(heaps) - 1]] + 1).tolist()))


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
        The plan it produces with (the engine's, given at each reset).
    produced_to : int
        Heaps below it are produced (or were proven when it was reset).
    overflow : StorageOverflow or None
        A value the plan's storage cannot hold, at ``overflow.heap`` = ``produced_to``: nothing more
        is produced until the next reset.
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
        self.coordinator_clock: int | None = None  # the CPU clock of the coordinating thread, where it is another
        self.plan: KernelPlan | None = None
        self.produced_to = 0
        self.ring = np.zeros(0, dtype=np.uint8)
        self.ring_base = 0
        self.tape: Tape | None = None  # the codes on disk instead of the ring, for a far term's window
        self.overflow: StorageOverflow | None = None
        self.cpu_seconds = 0.0
        self.values = 0
        self.fallbacks = 0
        self.first_fallback: int | None = None
        self._next_size = FIRST_CHUNK

    def reset(
        self, plan: KernelPlan | None, position: int, window: np.ndarray | None, tape: Tape | None = None
    ) -> None:
        """Produce again from ``position`` with ``plan``.

        ``window``: the last ``plan.window`` proven values, where the kernel runs from ``position``
        (None before the kernel's first heap: exact steps come first).  ``tape``: instead, a tape
        under the plan's encoding that holds them (:mod:`.tape`); the producer writes its chunks there.
        """
        self.plan = plan
        self.produced_to = position
        self.overflow = None
        self._next_size = FIRST_CHUNK
        self.tape = tape
        if tape is not None:
            self.ring = np.zeros(0, dtype=np.uint8)
        elif plan is not None and position >= plan.start:
            self.ring = plan.encoding.encode_array(window).astype(code_dtype(plan))
            self.ring_base = position - plan.window

    def prepare(self) -> None:
        """Make the plan's kernel now (building it, or loading it from the cache)."""
        self.kernels(self._kernel_plan())

    def exhausted(self, until: int) -> bool:
        """Nothing more to produce before ``until``: produced to it, or stopped at an :attr:`overflow`."""
        return self.produced_to >= until or self.overflow is not None

    def produce(self, until: int, size: int, threads: int, proof_history: int | None) -> Chunk:
        """The next chunk: up to ``size`` heaps, none at ``until`` or beyond.

        ``threads``: kernel threads.  ``proof_history``: heaps before the chunk (beyond the window)
        that its history covers and the ring keeps; None keeps every code produced since the last
        reset.  A value too large for the storage ends the chunk before it (:attr:`overflow`).
        """
        if self.overflow is not None:
            raise InternalError(
                f"asked to produce past G({self.overflow.heap}), which its storage cannot hold, before a reset"
            )
        plan = self._kernel_plan()
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
            buffer[:w] = self.ring[len(self.ring) - w :]
        # Threads copy the window into each of them: a far term's, on the tape, is filled by one.
        kernel_threads = 1 if tape is not None else min(threads, kernel.max_threads)
        began = self._cpu(kernel_threads)
        try:
            self._fill(kernel, buffer, a, b, kernel_threads)
        except StorageOverflow as exc:
            self.overflow, b = exc, exc.heap
        finally:
            self.cpu_seconds += self._cpu(kernel_threads) - began
        codes = buffer[w : w + b - a]
        self.values += b - a
        self.produced_to = b
        if tape is not None:  # every code on the tape: mapped, not copied, and no scan stops short of them
            chunk = Chunk(a, b, plan, tape.first, tape.view(tape.first, b), tape)
            # What the next fill reads stays mapped; the rest of the pages go back (the file keeps them).
            tape.release([*term_reads(plan, b, b + min(size, self._next_size)), (b, tape.stop)])
        else:
            start = self.ring_base if proof_history is None else max(self.ring_base, a - w - proof_history)
            history = np.concatenate([self.ring[start - self.ring_base :], codes])
            # The ring keeps every code since the reset (None), or the last w + proof_history: drop the rest.
            drop = 0 if proof_history is None else max(0, len(history) - (w + proof_history))
            self.ring = history[drop:]
            self.ring_base = b - len(self.ring)
            chunk = Chunk(a, b, plan, start, history)
        return chunk

    def _fill(self, kernel: ChunkFiller, buffer: np.ndarray, a: int, b: int, threads: int) -> None:
        """Heaps ``a`` ... ``b - 1`` into ``buffer`` (the window, then their codes), :data:`FILL_STEP` at a
        time; the plan's crossings, in stretches of them (:func:`crossing_stretches`), one heap after another
        (:meth:`~.seams.ChunkFiller.fill_crossings`)."""
        plan = self._kernel_plan()
        w = plan.window
        done = a
        for first, stop in [*crossing_stretches(plan.crossings, a, b), (b, b)]:
            for lo in range(done, first, FILL_STEP):
                self.check_stop()
                hi = min(first, lo + FILL_STEP)
                fell_back = kernel.fill(buffer[lo - a : w + hi - a], lo, threads)
                if fell_back is not None:
                    self.fallbacks += 1
                    self.first_fallback = fell_back if self.first_fallback is None else self.first_fallback
            if first < stop:
                kernel.fill_crossings(buffer[first - a : w + stop - a], first)
            done = stop

    def _kernel_plan(self) -> KernelPlan:
        """:attr:`plan`, which the engine gives before it asks for the kernel or a chunk."""
        if self.plan is None:
            raise InternalError("the producer was asked for the kernel's work without a kernel plan")
        return self.plan

    def _cpu(self, threads: int) -> float:
        if not self.own_thread:
            return time.process_time()
        if threads == 1:  # the process's CPU time would count the coordinator's too
            return time.thread_time()
        # The kernel's other threads live only during the fill: the process's CPU time less the
        # coordinator's (verification runs elsewhere where the producer has a thread of its own).
        if self.coordinator_clock is None:
            raise InternalError("a producer in a thread of its own was not given its coordinator's CPU clock")
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
        # The last plan asked for, and what the plug-in gave.
        self._last: tuple[KernelPlan, tuple[ChunkFiller, ProofVerifier]] | None = None

    def __call__(self, plan: KernelPlan) -> tuple[ChunkFiller, ProofVerifier]:
        with self._lock:
            if self._last is None or self._last[0] is not plan:
                self._last = (plan, self.plugin(plan))
            return self._last[1]

    def __getattr__(self, name):
        return getattr(self.plugin, name)
