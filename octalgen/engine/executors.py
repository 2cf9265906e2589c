"""Where verification tasks run: this process, local worker processes, or a Dask cluster.

Every executor is an :class:`Executor`: ``submit(fn, *args)`` returning a future with
``result(timeout)``, ``done()`` and ``cancel()``; ``share(array)`` (a handle that passes a large
read-only array to many tasks cheaply); ``stage(*arrays)`` and ``release(handle, finished)`` (one
task's large read-only array, and its end); ``wait(timeout, wake)`` (until a task may have
finished or the file descriptor ``wake`` is readable: the producer's thread has a chunk);
``close(kill)``.  Tasks
are plain picklable calls (:func:`verify_task` on a verifier with a ``verify(codes, base,
prefix, a, b)`` method and a stretch of codes), so any engine that runs Python functions can
run them.

Local worker processes are in :mod:`.workers`.

A verifier that proves on a device of its own (the GPU's) is an :class:`AsynchronousVerifier`:
:class:`InProcess` hands it the task at once, and its future is done when the device is, so the
pipeline produces the next chunks meanwhile instead of waiting on each proof in turn.
"""

from __future__ import annotations

import select
import time
import warnings
from typing import Protocol, runtime_checkable

import numpy as np

from ..cpu.verify import PROVEN, UNDECIDED, VerifyResult, is_frozen
from ..errors import InputError, ToolMissingError
from .signals import StopRequested
from .staged_files import SharedArray, StagedArray
from .tape import TapeSlice
from .workers import LocalProcesses

#: Seconds to wait for a Dask scheduler to answer.
CONNECT_TIMEOUT = 20.0

#: Heaps of history before an interval (beyond the kernel's window) that verification is first
#: given: proof scans rarely reach further, and one that does is retried with more.
VERIFY_HISTORY = 1 << 20

#: Heaps verified per call into C in this process (so that a stop request is noticed soon).
IN_PROCESS_PIECE = 1 << 17

#: Seconds between looks at a cluster's futures while waiting (they come with no descriptor to wait on).
POLL_SLICE = 0.02


def recent_start(plan, base: int, a: int) -> int:
    """The first heap of the recent history a proof of heaps from ``a`` is first given: the kernel's
    window and :data:`VERIFY_HISTORY` heaps before ``a``, not before ``base`` (nor, for u8 codes,
    before the plan's window ends its first heap: past every rare position, far ones too)."""
    return max(base, a - plan.window - VERIFY_HISTORY, earliest_code(plan))


def earliest_code(plan) -> int:
    """The first heap whose code a proof may be given: any for u16; for u8 the first past every rare
    position (a far one's code would stand for a common value)."""
    return 0 if plan.encoding.kind == "u16" else plan.start - plan.window


def verify_interval(verifier, codes: np.ndarray, base: int, prefix, a: int, b: int) -> VerifyResult:
    """Verify [a, b) from recent history first, then all of ``codes`` (heaps base ...) where undecided."""
    recent = recent_start(verifier.plan, base, a)
    result = verifier.verify(codes[recent - base : b - base], recent, prefix, a, b)
    earliest = max(base, earliest_code(verifier.plan))
    if result.status == UNDECIDED and recent > earliest:
        retry = verifier.verify(codes[earliest - base : b - base], earliest, prefix, result.heap, b)
        result = (
            retry
            if retry.status != PROVEN
            else VerifyResult(PROVEN, options_scanned=result.options_scanned + retry.options_scanned)
        )
    return result


def verify_task(verifier, codes, base, prefix, a, b) -> tuple[VerifyResult, float]:
    """A verification task: :func:`verify_interval` and the CPU seconds it took."""
    began = time.thread_time()
    if isinstance(prefix, SharedArray):
        prefix = prefix.array()
    if isinstance(codes, (StagedArray, TapeSlice)):
        codes = codes.array()
    result = verify_interval(verifier, codes, base, prefix, a, b)
    return result, time.thread_time() - began


class VerifyFuture(Protocol):
    """A verification under way: ``result`` gives :func:`verify_task`'s ``(VerifyResult, seconds)``."""

    def done(self) -> bool:
        """True once :meth:`result` returns without waiting."""

    def result(self, timeout: float | None = None):
        """``(VerifyResult, seconds)``; raises :class:`TimeoutError` when not done within ``timeout``."""

    def cancel(self) -> bool:
        """Give up on it (its result is never asked for)."""


@runtime_checkable
class AsynchronousVerifier(Protocol):
    """A verifier that starts a proof and returns at once (a GPU's: the device proves while this
    process goes on); :class:`InProcess` submits :func:`verify_task`'s work to it."""

    def submit(self, codes: np.ndarray, base: int, prefix, a: int, b: int) -> VerifyFuture:
        """Start proving heaps ``a`` ... ``b - 1`` as :func:`verify_task` would."""


class Executor(Protocol):
    """Where the pipeline's verification tasks run (:class:`InProcess`, :class:`~.workers.LocalProcesses`,
    :class:`DaskCluster`).

    Attributes
    ----------
    workers : int
        Tasks it runs at once.
    tape_access : str
        How its tasks read a stretch of the far term's tape (:meth:`~.tape.Tape.stage`): ``"view"``
        (in this process) and ``"map"`` (a worker maps the file) give every code on it at no cost;
        ``"copy"`` sends the codes with the task.
    """

    workers: int
    tape_access: str

    def submit(self, fn, *args) -> VerifyFuture:
        """Run ``fn(*args)`` (a :func:`verify_task`)."""

    def share(self, array: np.ndarray):
        """A handle that passes ``array`` (read-only, large) to many tasks."""

    def stage(self, array: np.ndarray):
        """A handle that passes ``array`` (read-only, large) to one task."""

    def release(self, handle, finished: bool = True) -> None:
        """The task given ``handle`` by :meth:`stage` is over (``finished`` False: it was cancelled and
        may still be reading)."""

    def wait(self, timeout: float, wake: int | None = None) -> None:
        """Until a task may have finished, ``wake`` is readable, or ``timeout`` seconds passed."""

    def close(self, kill: bool = False) -> None:
        """End its processes (at once where ``kill``)."""


class _Deferred:
    """A task run in this process when its result is asked for, in pieces (see :class:`InProcess`)."""

    def __init__(self, executor: InProcess, args):
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
    tape_access = "view"

    def __init__(self, should_stop=lambda: False, piece: int = IN_PROCESS_PIECE):
        self.should_stop = should_stop
        self.piece = piece

    def submit(self, fn, *args):
        if fn is not verify_task:
            return _Done(fn(*args))
        if isinstance(args[0], AsynchronousVerifier):
            return args[0].submit(*args[1:])  # started now; done when its device is
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
        """A handle to pass ``array`` to many tasks: an array that a verifier checks once for all of
        them, as a worker checks the file it maps (``array`` itself where nothing changes it, as the
        run's prefix; else a read-only copy)."""
        if is_frozen(array):
            return array
        frozen = np.array(array)
        frozen.flags.writeable = False
        return frozen

    def stage(self, array: np.ndarray):
        """A handle to pass ``array`` to one task (here: the array itself)."""
        return array

    def release(self, handle, finished: bool = True) -> None:
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


class DaskCluster:
    """Tasks go to a running Dask distributed scheduler (``--scheduler tcp://host:port``).

    The workers need octalgen and a C compiler (each builds or loads the verifier from its own
    cache).  Results come back through the futures.
    """

    tape_access = "copy"  # its workers may be other machines: they are sent the codes

    def __init__(self, address: str, timeout: float | None = None):
        try:
            from distributed import Client
        except ImportError:
            raise ToolMissingError(
                "--scheduler needs Dask distributed, which is not installed: pip install 'octalgen[cluster]'"
            ) from None
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

    def release(self, handle, finished: bool = True) -> None:
        """The task given ``handle`` is over (nothing to do)."""

    def wait(self, timeout: float, wake: int | None = None) -> None:
        """A short wait for ``wake`` (the futures are looked at after it)."""
        _wait_for(wake, min(timeout, POLL_SLICE))

    def close(self, kill: bool = False) -> None:
        self._client.close()


def make_executor(
    workers: int, scheduler: str | None, should_stop=lambda: False, piece: int = IN_PROCESS_PIECE, grace: float = 0.0
) -> Executor:
    """The executor for ``--workers`` / ``--scheduler`` (``piece``: see :class:`InProcess`; ``grace``:
    see :class:`~.workers.LocalProcesses`)."""
    if scheduler:
        return DaskCluster(scheduler)
    if workers <= 0:
        return InProcess(should_stop, piece)
    return LocalProcesses(workers, grace)
