"""The CUDA algorithm in plain numpy: the fixed-point rounds and the verifier.

This is the specification of the kernels in ``templates/cuda/``, written so
that CI can check their logic without a GPU: same state layout, same round
bookkeeping, same verifier decisions; only the parallel loops became numpy
vector operations.

Speculative fixed point
-----------------------
Let ``spec(x, n)`` be the least code not marked by ``c ^ x[n - offset]`` over
the plan's terms.  With an exact prefix below ``start``, the speculative
sequence is the unique x with ``x[n] = spec(x, n)`` for every n >= start.
One *round* recomputes the window ``[f, f + W)`` from the previous round's
values (Jacobi iteration); all positions of the window are independent.  If
the round changed nothing in ``[f, c)`` and changed position c, then
``[f, c)`` already was a fixed point of the recurrence restricted to it, which
is unique because the recurrence is causal, so those values are exact, and so
is the new value at c (all its inputs are).  The front moves to ``c + 1``
(to the end of the window when nothing changed): at least one position per
round, in practice hundreds (see :func:`window_rounds`).  The window slides
with the front; a position entering it starts from whatever its buffer holds
(zero), since the guess barely matters (measured).

The kernel keeps two value buffers (reads one, writes the other) and a small
int64 state array whose slots are indexed by the round number modulo 3, so
that consecutive launches can run without the host: round r reads the front
and first change of round r-1, publishes its own front, resets the change
slot that round r+1 will use, and copies the positions that became final in
round r-1 into its write buffer (then both buffers hold every final value).

Verifier
--------
Each position n >= start is proven on its own, assuming all earlier values
(Grossman's Fig. 2): the common options are exactly the term marks, so the
stored value s must be their mex (s unmarked, every code below marked); and
every rare value below s must be an option, which a scan over pairs of common
heaps (a, n - k - a) shows, stopping as soon as all of them are covered.  A
scan that runs out of pairs means G(n) is a new rare value: the speculation
failed at n.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .plan import CODES, CudaPlan

#: "No position": larger than any heap size.
NO_POSITION = 1 << 62

# Layout of the int64 state array shared with the round kernel.
FRONT = 0  # FRONT + r % 3: the front of round r
CHANGE = 3  # CHANGE + r % 3: first position round r changed (NO_POSITION if none)
OVERFLOW_SEEN = 6  # OVERFLOW_SEEN + r % 3: first position whose mex was 256 in round r
ROUND = 9  # rounds run so far (indexes the front log)
OVERFLOW = 10  # first *final* position whose mex is 256 (value too large for u8), else NO_POSITION
STATE_SIZE = 11

#: Phases of the round kernel: round r runs with phase r % PHASES (buffers alternate by 2, slots by 3).
PHASES = 6


def initial_state(start: int) -> np.ndarray:
    """The state before round 0: as if round -1 had ended with its front at ``start``."""
    state = np.full(STATE_SIZE, NO_POSITION, dtype=np.int64)
    state[FRONT + 2] = start  # f_{-1}: nothing to copy in round 0
    state[CHANGE + 2] = start - 1  # c_{-1}: so that f_0 = start
    state[ROUND] = 0
    return state


def speculative_codes(plan: CudaPlan, x: np.ndarray, positions: np.ndarray, batch: int = 1024) -> np.ndarray:
    """``spec(x, n)`` for every n in ``positions``: the least unmarked code, 256 if all are marked."""
    positions = np.asarray(positions, dtype=np.int64)
    out = np.empty(len(positions), dtype=np.int64)
    for lo in range(0, len(positions), batch):
        chunk = positions[lo : lo + batch]
        marks = x[chunk[:, None] - plan.offsets[None, :]] ^ plan.codes[None, :]
        present = np.zeros((len(chunk), CODES + 1), dtype=bool)
        present[np.arange(len(chunk))[:, None], marks] = True
        out[lo : lo + batch] = np.argmin(present, axis=1)  # column 256 is never marked
    return out


def next_front(state: np.ndarray, slot: int, window: int, end: int) -> int:
    """The front of the round using ``slot``, from the previous round's front and first change."""
    prev = (slot + 2) % 3
    f_prev = int(state[FRONT + prev])
    hi_prev = min(f_prev + window, end)
    c_prev = int(state[CHANGE + prev])
    front = c_prev + 1 if c_prev < hi_prev else hi_prev
    overflow = int(state[OVERFLOW_SEEN + prev])
    if overflow < front:  # computed from exact inputs: a real overflow; never move past it
        state[OVERFLOW] = min(int(state[OVERFLOW]), overflow)
        front = overflow
    return front


@dataclass
class FixedPoint:
    """The numpy twin of the round kernel and of the host loop that launches it.

    Parameters
    ----------
    plan : CudaPlan
    prefix : array of int
        Codes of G(0) ... G(plan.start - 1), exact.
    end : int
        Compute positions below ``end``.
    window : int
        Positions recomputed per round.
    """

    plan: CudaPlan
    prefix: np.ndarray
    end: int
    window: int

    def __post_init__(self):
        start = self.plan.start
        if len(self.prefix) < start:
            raise ValueError(f"the prefix has {len(self.prefix)} codes, the plan starts at {start}")
        self.buffers = [np.zeros(max(self.end, start), dtype=np.int64) for _ in range(2)]
        for buffer in self.buffers:
            buffer[:start] = self.prefix[:start]
        self.state = initial_state(start)
        self.fronts: list[int] = []
        self.rounds = 0
        self.converged_after: int | None = None

    def round(self) -> None:
        """One launch of the round kernel (phase = rounds % 6)."""
        phase = self.rounds % PHASES
        slot, parity = phase % 3, phase % 2
        state, end = self.state, self.end
        front = next_front(state, slot, self.window, end)
        # Block 0, thread 0 of the kernel publishes the round's bookkeeping.
        f_prev = int(state[FRONT + (slot + 2) % 3])
        state[FRONT + slot] = front
        state[CHANGE + (slot + 1) % 3] = NO_POSITION
        state[OVERFLOW_SEEN + (slot + 1) % 3] = NO_POSITION
        self.fronts.append(front)
        state[ROUND] += 1
        # Every block: its 32 positions of the window, and its share of the copy.
        read, write = self.buffers[parity], self.buffers[1 - parity]
        write[f_prev:front] = read[f_prev:front]
        hi = min(front + self.window, end)
        if hi > front:
            positions = np.arange(front, hi)
            y = speculative_codes(self.plan, read, positions)
            overflowed = np.flatnonzero(y == CODES)
            if len(overflowed):
                state[OVERFLOW_SEEN + slot] = front + overflowed[0]
                y[overflowed] = 0
            changed = np.flatnonzero(y != read[front:hi])
            if len(changed):
                state[CHANGE + slot] = front + changed[0]
            write[front:hi] = y
        self.rounds += 1

    @property
    def front(self) -> int:
        """The front the next round will use: every position below it is final."""
        return next_front(self.state.copy(), self.rounds % 3, self.window, self.end)

    def run(self, max_rounds: int | None = None) -> np.ndarray:
        """Run rounds until every position below ``end`` is final; return their codes.

        Raises
        ------
        OverflowError
            With the position, when a final value does not fit u8 storage.
        """
        while self.front < self.end:
            if max_rounds is not None and self.rounds >= max_rounds:
                raise RuntimeError(f"no fixed point after {max_rounds} rounds")
            self.round()
            if self.state[OVERFLOW] != NO_POSITION:
                raise OverflowError(int(self.state[OVERFLOW]))
        # Two more rounds copy the last final positions into both buffers (as on the GPU).
        self.converged_after = self.rounds
        self.round()
        self.round()
        assert np.array_equal(self.buffers[0][: self.end], self.buffers[1][: self.end])
        return self.buffers[self.rounds % 2][: self.end].copy()

    def advances(self) -> np.ndarray:
        """Positions made final by each round until the run converged (the front's steps)."""
        rounds = self.rounds if self.converged_after is None else self.converged_after
        fronts = np.array(self.fronts[:rounds] + [self.fronts[rounds] if rounds < len(self.fronts) else self.front])
        return np.diff(fronts)


def window_rounds(plan: CudaPlan, values: np.ndarray, lo: int, size: int) -> int:
    """Rounds a fixed window ``[lo, lo + size)`` needs to reach its fixed point from zeros.

    ``values`` are exact codes up to at least ``lo + size``; the result is
    checked against them (the fixed point must be the exact sequence).
    """
    x = values.copy()
    x[lo : lo + size] = 0
    positions = np.arange(lo, lo + size)
    rounds = 0
    while True:
        rounds += 1
        y = speculative_codes(plan, x, positions)
        if np.array_equal(y, x[lo : lo + size]):
            break
        x[lo : lo + size] = y
    if not np.array_equal(x[lo : lo + size], values[lo : lo + size]):
        raise AssertionError("the fixed point differs from the exact values")
    return rounds - 1  # the last round only confirmed


# -- the verifier -------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """What the verifier found for a range of positions.

    Attributes
    ----------
    first_bad : int or None
        The first position whose stored value is not proven (None: all proven).
    scan_steps : numpy.ndarray
        Pair-scan steps each position used (multiples of the scan chunk, as on the GPU).
    """

    first_bad: int | None
    scan_steps: np.ndarray


def verify(plan: CudaPlan, codes: np.ndarray, lo: int, hi: int, batch: int = 512) -> Verdict:
    """Prove ``codes[lo:hi]`` one position at a time, assuming every earlier code exact.

    ``lo`` must be at least ``plan.start``.
    """
    if lo < plan.start:
        raise ValueError(f"the verifier starts at the plan's first heap {plan.start}, not {lo}")
    codes = np.asarray(codes, dtype=np.int64)
    scan = plan.scan_table(codes, hi)
    bad = []
    steps = np.zeros(hi - lo, dtype=np.int64)
    for b in range(lo, hi, batch):
        positions = np.arange(b, min(b + batch, hi))
        ok, used = _verify_batch(plan, codes, positions, scan)
        steps[b - lo : b - lo + len(positions)] = used
        if not ok.all():
            bad.append(int(positions[np.argmin(ok)]))
            break
    return Verdict(bad[0] if bad else None, steps)


def _verify_batch(plan: CudaPlan, codes: np.ndarray, positions: np.ndarray, scan: np.ndarray):
    count = len(positions)
    stored = codes[positions]
    # 1. The stored code is the mex of the common options (the term marks).
    ok = speculative_codes(plan, codes, positions) == stored
    # 2. Every rare code below it is an option: scan pairs of common heaps, chunk by chunk.
    need = plan.rare_codes_below[np.minimum(stored, CODES - 1)]
    below = np.arange(CODES)[None, :] < need[:, None]
    seen = np.zeros((count, CODES), dtype=bool)
    steps = np.zeros(count, dtype=np.int64)
    todo = ok & (need > 0)
    halves = [(k, (positions - k) // 2) for k in plan.two_heap_moves]
    step = 0
    while todo.any():
        heaps = scan[step : step + plan.options.scan_chunk, 0].astype(np.int64)
        for k, half in halves:
            r, c = np.nonzero((heaps[None, :] <= half[:, None]) & todo[:, None])
            seen[r, codes[heaps[c]] ^ codes[positions[r] - k - heaps[c]]] = True
        step += len(heaps)
        steps[todo] = step
        covered = ~(below & ~seen).any(axis=1)
        # Live: the table goes on and the last heap still made a pair for the widest move.
        live = step < len(scan) and len(halves) > 0 and len(heaps) > 0
        live = live & (heaps[-1] <= halves[0][1]) if live else np.zeros(count, dtype=bool)
        ok &= ~(todo & ~covered & ~live)
        todo &= ~covered & live
    return ok, steps
