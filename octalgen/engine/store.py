"""Proven values on disk (``run --keep-values``): chunk files and their index.

Each proven stretch is one file ``DIR/values/G<first heap, 15 digits>.<kind>``, written
atomically (temporary file, fsync, rename).  ``kind`` is ``u8`` where the kernel stores
compressed codes (the plan's order-preserving byte encoding: one byte per value; the index
records the mask and dropped bit that decode it) and ``u16`` otherwise (the exact prefix, which
holds the rare values, and runs in 16-bit storage).

The index (a list of entries: first heap, count, kind, mask, dropped bit, file name, sha256) is
kept in the run's checkpoint, so it always matches the proven position: files past it, left by
an interrupted run, are removed on resume.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from ..errors import CheckpointError
from ..plan import Encoding
from .checkpoint import read_checkpoint, write_file_atomically

_DTYPES = {"u8": np.dtype("u1"), "u16": np.dtype("<u2")}


class ValueStore:
    """The chunk files of one run directory.

    Parameters
    ----------
    directory : path
        The run's checkpoint directory (files go to its ``values/``).
    index : list of dict, optional
        Entries restored from a checkpoint.
    """

    def __init__(self, directory, index=()):
        self.root = Path(directory) / "values"
        self.index = [dict(entry) for entry in index]

    @property
    def stop(self) -> int:
        """The heap after the last stored value."""
        return self.index[-1]["first"] + self.index[-1]["count"] if self.index else 0

    def prune(self) -> None:
        """Remove chunk files not in the index (left by a run that was killed)."""
        if not self.root.is_dir():
            return
        listed = {entry["file"] for entry in self.index}
        for path in self.root.iterdir():
            if path.name not in listed:
                path.unlink()

    def append(self, first: int, values: np.ndarray, encoding: Encoding | None) -> None:
        """Store proven values G(first) ...: as codes of ``encoding`` when it is u8, else raw u16."""
        if first != self.stop:
            raise ValueError(f"values must be stored in order: expected G({self.stop}), got G({first})")
        if encoding is not None and encoding.kind == "u8":
            data = encoding.encode_array(values).astype(np.uint8)
            entry = {"kind": "u8", "mask": encoding.mask, "dropped_bit": encoding.dropped_bit}
        else:
            data = np.asarray(values).astype("<u2")
            entry = {"kind": "u16"}
        name = f"G{first:015d}.{entry['kind']}"
        payload = data.tobytes()
        self.root.mkdir(parents=True, exist_ok=True)
        write_file_atomically(self.root / name, payload)
        self.index.append({"first": first, "count": len(values), "file": name,
                           "sha256": hashlib.sha256(payload).hexdigest(), **entry})

    def read(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """G(start) ... G(stop-1) from the files, as uint16 (each file's checksum is checked)."""
        stop = self.stop if stop is None else stop
        if not 0 <= start <= stop <= self.stop:
            raise CheckpointError(f"the kept values cover G(0) ... G({self.stop - 1}), not G({start}) ... G({stop - 1})")
        parts = []
        for entry in self.index:
            lo, hi = entry["first"], entry["first"] + entry["count"]
            if hi <= start or lo >= stop:
                continue
            path = self.root / entry["file"]
            try:
                payload = path.read_bytes()
            except OSError as exc:
                raise CheckpointError(f"cannot read kept values {path}: {exc.strerror}") from None
            if hashlib.sha256(payload).hexdigest() != entry["sha256"]:
                raise CheckpointError(f"kept values {path} fail their checksum (corrupt or edited)")
            data = np.frombuffer(payload, dtype=_DTYPES[entry["kind"]])
            if entry["kind"] == "u8":
                data = Encoding("u8", entry["mask"], entry["dropped_bit"]).decode_array(data)
            parts.append(np.asarray(data[max(start, lo) - lo: min(stop, hi) - lo], dtype=np.uint16))
        return np.concatenate(parts) if parts else np.zeros(0, np.uint16)


class KeptValues:
    """The proven values a run kept on disk (``run --keep-values``), read back and checked.

    Parameters
    ----------
    directory : path
        The run's ``--checkpoint`` directory.

    Attributes
    ----------
    game : str
        The game's canonical code.
    stop : int
        N: the values G(0) ... G(N-1) are kept (the run's proven position).
    digest : str
        The run's FNV-1a-64 digest of G(0) ... G(N-1), 16 hex digits.

    Raises
    ------
    CheckpointError
        When the directory holds no run checkpoint, or the run did not keep its values.
    """

    def __init__(self, directory):
        body = read_checkpoint(directory)
        if body is None:
            raise CheckpointError(f"{directory} holds no run checkpoint (checkpoint.json)")
        if not body["parameters"]["keep_values"]:
            raise CheckpointError(f"the run in {directory} did not keep its values (run it with --keep-values)")
        self.game = body["parameters"]["game"]
        self.stop = body["position"]
        self.digest = f"{body['scanner']['fnv']:016x}"
        self._store = ValueStore(directory, body["values_index"])

    def chunks(self, start: int = 0, stop: int | None = None):
        """Yield ``(first heap, uint16 array)`` covering G(start) ... G(stop-1), one file at a time.

        Each file's sha256 is checked before its values are yielded.
        """
        stop = self.stop if stop is None else stop
        if not 0 <= start <= stop <= self._store.stop:
            raise CheckpointError(f"the kept values cover G(0) ... G({self._store.stop - 1}), "
                                  f"not G({start}) ... G({stop - 1})")
        for entry in self._store.index:
            lo, hi = entry["first"], entry["first"] + entry["count"]
            if hi > start and lo < stop:
                first = max(start, lo)
                yield first, self._store.read(first, min(stop, hi))


def read_kept_values(directory, start: int = 0, stop: int | None = None) -> np.ndarray:
    """G(start) ... G(stop-1) kept by ``octalgen run --keep-values --checkpoint directory``."""
    parts = [values for _first, values in KeptValues(directory).chunks(start, stop)]
    return np.concatenate(parts) if parts else np.zeros(0, np.uint16)
