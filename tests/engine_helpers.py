"""Helpers shared by the engine tests."""

import os
import signal

from octalgen.engine.seams import Consumer


class StopAt(Consumer):
    """A consumer that presses Ctrl-C (or sends ``signal_number``) once ``position`` is proven: the signal
    goes to this process, and the engine (running in the main thread) stops at its next safe point."""

    name = "stop-at"

    def __init__(self, position: int, signal_number: int = signal.SIGINT):
        self.position = position
        self.signal_number = signal_number
        self.sent = False

    def accept(self, first, values) -> None:
        if not self.sent and first + len(values) >= self.position:
            self.sent = True  # once: a second signal acts at once, as the engine's handler promises
            os.kill(os.getpid(), self.signal_number)
