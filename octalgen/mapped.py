"""Arrays in unlinked files on disk, mapped: values too many to hold in memory.

A rare value found at heap m far out is decided by the exact solver, which reads G(0) ... G(m - 1)
forwards and backwards (:mod:`octalgen.cpu.exact`): 4 bytes a heap, 1.3 GB at m = 3.3 x 10^8, and
far more for the runs that go to 2^40.  Past :data:`SPILL_FROM` values such buffers live in files
instead: the pages the solver reads come and go through the page cache, which the kernel reclaims,
rather than filling the process's own memory.  Each file is unlinked as soon as it is made (a
process that dies leaves nothing) and its blocks are allocated at once (``posix_fallocate``), so
that a full disk is a :class:`~octalgen.errors.ComputationError` here, not a SIGBUS where the
mapping is written.
"""

from __future__ import annotations

import mmap
import os
import tempfile

import numpy as np

from .errors import ComputationError

#: Values from which a buffer goes to a file (2^24 values, 32 MiB of 16-bit ones): the engine
#: holds 2^23 values of prefix and 2^23 recent ones in memory; more than that only where a rare
#: value far out is decided.
SPILL_FROM = 1 << 24

#: Values copied to or from such a file at a time.
SPILL_PIECE = 1 << 22


def unlinked_mapping(size: int, directory, allocate: bool, failure: str) -> tuple[int, mmap.mmap]:
    """An open descriptor of a new file of ``size`` bytes in ``directory`` (default: the temporary
    directory), unlinked at once, and its mapping; its blocks allocated where ``allocate``, else
    sparse (the caller allocates what it writes).

    Raises
    ------
    ComputationError
        ``failure``, where and why, in one line, when the file cannot be made (a full disk too).
    """
    size = max(1, size)
    fd = None
    try:
        fd, path = tempfile.mkstemp(prefix="octalgen-", dir=directory)
        os.unlink(path)  # the open descriptor keeps it: gone with this process, whatever ends it
        if allocate:
            os.posix_fallocate(fd, 0, size)
        else:
            os.ftruncate(fd, size)
        return fd, mmap.mmap(fd, size)
    except OSError as exc:
        if fd is not None:
            os.close(fd)
        raise ComputationError(f"{failure} in {directory or tempfile.gettempdir()}: {exc.strerror or exc}") from None


def mapped_array(count: int, dtype, directory=None, what: str = "values") -> np.ndarray:
    """A zeroed array of ``count`` items in an unlinked file in ``directory`` (default: the
    temporary directory), its disk blocks allocated.

    Raises
    ------
    ComputationError
        When the file cannot be made or its blocks allocated (a full disk: one line).
    """
    dtype = np.dtype(dtype)
    fd, mapping = unlinked_mapping(count * dtype.itemsize, directory, True, f"cannot hold the {what} on disk")
    os.close(fd)  # the mapping keeps the file
    return np.frombuffer(mapping, dtype=dtype, count=count)
