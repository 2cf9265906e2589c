"""Sparse spaces: the rule that tells a game's rare values from its common ones, and how to find it.

A sparse space is one of two kinds (:class:`Rarity`):

* **range**: a value v is *rare* for mask m when ``popcount(v & m)`` is even and *common* when
  it is odd, at every heap.  For Officers (``.6``) m = 0x1EE (bits 1, 2, 3, 5, 6, 7, 8), and
  only 1584 of more than 10^14 known values are rare, the last at G(20627) = 277.
* **positions** (Flammenkamp's sparse and common positions): for a game whose two-heap moves all
  take beans of one parity t mod 2, v is rare *at heap n* when ``popcount(v & m) + n + t`` is
  even, and heap n is a rare position when G(n) is rare at n.  A split of n - t into a + b pairs
  two common positions (or two rare ones) into a value rare at n, so common options at n again
  involve a rare position: the rare-value algorithm works unchanged, with the rare/common test
  depending on the heap's parity.  ``.104`` has only this kind (mask 0x17, 20 rare positions,
  the last at 284); ``.051`` under mask 7 has the rare positions 0, 3, 7, 13, 17, 27, 37.

:func:`find_rare_space` finds the kind and the mask of a table from a prefix of values;
:func:`find_solver_mask` the mask under which the exact solver goes fastest;
:func:`find_late_switch` the mask a run switches to when a value rare under its own appears far
out.  All score every mask at once with a Walsh–Hadamard transform of the values' histogram.

This module depends on numpy only: the exact reference (:mod:`octalgen.reference`) and the
tables (:mod:`octalgen.rare`) both build on it, and neither is imported here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: A mask is accepted only if at most this fraction of the second half of the values is rare:
#: rare values must die out, not merely be a minority.
SPARSE_TAIL_FRACTION = 0.01

#: Masks are searched over this many low bits (2^bits candidate masks).
MASK_SEARCH_BITS = 20


def is_rare(value: int, mask: int) -> bool:
    """True when ``value`` has an even number of set bits under ``mask`` (range rarity; see :class:`Rarity`)."""
    return (int(value) & mask).bit_count() % 2 == 0


@dataclass(frozen=True)
class Rarity:
    """The rule that tells rare values from common ones: a mask, and for positional rarity a parity.

    Parameters
    ----------
    mask : int
        The rare mask; 0 means every value is rare (no sparse space).
    parity : int or None
        None: *range* rarity, v is rare when ``popcount(v & mask)`` is even, whatever the heap.
        0 or 1: *positional* rarity, v is rare at heap n when ``popcount(v & mask) + n + parity``
        is even; ``parity`` is t mod 2 for the beans t every two-heap move of the game takes.

    Notes
    -----
    For positional rarity the values rare at even heaps are the values common at odd heaps: a
    heap's *class*, ``(n + parity) % 2`` (0 for range rarity), is all the heap adds.
    """

    mask: int
    parity: int | None = None

    @property
    def kind(self) -> str:
        """``range`` or ``positions``."""
        return "range" if self.parity is None else "positions"

    def heap_class(self, heap: int) -> int:
        """0 or 1: heaps of one class share their rare values (always 0 for range rarity)."""
        return 0 if self.parity is None else (int(heap) + self.parity) & 1

    def is_rare(self, value: int, heap: int | None = None) -> bool:
        """True when ``value`` is rare at ``heap`` (which positional rarity needs)."""
        if self.parity is not None and heap is None:
            raise ValueError("positional rarity depends on the heap: give it")
        return self.rare_in_class(value, self.heap_class(heap or 0))

    def rare_in_class(self, value: int, heap_class: int) -> bool:
        """True when ``value`` is rare at the heaps of ``heap_class`` (see :meth:`heap_class`)."""
        return ((int(value) & self.mask).bit_count() + heap_class) % 2 == 0

    def rare_flags(self, values, first: int | None = None) -> np.ndarray:
        """Boolean array: is ``values[i]`` rare at heap ``first + i`` (positional rarity needs ``first``)."""
        values = np.asarray(values)
        mask = self.mask
        if values.dtype.kind == "u":  # in their own width (a run's 2^23-value prefix: no int64 copies)
            mask &= int(np.iinfo(values.dtype).max)
        else:
            values = values.astype(np.int64)
        odd = np.bitwise_count(values & values.dtype.type(mask)) & np.uint8(1)
        if self.parity is not None:
            if first is None:
                raise ValueError("positional rarity depends on the heap: give the first one")
            odd[1 - ((int(first) + self.parity) & 1) :: 2] ^= np.uint8(1)  # + n + t: the heaps of odd n + t
        return odd == 0

    def describe(self, take: int | None = None) -> str:
        """The rule in words, e.g. ``popcount(G(n) & 0x17) + n + 3 even`` (``take``: t to show, else the parity)."""
        if self.parity is None:
            return f"popcount(G(n) & {self.mask:#x}) even"
        return f"popcount(G(n) & {self.mask:#x}) + n + {self.parity if take is None else take} even"


def find_rare_space(
    values,
    take_parity: int | None = None,
    max_bits: int = MASK_SEARCH_BITS,
    tail_fraction: float = SPARSE_TAIL_FRACTION,
) -> Rarity:
    """The sparse space of a nim-sequence prefix: range or positional rarity, or mask 0 if none.

    Parameters
    ----------
    values : array_like of int
        A prefix G(0) ... G(N-1) of a nim-sequence.
    take_parity : int or None
        The parity of the beans every two-heap move takes (``OctalGame.take_parity``): positional
        rarity is considered only when it is defined.
    max_bits : int
        Only masks within the lowest ``max_bits`` bits are considered.
    tail_fraction : float
        The mask is accepted only if at most this fraction of the second half of the values
        (the *tail*) is rare under it.

    Returns
    -------
    Rarity
        The rule with the fewest rare positions in the tail, then the fewest overall, then the
        numerically smallest mask, range before positional; mask 0 (every value rare) if even
        that one leaves more than ``tail_fraction`` of the tail rare.

    Notes
    -----
    For mask m the number of rare values is ``(N + W[m]) / 2`` where W is the Walsh–Hadamard
    transform of the histogram of values, so every mask is scored at once in O(B 2^B) for B
    bits.  Positional rarity under m is range rarity of the values ``2 G(n) + (n + t) % 2``
    under ``2m + 1`` (:func:`_with_parity`), so both kinds are scored in one transform.
    """
    values = np.asarray(values, dtype=np.int64)
    if len(values) < 2:
        return Rarity(0)
    scored, max_bits = _with_parity(values, take_parity, max_bits)
    bits = min(max(int(scored.max()).bit_length(), 1), max_bits)
    tail = scored[len(scored) // 2 :]
    rare_total = _rare_counts(scored, bits)
    rare_tail = _rare_counts(tail, bits)
    if take_parity is not None:
        rare_tail[1] = len(tail)  # the parity alone is no sparse space
    best = int(np.lexsort((np.arange(len(rare_total)), rare_total, rare_tail))[0])
    if best == 0 or rare_tail[best] > tail_fraction * len(tail):
        return Rarity(0)
    return _rarity_of(best, take_parity)


def find_late_switch(prefix, late_values, current: Rarity, below: int) -> Rarity | None:
    """A range rarity to switch to when a value rare under ``current`` appears past the prefix.

    A rare value at heap m is a new kernel term at offset m: far past the prefix that is a
    window of m values.  Another mask can make it common instead.  The run knows the values
    G(0) ... G(P-1) (``prefix``) and which distinct values appeared at heaps P ... m-1
    (``late_values``); a mask under which every one of those is common has all its rare values
    in the prefix, so its table is exact to m from the prefix alone, and its kernel starts
    before P.

    Parameters
    ----------
    prefix : array_like of int
        G(0) ... G(P-1).
    late_values : array_like of int
        Every distinct value of G(P) ... G(m-1) (with G(m) where it is known).
    current : Rarity
        The run's rarity (a range one; positional rarity is not switched: None).
    below : int
        G(m) < below (the least common value the kernel left free at m): the masks searched
        cover its bits, so that the new value can be common under one.

    Returns
    -------
    Rarity or None
        The range mask, other than ``current``'s, under which every late value is common, with
        the fewest rare values in the prefix (then the smallest); None when there is none, or
        when the best one has more than twice the rare values ``current`` has in the prefix (a
        kernel with more than twice the terms: the far term is then the cheaper evil).
    """
    prefix = np.asarray(prefix, dtype=np.int64)
    late = np.unique(np.asarray(late_values, dtype=np.int64))
    if current.parity is not None or not len(prefix) or not len(late):
        return None
    bits = min(max(int(prefix.max()), int(late.max()), int(below) - 1, 1).bit_length(), 16)
    # Every value is below 2^bits (values fit in 16 bits), so a mask's low bits decide its counts.
    allowed = (_rare_counts(late, bits) == 0) & (np.arange(1 << bits) != current.mask)
    if not allowed.any():
        return None
    rare = _rare_counts(prefix, bits)
    best = int(np.flatnonzero(allowed)[np.argmin(rare[allowed])])
    if rare[best] > 2 * rare[current.mask & ((1 << bits) - 1)]:
        return None
    return Rarity(best)


def find_rare_mask(values, max_bits: int = MASK_SEARCH_BITS, tail_fraction: float = SPARSE_TAIL_FRACTION) -> int:
    """The range mask of a nim-sequence prefix, or 0 (see :func:`find_rare_space`, range rarity only)."""
    return find_rare_space(values, None, max_bits, tail_fraction).mask


def _with_parity(values: np.ndarray, take_parity: int | None, max_bits: int) -> tuple[np.ndarray, int]:
    """The values to score and the bits to search: with a take parity, ``2 G(n) + (n + t) % 2``."""
    if take_parity is None:
        return values, max_bits
    return (values << 1) | ((np.arange(len(values)) + take_parity) & 1), max_bits + 1


def _rarity_of(scored_mask: int, take_parity: int | None) -> Rarity:
    """The rule a mask over the scored values (:func:`_with_parity`) stands for."""
    if take_parity is None:
        return Rarity(scored_mask)
    return Rarity(scored_mask >> 1, take_parity if scored_mask & 1 else None)


def find_solver_mask(
    values, take_parity: int | None, budget: float, max_bits: int = MASK_SEARCH_BITS
) -> tuple[int, bool]:
    """The mask under which the exact rare-value algorithm goes fastest on the next values.

    Unlike a table's mask, this one need not make rare values die out: every heap's candidate
    costs one option per rare position so far, so the mask minimising the rare positions, plus
    half those of the second half again (where the next values will add to them at its rate),
    wins; it is used only while that score stays below ``budget`` times the number of values
    (beyond it, marking every option is cheaper).  Rarity may also count the heap's parity:
    with ``position_parity``, G(p) is rare when ``popcount(G(p) & mask) + p + take_parity`` is
    even (Flammenkamp's sparse and common positions; ``.104`` has such a sparse space, under
    0x17, and no other).  That is the plain rarity of the values ``2 G(p) + (p + take_parity) %
    2``, so both kinds are scored at once.

    Parameters
    ----------
    values : array_like of int
        A prefix G(0) ... G(N-1).
    take_parity : int or None
        The parity of the beans every two-heap move takes; None when they differ (or there is
        no such move): then only masks without the heap's parity are considered.
    budget : float
        The largest score accepted, as a fraction of N.
    max_bits : int
        Only masks within the lowest ``max_bits`` bits of the values are considered.

    Returns
    -------
    (int, bool)
        The mask and whether it counts the heap's parity; (0, False) when none is worth it.
    """
    values = np.asarray(values, dtype=np.int64)
    if len(values) < 2:
        return 0, False
    values, max_bits = _with_parity(values, take_parity, max_bits)
    bits = min(max(int(values.max()).bit_length(), 1), max_bits)
    score = _rare_counts(values, bits) + _rare_counts(values[len(values) // 2 :], bits)
    score[: 2 if take_parity is not None else 1] = np.iinfo(np.int64).max  # no split (or parity alone)
    best = int(np.argmin(score))
    if score[best] > budget * len(values):
        return 0, False
    rarity = _rarity_of(best, take_parity)
    return rarity.mask, rarity.parity is not None


def _rare_counts(values: np.ndarray, bits: int) -> np.ndarray:
    """Number of rare values under every mask below 2**bits (Walsh–Hadamard transform)."""
    walsh = np.bincount(values & ((1 << bits) - 1), minlength=1 << bits).astype(np.int64)
    h = 1
    while h < len(walsh):
        w = walsh.reshape(-1, 2 * h)
        left, right = w[:, :h].copy(), w[:, h:].copy()
        w[:, :h] = left + right
        w[:, h:] = left - right
        h *= 2
    return (len(values) + walsh) // 2
