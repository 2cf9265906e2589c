"""Eventual periods of pick-up-stones outcomes, proven from the computed states.

Why a period can be *proven* from finitely many pile sizes: the state of pile
size n (:attr:`Outcomes.states <octalgen.stones.outcomes.Outcomes.states>`)
is a fixed function of the states of the ``reach`` pile sizes below it (no
move removes more than ``reach`` stones), with every pile size below 0 in the
all-zero state (nobody can move there, so no move leads there).  So if the
windows of ``reach`` states before pile sizes i and j are equal, everything
from i on repeats with period j - i.  :func:`state_period` finds the first
such repeat; :func:`least_period` then shrinks it to the least period and
preperiod of any sequence derived from the states (a channel of digits).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .outcomes import Outcomes
from .rules import Asymmetric

__all__ = ["EventualPeriods", "Period", "eventual_periods", "eventual_periods_of_game", "least_period", "state_period"]

#: :func:`eventual_periods_of_game` first tries this many pile sizes, then twice as many, and so on.
FIRST_TRY = 1 << 12

# An odd multiplier: window hashes are polynomials in it modulo 2^64 (numpy uint64 wraps).
_HASH_BASE = np.uint64(0x9E3779B97F4A7C15)


@dataclass(frozen=True)
class Period:
    """A sequence s with s(n + period) = s(n) for every n >= start.

    Attributes
    ----------
    start : int
        The least such n (the preperiod) for :func:`least_period`; for
        :func:`state_period`, a pile size from which the period is proven.
    period : int
    """

    start: int
    period: int


def state_period(states: np.ndarray, reach: int) -> Period | None:
    """A proven period of a state sequence: the first repeated window of ``reach`` states.

    Parameters
    ----------
    states : numpy bool array of shape (count, width)
        The states of pile sizes 0 ... count-1.
    reach : int
        How many earlier states determine a state (the largest count removed).

    Returns
    -------
    Period or None
        ``Period(i, j - i)`` for the least j <= count whose window of states
        j-reach ... j-1 equals that of an earlier i; None if no window repeats.
    """
    states = np.asarray(states, dtype=bool)
    count = len(states)
    # One positive integer per distinct state; the pile sizes below 0 are in the all-zero state.
    padded = np.concatenate([np.zeros((reach, states.shape[1]), dtype=bool), states])
    _, ids = np.unique(np.packbits(padded, axis=1), axis=0, return_inverse=True)
    ids = ids.reshape(-1).astype(np.uint64) + np.uint64(1)
    # window(j) = ids[j : j + reach] in padded positions; hash(j) = sum_t ids[j + t] * B^(j + t) / B^j.
    with np.errstate(over="ignore"):
        powers = np.cumprod(np.full(len(ids), _HASH_BASE, dtype=np.uint64), dtype=np.uint64)
        prefix = np.concatenate([[np.uint64(0)], np.cumsum(ids * powers, dtype=np.uint64)])
        inverse = np.cumprod(np.full(count + 1, _inverse_mod_2_64(int(_HASH_BASE)), dtype=np.uint64), dtype=np.uint64)
        sums = prefix[reach : reach + count + 1] - prefix[: count + 1]
        hashes = sums * inverse
    order = np.argsort(hashes, kind="stable")
    sorted_hashes = hashes[order]
    repeats = np.flatnonzero(sorted_hashes[1:] == sorted_hashes[:-1]) + 1
    for j in sorted(order[repeats].tolist()):
        # The earliest window with the same hash: the first of its run in the stable order.
        run_start = np.searchsorted(sorted_hashes, hashes[j], side="left")
        i = int(order[run_start])
        if np.array_equal(ids[i : i + reach], ids[j : j + reach]):  # not a hash collision
            return Period(i, j - i)
        # A collision: look for a true earlier match of this window among the equal hashes.
        for other in order[run_start : np.searchsorted(sorted_hashes, hashes[j], side="right")]:
            if other < j and np.array_equal(ids[other : other + reach], ids[j : j + reach]):
                return Period(int(other), j - int(other))
    return None


def _inverse_mod_2_64(odd: int) -> np.uint64:
    return np.uint64(pow(odd, -1, 1 << 64))


def least_period(sequence: np.ndarray, proven: Period) -> Period:
    """The least period and preperiod of ``sequence``, given a proven period of it.

    ``sequence`` must satisfy s(n + proven.period) = s(n) for all n >= proven.start
    (beyond its end too) and hold at least ``proven.start + proven.period`` terms.
    """
    sequence = np.asarray(sequence)
    start, period = proven.start, proven.period
    block = sequence[start : start + period]
    # The least period of a purely periodic tail divides every period of it.
    least = next(d for d in range(1, period + 1) if period % d == 0 and np.array_equal(np.roll(block, -d), block))
    while start > 0 and sequence[start - 1] == sequence[start - 1 + least]:
        start -= 1
    return Period(start, least)


@dataclass(frozen=True)
class EventualPeriods:
    """What :func:`eventual_periods` proved: how each channel's outcomes end, and who then always wins.

    Attributes
    ----------
    periods : dict of str to Period
        Least eventual period and preperiod of each channel's outcome sequence.
    always_wins : tuple of (str, int), or None
        Asymmetric games: ``("Left", n)`` when Left wins whoever starts from n
        stones on (least such n), likewise ``("Right", n)``; None when neither.
    """

    periods: dict[str, Period]
    always_wins: tuple[str, int] | None = None


def eventual_periods(outcomes: Outcomes) -> EventualPeriods | None:
    """Proven eventual periods (and, for asymmetric games, the eventual winner) of ``outcomes``.

    Returns None when no window of states repeats among the pile sizes
    computed: compute more of them.
    """
    game = outcomes.game
    if outcomes.states is None:
        raise ValueError("eventual_periods needs outcomes computed with their states")
    proven = state_period(outcomes.states, game.reach)
    if proven is None:
        return None
    periods = {name: least_period(wins, proven) for name, wins in outcomes.second_wins.items()}
    always_wins = None
    if isinstance(game, Asymmetric):
        left, right = outcomes.second_wins["left"], outcomes.second_wins["right"]
        # Left wins whoever starts: Left to move wins (not left) and Right to move loses (right).
        for player, wins in (("Left", ~left & right), ("Right", left & ~right)):
            settled = least_period(wins, proven)
            if settled.period == 1 and wins[settled.start]:
                always_wins = (player, settled.start)
    return EventualPeriods(periods, always_wins)


def eventual_periods_of_game(game, limit: int, backend: str | None = None) -> tuple[EventualPeriods | None, int]:
    """:func:`eventual_periods` of a game from as few pile sizes as will do, at most ``limit``.

    Tries :data:`FIRST_TRY` pile sizes, then doubles, so a short period is
    found quickly however large ``limit`` is.

    Returns
    -------
    (EventualPeriods or None, int)
        The periods (None if no period is proven below ``limit``) and how many
        pile sizes were computed for it.
    """
    from . import compute

    count = min(limit, FIRST_TRY)
    while True:
        periods = eventual_periods(compute(game, count, backend=backend, states=True))
        if periods is not None or count >= limit:
            return periods, count
        count = min(limit, 2 * count)
