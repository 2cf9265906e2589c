"""What a run reports about its proven values: digests, counts, zeros, rare values, periods.

:class:`Tally` is the consumer behind ``run``, ``period`` and ``stats``.  It folds proven
values into the :class:`~.scan.Scanner` (FNV-1a-64 digests, the count, first and last heap of
every value, the rolling CRC-64 with power-of-two anchors), takes the table of counts at every
power of two it passes (:class:`~.counts.CountTables`), keeps the positions of zeros, and turns
hash matches into period *candidates*: when the W values ending at an anchor a recur ending at
a + p (the hash matched, then the values are compared), p is handed to a prover.

Two provers decide whether a candidate is a period:

* :class:`RecurrenceProof` (``run``): the kernel's values are periodic from i0 = a - W + 1,
  since each is a function of the W before it; verified values equal the kernel's, so once
  G(0) ... G(2 i0 + 2p + t - 1) are proven with no correction since the anchor, G(n + p) =
  G(n) holds for i0 <= n < 2 i0 + p + t, which proves period p from i0 by the Guy–Smith
  theorem.  p is the least period (an earlier recurrence would have matched first); the least
  preperiod is at most i0.
* :class:`~.period_proof.ExactProof` (``period``): the least preperiod found from the values on
  disk, every later value compared with the one p before it, the least period checked.
"""

from __future__ import annotations

import logging

import numpy as np

from ..periodicity import proof_length
from .arrays import pack_array, unpack_array
from .counts import CountTables
from .history import History
from .scan import ANCHORED, HASH_MATCH, Scanner
from .seams import Consumer

log = logging.getLogger("octalgen")

#: W of the period-search hash for games without a kernel (no W values determine the next).
UNSPARSE_WINDOW = 64

#: Zeros whose positions are kept (the count is always exact).
ZERO_POSITIONS = 10_000

_NEVER = np.iinfo(np.uint64).max


class RecurrenceProof:
    """Period proofs through the kernel's recurrence (see the module docstring).

    Attributes
    ----------
    candidate, proven : dict or None
        ``{"period", "from", "anchor", "found_at", "proof_length"}``.
    """

    name = "recurrence"

    def __init__(self, max_take: int):
        self.max_take = max_take
        self.candidate: dict | None = None
        self.proven: dict | None = None

    def attach(self, history: History) -> None:
        """Nothing to read back: the recurrence proves the period from the hash match alone."""

    def propose(self, period: int, anchor: int, window: int, heap: int) -> None:
        if self.candidate is not None or self.proven is not None:
            return
        start = anchor - window + 1
        self.candidate = {
            "period": period,
            "from": start,
            "anchor": anchor,
            "found_at": heap,
            "proof_length": proof_length(period, start, self.max_take),
        }
        log.warning(
            "period candidate: the %d values ending at G(%d) recur ending at G(%d): period %d from "
            "G(%d), proven once G(0) ... G(%d) are verified",
            window,
            anchor,
            heap,
            period,
            start,
            self.candidate["proof_length"] - 1,
        )

    def accept(self, position: int) -> None:
        if self.candidate is not None and position >= self.candidate["proof_length"]:
            self.proven, self.candidate = self.candidate, None
            p = self.proven
            log.info(
                "PERIOD PROVEN: period %d from G(%d) (Guy-Smith, with G(0) ... G(%d) verified)",
                p["period"],
                p["from"],
                p["proof_length"] - 1,
            )

    def reset(self) -> None:
        self.candidate = None

    @property
    def finished(self) -> bool:
        return self.proven is not None

    #: ``run`` goes on to the end of the chunk in which the proof completes: its digest covers
    #: the values it handed on, so where it ends is part of what it reports, and stays as it was.
    finishes_at = looks_at = None

    def state(self) -> dict:
        return {"candidate": self.candidate, "proven": self.proven}

    def restore(self, state: dict) -> None:
        self.candidate, self.proven = state["candidate"], state["proven"]


class Tally(Consumer):
    """Digests, counts, zeros and the period search over the proven values (a :class:`~.seams.Consumer`).

    Parameters
    ----------
    digest_from : int
        S: a second digest covers G(S) ... (0: none asked for).
    prover : RecurrenceProof or ExactProof or None
        What decides candidates (None: hash matches are counted, nothing is proposed).
    """

    name = "tally"

    def __init__(self, digest_from: int = 0, prover=None):
        self.digest_from = digest_from
        self.scanner = Scanner(UNSPARSE_WINDOW, digest_from)
        self.prover = prover
        self.anchor_window: np.ndarray | None = None
        self._packed_anchor: dict | None = None  # the anchor window as a checkpoint stores it: packed once per anchor
        self.zeros: list[int] = []
        self.count_tables = CountTables()
        self._history: History | None = None

    def attach(self, history: History) -> None:
        """Read proven values back from the run's history (the period search keeps no copy of its own)."""
        self.scanner.read_from(history)
        self._history = history
        if self.prover is not None:
            self.prover.attach(history)

    @property
    def position(self) -> int:
        return self.scanner.position

    @property
    def finished(self) -> bool:
        return self.prover is not None and self.prover.finished

    @property
    def finishes_at(self) -> int | None:
        """Where the prover's nearest candidate is proven (see :class:`~.seams.Consumer`)."""
        return self.prover.finishes_at if self.prover is not None else None

    @property
    def looks_at(self) -> int | None:
        """Where the prover searches the values next (see :class:`~.seams.Consumer`)."""
        return self.prover.looks_at if self.prover is not None else None

    def accept(self, first: int, values: np.ndarray) -> None:
        if len(self.zeros) < ZERO_POSITIONS:
            found = np.flatnonzero(values == 0)[: ZERO_POSITIONS - len(self.zeros)]
            self.zeros.extend(int(first + z) for z in found)
        tables = self.count_tables
        start = 0
        while start < len(values):  # in pieces that end where a table is due
            stop = min(len(values), tables.due - first)
            self._fold(values[start:stop])
            if self.position == tables.due:
                tables.take(self.scanner.counts)
            start = stop
        if self.prover is not None:
            self.prover.accept(self.position)

    def _fold(self, values: np.ndarray) -> None:
        for event in self.scanner.fold(values):
            if event.kind == ANCHORED:
                self.anchor_window, self._packed_anchor = self._copied_window(), None
            elif event.kind == HASH_MATCH and self.prover is not None:
                window, at_anchor = self.scanner.window_values(), self._anchor_values()
                if at_anchor is not None and np.array_equal(window, at_anchor):
                    anchor = self.scanner.anchor
                    self.prover.propose(event.heap - anchor, anchor, self.scanner.window, event.heap)

    def _reads_back(self) -> bool:
        """Whether the window is a far term's (longer than the history's recent values): then it is not
        copied at an anchor; the history reads it back from the producer's tape at a hash match."""
        return self._history is not None and self.scanner.window > self._history.recent_limit

    def _copied_window(self) -> np.ndarray | None:
        return None if self._reads_back() else self.scanner.window_values()

    def _anchor_values(self) -> np.ndarray | None:
        """The window at the anchor (None: no anchor)."""
        if self.anchor_window is not None or not self._reads_back() or self.scanner.anchor is None:
            return self.anchor_window
        return self.scanner.window_values(end=self.scanner.anchor + 1)

    def restart(self, window: int, tail: np.ndarray, anchor_from: int) -> None:
        """The values from here on come from a new recurrence (a new plan, or after a correction).

        The hash covers ``window`` values from now on (``tail``: the last ``window`` values) and
        anchors start at ``anchor_from``; an open candidate is dropped.
        """
        self.scanner.rewindow(window, tail, anchor_from=anchor_from)
        self.anchor_window = self._packed_anchor = None
        if self.prover is not None:
            self.prover.reset()

    def tables(self) -> dict[int, np.ndarray]:
        """The count tables at every power of two passed and at the end (:meth:`~.counts.CountTables.with_end`)."""
        return self.count_tables.with_end(self.scanner.counts, self.position)

    # -- checkpoint -----------------------------------------------------------------------

    def state(self) -> dict:
        s = self.scanner
        present = np.flatnonzero(s.counts).astype(np.uint16)
        return {
            "scanner": s.to_dict(),
            "present": pack_array(present),
            "counts": pack_array(s.counts[present]),
            "first_seen": pack_array(s.first_seen[present]),
            "last_seen": pack_array(s.last_seen[present]),
            "anchor_window": self._anchor_state(),
            "zeros": self.zeros,
            "count_tables": self.count_tables.state(),
            "prover": self.prover.state() if self.prover is not None else None,
        }

    def _anchor_state(self) -> dict | None:
        if self.anchor_window is not None and self._packed_anchor is None:
            self._packed_anchor = pack_array(self.anchor_window)
        return self._packed_anchor

    def restore(self, state: dict | None) -> None:
        assert state is not None  # state() always keeps one, and a checkpoint's layout is checked
        counts, first_seen, last_seen = counts_of(state)
        self.scanner = Scanner.from_dict(state["scanner"], counts, first_seen, last_seen)
        self._packed_anchor = state["anchor_window"]
        self.anchor_window = unpack_array(state["anchor_window"]) if state["anchor_window"] else None
        self.zeros = list(state["zeros"])
        self.count_tables = CountTables.restore(state.get("count_tables"), self.position)
        if self.prover is not None:
            self.prover.restore(state["prover"])


def counts_of(state: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The scanner's count, first-heap and last-heap arrays from a tally state (stored for values present only)."""
    counts = np.zeros(1 << 16, np.uint64)
    first_seen = np.full(1 << 16, _NEVER, np.uint64)
    last_seen = np.full(1 << 16, _NEVER, np.uint64)
    present = unpack_array(state["present"]).astype(np.int64)
    counts[present] = unpack_array(state["counts"])
    first_seen[present] = unpack_array(state["first_seen"])
    last_seen[present] = unpack_array(state["last_seen"])
    return counts, first_seen, last_seen
