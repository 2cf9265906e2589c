"""The tape: the kernel's codes in a file on disk, where its window is too long to hold in memory.

A rare value found at heap m far out is a term at offset m + k (a far term): the kernel at heap
n reads G(n - m - k), and its window is m values.  Held in memory (the producer's ring, the
history's recent values, each verification task's copy) that is bytes per heap of m, without
bound.  Where the window exceeds the history's recent values (:attr:`.history.History.recent_limit`),
the engine writes the codes to a tape instead:

* one file of ``first`` ... (the kernel's stored codes: a byte or two per heap), mapped;
* the kernel fills its chunk in place, reading its window from the mapping: the far term's
  values are read back sequentially, one stream moving forward a value per heap;
* a verification task is handed the stretch it reads (:meth:`Tape.stage`): a view in this
  process, a :class:`TapeSlice` a worker process maps, a copy for a cluster's worker; the pages
  behind it are let go (:meth:`Tape.release`), so that the memory the run holds is what it
  reads now, not what it wrote.

:class:`FarTermTape` is the run's one keeper of it: it makes the tape for a plan, fills it with
the values proven since its last chunk, recodes it where the storage widens, and reads proven
values back for the history.  The producer fills chunks on the keeper's tape, the executors and
the workers read them through :meth:`Tape.stage`.

The file is unlinked as soon as it is made: a run that dies leaves nothing, and worker
processes open it through ``/proc/<pid>/fd/<fd>``.  It lives in the run's checkpoint directory,
or else in the temporary directory (``TMPDIR``); it never holds anything a checkpoint needs (a
resumed run writes its tape anew from the values on disk).
"""

from __future__ import annotations

import contextlib
import mmap
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..errors import ComputationError, InternalError
from ..mapped import unlinked_mapping
from ..plan import Encoding, KernelPlan

#: The memory page: what the tape lets go of (:meth:`Tape.release`) comes in whole pages.
PAGE = mmap.PAGESIZE

#: Values copied onto a tape at a time (:meth:`Tape.fill`).
PIECE = 1 << 22


class Tape:
    """Codes of heaps ``first`` ... ``first + capacity - 1`` under ``encoding``, in an unlinked file.

    Parameters
    ----------
    encoding : Encoding
        The plan's storage: the tape's dtype, and how its codes decode.
    first, capacity : int
    directory : path, optional
        Where the file is made (default: the temporary directory).
    rare : iterable of (int, int)
        The rare table's entries: those on the tape are read from here (a u8 code stands for a
        common value; the kernel and the verifier never read these codes).
    """

    def __init__(self, encoding: Encoding, first: int, capacity: int, directory=None, rare=()):
        self.encoding = encoding
        self.rare = {p: v for p, v in rare if p >= first}  # u8 codes cannot hold them: read from here
        self.dtype = encoding.dtype
        self.first = first
        self.capacity = capacity
        self.directory = directory
        # Sparse: disk only where written (writable() allocates each chunk's blocks before it is).
        self.fd, self._map = unlinked_mapping(
            capacity * self.dtype.itemsize, directory, False, "cannot make the far term's tape"
        )
        self.codes = np.frombuffer(self._map, dtype=self.dtype, count=capacity)

    @property
    def stop(self) -> int:
        """The heap past the tape's last."""
        return self.first + self.capacity

    def view(self, start: int, stop: int) -> np.ndarray:
        """The codes of heaps ``start`` ... ``stop - 1`` (a view of the mapping: writes go to the file)."""
        if not self.first <= start <= stop <= self.stop:
            raise InternalError(f"the tape holds heaps {self.first} to {self.stop - 1}, not {start} to {stop - 1}")
        return self.codes[start - self.first : stop - self.first]

    def values(self, start: int, stop: int) -> np.ndarray:
        """G(start) ... G(stop-1) decoded from the tape, uint16."""
        values = self.encoding.decode_values(self.view(start, stop), start)
        for position, value in self.rare.items():
            if start <= position < stop:
                values[position - start] = value
        return values

    def writable(self, start: int, stop: int) -> np.ndarray:
        """:meth:`view` of heaps ``start`` ... ``stop - 1``, their disk blocks allocated first: a full disk is
        then an error here, not a SIGBUS where the mapping is written."""
        view = self.view(start, stop)
        size = self.dtype.itemsize
        try:
            os.posix_fallocate(self.fd, (start - self.first) * size, max(1, (stop - start) * size))
        except OSError as exc:
            raise ComputationError(
                f"cannot write the far term's tape in {self.directory or tempfile.gettempdir()}: {exc.strerror or exc}"
            ) from None
        return view

    def write(self, start: int, values: np.ndarray) -> None:
        """Store ``values`` (G(start) ...) on the tape."""
        self.writable(start, start + len(values))[:] = self.encoding.encode_array(np.asarray(values, dtype=np.uint16))

    def fill(
        self, start: int, stop: int, read: Callable[[int, int], np.ndarray], check_stop: Callable[[], None]
    ) -> None:
        """Store G(start) ... G(stop-1), ``read(lo, hi)`` giving G(lo) ... G(hi-1), :data:`PIECE` values at a
        time (``check_stop`` between pieces); each piece's pages go back once written."""
        for lo in range(start, stop, PIECE):
            check_stop()
            hi = min(stop, lo + PIECE)
            self.write(lo, read(lo, hi))
            self.release([(hi, self.stop)])

    def slice(self, start: int, stop: int) -> TapeSlice:
        """A handle by which a worker process maps heaps ``start`` ... ``stop - 1``."""
        self.view(start, stop)  # checked
        return TapeSlice(os.getpid(), self.fd, self.dtype.str, self.first, start, stop)

    def stage(self, start: int, stop: int, access: str):
        """Heaps ``start`` ... ``stop - 1`` for one verification task, as its executor reads them
        (:attr:`~.executors.Executor.tape_access`): ``"view"`` (a task in this process), ``"map"``
        (a :class:`TapeSlice` its worker process maps) or ``"copy"`` (a cluster's worker, which
        cannot map the file)."""
        if access == "map":
            return self.slice(start, stop)
        if access == "copy":
            return self.view(start, stop).copy()
        return self.view(start, stop)

    def forget(self, start: int, stop: int) -> None:
        """Let go of every page that holds any of heaps ``start`` ... ``stop - 1``: they stay in the file (a
        heap on the same page that is read again is read back), and pieces read one after the other
        leave none behind."""
        size = self.dtype.itemsize
        lo = (start - self.first) * size // PAGE * PAGE
        hi = min(-(-(stop - self.first) * size // PAGE) * PAGE, len(self._map))
        if lo < hi:
            self._map.madvise(mmap.MADV_DONTNEED, lo, hi - lo)

    def release(self, keep: list[tuple[int, int]]) -> None:
        """Let go of the pages of every heap before the last range in ``keep`` that no range covers
        (they stay in the file; reading them again reads them back)."""
        size = self.dtype.itemsize
        position = 0
        for start, stop in sorted(keep):
            lo = (start - self.first) * size // PAGE * PAGE
            if lo > position:
                self._map.madvise(mmap.MADV_DONTNEED, position, lo - position)
            position = max(position, -(-(stop - self.first) * size // PAGE) * PAGE)

    def __del__(self):
        self.close()

    def close(self) -> None:
        """Drop the file (views made earlier keep their pages readable; a task given a slice before
        must have opened it: close a tape once its tasks are over)."""
        with contextlib.suppress(OSError):
            os.close(self.fd)


@dataclass(frozen=True)
class TapeSlice:
    """Heaps ``start`` ... ``stop - 1`` of a tape, for a worker process of the run ``pid`` to map."""

    pid: int
    fd: int
    dtype: str
    first: int
    start: int
    stop: int

    def head(self, length: int) -> TapeSlice:
        """Its first ``length`` codes (a piece of a chunk reads the history up to its own end)."""
        return TapeSlice(self.pid, self.fd, self.dtype, self.first, self.start, self.start + length)

    def array(self) -> np.ndarray:
        """The codes, mapped read-only (unmapped once the array is let go)."""
        dtype = np.dtype(self.dtype)
        if self.stop == self.start:
            return np.zeros(0, dtype=dtype)
        path = f"/proc/{self.pid}/fd/{self.fd}" if self.pid != os.getpid() else f"/proc/self/fd/{self.fd}"
        try:
            return np.memmap(
                path,
                dtype=dtype,
                mode="r",
                offset=(self.start - self.first) * dtype.itemsize,
                shape=(self.stop - self.start,),
            )
        except (OSError, ValueError) as exc:  # the tape was let go: a task cancelled before it began
            raise ComputationError(f"the far term's tape is gone ({exc})") from None


class FarTermTape:
    """The run's one keeper of the far-term tape (see the module docstring).

    Parameters
    ----------
    directory : path, optional
        Where the tape's file is made (the run's checkpoint directory; default: the temporary one).
    check_stop : callable
        Called between pieces of a long fill; raises to stop.

    Attributes
    ----------
    tape : Tape or None
        The tape the producer works on (None while the kernel's window is held in memory).
    proven_to : int
        The tape holds the proven codes of the heaps below it.
    """

    def __init__(self, directory=None, check_stop: Callable[[], None] = lambda: None):
        self.directory = directory
        self.check_stop = check_stop
        self.tape: Tape | None = None
        self.proven_to = 0

    def producer_start(
        self, plan: KernelPlan | None, position: int, until: int, history, known: np.ndarray | None = None
    ) -> tuple[np.ndarray | None, Tape | None]:
        """What the producer starts from at ``position`` under ``plan``: ``(window, tape)``.

        Before the kernel's first heap, neither (exact steps come first).  Where the plan's window
        fits in the history's recent values, the last ``plan.window`` proven values, and no tape.
        A far term's longer window is on the tape instead (:meth:`ready`).
        """
        if plan is None or position < plan.start or plan.window <= history.recent_limit:
            self.tape = None  # a later tape is made anew
            return (history.tail(plan.window) if plan is not None and position >= plan.start else None), None
        return None, self.ready(plan, position, until, history, known)

    def ready(self, plan: KernelPlan, position: int, until: int, history, known: np.ndarray | None = None) -> Tape:
        """The tape for ``plan`` from ``position`` on, holding the proven codes from the end of the
        prefix (or the plan's window, where it starts later) to ``position``.

        The one it has, with the values proven since its last chunk written (recoded where the
        plan's storage differs), or a new one.  With the prefix it holds every value, so that a
        recovery reads them back rather than computing them again.  The values it lacks come from
        ``known`` (G(0) ... G(position - 1), where the exact solver holds them), else from the run's
        :class:`~.history.History`.
        """
        first = min(position - plan.window, history.prefix_limit)
        tape = self.tape
        if tape is None or tape.first > first or tape.stop < until:
            tape = Tape(plan.encoding, first, until - first, self.directory, plan.table.entries)
            self.proven_to = first
        elif tape.encoding != plan.encoding:
            tape = self._recoded(tape, plan.encoding, first, until)
            self.proven_to = max(self.proven_to, first)
        tape.rare.update((p, v) for p, v in plan.table.entries if p >= tape.first)  # a new one since, too
        everything = None  # G(0) ... G(position - 1), got at most once for the whole fill

        def read(lo: int, hi: int) -> np.ndarray:  # the solver's values, the history's (memory, store, old tape)
            nonlocal everything
            values = known[lo:hi] if known is not None else history.values(lo, hi)
            if values is None:  # not at hand: every value up to the position once, not up to hi per piece
                if everything is None:
                    everything = history.values_before(position)
                values = everything[lo:hi]
            return values

        tape.fill(self.proven_to, position, read, self.check_stop)
        self.tape, self.proven_to = tape, position
        return tape

    def proven(self, position: int) -> None:
        """The codes the producer wrote on the tape below ``position`` are proven."""
        if self.tape is not None:
            self.proven_to = position

    def values(self, start: int, stop: int) -> np.ndarray | None:
        """Proven G(start) ... G(stop-1) decoded from the tape, or None where it does not hold them.  The
        pages read go back (a far decision or window reads the whole tape, a piece at a time)."""
        tape = self.tape
        if tape is None or tape.first > start or stop > self.proven_to:
            return None
        values = tape.values(start, stop)
        tape.forget(start, stop)
        return values

    def _recoded(self, tape: Tape, encoding: Encoding, first: int, until: int) -> Tape:
        """A new tape of heaps ``first`` ... ``until - 1`` under ``encoding``, with the proven values of
        ``tape`` from ``first`` on (``tape.first <= first``; its pages go back as they are read)."""
        new = Tape(encoding, first, until - first, tape.directory, tape.rare.items())

        def read(lo: int, hi: int) -> np.ndarray:
            values = tape.values(lo, hi)
            tape.release([(hi, tape.stop)])
            return values

        new.fill(first, self.proven_to, read, self.check_stop)
        return new
