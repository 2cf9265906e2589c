"""The per-value work on proven values, in C: digests, value statistics and the rolling CRC-64.

A :class:`Scanner` folds proven values G(position) ... into

* the FNV-1a-64 digest of G(0) ... G(position-1), and of G(S) ... G(position-1) for a chosen S;
* the count, first heap and last heap of every value (16-bit values);
* Grossman's rolling hash H(n) over the last W values: a CRC-64 (polynomial of
  CRC-64/ECMA-182) of the 16-bit symbols G(n-W+1) ... G(n), updated in O(1) per value from
  H(n-1), G(n) and G(n-W).  Equal windows always have equal H; unequal windows almost never do,
  and a match is confirmed by comparing the values.

Anchors follow Grossman's power-of-two scheme: at n = 2^k the scanner keeps H(n) and stops so
that the caller can keep the window's values; for 2^k < n < 2^(k+1) it stops at every n whose H
equals the anchor's, for the caller to compare windows.  The C source is fixed (one unit for
every game, ``templates/c/scan.c.j2``); the tables, which depend on W, are computed here.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

import numpy as np

from .. import __version__
from ..build import build_module
from ..checksum import FNV_OFFSET
from ..errors import InternalError
from ..plan import Encoding
from ..render import render

#: CRC-64/ECMA-182: P(x) = x^64 + this (bit i is the coefficient of x^i).
CRC64_POLY = 0x42F0E1EBA9EA3693

_MASK64 = (1 << 64) - 1

#: Scanner event codes returned by the C function.
FOLDED, ANCHORED, HASH_MATCH = 0, 1, 2

#: Values per call into C (so that Ctrl-C is noticed and events are cheap to handle).
_STEP = 1 << 22


def _mulmod(a: int, b: int) -> int:
    """a(x) b(x) mod P(x) over GF(2), polynomials of degree < 64 as integers."""
    result = 0
    for bit in range(63, -1, -1):
        result = ((result << 1) & _MASK64) ^ (CRC64_POLY if result >> 63 else 0)
        if b >> bit & 1:
            result ^= a
    return result


def _powmod(a: int, exponent: int) -> int:
    result, square = 1, a
    while exponent:
        if exponent & 1:
            result = _mulmod(result, square)
        square = _mulmod(square, square)
        exponent >>= 1
    return result


@lru_cache(maxsize=8)
def crc_tables(window: int) -> np.ndarray:
    """The four 256-entry tables of the rolling CRC over ``window`` 16-bit symbols.

    ``in`` maps a symbol s to s x^64 mod P (split into its low and high byte, the map being
    linear); ``out`` maps it to s x^(64 + 16 window) mod P, the term that leaves the window.
    """
    shift_out = _powmod(1 << 16, window)  # x^(16 W) mod P
    tables = np.zeros((4, 256), dtype=np.uint64)
    for byte in range(256):
        low, high = _mulmod(byte, CRC64_POLY), _mulmod(byte << 8, CRC64_POLY)  # s x^64 = s * (x^64 mod P)
        tables[0, byte], tables[1, byte] = low, high
        tables[2, byte], tables[3, byte] = _mulmod(low, shift_out), _mulmod(high, shift_out)
    return tables.reshape(-1)


def crc_of_window(values, window: int) -> int:
    """H of the last ``window`` of ``values`` (zeros before them) from its definition, in Python.

    The reference the C update is tested against (slow: for small windows).
    """
    values = [0] * window + [int(v) for v in values]
    crc = 0
    for j, v in enumerate(reversed(values[-window:])):
        crc ^= _mulmod(v, _powmod(2, 64 + 16 * j))  # v x^(64 + 16 j); the integer 2 is x
    return crc


@lru_cache(maxsize=1)
def _module():
    declarations = render("c/scan_api.j2")
    provenance = [f"generator: octalgen {__version__}", "unit: scan of proven values (digests, counts, CRC-64)"]
    source = render("c/scan.c.j2", provenance=provenance, declarations=declarations)
    return build_module("octalgen_scan", source, declarations, what="scanner of proven values")


def mark_present(values: np.ndarray, present: np.ndarray) -> None:
    """Set ``present[v]`` (uint8, 65536 entries) for every value v of ``values`` (uint16), in C."""
    module = _module()
    values = np.ascontiguousarray(values, dtype=np.uint16)
    module.lib.octalgen_mark_present(
        module.ffi.from_buffer("uint16_t[]", values), len(values), module.ffi.from_buffer("uint8_t[]", present)
    )


def decode_codes(encoding: Encoding, codes: np.ndarray, first: int) -> np.ndarray:
    """:meth:`~octalgen.plan.Encoding.decode_values` of the codes of heaps ``first`` ..., in C for u8 codes:
    a run decodes every value it proves, and numpy's ``take`` first widens the codes to 64-bit indices."""
    if encoding.kind != "u8" or len(codes) < 1 << 12:
        return encoding.decode_values(codes, first)
    rows = encoding.decode_rows
    if encoding.parity is not None:
        rows = rows[[encoding.rarity.heap_class(first), encoding.rarity.heap_class(first + 1)]]
    rows = np.ascontiguousarray(np.broadcast_to(rows, (2, 256)), dtype=np.uint16)
    codes = np.ascontiguousarray(codes, dtype=np.uint8)
    out = np.empty(len(codes), dtype=np.uint16)
    module = _module()
    module.lib.octalgen_decode_codes(
        module.ffi.from_buffer("uint8_t[]", codes),
        len(codes),
        module.ffi.from_buffer("uint16_t[]", rows),
        module.ffi.from_buffer("uint16_t[]", out),
    )
    return out


def first_anchor(at_least: int) -> int:
    """The least power of two that is at least ``at_least`` (and at least 1)."""
    return 1 << max(0, int(at_least) - 1).bit_length()


@dataclass
class ScanEvent:
    """An anchor set or a hash match, at ``heap``."""

    kind: int
    heap: int


class ValueSource(Protocol):
    """Proven values a scanner reads back instead of keeping its own copy (the engine's :class:`~.history.History`)."""

    def values(self, start: int, stop: int) -> np.ndarray | None:
        """G(start) ... G(stop-1) (``0 <= start``), or None when they are not held."""


class _NoSource:
    """The source of a scanner restored from a checkpoint until it is given its own."""

    def values(self, start: int, stop: int) -> None:
        return None


_NOT_YET = _NoSource()


class Scanner:
    """Digests, value counts and the period-search hash over a stream of proven values.

    Parameters
    ----------
    window : int
        W, the values the rolling hash covers.
    digest_from : int
        S: a second digest covers G(S) ... (0: the same as the whole one).
    anchor_from : int
        Anchors are powers of two at least this (and at least W - 1, so windows are full).
    source : ValueSource, optional
        Where the values that leave the window are read back (it must hold the last W values
        before every value folded, and the values folded themselves).  Without it the scanner
        keeps its own copy of the last W values: a second copy of what the engine's history
        holds, which for a window as long as a far term's offset is as large as the heap.
    """

    def __init__(self, window: int, digest_from: int = 0, anchor_from: int = 0, source: ValueSource | None = None):
        self._module = _module()
        ffi = self._module.ffi
        self.state = ffi.new("octalgen_scan_state *")
        s = self.state
        s.position, s.fnv, s.fnv_from, s.fnv_range = 0, FNV_OFFSET, digest_from, FNV_OFFSET
        s.window = window
        s.next_anchor = first_anchor(max(anchor_from, window - 1))
        self.counts = np.zeros(1 << 16, dtype=np.uint64)
        self.first_seen = np.full(1 << 16, np.iinfo(np.uint64).max, dtype=np.uint64)
        self.last_seen = np.full(1 << 16, np.iinfo(np.uint64).max, dtype=np.uint64)
        self.source = source
        # G(position-W) ... G(position-1), zeros before 0: only without a source.
        self._tail = np.zeros(window, dtype=np.uint16) if source is None else None
        self._tables = crc_tables(window)

    # -- state --------------------------------------------------------------------------

    @property
    def position(self) -> int:
        return int(self.state.position)

    @property
    def window(self) -> int:
        return int(self.state.window)

    def digest(self) -> str:
        """FNV-1a-64 of G(0) ... G(position-1), 16 hex digits."""
        return f"{int(self.state.fnv):016x}"

    def range_digest(self) -> str:
        """FNV-1a-64 of G(digest_from) ... G(position-1)."""
        return f"{int(self.state.fnv_range):016x}"

    @property
    def anchor(self) -> int | None:
        return int(self.state.anchor) or None

    def window_values(self, end: int | None = None) -> np.ndarray:
        """The W values ending at G(end - 1) (default: the last W folded), zeros before heap 0."""
        end = self.position if end is None else end
        if self.source is None:
            if end != self.position:
                raise ValueError("a scanner without a source holds only its last W values")
            assert self._tail is not None  # held exactly while there is no source
            return self._tail.copy()
        return self._read(end - self.window, end)

    def _read(self, start: int, stop: int) -> np.ndarray:
        """G(start) ... G(stop-1) from the source, zeros before heap 0."""
        assert self.source is not None  # read only by a scanner with a source
        held = self.source.values(max(start, 0), max(stop, 0))
        if held is None:
            raise InternalError(
                f"the values G({max(start, 0)}) ... G({stop - 1}) the period search reads back are no longer held"
            )
        return np.concatenate([np.zeros(min(stop, 0) - start, np.uint16), held]) if start < 0 else held

    def read_from(self, source: ValueSource) -> None:
        """Read the values leaving the window from ``source`` from now on (it holds them), and drop
        the scanner's own copy."""
        self.source, self._tail = source, None

    def to_dict(self) -> dict:
        """The scalar state, for a checkpoint (arrays are saved by the caller)."""
        s = self.state
        return {
            key: int(getattr(s, key))
            for key in (
                "position",
                "fnv",
                "fnv_from",
                "fnv_range",
                "crc",
                "window",
                "anchor",
                "anchor_crc",
                "next_anchor",
                "hash_matches",
            )
        }

    @classmethod
    def from_dict(cls, state: dict, counts, first_seen, last_seen) -> Scanner:
        """A scanner with the state of :meth:`to_dict` and the value statistics; it reads the values
        leaving its window from the source it is given next (:meth:`read_from`)."""
        scanner = cls(state["window"], source=_NOT_YET)
        for key, value in state.items():
            setattr(scanner.state, key, value)
        scanner.counts[:] = counts
        scanner.first_seen[:] = first_seen
        scanner.last_seen[:] = last_seen
        return scanner

    def rewindow(self, window: int, history, anchor_from: int = 0) -> None:
        """Cover ``window`` values from now on (a new kernel plan): H is rebuilt, the anchor dropped.

        ``history`` is G(position - window) ... G(position - 1) (zeros before heap 0), or where the
        window is too long to hold (a far term's) ``read(lo, hi)``, giving its values lo ... hi - 1.
        """
        if callable(history):
            read = history
        else:
            held = np.ascontiguousarray(history, dtype=np.uint16)
            if len(held) != window:
                raise ValueError(f"rewindow needs the last {window} values, not {len(held)}")
            read = lambda lo, hi: held[lo:hi]  # noqa: E731 - the one way it is read, in pieces
        fresh = Scanner(window, source=self.source)
        # No anchor while the window is folded: an anchor is an event, which ends a fold at its heap (the
        # anchor at heap 0 that next_anchor = 0 set ended it after one value, and H was that value's).
        fresh.state.next_anchor = (1 << 64) - 1
        zeros = np.zeros(min(window, _STEP), np.uint16)
        for lo in range(0, window, _STEP):  # zeros leaving: folding the window gives its H (in pieces: a far
            piece = np.ascontiguousarray(read(lo, min(window, lo + _STEP)), dtype=np.uint16)  # term's window: m values
            event, folded = fresh._fold_raw(zeros[: len(piece)], piece)
            if event != FOLDED or folded != len(piece):
                raise InternalError("the period search's hash stopped at an event while a window was folded")
        s = self.state
        s.window, s.crc, s.anchor, s.anchor_crc = window, fresh.state.crc, 0, 0
        s.next_anchor = first_anchor(max(anchor_from, self.position, window - 1))
        self._tables = fresh._tables
        if self.source is None:
            self._tail = np.array(read(0, window), dtype=np.uint16)

    # -- scanning -----------------------------------------------------------------------

    def _fold_raw(self, leaving: np.ndarray, arriving: np.ndarray) -> tuple[int, int]:
        """Fold ``arriving`` (``leaving[i]``: the value W heaps before ``arriving[i]``); (event, folded)."""
        ffi, lib = self._module.ffi, self._module.lib
        done = ffi.new("uint64_t *")
        event = lib.octalgen_scan(
            self.state,
            ffi.from_buffer("uint16_t[]", leaving),
            ffi.from_buffer("uint16_t[]", arriving),
            len(arriving),
            ffi.from_buffer("uint64_t[]", self._tables),
            ffi.from_buffer("uint64_t[]", self.counts),
            ffi.from_buffer("uint64_t[]", self.first_seen),
            ffi.from_buffer("uint64_t[]", self.last_seen),
            done,
        )
        return event, int(done[0])

    def fold(self, values: np.ndarray):
        """Fold the next proven values; yield a :class:`ScanEvent` at each anchor or hash match.

        At an event, :meth:`window_values` gives the window ending at the event's heap.  Consume
        the generator fully.
        """
        values = np.asarray(values)
        w = self.window
        for start in range(0, len(values), _STEP):
            piece = np.ascontiguousarray(values[start : start + _STEP], dtype=np.uint16)
            if self.source is None:
                buffer = np.concatenate([self._tail, piece])
                leaving = buffer[: len(piece)]
            else:
                leaving = self._read(self.position - w, self.position - w + len(piece))
            folded = 0
            while folded < len(piece):
                event, done = self._fold_raw(leaving[folded:], piece[folded:])
                folded += done
                if event != FOLDED:
                    if self.source is None:
                        self._tail = buffer[folded : folded + w].copy()
                    yield ScanEvent(event, self.position - 1)
            if self.source is None:
                self._tail = buffer[len(buffer) - w :].copy()
