"""Arrays in a checkpoint: packed into its JSON, or into files of their own when large.

:func:`pack_array` turns an array into zlib-compressed little-endian bytes in base64 (a
JSON-friendly dict).  When a checkpoint is written, a packed array larger than
:data:`INLINE_LIMIT` goes to ``DIR/arrays/<sha256>.zlib`` instead (:func:`outlined`): written
once, named with its digest in the body, which the body's own digest covers; reading puts it
back and checks it (:func:`inlined`).  A file that no checkpoint names any more is removed once
the checkpoint that dropped it is on disk (:func:`remove_unnamed_arrays`).
"""

from __future__ import annotations

import base64
import hashlib
import zlib
from pathlib import Path

import numpy as np

from ..errors import CheckpointError

ARRAYS = "arrays"

#: Compressed bytes (base64) an array may take inside ``checkpoint.json``; larger ones go to files.
INLINE_LIMIT = 1 << 20


def pack_array(array) -> dict:
    """A numpy array as a JSON-friendly dict (dtype, length, zlib + base64 bytes; over
    :data:`INLINE_LIMIT`, also the sha256 of the compressed bytes, which names its file)."""
    array = np.ascontiguousarray(array)
    little = array.astype(array.dtype.newbyteorder("<"), copy=False)
    compressed = zlib.compress(little.tobytes(), 6)
    packed = {"dtype": array.dtype.name, "length": len(array), "zlib": base64.b64encode(compressed).decode("ascii")}
    if len(packed["zlib"]) > INLINE_LIMIT:  # hashed once here, not at every checkpoint that holds it
        packed["sha256"] = hashlib.sha256(compressed).hexdigest()
    return packed


def unpack_array(packed: dict) -> np.ndarray:
    """The inverse of :func:`pack_array`."""
    dtype = np.dtype(packed["dtype"]).newbyteorder("<")
    array = np.frombuffer(zlib.decompress(base64.b64decode(packed["zlib"])), dtype=dtype)
    if len(array) != packed["length"]:
        raise ValueError("array length does not match")
    return array.astype(dtype.newbyteorder("="))


def _is_packed(node) -> bool:
    """Whether ``node`` is :func:`pack_array`'s dict, or its file form."""
    return isinstance(node, dict) and "dtype" in node and "length" in node and ("zlib" in node or "file" in node)


def _packed_arrays(node):
    """Every packed array in a body, depth first."""
    if _is_packed(node):
        yield node
    elif isinstance(node, (dict, list)):
        for value in node.values() if isinstance(node, dict) else node:
            yield from _packed_arrays(value)


def outlined(node, directory: Path, write):
    """``node`` with each packed array over :data:`INLINE_LIMIT` (those with a ``sha256``) replaced by
    its file (written if new, with ``write(path, data)``: atomically, as the checkpoint itself)."""
    if _is_packed(node):
        if "sha256" not in node:
            return node
        path = directory / ARRAYS / f"{node['sha256']}.zlib"
        if not path.exists():
            path.parent.mkdir(exist_ok=True)
            write(path, base64.b64decode(node["zlib"]))
        return {
            "dtype": node["dtype"],
            "length": node["length"],
            "file": f"{ARRAYS}/{path.name}",
            "sha256": node["sha256"],
        }
    if isinstance(node, list):
        return [outlined(value, directory, write) for value in node]
    if isinstance(node, dict):
        return {key: outlined(value, directory, write) for key, value in node.items()}
    return node


def inlined(body: dict, directory: Path) -> None:
    """Put the arrays of ``body`` kept in files back in place (checked against their digests)."""
    for node in _packed_arrays(body):
        if "file" not in node:
            continue
        path = directory / node["file"]
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise CheckpointError(
                f"checkpoint in {directory}: cannot read {path}: {exc.strerror}; it was left untouched"
            ) from None
        if hashlib.sha256(data).hexdigest() != node["sha256"]:
            raise CheckpointError(
                f"checkpoint in {directory}: {path} fails its checksum (corrupt or edited); it was left untouched"
            )
        node["zlib"] = base64.b64encode(data).decode("ascii")
        del node["file"]  # the sha256 stays: the next checkpoint names the same file


def remove_unnamed_arrays(directory: Path, body: dict) -> None:
    named = {Path(node["file"]).name for node in _packed_arrays(body) if "file" in node}
    folder = directory / ARRAYS
    if folder.is_dir():
        for path in folder.iterdir():
            if path.name not in named:
                path.unlink(missing_ok=True)
