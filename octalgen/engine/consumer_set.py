"""A run's consumers as one: where the engine must pause for them, and the values handed to them in pieces.

A consumer may expect to be finished at a heap (a period's proof complete there:
:attr:`~.seams.Consumer.finishes_at`) or look at the values so far at one (a search:
:attr:`~.seams.Consumer.looks_at`).  :class:`ConsumerSet` hands proven values on in pieces that end
at those heaps, so that a run ends where a consumer is finished, not at the end of a chunk, and
says where computing stops for now.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ..plan import KernelPlan
from .history import History
from .seams import Consumer
from .tally import UNSPARSE_WINDOW


class ConsumerSet:
    """The consumers of one run (:class:`~.seams.Consumer`), in the order they are handed values.

    Parameters
    ----------
    consumers : iterable of Consumer
    until : int
        The run's goal: nothing is handed on past it.
    """

    def __init__(self, consumers: Iterable[Consumer], until: int):
        self.members = list(consumers)
        self.until = until

    def done(self, position: int) -> bool:
        """The run is over at ``position``: at its goal, or a consumer is finished."""
        return position >= self.until or any(c.finished for c in self.members)

    def compute_to(self, position: int) -> int:
        """Where computing stops for now, from ``position``: the goal, or before it where a consumer
        expects to be finished."""
        return min([self.until, *_still_to_come(position, (c.finishes_at for c in self.members))])

    def piece_end(self, position: int) -> int:
        """Where the piece of values handed on from ``position`` ends: :meth:`compute_to`, or before it
        where a consumer looks at the values so far."""
        return min([self.compute_to(position), *_still_to_come(position, (c.looks_at for c in self.members))])

    def hand_on(self, history: History, values: np.ndarray, encoding=None, codes: np.ndarray | None = None) -> None:
        """Append proven ``values`` (G(history.position) ...) to ``history`` and hand them to every
        consumer, in pieces (:meth:`piece_end`); once the run is done, the rest is dropped.
        ``codes``: the kernel's codes of the values under ``encoding``, for the store."""
        start = 0
        while start < len(values) and not self.done(history.position):
            first = history.position
            stop = min(len(values), start + self.piece_end(first) - first)
            piece = values[start:stop]
            history.append(piece, encoding, codes=codes[start:stop] if codes is not None else None)
            for consumer in self.members:
                consumer.accept(first, piece)
            start = stop

    def attach(self, history: History) -> None:
        """Give every consumer the run's history (before the first value)."""
        for consumer in self.members:
            consumer.attach(history)

    def restart(
        self, history: History, plan: KernelPlan | None, held: np.ndarray | None = None, anchor_from: int | None = None
    ) -> None:
        """The values from the history's position on follow ``plan``'s recurrence (W values; without
        a kernel :data:`~.tally.UNSPARSE_WINDOW`): see :meth:`~.seams.Consumer.restart`.

        ``held``: the last W values where they are at hand (the exact solver's), else read from the
        history, which holds them from here on (a far term's window in pieces:
        :meth:`~.history.History.window_reader`).  Period anchors start at ``anchor_from``
        (default: the heap before the kernel's first, or G(0) without a kernel).
        """
        window = plan.window if plan is not None else UNSPARSE_WINDOW
        if anchor_from is None:
            anchor_from = plan.start - 1 if plan is not None else 0
        if held is not None:
            tail = held
            history.cover(held)  # the period search reads the values leaving its window from the history
        else:
            tail = history.tail(window) if window <= history.recent_limit else history.window_reader(window)
        for consumer in self.members:
            consumer.restart(window, tail, anchor_from)

    def states(self) -> dict:
        """``{name: state}`` of the consumers that keep one, for a checkpoint."""
        states = {c.name: c.state() for c in self.members}
        return {name: state for name, state in states.items() if state is not None}


def _still_to_come(position: int, positions) -> list[int]:
    """The ``positions`` still to come after ``position`` (None: none)."""
    return [n for n in positions if n is not None and n > position]
