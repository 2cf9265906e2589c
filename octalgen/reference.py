"""The exact reference: Grundy values by definition and by the rare-value algorithm.

Every backend of octalgen is tested against this module, so it is written to
be obviously right first and fast second.

* :func:`naive_values` is the definition: G(n) is the mex of the values of all
  options of a heap of n.
* :class:`ExactSolver` (and :func:`exact_values`) is the rare-value algorithm of
  Berlekamp, Conway and Guy (Grossman's Figure 2) for any octal code: a
  candidate from the options that involve a rare position, then a proof scan
  over all options until every rare value below the candidate is excluded.

A value v is *rare* for a mask m when ``popcount(v & m)`` is even, *common*
otherwise.  Because ``common ^ common`` is rare, a common-valued option always
involves a heap of rare value; that is the whole trick.  With positional rarity
(:class:`~octalgen.sparse.Rarity`: v rare at heap n when ``popcount(v & m) + n +
t`` is even) the same holds for the options of heap n, whose rare/common test
then depends on n.  The solver is exact for every mask and either kind: a bad
one only makes it slower.

Values are Python ints or int64 numpy arrays: no storage narrower than that is
used here, so nothing is truncated.
"""

from __future__ import annotations

import bisect

import numpy as np

from .game import OctalGame, parse_game
from .sparse import Rarity, find_rare_space

__all__ = ["ExactSolver", "exact_values", "mex", "naive_values", "options"]


def options(game: OctalGame, n: int, values) -> list[int]:
    """The values of all options of a heap of ``n`` beans.

    Parameters
    ----------
    game : OctalGame
    n : int
        Heap size.
    values : sequence of int
        G(0) ... G(n-1).
    """
    result = []
    for k, leave_none, leave_one, leave_two in game.moves():
        rest = n - k  # beans left after removing k
        if leave_none and k >= 1 and rest == 0:
            result.append(0)
        if leave_one and k >= 1 and rest >= 1:
            result.append(values[rest])
        if leave_two:
            for a in range(1, rest // 2 + 1):
                result.append(values[a] ^ values[rest - a])
    return result


def mex(values) -> int:
    """The least non-negative integer not in ``values``."""
    present = set(values)
    m = 0
    while m in present:
        m += 1
    return m


def naive_values(game, count: int) -> list[int]:
    """G(0) ... G(count-1) by the definition, in O(count^2).

    Parameters
    ----------
    game : OctalGame or str
    count : int
    """
    game = parse_game(game)
    values: list[int] = []
    for n in range(count):
        values.append(mex(options(game, n, values)))
    return values


def exact_values(game, count: int, *, mask: int | None = None, parity: int | None = None) -> np.ndarray:
    """G(0) ... G(count-1) by the rare-value algorithm, as an int64 array.

    Parameters
    ----------
    game : OctalGame or str
    count : int
    mask : int, optional
        The rare mask; found from the values as they are computed when omitted.
    parity : int, optional
        With ``mask``: positional rarity with this parity (see :class:`~octalgen.sparse.Rarity`).
    """
    solver = ExactSolver(parse_game(game), mask=mask, parity=parity)
    solver.extend(count)
    return solver.values


class ExactSolver:
    """Incremental rare-value algorithm for one octal game.

    Parameters
    ----------
    game : OctalGame
    mask : int, optional
        Rare mask to use.  When omitted the solver starts with mask 0 (every
        value rare: a plain mex over all options) and re-detects the mask, and
        whether rarity depends on the heap's parity, from the values found so
        far at 1024, 4096, 16384 and 65536 values.
    values : sequence of int, optional
        A prefix G(0) ... G(len-1) already known exactly, to continue from.
    parity : int, optional
        With ``mask``: positional rarity with this parity (the game's take parity).

    Attributes
    ----------
    values : numpy.ndarray
        G(0) ... G(n-1), int64, for the n computed so far.
    rarity : Rarity
        The rare mask (and parity) in use.
    rare_positions : list of int
        Positions of the rare values among ``values`` (rare at their heap), ascending.
    """

    _REDETECT_AT = (1 << 10, 1 << 12, 1 << 14, 1 << 16)
    # Any mask that makes most values common speeds the solver up (correctness
    # never depends on it), so it accepts masks a table would call not sparse.
    _ADAPTIVE_TAIL_FRACTION = 0.25
    _FIRST_CHUNK = 256
    _MAX_CHUNK = 1 << 16

    def __init__(self, game: OctalGame, mask: int | None = None, values=(), parity: int | None = None):
        self.game = game
        self._adaptive = mask is None
        self.rarity = Rarity(0) if mask is None else Rarity(int(mask), parity)
        self._buffer = np.zeros(max(1024, 2 * len(values)), dtype=np.int64)
        self._buffer[: len(values)] = values
        self._count = len(values)
        if self._adaptive and self._count:
            self.rarity = self._detect()
        self._reclassify()
        self._moves = list(game.moves())

    @property
    def mask(self) -> int:
        return self.rarity.mask

    def _detect(self) -> Rarity:
        return find_rare_space(self.values, self.game.take_parity, tail_fraction=self._ADAPTIVE_TAIL_FRACTION)

    @property
    def values(self) -> np.ndarray:
        return self._buffer[: self._count]

    def __len__(self) -> int:
        return self._count

    def extend(self, count: int) -> np.ndarray:
        """Compute values up to (not including) heap size ``count``; return all values."""
        if count > len(self._buffer):
            grown = np.zeros(max(count, 2 * len(self._buffer)), dtype=np.int64)
            grown[: self._count] = self.values
            self._buffer = grown
        while self._count < count:
            n = self._count
            if self._adaptive and n in self._REDETECT_AT:
                rarity = self._detect()
                if rarity != self.rarity:
                    self.rarity = rarity
                    self._reclassify()
            value = self._value_at(n)
            self._buffer[n] = value
            self._count += 1
            if self.rarity.is_rare(value, n):
                self.rare_positions.append(n)
                self._rare_pos: np.ndarray | None = None  # array view rebuilt on demand
        return self.values

    # -- internals -------------------------------------------------------

    def _reclassify(self):
        self.rare_positions = [int(p) for p in np.flatnonzero(self.rarity.rare_flags(self.values, 0))]
        self._rare_pos = None
        self._common_tables = [np.zeros(0, dtype=bool), np.zeros(0, dtype=bool)]

    def _is_common_below(self, limit: int, n: int) -> np.ndarray:
        """Boolean array: is v common at heap n, for v in [0, limit)."""
        heap_class = self.rarity.heap_class(n)  # v is common at n when popcount(v & mask) + class is odd
        table = self._common_tables[heap_class]
        if len(table) < limit:
            size = max(limit, 2 * len(table), 1024)
            table = (np.bitwise_count(np.arange(size, dtype=np.int64) & self.mask) + heap_class) % 2 == 1
            self._common_tables[heap_class] = table
        return table[:limit]

    def _value_at(self, n: int) -> int:
        if self.mask == 0:
            return self._mex_of_all_options(n)
        G = self._buffer
        if self._rare_pos is None:
            self._rare_pos = np.array(self.rare_positions, dtype=np.int64)
        rare_pos = self._rare_pos

        # 1. The options that involve a heap at a rare position p, G(p) ^ G(rest - p), and the
        #    one-heap options (and 0, the option of taking a whole heap): every common option at n
        #    is among them (common = rare ^ common).
        parts = []
        first_split = bisect.bisect_left(self.rare_positions, 1)
        for k, leave_none, leave_one, leave_two in self._moves:
            rest = n - k
            if leave_none and k >= 1 and rest == 0:
                parts.append(np.zeros(1, np.int64))
            if leave_one and k >= 1 and rest >= 1:
                parts.append(G[rest : rest + 1])
            if leave_two and rest >= 2:
                p = rare_pos[first_split : bisect.bisect_right(self.rare_positions, rest - 1)]
                parts.append(G[p] ^ G[rest - p])
        rare_options = np.concatenate(parts) if parts else np.zeros(0, np.int64)
        common = (np.bitwise_count(rare_options & self.mask) + self.rarity.heap_class(n)) % 2 == 1  # at heap n
        common_options = rare_options[common]

        # Candidate: the least common value that is not an option.
        size = int(common_options.max()) + 2 if len(common_options) else 2
        taken = np.zeros(size, dtype=bool)
        taken[common_options] = True
        free_common = np.flatnonzero(self._is_common_below(size, n) & ~taken)
        candidate = int(free_common[0]) if len(free_common) else self._next_common(size, n)

        # 2. Every rare value below the candidate must be an option.
        seen = np.zeros(candidate, dtype=bool)
        seen[rare_options[~common & (rare_options < candidate)]] = True
        missing = np.flatnonzero(~self._is_common_below(candidate, n) & ~seen)
        if len(missing) == 0:
            return candidate
        missing = self._scan_pairs(n, candidate, seen, missing)
        # Whatever rare value stays unexcluded after every option is the mex.
        return int(missing[0]) if len(missing) else candidate

    def _scan_pairs(self, n, candidate, seen, missing):
        """Mark options G(a) ^ G(rest - a) in growing chunks until ``missing`` is covered."""
        G = self._buffer
        for k, _none, _one, leave_two in self._moves:
            if not leave_two:
                continue
            rest = n - k
            a = 1
            chunk = self._FIRST_CHUNK
            while a <= rest // 2:
                b = min(rest // 2 + 1, a + chunk)
                opts = G[a:b] ^ G[rest - b + 1 : rest - a + 1][::-1]
                seen[opts[opts < candidate]] = True
                missing = missing[~seen[missing]]
                if len(missing) == 0:
                    return missing
                a = b
                chunk = min(2 * chunk, self._MAX_CHUNK)
        return missing

    def _next_common(self, start: int, n: int) -> int:
        v = start
        while self.rarity.is_rare(v, n):
            v += 1
        return v

    def _mex_of_all_options(self, n: int) -> int:
        G = self._buffer
        parts = []
        for k, leave_none, leave_one, leave_two in self._moves:
            rest = n - k
            if leave_none and k >= 1 and rest == 0:
                parts.append(np.zeros(1, np.int64))
            if leave_one and k >= 1 and rest >= 1:
                parts.append(G[rest : rest + 1])
            if leave_two and rest >= 2:
                half = rest // 2
                parts.append(G[1 : half + 1] ^ G[rest - half : rest][::-1])
        if not parts:
            return 0
        opts = np.concatenate(parts)
        present = np.zeros(len(opts) + 1, dtype=bool)
        present[opts[opts <= len(opts)]] = True
        return int(np.argmin(present))
