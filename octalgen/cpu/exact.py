"""The exact solver in C: the rare-value algorithm (Grossman, Figure 2) for any octal game.

:class:`CExactSolver` mirrors :class:`octalgen.reference.ExactSolver` (same algorithm, same
answers, a few hundred times faster): it computes G from scratch or continues from values
given to it, finds the rare values itself under its mask, and never reads a rare table, so a
wrong table cannot make it wrong.  With mask 0 (no sparse space) it is the plain mex over
all options, quadratic in the number of values.

Two methods give the same values (see ``templates/c/exact.c.j2``): ``"blocked"`` (the default)
marks the options of 16 heaps at once and proves candidates with vector compares;
``"classic"`` is the one-heap-at-a-time algorithm of Grossman's Figure 2, kept as the baseline
the benchmarks measure against (``benchmarks/dense_exact.py``).

Values are 16-bit: a value of 65536 or more raises :class:`~octalgen.errors.ComputationError`
naming the heap; nothing is truncated.  With ``spill`` the value buffers of more than
:data:`~octalgen.mapped.SPILL_FROM` heaps are files on disk (:mod:`octalgen.mapped`): a solver that
decides a rare value far out reads every value before it, and holds them there, not in memory.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from ..errors import ComputationError, InputError
from ..game import OctalGame, parse_game
from ..mapped import SPILL_FROM, mapped_array
from ..sparse import find_solver_mask
from .generate import compile_unit, exact_unit

#: Without a mask the solver starts with mask 0 and re-detects it from its own values at every
#: power of two from 2^10 (the reference stops at 2^16: a game such as ``.04`` shows its sparse
#: space only beyond 2^17, and the blocked method gains from a mask as soon as one fits).
REDETECT_AT = tuple(1 << b for b in range(10, 41))

#: The methods of :class:`CExactSolver`, by name, as the generated unit numbers them.
METHODS = ("classic", "blocked")

#: Re-detection takes a mask while its rare positions (plus half those of the second half) stay
#: below this fraction of the values; none makes the solver wrong.  The blocked method marks the
#: options of every rare position: with this many of them a mask no longer saves work.
MASK_BUDGET = 0.4

#: Heaps per call into C, so that Ctrl-C is noticed between calls.
_STEP = 1 << 14

#: Values classified at a time when the rare positions are rebuilt.
_PIECE = 1 << 22


@cache
def _module(game: OctalGame):
    return compile_unit(exact_unit(game))


class CExactSolver:
    """Incremental exact solver for one game, in C.

    Parameters
    ----------
    game : OctalGame or str
    mask : int, optional
        Rare mask; only speed depends on it.  When omitted the solver starts with mask 0 and
        re-detects the mask at :data:`REDETECT_AT` values.
    values : array_like of int, optional
        G(0) ... G(len-1), already known exactly, to continue from.
    method : {"blocked", "classic"}
        How the C code goes about it; both give the same values.  ``"classic"`` is Grossman's
        one-heap-at-a-time algorithm (the baseline), ``"blocked"`` the faster one.
    threads : {1, 2}
        2: the blocked method marks with a second thread (the next block's rare-position options
        while this block's heaps are proven; with mask 0, half of each block's options).
    position_parity : bool
        With a mask: G(p) is rare when ``popcount(G(p) & mask) + p + k`` is even, k the beans
        every two-heap move takes (see :func:`octalgen.sparse.find_solver_mask`).  Only for
        games whose two-heap moves all take the same parity; chosen by itself when ``mask`` is
        omitted.
    spill : bool
        Value buffers of :data:`~octalgen.mapped.SPILL_FROM` heaps or more go to files on disk.
    spill_dir : path, optional
        Where those files are made (default: the temporary directory).

    Attributes
    ----------
    mask : int
        The mask in use.
    position_parity : bool
        Whether rarity under it counts the heap's parity.
    options_scanned : int
        Options the proof scans have looked at so far (a measure of the work done).
    """

    def __init__(
        self,
        game,
        mask: int | None = None,
        values=(),
        method: str = "blocked",
        threads: int = 1,
        position_parity: bool = False,
        spill: bool = False,
        spill_dir=None,
    ):
        self.game = parse_game(game)
        if method not in METHODS:
            raise InputError(f"unknown exact method {method!r}: choose one of {', '.join(METHODS)}")
        if threads not in (1, 2):
            raise InputError(f"the exact solver runs 1 or 2 threads, not {threads}")
        self._take_parity = self.game.take_parity
        if position_parity and self._take_parity is None:
            raise InputError(
                f"{self.game.code}: rarity by position parity needs every two-heap move to "
                "take the same parity of beans"
            )
        self.method = method
        self.threads = threads
        self._spill = (spill, spill_dir)
        self._adaptive = mask is None
        values = np.asarray(values)
        if values.dtype != np.uint16:  # (a run's values are uint16 already: no 64-bit copy of them)
            values = np.asarray(values, dtype=np.int64)
            if len(values) and (values.min() < 0 or values.max() >= 1 << 16):
                raise ComputationError("the C exact solver continues only from values below 65536")
        self._count = len(values)
        # Room for an eighth more: continuing from m values (a far rare value decided) takes a few
        # steps, and extend() doubles the buffers where a run goes on further.
        self._allocate(max(1024, len(values) + len(values) // 8), values)
        self._largest = max((int(values[lo : lo + _PIECE].max()) for lo in range(0, len(values), _PIECE)), default=0)
        self.mask = 0 if mask is None else int(mask)
        self.position_parity = bool(position_parity) and self.mask != 0
        if self._adaptive and self._count:
            self.mask, self.position_parity = self._detect()
        self._marks = np.zeros((1 << 16) + 1, dtype=np.uint64)
        self._scratch = np.zeros(_module(self.game).lib.octalgen_exact_scratch_size(), dtype=np.uint8)
        self.options_scanned = 0
        self._rare: np.ndarray  # the rare positions, in a buffer of spare room (set by _reclassify)
        self._rare_count: int
        self._reclassify()

    @property
    def values(self) -> np.ndarray:
        """G(0) ... G(n-1) computed so far, as a uint16 array (a view: copy before extending)."""
        return self._values[: self._count]

    @property
    def rare_positions(self) -> np.ndarray:
        """Positions of the rare values among :attr:`values`, ascending (all of them for mask 0)."""
        if self.mask == 0:
            return np.arange(self._count, dtype=np.int64)
        return self._rare[: self._rare_count].astype(np.int64)

    def __len__(self) -> int:
        return self._count

    def extend(self, count: int) -> np.ndarray:
        """Compute values up to (not including) heap ``count``; return all values (uint16 view)."""
        if count > len(self._values):
            self._allocate(max(count, 2 * len(self._values)), self.values)
        module = _module(self.game)
        ffi, lib = module.ffi, module.lib
        done = ffi.new("uint64_t *")
        rare_count = ffi.new("uint64_t *")
        scanned = ffi.new("uint64_t *")
        while self._count < count:
            if self._adaptive and self._count in REDETECT_AT:
                split = self._detect()
                if split != (self.mask, self.position_parity):
                    self.mask, self.position_parity = split
                    self._reclassify()
            stop = min(count, self._count + _STEP, *(n for n in REDETECT_AT if self._adaptive and n > self._count))
            rare_count[0] = self._rare_count
            scanned[0] = 0
            status = lib.octalgen_exact_extend(
                ffi.from_buffer("uint16_t[]", self._values),
                ffi.from_buffer("uint16_t[]", self._reversed),
                len(self._values),
                self._count,
                stop,
                self._largest,
                self.mask,
                int(self.position_parity),
                ffi.from_buffer("uint64_t[]", self._rare),
                rare_count,
                len(self._rare),
                ffi.from_buffer("uint64_t[]", self._marks),
                ffi.from_buffer("uint8_t[]", self._scratch),
                METHODS.index(self.method),
                self.threads,
                done,
                scanned,
            )
            if done[0] > self._count:
                self._largest = max(self._largest, int(self._values[self._count : done[0]].max()))
            self._count = int(done[0])
            self._rare_count = int(rare_count[0])
            self.options_scanned += int(scanned[0])
            if status == 1:
                self._rare = np.concatenate([self._rare, np.zeros(len(self._rare), np.uint64)])
            elif status == 2:
                raise ComputationError(
                    f"G({self._count}) of {self.game.code} is 65536 or more: beyond the 16-bit values of the C backend"
                )
        return self.values

    def _allocate(self, capacity: int, values) -> None:
        """Value buffers of ``capacity`` holding ``values``: forwards and reversed (the C code
        reads both directions of a heap's pairs as forward streams); on disk where spilled."""
        spill, directory = self._spill
        if spill and capacity >= SPILL_FROM:
            forwards = mapped_array(capacity, np.uint16, directory, "exact solver's values")
            backwards = mapped_array(capacity, np.uint16, directory, "exact solver's values")
        else:
            forwards, backwards = np.zeros(capacity, dtype=np.uint16), np.zeros(capacity, dtype=np.uint16)
        for lo in range(0, len(values), _PIECE):  # in pieces: values on disk are read, not copied whole
            piece = values[lo : lo + _PIECE]
            forwards[lo : lo + len(piece)] = piece
            backwards[capacity - lo - len(piece) : capacity - lo] = piece[::-1]
        self._values, self._reversed = forwards, backwards

    def _detect(self) -> tuple[int, bool]:
        """The mask (and position parity) the values so far suggest."""
        return find_solver_mask(self.values, self._take_parity, MASK_BUDGET)

    def _reclassify(self) -> None:
        """Rebuild the rare positions for the current mask."""
        if self.mask == 0:
            rare = np.zeros(0, dtype=np.uint64)
        else:
            found = []
            for lo in range(0, self._count, _PIECE):  # in pieces: no 64-bit copy of every value
                bits = np.bitwise_count(self.values[lo : lo + _PIECE] & np.uint16(self.mask & 0xFFFF)).astype(np.int64)
                if self.position_parity:
                    assert self._take_parity is not None  # position parity needs one parity of take (__init__)
                    bits += (np.arange(lo, lo + len(bits)) + self._take_parity) & 1
                found.append(np.flatnonzero(bits % 2 == 0).astype(np.uint64) + np.uint64(lo))
            rare = np.concatenate(found) if found else np.zeros(0, dtype=np.uint64)
        self._rare = np.zeros(max(256, 2 * len(rare)), dtype=np.uint64)
        self._rare[: len(rare)] = rare
        self._rare_count = len(rare)


def exact_values_c(
    game, count: int, mask: int | None = None, method: str = "blocked", threads: int = 1, position_parity: bool = False
) -> np.ndarray:
    """G(0) ... G(count-1) by :class:`CExactSolver`, as an int64 array."""
    solver = CExactSolver(game, mask=mask, method=method, threads=threads, position_parity=position_parity)
    return solver.extend(count).astype(np.int64)
