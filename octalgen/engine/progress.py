"""Progress of a long run on stderr: a bar on a terminal, plain periodic lines otherwise."""

from __future__ import annotations

import sys
import time


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


def _count(n: float) -> str:
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n:.0f} "


class Progress:
    """Reports (proven, produced) positions against a goal.

    Parameters
    ----------
    goal : int
        The heap the run stops at.
    stream : file, optional
        Default stderr.
    interactive : bool, optional
        A redrawn bar (default: when the stream is a terminal); else a line every ``every`` seconds.
    enabled : bool
        False: report nothing (``--quiet``).
    """

    def __init__(self, goal: int, stream=None, interactive: bool | None = None, every: float = 10.0,
                 enabled: bool = True):
        self.goal = goal
        self.stream = stream or sys.stderr
        self.interactive = self.stream.isatty() if interactive is None else interactive
        self.every = 0.25 if self.interactive else every
        self.enabled = enabled
        self._began = time.monotonic()
        self._first = None
        self._last = time.monotonic()
        self._drawn = False

    def update(self, proven: int, produced: int, force: bool = False) -> None:
        now = time.monotonic()
        if self._first is None:
            self._first = proven  # rate over this session's values, not a resumed run's
        if not self.enabled or (not force and now - self._last < self.every):
            return
        self._last = now
        elapsed = max(now - self._began, 1e-9)
        rate = (proven - self._first) / elapsed
        remaining = (self.goal - proven) / rate if rate > 0 else float("inf")
        eta = _duration(remaining) if remaining != float("inf") else "?"
        share = proven / self.goal if self.goal else 1.0
        figures = (f"{_count(rate)}values/s  proven to G({proven:,})  produced to G({produced:,})  "
                   f"ETA {eta}")
        if self.interactive:
            width = 24
            filled = int(width * share)
            self.stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {100 * share:5.1f}%  {figures}\x1b[K")
            self._drawn = True
        else:
            self.stream.write(f"octalgen: {100 * share:5.1f}%  {figures}\n")
        self.stream.flush()

    def close(self) -> None:
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = False
