"""The tape: the kernel's codes in a file on disk, where its window is too long to hold in memory.

A rare value found at heap m far out is a term at offset m + k (a far term): the kernel at heap
n reads G(n - m - k), and its window is m values.  Held in memory (the producer's ring, the
history's recent values, each verification task's copy) that is bytes per heap of m, without
bound.  Where the window exceeds the history's recent values (:attr:`.history.History.recent_limit`,
2^23 by default), the engine writes the codes to a tape instead:

* one file of ``first`` ... (the kernel's stored codes: a byte or two per heap), mapped;
* the kernel fills its chunk in place, reading its window from the mapping: the far term's
  values are read back sequentially, one stream moving forward a value per heap;
* a verification task maps the stretch it reads (:class:`TapeSlice`), so that nothing is
  copied per task; the pages behind it are let go (:meth:`Tape.release`), so that the memory
  the run holds is what it reads now, not what it wrote.

The file is unlinked as soon as it is made: a run that dies leaves nothing, and worker
processes open it through ``/proc/<pid>/fd/<fd>``.  It lives in the run's checkpoint directory,
or else in the temporary directory (``TMPDIR``); it never holds anything a checkpoint needs (a
resumed run writes its tape anew from the values on disk).
"""

from __future__ import annotations

import mmap
import os
import tempfile
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..errors import ComputationError
from ..mapped import unlinked_mapping
from ..plan import Encoding

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
        self.fd, self._map = unlinked_mapping(capacity * self.dtype.itemsize, directory, False,
                                              "cannot make the far term's tape")
        self.codes = np.frombuffer(self._map, dtype=self.dtype, count=capacity)

    @property
    def stop(self) -> int:
        """The heap past the tape's last."""
        return self.first + self.capacity

    def view(self, start: int, stop: int) -> np.ndarray:
        """The codes of heaps ``start`` ... ``stop - 1`` (a view of the mapping: writes go to the file)."""
        if not self.first <= start <= stop <= self.stop:
            raise ComputationError(f"the tape holds heaps {self.first} to {self.stop - 1}, not {start} to {stop - 1}: "
                                   "a bug, please report it")
        return self.codes[start - self.first: stop - self.first]

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
            raise ComputationError(f"cannot write the far term's tape in {self.directory or tempfile.gettempdir()}: "
                                   f"{exc.strerror or exc}") from None
        return view

    def write(self, start: int, values: np.ndarray) -> None:
        """Store ``values`` (G(start) ...) on the tape."""
        self.writable(start, start + len(values))[:] = self.encoding.encode_array(np.asarray(values, dtype=np.uint16))

    def fill(self, start: int, stop: int, read: Callable[[int, int], np.ndarray], check_stop: Callable[[], None]) -> None:
        """Store G(start) ... G(stop-1), ``read(lo, hi)`` giving G(lo) ... G(hi-1), :data:`PIECE` values at a
        time (``check_stop`` between pieces); each piece's pages go back once written."""
        for lo in range(start, stop, PIECE):
            check_stop()
            hi = min(stop, lo + PIECE)
            self.write(lo, read(lo, hi))
            self.release([(hi, self.stop)])

    def slice(self, start: int, stop: int) -> "TapeSlice":
        """A handle by which a worker process maps heaps ``start`` ... ``stop - 1``."""
        self.view(start, stop)  # checked
        return TapeSlice(os.getpid(), self.fd, self.dtype.str, self.first, start, stop)

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
        try:
            os.close(self.fd)
        except OSError:
            pass


@dataclass(frozen=True)
class TapeSlice:
    """Heaps ``start`` ... ``stop - 1`` of a tape, for a worker process of the run ``pid`` to map."""

    pid: int
    fd: int
    dtype: str
    first: int
    start: int
    stop: int

    def head(self, length: int) -> "TapeSlice":
        """Its first ``length`` codes (a piece of a chunk reads the history up to its own end)."""
        return TapeSlice(self.pid, self.fd, self.dtype, self.first, self.start, self.start + length)

    def array(self) -> np.ndarray:
        """The codes, mapped read-only (unmapped once the array is let go)."""
        dtype = np.dtype(self.dtype)
        if self.stop == self.start:
            return np.zeros(0, dtype=dtype)
        path = f"/proc/{self.pid}/fd/{self.fd}" if self.pid != os.getpid() else f"/proc/self/fd/{self.fd}"
        try:
            return np.memmap(path, dtype=dtype, mode="r", offset=(self.start - self.first) * dtype.itemsize,
                             shape=(self.stop - self.start,))
        except (OSError, ValueError) as exc:  # the tape was let go: a task cancelled before it began
            raise ComputationError(f"the far term's tape is gone ({exc})") from None
