"""Local worker processes, and the files through which they get large arrays.

:class:`LocalProcesses` runs verification tasks in worker processes of this machine
(``--workers``).  The workers never outlive the run: each asks the kernel to kill it when its
parent dies (Linux ``PR_SET_PDEATHSIG``) and also watches its parent itself, and ignores Ctrl-C
and SIGTERM (the parent stops them).  ``close(kill=True)`` ends them at once instead of letting
them finish.

Large read-only arrays reach them as files they map, not through the pipe: the prefix once per
run, its new values appended as it grows (:class:`SharedArray`), a chunk's history once per task
(:class:`StagedArray`), in ``/dev/shm`` where there is one.  A task's file is one of a few slots
that are written again for later tasks once their tasks are over: a new file per task would cost
the coordinator a fresh page for every 4 KiB written and an ``unlink``.  Files are named with the
run's process id, so that a later run removes those of a run that died (:func:`sweep_staged_files`).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from functools import lru_cache
from multiprocessing import get_context
from multiprocessing.connection import wait

import numpy as np

from ..errors import ComputationError


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

    def head(self, length: int) -> "StagedArray":
        """Its first ``length`` items (a piece of a chunk reads the history up to its own end)."""
        return StagedArray(self.path, self.dtype, length)


def _staging_dir() -> str | None:
    return "/dev/shm" if os.path.isdir("/dev/shm") else None


def _file_prefix(kind: str) -> str:
    """Names of this process's files: ``octalgen-KIND-PID-...``, so that a later run can tell them."""
    return f"octalgen-{kind}-{os.getpid()}-"


def sweep_staged_files() -> None:
    """Remove the shared files of runs that died without removing them (``kill -9``)."""
    folder = _staging_dir() or tempfile.gettempdir()
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        parts = name.split("-")
        if len(parts) < 4 or parts[0] != "octalgen" or parts[1] not in ("codes", "prefix") or not parts[2].isdigit():
            continue
        try:
            os.kill(int(parts[2]), 0)
        except ProcessLookupError:  # its run is gone
            _unlink(os.path.join(folder, name))
        except OSError:  # alive (another user's)
            pass


_PR_SET_PDEATHSIG = 1


def _worker_start(parent: int) -> None:
    """Initializer of local worker processes: die with the parent, leave Ctrl-C and SIGTERM to it.

    Both reach the workers too when they are sent to the run's process group (Ctrl-C at a
    terminal, ``timeout``, ``kill -- -PGID``): the parent stops at its next safe point and kills
    the workers itself, so a worker that died of the signal first would only turn a clean stop
    into a failed run.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:  # the parent died before the request above
        os._exit(1)

    def watch():  # also where PR_SET_PDEATHSIG does not exist or fires late
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="octalgen-parent-watch").start()


class _WorkerFuture:
    """The result of a task given to :class:`LocalProcesses` (filled in by its ``pump``)."""

    def __init__(self, pool: "LocalProcesses"):
        self._pool, self._finished, self._value, self._error, self.cancelled = pool, False, None, None, False

    def done(self) -> bool:
        self._pool.pump(0)
        return self._finished

    def result(self, timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._finished:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise TimeoutError
            self._pool.pump(left)
        if self._error is not None:
            raise self._error
        return self._value

    def cancel(self) -> bool:
        self.cancelled = True
        return True


def _worker_main(connection, parent: int) -> None:
    """A local worker process: run the tasks it is sent until it is sent None."""
    _worker_start(parent)
    while True:
        try:
            task = connection.recv()
        except EOFError:
            return
        if task is None:
            return
        fn, args = task
        try:
            reply = (True, fn(*args))
        except Exception as exc:  # noqa: BLE001 - handed back to the parent, which raises it
            reply = (False, exc)
        connection.send(reply)


class LocalProcesses:
    """``workers`` local processes (spawned: no inherited threads or locks), one task each at a time.

    No thread of its own: results are collected (and queued tasks handed out) whenever a future
    is asked whether it is done, so nothing can hang at exit, and ``close(kill=True)`` ends the
    processes at once.
    """

    tape_access = "map"

    def __init__(self, workers: int):
        self.workers = workers
        sweep_staged_files()
        context = get_context("spawn")
        self._idle, self._busy, self._queue = [], {}, []
        self._processes = []
        for _ in range(workers):
            ours, theirs = context.Pipe()
            process = context.Process(target=_worker_main, args=(theirs, os.getpid()), daemon=True,
                                      name="octalgen-verifier")
            process.start()
            theirs.close()
            self._processes.append(process)
            self._idle.append(ours)
        self._shared: tuple[str, str, int] | None = None  # the prefix's file: path, dtype, length
        self._free: list[_Slot] = []  # files for tasks' arrays, not in use
        self._staged: dict[str, _Slot] = {}  # by path: those in use

    def submit(self, fn, *args) -> _WorkerFuture:
        future = _WorkerFuture(self)
        self._queue.append((future, fn, args))
        self.pump(0)
        return future

    def pump(self, timeout, wake: int | None = None) -> None:
        """Collect finished results (waiting up to ``timeout`` seconds for one, or for the file
        descriptor ``wake`` to be readable) and hand out queued tasks."""
        if self._busy or wake is not None:
            for connection in wait(list(self._busy) + ([wake] if wake is not None else []), timeout):
                if isinstance(connection, int):  # the wake-up descriptor
                    continue
                future = self._busy.pop(connection)
                try:
                    ok, value = connection.recv()
                    self._idle.append(connection)
                except (EOFError, OSError):
                    ok, value = False, ComputationError("a verifying process died (out of memory, or killed)")
                future._finished = True
                if ok:
                    future._value = value
                else:
                    future._error = value
        while self._queue and self._idle:
            future, fn, args = self._queue.pop(0)
            if future.cancelled:
                continue
            connection = self._idle.pop()
            connection.send((fn, args))
            self._busy[connection] = future

    def wait(self, timeout: float, wake: int | None = None) -> None:
        """Collect results and hand out tasks until one finished, ``wake`` is readable, or ``timeout`` passed."""
        self.pump(timeout, wake)

    def stage(self, *arrays: np.ndarray):
        """A handle to pass the concatenation of ``arrays`` (of one dtype) to one task: a file in
        /dev/shm (memory) that its worker maps.

        Written once here, rather than pickled and sent through a pipe, copied and unpickled, into
        a slot whose pages earlier tasks have faulted in.  Where the file cannot be written (a
        full /dev/shm), the array itself.
        """
        arrays = [np.ascontiguousarray(a) for a in arrays]
        length = sum(len(a) for a in arrays)
        slot = self._free.pop() if self._free else _Slot.new()
        if slot is None:
            return np.concatenate(arrays)
        try:
            slot.write(arrays)
        except OSError:
            slot.remove()
            return np.concatenate(arrays)
        self._staged[slot.path] = slot
        return StagedArray(slot.path, arrays[0].dtype.str, length)

    def release(self, handle, finished: bool = True) -> None:
        """The task given ``handle`` (by :meth:`stage`) is over: its file may be written again.
        ``finished`` False: a task may still read it (a cancelled one); the file goes instead, and
        the task keeps its mapping."""
        slot = self._staged.pop(handle.path, None) if isinstance(handle, StagedArray) else None
        if slot is not None and finished:
            self._free.append(slot)
        elif slot is not None:
            slot.remove()

    def share(self, array: np.ndarray) -> SharedArray:
        """Write ``array`` to a file in /dev/shm (memory) that the workers map.  An array that extends
        the one shared last (the prefix, as it grows) only appends its new values to that file:
        a worker's earlier mapping reads the same values as before."""
        array = np.ascontiguousarray(array)
        if self._shared is not None and self._shared[1] == array.dtype.str and self._shared[2] <= len(array):
            path, _, old = self._shared
            with open(path, "r+b") as out:
                out.seek(old * array.itemsize)
                out.write(memoryview(array[old:]).cast("B"))
        else:
            handle, path = tempfile.mkstemp(prefix=_file_prefix("prefix"), dir=_staging_dir())
            with os.fdopen(handle, "wb") as out:
                out.write(memoryview(array).cast("B"))
            if self._shared is not None:
                _unlink(self._shared[0])  # workers that mapped it keep their mappings
        self._shared = (path, array.dtype.str, len(array))
        return SharedArray(path, array.dtype.str, len(array))

    def close(self, kill: bool = False) -> None:
        """Stop the workers: at once when ``kill``, else once their current tasks are done."""
        for connection in self._idle + list(self._busy):
            try:
                if not kill:
                    connection.send(None)
            except OSError:
                pass
        for process in self._processes:
            if kill:
                process.kill()
            process.join()
        for connection in self._idle + list(self._busy):
            connection.close()
        self._idle, self._busy, self._queue, self._processes = [], {}, [], []
        for slot in [*self._free, *self._staged.values()]:
            slot.remove()
        if self._shared is not None:
            _unlink(self._shared[0])
        self._shared, self._free, self._staged = None, [], {}


class _Slot:
    """A file in /dev/shm for tasks' arrays, open for writing; it only grows, so that no worker's
    mapping ever reaches past its end."""

    def __init__(self, path: str, fd: int):
        self.path, self.fd, self.size = path, fd, 0

    @classmethod
    def new(cls) -> "_Slot | None":
        try:
            fd, path = tempfile.mkstemp(prefix=_file_prefix("codes"), dir=_staging_dir())
        except OSError:
            return None
        return cls(path, fd)

    def write(self, arrays: list[np.ndarray]) -> None:
        """The arrays one after the other from the file's start (raises OSError: /dev/shm full)."""
        size = sum(a.nbytes for a in arrays)
        if size > self.size:
            os.ftruncate(self.fd, size)
            self.size = size
        offset = 0
        for array in arrays:
            data = memoryview(array).cast("B")
            while data:
                written = os.pwrite(self.fd, data, offset)
                data, offset = data[written:], offset + written

    def remove(self) -> None:
        try:
            os.close(self.fd)
        except OSError:
            pass
        _unlink(self.path)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
