"""The files through which local worker processes get large read-only arrays.

A verification task's arrays reach its worker as files it maps, not through the pipe: the prefix
once per run, its new values appended as it grows (:class:`SharedArray`), a chunk's history once per
task (:class:`StagedArray`), in ``/dev/shm`` where there is one.  A task's file is one of a few
:class:`Slot` s that are written again for later tasks once their tasks are over: a new file per task
would cost the coordinator a fresh page for every 4 KiB written and an ``unlink``.  Files are named
with the run's process id, so that a later run removes those of a run that died
(:func:`sweep_staged_files`).  :class:`~.workers.LocalProcesses` writes them.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

__all__ = ["SharedArray", "Slot", "StagedArray", "file_prefix", "staging_dir", "sweep_staged_files", "unlink_quietly"]


@dataclass(frozen=True)
class SharedArray:
    """A read-only array in a file that local worker processes map instead of unpickling it."""

    path: str
    dtype: str
    length: int

    def array(self) -> np.ndarray:
        return _mapped(self)


@lru_cache(maxsize=4)
def _mapped(shared: SharedArray) -> np.ndarray:
    return np.memmap(shared.path, dtype=np.dtype(shared.dtype), mode="r", shape=(shared.length,))


@dataclass(frozen=True)
class StagedArray:
    """One task's read-only array in a file that a local worker process maps (its first ``length`` items).

    Unlike :class:`SharedArray` it is mapped anew by every task: once the task is over its file
    (a slot of :class:`LocalProcesses`) is written again for a later task.
    """

    path: str
    dtype: str
    length: int

    def array(self) -> np.ndarray:
        if not self.length:
            return np.zeros(0, dtype=np.dtype(self.dtype))
        return np.memmap(self.path, dtype=np.dtype(self.dtype), mode="r", shape=(self.length,))

    def head(self, length: int) -> StagedArray:
        """Its first ``length`` items (a piece of a chunk reads the history up to its own end)."""
        return StagedArray(self.path, self.dtype, length)


def staging_dir() -> str | None:
    return "/dev/shm" if os.path.isdir("/dev/shm") else None


def file_prefix(kind: str) -> str:
    """Names of this process's files: ``octalgen-KIND-PID-...``, so that a later run can tell them."""
    return f"octalgen-{kind}-{os.getpid()}-"


def sweep_staged_files() -> None:
    """Remove the shared files, and the workers' temporary directories, of runs that died without
    removing them (``kill -9``)."""
    places = [(staging_dir() or tempfile.gettempdir(), ("codes", "prefix")), (tempfile.gettempdir(), ("workers",))]
    for folder, kinds in places:
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            parts = name.split("-")
            if len(parts) < 4 or parts[0] != "octalgen" or parts[1] not in kinds or not parts[2].isdigit():
                continue
            try:
                os.kill(int(parts[2]), 0)
            except ProcessLookupError:  # its run is gone
                path = os.path.join(folder, name)
                if os.path.isdir(path):
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    unlink_quietly(path)
            except OSError:  # alive (another user's)
                pass


class Slot:
    """A file in /dev/shm for tasks' arrays, open for writing; it only grows, so that no worker's
    mapping ever reaches past its end."""

    def __init__(self, path: str, fd: int):
        self.path, self.fd, self.size = path, fd, 0

    @classmethod
    def new(cls) -> Slot | None:
        try:
            fd, path = tempfile.mkstemp(prefix=file_prefix("codes"), dir=staging_dir())
        except OSError:
            return None
        return cls(path, fd)

    def write(self, array: np.ndarray) -> None:
        """The (contiguous) array from the file's start (raises OSError: /dev/shm full)."""
        if array.nbytes > self.size:
            os.ftruncate(self.fd, array.nbytes)
            self.size = array.nbytes
        data, offset = array.data.cast("B"), 0
        while data:
            written = os.pwrite(self.fd, data, offset)
            data, offset = data[written:], offset + written

    def remove(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)
        unlink_quietly(self.path)


def unlink_quietly(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)
