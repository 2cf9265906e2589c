"""The producer: the speculative kernel's codes, chunk after chunk, from a ring of the last ones.

The producer's whole state is its plan, the heap it has produced up to, and the ring: the last
codes it produced, at least the plan's window (each fill starts from the W codes before it), and
as many more as the chunks' proof scans may need.  It knows nothing of verification, consumers
or checkpoints: it is reset at the proven position (after a start, a resume or a recovery) and
asked for the next chunk, which comes with the codes before it that its proofs may read (its
*history*).  One object with a narrow interface (:meth:`Producer.reset`,
:meth:`Producer.prepare`, :meth:`Producer.produce`) so that it can run in a thread of its own.

The first chunks after a reset are small (:data:`FIRST_CHUNK` heaps, doubling up to the chunk
size): the first kernel values are then proven within about a second of the kernel's start,
not once a whole chunk of two million heaps is produced and verified (ten seconds and more on
a busy two-core machine), so a run stopped early keeps them.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..cpu.kernel import StorageOverflow, code_dtype
from ..plan import KernelPlan, make_plan
from .seams import KernelPlugin

log = logging.getLogger("octalgen")

#: Heaps per call into the kernel: a stop request is noticed between calls.
FILL_STEP = 1 << 18

#: Heaps of the first chunk after a reset (each next chunk is twice as large, up to the chunk size).
FIRST_CHUNK = 1 << 16


@dataclass(frozen=True)
class Chunk:
    """Produced codes of heaps [first, stop) under ``plan``'s encoding.

    ``history`` holds the codes of heaps ``base`` ... ``stop - 1`` (the chunk's own last): what its
    proof scans are given.
    """

    first: int
    stop: int
    plan: KernelPlan
    codes: np.ndarray
    base: int
    history: np.ndarray


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
    """

    def __init__(self, kernels: KernelPlugin, check_stop: Callable[[], None]):
        self.kernels = kernels
        self.check_stop = check_stop
        self.plan: KernelPlan | None = None
        self.produced_to = 0
        self.ring = np.zeros(0, dtype=np.uint8)
        self.ring_base = 0
        self.cpu_seconds = 0.0
        self.values = 0
        self._next_size = FIRST_CHUNK

    def reset(self, plan: KernelPlan | None, position: int, window: np.ndarray | None) -> None:
        """Produce again from ``position`` with ``plan``.

        ``window``: the last ``plan.window`` proven values, where the kernel runs from ``position``
        (None before the kernel's first heap: exact steps come first).
        """
        self.plan = plan
        self.produced_to = position
        self._next_size = FIRST_CHUNK
        if plan is not None and position >= plan.start:
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
        buffer = np.empty(w + b - a, dtype=kernel.dtype)
        buffer[:w] = self.ring[len(self.ring) - w:]
        overflow = None
        began = time.process_time()
        try:
            for lo in range(0, b - a, FILL_STEP):
                self.check_stop()
                hi = min(b - a, lo + FILL_STEP)
                kernel.fill(buffer[lo: w + hi], a + lo, min(threads, kernel.max_threads))
        except StorageOverflow as exc:
            overflow, b = exc, exc.heap
        finally:
            self.cpu_seconds += time.process_time() - began
        codes = buffer[w: w + b - a]
        self.values += b - a
        start = self.ring_base if reach is None else max(self.ring_base, a - w - reach)
        history = np.concatenate([self.ring[start - self.ring_base:], codes])
        keep = len(history) if reach is None else w + reach
        self.ring = history if len(history) <= keep else history[len(history) - keep:].copy()
        self.ring_base = b - len(self.ring)
        self.produced_to = b
        chunk = Chunk(a, b, plan, codes, start, history)
        if overflow is not None:
            log.warning("%s; continuing with 16-bit storage", overflow)
            values = plan.encoding.decode_array(self.ring, self.ring_base)
            self.plan = make_plan(plan.table, storage="u16")
            log_plan(self.plan)
            self.ring = values.astype(np.uint16)
        return chunk


def log_plan(plan: KernelPlan) -> None:
    """Say (at -v) which kernel a run now produces with."""
    log.info("kernel plan for %s: %d terms, window %d, first heap %d, storage %s", plan.game.code, len(plan.terms),
             plan.window, plan.start, plan.encoding.kind)
