"""The persistent round kernel on the device (CuPy), and the barrier microbenchmark.

:class:`GpuPersistentSpeculator` is the host loop of ``octal_persistent``; its twin, and the
specification of the kernel's rounds, is :class:`~octalgen.cuda.persistent_twin.PersistentSpeculator`.
The host and the running kernel talk through one *cell* of mapped (zero-copy, pinned) host
memory: the kernel writes the front, the rounds run and why a launch ended; the host writes
the limit (raised as it reads final codes) and a stop request.  Launches are cooperative
(every block resident at once, or the launch fails instead of hanging at the first barrier)
and end on their own (:mod:`~octalgen.cuda.persistent_twin`: idle at the limit, or the ring
about to hold two positions in a slot); :meth:`GpuPersistentSpeculator.advance` launches again
where none runs.  A barrier that waits two seconds ends the launch with ``STATUS_TIMEOUT``,
which raises :class:`~octalgen.errors.ComputationError` here: never a hang.

:func:`barrier_microbenchmark` times ``octal_barrier_probe``: the barrier alone and with one
group's marks per round (issue 28: <= 3 us a round decides whether the kernel is worth it).

**Unmeasured**: none of this has run on a GPU yet (``benchmarks/gpu_probe.py`` runs it).
"""

from __future__ import annotations

import ctypes
import time

import numpy as np

from ..errors import ComputationError
from . import persistent_twin, twin
from .cuda_plan import CudaPlan
from .runtime import (LOG_CAPACITY, RING_LEAST, RoundLog, _module, _multiprocessors, _round_block_threads,
                      _urgent_stream, read_ring)

# The mapped cell (templates/cuda/kernels.cu.j2: CELL_*).
CELL_FRONT, CELL_ROUND, CELL_OVERFLOW, CELL_STATUS, CELL_LIMIT, CELL_STOP, CELL_SIZE = range(7)

#: Why a launch ended (CELL_STATUS).
STATUS_RUNNING, STATUS_STOP_FRONT, STATUS_IDLE, STATUS_STOPPED, STATUS_OVERFLOW, STATUS_TIMEOUT = range(6)

#: cudaHostAllocMapped: host memory the device reads and writes over the bus.
HOST_ALLOC_MAPPED = 2

#: Seconds the host sleeps between looks at the mapped front.
POLL = 2e-5


class MappedCell:
    """``count`` int64 of mapped pinned host memory: ``host`` (numpy) and ``device`` (its address).

    With unified addressing (every 64-bit CUDA platform) the device uses the host address itself.
    """

    def __init__(self, count: int):
        import cupy

        self._pointer = cupy.cuda.runtime.hostAlloc(8 * count, HOST_ALLOC_MAPPED)
        buffer = (ctypes.c_int64 * count).from_address(self._pointer)
        self.host = np.ctypeslib.as_array(buffer)
        self.device = np.uint64(self._pointer)

    def close(self) -> None:
        import cupy

        if self._pointer:
            cupy.cuda.runtime.freeHost(self._pointer)
            self._pointer = 0


def _blocks_fit(function, threads: int) -> int:
    """Blocks of ``function`` that fit on one multiprocessor (the occupancy calculator)."""
    import cupy

    try:
        return cupy.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(function.ptr, threads, 0)
    except AttributeError:  # an older CuPy: the cooperative launch will say if they do not fit
        return 1


class GpuPersistentSpeculator:
    """``octal_persistent`` driven as :class:`~octalgen.cuda.persistent_twin.PersistentSpeculator` drives its rounds.

    Parameters
    ----------
    plan : CudaPlan
    window : int
        Positions per round: 32 per block (default on a GPU: 32 per multiprocessor, one block each).
    ring : int, optional
        Codes in the ring, a power of two (default: at least :data:`~.runtime.RING_LEAST`).
    idle_rounds : int
        Rounds without advance before a launch ends.
    """

    def __init__(self, plan: CudaPlan, window: int, ring: int | None = None,
                 idle_rounds: int = persistent_twin.IDLE_ROUNDS):
        import cupy

        self.plan, self.window, self.idle_rounds = plan, window, idle_rounds
        self.blocks = persistent_twin.blocks_for(window)
        self.terms = twin.TermIndex.of(plan)
        self.ring = ring or twin.ring_size(plan, window, RING_LEAST)
        module, self.resource_usage = _module(plan)
        self.kernel = module.get_function("octal_persistent")
        self.threads = _round_block_threads(plan)
        resident = _multiprocessors()[0] * _blocks_fit(self.kernel, self.threads)
        if self.blocks > resident:
            raise ComputationError(f"a window of {window} needs {self.blocks} resident blocks of the persistent "
                                   f"kernel; this GPU holds {resident}")
        self.codes = cupy.zeros(self.ring, dtype=cupy.uint8)
        self.flags = cupy.zeros(2 * self.blocks, dtype=cupy.uint64)
        self.log = RoundLog()
        self.cell = MappedCell(CELL_SIZE)
        self.stream = _urgent_stream()
        self.copy_stream = cupy.cuda.Stream(non_blocking=True)
        self.seconds = 0.0
        self.launches = 0
        self._launch_events = None

    @property
    def capacity(self) -> int:
        return self.ring

    @property
    def front(self) -> int:
        self._running()  # raises where a launch timed out
        return int(self.cell.host[CELL_FRONT])  # the kernel's latest (monotonic)

    @property
    def overflow(self) -> int | None:
        self._running()
        if int(self.cell.host[CELL_STATUS]) != STATUS_OVERFLOW:
            return None
        return int(self.cell.host[CELL_OVERFLOW])

    def reset(self, history: np.ndarray) -> None:
        self._stop()
        w = self.plan.kernel.window
        with self.stream:
            self.codes.fill(0)
            self.codes[:w].set(np.asarray(history, dtype=np.uint8), stream=self.stream)
        self.stream.synchronize()
        cell = self.cell.host
        cell[:] = 0
        cell[CELL_FRONT], cell[CELL_LIMIT], cell[CELL_STATUS] = w, w + self.ring, STATUS_STOPPED
        self.log.reset()

    def release(self, position: int) -> None:
        """Raise the mapped limit: the kernel reads it once a round."""
        self.cell.host[CELL_LIMIT] = max(int(self.cell.host[CELL_LIMIT]), position + self.ring)

    def advance(self, position: int) -> None:
        """Wait until every position below ``position`` is final (launching where no launch runs)."""
        if position > int(self.cell.host[CELL_LIMIT]):
            raise ValueError(f"position {position} is past the limit: release first")
        while self.front < position and self.overflow is None:
            if not self._running():
                self._launch()
            time.sleep(POLL)
            if self.log.due(int(self.cell.host[CELL_ROUND])):
                self._drain_log()  # a long wait: copy the log out before its ring comes round

    def _launch(self) -> None:
        import cupy

        w = self.plan.kernel.window
        cell = self.cell.host
        front, rounds = int(cell[CELL_FRONT]), int(cell[CELL_ROUND])
        cell[CELL_STATUS], cell[CELL_STOP] = STATUS_RUNNING, 0
        began, finished = cupy.cuda.Event(), cupy.cuda.Event()
        with self.stream:
            self.flags.fill(0)  # no stale flag can carry this launch's round tag
            began.record(self.stream)
            self.kernel((self.blocks,), (self.threads,),
                        (self.codes, self.flags, self.cell.device, self.log.device, np.uint32(LOG_CAPACITY - 1),
                         np.uint32(self.ring - 1), np.int64(front), np.int64(rounds),
                         np.int64(persistent_twin.stop_front(front, self.ring, w, self.window)),
                         np.int32(self.idle_rounds)),
                        stream=self.stream, enable_cooperative_groups=True)
            finished.record(self.stream)
        self._launch_events = (began, finished)
        self.launches += 1

    def _running(self) -> bool:
        """Whether a launch runs; when one has just ended, its time and outcome are taken in."""
        import cupy

        if self._launch_events is None:
            return False
        began, finished = self._launch_events
        if not finished.done:
            return True
        self._launch_events = None
        self.seconds += cupy.cuda.get_elapsed_time(began, finished) / 1000
        if int(self.cell.host[CELL_STATUS]) == STATUS_TIMEOUT:
            raise ComputationError("a barrier of the persistent round kernel waited 2 s for a block that never "
                                   "came (a bug, please report it; CudaOptions(persistent=False) runs without it)")
        return False

    def _stop(self) -> None:
        """Ask a running launch to end, and wait for it."""
        if self._launch_events is not None:
            self.cell.host[CELL_STOP] = 1
            self._launch_events[1].synchronize()
            self._running()

    def close(self) -> None:
        self._stop()
        self.cell.close()

    def read(self, lo: int, hi: int, out: np.ndarray | None = None) -> np.ndarray:
        """Codes of final positions ``[lo, hi)`` on the copy stream, while the rounds go on (final
        codes are never written again)."""
        if hi > self.front:
            raise ValueError(f"positions up to {hi} asked for, final only below {self.front}")
        return read_ring(self.codes, lo, hi, out, self.copy_stream)

    def take_log(self) -> np.ndarray:
        """(front, hi) of each round run since the last call."""
        return self.log.take(int(self.cell.host[CELL_ROUND]), self.copy_stream)

    def _drain_log(self) -> None:
        self.log.drain(int(self.cell.host[CELL_ROUND]), self.copy_stream)


def barrier_microbenchmark(plan: CudaPlan, rounds: int = 20_000, first: int = 1 << 16) -> dict:
    """Microseconds per round of ``octal_barrier_probe`` on this GPU: the persistent kernel's round
    skeleton (mapped-memory reads and writes, the barrier) alone (``barrier_alone``), with one
    group's marks (``barrier_and_one_group``), and the barrier without mapped memory
    (``barrier_without_host``: what the host's part costs).

    One block per multiprocessor, cooperative launches, the ring filled with random codes (the
    marks cost the same whatever the codes).  Returns the figures for the probe's JSON.
    """
    import cupy

    module, usage = _module(plan)
    kernel = module.get_function("octal_barrier_probe")
    count = _multiprocessors()[0]
    threads = _round_block_threads(plan)
    ring_size = 1 << max(20, (first + 32 * count).bit_length())
    ring = cupy.asarray(np.random.default_rng(0).integers(0, 256, ring_size, dtype=np.uint8))
    flags = cupy.zeros(2 * count, dtype=cupy.uint64)
    sink = cupy.zeros(32 * count, dtype=cupy.uint8)
    cell = MappedCell(CELL_SIZE)
    stream = cupy.cuda.Stream(non_blocking=True)
    figures = {"blocks": count, "threads_per_block": threads, "rounds": rounds, "target_us_per_round": 3.0}
    try:
        for work, name in ((0, "barrier_alone"), (1, "barrier_and_one_group"), (2, "barrier_without_host")):
            for attempt in ("warm_up", "timed"):
                cell.host[:] = 0
                flags.fill(0)
                cupy.cuda.runtime.deviceSynchronize()
                began, finished = cupy.cuda.Event(), cupy.cuda.Event()
                began.record(stream)
                kernel((count,), (threads,), (ring, flags, cell.device, sink, np.uint32(ring_size - 1),
                                              np.int64(first), np.int64(rounds if attempt == "timed" else 100),
                                              np.int32(work)),
                       stream=stream, enable_cooperative_groups=True)
                finished.record(stream)
                finished.synchronize()
                if int(cell.host[CELL_STATUS]) == STATUS_TIMEOUT:
                    raise ComputationError("the barrier microbenchmark timed out at a barrier")
            seconds = cupy.cuda.get_elapsed_time(began, finished) / 1000
            figures[f"{name}_us_per_round"] = 1e6 * seconds / rounds
            figures[f"{name}_rounds_seen_by_host"] = int(cell.host[CELL_ROUND])
    finally:
        cell.close()
    figures["worth_building_on"] = figures["barrier_alone_us_per_round"] <= figures["target_us_per_round"]
    figures["resource_usage"] = usage
    return figures
