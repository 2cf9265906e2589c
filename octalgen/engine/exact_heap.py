"""G(n) of one heap, exactly, from the values before it read in pieces: a rare value decided far out.

Where a proof fails at heap m, G(m) is decided here, and where it is a new rare value, so are the
few heaps after it up to the kernel's new first heap.  The rare-value algorithm (Grossman, Figure 2)
needs of the values before n only a few at once:

* the *terms*: every option that is a common value involves a rare position p (the table's, all of
  them below n), ``G(p) ^ G(n - k - p)``, and the one-heap options are ``G(n - k)``: a few thousand
  values, read in a few runs (most near n, those of far rare positions near G(0));
* the *scan*: every rare value below the least common value no term marks must be an option, or
  the least that is not is G(n); the pairs ``G(x) ^ G(n - k - x)`` for x = 1, 2, ... are read in
  pieces from both ends, in growing steps, until each such value is found.  For a new rare value
  that is every pair: G(1) ... G(n - 1) read once, forwards and backwards, in pieces of at most
  :data:`PIECE` values, whatever n.

``read(lo, hi)`` gives G(lo) ... G(hi - 1) (uint16): the run's history, whose values far out come
from its files or its far term's tape (:meth:`~.history.History.values`); None where it lacks them.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..rare import RareTable

#: The most values read at once.
PIECE = 1 << 22

#: The first step of a scan, in pairs (most scans end within a few thousand).
FIRST_STEP = 1 << 12

Reader = Callable[[int, int], "np.ndarray | None"]


def exact_value(table: RareTable, heap: int, read: Reader) -> int | None:
    """G(``heap``) of ``table``'s game, exactly; None where ``read`` lacks a value it needs.

    ``table`` must list every rare position below ``heap`` (its terms are the common options).
    """
    game, rarity = table.game, table.rarity
    options, singles, sources, constants, rests = set(), [], [], [], []
    rare = [(p, v) for p, v in table.entries if 1 <= p < heap]
    for k, leave_none, leave_one, leave_two in game.moves():
        rest = heap - k
        if leave_none and k >= 1 and rest == 0:
            options.add(0)
        if leave_one and k >= 1 and rest >= 1:
            singles.append(rest)
        if leave_two and rest >= 2:
            rests.append(rest)
            for p, v in rare:
                if p < rest:
                    sources.append(rest - p)
                    constants.append(v)
    got = gather(read, np.array(singles + sources, dtype=np.int64))
    if got is None:
        return None
    options.update(got[: len(singles)].tolist())
    options.update((got[len(singles) :] ^ np.array(constants, dtype=np.int64)).tolist())
    candidate = 0  # the least common value that is no option (1 << 16 where every value is rare: mask 0)
    while candidate < 1 << 16 and (candidate in options or rarity.is_rare(candidate, heap)):
        candidate += 1
    need = {v for v in range(candidate) if rarity.is_rare(v, heap) and v not in options}
    if not need:
        return candidate
    if not scan(rests, need, read):
        return None
    return min(need) if need else candidate


def scan(rests: list[int], need: set[int], read: Reader) -> bool:
    """Take off ``need`` every value that is ``G(x) ^ G(rest - x)`` for some rest of ``rests`` and
    1 <= x <= rest / 2, until none is left; False where ``read`` lacks a value."""
    wanted = np.zeros(1 << 16, dtype=bool)
    wanted[list(need)] = True
    x, step, low, high = 1, FIRST_STEP, min(rests, default=0), max(rests, default=0)
    while need and x <= high // 2:
        stop = min(x + step, high // 2 + 1)
        first = max(low - stop + 1, x)  # the partners of x ... stop - 1 under every rest, read at once
        xs, ys = read(x, stop), read(first, high - x + 1)
        if xs is None or ys is None:
            return False
        for rest in rests:
            hi = min(stop, rest // 2 + 1)
            if x >= hi:
                continue
            partners = ys[rest - hi + 1 - first : rest - x + 1 - first]
            present = np.bincount(np.bitwise_xor(xs[: hi - x], partners[::-1]), minlength=1 << 16)[: 1 << 16] > 0
            for value in np.flatnonzero(present & wanted).tolist():
                need.discard(value)
                wanted[value] = False
        x += step
        step = min(2 * step, PIECE)
    return True


def gather(read: Reader, heaps: np.ndarray) -> np.ndarray | None:
    """G(h) for every h of ``heaps`` (int64), read in runs of at most :data:`PIECE` values; None where
    ``read`` lacks one."""
    order = np.argsort(heaps, kind="stable")
    ordered = heaps[order]
    out = np.zeros(len(heaps), dtype=np.int64)
    i = 0
    while i < len(ordered):
        lo = int(ordered[i])
        j = int(np.searchsorted(ordered, lo + PIECE))
        values = read(lo, int(ordered[j - 1]) + 1)
        if values is None:
            return None
        out[order[i:j]] = values[ordered[i:j] - lo]
        i = j
    return out
