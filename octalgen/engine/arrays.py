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


#: The digests of large arrays, ``{id of the base64 text: (that text, sha256)}``: a consumer hands the
#: same packed array to every checkpoint, hashed once (the text is kept so that its id is not reused).
_DIGESTS: dict[int, tuple[str, str]] = {}
_DIGESTS_KEPT = 4


def _packed_arrays(node):
    """Every packed array (:func:`pack_array`'s dict, or its file form) in a body, depth first."""
    if isinstance(node, dict):
        if "dtype" in node and "length" in node and ("zlib" in node or "file" in node):
            yield node
        else:
            for value in node.values():
                yield from _packed_arrays(value)
    elif isinstance(node, list):
        for value in node:
            yield from _packed_arrays(value)


def outlined(node, directory: Path, write):
    """``node`` with each packed array over :data:`INLINE_LIMIT` replaced by its file (written if new,
    with ``write(path, data)``: atomically, as the checkpoint itself)."""
    if isinstance(node, list):
        return [outlined(value, directory, write) for value in node]
    if not isinstance(node, dict):
        return node
    if "zlib" in node and "dtype" in node and "length" in node:
        text = node["zlib"]
        if len(text) <= INLINE_LIMIT:
            return node
        known = _DIGESTS.get(id(text))
        data = None
        if known is None or known[0] is not text:
            data = base64.b64decode(text)
            known = (text, hashlib.sha256(data).hexdigest())
            _DIGESTS[id(text)] = known
            while len(_DIGESTS) > _DIGESTS_KEPT:
                del _DIGESTS[next(iter(_DIGESTS))]
        path = directory / ARRAYS / f"{known[1]}.zlib"
        if not path.exists():
            path.parent.mkdir(exist_ok=True)
            write(path, data if data is not None else base64.b64decode(text))
        return {"dtype": node["dtype"], "length": node["length"], "file": f"{ARRAYS}/{known[1]}.zlib",
                "sha256": known[1]}
    return {key: outlined(value, directory, write) for key, value in node.items()}


def inlined(body: dict, directory: Path) -> None:
    """Put the arrays of ``body`` kept in files back in place (checked against their digests)."""
    for node in _packed_arrays(body):
        if "file" not in node:
            continue
        path = directory / node["file"]
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise CheckpointError(f"checkpoint in {directory}: cannot read {path}: {exc.strerror}; it was left "
                                  "untouched") from None
        if hashlib.sha256(data).hexdigest() != node["sha256"]:
            raise CheckpointError(f"checkpoint in {directory}: {path} fails its checksum (corrupt or edited); it was "
                                  "left untouched")
        node["zlib"] = base64.b64encode(data).decode("ascii")
        del node["file"], node["sha256"]


def remove_unnamed_arrays(directory: Path, body: dict) -> None:
    named = {Path(node["file"]).name for node in _packed_arrays(body) if "file" in node}
    folder = directory / ARRAYS
    if folder.is_dir():
        for path in folder.iterdir():
            if path.name not in named:
                path.unlink(missing_ok=True)
