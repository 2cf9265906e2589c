"""Local worker processes: a pool that starts them, hands them tasks and collects the results.

:class:`LocalProcesses` runs verification tasks in worker processes of this machine
(``--workers``).  Each is a fresh interpreter that serves (:func:`~.worker_process.serve`),
whatever the caller is: a script without a ``__main__`` guard, ``python -c``, standard input, a
notebook.  The workers never outlive the run: each asks the
kernel to kill it when its parent dies (Linux ``PR_SET_PDEATHSIG``) and also watches its parent
itself, and ignores Ctrl-C and SIGTERM (the parent stops them).  ``close(kill=True)`` ends them
at once instead of letting them finish (or after a grace in which their tasks clean up).

Large read-only arrays reach them as files they map (:mod:`.staged_files`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from multiprocessing.connection import Connection, Pipe, wait

import numpy as np

from ..errors import ComputationError
from .staged_files import SharedArray, Slot, StagedArray, file_prefix, staging_dir, sweep_staged_files, unlink_quietly
from .worker_process import LEFT_TO_THE_RUN, STOP_SIGNAL

log = logging.getLogger("octalgen")


#: Bytes of what a worker writes while it starts that are kept, to say why it could not.
_STARTUP_OUTPUT = 1 << 16


#: What a worker process runs (``python -c``): the run's ``sys.path`` first, so that octalgen and
#: whatever its tasks import are found where the run found them, then :func:`~.worker_process.serve`.
_BOOTSTRAP = (
    "import json, os, sys; sys.path[:] = json.loads(os.environ.pop('OCTALGEN_WORKER_PATH')); "
    "from octalgen.engine.worker_process import serve; serve(*map(int, sys.argv[1:4]))"
)


def _worker_command() -> tuple[list[str], dict]:
    """The command line and environment of a worker process: this Python, running :func:`~.worker_process.serve`.

    A fresh interpreter imports octalgen and nothing of the caller's: not its ``__main__`` (an
    unguarded script, ``python -c``, a here-document on stdin, a notebook are all the same to it).
    """
    if not sys.executable:
        raise ComputationError(
            "cannot start verifying processes: this Python does not know its own executable "
            "(sys.executable is empty); run with --workers 0 (workers=0) to verify in this process"
        )
    path = [os.fspath(entry) for entry in sys.path if isinstance(entry, (str, os.PathLike))]
    # A task never multiplies matrices: one BLAS thread, not one a core spinning after numpy's import.
    environment = {**os.environ, "OCTALGEN_WORKER_PATH": json.dumps(path), "OPENBLAS_NUM_THREADS": "1"}
    return [sys.executable, "-c", _BOOTSTRAP], environment


class _Worker:
    """One local worker process: its pipe, and what it wrote while it started (to say why it could not);
    its temporary files go to ``scratch``.

    It is started with Ctrl-C and SIGTERM blocked, which it inherits: a signal sent to the process
    group while the new interpreter starts waits until :func:`~.worker_process.serve` has set them aside, and is
    then dropped.  What it writes while it starts goes to a pipe read only if it dies; once
    started, its stdout and stderr are the run's stderr (never the run's stdout, where values may go).
    """

    def __init__(self, scratch: str):
        command, environment = _worker_command()
        environment["TMPDIR"] = scratch
        ours, theirs = Pipe()
        startup_read, startup_write = os.pipe()
        stderr = _duplicate_stderr()
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, LEFT_TO_THE_RUN)
        try:
            self.process = subprocess.Popen(
                [*command, str(theirs.fileno()), str(stderr), str(os.getpid())],
                stdin=subprocess.DEVNULL,
                stdout=startup_write,
                stderr=startup_write,
                pass_fds=(theirs.fileno(), stderr),
                env=environment,
            )
        except OSError as exc:
            ours.close()
            os.close(startup_read)
            raise ComputationError(f"cannot start a verifying process ({command[0]}): {exc.strerror or exc}") from None
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
            theirs.close()
            os.close(startup_write)
            os.close(stderr)
        os.set_blocking(startup_read, False)
        self.command = command
        self.connection = ours
        self.tasks = 0
        self._startup = startup_read

    def failure(self) -> ComputationError:
        """Why its pipe closed: what stopped it from starting, or how it died."""
        try:
            status = self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:  # alive with its pipe closed: of no more use
            self.process.kill()
            status = self.process.wait()
        said = self._startup_output()
        if said:
            return ComputationError(f"a verifying process could not start: {said} ({self.command[0]} -c ...)")
        if status < 0:
            name = signal.Signals(-status).name
            why = " (out of memory, or killed)" if -status == signal.SIGKILL else ""
            return ComputationError(f"a verifying process was killed by {name}{why}")
        return ComputationError(f"a verifying process ended (exit status {status}) before its task was done")

    def _startup_output(self) -> str:
        """The last line it wrote while it started (empty if it started, or said nothing)."""
        chunks: list[bytes] = []
        try:
            while sum(map(len, chunks)) < _STARTUP_OUTPUT:
                chunk = os.read(self._startup, _STARTUP_OUTPUT)
                if not chunk:
                    break
                chunks.append(chunk)
        except OSError:  # nothing more now (EAGAIN), or closed
            pass
        lines = [line.strip() for line in b"".join(chunks).decode(errors="replace").splitlines() if line.strip()]
        return lines[-1] if lines else ""

    def stop(self, at_once: bool) -> None:
        """Ask it to end: give up its task at once (:data:`STOP_SIGNAL`), or be killed (``at_once``)."""
        with contextlib.suppress(OSError):
            self.process.send_signal(signal.SIGKILL if at_once else STOP_SIGNAL)

    def wait(self, deadline: float | None) -> None:
        """Wait until it has ended (killing it at ``deadline``, a ``time.monotonic()`` value), and close its pipes."""
        try:
            self.process.wait(timeout=None if deadline is None else max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            log.debug("worker process %d did not end in time: killed", self.process.pid)
            self.process.kill()
            self.process.wait()
        self.connection.close()
        os.close(self._startup)


def _duplicate_stderr() -> int:
    """A descriptor of this process's stderr for a worker to write to (``/dev/null`` where there is none)."""
    try:
        return os.dup(2)
    except OSError:
        return os.open(os.devnull, os.O_WRONLY)


class _WorkerFuture:
    """The result of a task given to :class:`LocalProcesses` (filled in by its ``pump``)."""

    def __init__(self, pool: LocalProcesses):
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

    def settle(self, ok: bool, value) -> None:
        self._finished = True
        if ok:
            self._value = value
        else:
            self._error = value


class LocalProcesses:
    """``workers`` local processes, one task each at a time.

    Each is a fresh interpreter (see :class:`_Worker`), so that nothing of the caller is run again or
    inherited (no threads, no locks, no ``__main__``).
    No thread of its own: results are collected (and queued tasks handed out) whenever a future
    is asked whether it is done, so nothing can hang at exit, and ``close(kill=True)`` ends the
    processes at once, or after ``grace`` seconds in which their tasks clean up after themselves
    (:data:`STOP_SIGNAL`): a task that makes temporary files or compiles is given some.

    Raises
    ------
    ComputationError
        When a worker cannot be started (no Python executable); one that starts and dies at once
        (octalgen cannot be imported) fails its first task, saying why.
    """

    tape_access = "map"

    def __init__(self, workers: int, grace: float = 0.0):
        self.workers = workers
        self.grace = grace
        sweep_staged_files()
        self._idle: list[_Worker] = []
        self._busy: dict[Connection, tuple[_Worker, _WorkerFuture]] = {}
        self._queue: list[tuple[_WorkerFuture, Callable, tuple]] = []  # (future, fn, args) not handed out yet
        self._lost: ComputationError | None = None  # why the last worker that died did
        self._shared: tuple[str, str, int] | None = None  # the prefix's file: path, dtype, length
        self._free: list[Slot] = []  # files for tasks' arrays, not in use
        self._staged: dict[str, Slot] = {}  # by path: those in use
        # The workers' temporary directory (their TMPDIR), removed once they have ended: a task
        # killed where it stood leaves nothing behind.
        self._scratch = tempfile.mkdtemp(prefix=file_prefix("workers"))
        self._all: list[_Worker] = []
        try:
            for _ in range(workers):
                self._all.append(_Worker(self._scratch))
        except BaseException:
            self.close(kill=True)
            raise
        self._idle = list(self._all)

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
                assert isinstance(connection, Connection)  # the only other kind wait() was given
                worker, future = self._busy.pop(connection)
                try:
                    ok, value = connection.recv()
                except (EOFError, OSError):
                    ok, value = False, self._died(worker)
                else:
                    worker.tasks += 1
                    self._idle.append(worker)
                future.settle(ok, value)
        while self._queue and self._idle:
            future, fn, args = self._queue.pop(0)
            if future.cancelled:
                continue
            worker = self._idle.pop()
            try:
                worker.connection.send((fn, args))
            except (BrokenPipeError, ConnectionResetError):  # it died while idle
                future.settle(False, self._died(worker))
                continue
            self._busy[worker.connection] = (worker, future)
        if self._queue and not self._idle and not self._busy:  # every worker died: nothing would run them
            for future, _fn, _args in self._queue:
                future.settle(False, self._lost)
            self._queue = []

    def _died(self, worker: _Worker) -> ComputationError:
        self._lost = worker.failure()
        return self._lost

    def wait(self, timeout: float, wake: int | None = None) -> None:
        """Collect results and hand out tasks until one finished, ``wake`` is readable, or ``timeout`` passed."""
        self.pump(timeout, wake)

    def stage(self, array: np.ndarray):
        """A handle to pass ``array`` to one task: a file in /dev/shm (memory) that its worker maps.

        Written once here, rather than pickled and sent through a pipe, copied and unpickled, into
        a slot whose pages earlier tasks have faulted in.  Where the file cannot be written (a
        full /dev/shm), the array itself.
        """
        array = np.ascontiguousarray(array)
        slot = self._free.pop() if self._free else Slot.new()
        if slot is None:
            return array
        try:
            slot.write(array)
        except OSError:
            slot.remove()
            return array
        self._staged[slot.path] = slot
        return StagedArray(slot.path, array.dtype.str, len(array))

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
                out.write(array[old:].data.cast("B"))
        else:
            handle, path = tempfile.mkstemp(prefix=file_prefix("prefix"), dir=staging_dir())
            with os.fdopen(handle, "wb") as out:
                out.write(array.data.cast("B"))
            if self._shared is not None:
                unlink_quietly(self._shared[0])  # workers that mapped it keep their mappings
        self._shared = (path, array.dtype.str, len(array))
        return SharedArray(path, array.dtype.str, len(array))

    def close(self, kill: bool = False) -> None:
        """Stop the workers: at once when ``kill`` (after :attr:`grace` seconds for their tasks to clean
        up, if any), else once their current tasks are done."""
        workers, self._all = self._all, []
        if kill:
            for worker in workers:
                worker.stop(at_once=not self.grace)
        else:
            for worker in workers:
                with contextlib.suppress(OSError):
                    worker.connection.send(None)
        deadline = time.monotonic() + self.grace if kill else None
        for worker in workers:
            worker.wait(deadline)
        if workers:
            log.debug("worker processes: %s", ", ".join(f"pid {w.process.pid} ran {w.tasks} tasks" for w in workers))
        self._idle, self._busy, self._queue = [], {}, []
        for slot in [*self._free, *self._staged.values()]:
            slot.remove()
        if self._shared is not None:
            unlink_quietly(self._shared[0])
        self._shared, self._free, self._staged = None, [], {}
        shutil.rmtree(self._scratch, ignore_errors=True)
