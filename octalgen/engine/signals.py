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
