"""The kernel plan: everything a generated speculative kernel needs, decided in Python.

Every backend that emits code (C, CUDA, HDL) is generated from one
:class:`KernelPlan`; templates only place its values.

For heap n past the rare region, G(n) is speculated as the least common value
not among ``constant ^ G(n - offset)`` over the plan's :class:`Term` list:
one term per (rare position p, digit k) whose move leaves heaps p and
n - k - p (p = 0 is the one-heap option).  For ``.6`` there are 1584 terms,
``G(p) ^ G(n - 1 - p)`` for every rare position p.  The speculation is exact
while no new rare value appears; the verifier proves it.

Positional rarity (:class:`~octalgen.sparse.Rarity`: v rare at heap n when
``popcount(v & m) + n + t`` is even) changes which options are terms, once, at
planning: a two-heap option pairing a rare position with a common one is
common at n whatever n is, so it is a term as before; a one-heap option
G(n - k), k beans taken, is common at n only for even k.  For odd k it is rare
at n: not a mark of the kernel, but an option the verifier counts among the
rare ones (:attr:`KernelPlan.rare_options`).

A rare position found far out, at heap m, is a term at offset m + k (a *far term*), and a u8
kernel could start again only once no term reads a rare position: past m + k + m.  A plan that
starts *early* (:attr:`KernelPlan.early`) starts at m + k + 1 instead: the heaps from there on at
which a term reads a rare position, its *crossings* (:attr:`KernelPlan.crossings`: about a term
per rare position and a rare position per term, a few thousand), are speculated apart
(:meth:`KernelPlan.crossing_code`: such a term marks nothing, its option being the XOR of two
rare values, a rare one), and the verifier is told them.

Storage (:class:`Encoding`): when every common value is below 512 the values
are stored in one byte by deleting the lowest bit b of the rare mask and
shifting the higher bits down.  This is XOR-linear (``enc(x ^ y) = enc(x) ^
enc(y)``) and, among the values of one parity under the mask, one-to-one and
order-preserving, since bit b is fixed by the other mask bits.  So the mark
array has 256 entries, every one a value common at the heap, and the mex is
the first unmarked entry; only decoding needs to know which parity is common,
which for positional rarity is the heap's (its class).  Otherwise values are
stored raw in 16 bits.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np

from . import __version__
from .errors import InputError, InternalError
from .rare import RareTable
from .sparse import Rarity


@dataclass(frozen=True)
class Term:
    """One unrolled mark: heap n marks ``constant ^ G(n - offset)``.

    ``constant`` is a raw (unencoded) rare value.
    """

    offset: int
    constant: int


@dataclass(frozen=True)
class Encoding:
    """How common values are stored.

    Attributes
    ----------
    kind : str
        ``"u8"`` (compressed to one byte) or ``"u16"`` (raw 16-bit).
    mask : int
        The rare mask.
    dropped_bit : int or None
        For ``u8``, the bit deleted from every value (the lowest bit of the mask).
    parity : int or None
        The table's positional parity (None: range rarity).  Decoding then depends on the heap:
        a code stands for the value that is common at that heap.
    """

    kind: str
    mask: int
    dropped_bit: int | None = None
    parity: int | None = None

    @property
    def rarity(self) -> Rarity:
        return Rarity(self.mask, self.parity)

    @property
    def bits(self) -> int:
        return 8 if self.kind == "u8" else 16

    @property
    def dtype(self) -> np.dtype:
        """The numpy dtype of stored codes: uint8 or uint16."""
        return np.dtype(np.uint8 if self.kind == "u8" else np.uint16)

    @property
    def u8_bit(self) -> int:
        """:attr:`dropped_bit` of a u8 encoding (a u16 one deletes no bit)."""
        if self.dropped_bit is None:
            raise InternalError(f"a {self.kind} encoding has no dropped bit")
        return self.dropped_bit

    @property
    def capacity(self) -> int:
        """Number of distinct stored codes (256 or 65536)."""
        return 1 << self.bits

    def encode(self, value: int) -> int:
        """The stored code of a value (any value for u16; bit ``dropped_bit`` deleted for u8)."""
        if self.kind == "u16":
            return value
        b = self.u8_bit
        return ((value >> (b + 1)) << b) | (value & ((1 << b) - 1))

    def decode(self, code: int, heap: int | None = None) -> int:
        """The value common at ``heap`` stored as ``code`` (the inverse of :meth:`encode` on such values).

        ``heap`` matters for positional rarity only (and is then required).
        """
        if self.kind == "u16":
            return code
        b = self.u8_bit
        value = ((code >> b) << (b + 1)) | (code & ((1 << b) - 1))
        return value if not self.rarity.is_rare(value, heap) else value | (1 << b)

    def decode_array(self, codes, first: int | None = None) -> np.ndarray:
        """:meth:`decode` on the codes of heaps ``first``, ``first + 1``, ..., as int64."""
        codes = np.asarray(codes, dtype=np.int64)
        if self.kind == "u16":
            return codes
        b = self.u8_bit
        value = ((codes >> b) << (b + 1)) | (codes & ((1 << b) - 1))
        return value | (self.rarity.rare_flags(value, first).astype(np.int64) << b)

    @cached_property
    def decode_rows(self) -> np.ndarray:
        """The value of every u8 code, uint16: one row per heap class (0, and 1 for positional rarity;
        see :meth:`~octalgen.sparse.Rarity.heap_class`), a look-up table."""
        heaps = (0,) if self.parity is None else (self.parity, 1 - self.parity)  # of class 0, 1
        return np.array([[self.decode(code, heap) for code in range(256)] for heap in heaps], dtype=np.uint16)

    @cached_property
    def rare_rows(self) -> np.ndarray:
        """For u8: the value *rare* at heaps of each class that has each code (the common one of
        :attr:`decode_rows` with bit ``dropped_bit`` flipped), uint16, a row per class.  A pair of
        common heaps gives such a value, and XOR-linearity makes its code the XOR of theirs."""
        return self.decode_rows ^ np.uint16(1 << self.u8_bit)

    def decode_values(self, codes: np.ndarray, first: int | None = None) -> np.ndarray:
        """:meth:`decode` on the stored codes of heaps ``first`` ..., as uint16 (a table look-up for
        u8: the hot path; positional rarity looks up heaps of each class in its own row)."""
        if self.kind == "u16":
            return np.asarray(codes, dtype=np.uint16)
        codes = np.asarray(codes, dtype=np.uint8)
        if self.parity is None:
            return self.decode_rows[0].take(codes)  # take: faster than fancy indexing
        if first is None:
            raise ValueError("positional rarity depends on the heap: give the first one")
        out = np.empty(len(codes), dtype=np.uint16)
        for step in (0, 1):
            row = self.decode_rows[self.rarity.heap_class(first + step)]
            out[step::2] = row.take(codes[step::2])
        return out

    def encode_array(self, values) -> np.ndarray:
        """:meth:`encode` on an array: in the values' own width where they are unsigned (a verifier
        encodes a run's whole uint16 prefix: far cheaper than through int64), else as int64."""
        values = np.asarray(values)
        if values.dtype.kind != "u":
            values = values.astype(np.int64)
        if self.kind == "u16":
            return values
        one, b = values.dtype.type(1), values.dtype.type(self.u8_bit)
        return ((values >> (b + one)) << b) | (values & ((one << b) - one))

    def fits(self, value: int) -> bool:
        """True when ``value`` can be stored without loss."""
        return 0 <= self.encode(value) < self.capacity

    def describe(self) -> str:
        if self.kind == "u8":
            by_heap = ", restored by the heap's parity" if self.parity is not None else ""
            return f"u8 (bit {self.dropped_bit} of mask {self.mask:#x} dropped{by_heap})"
        return "u16 (raw)"


@dataclass(frozen=True)
class KernelPlan:
    """A speculative kernel for one game and rare table.

    Build it with :func:`make_plan`.

    Attributes
    ----------
    table : RareTable
        The rare values the terms are made from.
    encoding : Encoding
        Value storage.
    terms : tuple of Term
        Unique terms, by decreasing offset (oldest values first, the ones
        that depend on the most recent values last).
    rare_options : tuple of int
        Offsets k of the one-heap options G(n - k) that are rare at n (positional rarity, odd
        k; see the module docstring), decreasing: the verifier counts them with the rare options
        its scan finds; the kernel does not mark them.
    early : bool
        A u8 plan under range rarity that starts past its window and its last rare position, not
        past both together: its :attr:`crossings` are speculated and proven apart (see the module
        docstring).
    """

    table: RareTable
    encoding: Encoding
    terms: tuple[Term, ...]
    rare_options: tuple[int, ...] = ()
    early: bool = False

    @property
    def game(self):
        return self.table.game

    @property
    def window(self) -> int:
        """How many preceding values one heap needs: the largest offset of a term or rare option."""
        return max((self.terms[0].offset, *self.rare_options))

    @property
    def start(self) -> int:
        """First heap size the kernel may compute.

        u8: from here on every ``G(n - offset)`` lies past the last rare position
        and past heap 0 (a one-heap move must leave beans), so every marked value
        is common (which the u8 encoding relies on).  With positional rarity also
        past every heap a move empties: the option 0 is common at some heaps,
        and no term marks it.

        u16 under a mask (range rarity): past the window and the last rare position.  A term
        may then read a rare position: G(p) ^ G(q) of two rare heaps is a rare value, and a
        rare code marked is one the mex never looks at (:attr:`mex_order`), while the
        verifier's scan, which compares values, counts it as the option it is.  A rare value
        found at heap m thus moves this first heap to m plus the game's largest take, and the
        u8 one past 2m, but for an :attr:`early` plan, which starts where a u16 one does.
        """
        if self.table.kind == "range" and (self.encoding.kind == "u16" or self.early):
            return max(self.window, self.table.last_position) + 1
        start = self.window + max(self.table.last_position, 0) + 1
        if self.table.kind == "positions":
            start = max(start, 1 + max((k for k, none, _one, _two in self.game.moves() if none), default=0))
        return start

    @property
    def heap_classes(self) -> int:
        """2 when what is common depends on the heap's class (positional rarity), else 1."""
        return 2 if self.table.kind == "positions" else 1

    def common_codes(self, heap_class: int = 0) -> tuple[int, ...]:
        """Stored codes below :attr:`mex_size` that stand for values common at heaps of ``heap_class``
        (see :meth:`~octalgen.sparse.Rarity.heap_class`), ascending: the order of the mex.  Every
        code for u8."""
        if self.encoding.kind == "u8":
            return tuple(range(256))
        return tuple(v for v in range(self.mex_size) if not self.table.rarity.rare_in_class(v, heap_class))

    @cached_property
    def mex_size(self) -> int:
        """Entries in the mark array (stored codes): the mex never runs past it.

        256 for u8.  For u16, enough common values (at heaps of every class) to exceed the
        number of terms (each term marks at most one), rounded up to a multiple of 64.
        A u16 mark at or beyond ``mex_size`` cannot change the mex and may be
        dropped; u8 marks are always below 256.
        """
        if self.encoding.kind == "u8":
            return 256
        needed, v, commons = len(self.terms) + 1, 0, [0] * self.heap_classes
        while min(commons) < needed:
            for heap_class in range(self.heap_classes):
                commons[heap_class] += not self.table.rarity.rare_in_class(v, heap_class)
            v += 1
        return -(-v // 64) * 64

    @cached_property
    def mex_order(self) -> tuple[int, ...]:
        """Stored codes to try, in increasing order of value, for an unrolled mex the same at every heap.

        Raises
        ------
        InputError
            For u16 storage under positional rarity, where the common codes depend on the heap.
        """
        if self.encoding.kind == "u16" and self.heap_classes == 2:
            raise InputError(
                f"{self.game.code}: with positional rarity, 16-bit codes that are common depend "
                "on the heap; one mex order does not fit every heap"
            )
        return self.common_codes(0)

    def encoded_terms(self) -> tuple[tuple[int, int], ...]:
        """``(offset, encode(constant))`` for every term."""
        return tuple((t.offset, self.encoding.encode(t.constant)) for t in self.terms)

    @cached_property
    def crossings(self) -> np.ndarray:
        """The heaps from :attr:`start` on at which a term reads a rare position (p + o for a rare
        position p >= 1 and a term's offset o), ascending, uint64.  Empty for u16 storage (a rare
        code a term marks is one the mex never takes), and for a plan that starts past its window
        from its last rare position (every plan but an :attr:`early` one)."""
        if self.encoding.kind != "u8":
            return np.zeros(0, dtype=np.uint64)
        positions, start = self._positions, self.start
        if not len(positions) or positions[-1] + self.window < start:  # no term reaches a rare position
            return np.zeros(0, dtype=np.uint64)
        heaps = [positions[np.searchsorted(positions, start - o) :] + o for o in np.unique(self._terms[0])]
        return np.unique(np.concatenate([np.zeros(0, np.int64), *heaps])).astype(np.uint64)

    def crossings_at_least(self) -> int:
        """A floor of ``len(crossings)``, found without listing them: the heaps at which the term of the
        largest offset alone reads a rare position (listing them all takes a loop over the offsets)."""
        positions, offsets = self._positions, self._terms[0]
        if self.encoding.kind != "u8" or not len(positions) or not len(offsets):
            return 0
        return len(positions) - int(np.searchsorted(positions, self.start - int(offsets.max())))

    def crossing_code(self, codes: np.ndarray, at: int, heap: int) -> int:
        """The kernel's code at the crossing ``heap``, whose code is ``codes[at]`` (the codes before it
        precede it): the least code no term marks, where a term that reads a rare position marks
        nothing (its option, the XOR of two rare values, is a rare value, which no code stands for).
        :attr:`~Encoding.capacity` where every code is marked (the value does not fit).  The plain
        definition of what the kernel computes at crossings (``fill_crossings``), for the tests."""
        offsets, constants = self._terms
        positions, sources = self._positions, heap - offsets
        common = positions[np.minimum(np.searchsorted(positions, sources), len(positions) - 1)] != sources
        marked = np.zeros(self.encoding.capacity + 1, dtype=bool)
        marked[codes[at - offsets[common]].astype(np.int64) ^ constants[common]] = True
        return int(np.argmin(marked))

    @cached_property
    def _terms(self) -> tuple[np.ndarray, np.ndarray]:
        """The terms' offsets and encoded constants, int64 arrays."""
        encoded = np.array(self.encoded_terms(), dtype=np.int64).reshape(-1, 2)
        return encoded[:, 0], encoded[:, 1]

    @cached_property
    def rare_flags(self) -> np.ndarray:
        """uint8, 1 at each rare position from 1 on, up to the last: a term that reads one marks nothing
        (the :attr:`crossings`; :meth:`crossing_code`)."""
        flags = np.zeros(int(self._positions[-1]) + 1 if len(self._positions) else 0, dtype=np.uint8)
        flags[self._positions] = 1
        return flags

    @cached_property
    def _positions(self) -> np.ndarray:
        """The rare positions from 1 on, int64 (a term reads heaps from 1 on)."""
        return np.array([p for p in self.table.positions if p >= 1], dtype=np.int64)

    def provenance(self, **options) -> list[str]:
        """``key: value`` lines for the header of generated files (no timestamps)."""
        table = self.table
        space = f"mask {table.mask:#x}" if table.kind == "range" else f"sparse space {table.describe()}"
        rare_options = f", rare one-heap options at offsets {list(self.rare_options)}" if self.rare_options else ""
        lines = [
            f"generator: octalgen {__version__}",
            f"game: {self.game.code}",
            f"rare table: {table.digest} ({table.count} rare values, {space})",
            f"storage: {self.encoding.describe()}",
            f"terms: {len(self.terms)}, window {self.window}, first heap {self.start}{rare_options}",
        ]
        if self.early:
            lines.append(f"early start: {len(self.crossings)} crossing heaps, speculated and proven apart")
        lines += [f"{key}: {value}" for key, value in sorted(options.items())]
        return lines


@lru_cache(maxsize=16)
def plan_terms(table: RareTable) -> tuple[Term, ...]:
    """The unique terms of a table's game, by decreasing offset.

    A one-heap option is a term (constant 0) unless positional rarity makes it rare at the
    heap (odd beans taken: :func:`plan_rare_options`).  Once a process for each table: planning
    asks several times (a table of thousands of entries makes each a set of thousands of terms).
    """
    terms = set()
    for k, _none, leave_one, leave_two in table.game.moves():
        if leave_one and k >= 1 and k not in plan_rare_options(table):
            terms.add(Term(k, 0))  # one heap of n - k (rare position 0)
        if leave_two:
            terms.update(Term(k + p, v) for p, v in table.entries if p >= 1)
    return tuple(sorted(terms, key=lambda t: (-t.offset, t.constant)))


def plan_rare_options(table: RareTable) -> tuple[int, ...]:
    """Offsets k of the one-heap options G(n - k) that are rare at every kernel heap n, decreasing.

    Under positional rarity G(n - k) is common at n - k (past the last rare position), so
    ``popcount(G(n - k) & m) + n - k + t`` is odd, and it is rare at n exactly when k is odd.
    """
    if table.kind != "positions":
        return ()
    return tuple(sorted((k for k, _none, one, _two in table.game.moves() if one and k % 2 == 1), reverse=True))


def no_kernel_reason(table: RareTable) -> str | None:
    """Why ``table``'s game has no speculative kernel (one line), or None when it has one.

    A kernel needs a sparse space (mask 0 makes every value rare, so there is nothing to
    speculate from) and a move that leaves a heap (else no option is a term).
    """
    if table.mask == 0:
        return f"{table.game.code} has no sparse space (rare mask 0): no speculative kernel; use an exact backend"
    if not plan_terms(table):
        return f"{table.game.code} has no move that leaves a heap: no speculative kernel; use an exact backend"
    return None


def make_plan(
    table: RareTable, max_common: int | None = None, storage: str | None = None, early: bool = False
) -> KernelPlan:
    """Plan the speculative kernel for ``table``.

    Parameters
    ----------
    table : RareTable
    max_common : int, optional
        The largest common value known so far (e.g. in the exact prefix); u8
        storage is chosen only if it is below 512.
    storage : {"u8", "u16"}, optional
        Force a storage kind (u8 raises if it cannot hold the known values).
    early : bool
        Start a u8 plan under range rarity early (:attr:`KernelPlan.early`); no effect otherwise.

    Raises
    ------
    InputError
        When the game has no sparse space (mask 0) or no move leaving a heap,
        so no speculative kernel exists, or when forced u8 storage cannot work.
    """
    game = table.game
    reason = no_kernel_reason(table)
    if reason is not None:
        raise InputError(reason)
    terms = plan_terms(table)
    u8 = Encoding("u8", table.mask, (table.mask & -table.mask).bit_length() - 1, table.parity)
    u8_ok = all(t.constant < 512 for t in terms) and (max_common is None or max_common < 512)
    if storage == "u8" and not u8_ok:
        raise InputError(f"{game.code}: values of 512 or more cannot be stored in u8")
    if storage not in (None, "u8", "u16"):
        raise InputError(f"unknown storage {storage!r}; choose u8 or u16")
    if storage == "u16" or not u8_ok:
        encoding = Encoding("u16", table.mask, None, table.parity)
        if any(t.constant >= 1 << 16 for t in terms):
            raise InputError(f"{game.code}: a rare value exceeds 16 bits; no speculative kernel")
    else:
        encoding = u8
    early = early and encoding.kind == "u8" and table.kind == "range"
    return KernelPlan(table, encoding, terms, plan_rare_options(table), early)
