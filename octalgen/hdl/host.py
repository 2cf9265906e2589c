"""The host side of a board: check its records against the exact engine, heap by heap.

:class:`ExactFollower` computes the exact values in a background thread (the
engine behind the ``c`` backend, through :func:`exact_chunks` only) and folds them with the
long runs' scanner up to each heap a record names; :func:`check_summary` and
:func:`check_histogram` compare a record with that state field by field.  A
board's values are speculative; a summary whose every field agrees with the
exact engine's at the same heap proves the values it covers (the digest
covers every value; the other fields say where to look when it does not).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from .records import BoardSummary, Histogram, Values

__all__ = [
    "EXACT_LIMIT",
    "ExactFollower",
    "ExactState",
    "check_histogram",
    "check_summary",
    "check_values",
    "checkpoint_digest",
    "exact_chunks",
]


#: How far the exact stream may go (the board stops long before).
EXACT_LIMIT = 10**15


def exact_chunks(game, start: int, count: int, table=None):
    """Proven G(start) ... G(start + count - 1) in uint16 chunks (the one place the host asks for exact values)."""
    from ..engine.values import stream_values  # the engine behind the c backend

    return stream_values(game, start, count, table)


def checkpoint_digest(directory) -> tuple[int, str]:
    """(N, digest of G(0) ... G(N - 1)) of an ``octalgen run`` checkpoint."""
    from ..engine.run_summary import summary_of_checkpoint

    statistics = summary_of_checkpoint(directory).statistics
    return int(statistics.values), str(statistics.digest)


@dataclass(frozen=True)
class ExactState:
    """What the exact values say at a heap (the fields of a summary, and the counts)."""

    summary: BoardSummary
    counts: np.ndarray  # count of each value, 65536 entries


class ExactFollower:
    """Exact values folded up to the heaps asked for, in a background thread.

    Call :meth:`want` with each heap whose state is needed (records and
    requested values) before the follower passes it; it computes no further
    than the last heap wanted.  :meth:`state` returns the state at a heap
    once reached, :meth:`values` the values of a wanted range.
    """

    def __init__(self, game, window: int, table=None):
        from ..engine.scan import Scanner

        self.game, self.table = game, table
        self._scanner = Scanner(window)
        self._last_match = 0
        self._wanted: set[int] = set()
        self._ranges: list[tuple[int, int]] = []
        self._states: dict[int, ExactState] = {}
        self._values: dict[int, np.ndarray] = {}
        self._condition = threading.Condition()
        self._stop = False
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="octalgen-exact", daemon=True)
        self._thread.start()

    @property
    def position(self) -> int:
        return self._scanner.position

    def want(self, heap: int) -> None:
        with self._condition:
            self._wanted.add(heap)
            self._condition.notify_all()

    def want_values(self, start: int, count: int) -> None:
        with self._condition:
            self._ranges.append((start, count))
            self._wanted.add(start + count)
            self._condition.notify_all()

    def state(self, heap: int) -> ExactState | None:
        with self._condition:
            return self._states.get(heap)

    def values(self, start: int) -> np.ndarray | None:
        with self._condition:
            return self._values.get(start)

    def close(self, wait: float = 10.0) -> None:
        """Stop computing (waits up to ``wait`` seconds for the engine's current chunk)."""
        with self._condition:
            self._stop = True
            self._condition.notify_all()
        self._thread.join(wait)

    def _run(self) -> None:
        try:
            position = 0
            # One stream from G(0): the engine computes in bounded memory and only a few chunks
            # ahead of what is taken, so the values are proven as the board's records ask for them.
            chunks = exact_chunks(self.game, 0, EXACT_LIMIT, table=self.table)
            try:
                for piece in chunks:
                    chunk = np.asarray(piece)
                    stop_at = position + len(chunk)
                    while position < stop_at:
                        with self._condition:
                            # Never past the last heap asked for: the next record names a later one.
                            while not self._stop and max(self._wanted, default=0) <= position:
                                self._condition.wait()
                            if self._stop:
                                return
                            ahead = [h for h in self._wanted if position < h <= stop_at]
                            stop = min(ahead, default=stop_at)
                            self._keep_values(chunk, stop_at)
                        base = stop_at - len(chunk)
                        self._fold(chunk[position - base : stop - base])
                        position = stop
                        with self._condition:
                            if position in self._wanted:
                                self._states[position] = self._snapshot()
                                self._condition.notify_all()
            finally:
                chunks.close()
        except BaseException as exc:  # noqa: BLE001 - the reader thread hands every error to the caller
            self.error = exc

    def _keep_values(self, chunk, end: int) -> None:
        base = end - len(chunk)
        for start, count in self._ranges:
            if start < end and start + count > base:
                kept = self._values.setdefault(start, np.full(count, -1, dtype=np.int64))
                lo, hi = max(start, base), min(start + count, end)
                kept[lo - start : hi - start] = chunk[lo - base : hi - base]

    def _fold(self, values) -> None:
        from ..engine.scan import HASH_MATCH

        for event in self._scanner.fold(np.asarray(values, dtype=np.uint16)):
            if event.kind == HASH_MATCH:
                self._last_match = event.heap

    def _snapshot(self) -> ExactState:
        scanner = self._scanner
        state = scanner.to_dict()
        counts = scanner.counts.copy()
        present = np.flatnonzero(counts)
        largest = int(present[-1]) if len(present) else 0
        return ExactState(
            BoardSummary(
                heap=scanner.position,
                digest=state["fnv"],
                largest=largest,
                largest_at=int(scanner.first_seen[largest]) if len(present) else 0,
                crc=state["crc"],
                anchor=state["anchor"],
                anchor_crc=state["anchor_crc"],
                matches=state["hash_matches"],
                last_match=self._last_match,
                flags=0,
            ),
            counts,
        )


def check_summary(record: BoardSummary, exact: ExactState) -> list[str]:
    """The fields where ``record`` differs from the exact state at its heap (empty: all agree)."""
    differences = []
    for field in ("digest", "largest", "largest_at", "crc", "anchor", "anchor_crc", "matches", "last_match", "flags"):
        got, want = getattr(record, field), getattr(exact.summary, field)
        if got != want:
            shown = (lambda v: f"{v:016x}") if field in ("digest", "crc", "anchor_crc") else str
            differences.append(f"{field} {shown(got)} (exact {shown(want)})")
    return differences


def check_histogram(record: Histogram, exact: ExactState) -> list[str]:
    """The values whose counts differ (empty: all agree)."""
    counts = np.zeros(max(len(record.counts), len(exact.counts)), dtype=np.int64)
    counts[: len(record.counts)] = record.counts
    want = np.zeros_like(counts)
    want[: len(exact.counts)] = exact.counts.astype(np.int64)
    bad = np.flatnonzero(counts != want)
    return [f"count of {v}: {counts[v]} (exact {want[v]})" for v in bad[:5]]


def check_values(record: Values, exact: np.ndarray) -> int | None:
    """The first heap where requested values differ from the exact ones (None: all agree)."""
    got = np.asarray(record.values, dtype=np.int64)
    bad = np.flatnonzero(got != exact[: len(got)])
    return record.start + int(bad[0]) if len(bad) else None
