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
involves a heap of rare value; that is the whole trick.  The solver is exact
for every mask: a bad mask only makes it slower.

Values are Python ints or int64 numpy arrays: no storage narrower than that is
used here, so nothing is truncated.
"""

from __future__ import annotations

import bisect

import numpy as np

from .game import OctalGame, parse_game
from .rare import find_rare_mask, is_rare

__all__ = ["options", "mex", "naive_values", "exact_values", "ExactSolver"]


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


def exact_values(game, count: int, *, mask: int | None = None) -> np.ndarray:
    """G(0) ... G(count-1) by the rare-value algorithm, as an int64 array.

    Parameters
    ----------
    game : OctalGame or str
    count : int
    mask : int, optional
        The rare mask; found from the values as they are computed when omitted.
    """
    solver = ExactSolver(parse_game(game), mask=mask)
    solver.extend(count)
    return solver.values


class ExactSolver:
    """Incremental rare-value algorithm for one octal game.

    Parameters
    ----------
    game : OctalGame
    mask : int, optional
        Rare mask to use.  When omitted the solver starts with mask 0 (every
        value rare: a plain mex over all options) and re-detects the mask from
        the values found so far at 1024, 4096, 16384 and 65536 values.
    values : sequence of int, optional
        A prefix G(0) ... G(len-1) already known exactly, to continue from.

    Attributes
    ----------
    values : numpy.ndarray
        G(0) ... G(n-1), int64, for the n computed so far.
    mask : int
        The rare mask in use.
    rare_positions : list of int
        Positions of the rare values among ``values``, ascending.
    """

    _REDETECT_AT = (1 << 10, 1 << 12, 1 << 14, 1 << 16)
    # Any mask that makes most values common speeds the solver up (correctness
    # never depends on it), so it accepts masks a table would call not sparse.
    _ADAPTIVE_TAIL_FRACTION = 0.25
    _FIRST_CHUNK = 256
    _MAX_CHUNK = 1 << 16

    def __init__(self, game: OctalGame, mask: int | None = None, values=()):
        self.game = game
        self._adaptive = mask is None
        self.mask = 0 if mask is None else int(mask)
        self._buffer = np.zeros(max(1024, 2 * len(values)), dtype=np.int64)
        self._buffer[: len(values)] = values
        self._count = len(values)
        if self._adaptive and self._count:
            self.mask = find_rare_mask(self.values, tail_fraction=self._ADAPTIVE_TAIL_FRACTION)
        self._reclassify()
        self._moves = [m for m in game.moves()]
        self._common_table = np.zeros(0, dtype=bool)

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
                mask = find_rare_mask(self.values, tail_fraction=self._ADAPTIVE_TAIL_FRACTION)
                if mask != self.mask:
                    self.mask = mask
                    self._reclassify()
            value = self._value_at(n)
            self._buffer[n] = value
            self._count += 1
            if is_rare(value, self.mask):
                self.rare_positions.append(n)
                self._rare_pos = None  # array view rebuilt on demand
        return self.values

    # -- internals -------------------------------------------------------

    def _reclassify(self):
        values = self.values
        rare = np.bitwise_count(values & self.mask) % 2 == 0 if len(values) else np.zeros(0, bool)
        self.rare_positions = [int(p) for p in np.flatnonzero(rare)]
        self._rare_pos = None
        self._common_table = np.zeros(0, dtype=bool)

    def _is_common_below(self, limit: int) -> np.ndarray:
        """Boolean array: is v common, for v in [0, limit)."""
        if len(self._common_table) < limit:
            size = max(limit, 2 * len(self._common_table), 1024)
            self._common_table = np.bitwise_count(np.arange(size, dtype=np.int64) & self.mask) % 2 == 1
        return self._common_table[:limit]

    def _value_at(self, n: int) -> int:
        if self.mask == 0:
            return self._mex_of_all_options(n)
        G = self._buffer
        if self._rare_pos is None:
            self._rare_pos = np.array(self.rare_positions, dtype=np.int64)
        rare_pos = self._rare_pos

        # 1. Options that involve a heap at a rare position p: G(p) ^ G(rest - p).
        #    They give every common-valued option (common = rare ^ common).
        parts = []
        has_zero_option = False
        for k, leave_none, leave_one, leave_two in self._moves:
            rest = n - k
            if leave_none and k >= 1 and rest == 0:
                has_zero_option = True
            if rest < 1 or not (leave_one and k >= 1 or leave_two):
                continue
            # p = 0 is the one-heap option G(rest); p >= 1 splits into (p, rest - p).
            lo = 0 if (leave_one and k >= 1) else 1
            hi = bisect.bisect_right(self.rare_positions, rest - 1) if leave_two else 1
            p = rare_pos[lo:hi]
            if len(p):
                parts.append(G[p] ^ G[rest - p])
        rare_options = np.concatenate(parts) if parts else np.zeros(0, np.int64)
        parity = np.bitwise_count(rare_options & self.mask) % 2
        common_options = rare_options[parity == 1]

        # Candidate: the least common value that is not an option.
        size = int(common_options.max()) + 2 if len(common_options) else 2
        taken = np.zeros(size, dtype=bool)
        taken[common_options] = True
        free_common = np.flatnonzero(self._is_common_below(size) & ~taken)
        candidate = int(free_common[0]) if len(free_common) else self._next_common(size)

        # 2. Every rare value below the candidate must be an option.
        seen = np.zeros(candidate, dtype=bool)
        rare_hits = rare_options[(parity == 0) & (rare_options < candidate)]
        seen[rare_hits] = True
        if has_zero_option:
            seen[0] = True
        missing = np.flatnonzero(~self._is_common_below(candidate) & ~seen)
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

    def _next_common(self, start: int) -> int:
        v = start
        while not (bin(v & self.mask).count("1") & 1):
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
