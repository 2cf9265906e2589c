"""The kernel plan: everything a generated speculative kernel needs, decided in Python.

Every backend that emits code (C, CUDA, HDL) is generated from one
:class:`KernelPlan`; templates only place its values.

For heap n past the rare region, G(n) is speculated as the least common value
not among ``constant ^ G(n - offset)`` over the plan's :class:`Term` list:
one term per (rare position p, digit k) whose move leaves heaps p and
n - k - p (p = 0 is the one-heap option).  For ``.6`` there are 1584 terms,
``G(p) ^ G(n - 1 - p)`` for every rare position p.  The speculation is exact
while no new rare value appears; the verifier proves it.

Storage (:class:`Encoding`): when every common value is below 512 the values
are stored in one byte by deleting the lowest bit b of the rare mask and
shifting the higher bits down.  This is XOR-linear (``enc(x ^ y) = enc(x) ^
enc(y)``) and, among common values, one-to-one and order-preserving, since bit
b of a common value is fixed by its other mask bits.  So the mark array has
256 entries, every one a common value, and the mex is the first unmarked
entry.  Otherwise values are stored raw in 16 bits.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from . import __version__
from .errors import InputError
from .rare import RareTable, is_rare


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
    """

    kind: str
    mask: int
    dropped_bit: int | None = None

    @property
    def bits(self) -> int:
        return 8 if self.kind == "u8" else 16

    @property
    def capacity(self) -> int:
        """Number of distinct stored codes (256 or 65536)."""
        return 1 << self.bits

    def encode(self, value: int) -> int:
        """The stored code of a value (any value for u16; bit ``dropped_bit`` deleted for u8)."""
        if self.kind == "u16":
            return value
        b = self.dropped_bit
        return ((value >> (b + 1)) << b) | (value & ((1 << b) - 1))

    def decode(self, code: int) -> int:
        """The common value stored as ``code`` (the inverse of :meth:`encode` on common values)."""
        if self.kind == "u16":
            return code
        b = self.dropped_bit
        value = ((code >> b) << (b + 1)) | (code & ((1 << b) - 1))
        return value if not is_rare(value, self.mask) else value | (1 << b)

    def decode_array(self, codes) -> np.ndarray:
        """:meth:`decode` on an array, as int64."""
        codes = np.asarray(codes, dtype=np.int64)
        if self.kind == "u16":
            return codes
        b = self.dropped_bit
        value = ((codes >> b) << (b + 1)) | (codes & ((1 << b) - 1))
        rare = np.bitwise_count(value & self.mask) % 2 == 0
        return value | (rare.astype(np.int64) << b)

    @cached_property
    def _decoded(self) -> np.ndarray:
        """The value of every u8 code, as a look-up table."""
        return self.decode_array(np.arange(256)).astype(np.uint16)

    def decode_values(self, codes: np.ndarray) -> np.ndarray:
        """:meth:`decode` on an array of stored codes, as uint16 (a table look-up for u8: the hot path)."""
        if self.kind == "u16":
            return np.asarray(codes, dtype=np.uint16)
        return self._decoded[np.asarray(codes, dtype=np.uint8)]

    def encode_array(self, values) -> np.ndarray:
        """:meth:`encode` on an array, as int64."""
        values = np.asarray(values, dtype=np.int64)
        if self.kind == "u16":
            return values
        b = self.dropped_bit
        return ((values >> (b + 1)) << b) | (values & ((1 << b) - 1))

    def fits(self, value: int) -> bool:
        """True when ``value`` can be stored without loss."""
        return 0 <= self.encode(value) < self.capacity

    def describe(self) -> str:
        if self.kind == "u8":
            return f"u8 (bit {self.dropped_bit} of mask {self.mask:#x} dropped)"
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
    """

    table: RareTable
    encoding: Encoding
    terms: tuple[Term, ...]

    @property
    def game(self):
        return self.table.game

    @property
    def window(self) -> int:
        """How many preceding values one heap needs: the largest term offset."""
        return self.terms[0].offset

    @property
    def start(self) -> int:
        """First heap size the kernel may compute.

        From here on every ``G(n - offset)`` lies past the last rare position,
        so every marked value is common (which the u8 encoding relies on).
        """
        return self.window + self.table.last_position + 1

    @cached_property
    def mex_size(self) -> int:
        """Entries in the mark array (stored codes): the mex never runs past it.

        256 for u8.  For u16, enough common values to exceed the number of
        terms (each term marks at most one), rounded up to a multiple of 64.
        A u16 mark at or beyond ``mex_size`` cannot change the mex and may be
        dropped; u8 marks are always below 256.
        """
        if self.encoding.kind == "u8":
            return 256
        needed, v, commons = len(self.terms) + 1, 0, 0
        while commons < needed:
            commons += not is_rare(v, self.table.mask)
            v += 1
        return -(-v // 64) * 64

    @cached_property
    def mex_order(self) -> tuple[int, ...]:
        """Stored codes to try, in increasing order of value, for an unrolled mex."""
        if self.encoding.kind == "u8":
            return tuple(range(256))
        return tuple(v for v in range(self.mex_size) if not is_rare(v, self.table.mask))

    def encoded_terms(self) -> tuple[tuple[int, int], ...]:
        """``(offset, encode(constant))`` for every term."""
        return tuple((t.offset, self.encoding.encode(t.constant)) for t in self.terms)

    def provenance(self, **options) -> list[str]:
        """``key: value`` lines for the header of generated files (no timestamps)."""
        lines = [
            f"generator: octalgen {__version__}",
            f"game: {self.game.code}",
            f"rare table: {self.table.digest} ({self.table.count} rare values, mask {self.table.mask:#x})",
            f"storage: {self.encoding.describe()}",
            f"terms: {len(self.terms)}, window {self.window}, first heap {self.start}",
        ]
        lines += [f"{key}: {value}" for key, value in sorted(options.items())]
        return lines


def plan_terms(table: RareTable) -> tuple[Term, ...]:
    """The unique terms of a table's game, by decreasing offset."""
    terms = set()
    for k, _none, leave_one, leave_two in table.game.moves():
        if leave_one and k >= 1:
            terms.add(Term(k, 0))  # one heap of n - k (rare position 0)
        if leave_two:
            terms.update(Term(k + p, v) for p, v in table.entries if p >= 1)
    return tuple(sorted(terms, key=lambda t: (-t.offset, t.constant)))


def make_plan(table: RareTable, max_common: int | None = None, storage: str | None = None) -> KernelPlan:
    """Plan the speculative kernel for ``table``.

    Parameters
    ----------
    table : RareTable
    max_common : int, optional
        The largest common value known so far (e.g. in the exact prefix); u8
        storage is chosen only if it is below 512.
    storage : {"u8", "u16"}, optional
        Force a storage kind (u8 raises if it cannot hold the known values).

    Raises
    ------
    InputError
        When the game has no sparse space (mask 0) or no move leaving a heap,
        so no speculative kernel exists, or when forced u8 storage cannot work.
    """
    game = table.game
    if table.mask == 0:
        raise InputError(f"{game.code} has no sparse space (rare mask 0): no speculative kernel; use an exact backend")
    terms = plan_terms(table)
    if not terms:
        raise InputError(f"{game.code} has no move that leaves a heap: no speculative kernel; use an exact backend")
    u8 = Encoding("u8", table.mask, (table.mask & -table.mask).bit_length() - 1)
    u8_ok = all(t.constant < 512 for t in terms) and (max_common is None or max_common < 512)
    if storage == "u8" and not u8_ok:
        raise InputError(f"{game.code}: values of 512 or more cannot be stored in u8")
    if storage not in (None, "u8", "u16"):
        raise InputError(f"unknown storage {storage!r}; choose u8 or u16")
    if storage == "u16" or not u8_ok:
        encoding = Encoding("u16", table.mask)
        if any(t.constant >= 1 << 16 for t in terms):
            raise InputError(f"{game.code}: a rare value exceeds 16 bits; no speculative kernel")
    else:
        encoding = u8
    return KernelPlan(table, encoding, terms)
