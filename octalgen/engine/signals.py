"""Ctrl-C and SIGTERM as a request to stop at the next safe point.

A run is never cut in the middle of a step: the signal handler only records the request, and
the engine asks :meth:`StopRequest.check` between steps (long C calls are split so that there
is a step boundary every fraction of a second).  The first signal puts the previous handler
back, so a second Ctrl-C acts at once.  A signal that is ignored when the run starts stays
ignored, as the shell means it (a job started in the background) and as a local worker process
means it (:mod:`.workers`: its run stops it).
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager

from ..errors import Terminated


def raise_terminated(_number, _frame):
    """A SIGTERM handler: raise :class:`~octalgen.errors.Terminated`, as Python raises KeyboardInterrupt for Ctrl-C."""
    raise Terminated


@contextmanager
def command_signals():
    """Ctrl-C and SIGTERM for a command of the command line: recorded while it starts, raised once it runs.

    While the command's modules are imported and its arguments parsed, a signal is only recorded:
    raised inside an import, an exception can leave a module half made (NumPy turns it into an
    ImportError).  The call yielded, ``started()``, raises the one recorded, if any; from then on
    Ctrl-C raises KeyboardInterrupt and SIGTERM :class:`~octalgen.errors.Terminated` (a run catches
    both itself, at its safe points: :class:`StopRequest`).  Only in the main thread; a signal that
    is ignored stays ignored; the previous handlers are put back at the end.
    """
    if threading.current_thread() is not threading.main_thread():
        yield lambda: None
        return
    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    previous = {s: old for s, old in previous.items() if old is not signal.SIG_IGN}
    caught = []
    for s in previous:
        signal.signal(s, lambda number, _frame: caught.append(number))

    def started() -> None:
        for s in previous:
            signal.signal(s, signal.default_int_handler if s == signal.SIGINT else raise_terminated)
        if caught:
            raise Terminated if caught[0] == signal.SIGTERM else KeyboardInterrupt

    try:
        yield started
    finally:
        for s, old in previous.items():
            signal.signal(s, old)


class StopRequested(Exception):
    """Raised at a safe point once a stop was requested (by a signal or :meth:`StopRequest.request`)."""


class StopRequest:
    """Whether the run was asked to stop, and by which signal.

    Attributes
    ----------
    signal : int or None
        The signal that asked (``signal.SIGINT`` for a request made in code), None while running.
    """

    def __init__(self):
        self.signal: int | None = None

    def request(self, signal_number: int = signal.SIGINT) -> None:
        """Stop at the next safe point, as Ctrl-C does."""
        self.signal = signal_number

    def requested(self) -> bool:
        """True once a stop was asked for (a callable for the executors that check between pieces)."""
        return self.signal is not None

    def check(self) -> None:
        """Raise :class:`StopRequested` if a stop was asked for."""
        if self.signal is not None:
            raise StopRequested

    def catch_signals(self):
        """Make Ctrl-C and SIGTERM requests; returns the call that puts the previous handlers back.

        Only the main thread can set handlers: elsewhere nothing is caught and the call returned
        does nothing.  Neither is a signal that is ignored (``SIG_IGN``).
        """
        if threading.current_thread() is not threading.main_thread():
            return lambda: None

        def handler(signum, frame):
            self.request(signum)
            signal.signal(signum, previous[signum])  # a second one acts at once

        previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
        previous = {s: old for s, old in previous.items() if old is not signal.SIG_IGN}
        for s in previous:
            signal.signal(s, handler)

        def restore() -> None:
            for s, old in previous.items():
                signal.signal(s, old)

        return restore
