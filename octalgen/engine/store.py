"""Proven values on disk: chunk files and their index.

A run with a checkpoint directory writes every proven value to ``DIR/values/``, one file per
stretch: ``G<first heap, 15 digits>.<kind>``.  ``kind`` is ``u8`` where the values are common
and below 512, stored as the plan's order-preserving byte codes (:class:`~octalgen.plan.Encoding`:
the lowest bit b of the rare mask is deleted and the higher bits shifted down; decoding puts b
back so that the value is common, i.e. has an odd number of set bits under the mask, or under
positional rarity an odd ``popcount(v & mask) + n + parity`` at its heap n), and ``u16``
(little-endian, raw) otherwise.  The index (first heap, count, kind, mask, dropped bit, the
positional parity if any, file name, sha256 per file) lives in the run's checkpoint, so it always matches the proven
position: files the index does not list (left by a run that was killed) are removed when the
run resumes.  A run that keeps every value has a file per 2^21 heaps, 2^15 of them at 2^36 heaps:
its index would fill the checkpoint (and be rewritten at every one).  So once more than
2 x :data:`SEGMENT_ENTRIES` entries are listed, the oldest :data:`SEGMENT_ENTRIES` are *sealed*:
written once to ``values/index-G<first heap>-<digest>.json``, which the checkpoint lists with its
sha256 (about 200 bytes for 2^32 heaps).  A checkpoint with sealed segments has layout 4, which
versions that do not read them refuse rather than prune the files they do not see.

What is kept is the run's choice (:class:`ValueStore` ``keep``): every value
(``--keep-values``, and ``octalgen period``, which reads values back to find the least
preperiod), or only the stretches the engine may need again (the exact prefix and the recent
values: see :mod:`.history`).  Files are written without waiting for the disk and made
durable (fsync) just before the checkpoint that lists them; a file is deleted only once a
checkpoint that no longer lists it is on disk.  So the checkpoint on disk always refers to
files that are there.

What is on disk may still be damaged or removed by something else.  A run that resumes checks
every listed file against its index (:meth:`ValueStore.damaged`: its size and sha256, which every
entry has carried since the first kept store; an entry without one is a malformed checkpoint) and
writes a damaged one again from values computed and proven anew (:meth:`ValueStore.repair`:
:mod:`.resume` has them computed), accepted only where they hash to what the index records.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np

from ..errors import CheckpointError
from ..plan import Encoding
from .checkpoint import fsync_directory, write_file_atomically

_DTYPES: dict[str, np.dtype] = {"u8": np.dtype("u1"), "u16": np.dtype("<u2")}

#: Values buffered before a file is written (a file is also written at every checkpoint).
FILE_VALUES = 1 << 21

#: Index entries per sealed segment (see the module docstring): a checkpoint lists fewer than twice
#: as many itself, about 200 bytes each.
SEGMENT_ENTRIES = 2048


class ValueStore:
    """The chunk files of one run directory.

    Parameters
    ----------
    directory : path
        The run's checkpoint directory (files go to its ``values/``).
    index : list of dict, optional
        Entries restored from a checkpoint (files already on disk), after the sealed ones.
    sealed : list of dict, optional
        The checkpoint's sealed segments of the index (:attr:`sealed`), read back and checked.

    Raises
    ------
    CheckpointError
        When a sealed segment is missing, or fails its checksum.
    """

    def __init__(self, directory, index=(), sealed=()):
        self.root = Path(directory) / "values"
        #: The segments of the index written to files of their own, oldest first: ``file``, ``entries``
        #: and ``sha256`` of each; :attr:`index` holds their entries first.
        self.sealed = [dict(segment) for segment in sealed]
        self.index = [entry for segment in self.sealed for entry in self._read_segment(segment)]
        self.index += [dict(entry) for entry in index]
        self._buffer: list[np.ndarray] = []
        self._codes: list[np.ndarray] = []  # the buffered parts' u8 codes, when the buffer is u8
        self._buffer_first = self.files_stop
        self._buffer_encoding: Encoding | None = None
        self._unsynced: list[Path] = []

    @property
    def files_stop(self) -> int:
        """The heap after the last value written to a file."""
        return self.index[-1]["first"] + self.index[-1]["count"] if self.index else 0

    @property
    def stop(self) -> int:
        """The heap after the last value appended (written or buffered)."""
        return self._buffer_first + sum(len(part) for part in self._buffer)

    @property
    def first(self) -> int:
        """The first heap the files hold (0 unless early files were deleted)."""
        return self.index[0]["first"] if self.index else self._buffer_first

    @property
    def inline(self) -> list[dict]:
        """The entries a checkpoint lists itself: those after the sealed segments."""
        return self.index[sum(segment["entries"] for segment in self.sealed) :]

    def prune_unlisted(self) -> None:
        """Remove chunk files not in the index (left by a run that was killed)."""
        if not self.root.is_dir():
            return
        listed = {entry["file"] for entry in self.index} | {segment["file"] for segment in self.sealed}
        for path in self.root.iterdir():
            if path.name not in listed:
                path.unlink()

    def append(
        self, first: int, values: np.ndarray, encoding: Encoding | None = None, codes: np.ndarray | None = None
    ) -> None:
        """Store proven values G(first) ...

        ``codes`` and ``encoding``: the kernel's codes the values were decoded from, and the
        plan's encoding of them; u8 codes are written as they are.  Values without codes (exact
        values, 16-bit codes) are written as 16-bit values.
        """
        if first != self.stop:
            raise ValueError(f"values must be stored in order: expected G({self.stop}), got G({first})")
        if codes is None or encoding is None or encoding.kind != "u8":
            encoding = None
        if self._buffer and encoding != self._buffer_encoding:
            self.flush()
        if not self._buffer:
            self._buffer_first, self._buffer_encoding = first, encoding
        self._buffer.append(np.asarray(values, dtype=np.uint16))
        if encoding is not None:
            self._codes.append(np.array(codes, dtype=np.uint8))  # a copy: the producer reuses its buffers
        if self.stop - self._buffer_first >= FILE_VALUES:
            self.flush()

    def flush(self) -> None:
        """Write the buffered values as one file (not yet durable: see :meth:`sync`)."""
        if not self._buffer:
            return
        values = np.concatenate(self._buffer)
        first, encoding, codes = self._buffer_first, self._buffer_encoding, self._codes
        self._buffer, self._codes, self._buffer_first = [], [], first + len(values)
        if encoding is not None:  # the kernel's u8 codes: common values that fit, by construction
            data = np.concatenate(codes)
            entry = {"kind": "u8", "mask": encoding.mask, "dropped_bit": encoding.dropped_bit}
            if encoding.parity is not None:  # only then: indexes of range runs stay as they were
                entry["parity"] = encoding.parity
        else:
            data = values.astype("<u2")
            entry = {"kind": "u16"}
        name = f"G{first:015d}.{entry['kind']}"
        payload = data.tobytes()
        self.root.mkdir(parents=True, exist_ok=True)
        path = self.root / name
        try:
            with open(path, "wb") as handle:
                handle.write(payload)
        except OSError as exc:
            path.unlink(missing_ok=True)
            raise CheckpointError(f"cannot write {path}: {_reason(exc)} (the last checkpoint is unchanged)") from None
        self._unsynced.append(path)
        self.index.append(
            {"first": first, "count": len(values), "file": name, "sha256": hashlib.sha256(payload).hexdigest(), **entry}
        )

    def sync(self) -> None:
        """Flush, seal what the checkpoint need not list itself, then make every file written since
        the last sync durable (before a checkpoint lists it)."""
        self.flush()
        while len(self.inline) >= 2 * SEGMENT_ENTRIES:
            self._seal(self.inline[:SEGMENT_ENTRIES])
        if not self._unsynced:
            return
        try:
            for path in self._unsynced:
                descriptor = os.open(path, os.O_RDONLY)
                try:
                    os.fsync(descriptor)
                finally:
                    os.close(descriptor)
            fsync_directory(self.root)
        except OSError as exc:
            raise CheckpointError(
                f"cannot write {self.root}: {_reason(exc)} (the last checkpoint is unchanged)"
            ) from None
        self._unsynced = []

    def retain(self, keep) -> list[dict]:
        """Drop from the index the files for which ``keep(first, stop)`` is false; returns them.

        Call :meth:`delete` with the result once a checkpoint without them is on disk.  A sealed
        segment that loses an entry is dropped with them, its other entries listed inline again
        (the next :meth:`sync` seals anew what is still too long).
        """
        kept: list[dict] = []
        dropped: list[dict] = []
        for entry in self.index:
            (kept if keep(entry["first"], entry["first"] + entry["count"]) else dropped).append(entry)
        if dropped and self.sealed:
            sealed_stop = self.sealed[-1]["stop"]
            if dropped[0]["first"] < sealed_stop:  # a sealed entry went: every segment is written anew
                dropped += self.sealed
                self.sealed = []
        self.index = kept
        return dropped

    def delete(self, entries) -> None:
        """Remove the files of ``entries`` (no longer listed by the checkpoint on disk)."""
        listed = {segment["file"] for segment in self.sealed}  # a segment sealed again has its old name
        for entry in entries:
            if entry["file"] not in listed:
                (self.root / entry["file"]).unlink(missing_ok=True)

    def _seal(self, entries: list[dict]) -> None:
        """Write ``entries`` (the oldest inline ones) as a sealed segment (durable at the next sync)."""
        payload = json.dumps({"entries": entries}, sort_keys=True, separators=(",", ":")).encode()
        digest = hashlib.sha256(payload).hexdigest()
        name = f"index-G{entries[0]['first']:015d}-{digest[:16]}.json"
        path = self.root / name
        try:
            path.write_bytes(payload)
        except OSError as exc:
            path.unlink(missing_ok=True)
            raise CheckpointError(f"cannot write {path}: {_reason(exc)} (the last checkpoint is unchanged)") from None
        self._unsynced.append(path)
        last = entries[-1]
        self.sealed.append(
            {
                "file": name,
                "entries": len(entries),
                "sha256": digest,
                "first": entries[0]["first"],
                "stop": last["first"] + last["count"],
            }
        )

    def _read_segment(self, segment: dict) -> list[dict]:
        path = self.root / segment["file"]
        try:
            payload = path.read_bytes()
        except OSError as exc:
            raise CheckpointError(f"cannot read the index segment {path}: {exc.strerror}") from None
        try:
            if hashlib.sha256(payload).hexdigest() != segment["sha256"]:
                raise ValueError
            entries = json.loads(payload)["entries"]
            if len(entries) != segment["entries"]:
                raise ValueError
        except (ValueError, KeyError, TypeError):
            raise CheckpointError(f"the index segment {path} fails its checksum (corrupt or edited)") from None
        return entries

    def damaged(self) -> list[tuple[dict, str]]:
        """The listed files that are missing or differ from the index (size, sha256), each with what
        is wrong with it, in order."""
        found = []
        for entry in self.index:
            path = self.root / entry["file"]
            try:
                payload = path.read_bytes()
            except FileNotFoundError:
                found.append((entry, "is missing"))
                continue
            except OSError as exc:
                found.append((entry, f"cannot be read ({exc.strerror})"))
                continue
            problem = _payload_problem(entry, payload)
            if problem is not None:
                found.append((entry, problem))
        return found

    def repair(self, entry: dict, values: np.ndarray) -> None:
        """Write the file of ``entry`` again from G(first) ... G(first + count - 1), proven anew: as it
        was written (u8 entries as the codes of their encoding), and only where that is byte for byte
        what the index records (its sha256).

        Raises
        ------
        CheckpointError
            When the values do not hash to the index's sha256 (an index edited along with the file).
        """
        path = self.root / entry["file"]
        values = np.asarray(values, dtype=np.uint16)
        data, same = values.astype("<u2"), True
        if entry["kind"] == "u8":  # the codes, which must stand for the values (common ones that fit)
            encoding = _encoding(entry)
            data = encoding.encode_array(values).astype(np.uint8)
            same = np.array_equal(encoding.decode_array(data, entry["first"]), values)
        payload = data.tobytes()
        if not same or len(values) != entry["count"] or hashlib.sha256(payload).hexdigest() != entry["sha256"]:
            raise CheckpointError(
                f"stored values {path} are damaged, and the values proven anew for them do not "
                "match the checksum the checkpoint records: was the checkpoint edited? It was left "
                "untouched"
            )
        self.root.mkdir(parents=True, exist_ok=True)
        try:
            write_file_atomically(path, payload)
        except OSError as exc:
            raise CheckpointError(f"cannot write {path}: {_reason(exc)}") from None

    def read(self, start: int, stop: int) -> np.ndarray:
        """G(start) ... G(stop-1) from the files and the buffer, as uint16 (each file's sha256 checked)."""
        parts = []
        position = start
        for entry in self.index:
            lo, hi = entry["first"], entry["first"] + entry["count"]
            if hi <= position or lo >= stop:
                continue
            if lo > position:
                break
            parts.append(self._read_file(entry)[position - lo : min(stop, hi) - lo])
            position = min(stop, hi)
        if position < stop and self._buffer and self._buffer_first <= position:
            buffered = np.concatenate(self._buffer)
            parts.append(buffered[position - self._buffer_first : stop - self._buffer_first])
            position = min(stop, self.stop)
        if position < stop:
            raise CheckpointError(f"the stored values do not cover G({position}) ... G({stop - 1})")
        return np.concatenate(parts) if parts else np.zeros(0, np.uint16)

    def _read_file(self, entry: dict) -> np.ndarray:
        path = self.root / entry["file"]
        try:
            payload = path.read_bytes()
        except OSError as exc:
            raise CheckpointError(f"cannot read stored values {path}: {exc.strerror}") from None
        if _payload_problem(entry, payload) is not None:
            raise CheckpointError(
                f"stored values {path} fail their checksum (damaged or edited; resuming the run computes them anew)"
            )
        data = np.frombuffer(payload, dtype=_DTYPES[entry["kind"]])
        if entry["kind"] == "u8":
            data = _encoding(entry).decode_array(data, entry["first"])
        return np.asarray(data, dtype=np.uint16)

    def covers(self, start: int, stop: int) -> bool:
        """True when G(start) ... G(stop-1) can be read (no file missing in between)."""
        position = start
        for entry in self.index:
            lo, hi = entry["first"], entry["first"] + entry["count"]
            if hi <= position:
                continue
            if lo > position:
                return False
            position = hi
            if position >= stop:
                return True
        return position >= stop or (bool(self._buffer) and self._buffer_first <= position and self.stop >= stop)


def _payload_problem(entry: dict, payload: bytes) -> str | None:
    """What is wrong with a file's bytes against its index ``entry`` (size, sha256); None: nothing."""
    size = entry["count"] * _DTYPES[entry["kind"]].itemsize
    if len(payload) != size:
        return f"holds {len(payload)} bytes, not {size}"
    if hashlib.sha256(payload).hexdigest() != entry["sha256"]:
        return "fails its checksum"
    return None


def _encoding(entry: dict) -> Encoding:
    """The byte encoding a ``u8`` file of ``entry`` was written in."""
    return Encoding("u8", entry["mask"], entry["dropped_bit"], entry.get("parity"))


def _reason(exc: OSError) -> str:
    import errno

    return "the disk is full" if exc.errno == errno.ENOSPC else exc.strerror or str(exc)
