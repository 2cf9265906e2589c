"""The plans of generated pick-up-stones C: every decision made in Python, placed by the templates.

Two kernels cover the three rule sets.

Shift-register kernel (``templates/stones/register.c.j2``), classic and asymmetric games
    One *channel* per player to move (one for the classic game; Left and
    Right for the asymmetric one), each a bitset: bit n = 1 when that player,
    to move at n stones, loses.  Each channel keeps a 64-bit register of its
    last 64 bits, the newest (n - 1) in bit 0, so bit ``s - 1`` holds pile
    size n - s.  The player loses at n exactly when no count s of theirs
    reaches a pile where the *opponent's* channel has a 1: one AND with a
    constant mask (:attr:`Channel.mask`, counts s <= 64), a compare and
    ``reg + reg + lose`` per pile size, a 3-cycle dependency chain.  After 64
    pile sizes the register, bit-reversed, is the next output word (bit i =
    pile 64w + i).  Counts above 64 are looked up a whole word at a time from
    the finished output (:attr:`Channel.far_moves`); windows wholly below
    pile 0 are zero (nobody can move to a negative pile), and the one zero
    word of :attr:`RegisterPlan.pad_words` before each channel serves windows
    across pile 0.

History kernel (``templates/stones/history.c.j2``), the no-repeat game
    The state of pile size n is a bit vector over the reachable histories
    (``game.histories`` order, :attr:`HistoryPlan.words` 64-bit words): bit h
    = 1 when the player to move at (n, h) loses.  Vectors of the last
    :attr:`HistoryPlan.ring` pile sizes are kept in a ring.  Each *edge* is
    one destination history d = (s, ...) with the source histories (of one
    word) whose move s leads to it; for every edge whose destination bit at
    pile n - s is 1, the sources have a winning move.  Edges are grouped by
    source word (:attr:`HistoryPlan.word_edges`), so each word of the new
    state is accumulated in a register; its complement is the new state, and
    n is safe when the new state is all ones.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import __version__
from ..errors import InputError
from .rules import Asymmetric, Classic, NoRepeat

__all__ = [
    "MAX_HISTORY_EDGES",
    "Channel",
    "Edge",
    "HistoryPlan",
    "RegisterPlan",
    "StonesTooLargeError",
    "make_stones_plan",
    "provenance",
]

#: Counts up to this are read from the 64-bit shift register; larger ones a word at a time.
REGISTER_REACH = 64

#: Largest no-repeat state graph (edges: destination state and source word) the C kernel accepts;
#: beyond it the per-pile work (and the generated tables) grow past any useful size.
MAX_HISTORY_EDGES = 1 << 16


class StonesTooLargeError(InputError):
    """Rules whose generated kernel would be unreasonably large (no-repeat with a long memory)."""


@dataclass(frozen=True)
class Channel:
    """One player to move, in the shift-register kernel.

    Attributes
    ----------
    name : str
        ``mover`` (classic), ``left`` or ``right`` (asymmetric).
    opponent : int
        Index of the channel the moves lead to (the other player; itself in the classic game).
    mask : int
        Register bits ``s - 1`` for this player's counts s <= 64.
    far_moves : tuple of int
        This player's counts above 64.
    """

    name: str
    opponent: int
    mask: int
    far_moves: tuple[int, ...]


@dataclass(frozen=True)
class RegisterPlan:
    """Plan of the shift-register kernel (classic and asymmetric games)."""

    game: Classic | Asymmetric
    channels: tuple[Channel, ...]
    template: str = "stones/register.c.j2"

    @property
    def pad_words(self) -> int:
        """Zero words before each output channel: one for windows across pile 0, when there are far moves."""
        return 1 if any(c.far_moves for c in self.channels) else 0

    def context(self) -> dict:
        return {"channels": self.channels, "pad_words": self.pad_words}

    def describe(self) -> str:
        far = sum(len(c.far_moves) for c in self.channels)
        return f"shift registers, {len(self.channels)} channel(s), {far} count(s) above {REGISTER_REACH}"


@dataclass(frozen=True)
class Edge:
    """One destination state of the no-repeat kernel and the sources that move to it.

    Attributes
    ----------
    move : int
        The count s removed: the destination is read at pile n - s.
    word, bit : int
        Where the destination history's bit is in a state vector.
    source_word : int
        The word of the source histories (an edge is split per word).
    source_mask : int
        The source histories in that word: those whose legal move s leads to the destination.
    """

    move: int
    word: int
    bit: int
    source_word: int
    source_mask: int


@dataclass(frozen=True)
class HistoryPlan:
    """Plan of the history kernel (no-repeat game)."""

    game: NoRepeat
    edges: tuple[Edge, ...]
    words: int
    full: tuple[int, ...]
    ring: int
    template: str = "stones/history.c.j2"

    @property
    def word_edges(self) -> tuple[int, ...]:
        """Edges of source word w are ``edges[word_edges[w]:word_edges[w + 1]]``."""
        bounds = [0] * (self.words + 1)
        for edge in self.edges:
            bounds[edge.source_word + 1] += 1
        for w in range(self.words):
            bounds[w + 1] += bounds[w]
        return tuple(bounds)

    def context(self) -> dict:
        return {
            "edges": self.edges,
            "word_edges": self.word_edges,
            "words": self.words,
            "full": self.full,
            "ring": self.ring,
        }

    def describe(self) -> str:
        states = len(self.game.histories)
        return f"{states} history states in {self.words} word(s), {len(self.edges)} edges, ring of {self.ring}"


def make_stones_plan(game) -> RegisterPlan | HistoryPlan:
    """The kernel plan of a pick-up-stones game.

    Raises
    ------
    StonesTooLargeError
        For a no-repeat game whose state graph exceeds :data:`MAX_HISTORY_EDGES`.
    """
    if isinstance(game, Classic):
        return RegisterPlan(game, (_channel("mover", 0, game.moves),))
    if isinstance(game, Asymmetric):
        # Left's moves lead to piles where Right is to move, and the other way round.
        return RegisterPlan(game, (_channel("left", 1, game.left), _channel("right", 0, game.right)))
    if isinstance(game, NoRepeat):
        return _history_plan(game)
    raise TypeError(f"not a pick-up-stones game: {game!r}")


def _channel(name: str, opponent: int, moves) -> Channel:
    mask = 0
    for s in moves:
        if s <= REGISTER_REACH:
            mask |= 1 << (s - 1)
    return Channel(name, opponent, mask, tuple(s for s in moves if s > REGISTER_REACH))


def _history_plan(game: NoRepeat) -> HistoryPlan:
    histories = game.histories
    index = {history: i for i, history in enumerate(histories)}
    sources: dict[tuple[int, ...], dict[int, int]] = {}  # destination -> word -> mask of sources
    for h, history in enumerate(histories):
        for move in game.legal(history):
            destination = game.after(history, move)
            words = sources.setdefault(destination, {})
            words[h // 64] = words.get(h // 64, 0) | 1 << (h % 64)
    edge_count = sum(len(words) for words in sources.values())
    if edge_count > MAX_HISTORY_EDGES:
        raise StonesTooLargeError(
            f"{game.describe()} has {len(histories)} reachable histories and {edge_count} edges, more than the "
            f"{MAX_HISTORY_EDGES} the generated kernel takes; use a smaller memory"
        )
    edges = tuple(
        sorted(
            (
                Edge(destination[0], index[destination] // 64, index[destination] % 64, word, mask)
                for destination in sorted(sources, key=index.__getitem__)
                for word, mask in sources[destination].items()
            ),
            key=lambda edge: edge.source_word,  # stable: destinations stay in order within a word
        )
    )
    word_count = -(-len(histories) // 64)
    full = tuple((1 << min(64, len(histories) - 64 * w)) - 1 for w in range(word_count))
    ring = 1 << game.reach.bit_length()  # a power of two above the largest count
    return HistoryPlan(game, edges, word_count, full, ring)


def provenance(plan) -> list[str]:
    """``key: value`` lines for the header of generated files (no timestamps)."""
    game = plan.game
    lines = [f"generator: octalgen {__version__}", f"game: {game.describe()}"]
    lines += [f"{key}: {value}" for key, value in game.options().items()]
    lines.append(f"kernel: {plan.describe()}")
    return lines
