"""Pick-up-stones games (Fisher's paper, seed 001) as immutable values.

Two players take turns removing stones from one pile; each move removes exactly
one of the counts the rules allow, never more stones than are left; a player
who cannot move loses.  Three rule sets:

:class:`Classic`
    One set S of removal counts for both players.  The player to move at n
    stones loses (a *P-position*) exactly when no count s <= n in S leads to a
    P-position.  This is the octal subtraction game ``S(...)``: the player to
    move loses exactly when G(n) = 0.

:class:`NoRepeat` (memory k, Fisher's section 3 and its generalisation 3.5)
    One set S; a player may not remove a count that the opponent removed in
    any of the opponent's last k moves.

    *History.*  The rule speaks of the **opponent's** moves only: your own
    earlier moves never restrict you.  (Another reading, "none of the last k
    moves of the game, whoever made them", agrees for k = 1, the case the
    paper works out, and differs for k >= 2; we follow the rule's own words.)
    When the opponent has made fewer than k moves (the start of a game) only
    the moves made restrict; at the start nothing does.  After the player to
    move removes s, the opponent is restricted by
    s and the mover's k - 1 moves before it, so a state must also remember
    the mover's own last k - 1 moves: a state is ``(pile, history)`` where
    ``history`` is the last ``2k - 1`` moves of the game, most recent first
    (fewer at the start of a game).  Its even entries (0, 2, ...) are the
    opponent's moves, its odd entries the mover's own.

    *Reachable histories* are those some game can produce: every recorded move
    avoids the other player's moves recorded before it within k of that
    player's moves.  A game that starts with ``n + sum(history)`` stones and
    plays the history from its oldest move produces any of them at any pile
    size n, so the set does not depend on n (:meth:`NoRepeat.histories`).

    *Safe* (the paper's definition): n is safe when the player to move loses
    at (n, h) for **every** reachable history h, including the short ones of a
    game that has just begun, i.e. the second player wins whatever the
    previous moves were.  For k = 1 counting the empty history changes
    nothing (the mover who loses after every previous move also loses at the
    start: each of his moves s is also available after some previous move
    t != s, and leads to the same state (n - s, (s,))), so the definition is
    exactly the paper's matrix with one row per previous move; with
    S = {1, 2, 3, 4, 5} the safe positions are n = 0 and 7 (mod 13), the
    paper's theorem A.1.

    Counts k >= |S| are refused, as in the paper: the opponent's last |S|
    moves can cover S and leave no legal move at all.

:class:`Asymmetric` (Fisher's section 4)
    Left and Right each have their own set; the player to move uses their own
    set.  Results are given for each player moving first.

Bad rules (an empty set, counts below 1, a count twice, k out of range) raise
:class:`StonesRuleError`, an :class:`~octalgen.errors.InputError`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar

from ..errors import InputError

__all__ = ["StonesRuleError", "Classic", "NoRepeat", "Asymmetric", "StonesGame", "parse_moves", "describe_moves"]


class StonesRuleError(InputError):
    """Rules of a pick-up-stones game that make no game: bad move sets or memory."""


def parse_moves(text: str, what: str = "move set") -> tuple[int, ...]:
    """Parse a comma-separated list of removal counts such as ``"1,5,8,10"``.

    Only the syntax is checked here; the game classes check the counts.

    Raises
    ------
    StonesRuleError
        For an entry that is not a whole number (one line naming it).
    """
    entries = [part.strip() for part in str(text).split(",")]
    if entries == [""]:
        raise StonesRuleError(f"the {what} is empty; expected counts like 1,5,8,10")
    counts = []
    for entry in entries:
        try:
            counts.append(int(entry))
        except ValueError:
            shown = repr(entry) if entry else "an empty entry"
            raise StonesRuleError(
                f"bad {what} {text!r}: {shown} is not a whole number; expected counts like 1,5,8,10"
            ) from None
    return tuple(counts)


def describe_moves(moves) -> str:
    """``{1, 5, 8, 10}``: a move set as written in the paper."""
    return "{" + ", ".join(map(str, moves)) + "}"


def _checked_moves(moves, what: str) -> tuple[int, ...]:
    """The counts of a move set, sorted, after checking that they make a set of positive counts."""
    counts = tuple(int(m) for m in moves)
    shown = ",".join(map(str, counts))
    if not counts:
        raise StonesRuleError(f"the {what} is empty; a game needs at least one count")
    for count in counts:
        if count < 1:
            raise StonesRuleError(f"bad {what} {shown}: count {count} is not positive (counts are at least 1)")
    for count in counts:
        if counts.count(count) > 1:
            raise StonesRuleError(f"bad {what} {shown}: count {count} appears more than once")
    return tuple(sorted(counts))


@dataclass(frozen=True)
class Classic:
    """The classic game: both players remove one of ``moves``.

    Parameters
    ----------
    moves : sequence of int
        Distinct positive counts (stored sorted).
    """

    moves: tuple[int, ...]
    rule: ClassVar[str] = "classic"
    #: Names of the outcome sequences (see :class:`~octalgen.stones.outcomes.Outcomes`).
    channels: ClassVar[tuple[str, ...]] = ("mover",)

    def __post_init__(self):
        object.__setattr__(self, "moves", _checked_moves(self.moves, "move set"))

    @property
    def reach(self) -> int:
        """How many earlier pile sizes an outcome depends on (the largest count)."""
        return self.moves[-1]

    def describe(self) -> str:
        return f"classic game, S = {describe_moves(self.moves)}"

    def options(self) -> dict[str, str]:
        """The rules as ``key: value`` pairs (for provenance headers)."""
        return {"rule": self.rule, "moves": ",".join(map(str, self.moves))}


@dataclass(frozen=True)
class NoRepeat:
    """The no-repeat game: nobody may remove a count from the opponent's last ``memory`` moves.

    Parameters
    ----------
    moves : sequence of int
        Distinct positive counts (stored sorted).
    memory : int
        k, how many of the opponent's moves are remembered: 1 <= k < len(moves).

    See the module docstring for the exact state and the definition of *safe*.
    """

    moves: tuple[int, ...]
    memory: int = 1
    rule: ClassVar[str] = "no-repeat"
    channels: ClassVar[tuple[str, ...]] = ("safe",)

    def __post_init__(self):
        moves = _checked_moves(self.moves, "move set")
        object.__setattr__(self, "moves", moves)
        memory = self.memory
        if not isinstance(memory, int) or memory < 1:
            raise StonesRuleError(f"memory {memory!r} must be a whole number of at least 1")
        if memory >= len(moves):
            raise StonesRuleError(
                f"memory {memory} must be less than the number of counts ({len(moves)}): "
                f"with k >= |S| the opponent's last k moves can forbid every count"
            )

    @property
    def reach(self) -> int:
        return self.moves[-1]

    @property
    def history_length(self) -> int:
        """How many recent moves a state records: the opponent's k and the mover's k - 1."""
        return 2 * self.memory - 1

    def forbidden(self, history: tuple[int, ...]) -> frozenset[int]:
        """The counts the player to move may not remove: the opponent's last k moves in ``history``."""
        return frozenset(history[0 : self.history_length : 2])

    def legal(self, history: tuple[int, ...]) -> tuple[int, ...]:
        """The counts the rule allows after ``history`` (ignoring the pile size)."""
        forbidden = self.forbidden(history)
        return tuple(move for move in self.moves if move not in forbidden)

    def after(self, history: tuple[int, ...], move: int) -> tuple[int, ...]:
        """The history the opponent faces after the player to move removes ``move``."""
        return ((move,) + tuple(history))[: self.history_length]

    @cached_property
    def histories(self) -> tuple[tuple[int, ...], ...]:
        """Every reachable history, shortest first, then in increasing order.

        The closure of the empty history (the start of a game) under legal
        moves; pile sizes play no part (see the module docstring).
        """
        seen = {()}
        frontier = [()]
        while frontier:
            history = frontier.pop()
            for move in self.legal(history):
                following = self.after(history, move)
                if following not in seen:
                    seen.add(following)
                    frontier.append(following)
        return tuple(sorted(seen, key=lambda h: (len(h), h)))

    def describe(self) -> str:
        return f"no-repeat game, S = {describe_moves(self.moves)}, memory {self.memory}"

    def options(self) -> dict[str, str]:
        return {"rule": self.rule, "moves": ",".join(map(str, self.moves)), "memory": str(self.memory)}


@dataclass(frozen=True)
class Asymmetric:
    """The asymmetric game: Left removes one of ``left``, Right one of ``right``.

    Parameters
    ----------
    left, right : sequence of int
        Each a set of distinct positive counts (stored sorted).
    """

    left: tuple[int, ...]
    right: tuple[int, ...]
    rule: ClassVar[str] = "asymmetric"
    channels: ClassVar[tuple[str, ...]] = ("left", "right")  # who moves first

    def __post_init__(self):
        object.__setattr__(self, "left", _checked_moves(self.left, "move set of Left"))
        object.__setattr__(self, "right", _checked_moves(self.right, "move set of Right"))

    @property
    def reach(self) -> int:
        return max(self.left[-1], self.right[-1])

    def describe(self) -> str:
        return f"asymmetric game, S_L = {describe_moves(self.left)}, S_R = {describe_moves(self.right)}"

    def options(self) -> dict[str, str]:
        return {"rule": self.rule, "left": ",".join(map(str, self.left)), "right": ",".join(map(str, self.right))}


#: Any of the three rule sets.
StonesGame = Classic | NoRepeat | Asymmetric
