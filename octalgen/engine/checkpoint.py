"""Checkpoints of a long run: one JSON file, written atomically, that checks itself.

``DIR/checkpoint.json`` holds ``{"schema", "sha256", "body"}``: ``sha256`` is the digest of
the canonical JSON of ``body``, so a truncated or edited file is recognised and refused.
Arrays are stored as zlib-compressed little-endian bytes in base64.

Writing goes to ``checkpoint.json.tmp``, which is flushed and fsync'd, renamed over the old
checkpoint, and the directory fsync'd: at any moment (``kill -9`` included) the file is either
the previous checkpoint or the new one.  A failed write leaves the previous checkpoint as it
was and raises :class:`~octalgen.errors.CheckpointError`.
"""

from __future__ import annotations

import base64
import errno
import hashlib
import json
import os
import zlib
from pathlib import Path

import numpy as np

from ..errors import CheckpointError

SCHEMA = "octalgen-run-checkpoint/1"
FILENAME = "checkpoint.json"

#: Layout of the body this version writes (``octalgen_checkpoint``).  Layout 1 (octalgen 0.1)
#: held only the last W values besides the prefix: a run could not always go on from it.
LAYOUT = 2


def pack_array(array) -> dict:
    """A numpy array as a JSON-friendly dict (dtype, length, zlib + base64 bytes)."""
    array = np.ascontiguousarray(array)
    little = array.astype(array.dtype.newbyteorder("<"), copy=False)
    return {"dtype": array.dtype.name, "length": len(array),
            "zlib": base64.b64encode(zlib.compress(little.tobytes(), 6)).decode("ascii")}


def unpack_array(packed: dict) -> np.ndarray:
    """The inverse of :func:`pack_array`."""
    dtype = np.dtype(packed["dtype"]).newbyteorder("<")
    array = np.frombuffer(zlib.decompress(base64.b64decode(packed["zlib"])), dtype=dtype)
    if len(array) != packed["length"]:
        raise ValueError("array length does not match")
    return array.astype(dtype.newbyteorder("="))


def _canonical(body: dict) -> bytes:
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def checkpoint_path(directory) -> Path:
    return Path(directory) / FILENAME


def check_writable(directory) -> None:
    """Make ``directory`` if needed and make sure a file can be written there, before any work."""
    directory = Path(directory)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        probe = directory / ".octalgen-write-test"
        with open(probe, "wb") as handle:
            handle.write(b"ok")
            handle.flush()
            os.fsync(handle.fileno())
        probe.unlink()
    except OSError as exc:
        raise CheckpointError(f"checkpoint directory {directory} is not writable: {exc.strerror}") from None


def write_file_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` via a temporary file, fsync, rename and directory fsync.

    Raises
    ------
    OSError
        When any step fails; the temporary file is removed and ``path`` is unchanged.
    """
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise
    fsync_directory(path.parent)


def fsync_directory(directory: Path) -> None:
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def write_checkpoint(directory, body: dict) -> None:
    """Write ``body`` as the checkpoint of ``directory`` (atomically; see the module docstring)."""
    path = checkpoint_path(directory)
    payload = _canonical(body)
    document = {"schema": SCHEMA, "sha256": hashlib.sha256(payload).hexdigest(), "body": body}
    try:
        write_file_atomically(path, json.dumps(document, sort_keys=True, separators=(",", ":")).encode())
    except OSError as exc:
        reason = "the disk is full" if exc.errno == errno.ENOSPC else exc.strerror or str(exc)
        raise CheckpointError(f"cannot write checkpoint {path}: {reason} "
                              "(the previous checkpoint is unchanged)") from None


def read_checkpoint(directory) -> dict | None:
    """The body of ``directory``'s checkpoint, or None when it has none.

    Raises
    ------
    CheckpointError
        When the file cannot be read, is not a checkpoint, or fails its checksum.  The file is
        never modified.
    """
    path = checkpoint_path(directory)
    if not path.exists():
        return None
    refuse = f"checkpoint {path}"
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise CheckpointError(f"cannot read {refuse}: {exc.strerror}") from None
    try:
        document = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise CheckpointError(f"{refuse} is truncated or corrupt (not valid JSON); it was left untouched") from None
    if not isinstance(document, dict) or document.get("schema") != SCHEMA or not isinstance(document.get("body"), dict):
        raise CheckpointError(f"{refuse} is not an octalgen run checkpoint ({SCHEMA}); it was left untouched")
    if hashlib.sha256(_canonical(document["body"])).hexdigest() != document.get("sha256"):
        raise CheckpointError(f"{refuse} fails its checksum (corrupt or edited); it was left untouched")
    return document["body"]


def check_layout(body: dict, directory) -> None:
    """Raise :class:`CheckpointError` unless ``body`` has the layout this version writes."""
    layout = body.get("octalgen_checkpoint")
    if layout == LAYOUT:
        return
    if layout == 1:
        raise CheckpointError(f"checkpoint in {directory} was written by octalgen 0.1, whose checkpoints lack the "
                              "recent values a run needs to go on; start the run again in a new directory "
                              "(this one was left untouched)")
    raise CheckpointError(f"checkpoint in {directory} has an unknown layout {layout!r}; it was left untouched")
