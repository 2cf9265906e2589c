"""The proven values the engine may need again, in bounded memory, and on disk for resuming.

A proof scan for heap n pairs G(x) with G(n - k - x) for x = 1, 2, ... and stops once every
rare value below the speculated value is seen; recovering from a failed proof at heap m needs
every value below m.  :class:`History` holds

* the **prefix** G(0) ... G(P-1), P growing with the run up to ``prefix_limit`` (rare positions
  past it, found far out, are the verifier's far ones: :meth:`~octalgen.cpu.verify.Verifier.verify`);
* the **recent** values: at least the last ``recent_limit`` proven values before the values
  appended last, and those.  A kernel's window up to ``recent_limit`` lies within them; a longer
  one (a far term's) is on the producer's tape (:mod:`.tape`), which :meth:`values` reads too;
* the **late values**: which distinct values appeared past the prefix (a bit per value), so
  that a run in which a rare value appears far out can tell whether another mask would have
  every later value common (:func:`~octalgen.sparse.find_late_switch`);
* with a checkpoint directory, the **store** (:mod:`.store`): the same values on disk, so
  that a resumed run holds exactly what the uninterrupted run held at that position — by
  construction, not by luck.  With ``keep_all`` or :attr:`History.keep_late` every value stays on
  disk (a byte a value under u8 storage), so that a rare value found far out is decided from them
  (:mod:`.exact_heap`), not from a recomputation.

Whatever falls between the prefix and the recent values is read back from the far term's tape,
from the store where it kept them, or from the exact solver while it holds every value; otherwise
:meth:`History.values` answers None.
:meth:`History.values_before` always answers: from :data:`~octalgen.mapped.SPILL_FROM` values on
in a file on disk, written in pieces (a rare value decided far out does not hold every value in
memory), and where the history no longer holds them, computed anew by a run of their own (the
history's ``recompute``: :meth:`~octalgen.engine.core.Engine.recompute`).  Memory: two bytes a
value for ``prefix_limit + recent_limit`` values (32 MiB by default), whatever N: a far term's
window is never held (:meth:`History.window_reader` reads it in pieces).  While a far term is live
the store keeps every value on disk, so that a resumed run writes its tape anew.
"""

from __future__ import annotations

import logging
import mmap
from collections import deque
from collections.abc import Callable
from typing import Protocol

import numpy as np

from ..errors import InternalError
from ..mapped import SPILL_FROM, SPILL_PIECE, mapped_array
from ..plan import Encoding, KernelPlan
from .scan import mark_present
from .store import ValueStore
from .tape import FarTermTape

log = logging.getLogger("octalgen")

#: The prefix grows to the first this many values: far more than the longest proof scans of .6 reach
#: back, so that a scan stopping short of its answer is rare.
PREFIX_LIMIT = 1 << 23

#: Proven values kept in memory besides the prefix (for scans whose pairs lie further back
#: than a verification task's own history, and for recovery).
RECENT_LIMIT = 1 << 23


class Recompute(Protocol):
    """Computes G(0) ... G(heap-1) anew, into ``out`` where it is given (:meth:`~.core.Engine.recompute`)."""

    def __call__(self, heap: int, out: np.ndarray | None) -> np.ndarray:
        """G(0) ... G(heap-1): ``out`` itself where it is given."""


class History:
    """Prefix, recent values and (optionally) their store on disk.

    Parameters
    ----------
    store : ValueStore, optional
        Where the values also go (a run with a checkpoint directory).
    keep_all : bool
        Keep every value in the store (otherwise only what the prefix and recent values cover).
    prefix_limit, recent_limit : int
    far_tape : FarTermTape, optional
        The run's far-term tape, read where neither memory nor the store holds a value.
    spill_dir : path, optional
        Where :meth:`values_before` writes many values (default: the temporary directory).
    recompute : Recompute, optional
        What :meth:`values_before` falls back on where the history no longer holds the values.

    Attributes
    ----------
    keep_late : bool
        Keep every value past the prefix in the store too (the engine's
        :attr:`~.options.EngineOptions.keep_late`; False: only what it needs).
    """

    def __init__(
        self,
        store: ValueStore | None = None,
        keep_all: bool = False,
        prefix_limit: int = PREFIX_LIMIT,
        recent_limit: int = RECENT_LIMIT,
        far_tape: FarTermTape | None = None,
        spill_dir=None,
        recompute: Recompute | None = None,
    ):
        self.store = store
        self.keep_all = keep_all
        self.prefix_limit = prefix_limit
        self.recent_limit = recent_limit
        self.far_tape = far_tape
        self.spill_dir = spill_dir
        self.recompute = recompute
        self.keep_late = False
        self.recomputed: np.ndarray | None = None  # G(0) ... of the last recomputation (values_before)
        # G(0) ... G(n - 1) where the exact solver holds them (None: it does not): during exact steps a
        # new plan's window can be longer than the recent values, with no tape yet to hold it.
        self.exact_held: Callable[[int], np.ndarray | None] = lambda n: None
        self._prefix = _anonymous_map(1 << 16)
        self._prefix_length = 0
        self.recent: deque[tuple[int, np.ndarray]] = deque()
        self.position = 0
        self.window = 0  # the kernel's window: recent values always cover it, or the tape does
        # Values seen at heaps past the prefix (None: unknown, a checkpoint of octalgen 0.3.0).  A prefix
        # moved on later (ensure_prefix) leaves its values here: a superset errs on the safe side.
        self._late: np.ndarray | None = np.zeros(1 << 16, dtype=np.uint8)

    @property
    def recent_length(self) -> int:
        """How many of the last values are held in memory: the kernel's window where it is no longer
        than ``recent_limit``; a longer one is on the producer's tape (:mod:`.tape`), and on disk."""
        return self.recent_limit

    # -- growing --------------------------------------------------------------------------

    def append(self, values: np.ndarray, encoding: Encoding | None = None, codes: np.ndarray | None = None) -> None:
        """Add proven values G(position) ... (the prefix grows with them up to its limit).

        ``codes``: the kernel's codes of the values under ``encoding``, for the store's files.
        """
        values = np.asarray(values, dtype=np.uint16)
        first = self.position
        if self.store is not None:
            self.store.append(first, values, encoding, codes)
        if self._prefix_length == first < self.prefix_limit:
            self._grow_prefix(values[: self.prefix_limit - first])
        late = values[max(0, self._prefix_length - first) :]
        if self._late is not None and len(late):
            mark_present(late, self._late)
        self.recent.append((first, values))
        self.position = first + len(values)
        # What the values just added follow stays too: the period search reads the W values before them.
        while self.recent and self.position - self.recent[0][0] - len(self.recent[0][1]) >= self.recent_length + len(
            values
        ):
            self.recent.popleft()

    def follow(self, plan: KernelPlan | None) -> None:
        """Keep what the run's (new) ``plan`` needs: its window; without a kernel, every value on disk
        (the exact solver computes them all, and a recovery or a resume reads them back)."""
        self.window = plan.window if plan is not None else 0
        if plan is None:
            self.keep_all = self.keep_all or self.store is not None

    def cover(self, tail: np.ndarray) -> None:
        """Hold the last ``len(tail)`` values (``tail``: G(position - len) ... G(position - 1), zeros before
        heap 0) where they are not held yet: a new plan's window reaches further back than the recent
        values did.  A window longer than the recent values is a far term's, which its tape holds."""
        if len(tail) > self.recent_limit:
            return
        start = max(self.position - len(tail), self._prefix_length)
        if start < self.recent_first:
            offset = len(tail) - (self.position - start)
            self.recent.appendleft((start, np.array(tail[offset : offset + self.recent_first - start], np.uint16)))

    def _grow_prefix(self, values: np.ndarray) -> None:
        need = self._prefix_length + len(values)
        if need > len(self._prefix):
            # To its limit at once: the system's untouched pages cost nothing until written, where
            # doubling copied the prefix again at every step.
            grown = _anonymous_map(max(need, self.prefix_limit))
            grown[: self._prefix_length] = self.prefix
            self._prefix = grown
        self._prefix[self._prefix_length : need] = values
        self._prefix_length = need

    def ensure_prefix(self, values: np.ndarray) -> None:
        """Make the prefix at least ``values`` (G(0) ...): the kernel's first heap moved past it."""
        if len(values) > self._prefix_length:
            self._prefix_length = 0
            self._grow_prefix(np.asarray(values, dtype=np.uint16))

    @property
    def prefix(self) -> np.ndarray:
        """G(0) ... G(P-1): read-only, and never changed, as the prefix grows only past it (a verifier
        checks it once, and each longer one only past it)."""
        view = np.ndarray((self._prefix_length,), dtype=np.uint16, buffer=self._prefix.base)
        view.flags.writeable = False
        return view

    @property
    def prefix_complete(self) -> bool:
        """True once the prefix has stopped growing."""
        return self._prefix_length >= self.prefix_limit

    # -- reading --------------------------------------------------------------------------

    @property
    def recent_first(self) -> int:
        return self.recent[0][0] if self.recent else self.position

    def recent_values(self) -> tuple[int, np.ndarray]:
        """(first heap, values) of everything held in memory after the prefix's reach."""
        if not self.recent:
            return self.position, np.zeros(0, np.uint16)
        if len(self.recent) > 1:
            merged = np.concatenate([v for _, v in self.recent])
            self.recent = deque([(self.recent[0][0], merged)])
        return self.recent[0]

    def late_values(self) -> np.ndarray | None:
        """The distinct values seen at heaps past the prefix, ascending (None: not known)."""
        return None if self._late is None else np.flatnonzero(self._late)

    def values(self, start: int, stop: int) -> np.ndarray | None:
        """G(start) ... G(stop-1) (``stop <= position``) if held in memory or in the store, else None."""
        if start >= stop:
            return np.zeros(0, np.uint16)
        parts, position = [], start
        if position < self._prefix_length:
            parts.append(self.prefix[position : min(stop, self._prefix_length)])
            position = min(stop, self._prefix_length)
        first = self.recent_first
        if position < stop and position < first:  # proven codes on the tape, else the store's files
            taped = self.far_tape.values(position, min(stop, first)) if self.far_tape is not None else None
            if taped is None and self.store is not None and self.store.covers(position, min(stop, first)):
                taped = self.store.read(position, min(stop, first))
            if taped is None and self.recomputed is not None and min(stop, first) <= len(self.recomputed):
                taped = self.recomputed[position : min(stop, first)]
            if taped is None and (solved := self.exact_held(min(stop, first))) is not None:
                taped = solved[position:]
            if taped is None:
                return None
            parts.append(taped)
            position = min(stop, first)
        if position < stop:
            parts.extend(self._recent_parts(position, stop))
        return np.concatenate(parts) if len(parts) != 1 else parts[0].copy()

    def _recent_parts(self, start: int, stop: int) -> list[np.ndarray]:
        """Views of the recent values covering [start, stop) (``recent_first <= start``), without merging
        them: the period search reads the few values leaving its window at every step."""
        parts = []
        for first, values in reversed(self.recent):
            if first >= stop:
                continue
            parts.append(values[max(start - first, 0) : stop - first])
            if first <= start:
                break
        return parts[::-1]

    def values_before(self, heap: int) -> np.ndarray:
        """G(0) ... G(heap-1), always: read back, or recomputed where this history no longer holds them.

        From :data:`~octalgen.mapped.SPILL_FROM` values on they are written, in pieces, to a file on
        disk in ``spill_dir`` (:mod:`octalgen.mapped`).
        """
        out = None
        if heap >= SPILL_FROM:
            out = mapped_array(heap, np.uint16, self.spill_dir, f"values before G({heap})")
            if self.copy_values(out):
                return out
        else:
            values = self.values(0, heap)
            if values is not None:
                return values
        log.warning(
            "G(0) ... G(%d) are needed again and this run no longer holds them: recomputing them "
            "(keep every value with --keep-values to avoid this)",
            heap - 1,
        )
        if self.recompute is None:
            raise InternalError(f"G(0) ... G({heap - 1}) are needed again and this history cannot recompute them")
        self.recomputed = self.recompute(heap, out)  # read from here on too: the decision's aftermath needs them
        return self.recomputed

    def copy_values(self, out: np.ndarray) -> bool:
        """Copy G(0) ... G(len(out) - 1) into ``out`` in pieces; False where this history lacks some."""
        for lo in range(0, len(out), SPILL_PIECE):
            piece = self.values(lo, min(len(out), lo + SPILL_PIECE))
            if piece is None:
                return False
            out[lo : lo + len(piece)] = piece
        return True

    def tail(self, count: int) -> np.ndarray:
        """The last ``count`` values (zeros before heap 0)."""
        out = np.zeros(count, dtype=np.uint16)
        have = min(count, self.position)
        if have:
            held = self.values(self.position - have, self.position)
            if held is None:
                raise InternalError(f"the last {have} values, G({self.position - have}) ..., are not held")
            out[count - have :] = held
        return out

    def window_reader(self, count: int):
        """The last ``count`` values as ``read(lo, hi)``, the values ``lo`` ... ``hi - 1`` of them (zeros
        before heap 0): a far term's window, read in pieces rather than held."""
        first = self.position - count

        def read(lo: int, hi: int) -> np.ndarray:
            out = np.zeros(hi - lo, dtype=np.uint16)
            start = max(first + lo, 0)
            if start < first + hi:
                values = self.values(start, first + hi)
                if values is None:
                    raise InternalError(f"G({start}) ... G({first + hi - 1}) of a far window are not held")
                out[start - first - lo :] = values
            return out

        return read

    # -- on disk --------------------------------------------------------------------------

    def needed(self, first: int, stop: int) -> bool:
        """Whether a stored stretch [first, stop) must stay on disk."""
        return (
            self.keep_all
            or self.keep_late
            or first < max(self.prefix_limit, self._prefix_length)
            or self.window > self.recent_limit  # a far term: a resumed run writes its tape from them
            or stop > self.position - self.recent_limit - 1
        )

    @classmethod
    def restore(
        cls,
        store: ValueStore,
        position: int,
        prefix_length: int,
        window: int,
        keep_all: bool,
        late_values,
        prefix_limit: int = PREFIX_LIMIT,
        recent_limit: int = RECENT_LIMIT,
        **connections,
    ) -> History:
        """The history of a checkpoint: the prefix and the recent values read back from ``store``
        (``late_values``: :meth:`late_values` when it was written; ``connections``: ``far_tape``,
        ``spill_dir`` and ``recompute``, as for a new history)."""
        history = cls(store, keep_all, prefix_limit, recent_limit, **connections)
        history.window = window
        if late_values is None:
            history._late = None
        else:
            assert history._late is not None  # a new history's, all zeros
            history._late[np.asarray(late_values, dtype=np.int64)] = 1
        history._grow_prefix(store.read(0, prefix_length))
        first = max(prefix_length, position - history.recent_length, store.first)
        history.recent.append((first, store.read(first, position)))
        history.position = position
        return history


def _anonymous_map(length: int) -> np.ndarray:
    """``length`` uint16 zeros in an anonymous memory map: the prefix grows in it, and its read-only
    views count as unchanging (:func:`~octalgen.cpu.verify.is_frozen`): only past them is it written."""
    memory = mmap.mmap(-1, max(1, length) * 2)
    if hasattr(mmap, "MADV_HUGEPAGE"):
        memory.madvise(mmap.MADV_HUGEPAGE)  # as numpy's own large arrays: fewer faults
    return np.ndarray((length,), dtype=np.uint16, buffer=memory)
