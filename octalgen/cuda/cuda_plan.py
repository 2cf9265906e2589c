"""Everything the CUDA kernels and their numpy twin need, decided in Python.

A :class:`CudaPlan` wraps the shared :class:`~octalgen.plan.KernelPlan` (the
term list, window, first heap and u8 storage are *not* re-derived here) and
adds what only the GPU uses:

* the number of warps that share the terms of a block of 32 positions in the
  speculative round kernel, and whether it caches the marks of final inputs;
* the *spread* form of a stored code, which turns "mark code m of position q"
  into one XOR of an address (see :func:`spread`);
* for the verifier: the moves that leave two heaps, the table of heap sizes a
  whose value is common (the pair scan skips rare ones, see below), and for
  every common code s the number of rare codes below it.

Verifier background.  Under u8 storage (bit b, the lowest bit of the rare
mask, deleted) the 256 common values below 512 map one-to-one and in order
onto the codes 0..255, and so do the 256 rare values.  The XOR of two codes is
the code of the XOR of the values, so a pair of common heaps (a, rest - a)
gives the code of a *rare* option directly.  A pair with a rare heap gives a
common option, which the term list already covers, so the scan skips heap
sizes a whose value is rare (the table's rare positions; every other a is
common once the speculation is verified up to there).

Positional rarity (:class:`~octalgen.sparse.Rarity`) changes only what a code
means, by the class of the heap: the codes of two common heaps XOR to the code
of an option rare at n, in the order of the values rare at n, so the scan is
unchanged; the count of rare codes below a stored code is looked up in the row
of n's class (:attr:`CudaPlan.rare_codes_below`), and the one-heap options rare
at n (``KernelPlan.rare_options``) are marked as rare options before the scan.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from functools import cached_property

import numpy as np

from ..errors import InputError
from ..plan import KernelPlan, make_plan
from ..rare import RareTable

__all__ = [
    "CODES",
    "CudaOptions",
    "CudaPlan",
    "cuda_plan_for",
    "make_cuda_plan",
    "spread",
    "storage_problem",
    "unspread",
]

#: Codes per position in the mark arrays (u8 storage only).
CODES = 256


def spread(code):
    """``(code & 3) | (code & 0xfc) << 5``: bits 2..7 of a code moved up to 7..12.

    The mark array of the 32 positions of a warp interleaves them word by word
    (byte m of lane q lives at ``q*4 + (m & 3) + (m >> 2)*128``), so every lane
    writes a different bank.  That address is ``4*q ^ spread(m)``, and spread is
    XOR-linear, so the mark of term (offset, c) is ``4*q ^ spread(c) ^ spread(x)``.
    Works on ints and numpy arrays.
    """
    return (code & 3) | ((code & 0xFC) << 5)


def unspread(spread_code):
    """The code whose :func:`spread` form is ``spread_code``."""
    return (spread_code & 3) | ((spread_code >> 5) & 0xFC)


@dataclass(frozen=True)
class CudaOptions:
    """Kernel shapes (all part of the generated source and so of the cache key).

    Attributes
    ----------
    term_groups : int
        Warps per block of the speculative round kernel.  A block computes 32
        consecutive positions; warp g marks the terms i = g, g + G, ... of the
        ``__constant__`` term table (sorted by offset).  The round kernel loops
        over the table rather than unrolling every term as immediates: with
        1,584 terms the unrolled code outgrows the instruction cache
        (``benchmarks/cuda_bench.py --sweep`` compares the shapes).  The
        verifier loops over the same table (unrolled, it needs more registers
        than 8 blocks a multiprocessor leave it).
    cache_final : bool
        Keep, for every position up to W past the front, the marks of its final
        inputs, so that a round marks only the inputs that became final and the
        window's young inputs (octalgen.cuda.twin: about 3 times fewer marks for
        .6); False (the default) recomputes every term of every window position
        each round, which is faster on the GPU: a round lasts as long as its
        busiest block, which still marks most terms, plus the cache's reads,
        writes and barriers.
    verify_block : int
        Threads per block of the verifier (one position per thread).
    scan_chunk : int
        Pair-scan steps between two coverage checks in the verifier.
    scan_bound : int
        Pair-scan steps the verifier gives a heap before it queues it for its tail pass
        (a multiple of ``scan_chunk``): the lanes of a warp scan in step, so without a
        bound a warp lasts as long as its longest scan; the queued heaps go on together.
    scan_steps : int
        Length of the verifier's scan table: a position whose rare options are
        not all found within this many steps is left unproven by the GPU and
        settled on the CPU.  For ``.6`` below 10^8 scans average 2,330 steps
        and the longest needs 614,144, so 2^20 leaves none to the CPU (2^17
        leaves 95, whose proof on the CPU costs more than the rest of it).
    arch : str
        nvcc target (``sm_90``: compute capability 9.0, the Hopper GPUs).
    """

    term_groups: int = 16
    cache_final: bool = False
    verify_block: int = 128
    scan_chunk: int = 256
    scan_bound: int = 4096
    scan_steps: int = 1 << 20
    arch: str = "sm_90"

    def __post_init__(self):
        if not 1 <= self.term_groups <= 32:
            raise InputError(f"term_groups must be 1..32 (warps per block), not {self.term_groups}")
        if self.verify_block % 32 or not 32 <= self.verify_block <= 256:
            raise InputError(f"verify_block must be a multiple of 32 in 32..256, not {self.verify_block}")
        if self.scan_chunk < 1:
            raise InputError(f"scan_chunk must be positive, not {self.scan_chunk}")
        if self.scan_bound < self.scan_chunk or self.scan_bound % self.scan_chunk:
            raise InputError(
                f"scan_bound must be a positive multiple of scan_chunk ({self.scan_chunk}), not {self.scan_bound}"
            )
        if not 1 <= self.scan_steps < 1 << 30:
            raise InputError(f"scan_steps must be in 1 .. 2**30, not {self.scan_steps}")


@dataclass(frozen=True)
class CudaPlan:
    """The plan of the CUDA kernels for one game and rare table.

    Build it with :func:`make_cuda_plan`.
    """

    kernel: KernelPlan
    options: CudaOptions = field(default_factory=CudaOptions)

    @property
    def table(self) -> RareTable:
        return self.kernel.table

    @property
    def game(self):
        return self.kernel.game

    @property
    def start(self) -> int:
        """First heap the speculative kernel computes (:attr:`KernelPlan.start`)."""
        return self.kernel.start

    @cached_property
    def offsets(self) -> np.ndarray:
        """Term offsets (int64), in the plan's order."""
        return np.array([t.offset for t in self.kernel.terms], dtype=np.int64)

    @property
    def round_warps(self) -> int:
        """Warps of a block of the round kernel: the options' term groups, at most one a term."""
        return min(self.options.term_groups, len(self.offsets))

    @cached_property
    def codes(self) -> np.ndarray:
        """Encoded term constants (int64), in the plan's order."""
        return np.array([c for _, c in self.kernel.encoded_terms()], dtype=np.int64)

    @cached_property
    def two_heap_moves(self) -> tuple[int, ...]:
        """Beans removed (k) by the moves that may leave two heaps."""
        return tuple(k for k, _none, _one, two in self.game.moves() if two)

    @cached_property
    def rare_codes_below(self) -> np.ndarray:
        """Row c, common code s: how many values rare at heaps of class c are below the value s stores there.

        Rare codes are in value order, so "every rare value below G(n) is an
        option" reads "rare codes 0 .. rare_codes_below[class of n][s]-1 are all
        marked".  One row for range rarity, two for positional rarity (int64,
        shape (classes, 256)).
        """
        rows, rarity = [], self.table.rarity
        for heap_class, decoded in enumerate(self.kernel.encoding.decode_rows.astype(np.int64)):
            rare = [rarity.rare_in_class(v, heap_class) for v in range(2 * CODES)]
            below = np.concatenate([[0], np.cumsum(rare)])  # below[v] = rare values < v
            rows.append(below[decoded])
        return np.array(rows, dtype=np.int64)

    @cached_property
    def scan_positions(self) -> np.ndarray:
        """Heap sizes a in 1 .. last rare position whose value is common, ascending (int64), the first
        ``options.scan_steps`` of them only: the scan takes no more (and a far rare position lies
        hundreds of millions of heaps out)."""
        rare = set(self.table.positions)
        last = min(self.table.last_position, self.options.scan_steps + len(rare))
        return np.array([a for a in range(1, last + 1) if a not in rare], dtype=np.int64)[: self.options.scan_steps]

    def heap_classes(self, heaps) -> np.ndarray:
        """The class of each heap (:meth:`~octalgen.sparse.Rarity.heap_class`; 0 for range rarity), int64."""
        parity = self.table.parity
        heaps = np.asarray(heaps, dtype=np.int64)
        return np.zeros_like(heaps) if parity is None else (heaps + parity) & 1

    def scan_table(self, prefix) -> np.ndarray:
        """The verifier's scan table from the exact values ``prefix`` (G(0) ... G(P-1)).

        Rows ``(a, spread(code of G(a)))``, int32: step i of the pair scan uses the
        i-th common heap size a (the listed :attr:`scan_positions`, then every size
        past the last rare position), for at most ``options.scan_steps`` steps and
        only heaps a < P.
        """
        listed = self.scan_positions
        steps = self.options.scan_steps
        after = max(self.table.last_position, 0) + 1  # every heap from here on is common (0 is no heap)
        heaps = np.concatenate([listed, after + np.arange(max(0, steps - len(listed)))])[:steps]
        heaps = heaps[heaps < len(prefix)]
        codes = self.kernel.encoding.encode_array(np.asarray(prefix)[heaps])
        return np.stack([heaps, spread(codes)], axis=1).astype(np.int32)

    def provenance(self) -> list[str]:
        """Header lines of the generated CUDA (the plan's, plus the kernel options)."""
        return self.kernel.provenance(**{f"cuda {key}": value for key, value in asdict(self.options).items()})


def storage_problem(kernel: KernelPlan) -> str | None:
    """Why the CUDA kernels cannot run ``kernel`` (their mark arrays hold 256 codes), or None."""
    if kernel.encoding.kind == "u8":
        return None
    return (
        f"{kernel.game.code}: the CUDA kernels store values in 8 bits, but this game needs "
        f"{kernel.encoding.describe()}; use the C backend (--backend c)"
    )


def cuda_plan_for(kernel: KernelPlan, options: CudaOptions | None = None) -> CudaPlan:
    """The CUDA kernels of a kernel plan (as :func:`~octalgen.engine.planning.plan_game` makes it).

    Raises
    ------
    InputError
        When the plan needs 16-bit storage.
    """
    problem = storage_problem(kernel)
    if problem:
        raise InputError(problem)
    return CudaPlan(kernel, options or CudaOptions())


def make_cuda_plan(table: RareTable, max_common: int | None = None, options: CudaOptions | None = None) -> CudaPlan:
    """Plan the CUDA kernels for ``table`` as it is (not reconciled with exact values).

    Parameters
    ----------
    table : RareTable
    max_common : int, optional
        The largest common value in the exact prefix (see :func:`~octalgen.plan.make_plan`).
    options : CudaOptions, optional

    Raises
    ------
    InputError
        When the game has no speculative kernel at all, or needs 16-bit storage.
    """
    return cuda_plan_for(make_plan(table, max_common=max_common), options)
