"""**Experimental**: the persistent round kernel, off by default (``CudaOptions(persistent=True)`` turns it on).

It has not been measured on a GPU: nothing in octalgen uses it unless asked
(``CudaOptions.persistent`` is False by default, and only then do the
generated kernels include ``templates/cuda/persistent.cu.j2``).  Its numpy
twin runs in the tests under random schedules; ``benchmarks/gpu_probe.py``
runs it, and its barrier microbenchmark, on a lent GPU.  It stays
experimental until that shows it faster than the launch per round.

Why it exists: the launch-per-round kernel (:class:`~octalgen.cuda.twin.Speculator`)
pays a launch and a fetch of its state from L2 for every round, most of a
round's time.  ``octal_persistent`` runs many rounds in one launch, one block
per multiprocessor.  This module holds

* its specification in numpy, :class:`PersistentSpeculator`: the same
  decisions, with everything the GPU leaves to timing chosen by a seeded random
  generator, so that the tests show that the values do not depend on timing;
* its host loop on the device, :class:`GpuPersistentSpeculator` (CuPy, imported
  only when one is made), and :func:`barrier_microbenchmark`, which times
  ``octal_barrier_probe``: the round's barrier alone and with one group's marks.

Ownership
---------
Positions come in *groups* of 32 (a warp's lanes).  With ``B`` blocks and a window of
``32 * B`` positions, block b owns every group G with ``G mod B == b``, for the whole
launch.  A round's window starts at the front rounded down to a whole group,
``A = front & ~31``, so each block computes exactly one group per round, and it alone ever
writes that group's positions.  The lanes of ``[A, front)`` idle: those positions are final,
and below the first position (the history's end, any heap) they are not even fixed points
of the recurrence (the history is given, not computed).  A block keeps the codes of its
group itself (warp 0's registers on the GPU), so it knows what it changed without reading
them back, and writes only what changed (to L2 only, so no multiprocessor's L1 holds a
young code).

One ring, chaotic rounds
------------------------
There is one ring of codes, not two: a block reads the positions the other blocks are
writing in the same round, and may see each code before or after its write (on the GPU:
coherent loads from L2 for the young inputs, at or past the front).  The front rule
still holds: if no position of ``[front, c)`` changed in the round, each of them kept one
code throughout the round, whichever moment it was read, so ``[front, c)`` was a fixed
point of the recurrence restricted to it, over final inputs: exact (the recurrence is
causal, its fixed point unique); and c read only those codes and final ones, so its new
code is exact too.  Inputs below the front rounded down to a 128-byte line never change
again in a launch, nor does any code sharing their line: they may be read through L1.

The barrier
-----------
At the end of a round each block publishes one flag (:func:`flag_word`): the round's tag
(never 0: the flags are zeroed before a launch), its *candidate* (``c + 1 - A`` for its first
changed position c, else ``hi_b - A``), the first position whose mex was 256, and whether it
saw a stop request.  In every block one warp waits for
all the flags of the round and takes their minima, so every block computes the same next
front ``A + min candidate`` without anyone publishing it.  The candidate ``hi_b - A`` of
a block that saw the limit late (``hi_b`` its own window end) keeps the front inside
every block's window, so the blocks need not agree on the limit: each reads the
host's limit (mapped memory) once a round, for the next round.  Block 0 writes the front
to mapped memory for the host.

A launch ends, for every block at the same round (the decision depends only on agreed
values): at a real overflow, at a stop request, after ``idle_rounds`` rounds without
advance (the limit reached: the host launches again when it raises it), or when the
front passes ``stop_front``, set so that no ring slot holds two positions in one launch
(lines read through L1 are never stale).  A new launch starts from the ring and the
front; nothing else carries over.

What the schedule chooses here, per seed: the order in which the blocks run a round,
for every input read whether it sees the code of the round's start or the latest, and
whether each block's limit read came before or after the host's last release.

The device
----------
The host and the running kernel talk through one *cell* of mapped (zero-copy, pinned) host
memory: the kernel writes the front, the rounds run and why a launch ended; the host writes
the limit (raised as it reads final codes) and a stop request.  Launches are cooperative
(every block resident at once, or the launch fails instead of hanging at the first barrier)
and end on their own (see *The barrier* above: idle at the limit, or the ring about to hold
two positions in a slot); :meth:`GpuPersistentSpeculator.advance` launches again
where none runs.  A barrier that waits two seconds ends the launch with ``STATUS_TIMEOUT``,
which raises :class:`~octalgen.errors.ComputationError` here: never a hang.
"""

from __future__ import annotations

import ctypes
import time
from dataclasses import dataclass, field

import numpy as np

from ..errors import ComputationError, InternalError
from .cuda_plan import CODES, CudaPlan
from .runtime import (
    LOG_CAPACITY,
    RING_LEAST,
    RoundLog,
    load_module,
    multiprocessors,
    read_ring,
    round_block_threads,
    urgent_stream,
)
from .twin import NO_POSITION, TermIndex, mex_rows, ring_size

__all__ = [
    "BARRIER_TARGET_US",
    "GROUP",
    "IDLE_ROUNDS",
    "RELATIVE_NONE",
    "ROUND_MASK",
    "GpuPersistentSpeculator",
    "PersistentSpeculator",
    "RoundOutcome",
    "barrier_microbenchmark",
    "blocks_for",
    "combine",
    "flag_word",
    "owned_group",
    "read_flag",
    "stop_front",
]

#: Positions per group: a warp's lanes, the unit a block owns.
GROUP = 32

#: The L1 line, in codes: inputs below the front rounded down to it are read through L1.
LINE = 128

#: Candidates and overflow positions travel relative to the window start in 20 bits.
RELATIVE_BITS = 20

#: Rounds without advance after which a launch ends (the GPU's default).
IDLE_ROUNDS = 4096


def blocks_for(window: int) -> int:
    """Blocks of a persistent launch with ``window`` positions per round (one group each)."""
    if window % GROUP or not 0 < window < (1 << RELATIVE_BITS) - 1:
        raise ValueError(
            f"the persistent kernel needs a window of whole groups of {GROUP} "
            f"below 2**{RELATIVE_BITS} - 1, not {window}"
        )
    return window // GROUP


def owned_group(window_start: int, block: int, blocks: int) -> int:
    """The group of ``[window_start, window_start + 32 * blocks)`` that ``block`` owns (G mod blocks == block)."""
    g = window_start // GROUP
    return g + (block - g) % blocks


def stop_front(front: int, ring: int, history: int, window: int) -> int:
    """The front at which a launch started at ``front`` ends: its reads, from ``front - history`` to
    the window's end, stay within one turn of the ring (with a line to spare)."""
    return front + ring - history - window - LINE


#: A flag's round tag: round % 2**22 + 1 (blocks are at most a round apart at a barrier).
ROUND_MASK = (1 << 22) - 1

#: "None" in a flag's relative fields.
RELATIVE_NONE = (1 << RELATIVE_BITS) - 1


def flag_word(round_number: int, candidate: int, overflow: int, stop: bool) -> int:
    """A block's flag for a round, as the kernel packs it into 64 bits: tag, stop, candidate, overflow."""
    if not (0 <= candidate <= RELATIVE_NONE and 0 <= overflow <= RELATIVE_NONE):
        raise ValueError(f"candidate {candidate} or overflow {overflow} does not fit {RELATIVE_BITS} bits")
    return ((round_number & ROUND_MASK) + 1) << 41 | int(stop) << 40 | candidate << 20 | overflow


def read_flag(word: int, round_number: int) -> tuple[int, int, bool] | None:
    """``(candidate, overflow, stop)`` of a flag for ``round_number``; None while it is another round's."""
    if word >> 41 != (round_number & ROUND_MASK) + 1:
        return None
    return (word >> 20) & RELATIVE_NONE, word & RELATIVE_NONE, bool(word >> 40 & 1)


@dataclass
class RoundOutcome:
    """What the barrier of one round gives every block: the next front, and whether to end the launch."""

    front: int
    overflow: int | None
    stop: bool


def combine(window_start: int, candidates: list[int], overflows: list[int], stops: list[bool]) -> RoundOutcome:
    """The barrier's minima (the kernel's warp reduction over the blocks' flags), made into the next front.

    A first overflow (a mex of 256) below the next front was computed from exact inputs: it is
    real, the front stops there.
    """
    front = window_start + min(candidates)
    first = min(overflows)
    overflow = None
    if first < RELATIVE_NONE and window_start + first < front:
        overflow = front = window_start + first
    return RoundOutcome(front, overflow, any(stops))


@dataclass
class PersistentSpeculator:
    """The twin of ``octal_persistent`` and of its host loop (:class:`GpuPersistentSpeculator`).

    The same calls as :class:`~octalgen.cuda.twin.Speculator` (reset, advance, read, release,
    front, overflow, capacity, take_log), so the plug-in's producer drives either.

    Parameters
    ----------
    plan : CudaPlan
    window : int
        Positions per round, ``32 * blocks``.
    ring : int, optional
        Codes in the ring, a power of two (default, or 0: :func:`~octalgen.cuda.twin.ring_size`).
    seed : int or None
        The schedule's seed (see the module docstring); None: blocks in order, every read
        seeing the round's start, every limit read up to date (a Jacobi round, as the
        launch-per-round kernel's, with aligned windows).
    idle_rounds : int
        Rounds without advance before a launch ends.

    Attributes
    ----------
    log : list of (front, hi, marks)
        Each round's front, block 0's window end and the term marks made.
    launches : int
        Launches so far (the host launches again after a launch ends).
    writers : dict
        With ``keep_writers``: position -> the blocks that wrote it (ownership, for the tests).
    """

    plan: CudaPlan
    window: int
    ring: int = 0
    seed: int | None = 0
    idle_rounds: int = IDLE_ROUNDS
    keep_writers: bool = False
    log: list = field(default_factory=list)
    writers: dict = field(default_factory=dict)

    def __post_init__(self):
        self.blocks = blocks_for(self.window)
        self.ring = self.ring or ring_size(self.plan, self.window)
        w = self.plan.kernel.window
        if self.ring & (self.ring - 1) or stop_front(0, self.ring, w, self.window) < GROUP:
            raise ValueError(
                f"ring must be a power of two of at least W + window + {LINE + GROUP} codes, not {self.ring}"
            )
        self.terms = TermIndex.of(self.plan)
        self.codes = np.zeros(self.ring, dtype=np.int64)
        self.seconds = 0.0
        self.launches = 0
        self._random = np.random.default_rng(self.seed)
        self._front = 0
        self._overflow = NO_POSITION
        self._limit = 0
        self._views = np.zeros(self.blocks, dtype=np.int64)  # each block's limit, read a round ago
        self._running = False
        self._idle = 0
        self._stop_front = 0
        self._taken = 0
        self._rounds = 0  # rounds of every launch: the flags' tags
        self._flags = np.zeros((2, self.blocks), dtype=np.uint64)

    @property
    def capacity(self) -> int:
        """Final positions the host may leave unread (the ring)."""
        return self.ring

    @property
    def front(self) -> int:
        return self._front

    @property
    def overflow(self) -> int | None:
        return None if self._overflow == NO_POSITION else self._overflow

    def reset(self, history: np.ndarray) -> None:
        """Start from the W codes before the first position to compute (a launch running is stopped)."""
        w = self.plan.kernel.window
        if len(history) != w:
            raise ValueError(f"the history holds {len(history)} codes, not the plan's window {w}")
        self.codes[:] = 0
        self.codes[:w] = history
        self._front, self._overflow, self._limit = w, NO_POSITION, w + self.ring
        self._running = False
        self.log.clear()
        self.writers.clear()
        self._taken = 0

    def release(self, position: int) -> None:
        """The host has read every final position below ``position`` (the mapped limit goes R past it)."""
        self._limit = max(self._limit, position + self.ring)

    def advance(self, position: int) -> None:
        """Run rounds (launching where none runs) until every position below ``position`` is final."""
        if position > self._limit:
            raise ValueError(f"position {position} is past the limit {self._limit}: release first")
        began = time.perf_counter()
        while self._front < position and self.overflow is None:
            if not self._running:
                self._launch()
            self.round()
        self.seconds += time.perf_counter() - began

    def _launch(self) -> None:
        """A new launch: every block reads the limit before its first round."""
        self._running, self._idle = True, 0
        self._views[:] = self._limit
        self._flags[:] = 0  # as the host zeroes them before a launch
        self._stop_front = stop_front(self._front, self.ring, self.plan.kernel.window, self.window)
        self.launches += 1

    def read(self, lo: int, hi: int, out: np.ndarray | None = None) -> np.ndarray:
        """Codes of the final positions ``[lo, hi)`` (uint8), into ``out`` where given."""
        if hi > self._front:
            raise ValueError(f"positions up to {hi} asked for, final only below {self._front}")
        out = np.empty(hi - lo, dtype=np.uint8) if out is None else out
        out[:] = self.codes[np.arange(lo, hi) & (self.ring - 1)]
        return out

    def take_log(self) -> np.ndarray:
        """(front, hi) of each round since the last call (int64 rows)."""
        rows = np.array([(front, hi) for front, hi, _ in self.log[self._taken :]], dtype=np.int64).reshape(-1, 2)
        self._taken = len(self.log)
        return rows

    def round(self) -> None:
        """One round of every block, in the schedule's order, then the barrier."""
        start = self._front & ~(GROUP - 1)
        began = self.codes.copy()  # every code as the round began
        order = range(self.blocks) if self.seed is None else self._random.permutation(self.blocks)
        flags = self._flags[self._rounds % 2]
        marks, hi_0 = 0, start
        for block in order:
            if read_flag(int(flags[block]), self._rounds) is not None:
                raise InternalError(f"block {block}'s flag shows round {self._rounds} before it ran")
            hi = min(start + self.window, int(self._views[block]))
            # The limit for the next round: read before or after the host's last release.
            if self.seed is None or self._random.random() < 0.5:
                self._views[block] = self._limit
            candidate, overflow, made = self._block_round(block, start, hi, began)
            flags[block] = flag_word(self._rounds, candidate, overflow, False)
            marks += made
            if block == 0:
                hi_0 = hi
        # The barrier: one warp of every block reads every flag of the round.
        seen = [read_flag(int(word), self._rounds) for word in flags]
        if any(flag is None for flag in seen):
            raise InternalError(f"a block's flag for round {self._rounds} is missing")
        outcome = combine(start, *(list(column) for column in zip(*seen)))
        self._rounds += 1
        if outcome.front < self._front:
            raise InternalError(f"the front went back from {self._front} to {outcome.front}")
        self.log.append((self._front, hi_0, marks))
        self._idle = self._idle + 1 if outcome.front == self._front else 0
        self._front = outcome.front
        if outcome.overflow is not None:
            self._overflow = outcome.overflow
        # The launch ends at the same round in every block: the decision uses agreed values only.
        if (
            outcome.overflow is not None
            or outcome.stop
            or self._idle >= self.idle_rounds
            or self._front >= self._stop_front
        ):
            self._running = False

    def _block_round(self, block: int, start: int, hi: int, began: np.ndarray) -> tuple[int, int, int]:
        """Block ``block``'s group: ``(candidate, first overflow, marks)``, both relative to ``start``."""
        candidate, overflow = hi - start, RELATIVE_NONE
        first = GROUP * owned_group(start, block, self.blocks)
        positions = np.arange(max(first, self._front), min(first + GROUP, hi))  # lanes below the front idle
        if not len(positions):
            return candidate, overflow, 0
        mask = self.ring - 1
        inputs = (positions[:, None] - self.plan.offsets[None, :]) & mask
        seen = began[inputs]
        if self.seed is not None:  # each read before or after the other blocks' writes of this round
            seen = np.where(self._random.random(inputs.shape) < 0.5, seen, self.codes[inputs])
        y = mex_rows(seen ^ self.plan.codes[None, :])
        overflowed = np.flatnonzero(y == CODES)
        if len(overflowed):
            overflow = int(positions[overflowed[0]] - start)
            y[overflowed] = 0
        slots = positions & mask
        changed = np.flatnonzero(y != self.codes[slots])  # the block's own history: it alone writes them
        if len(changed):
            candidate = min(candidate, int(positions[changed[0]] - start + 1))
            self.codes[slots[changed]] = y[changed]
            if self.keep_writers:
                for p in positions[changed].tolist():
                    self.writers.setdefault(p, set()).add(block)
        return candidate, overflow, len(positions) * len(self.plan.offsets)


# The mapped cell (templates/cuda/persistent.cu.j2: CELL_*).
CELL_FRONT, CELL_ROUND, CELL_OVERFLOW, CELL_STATUS, CELL_LIMIT, CELL_STOP, CELL_SIZE = range(7)

#: Why a launch ended (CELL_STATUS).
STATUS_RUNNING, STATUS_STOP_FRONT, STATUS_IDLE, STATUS_STOPPED, STATUS_OVERFLOW, STATUS_TIMEOUT = range(6)

#: cudaHostAllocMapped: host memory the device reads and writes over the bus.
HOST_ALLOC_MAPPED = 2

#: Microseconds a round that the barrier alone may take for the persistent kernel to be worth
#: building on: well under the launch and the fetch of state from L2 that it saves each round.
BARRIER_TARGET_US = 3.0

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
    """``octal_persistent`` driven as :class:`~octalgen.cuda.PersistentSpeculator` drives its rounds.

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

    def __init__(self, plan: CudaPlan, window: int, ring: int | None = None, idle_rounds: int = IDLE_ROUNDS):
        import cupy

        self.plan, self.window, self.idle_rounds = plan, window, idle_rounds
        self.blocks = blocks_for(window)
        self.terms = TermIndex.of(plan)
        self.ring = ring or ring_size(plan, window, RING_LEAST)
        module, self.resource_usage = load_module(plan)
        self.kernel = module.get_function("octal_persistent")
        self.threads = round_block_threads(plan)
        resident = multiprocessors()[0] * _blocks_fit(self.kernel, self.threads)
        if self.blocks > resident:
            raise ComputationError(
                f"a window of {window} needs {self.blocks} resident blocks of the persistent "
                f"kernel; this GPU holds {resident}"
            )
        self.codes = cupy.zeros(self.ring, dtype=cupy.uint8)
        self.flags = cupy.zeros(2 * self.blocks, dtype=cupy.uint64)
        self.log = RoundLog()
        self.cell = MappedCell(CELL_SIZE)
        self.stream = urgent_stream()
        self.copy_stream = cupy.cuda.Stream(non_blocking=True)
        self.seconds = 0.0
        self.launches = 0
        self._launch_events: tuple | None = None  # (began, finished) of the launch in flight

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
            self.kernel(
                (self.blocks,),
                (self.threads,),
                (
                    self.codes,
                    self.flags,
                    self.cell.device,
                    self.log.device,
                    np.uint32(LOG_CAPACITY - 1),
                    np.uint32(self.ring - 1),
                    np.int64(front),
                    np.int64(rounds),
                    np.int64(stop_front(front, self.ring, w, self.window)),
                    np.int32(self.idle_rounds),
                ),
                stream=self.stream,
                enable_cooperative_groups=True,
            )
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
            raise ComputationError(
                "a barrier of the persistent round kernel waited 2 s for a block that never "
                "came (a bug, please report it; CudaOptions(persistent=False) runs without it)"
            )
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
    ``plan`` must have ``CudaOptions(persistent=True)``: only then is the probe compiled.
    """
    import cupy

    if not plan.options.persistent:
        raise ValueError("the barrier microbenchmark needs a plan with CudaOptions(persistent=True)")

    module, usage = load_module(plan)
    kernel = module.get_function("octal_barrier_probe")
    count = multiprocessors()[0]
    threads = round_block_threads(plan)
    ring_size = 1 << max(20, (first + 32 * count).bit_length())
    ring = cupy.asarray(np.random.default_rng(0).integers(0, 256, ring_size, dtype=np.uint8))
    flags = cupy.zeros(2 * count, dtype=cupy.uint64)
    sink = cupy.zeros(32 * count, dtype=cupy.uint8)
    cell = MappedCell(CELL_SIZE)
    stream = cupy.cuda.Stream(non_blocking=True)
    figures = {
        "blocks": count,
        "threads_per_block": threads,
        "rounds": rounds,
        "target_us_per_round": BARRIER_TARGET_US,
    }
    try:
        for work, name in ((0, "barrier_alone"), (1, "barrier_and_one_group"), (2, "barrier_without_host")):
            for attempt in ("warm_up", "timed"):
                cell.host[:] = 0
                flags.fill(0)
                cupy.cuda.runtime.deviceSynchronize()
                began, finished = cupy.cuda.Event(), cupy.cuda.Event()
                began.record(stream)
                kernel(
                    (count,),
                    (threads,),
                    (
                        ring,
                        flags,
                        cell.device,
                        sink,
                        np.uint32(ring_size - 1),
                        np.int64(first),
                        np.int64(rounds if attempt == "timed" else 100),
                        np.int32(work),
                    ),
                    stream=stream,
                    enable_cooperative_groups=True,
                )
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
