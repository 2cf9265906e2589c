"""Periods of nim-sequences and the Guy–Smith periodicity theorem.

Guy–Smith: in an octal game whose last non-zero digit is digit t, if
G(n + p) = G(n) for all n with i <= n < 2i + p + t, then G(n + p) = G(n) for
all n >= i.  So the values G(0) ... G(2i + 2p + t - 1) prove the period p
with preperiod i.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from importlib import resources

import numpy as np

from .game import OctalGame, parse_game


def proof_length(period: int, preperiod: int, max_take: int) -> int:
    """How many values (G(0) ... G(L-1)) the Guy–Smith theorem needs: L = 2i + 2p + t."""
    return 2 * preperiod + 2 * period + max_take


def least_preperiod(values, period: int) -> int:
    """The least i with values[n + p] == values[n] for every n >= i inside ``values``."""
    values = np.asarray(values)
    mismatch = np.flatnonzero(values[period:] != values[:-period]) if period < len(values) else []
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
