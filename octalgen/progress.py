"""How far a long computation has come, on stderr: one live line on a terminal, plain lines in a log.

:class:`Progress` is what ``run``, ``period``, ``values`` (large N), ``export``, ``synth`` and
Verilator simulations report to.  The computation says which *phase* it is in ("building
kernel", "exact prefix", "running", "placing and routing") and, as values are proven, how far
it has come; the display does the rest:

* **On a terminal** (rich's live display): one line that always fits the terminal's width,
  redrawn in place a few times a second by a background thread, so that it shows the phase and
  the elapsed time from the first second even while nothing is proven yet (a kernel being
  compiled, the exact prefix being computed).  Fields that do not fit are left out, least
  important first.  When the display closes the line is erased: what the command prints next
  (its summary) stands alone, and nothing stale is left behind.
* **Elsewhere** (stderr to a file or a pipe): a plain line every ``every`` seconds.

The rate is measured over this session's values only (a resumed run's earlier values do not
count), within the current phase only (the exact prefix's slow start says nothing about the
kernel's speed) and over the last :data:`RATE_WINDOW` seconds, so the ETA follows the current
speed.  The ETA waits until that rate means something: the phase must lead to the goal (a
preparatory phase such as the exact prefix says so with ``phase(text, eta=False)``) and must
have proven values for :data:`ETA_SETTLE` seconds, in at least :data:`ETA_MIN_STEPS` steps.  A
goal further than :data:`HORIZON` seconds away is said to be out of reach instead of given a date.
"""

from __future__ import annotations

import logging
import sys
import time
from collections import deque
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.live import Live

log = logging.getLogger("octalgen")

#: Seconds of recent samples the rate is measured over.
RATE_WINDOW = 30.0

#: The rate needs proven values to have moved over at least this many seconds.
RATE_MIN_SPAN = 1.0

#: The ETA needs the current phase to have proven values over at least this many seconds ...
ETA_SETTLE = 5.0

#: ... in at least this many updates that moved the proven position (two points are a guess).
ETA_MIN_STEPS = 3

#: An ETA further than this (10 years, in seconds) is not given: the goal is out of reach.
HORIZON = 10 * 365.25 * 86400

#: Redraws per second of the live line.
REFRESH_PER_SECOND = 5

#: The clock (tests replace it).
_clock = time.monotonic

_UNITS = (("E", 1e18), ("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3))


def compact(n: float) -> str:
    """``n`` in at most four significant characters and a unit: 999, 1.23 k, 21.0 M, 1.00e+99."""
    if n >= 1e21:
        return f"{n:.2e}"
    for unit, size in _UNITS:
        if n >= size * 0.9995:  # 999,950 is "1.00 M", not "1000 k"
            scaled = n / size
            digits = 2 if scaled < 9.995 else 1 if scaled < 99.95 else 0
            return f"{scaled:.{digits}f} {unit}"
    return f"{n:.0f}"


def duration(seconds: float) -> str:
    """m:ss below an hour, h:mm:ss below a day, then days and hours."""
    seconds = int(seconds)
    if seconds >= 86400:
        days, rest = divmod(seconds, 86400)
        return f"{days} d {rest // 3600} h"
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


class Progress:
    """Reports a computation's phase and proven (and produced) positions against a goal.

    Parameters
    ----------
    goal : int or None
        The position the computation stops at (None: no known end; no percentage, no ETA).
    label : str
        What is computed, shown first (e.g. the game's code, ``"period .354"``).
    stream : file, optional
        Where to report (default: ``sys.stderr``).
    interactive : bool, optional
        One live line (default: when ``stream`` is a terminal); else plain lines.
    every : float
        Seconds between plain lines.
    items : str, optional
        What is counted when it is not values (e.g. ``"games"``): counts instead of positions.
    enabled : bool
        False: report nothing at all (``--quiet``).

    Notes
    -----
    :meth:`update` is cheap (it records numbers; drawing happens elsewhere), so a computation
    may call it as often as it likes.  Use the object as a context manager, or call
    :meth:`close` in a ``finally``: on a terminal it stops the drawing thread and erases the line.
    """

    def __init__(
        self,
        goal: int | None,
        *,
        label: str = "",
        stream=None,
        interactive: bool | None = None,
        every: float = 10.0,
        enabled: bool = True,
        items: str | None = None,
    ):
        self.goal = goal
        self.label = label
        self.items = items
        self.stream = stream if stream is not None else sys.stderr
        self.interactive = is_terminal(self.stream) if interactive is None else interactive
        self.every = every
        self.enabled = enabled
        self._phase = "starting"
        self._phase_leads_to_goal = True
        self._began = _clock()
        self._last_line = self._began
        self._proven: int | None = None
        self._produced: int | None = None
        self._updated: float | None = None  # when update() was last called
        # The current phase's rate: (time, proven) samples of the last RATE_WINDOW seconds, where
        # the phase's first sample was taken, and how many updates moved the proven position.
        self._samples: deque[tuple[float, int]] = deque()
        self._phase_first_sample: tuple[float, int] | None = None
        self._phase_steps = 0
        self._rate: float | None = None
        self._live: Live | None = None
        if enabled and self.interactive:
            self._start_live()

    # -- what the computation reports ---------------------------------------------------

    def phase(self, text: str, *, eta: bool = True) -> None:
        """Say what is being done now ("building kernel", "exact prefix", "running", ...).

        The live line shows it at once; plain lines carry it from the next one on.  A new phase
        measures its rate afresh.  ``eta=False``: this phase's rate does not predict when the goal
        is reached (the exact prefix, before the much faster kernel takes over), so no ETA is
        given during it.
        """
        if text != self._phase:  # the new phase's rate starts here, from where the last one left off
            at = f" at {self._proven:,}" if self._proven is not None else ""
            log.debug(
                "%s%s%s (%s in)", f"{self.label}: " if self.label else "", text, at, duration(_clock() - self._began)
            )
            self._samples.clear()
            self._phase_first_sample, self._phase_steps, self._rate = None, 0, None
            if self._proven is not None:
                self._phase_first_sample = (_clock(), self._proven)
                self._samples.append(self._phase_first_sample)
        self._phase, self._phase_leads_to_goal = text, eta
        self._report(force=self._live is not None)

    def update(self, proven: int, produced: int | None = None, force: bool = False) -> None:
        """G(0) ... G(proven - 1) are proven; the speculative side has reached ``produced``.

        ``force`` draws (or writes the plain line) now instead of at the next refresh.
        """
        now = _clock()
        if self._phase_first_sample is None:
            self._phase_first_sample = (now, proven)
        elif self._proven is not None and proven > self._proven:
            self._phase_steps += 1
        self._proven, self._produced, self._updated = proven, produced, now
        samples = self._samples
        if not samples or now - samples[-1][0] >= 0.2 or force:
            samples.append((now, proven))
            while len(samples) > 2 and samples[1][0] <= now - RATE_WINDOW:
                samples.popleft()
            (t0, p0), (t1, p1) = samples[0], samples[-1]
            if p1 > p0 and t1 - t0 >= RATE_MIN_SPAN:
                self._rate = (p1 - p0) / (t1 - t0)
        self._report(force)

    def close(self) -> None:
        """Stop reporting; on a terminal, erase the live line."""
        if self._live is not None:
            live, self._live = self._live, None
            live.stop()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- figures --------------------------------------------------------------------------

    def _eta_established(self) -> bool:
        """True once the current phase's rate predicts the end (see the module's docstring)."""
        if not (
            self._rate
            and self._phase_leads_to_goal
            and self._phase_first_sample is not None
            and self._updated is not None
            and self._proven is not None
        ):
            return False
        began, first = self._phase_first_sample
        return self._updated - began >= ETA_SETTLE and self._proven > first and self._phase_steps >= ETA_MIN_STEPS

    def _eta(self) -> str | None:
        """The ETA field: None while it cannot be estimated."""
        rate = self._rate
        if (
            self.goal is None
            or self._proven is None
            or self._proven >= self.goal
            or not rate
            or not self._eta_established()
        ):
            return None
        remaining = (self.goal - self._proven) / rate
        return "ETA > 10 years" if remaining > HORIZON else f"ETA {duration(remaining)}"

    def _fields(self, full: bool) -> list[tuple[str, str]]:
        """(name, text) of every figure there is now, in display order.

        ``full``: exact positions (plain lines); else compact numbers (the live line).
        """
        if self.items is not None:  # counting things (games), not positions in a sequence
            return self._count_fields(full)
        number = (lambda n: f"G({n:,})") if full else compact
        found = [
            ("phase", " ".join(filter(None, (self.label, self._phase)))),
            ("elapsed", f"{'elapsed ' if full else ''}{duration(_clock() - self._began)}"),
        ]
        if self._proven is not None:
            if self.goal:
                found.append(("percent", f"{100 * min(self._proven, self.goal) / self.goal:.1f}%"))
            of = f"/{compact(self.goal)}" if self.goal and not full else ""
            found.append(("proven", f"proven {'to ' if full else ''}{number(self._proven)}{of}"))
            if self._produced is not None and self._produced > self._proven:
                found.append(("produced", f"produced {'to ' if full else ''}{number(self._produced)}"))
        if self._rate:
            found.append(("rate", f"{compact(self._rate)}{' values/s' if full else '/s'}"))
        eta = self._eta()
        if eta:
            found.append(("eta", eta))
        return found

    def _count_fields(self, full: bool) -> list[tuple[str, str]]:
        found = [
            ("phase", " ".join(filter(None, (self.label, self._phase)))),
            ("elapsed", f"{'elapsed ' if full else ''}{duration(_clock() - self._began)}"),
        ]
        if self._proven is not None:
            of = f" of {self.goal:,}" if self.goal else ""
            found.append(("proven", f"{self._proven:,}{of} {self.items} done"))
        if self._rate:
            found.append(("rate", f"{compact(self._rate * 60)} {self.items}/min"))
        eta = self._eta()
        if eta:
            found.append(("eta", eta))
        return found

    # -- drawing ------------------------------------------------------------------------

    def _report(self, force: bool) -> None:
        if not self.enabled:
            return
        if self._live is not None:
            if force:
                self._live.refresh()
            return
        now = _clock()
        if not force and now - self._last_line < self.every:
            return
        self._last_line = now
        text = "  ".join(text for _name, text in self._fields(full=True))
        self.stream.write(f"octalgen: {text}\n")
        self.stream.flush()

    def _start_live(self) -> None:
        from rich.console import Console
        from rich.live import Live
        from rich.spinner import Spinner

        self._spinner = Spinner("dots", style="green")
        console = Console(file=self.stream, force_terminal=True, highlight=False, soft_wrap=False)
        to_stderr = self.stream is sys.stderr
        self._live = Live(
            console=console,
            auto_refresh=True,
            refresh_per_second=REFRESH_PER_SECOND,
            transient=True,
            get_renderable=self._line,
            # warnings logged meanwhile go above the line, not through it
            redirect_stderr=to_stderr,
            redirect_stdout=to_stderr and is_terminal(sys.stdout),
        )
        self._live.start(refresh=True)

    def _line(self):
        """The live line, built to fit the console's width (called by rich at each refresh)."""
        from rich.text import Text

        width = self._live.console.width - 1 if self._live is not None else 79
        spinner = self._spinner.render(_clock())
        assert isinstance(spinner, Text)  # a spinner without text renders as its frame's Text
        fields = self._fields(full=False)
        chosen = _fit(fields, width - len(spinner.plain) - 1)
        line = Text.assemble(spinner, " ", no_wrap=True, overflow="ellipsis")
        for i, (name, text) in enumerate(fields):
            if name not in chosen:
                continue
            if i:
                line.append("  ")
            line.append(text, style=_STYLES.get(name, ""))
        line.truncate(width, overflow="ellipsis")
        return line


#: Which fields give way first when the line is too narrow (first in this list: dropped first).
_DROP_ORDER = ("elapsed", "produced", "percent", "rate", "eta", "proven")

_STYLES = {"phase": "bold", "elapsed": "dim", "eta": "cyan", "rate": "green"}


def _fit(fields: list[tuple[str, str]], width: int) -> set[str]:
    """The names of the fields that fit in ``width`` columns joined by two spaces (the phase always)."""
    chosen = {name for name, _text in fields}
    size = {name: len(text) for name, text in fields}

    def used() -> int:
        return sum(size[n] for n in chosen) + 2 * (len(chosen) - 1)

    for name in _DROP_ORDER:
        if used() <= width:
            break
        chosen.discard(name)
    return chosen


def is_terminal(stream) -> bool:
    """True when ``stream`` is a terminal (False for anything without a working ``isatty``)."""
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
