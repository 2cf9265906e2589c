"""Periods of nim-sequences and the Guy–Smith periodicity theorem.

Guy–Smith: in an octal game whose last non-zero digit is digit t, if
G(n + p) = G(n) for all n with i <= n < 2i + p + t, then G(n + p) = G(n) for
all n >= i.  So the values G(0) ... G(2i + 2p + t - 1) prove the period p
with preperiod i.

:func:`search_periods` finds the least period and preperiod that a prefix G(0) ... G(N-1)
proves this way, by comparing values directly (no hash, no anchors), and otherwise the
repetitions that are on their way to a proof.
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources

import numpy as np

from .game import OctalGame, parse_game

__all__ = [
    "SEARCH_BLOCK",
    "SEARCH_WINDOW",
    "PeriodSearch",
    "Repetition",
    "SolvedGame",
    "is_proven_period",
    "last_mismatch",
    "least_preperiod",
    "prime_factors",
    "proof_length",
    "search_periods",
    "solved_games",
]


def proof_length(period: int, preperiod: int, max_take: int) -> int:
    """How many values (G(0) ... G(L-1)) the Guy–Smith theorem needs: L = 2i + 2p + t."""
    return 2 * preperiod + 2 * period + max_take


def least_preperiod(values, period: int) -> int:
    """The least i with values[n + p] == values[n] for every n >= i inside ``values``."""
    values = np.asarray(values)
    mismatch = np.flatnonzero(values[period:] != values[:-period]) if period < len(values) else np.zeros(0, np.intp)
    return int(mismatch[-1]) + 1 if len(mismatch) else 0


def is_proven_period(values, game, period: int, preperiod: int) -> bool:
    """True when ``values`` (a prefix from G(0)) prove period and preperiod by Guy–Smith.

    Both must also be least: G(i - 1 + p) != G(i - 1), and no p/q for a prime
    q dividing p repeats over a whole period from i (the least period of an
    eventually periodic sequence divides every period).
    """
    game = parse_game(game)
    values = np.asarray(values)
    need = proof_length(period, preperiod, game.max_take)
    if period < 1 or len(values) < need:
        return False
    window = values[:need]
    if least_preperiod(window, period) != preperiod:
        return False
    one_period = window[preperiod : preperiod + period]
    for q in prime_factors(period):
        shorter = period // q
        if np.array_equal(window[preperiod + shorter : preperiod + shorter + period], one_period):
            return False
    return True


#: W of the direct search: p is tried only when the last W values recur p values earlier.
SEARCH_WINDOW = 64

#: Periods whose windows are compared per read in the direct search (bounds its memory).
SEARCH_BLOCK = 1 << 20

#: Values compared by the first read of a backward scan; each further read is four times longer, up to the last.
FIRST_SCAN, LONGEST_SCAN = 1 << 12, 1 << 21

#: ``read(start, stop)`` -> G(start) ... G(stop-1), a NumPy array.
Reader = Callable[[int, int], np.ndarray]


@dataclass(frozen=True)
class Repetition:
    """G(n + period) = G(n) for preperiod <= n < N - period, and not at n = preperiod - 1.

    ``proof_length`` is what the Guy–Smith theorem needs to prove it for every n
    (:func:`proof_length`); the repetition is a proven period once N reaches it.
    """

    period: int
    preperiod: int
    proof_length: int


@dataclass(frozen=True)
class PeriodSearch:
    """What :func:`search_periods` found in G(0) ... G(N-1).

    Attributes
    ----------
    proven : Repetition or None
        The least period with its least preperiod, when the N values prove it.
    candidates : tuple of Repetition
        Otherwise the shortest repetitions that already hold over at least half the values
        their proof needs (none a multiple of another), least period first.
    """

    proven: Repetition | None
    candidates: tuple[Repetition, ...] = ()


def last_mismatch(read: Reader, period: int, lo: int, hi: int) -> int | None:
    """The largest n with lo <= n < hi and G(n) != G(n + period), or None.

    Reads backwards from ``hi`` in growing blocks, so a mismatch near ``hi`` costs little.
    """
    size = FIRST_SCAN
    while hi > lo:
        start = max(lo, hi - size)
        differ = np.flatnonzero(read(start, hi) != read(start + period, hi + period))
        if len(differ):
            return start + int(differ[-1])
        hi, size = start, min(4 * size, LONGEST_SCAN)
    return None


def search_periods(read: Reader, length: int, max_take: int, max_candidates: int = 4) -> PeriodSearch:
    """The least period and least preperiod that G(0) ... G(length-1) prove, by direct comparison.

    For each period p the least preperiod a(p) over these values is one past the last n with
    G(n) != G(n + p); p is proven once ``proof_length(p, a(p), max_take) <= length``.  The
    least such p is the least period of the game (its least period divides p and has the same
    least preperiod, so it is proven too), and a(p) its least preperiod.

    Work is bounded by three observations.  A proven or half-proven p (``3 a(p) <= 2 length -
    3p - t``: the repetition already covers half of the a + p + t values the theorem asks it
    to cover) repeats over at least (length + t) / 3 values, so the last W of them recur p
    earlier: a vectorised compare of one window per p picks the periods worth scanning.  The
    scan for p goes backwards from the end and stops at the first difference, which for a
    chance recurrence is near the end.  And once p holds from a = a(p) with a + 3p <= length,
    a multiple q of p with a + q + p <= length cannot do better: were a(q) < a, then G(a - 1)
    = G(a - 1 + q) (period q) = G(a - 1 + q + p) (period p, from a) = G(a - 1 + p) (period q),
    yet G(a - 1) != G(a - 1 + p); so a(q) >= a, and q is no nearer a proof than p.

    Parameters
    ----------
    read : callable
        ``read(start, stop)`` -> G(start) ... G(stop-1) (stop <= length).
    length : int
        N: the values G(0) ... G(N-1) at hand.
    max_take : int
        t of the Guy–Smith theorem (the game's largest take).
    max_candidates : int
        How many unproven repetitions to return at most.

    Returns
    -------
    PeriodSearch
    """
    longest = (2 * length - max_take) // 3  # the longest p that can be half-proven (a(p) = 0)
    if longest < 1:
        return PeriodSearch(None)
    window = max(1, min(SEARCH_WINDOW, (length + max_take) // 3))
    tail = read(length - window, length)
    periodic_tails: list[tuple[int, int]] = []  # (p, a(p)) with a(p) + 3p <= length: multiples are skipped
    candidates: list[Repetition] = []
    for first in range(1, longest + 1, SEARCH_BLOCK):
        periods = _window_recurrences(read, length, tail, first, min(longest, first + SEARCH_BLOCK - 1), periodic_tails)
        while len(periods):
            period, periods = int(periods[0]), periods[1:]
            half_proven_from = (2 * length - 3 * period - max_take) // 3  # a(p) at most this: half-proven
            last = last_mismatch(read, period, half_proven_from, length - period)
            if last is None:
                last = last_mismatch(read, period, 0, half_proven_from)
            preperiod = 0 if last is None else last + 1
            if preperiod + 3 * period <= length:
                periodic_tails.append((period, preperiod))
                periods = _without_multiples(periods, period, preperiod, length)
            if preperiod > half_proven_from:
                continue
            found = Repetition(period, preperiod, proof_length(period, preperiod, max_take))
            if found.proof_length <= length:
                return PeriodSearch(found)
            if len(candidates) < max_candidates and not any(period % c.period == 0 for c in candidates):
                candidates.append(found)
    return PeriodSearch(None, tuple(candidates))


def _window_recurrences(
    read: Reader, length: int, tail: np.ndarray, first: int, last: int, periodic_tails: list[tuple[int, int]]
) -> np.ndarray:
    """Every p in [first, last], ascending, with G(n - p) = G(n) for the last len(tail) heaps n.

    Multiples that ``periodic_tails`` rule out are dropped after the first compare, so that a
    periodic tail of small period does not leave every multiple to compare W times.
    """
    window = len(tail)
    base = length - window - last
    segment = read(base, length - first)  # G(length - window - p) ... G(length - 1 - p) for every p here
    # The last value first, as one contiguous compare (reversed, so index 0 is p = first).
    periods = first + np.flatnonzero(segment[window - 1 :][::-1] == tail[-1])
    for period, preperiod in periodic_tails:
        periods = _without_multiples(periods, period, preperiod, length)
    for back in range(2, window + 1):
        if not len(periods):
            break
        periods = periods[segment[length - back - periods - base] == tail[-back]]
    return periods


def _without_multiples(periods: np.ndarray, period: int, preperiod: int, length: int) -> np.ndarray:
    """``periods`` less the multiples q of ``period`` with preperiod + q + period <= length (see search_periods)."""
    return periods[(periods % period != 0) | (periods > length - preperiod - period)]


def prime_factors(n: int) -> list[int]:
    """The distinct prime factors of ``n``, ascending."""
    factors, d = [], 2
    while d * d <= n:
        if n % d == 0:
            factors.append(d)
            while n % d == 0:
                n //= d
        d += 1
    if n > 1:
        factors.append(n)
    return factors


@dataclass(frozen=True)
class SolvedGame:
    """A row of the packaged table of solved games (from OEIS and published tables)."""

    game: OctalGame
    period: int
    preperiod: int
    max_value: int


def solved_games() -> dict[OctalGame, SolvedGame]:
    """The packaged table of solved octal games, keyed by game."""
    text = (resources.files("octalgen") / "data" / "solved-games.tsv").read_text()
    rows = csv.DictReader((line for line in text.splitlines() if not line.startswith("#")), delimiter="\t")
    result = {}
    for row in rows:
        game = parse_game(row["code"])
        result[game] = SolvedGame(game, int(row["period"]), int(row["preperiod"]), int(row["max_value"]))
    return result
