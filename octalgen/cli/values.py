"""``octalgen values CODE -n N``: write G(S) ... G(S+N-1)."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import numpy as np

from ..backends import backends, get_backend
from ..errors import InputError
from .arguments import add_game, add_table, count_type, load_table

log = logging.getLogger("octalgen")

FORMATS = {"text": None, "u16": np.dtype("<u2"), "u32": np.dtype("<u4")}


def register(sub) -> None:
    names = ", ".join(f"{b.name} ({b.summary})" for b in backends().values())
    parser = sub.add_parser("values", help="compute values G(S) ... G(S+N-1)")
    add_game(parser)
    parser.add_argument("-n", "--count", type=count_type, required=True, metavar="N", help="how many values")
    parser.add_argument("--start", type=count_type, default=0, metavar="S", help="first heap size (default 0)")
    parser.add_argument("--backend", metavar="NAME",
                        help=f"how to compute; default: the fastest exact one available. Backends: {names}")
    parser.add_argument("--format", choices=tuple(FORMATS), default="text",
                        help="text: one decimal per line; u16/u32: raw little-endian integers")
    parser.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")
    parser.add_argument("--threads", type=count_type, metavar="T", help="threads for backends that use them")
    add_table(parser)
    parser.set_defaults(run=run)


def run(args) -> int:
    backend = get_backend(args.backend)
    if not backend.exact:
        log.warning("backend %s gives speculative values: they are NOT proven", backend.name)
    table = load_table(args) if args.table else None
    chunks = backend.compute(args.game, args.start, args.count, table=table, threads=args.threads)
    if args.output:
        path = Path(args.output)
        partial = path.with_name(path.name + ".partial")
        try:
            with open(partial, "wb") as out:
                _write(chunks, args.format, args.start, out)
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
        os.replace(partial, path)
    else:
        _write(chunks, args.format, args.start, sys.stdout.buffer)
        sys.stdout.flush()
    return 0


def _write(chunks, fmt: str, start: int, out) -> None:
    dtype = FORMATS[fmt]
    position = start
    for chunk in chunks:
        if dtype is not None:
            limit = np.iinfo(dtype).max
            too_big = np.flatnonzero(chunk > limit)
            if len(too_big):
                at = int(too_big[0])
                raise InputError(
                    f"G({position + at}) = {int(chunk[at])} does not fit --format {fmt} (max {limit}); "
                    "use --format u32 or text"
                )
            out.write(chunk.astype(dtype).tobytes())
        else:
            out.write(("\n".join(map(str, chunk.tolist())) + "\n").encode() if len(chunk) else b"")
        position += len(chunk)
