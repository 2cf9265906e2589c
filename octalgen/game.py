"""Octal games as immutable values, parsed from codes, names or subtraction sets.

An octal code ``d0.d1d2d3...`` lists, for every count k of beans removed,
what the heap may be left as.  Digit ``dk`` (k >= 1) is a sum of

* 1: the whole heap of exactly k beans may be taken, leaving nothing;
* 2: k beans may be taken from a larger heap, leaving one heap;
* 4: k beans may be taken, leaving two non-empty heaps.

The whole-number digit ``d0`` is 0 or 4; 4 means a heap may be split into two
non-empty heaps without removing anything.  ``.6`` (Officers) therefore means:
remove one bean and leave the rest as one heap or two.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from .errors import GameCodeError

__all__ = [
    "ACCEPTED_FORMS",
    "LEAVE_NONE",
    "LEAVE_ONE",
    "LEAVE_TWO",
    "NAMED_GAMES",
    "OctalGame",
    "parse_game",
    "subtraction_game",
]

#: Names accepted wherever a code is, with their octal codes.
NAMED_GAMES = {
    "officers": ".6",
    "kayles": ".77",
    "dawsons-kayles": ".07",
    "dawsons-chess": ".137",
    "guiles": ".15",
    "treblecross": ".007",
}

ACCEPTED_FORMS = (
    "expected an octal code like .6, 0.77 or 4.07 (whole digit 0 or 4, then digits 0-7), "
    "a name (" + ", ".join(NAMED_GAMES) + ") or a subtraction set like S(1,2)"
)

# Bits of an octal digit.
LEAVE_NONE = 1
LEAVE_ONE = 2
LEAVE_TWO = 4

_SUBTRACTION = re.compile(r"^[sS]\((.*)\)$")

#: Text that is meant as a game's name rather than a code.
_NAME_LIKE = re.compile(r"[A-Za-z][A-Za-z' _-]*")


@dataclass(frozen=True)
class OctalGame:
    """An octal game, identified by its digits.

    Parameters
    ----------
    digits : tuple of int
        ``digits[0]`` is the whole-number digit (0 or 4), ``digits[k]`` for
        k >= 1 the rules for removing k beans.  Trailing zeros are not stored,
        so equal games compare equal; build games with :func:`parse_game`.
    """

    digits: tuple[int, ...]

    def __post_init__(self):
        digits = tuple(self.digits)
        if not digits:
            digits = (0,)
        if digits[0] not in (0, 4):
            raise GameCodeError(f"whole-number digit {digits[0]} is not 0 or 4; {ACCEPTED_FORMS}")
        for digit in digits[1:]:
            if not 0 <= digit <= 7:
                raise GameCodeError(f"digit {digit} is not an octal digit; {ACCEPTED_FORMS}")
        while len(digits) > 1 and digits[-1] == 0:
            digits = digits[:-1]
        object.__setattr__(self, "digits", digits)

    @property
    def code(self) -> str:
        """The canonical code: ``.6`` for Officers, ``4.07``; ``.0`` for the game with no moves."""
        whole = "4" if self.digits[0] == 4 else ""
        fraction = "".join(str(d) for d in self.digits[1:]) or "0"
        return f"{whole}.{fraction}"

    @property
    def max_take(self) -> int:
        """The largest number of beans a move removes (t in the Guy–Smith theorem)."""
        return len(self.digits) - 1

    @property
    def take_parity(self) -> int | None:
        """The parity of the beans every two-heap move takes, or None when they differ or there is
        no two-heap move: rarity may count a heap's parity (positional rarity,
        :class:`~octalgen.sparse.Rarity`) only when it is defined."""
        parities = {k % 2 for k, _none, _one, two in self.moves() if two}
        return parities.pop() if len(parities) == 1 else None

    @property
    def name(self) -> str | None:
        """The game's common name, if it has one in :data:`NAMED_GAMES`."""
        for name, code in NAMED_GAMES.items():
            if code == self.code:
                return name
        return None

    def digit(self, k: int) -> int:
        """The digit for removing ``k`` beans (0 beyond the last digit)."""
        return self.digits[k] if k < len(self.digits) else 0

    def moves(self):
        """Yield ``(k, leave_none, leave_one, leave_two)`` for every k with a legal move."""
        for k, d in enumerate(self.digits):
            if d:
                yield k, bool(d & LEAVE_NONE), bool(d & LEAVE_ONE), bool(d & LEAVE_TWO)

    def describe(self) -> list[str]:
        """The moves in words, one line per number of beans removed."""
        lines = []
        for k, none, one, two in self.moves():
            if k == 0:
                lines.append("split a heap into two non-empty heaps without removing any bean")
                continue
            beans = "1 bean" if k == 1 else f"{k} beans"
            leaves = []
            if none:
                leaves.append(f"nothing (a heap of exactly {k})")
            if one:
                leaves.append("one heap")
            if two:
                leaves.append("two non-empty heaps")
            lines.append(f"remove {beans}, leaving " + " or ".join(leaves))
        return lines or ["no moves at all (every value is 0)"]

    def __str__(self) -> str:
        return self.code


def parse_game(text: str) -> OctalGame:
    """Parse an octal code, a game name or a subtraction set ``S(a,b,...)``.

    Parameters
    ----------
    text : str
        ``.6``, ``0.6``, ``4.07``, ``officers``, ``S(1,5,8,10)``...

    Returns
    -------
    OctalGame

    Raises
    ------
    GameCodeError
        With a message naming the offending character and the accepted forms.
    """
    if isinstance(text, OctalGame):
        return text
    raw = text
    text = text.strip()
    if not text:
        raise GameCodeError(f"empty game code; {ACCEPTED_FORMS}")
    if text.lower() in NAMED_GAMES:
        text = NAMED_GAMES[text.lower()]
    elif _NAME_LIKE.fullmatch(text):
        meant = difflib.get_close_matches(text.lower(), NAMED_GAMES, n=1, cutoff=0.6)
        if meant:
            raise GameCodeError(f"no game is named {raw!r}: did you mean {meant[0]}?")
    match = _SUBTRACTION.match(text)
    if match:
        return _parse_subtraction(raw, match.group(1))
    if text.count(".") != 1:
        problem = "has no point" if "." not in text else "has more than one point"
        bad = next((c for c in text if c not in "01234567."), None)
        if bad is not None:
            problem = f"has the bad character {bad!r}"
            if _NAME_LIKE.fullmatch(text):
                problem = f"is neither a code nor a name octalgen knows (bad character {bad!r})"
        raise GameCodeError(f"bad game code {raw!r}: it {problem}; {ACCEPTED_FORMS}")
    whole, fraction = text.split(".")
    if whole not in ("", "0", "4"):
        bad = next((c for c in whole if c not in "04"), whole[0])
        raise GameCodeError(
            f"bad game code {raw!r}: the whole-number part {whole!r} must be empty, 0 or 4 "
            f"(bad character {bad!r}); {ACCEPTED_FORMS}"
        )
    if not fraction:
        raise GameCodeError(f"bad game code {raw!r}: no digits after the point; {ACCEPTED_FORMS}")
    for position, char in enumerate(fraction, start=len(whole) + 2):
        if char not in "01234567":
            raise GameCodeError(
                f"bad game code {raw!r}: {char!r} at position {position} is not an octal digit; {ACCEPTED_FORMS}"
            )
    return OctalGame((4 if whole == "4" else 0, *tuple(int(c) for c in fraction)))


def _parse_subtraction(raw: str, inner: str) -> OctalGame:
    parts = [p.strip() for p in inner.split(",")]
    if parts == [""]:
        raise GameCodeError(f"bad subtraction set {raw!r}: it is empty; expected S(a,b,...) with counts >= 1")
    counts = []
    for part in parts:
        if not part.isdigit():
            bad = next((c for c in part if not c.isdigit()), "") or "an empty entry"
            raise GameCodeError(
                f"bad subtraction set {raw!r}: {bad!r} is not a count; expected S(a,b,...) with counts >= 1"
            )
        count = int(part)
        if count < 1:
            raise GameCodeError(f"bad subtraction set {raw!r}: count {count} must be at least 1")
        counts.append(count)
    return subtraction_game(counts)


def subtraction_game(counts) -> OctalGame:
    """The octal game ``S(counts)``: remove exactly one of ``counts``, leaving at most one heap.

    Each count k gets digit 3 (take a whole heap of k, or k from a larger heap).
    """
    counts = sorted(set(counts))
    if not counts or counts[0] < 1:
        raise GameCodeError("a subtraction set needs counts of at least 1")
    digits = [0] * (counts[-1] + 1)
    for count in counts:
        digits[count] = LEAVE_NONE | LEAVE_ONE
    return OctalGame(tuple(digits))
