"""The CUDA algorithm in plain numpy: the streaming fixed point and the verifier.

This is the specification of the kernels in ``templates/cuda/``, written so
that CI can check their logic without a GPU: same state layout, same round
bookkeeping, same verifier decisions; only the parallel loops became numpy
vector operations.  :mod:`octalgen.cuda.runtime` drives the kernels the way
:class:`Speculator` drives its rounds here.

Streaming fixed point
---------------------
A :class:`Speculator` is started from the ``W = plan.window`` codes before some
heap (the *history*; any stretch of a run, never heap 0): local position 0 is
the first history code, and positions ``W, W + 1, ...`` are the heaps after it.
Let ``spec(x, n)`` be the least code not marked by ``c ^ x[n - offset]`` over
the plan's terms.  The speculative sequence is the unique x with
``x[n] = spec(x, n)`` for every n >= W (it reads back at most W positions).
One *round* recomputes the window ``[f, f + window)`` from the previous round's
values (Jacobi iteration); all positions of the window are independent.  If the
round changed nothing in ``[f, c)`` and changed position c, then ``[f, c)``
already was a fixed point of the recurrence restricted to it, which is unique
because the recurrence is causal, so those values are exact, and so is the new
value at c (all its inputs are).  The front moves to ``c + 1`` (to the end of
the window when nothing changed): at least one position per round, in practice
hundreds.  A position entering the window starts from whatever its buffer holds.

Values live in two rings of R codes (position p in slot ``p mod R``; R a power
of two), read alternately, so memory is bounded however far a run goes.  The
host reads final positions and raises ``LIMIT`` (the window never reaches past
it) as it does: nothing unread is overwritten.

Repeated work, and the cut
--------------------------
Counted with this twin (``benchmarks/fixedpoint_rounds.py``): each value is
recomputed about ``window / advance`` times (9 to 13 for ``.6`` with a window
of 4224), and a round changes only ~2 values per final value, mostly far from
the front; but each change reaches hundreds of positions through the terms, so
recomputing only positions with a changed input saves ~10%.  What repeats is
the marks of *final* inputs: an input below the front never changes again.
With ``cache_final`` every position of the *span* ``[f, f + SPAN)`` (SPAN >= W,
so a position entering it has no final input yet) keeps a 256-bit mask of the
marks of its final inputs, and a round only

* adds to it the marks of the inputs that became final in the last round
  (``[f_prev, f)``: each term of each value is marked once in all), and
* marks, for window positions, the terms whose input is at or past the front
  (at most the terms with offset below the window),

about 3 times less marking for ``.6`` (the values are the same, so are the fronts).

Round bookkeeping
-----------------
The state is a small int64 array whose slots are indexed by the round number
modulo 3, so that consecutive launches run without the host: round r reads the
front, window end, limit and first change of round r-1, publishes its own,
resets the change slots that round r+1 will use, and copies the positions that
became final in round r-1 into its write buffer (then both buffers hold every
final value).  After round r, every position below the next front is final in
buffer ``(r + 1) % 2`` and never written there again (until the ring wraps,
which the limit prevents).

Verifier
--------
Each position n is proven on its own, assuming all earlier values (Grossman's
Fig. 2): the common options are exactly the term marks, so the stored value s
must be their mex (s unmarked, every code below marked); and every rare value
below s must be an option, which a scan over pairs of common heaps
(a, n - k - a) shows, stopping as soon as all of them are covered (with
positional rarity, what is rare at n depends on n's class, and the one-heap
options rare at n count too: see :mod:`.cuda_plan`).  The heaps
a come from the *scan table* (built from the exact prefix); their partners
from a stretch of codes ``base, base + 1, ...`` (a pair whose partner lies
before the stretch is skipped).  A position whose scan ends uncovered is *not
proven*: the plug-in (:mod:`.plugin`) settles it with the exact C verifier.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .cuda_plan import CODES, CudaPlan, unspread

__all__ = [
    "CHANGE",
    "FRONT",
    "HI",
    "LIMIT",
    "LIMIT_AT",
    "NO_POSITION",
    "OVERFLOW",
    "OVERFLOW_SEEN",
    "PHASES",
    "ROUND",
    "STATE_SIZE",
    "DeviceVerifier",
    "Launched",
    "Speculator",
    "TermIndex",
    "Verdict",
    "initial_state",
    "mex_rows",
    "next_front",
    "ring_size",
    "round_marks",
    "span",
    "speculative_codes",
    "verify",
]

#: "No position": larger than any position.
NO_POSITION = 1 << 62

# Layout of the int64 state array shared with the round kernel (slot + r % 3: round r's).
FRONT = 0  # the front of round r: every position below it is final
CHANGE = 3  # first position round r changed (NO_POSITION if none)
OVERFLOW_SEEN = 6  # first position whose mex was 256 in round r
HI = 9  # the end of round r's window
LIMIT_AT = 12  # the limit round r + 1 uses (round r's snapshot of LIMIT)
ROUND = 15  # rounds run so far
OVERFLOW = 16  # first *final* position whose mex is 256 (value too large for u8), else NO_POSITION
LIMIT = 17  # windows never reach past it (the host raises it as it reads)
STATE_SIZE = 18

#: Phases of the round kernel: round r runs with phase r % PHASES (buffers alternate by 2, slots by 3).
PHASES = 6


def ring_size(plan: CudaPlan, window: int, least: int = 0) -> int:
    """The smallest power of two that is at least ``least`` and ``2 * (W + window)``."""
    need = max(least, 2 * (plan.kernel.window + window))
    return 1 << (need - 1).bit_length()


def initial_state(window_history: int, limit: int) -> np.ndarray:
    """The state before round 0: as if round -1 had ended with the history final.

    Its front is 0 (round 0 caches the marks of the history and copies it, harmlessly,
    into the other buffer) and its window ends at the history's end, so round 0's front
    is ``window_history``.
    """
    state = np.full(STATE_SIZE, NO_POSITION, dtype=np.int64)
    state[FRONT + 2] = 0
    state[HI + 2] = window_history
    state[LIMIT_AT + 2] = limit
    state[LIMIT] = limit
    state[ROUND] = 0
    return state


def next_front(state: np.ndarray, slot: int) -> int:
    """The front of the round using ``slot``, from the previous round's window end and first change.

    Records a real overflow (a mex of 256 from exact inputs) in ``state[OVERFLOW]``.
    """
    prev = (slot + 2) % 3
    hi_prev, c_prev = int(state[HI + prev]), int(state[CHANGE + prev])
    front = c_prev + 1 if c_prev < hi_prev else hi_prev
    overflow = int(state[OVERFLOW_SEEN + prev])
    if overflow < front:  # computed from exact inputs: a real overflow; never move past it
        state[OVERFLOW] = min(int(state[OVERFLOW]), overflow)
        front = overflow
    return front


def span(plan: CudaPlan, window: int) -> int:
    """Positions past the front whose final-input marks are cached: >= W and >= window, a multiple of 32."""
    return -(-max(plan.kernel.window, window) // 32) * 32


@dataclass(frozen=True)
class TermIndex:
    """The plan's terms in increasing offset order (as the kernels hold them) and counts by offset.

    ``upto(d)`` is the number of terms with offset <= d (d may be an array).
    """

    offsets: np.ndarray
    codes: np.ndarray

    @classmethod
    def of(cls, plan: CudaPlan) -> TermIndex:
        order = np.argsort(plan.offsets, kind="stable")
        return cls(plan.offsets[order], plan.codes[order])

    def upto(self, d):
        return np.searchsorted(self.offsets, d, side="right")

    def marks_upto(self, d: int) -> int:
        """Sum of ``upto(e)`` over e in [0, d): the terms marked for young inputs by a window of d positions."""
        if d <= 0:
            return 0
        counts = self.upto(np.arange(min(d, int(self.offsets[-1]) + 1)))
        return int(counts.sum()) + max(0, d - len(counts)) * len(self.offsets)


def round_marks(terms: TermIndex, f_prev: int, front: int, hi: int, cache_final: bool) -> int:
    """Term marks a round makes: ``(hi - front) * T`` without the cache; with it, the marks of the
    inputs that became final (``[f_prev, front)``, for positions at or past the front) plus the
    young marks of the window (terms with offset <= n - front).
    """
    count = len(terms.offsets)
    if not cache_final:
        return (hi - front) * count
    advance = front - f_prev
    return advance * count - terms.marks_upto(advance) + terms.marks_upto(hi - front)


def speculative_codes(
    plan: CudaPlan, x: np.ndarray, positions: np.ndarray, ring_mask: int = -1, batch: int = 1024
) -> np.ndarray:
    """``spec(x, n)`` for every n in ``positions``: the least unmarked code, 256 if none.

    Position p is ``x[p & ring_mask]`` (a ring of a power-of-two size; -1: a plain array).
    """
    positions = np.asarray(positions, dtype=np.int64)
    out = np.empty(len(positions), dtype=np.int64)
    for lo in range(0, len(positions), batch):
        chunk = positions[lo : lo + batch]
        marks = x[(chunk[:, None] - plan.offsets[None, :]) & ring_mask] ^ plan.codes[None, :]
        out[lo : lo + batch] = mex_rows(marks)
    return out


def mex_rows(marks: np.ndarray, present: np.ndarray | None = None) -> np.ndarray:
    """Least code per row not among ``marks`` (nor set in ``present``); 256 if all are."""
    rows = np.zeros((len(marks), CODES + 1), dtype=bool) if present is None else present.copy()
    rows[np.arange(len(marks))[:, None], marks] = True
    rows[:, CODES] = False
    return np.argmin(rows, axis=1)


@dataclass
class Speculator:
    """The numpy twin of the round kernel and of the runtime's host loop.

    Parameters
    ----------
    plan : CudaPlan
    window : int
        Positions recomputed per round.
    ring : int, optional
        Codes per value ring, a power of two (default, or 0: :func:`ring_size`).
    cache_final : bool
        Keep the marks of final inputs (see the module docstring).

    Attributes
    ----------
    log : list of (front, hi, marks)
        Each round's front, window end and term marks.
    changes : list of numpy.ndarray
        With ``keep_changes``: each round's changed positions, relative to its front.
    """

    plan: CudaPlan
    window: int
    ring: int = 0
    cache_final: bool = False
    keep_changes: bool = False
    log: list = field(default_factory=list)
    changes: list = field(default_factory=list)

    def __post_init__(self):
        self.ring = self.ring or ring_size(self.plan, self.window)
        if self.ring & (self.ring - 1) or self.ring < self.plan.kernel.window + self.window:
            raise ValueError(f"ring must be a power of two holding W + window codes, not {self.ring}")
        self.terms = TermIndex.of(self.plan)
        self.span = span(self.plan, self.window)
        self.cache_ring = 1 << (self.span - 1).bit_length()
        self.buffers = [np.zeros(self.ring, dtype=np.int64) for _ in range(2)]
        self.cache = np.zeros((self.cache_ring, CODES + 1), dtype=bool)
        self.state = initial_state(0, 0)
        self.rounds = 0
        self._taken = 0
        self.seconds = 0.0

    @property
    def capacity(self) -> int:
        """Final positions the host may leave unread (the ring)."""
        return self.ring

    def reset(self, history: np.ndarray) -> None:
        """Start from the W codes before the first position to compute."""
        w = self.plan.kernel.window
        if len(history) != w:
            raise ValueError(f"the history holds {len(history)} codes, not the plan's window {w}")
        for buffer in self.buffers:
            buffer[:] = 0
            buffer[:w] = history
        self.cache[:] = False
        self.state = initial_state(w, w + self.ring)
        self.rounds = 0
        self.log.clear()
        self.changes.clear()
        self._taken = 0

    @property
    def front(self) -> int:
        """Every position below it is final (the front the next round will use)."""
        return next_front(self.state.copy(), self.rounds % 3)

    @property
    def overflow(self) -> int | None:
        """The final position whose value does not fit u8 storage, if one was met."""
        position = int(self.state[OVERFLOW])
        return None if position == NO_POSITION else position

    def release(self, position: int) -> None:
        """The host has read every final position below ``position``: the window may go R past it."""
        self.state[LIMIT] = max(int(self.state[LIMIT]), position + self.ring)

    def advance(self, position: int) -> None:
        """Run rounds until every position below ``position`` is final, or an overflow stops the front."""
        if position > int(self.state[LIMIT]):
            raise ValueError(f"position {position} is past the limit {int(self.state[LIMIT])}: release first")
        began = time.perf_counter()
        while self.front < position and self.overflow is None:
            self.round()
        self.seconds += time.perf_counter() - began

    def take_log(self) -> np.ndarray:
        """(front, hi) of each round since the last call (int64 rows)."""
        rows = np.array([(front, hi) for front, hi, _ in self.log[self._taken :]], dtype=np.int64).reshape(-1, 2)
        self._taken = len(self.log)
        return rows

    def read(self, lo: int, hi: int, out: np.ndarray | None = None) -> np.ndarray:
        """Codes of the final positions ``[lo, hi)`` (uint8), into ``out`` where given."""
        if hi > self.front:
            raise ValueError(f"positions up to {hi} asked for, final only below {self.front}")
        buffer = self.buffers[self.rounds % 2]
        out = np.empty(hi - lo, dtype=np.uint8) if out is None else out
        out[:] = buffer[np.arange(lo, hi) & (self.ring - 1)]
        return out

    def round(self) -> None:
        """One launch of the round kernel (phase = rounds % 6)."""
        phase = self.rounds % PHASES
        slot, parity, prev = phase % 3, phase % 2, (phase + 2) % 3
        state, mask = self.state, self.ring - 1
        front = next_front(state, slot)
        f_prev = int(state[FRONT + prev])
        hi = min(front + self.window, int(state[LIMIT_AT + prev]))
        # Block 0, thread 0 of the kernel publishes the round's bookkeeping.
        state[FRONT + slot], state[HI + slot], state[LIMIT_AT + slot] = front, hi, state[LIMIT]
        state[CHANGE + (slot + 1) % 3] = NO_POSITION
        state[OVERFLOW_SEEN + (slot + 1) % 3] = NO_POSITION
        state[ROUND] += 1
        read, write = self.buffers[parity], self.buffers[1 - parity]
        final = np.arange(f_prev, front) & mask  # became final last round: into the write buffer too
        write[final] = read[final]
        if self.cache_final:
            self._cache_final_marks(read, f_prev, front)
        marks = 0
        if hi > front:
            positions = np.arange(front, hi)
            y, marks = self._window_codes(read, positions, front)
            overflowed = np.flatnonzero(y == CODES)
            if len(overflowed):
                state[OVERFLOW_SEEN + slot] = front + overflowed[0]
                y[overflowed] = 0
            changed = np.flatnonzero(y != read[positions & mask])
            if len(changed):
                state[CHANGE + slot] = front + changed[0]
            if self.keep_changes:
                self.changes.append(changed)
            write[positions & mask] = y
        cached = self._cached if self.cache_final else 0
        self.log.append((front, hi, cached + marks))
        self.rounds += 1

    def _cache_final_marks(self, read: np.ndarray, f_prev: int, front: int, batch: int = 256) -> None:
        """Span positions entering it start empty; each gets the marks of inputs in ``[f_prev, front)``."""
        cache, cmask = self.cache, self.cache_ring - 1
        entering = np.arange(max(front, f_prev + self.span), front + self.span)
        cache[entering & cmask] = False
        offsets, codes = self.terms.offsets, self.terms.codes
        self._cached = 0
        for lo in range(f_prev, front, batch):
            inputs = np.arange(lo, min(front, lo + batch))
            targets = inputs[:, None] + offsets[None, :]
            keep = targets >= front  # positions below the front are final: nothing to cache
            marks = read[inputs & (self.ring - 1)][:, None] ^ codes[None, :]
            cache[targets[keep] & cmask, marks[keep]] = True
            self._cached += int(keep.sum())

    def _window_codes(self, read: np.ndarray, positions: np.ndarray, front: int):
        """The window's new codes, and the term marks made for them."""
        if not self.cache_final:
            return speculative_codes(self.plan, read, positions, self.ring - 1, batch=512), len(positions) * len(
                self.terms.offsets
            )
        offsets, codes, mask = self.terms.offsets, self.terms.codes, self.ring - 1
        out = np.empty(len(positions), dtype=np.int64)
        made = 0
        for lo in range(0, len(positions), 512):
            chunk = positions[lo : lo + 512]
            young = self.terms.upto(int(chunk[-1] - front))  # terms with an input at or past the front
            inputs = chunk[:, None] - offsets[None, :young]
            mine = offsets[None, :young] <= (chunk - front)[:, None]
            marks = np.where(mine, read[inputs & mask] ^ codes[None, :young], CODES)
            made += int(mine.sum())
            out[lo : lo + 512] = mex_rows(marks, self.cache[chunk & (self.cache_ring - 1)])
        return out, made


# -- the verifier -------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """What the verifier found for a range of positions.

    Attributes
    ----------
    first_bad : int or None
        The first position not proven (None: all proven).
    scan_steps : numpy.ndarray
        Pair-scan steps each position used, up to ``first_bad`` (multiples of the scan chunk, as on the GPU).
    queued : int
        Positions whose scans went past ``scan_bound`` steps into the tail queue (as on the GPU).
    """

    first_bad: int | None
    scan_steps: np.ndarray
    queued: int = 0


@dataclass(frozen=True)
class DeviceVerifier:
    """:func:`verify` with the device verifier's calls (as :class:`octalgen.cuda.runtime.GpuVerifier`)."""

    plan: CudaPlan

    def verify(self, codes: np.ndarray, base: int, scan: np.ndarray, lo: int, hi: int):
        """``(first heap not proven or None, scan steps in all, the most one heap took, seconds)``."""
        began = time.perf_counter()
        verdict = verify(self.plan, codes, base, scan, lo, hi)
        steps = verdict.scan_steps
        return (verdict.first_bad, int(steps.sum()), int(steps.max()) if len(steps) else 0, time.perf_counter() - began)

    def launch(self, codes: np.ndarray, base: int, scan: np.ndarray, lo: int, hi: int) -> Launched:
        """Start :meth:`verify` (here it runs now; the GPU's returns before its device is done)."""
        return Launched(self.verify(codes, base, scan, lo, hi))


@dataclass(frozen=True)
class Launched:
    """A device verification, here already over: ``done()``, ``wait(timeout)`` and ``outcome()`` as
    the GPU's launches (:class:`octalgen.cuda.runtime.VerifyLaunch`)."""

    result: tuple

    def done(self) -> bool:
        return True

    def wait(self, timeout: float | None = None) -> bool:
        """True once done (within ``timeout`` seconds; None: however long it takes)."""
        return True

    def outcome(self) -> tuple:
        """As :meth:`DeviceVerifier.verify`'s result."""
        return self.result


def verify(
    plan: CudaPlan, codes: np.ndarray, base: int, scan: np.ndarray, lo: int, hi: int, batch: int = 512
) -> Verdict:
    """Prove heaps ``[lo, hi)`` one at a time, assuming every earlier value exact.

    ``codes`` are the stored codes of heaps ``base ...`` (covering ``[lo - W, hi)``), ``scan``
    the scan table (:meth:`~.cuda_plan.CudaPlan.scan_table`).
    """
    if lo < plan.start or base > lo - plan.kernel.window or base + len(codes) < hi:
        raise ValueError(
            f"verify [{lo}, {hi}) needs codes from heap {lo - plan.kernel.window} and lo >= "
            f"{plan.start}, not codes {base} ... {base + len(codes) - 1}"
        )
    codes = np.asarray(codes, dtype=np.int64)
    steps = np.zeros(hi - lo, dtype=np.int64)
    queued = 0
    for b in range(lo, hi, batch):
        positions = np.arange(b, min(b + batch, hi))
        ok, used, tails = _verify_batch(plan, codes, base, positions, scan)
        steps[b - lo : b - lo + len(positions)] = used
        queued += tails
        if not ok.all():
            bad = int(positions[np.argmin(ok)])
            return Verdict(bad, steps[: bad - lo], queued)
    return Verdict(None, steps, queued)


def _verify_batch(plan: CudaPlan, codes: np.ndarray, base: int, positions: np.ndarray, scan: np.ndarray):
    """``(proven, scan steps, heaps queued)`` of ``positions``: the kernels' two passes.

    ``octal_verify`` checks the mex and scans each heap for at most ``scan_bound`` steps; a heap
    not done by then is queued with its step and the rare codes found, and ``octal_verify_tail``
    goes on with the queued heaps alone, from there.
    """
    count = len(positions)
    local = positions - base
    stored = codes[local]
    # 1. The stored code is the mex of the common options (the term marks).
    ok = speculative_codes(plan, codes, local) == stored
    # 2. Every rare code below it is an option: the one-heap options rare at n, then pairs of
    #    common heaps, chunk by chunk.
    need = plan.rare_codes_below[plan.heap_classes(positions), np.minimum(stored, CODES - 1)]
    seen = np.zeros((count, CODES + 1), dtype=bool)  # column 256: pairs that do not count
    for k in plan.kernel.rare_options:
        seen[np.arange(count), codes[local - k]] = True
    steps = np.zeros(count, dtype=np.int64)
    todo = ok & (need > 0)
    bound = plan.options.scan_bound
    _pair_scan(plan, codes, base, positions, need, scan, ok, todo, seen, steps, 0, bound)
    # 3. The tail queue: (heap, step, rare codes found) of the heaps not done, scanned on together.
    queue = np.flatnonzero(todo)
    if len(queue):
        tail_ok, tail_todo, tail_steps = ok[queue], todo[queue], steps[queue]
        _pair_scan(
            plan,
            codes,
            base,
            positions[queue],
            need[queue],
            scan,
            tail_ok,
            tail_todo,
            seen[queue],
            tail_steps,
            bound,
            None,
        )
        ok[queue], steps[queue] = tail_ok, tail_steps
    return ok, steps, len(queue)


def _pair_scan(
    plan: CudaPlan,
    codes: np.ndarray,
    base: int,
    positions: np.ndarray,
    need: np.ndarray,
    scan: np.ndarray,
    ok: np.ndarray,
    todo: np.ndarray,
    seen: np.ndarray,
    steps: np.ndarray,
    step: int,
    stop: int | None,
) -> None:
    """Scan pairs from ``step`` (the same for every heap) until no heap is ``todo`` or, with ``stop``,
    until ``step`` reaches it; updates ``ok``, ``todo``, ``seen`` and ``steps`` in place."""
    local = positions - base
    below = np.arange(CODES)[None, :] < need[:, None]
    # Per move k: pairs need a <= (n - k) / 2, and a partner n - k - a in the stretch (a <= n - k - base).
    limits = [(k, np.minimum((positions - k) // 2, positions - k - base)) for k in plan.two_heap_moves]
    while todo.any() and (stop is None or step < stop):
        heaps = scan[step : step + plan.options.scan_chunk, 0].astype(np.int64)
        codes_a = unspread(scan[step : step + plan.options.scan_chunk, 1].astype(np.int64))
        active = np.flatnonzero(todo)
        for k, limit in limits:
            pairs = heaps[None, :] <= limit[active, None]
            partners = np.where(pairs, local[active, None] - k - heaps[None, :], 0)
            seen[active[:, None], np.where(pairs, codes_a[None, :] ^ codes[partners], CODES)] = True
        step += len(heaps)
        steps[todo] = step
        covered = ~(below & ~seen[:, :CODES]).any(axis=1)
        # Live: the table goes on and the last heap still made a pair for the widest move.
        if step < len(scan) and limits and len(heaps):
            live = heaps[-1] <= limits[0][1]
        else:
            live = np.zeros(len(positions), dtype=bool)
        ok &= ~(todo & ~covered & ~live)
        todo &= ~covered & live
