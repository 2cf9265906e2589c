"""The plain-Python reference for pick-up stones: dynamic programming over (pile, history) states.

Written to be obviously right, not fast: every state is decided straight from
the rules in :mod:`octalgen.stones.rules`, from the pile sizes below it.  The
generated C (:mod:`octalgen.stones.ccode`) is tested against it.

The player to move at a state *loses* when every legal move leads to a state
where the opponent (then to move) does not lose; with no legal move this holds
trivially, so a player who cannot move loses.
"""

from __future__ import annotations

import numpy as np

from .outcomes import Outcomes
from .rules import Asymmetric, Classic, NoRepeat

__all__ = ["reference_outcomes"]


def reference_outcomes(game, count: int) -> Outcomes:
    """The outcomes of pile sizes 0 ... count-1, by dynamic programming.

    Parameters
    ----------
    game : Classic, NoRepeat or Asymmetric
    count : int

    Returns
    -------
    Outcomes
        With ``states`` filled in (for :class:`NoRepeat`, the loss of the
        player to move for every reachable history, in ``game.histories`` order).
    """
    if isinstance(game, Classic):
        loses = _classic_loses(game.moves, count)
        states = np.array(loses, dtype=bool).reshape(count, 1)
    elif isinstance(game, Asymmetric):
        left_loses, right_loses = _asymmetric_loses(game.left, game.right, count)
        states = np.array([left_loses, right_loses], dtype=bool).T.reshape(count, 2)
    elif isinstance(game, NoRepeat):
        states = _no_repeat_loses(game, count)
    else:
        raise TypeError(f"not a pick-up-stones game: {game!r}")
    return Outcomes.from_states(game, states)


def _classic_loses(moves, count: int) -> list[bool]:
    loses: list[bool] = []
    for n in range(count):
        loses.append(all(not loses[n - s] for s in moves if s <= n))
    return loses


def _asymmetric_loses(left, right, count: int) -> tuple[list[bool], list[bool]]:
    """Whether Left (resp. Right), to move at n stones, loses."""
    left_loses: list[bool] = []
    right_loses: list[bool] = []
    for n in range(count):
        # Left moves to n - s, where Right is to move; and the other way round.
        left_loses.append(all(not right_loses[n - s] for s in left if s <= n))
        right_loses.append(all(not left_loses[n - s] for s in right if s <= n))
    return left_loses, right_loses


def _no_repeat_loses(game: NoRepeat, count: int) -> np.ndarray:
    histories = game.histories
    loses: dict[tuple[int, tuple[int, ...]], bool] = {}
    for n in range(count):
        for history in histories:
            loses[n, history] = all(not loses[n - s, game.after(history, s)] for s in game.legal(history) if s <= n)
    states = np.zeros((count, len(histories)), dtype=bool)
    for n in range(count):
        states[n] = [loses[n, history] for history in histories]
    return states
