"""The records a board sends over its serial link, and how to read them (host side, no hardware).

Every record is framed the same way::

    0xA5  KIND  PAYLOAD ...  CRC16 (2 bytes, little-endian)

``KIND`` is one ASCII letter; the CRC is CRC-16/CCITT-FALSE (polynomial
0x1021, initial value 0xFFFF, as :func:`binascii.crc_hqx` computes it) over
``KIND`` and the payload.  All numbers are little-endian.

``S`` summary (63 bytes of payload), sent every :attr:`BoardSettings.record_every` values
    (when the link is free; the heaps of summaries are multiples of it):

    ===========  =====  ==========================================================
    heap         u64    N: the record covers G(0) ... G(N - 1)
    digest       u64    FNV-1a-64 of G(0) ... G(N - 1)
    largest      u16    the largest value among them
    largest_at   u64    the first heap where it occurs
    crc          u64    the rolling CRC-64 H(N - 1) over the last W values (period search)
    anchor       u64    the last power-of-two anchor a (0: none yet)
    anchor_crc   u64    H(a)
    matches      u32    heaps n with a < n < N whose H(n) equals H(a), over the whole run
    last_match   u64    the last such heap (0: none)
    flags        u8     bit 0: the kernel raised its error flag (a value outgrew its storage)
    ===========  =====  ==========================================================

``H`` histogram, right after each summary: ``heap`` u64 (the same N), ``bins`` u16,
    then ``bins`` counts u64: count k is how many of G(0) ... G(N - 1) equal k
    (``bins - 1`` is the largest value).

``V`` values, the answer to a request: ``start`` u64, ``count`` u16, then ``count``
    values u16: G(start) ... G(start + count - 1).  ``count`` 0 means the request came
    too late (the board had passed ``start``).

The host asks for values with an 11-byte request ``R`` (0x52), ``start`` u64,
``count`` u16 (1 to :attr:`BoardSettings.capture_depth`); no frame, no CRC.  One
request at a time: one that arrives before the previous one is answered is
ignored.  The kernel cannot wait (it has no back-pressure), so ``start`` must
lie ahead of the board; a summary and its histogram go first when both are due.

Summaries are exact snapshots: the histogram is counted in two banks that swap
at the snapshot (the summary's fields are registered in the same clock), so
every field of a summary and its histogram describes the same N values while
the kernel runs on.  A summary falls due at every multiple of ``record_every``;
one that falls due while the link is busy is skipped, never delayed.
"""

from __future__ import annotations

import binascii
import struct
from dataclasses import dataclass

from ..errors import InputError

__all__ = [
    "SUMMARY_BYTES",
    "SUMMARY_FIELDS",
    "SUMMARY_FORMAT",
    "SYNC",
    "BoardSettings",
    "BoardSummary",
    "Histogram",
    "RecordError",
    "RecordReader",
    "Values",
    "crc16",
    "frame",
    "parse",
    "request",
]

SYNC = 0xA5
SUMMARY, HISTOGRAM, VALUES, REQUEST = b"S"[0], b"H"[0], b"V"[0], b"R"[0]

#: Payload layout of a summary (struct format, little-endian).
SUMMARY_FORMAT = "<QQHQQQQIQB"
SUMMARY_FIELDS = (
    "heap",
    "digest",
    "largest",
    "largest_at",
    "crc",
    "anchor",
    "anchor_crc",
    "matches",
    "last_match",
    "flags",
)
SUMMARY_BYTES = struct.calcsize(SUMMARY_FORMAT)


@dataclass(frozen=True)
class BoardSettings:
    """What the board's top level is built with (the host must know the same).

    Attributes
    ----------
    record_every : int
        A summary and a histogram every this many values (a power of two).
    clocks_per_bit : int
        UART bit time in clocks of the kernel's clock (8N1).
    capture_depth : int
        The most values one request may ask for.
    """

    record_every: int = 1 << 24
    clocks_per_bit: int = 30
    capture_depth: int = 1024

    def __post_init__(self):
        if self.record_every < 2 or self.record_every & (self.record_every - 1):
            raise InputError(f"record interval {self.record_every} must be a power of two, at least 2")
        if self.clocks_per_bit < 4:
            raise InputError(f"{self.clocks_per_bit} clocks per UART bit is too few (at least 4)")
        if not 1 <= self.capture_depth <= 1 << 16 or self.capture_depth & (self.capture_depth - 1):
            raise InputError(f"capture depth {self.capture_depth} must be a power of two up to 65536")


@dataclass(frozen=True)
class BoardSummary:
    """An ``S`` record: the statistics of G(0) ... G(heap - 1) as the board computed them (see the module docstring)."""

    heap: int
    digest: int
    largest: int
    largest_at: int
    crc: int
    anchor: int
    anchor_crc: int
    matches: int
    last_match: int
    flags: int

    @property
    def error(self) -> bool:
        return bool(self.flags & 1)

    @property
    def hexdigest(self) -> str:
        return f"{self.digest:016x}"


@dataclass(frozen=True)
class Histogram:
    """An ``H`` record: how many of G(0) ... G(heap - 1) equal each value."""

    heap: int
    counts: tuple[int, ...]  # count k: how many values equal k


@dataclass(frozen=True)
class Values:
    """A ``V`` record: G(start) ... G(start + len(values) - 1); none when the request came too late."""

    start: int
    values: tuple[int, ...]

    @property
    def late(self) -> bool:
        return not self.values


def crc16(data: bytes) -> int:
    """CRC-16/CCITT-FALSE of ``data`` (the records' check)."""
    return binascii.crc_hqx(data, 0xFFFF)


def frame(kind: int, payload: bytes) -> bytes:
    """A whole record (what the hardware sends; used by tests and the host's own checks)."""
    body = bytes([kind]) + payload
    return bytes([SYNC]) + body + struct.pack("<H", crc16(body))


def request(start: int, count: int) -> bytes:
    """The bytes that ask the board for G(start) ... G(start + count - 1)."""
    return bytes([REQUEST]) + struct.pack("<QH", start, count)


class RecordError(Exception):
    """A record that fails its CRC or has an unknown kind (the reader resynchronises)."""


class RecordReader:
    """Turns a byte stream into records; feed it whatever the link delivers.

    Bytes before a sync byte are skipped; a record that fails its CRC is
    counted in :attr:`rejected` and the search for the next sync byte starts
    one byte after the bad one.
    """

    def __init__(self):
        self._buffer = bytearray()
        self.rejected = 0

    def feed(self, data: bytes) -> list:
        """Append ``data``; return the records completed by it, in order."""
        self._buffer += data
        records: list[BoardSummary | Histogram | Values] = []
        while True:
            start = self._buffer.find(SYNC)
            if start < 0:
                self._buffer.clear()
                return records
            del self._buffer[:start]
            length = self._length(self._buffer)
            if length is None:
                return records  # incomplete
            if length < 0:  # unknown kind
                self.rejected += 1
                del self._buffer[:1]
                continue
            if len(self._buffer) < length:
                return records
            raw = bytes(self._buffer[:length])
            body, (check,) = raw[1:-2], struct.unpack("<H", raw[-2:])
            if crc16(body) != check:
                self.rejected += 1
                del self._buffer[:1]
                continue
            del self._buffer[:length]
            records.append(parse(body))

    @staticmethod
    def _length(buffer) -> int | None:
        """Bytes of the record at the start of ``buffer`` (None: not known yet; -1: not a record)."""
        if len(buffer) < 2:
            return None
        kind = buffer[1]
        if kind == SUMMARY:
            return 2 + SUMMARY_BYTES + 2
        if kind == HISTOGRAM:
            if len(buffer) < 12:
                return None
            (bins,) = struct.unpack_from("<H", buffer, 10)
            return 12 + 8 * bins + 2
        if kind == VALUES:
            if len(buffer) < 12:
                return None
            (count,) = struct.unpack_from("<H", buffer, 10)
            return 12 + 2 * count + 2
        return -1


def parse(body: bytes) -> BoardSummary | Histogram | Values:
    """A record's kind and payload (without sync and CRC) as a :class:`BoardSummary`, :class:`Histogram`
    or :class:`Values`."""
    kind, payload = body[0], body[1:]
    if kind == SUMMARY:
        return BoardSummary(*struct.unpack(SUMMARY_FORMAT, payload))
    if kind == HISTOGRAM:
        heap, bins = struct.unpack_from("<QH", payload)
        return Histogram(heap, struct.unpack_from(f"<{bins}Q", payload, 10))
    if kind == VALUES:
        start, count = struct.unpack_from("<QH", payload)
        return Values(start, struct.unpack_from(f"<{count}H", payload, 10))
    raise RecordError(f"unknown record kind {kind:#x}")
