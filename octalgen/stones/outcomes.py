"""Who wins at each pile size: the result every pick-up-stones backend returns."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .rules import Asymmetric, Classic, NoRepeat

__all__ = ["Outcomes"]


@dataclass(frozen=True, eq=False)
class Outcomes:
    """Outcomes of pile sizes 0 ... count-1 of one game.

    Attributes
    ----------
    game : Classic, NoRepeat or Asymmetric
    second_wins : dict of str to numpy bool array
        One sequence per channel of ``game.channels`` (``mover``; ``safe``;
        ``left`` and ``right`` for who moves first): True where the second
        player wins, the paper's digit 2; False where the player to move wins
        (for ``safe``: wins after at least one history), digit 1.
    states : numpy bool array of shape (count, width), or None
        The whole state of each pile size, from which the following pile sizes
        follow: whether the player to move loses, for the one player
        (classic), for each player (asymmetric) or for each reachable history
        in ``game.histories`` order (no-repeat).  Periods are proven on it.
        None when the backend was not asked for it.
    """

    game: Classic | NoRepeat | Asymmetric
    second_wins: dict[str, np.ndarray]
    states: np.ndarray | None = None

    @classmethod
    def from_states(cls, game, states: np.ndarray) -> Outcomes:
        """The outcomes whose whole states are ``states`` (see the class attributes)."""
        states = np.asarray(states, dtype=bool)
        second_wins: dict[str, np.ndarray]
        if isinstance(game, NoRepeat):
            second_wins = {"safe": np.asarray(states.all(axis=1))}
        else:
            second_wins = {name: states[:, column] for column, name in enumerate(game.channels)}
        return cls(game, second_wins, states)

    @property
    def count(self) -> int:
        """How many pile sizes (0 ... count-1)."""
        return len(next(iter(self.second_wins.values())))

    def digits(self, channel: str | None = None) -> np.ndarray:
        """The paper's digits as uint8: 1 = the player to move wins, 2 = the other player wins.

        Parameters
        ----------
        channel : str, optional
            One of ``game.channels``; the first one by default.
        """
        channel = channel or self.game.channels[0]
        return self.second_wins[channel].astype(np.uint8) + 1
