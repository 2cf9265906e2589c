"""What a local worker process runs: it serves the run's verification tasks until told to end.

A worker is a fresh interpreter started by :class:`~.workers.LocalProcesses`; it imports this module
and calls :func:`serve`.  It leaves Ctrl-C and SIGTERM to the run (:data:`LEFT_TO_THE_RUN`), gives up
its task on :data:`STOP_SIGNAL` (:class:`WorkerStopped`), and dies with the run.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import pickle
import signal
import sys
import threading
import time
from multiprocessing.connection import Connection

from ..errors import ComputationError

__all__ = ["LEFT_TO_THE_RUN", "STOP_SIGNAL", "WorkerStopped", "serve"]

_PR_SET_PDEATHSIG = 1

#: Ctrl-C and SIGTERM: the run's to handle.  Both reach the workers too when they are sent to the
#: run's process group (Ctrl-C at a terminal, ``timeout``, ``kill -- -PGID``); the run stops at its
#: next safe point and stops its workers itself, so a worker that acted on them would only turn a
#: clean stop into a failed run (or print a traceback of its own).
LEFT_TO_THE_RUN = (signal.SIGINT, signal.SIGTERM)

#: The signal by which :meth:`~.workers.LocalProcesses.close` asks a worker to give up its task at once: the
#: task unwinds (its temporary directories go, a compile under way is cancelled) and the worker
#: ends.  Nothing else sends it to a process group.
STOP_SIGNAL = signal.SIGUSR1


class WorkerStopped(BaseException):
    """Raised in a worker process when the run asks it to stop (:data:`STOP_SIGNAL`).

    A :class:`BaseException`, as :class:`KeyboardInterrupt` is, so that a task's ``except
    Exception`` does not take it for its own failure.
    """


def serve(connection_fd: int, stderr_fd: int, parent: int) -> None:
    """A local worker process: run the tasks it is sent through ``connection_fd`` until it is sent None,
    then end.

    Ctrl-C and SIGTERM are ignored (they are the run's: :data:`LEFT_TO_THE_RUN`), also by an engine
    that runs in a task (it catches no signal that is ignored: see :mod:`.signals`) and by the
    programs a task starts, which inherit that.  :data:`STOP_SIGNAL` stops the task as it stands
    (:class:`WorkerStopped`).  It dies with the run: the kernel is asked to kill it when its parent
    dies (Linux ``PR_SET_PDEATHSIG``), and a thread also watches for that.
    """
    for number in LEFT_TO_THE_RUN:
        signal.signal(number, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, LEFT_TO_THE_RUN)  # any that came meanwhile are dropped now

    def stop(_number, _frame):
        signal.signal(STOP_SIGNAL, signal.SIG_IGN)  # once: the task's unwinding is not cut short again
        raise WorkerStopped

    signal.signal(STOP_SIGNAL, stop)
    try:
        _die_with(parent)
        for target in (1, 2):  # started: from now on, what it writes goes to the run's stderr
            os.dup2(stderr_fd, target)
        os.close(stderr_fd)
        _serve(Connection(connection_fd))
    except (WorkerStopped, EOFError, OSError):
        pass
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # without waiting for threads a task left behind


def _serve(connection: Connection) -> None:
    while True:
        message = connection.recv_bytes()
        try:
            task = pickle.loads(message)
        except Exception as exc:  # noqa: BLE001 - handed back to the run, which raises it
            connection.send(
                (False, ComputationError(f"a verifying process could not read its task: {type(exc).__name__}: {exc}"))
            )
            continue
        if task is None:
            return
        fn, args = task
        try:
            reply = (True, fn(*args))
        except Exception as exc:  # noqa: BLE001 - handed back to the run, which raises it
            reply = (False, exc)
        try:
            connection.send(reply)
        except (pickle.PicklingError, TypeError, AttributeError) as exc:
            connection.send(
                (
                    False,
                    ComputationError(
                        f"a verifying process could not send back its result: {type(exc).__name__}: {exc}"
                    ),
                )
            )


def _die_with(parent: int) -> None:
    """End this process when ``parent`` dies."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before the request above
        os._exit(1)

    def watch():  # also where PR_SET_PDEATHSIG does not exist or fires late
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="octalgen-parent-watch").start()
