"""Where verification tasks run: this process, local worker processes, or a Dask cluster.

Every executor has ``submit(fn, *args)`` returning a future with ``result(timeout)``,
``done()`` and ``cancel()``; ``share(array)`` (a handle that passes a large read-only array to
many tasks cheaply); ``stage(array)`` and ``release(handle)`` (one task's large read-only
array, and its end); ``wait(timeout, wake)`` (until a task may have finished or the file
descriptor ``wake`` is readable: the producer's thread has a chunk); ``close(kill)``.  Tasks
are plain picklable calls (:func:`verify_task` on a verifier with a ``verify(codes, base,
prefix, a, b)`` method and a stretch of codes), so any engine that runs Python functions can
run them.

Local worker processes never outlive the run: each asks the kernel to kill it when its parent
dies (Linux ``PR_SET_PDEATHSIG``) and also watches its parent itself, and ignores Ctrl-C and
SIGTERM (the parent stops them).  ``close(kill=True)`` ends them at once instead of letting them
finish.
"""

from __future__ import annotations

import ctypes
import os
import select
import signal
import sys
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass
from functools import lru_cache
from multiprocessing import get_context
from multiprocessing.connection import wait

import numpy as np

from ..cpu.verify import PROVEN, UNDECIDED, VerifyResult
from ..errors import ComputationError, InputError, ToolMissingError
from .signals import StopRequested

#: Seconds to wait for a Dask scheduler to answer.
CONNECT_TIMEOUT = 20.0

#: Heaps of history before an interval (beyond the kernel's window) that verification is first
#: given: proof scans rarely reach further, and one that does is retried with more.
VERIFY_HISTORY = 1 << 20

#: Heaps verified per call into C in this process (so that a stop request is noticed soon).
IN_PROCESS_PIECE = 1 << 17

#: Seconds between looks at a cluster's futures while waiting (they come with no descriptor to wait on).
POLL_SLICE = 0.02


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

    Unlike :class:`SharedArray` it is mapped anew by every task: the file is removed once the
    task's result is taken, and a later file may get the same name.
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


def verify_interval(verifier, codes: np.ndarray, base: int, prefix, a: int, b: int) -> VerifyResult:
    """Verify [a, b) from recent history first, then all of ``codes`` (heaps base ...) where undecided."""
    window = verifier.plan.window
    recent = max(base, a - window - VERIFY_HISTORY)
    result = verifier.verify(codes[recent - base: b - base], recent, prefix, a, b)
    if result.status == UNDECIDED and recent > base:
        retry = verifier.verify(codes[: b - base], base, prefix, result.heap, b)
        result = retry if retry.status != PROVEN else VerifyResult(
            PROVEN, options_scanned=result.options_scanned + retry.options_scanned)
    return result


def verify_task(verifier, codes, base, prefix, a, b) -> tuple[VerifyResult, float]:
    """A verification task: :func:`verify_interval` and the CPU seconds it took."""
    began = time.thread_time()
    if isinstance(prefix, SharedArray):
        prefix = prefix.array()
    if isinstance(codes, StagedArray):
        codes = codes.array()
    result = verify_interval(verifier, codes, base, prefix, a, b)
    return result, time.thread_time() - began


class _Deferred:
    """A task run in this process when its result is asked for, in pieces (see :class:`InProcess`)."""

    def __init__(self, executor: "InProcess", args):
        self._executor, self._args, self._value = executor, args, None

    def result(self, timeout=None):
        if self._value is None:
            self._value = self._executor.run_in_pieces(*self._args)
        return self._value

    def done(self) -> bool:
        return True

    def cancel(self) -> bool:
        return True


class InProcess:
    """Runs each task in this process when its result is wanted (``--workers 0``).

    Intervals are verified ``piece`` heaps at a time (default :data:`IN_PROCESS_PIECE`), and
    ``should_stop`` is asked between pieces, so that Ctrl-C stops a run promptly.
    """

    workers = 1

    def __init__(self, should_stop=lambda: False, piece: int = IN_PROCESS_PIECE):
        self.should_stop = should_stop
        self.piece = piece

    def submit(self, fn, *args):
        if fn is not verify_task:
            return _Done(fn(*args))
        return _Deferred(self, args)

    def run_in_pieces(self, verifier, codes, base, prefix, a, b):
        scanned, seconds = 0, 0.0
        for lo in range(a, b, self.piece):
            if self.should_stop():
                raise StopRequested
            result, spent = verify_task(verifier, codes, base, prefix, lo, min(b, lo + self.piece))
            seconds += spent
            scanned += result.options_scanned
            if result.status != PROVEN:
                return result, seconds
        return VerifyResult(PROVEN, options_scanned=scanned), seconds

    def share(self, array: np.ndarray):
        """A handle to pass ``array`` to many tasks (here: the array itself)."""
        return array

    def stage(self, array: np.ndarray):
        """A handle to pass ``array`` to one task (here and on a cluster: the array itself)."""
        return array

    def release(self, handle) -> None:
        """The task given ``handle`` is over (nothing to do here)."""

    def wait(self, timeout: float, wake: int | None = None) -> None:
        """Every task is done once asked: wait only for ``wake``."""
        _wait_for(wake, timeout)

    def close(self, kill: bool = False) -> None:
        pass


def _wait_for(wake: int | None, timeout: float) -> None:
    if wake is None:
        time.sleep(timeout)
    else:
        select.select([wake], [], [], timeout)


class _Done:
    """A finished future."""

    def __init__(self, value):
        self._value = value

    def result(self, timeout=None):
        return self._value

    def done(self) -> bool:
        return True

    def cancel(self) -> bool:
        return False


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
        self._files: list[str] = []
        self._staged: set[str] = set()

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

    def stage(self, array: np.ndarray):
        """A handle to pass ``array`` to one task: a file in /dev/shm (memory) that its worker maps.

        Written once here, rather than pickled and sent through a pipe, copied and unpickled: the
        coordinator's largest cost per value was sending the codes.  Where the file cannot be
        written (a full /dev/shm), the array itself.
        """
        array = np.ascontiguousarray(array)
        try:
            handle, path = tempfile.mkstemp(prefix=_file_prefix("codes"), dir=_staging_dir())
        except OSError:
            return array
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(memoryview(array).cast("B"))
        except OSError:
            _unlink(path)
            return array
        self._staged.add(path)
        return StagedArray(path, array.dtype.str, len(array))

    def release(self, handle) -> None:
        """The task given ``handle`` (by :meth:`stage`) is over: its file goes."""
        if isinstance(handle, StagedArray) and handle.path in self._staged:
            self._staged.discard(handle.path)
            _unlink(handle.path)

    def share(self, array: np.ndarray) -> SharedArray:
        """Write ``array`` to a file in /dev/shm (memory) that the workers map."""
        handle, path = tempfile.mkstemp(prefix=_file_prefix("prefix"), dir=_staging_dir())
        with os.fdopen(handle, "wb") as out:
            out.write(np.ascontiguousarray(array).tobytes())
        self._files.append(path)
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
        for path in [*self._files, *self._staged]:
            _unlink(path)
        self._files, self._staged = [], set()


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


class DaskCluster:
    """Tasks go to a running Dask distributed scheduler (``--scheduler tcp://host:port``).

    The workers need octalgen and a C compiler (each builds or loads the verifier from its own
    cache).  Results come back through the futures.
    """

    def __init__(self, address: str, timeout: float | None = None):
        try:
            from distributed import Client
        except ImportError:
            raise ToolMissingError("--scheduler needs Dask distributed, which is not installed: "
                                   "pip install 'octalgen[cluster]'") from None
        # Each task carries its chunk of codes, so Dask finds every graph "large": not the user's concern.
        warnings.filterwarnings("ignore", message="Sending large graph", category=UserWarning)
        try:
            self._client = Client(address, timeout=timeout or CONNECT_TIMEOUT, set_as_default=False)
        except (OSError, TimeoutError, ValueError) as exc:
            raise InputError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
        self.workers = max(1, sum(w.get("nthreads", 1) for w in self._client.scheduler_info()["workers"].values()))

    def submit(self, fn, *args):
        return self._client.submit(fn, *args, pure=False)

    def share(self, array: np.ndarray):
        """Send ``array`` to every worker once; tasks given the handle receive the array."""
        return self._client.scatter(array, broadcast=True)

    def stage(self, array: np.ndarray):
        """A handle to pass ``array`` to one task: the array itself (sent with the task)."""
        return array

    def release(self, handle) -> None:
        """The task given ``handle`` is over (nothing to do)."""

    def wait(self, timeout: float, wake: int | None = None) -> None:
        """A short wait for ``wake`` (the futures are looked at after it)."""
        _wait_for(wake, min(timeout, POLL_SLICE))

    def close(self, kill: bool = False) -> None:
        self._client.close()


def make_executor(workers: int, scheduler: str | None, should_stop=lambda: False, piece: int = IN_PROCESS_PIECE):
    """The executor for ``--workers`` / ``--scheduler`` (``piece``: see :class:`InProcess`)."""
    if scheduler:
        return DaskCluster(scheduler)
    if workers <= 0:
        return InProcess(should_stop, piece)
    return LocalProcesses(workers)
