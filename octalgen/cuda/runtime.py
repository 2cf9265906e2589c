"""Run the compiled kernels on a GPU through CuPy (the optional ``cuda`` extra).

CuPy is imported only inside the functions here, so importing this module
costs nothing on a machine without it; :func:`unavailable` says in one line
why the GPU backends cannot run (no driver, no CuPy, no GPU, no nvcc).

Two streams, so that speculation and verification overlap on the device:

* :class:`GpuSpeculator` (the twin: :class:`~octalgen.cuda.twin.Speculator`) keeps
  the value rings, the cache of final marks and the round state on the device and
  queues replays of a CUDA graph of ``rounds_per_launch`` round kernels (phases
  0..5 repeating: no host work between rounds) on the *speculation stream*, each
  followed by an asynchronous copy of the state into its own pinned slot and an
  event.  It keeps about ``lookahead`` positions of rounds queued past what the
  host has read, so the rounds of the next chunk run while the engine verifies
  this one.  The host waits only for the first replay whose state shows the front
  far enough, and reads final positions on a *copy stream* (they are never
  written again, see the twin), without waiting for the rounds still queued.
  The speculation stream has the device's greatest priority, so a round block is
  scheduled before waiting verifier blocks.
* :class:`GpuVerifier` launches the verifier over a whole interval on the
  *verification stream* and returns a :class:`VerifyLaunch` at once (done when its
  event is: the engine produces meanwhile).  Its grid is capped so that a round
  block always fits beside it on every multiprocessor (:mod:`.occupancy`).

Both record CUDA-event times (``seconds``) for the benchmark.
"""

from __future__ import annotations

import ctypes
import logging
import time
from collections import deque
from functools import lru_cache

import numpy as np

from ..errors import InternalError, ToolMissingError
from . import twin
from .cuda_plan import CudaPlan
from .kernels import compile_kernels, find_nvcc
from .occupancy import KernelResources, Multiprocessor, parse_resource_usage, verify_grid_cap

__all__ = [
    "LOG_CAPACITY",
    "RING_LEAST",
    "URGENT_PRIORITY",
    "GpuSpeculator",
    "GpuVerifier",
    "RoundLog",
    "VerifyLaunch",
    "device_defaults",
    "load_module",
    "multiprocessors",
    "read_ring",
    "require_gpu",
    "round_block_threads",
    "unavailable",
    "urgent_stream",
]

log = logging.getLogger("octalgen")

#: Round-log entries kept on the device, a ring: the host copies the rounds out before it comes
#: round again (:meth:`GpuSpeculator.take_log`, and during long waits), so none is lost.
LOG_CAPACITY = 1 << 20

#: Least codes per value ring: the device may run this far ahead of what the host has read.
RING_LEAST = 1 << 24

#: Bytes of one entry of the verifier's tail queue (``struct TailEntry``), and the most entries
#: one launch queues (past it, a heap goes on scanning where it is).
TAIL_ENTRY_BYTES, TAIL_QUEUE_MOST = 48, 1 << 20

#: cudaMemcpyKind values.
HOST_TO_DEVICE, DEVICE_TO_HOST = 1, 2


@lru_cache(maxsize=1)
def unavailable() -> str | None:
    """None when a CUDA GPU, its driver, CuPy and nvcc are all here; else why not, in one line."""
    for library in ("libcuda.so.1", "libcuda.so", "nvcuda.dll"):
        try:
            ctypes.CDLL(library)
            break
        except OSError:
            continue
    else:
        return "no NVIDIA driver (libcuda) on this machine, so no CUDA GPU"
    try:
        import cupy
    except ImportError:
        return "CuPy is not installed (pip install 'octalgen[cuda]')"
    except Exception as exc:  # noqa: BLE001 - a broken CuPy install fails in any way; the probe names it
        return f"CuPy cannot be imported: {type(exc).__name__}: {exc}"
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return "no CUDA GPU found"
    except Exception as exc:  # noqa: BLE001 - CUDARuntimeError or any driver failure: no usable device, named
        return f"no usable CUDA GPU: {exc}"
    try:
        find_nvcc()
    except ToolMissingError as exc:
        return str(exc)
    return None


def require_gpu() -> None:
    """Raise :class:`ToolMissingError` with the one-line reason when the GPU backends cannot run."""
    reason = unavailable()
    if reason is not None:
        raise ToolMissingError(reason)


def device_defaults() -> tuple[str, int]:
    """The nvcc target of this GPU and the default window (32 positions per multiprocessor)."""
    require_gpu()
    import cupy

    device = cupy.cuda.Device()
    major, minor = device.compute_capability[:-1], device.compute_capability[-1]
    return f"sm_{major}{minor}", 32 * device.attributes["MultiProcessorCount"]


@lru_cache(maxsize=4)
def load_module(plan: CudaPlan):
    """The compiled kernels of ``plan`` as a CuPy module, and nvcc's resource report."""
    import cupy

    compiled = compile_kernels(plan)
    return cupy.RawModule(path=str(compiled.cubin)), compiled.resource_usage


def _pinned(count: int, dtype) -> np.ndarray:
    """A page-locked host array (asynchronous copies need one)."""
    import cupy

    dtype = np.dtype(dtype)
    memory = cupy.cuda.alloc_pinned_memory(count * dtype.itemsize)
    return np.frombuffer(memory, dtype, count)


#: A priority beyond any GPU's range: CUDA clamps a stream's priority into the device's range
#: (cudaDeviceGetStreamPriorityRange), so this asks for the greatest there is.
URGENT_PRIORITY = -(1 << 16)


def urgent_stream():
    """A non-blocking stream at the device's greatest priority (numerically least): the rounds'
    launches must not queue behind the copies.  CuPy 14 no longer wraps
    cudaDeviceGetStreamPriorityRange, so the range is asked of CuPy where it can say and left to
    CUDA's clamp where it cannot."""
    import cupy

    ask = getattr(cupy.cuda.runtime, "deviceGetStreamPriorityRange", None)
    return cupy.cuda.Stream(non_blocking=True, priority=ask()[1] if ask else URGENT_PRIORITY)


def multiprocessors() -> tuple[int, Multiprocessor]:
    """The number of multiprocessors of this GPU, and what each holds."""
    import cupy

    attributes, default = cupy.cuda.Device().attributes, Multiprocessor()
    return attributes["MultiProcessorCount"], Multiprocessor(
        attributes.get("MaxRegistersPerMultiprocessor", default.registers),
        attributes.get("MaxThreadsPerMultiProcessor", default.threads),
        attributes.get("MaxSharedMemoryPerMultiprocessor", default.shared),
        attributes.get("MaxBlocksPerMultiprocessor", default.blocks),
    )


def round_block_threads(plan: CudaPlan) -> int:
    """Threads per block of the round kernels: a warp per term group."""
    return 32 * plan.round_warps


def _copy_async(destination: int, source: int, size: int, kind: int, stream) -> None:
    import cupy

    cupy.cuda.runtime.memcpyAsync(destination, source, size, kind, stream.ptr)


def read_ring(ring, lo: int, hi: int, out: np.ndarray | None, stream) -> np.ndarray:
    """Codes of positions ``[lo, hi)`` of a device ``ring`` (a power of two long), copied on ``stream``
    straight into ``out`` (contiguous uint8; made where None): no staging array, no concatenation."""
    out = np.empty(hi - lo, dtype=np.uint8) if out is None else out
    mask, done = len(ring) - 1, 0
    while done < hi - lo:
        start = (lo + done) & mask
        part = min(hi - lo - done, len(ring) - start)
        _copy_async(out.ctypes.data + done, ring.data.ptr + start, part, DEVICE_TO_HOST, stream)
        done += part
    stream.synchronize()
    return out


class RoundLog:
    """The device's log of rounds, ``(front, hi)`` each, a ring of :data:`LOG_CAPACITY` that the round
    kernels write: copied out as the host reads how many rounds ran, so that none is ever lost."""

    def __init__(self):
        import cupy

        self.device = cupy.zeros(2 * LOG_CAPACITY, dtype=cupy.int64)
        self.reset()

    def reset(self) -> None:
        self.taken = 0  # rounds copied out
        self._parts: list[np.ndarray] = []  # copied out, not yet taken

    def due(self, rounds: int) -> bool:
        """Whether ``rounds`` run so far leave half the ring not copied out (a long wait: copy now)."""
        return rounds - self.taken > LOG_CAPACITY // 2

    def drain(self, rounds: int, stream) -> None:
        """Copy out the rounds below ``rounds`` (the count the device published) not copied yet."""
        first = self.taken
        if rounds - first > LOG_CAPACITY:
            raise InternalError(f"the round log lost {rounds - first - LOG_CAPACITY} rounds")
        while first < rounds:
            start = first & (LOG_CAPACITY - 1)
            part = min(rounds - first, LOG_CAPACITY - start)
            self._parts.append(self.device[2 * start : 2 * (start + part)].get(stream=stream).reshape(-1, 2))
            first += part
        self.taken = rounds

    def take(self, rounds: int, stream) -> np.ndarray:
        """(front, hi) of each round below ``rounds`` since the last call."""
        self.drain(rounds, stream)
        parts, self._parts = self._parts, []
        return np.concatenate(parts) if parts else np.zeros((0, 2), dtype=np.int64)


class GpuSpeculator:
    """The round kernel on the device, driven as :class:`~octalgen.cuda.twin.Speculator` drives its rounds.

    Parameters
    ----------
    plan : CudaPlan
    window : int
        Positions per round, a multiple of 32.
    ring : int, optional
        Codes per value ring, a power of two (default: at least :data:`RING_LEAST`).
    rounds_per_launch : int
        Round kernels per graph replay (a multiple of 6).
    lookahead : int
        Positions of rounds kept queued past what the host has read.
    """

    def __init__(
        self,
        plan: CudaPlan,
        window: int,
        ring: int | None = None,
        rounds_per_launch: int = 240,
        lookahead: int = 1 << 22,
    ):
        import cupy

        if rounds_per_launch % twin.PHASES:
            raise ValueError(f"rounds_per_launch must be a multiple of {twin.PHASES}")
        self.plan, self.window, self.rounds_per_launch, self.lookahead = plan, window, rounds_per_launch, lookahead
        self.terms = twin.TermIndex.of(plan)
        self.ring = ring or twin.ring_size(plan, window, RING_LEAST)
        self.span = twin.span(plan, window)
        self.cache_ring = 1 << (self.span - 1).bit_length()
        module, self.resource_usage = load_module(plan)
        kernel = module.get_function("octal_round")
        self.buffers = [cupy.zeros(self.ring, dtype=cupy.uint8) for _ in range(2)]
        self.cache = cupy.zeros(8 * self.cache_ring if plan.options.cache_final else 8, dtype=cupy.uint32)
        self.state = cupy.zeros(twin.STATE_SIZE, dtype=cupy.int64)
        self.log = RoundLog()
        self.stream = urgent_stream()
        self.copy_stream = cupy.cuda.Stream(non_blocking=True)
        self._limit_cell = _pinned(1, np.int64)
        self._slots = [_pinned(twin.STATE_SIZE, np.int64) for _ in range(64)]
        cache_blocks = 0
        if plan.options.cache_final:
            cache_blocks = -(-(self.span - window) // round_block_threads(plan))
        grid, block = (window // 32 + cache_blocks,), (round_block_threads(plan),)
        cupy.cuda.runtime.deviceSynchronize()  # the allocations above ran on the default stream
        with self.stream:
            self.stream.begin_capture()
            for r in range(rounds_per_launch):
                phase = r % twin.PHASES
                read, write = self.buffers[phase % 2], self.buffers[1 - phase % 2]
                kernel(
                    grid,
                    block,
                    (
                        read,
                        write,
                        self.cache,
                        self.state,
                        self.log.device,
                        np.uint32(LOG_CAPACITY - 1),
                        np.uint32(self.ring - 1),
                        np.uint32(self.cache_ring - 1),
                        np.int64(window),
                        np.int64(self.span),
                        np.int32(phase),
                    ),
                )
            self.graph = self.stream.end_capture()
        self.seconds = 0.0
        self._queue: deque = deque()
        self._host_state = twin.initial_state(0, 0)
        self._served = 0
        self._next_slot = 0
        self._advance_estimate = max(1, window // 16)

    @property
    def capacity(self) -> int:
        return self.ring

    def reset(self, history: np.ndarray) -> None:
        self._drain()
        w = self.plan.kernel.window
        state = twin.initial_state(w, w + self.ring)
        with self.stream:
            for buffer in self.buffers:
                buffer.fill(0)
                buffer[:w].set(np.asarray(history, dtype=np.uint8), stream=self.stream)
            self.cache.fill(0)
            self.state.set(state, stream=self.stream)
        self.stream.synchronize()
        self._host_state = state
        self._limit_cell[0] = w + self.ring
        self.log.reset()
        self._served = w

    def _drain(self) -> None:
        """Wait for every queued replay (their results are dropped)."""
        self.stream.synchronize()
        self._account()
        self._queue.clear()

    def _account(self) -> None:
        """Add the kernel time of finished replays to :attr:`seconds`."""
        import cupy

        while self._queue and self._queue[0][2].done:
            began, finished, _, slot = self._queue.popleft()
            self.seconds += cupy.cuda.get_elapsed_time(began, finished) / 1000
            self._host_state = slot.copy()  # the newest state read back

    def _enqueue(self) -> None:
        """One graph replay, then the state into a free pinned slot, and an event."""
        import cupy

        self._next_slot = (self._next_slot + 1) % len(self._slots)
        slot = self._slots[self._next_slot]  # at most len(slots) queued: this one is free
        began, finished, ready = cupy.cuda.Event(), cupy.cuda.Event(), cupy.cuda.Event(disable_timing=True)
        began.record(self.stream)
        self.graph.launch(self.stream)
        finished.record(self.stream)
        _copy_async(slot.ctypes.data, self.state.data.ptr, slot.nbytes, DEVICE_TO_HOST, self.stream)
        ready.record(self.stream)
        self._queue.append((began, finished, ready, slot))

    def _queued_rounds_wanted(self, position: int) -> int:
        front = twin.next_front(self._host_state.copy(), int(self._host_state[twin.ROUND]) % 3)
        return -(-(position - front) // self._advance_estimate)

    def _fill_queue(self, position: int) -> None:
        wanted = self._queued_rounds_wanted(position)
        while len(self._queue) * self.rounds_per_launch < wanted and len(self._queue) < len(self._slots):
            self._enqueue()

    @property
    def front(self) -> int:
        return twin.next_front(self._host_state.copy(), int(self._host_state[twin.ROUND]) % 3)

    @property
    def overflow(self) -> int | None:
        state = self._host_state.copy()
        twin.next_front(state, int(state[twin.ROUND]) % 3)
        position = int(state[twin.OVERFLOW])
        return None if position == twin.NO_POSITION else position

    def release(self, position: int) -> None:
        self._served = position
        self._limit_cell[0] = max(int(self._limit_cell[0]), position + self.ring)
        _copy_async(self.state.data.ptr + 8 * twin.LIMIT, self._limit_cell.ctypes.data, 8, HOST_TO_DEVICE, self.stream)
        self._fill_queue(position + self.lookahead)  # the next chunk's rounds, while the host verifies

    def advance(self, position: int) -> None:
        """Wait until every position below ``position`` is final (or an overflow stops the front)."""
        if position > self._served + self.ring:
            raise ValueError(f"position {position} is past the limit: release first")
        rounds_before, front_before = int(self._host_state[twin.ROUND]), self.front
        while self.front < position and self.overflow is None:
            self._fill_queue(position)
            if not self._queue:
                self._enqueue()
            self._queue[0][2].synchronize()
            self._account()
            if self.log.due(int(self._host_state[twin.ROUND])):
                self._drain_log()  # a long wait: copy the log out before its ring comes round
        rounds = int(self._host_state[twin.ROUND]) - rounds_before
        if rounds > 0 and self.front > front_before:
            self._advance_estimate = max(1, (self.front - front_before) // rounds)

    def read(self, lo: int, hi: int, out: np.ndarray | None = None) -> np.ndarray:
        """Codes of final positions ``[lo, hi)``, on the copy stream (the rounds go on), straight
        into ``out`` (contiguous uint8) where given: no staging array, no concatenation."""
        if hi > self.front:
            raise ValueError(f"positions up to {hi} asked for, final only below {self.front}")
        return read_ring(self.buffers[int(self._host_state[twin.ROUND]) % 2], lo, hi, out, self.copy_stream)

    def take_log(self) -> np.ndarray:
        """(front, hi) of each round finished by the last state the host read, since the last call."""
        return self.log.take(int(self._host_state[twin.ROUND]), self.copy_stream)

    def _drain_log(self) -> None:
        """Copy the rounds finished since the last copy out of the device's log ring."""
        self.log.drain(int(self._host_state[twin.ROUND]), self.copy_stream)


class GpuVerifier:
    """The verifier kernel on the verification stream (the twin: :class:`~octalgen.cuda.twin.DeviceVerifier`).

    Attributes
    ----------
    grid_cap : int
        The most blocks of a launch: as many as fit beside one block of ``octal_round`` on
        every multiprocessor (:func:`~.occupancy.verify_grid_cap`); the kernel strides over
        the rest.
    """

    def __init__(self, plan: CudaPlan):
        import cupy

        self.plan = plan
        module, usage = load_module(plan)
        self.kernel = module.get_function("octal_verify")
        self.tail = module.get_function("octal_verify_tail")
        self.stream = cupy.cuda.Stream(non_blocking=True)
        figures = parse_resource_usage(usage)
        count, multiprocessor = multiprocessors()
        self.grid_cap = verify_grid_cap(
            count,
            multiprocessor,
            KernelResources(*figures["octal_verify"], plan.options.verify_block),
            KernelResources(*figures["octal_round"], round_block_threads(plan)),
        )
        # The last scan table and its device copy: one upload per table, not per launch.
        self._scan: tuple[np.ndarray | None, object] = (None, None)

    def launch(self, codes: np.ndarray, base: int, scan: np.ndarray, lo: int, hi: int) -> VerifyLaunch:
        """Queue the proof of heaps ``[lo, hi)`` (bounded scans, then the queued tails) and return at once."""
        import cupy

        with self.stream:
            if self._scan[0] is not scan:
                self._scan = (scan, cupy.asarray(scan))
            x = cupy.empty(len(codes), dtype=cupy.uint8)
            _copy_async(x.data.ptr, codes.ctypes.data, len(codes), HOST_TO_DEVICE, self.stream)
            # result[0..3] (first heap not proven, steps, the most, heaps queued) and the queue's count
            cell = _pinned(5, np.int64)  # in: their start; out: the result
            cell[:] = (twin.NO_POSITION, 0, 0, 0, 0)
            result = cupy.empty(5, dtype=cupy.int64)
            _copy_async(result.data.ptr, cell.ctypes.data, cell.nbytes, HOST_TO_DEVICE, self.stream)
            count = result[4:].view(cupy.uint32)  # its first word
            capacity = min(hi - lo, TAIL_QUEUE_MOST)
            queue = cupy.empty(capacity * TAIL_ENTRY_BYTES, dtype=cupy.uint8)
            block, table = self.plan.options.verify_block, self._scan[1]
            began, finished = cupy.cuda.Event(), cupy.cuda.Event()
            began.record(self.stream)
            self.kernel(
                (min(-(-(hi - lo) // block), self.grid_cap),),
                (block,),
                (
                    x,
                    np.int64(base),
                    np.int64(lo),
                    np.int64(hi),
                    table,
                    np.int32(len(scan)),
                    result,
                    queue,
                    np.uint32(capacity),
                    count,
                ),
            )
            self.tail(
                (self.grid_cap,),
                (block,),
                (x, np.int64(base), table, np.int32(len(scan)), result, queue, np.uint32(capacity), count),
            )
            finished.record(self.stream)
            _copy_async(cell.ctypes.data, result.data.ptr, cell.nbytes, DEVICE_TO_HOST, self.stream)
            ready = cupy.cuda.Event(disable_timing=True)
            ready.record(self.stream)
        # The codes (host and device), the queue and the result stay referenced until the launch is over.
        return VerifyLaunch(ready, began, finished, cell, (codes, x, result, queue))

    def verify(self, codes: np.ndarray, base: int, scan: np.ndarray, lo: int, hi: int):
        """``(first heap not proven or None, scan steps in all, the most one heap took, seconds)``."""
        launch = self.launch(codes, base, scan, lo, hi)
        launch.wait()
        return launch.outcome()


class VerifyLaunch:
    """A verification queued on the device: done when its event is (as :class:`~.twin.Launched`)."""

    #: Seconds between looks at the event while waiting with a timeout.
    POLL = 5e-5

    def __init__(self, ready, began, finished, cell: np.ndarray, keep: tuple | None):
        self._ready, self._began, self._finished, self._cell, self._keep = ready, began, finished, cell, keep

    def done(self) -> bool:
        return self._ready.done

    def wait(self, timeout: float | None = None) -> bool:
        """True once done (within ``timeout`` seconds; None: however long it takes)."""
        if timeout is None:
            self._ready.synchronize()
            return True
        deadline = time.monotonic() + timeout
        while not self._ready.done:
            if time.monotonic() >= deadline:
                return False
            time.sleep(self.POLL)
        return True

    def outcome(self) -> tuple:
        """``(first heap not proven or None, scan steps in all, the most one heap took, seconds)``."""
        import cupy

        self._ready.synchronize()
        self._keep = None
        first_bad, steps, longest = (int(v) for v in self._cell[:3])
        return (
            None if first_bad == twin.NO_POSITION else first_bad,
            steps,
            longest,
            cupy.cuda.get_elapsed_time(self._began, self._finished) / 1000,
        )
