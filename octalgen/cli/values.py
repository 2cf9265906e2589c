"""``octalgen values CODE -n N``: write G(S) ... G(S+N-1)."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..api import iter_values
from ..backends import backends
from ..errors import Interrupted
from . import progress_for
from .arguments import (
    add_game,
    add_table,
    count_type,
    load_table,
    output_stream,
    positive_count_type,
    refuse_binary_on_terminal,
    threads_type,
    workers_type,
)

#: Output formats: text ones (None) and raw little-endian integers of a dtype.
FORMATS = {"text": None, "bfile": None, "u16": np.dtype("<u2"), "u32": np.dtype("<u4")}

DESCRIPTION = """\
Compute the nim-sequence values G(S) ... G(S+N-1) of a game and write them out: one decimal per
line, an OEIS b-file (--format bfile: one line 'n G(n)' per heap, the form in which the OEIS
takes a sequence's terms), or raw little-endian integers.  The default backend is the fastest exact one on this
machine (the generated C: speculative kernel, verifier and exact recovery), so every value
written is proven; 'reference' is the pure-Python definition every backend is tested against;
the '-speculative' backends give unproven values and say so.  Memory stays bounded for any N:
values are streamed as they are proven.  With -o a regular file appears only once it is complete;
a device or FIFO is written in place, as the values come."""

EXAMPLES = """\
examples:
  octalgen values .6 -n 100000                    Officers, one value per line
  octalgen values .6 -n 10 --start 20620          G(20620) ... G(20629)
  octalgen values .77 -n 1000 --format u16 -o kayles.u16
  octalgen values .6 -n 10000 --format bfile -o b046695.txt     OEIS b-file
  octalgen values .6 -n 5000 --backend reference  the pure-Python reference"""


def register(sub) -> None:
    names = ", ".join(f"{b.name} ({b.summary})" for b in backends().values())
    parser = sub.add_parser("values", help="compute values G(S) ... G(S+N-1)", description=DESCRIPTION, epilog=EXAMPLES)
    add_game(parser)
    parser.add_argument(
        "-n",
        "--count",
        type=positive_count_type,
        required=True,
        metavar="N",
        help="how many values (at least 1; S + N up to 1e15)",
    )
    parser.add_argument("--start", type=count_type, default=0, metavar="S", help="first heap size (default 0)")
    parser.add_argument(
        "--backend", metavar="NAME", help=f"how to compute; default: the fastest exact one available. Backends: {names}"
    )
    parser.add_argument(
        "--format",
        choices=tuple(FORMATS),
        default="text",
        help="text: one decimal per line; bfile: 'n G(n)' lines (OEIS b-file); u16/u32: raw little-endian integers",
    )
    parser.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")
    parser.add_argument("--threads", type=threads_type, metavar="T", help="kernel threads (C backends; default 1)")
    parser.add_argument(
        "--workers",
        type=workers_type,
        metavar="W",
        help="verifying processes (c backend; default: one per core; none on one core or for a small job)",
    )
    add_table(parser)
    parser.set_defaults(run=run)


def run(args) -> int:
    if FORMATS[args.format] is not None:
        refuse_binary_on_terminal(args.format, args.output)
    table = load_table(args) if args.table else None
    stop = args.start + args.count
    with progress_for(args, stop, label=args.game.code, writes_stdout=args.output is None) as progress:
        # The computation itself tells the display its phase (exact prefix, kernel, ...) and position.
        chunks = iter_values(
            args.game,
            args.count,
            args.start,
            backend=args.backend,
            table=table,
            threads=args.threads,
            workers=args.workers,
            progress=progress,
        )
        written = args.start  # G(start) ... G(written - 1) are written
        out = None
        try:
            with output_stream(args.output) as out:
                for position in _write(chunks, args.format, args.start, out):
                    written = position
        except Interrupted as stopped:  # values keeps no checkpoint: say nothing of one, but what was written
            raise Interrupted(
                stopped.signal_number, stopped.proven, checkpoints=False, what=_kept(args, out, stopped.proven, written)
            ) from None
    return 0


def _kept(args, out, proven: int | None, written: int) -> str:
    """What a stopped ``values`` leaves: what was proven, and what of it reached the output."""
    done = f"G(0) ... G({proven - 1}) proven" if proven else "nothing proven yet"
    where = args.output or "stdout"
    if args.output is not None and (out is None or not out.in_place):
        return f"{done}; nothing written to {where} (a file is written only once complete)"
    if written > args.start:
        return f"{done}; G({args.start}) ... G({written - 1}) written to {where}"
    return f"{done}; nothing written to {where}"


def _write(chunks, fmt: str, start: int, out):
    """Write the chunks of G(start) ... to ``out`` in format ``fmt`` (a key of :data:`FORMATS`).

    Yields the heap after the last value written, after each chunk.
    """
    dtype = FORMATS[fmt]
    position = start
    for chunk in chunks:
        if fmt == "bfile":
            out.write(bfile_lines(chunk, position))
        elif dtype is not None:  # the chunks are uint16 (octalgen.iter_values): every value fits
            out.write(chunk.astype(dtype, copy=False))
        else:
            out.write(decimal_lines(chunk))
        position += len(chunk)
        yield position


def decimal_lines(values: np.ndarray) -> bytes:
    """Non-negative integers as decimal text, one per line, formatted with array operations.

    The same bytes as ``"\\n".join(map(str, values)) + "\\n"``, several times faster: at millions of
    values, writing text would otherwise cost more than proving them.  Values below 65536 (all of
    them, for the C backends) are looked up in a table of their lines.
    """
    values = np.asarray(values, dtype=np.int64)
    if len(values) < 1 << 14 or values.min() < 0 or values.max() >= 1 << 16:  # few, or beyond the table
        return ("\n".join(map(str, values.tolist())) + "\n").encode() if len(values) else b""
    lines, lengths = _line_table()
    rows = lines[values]
    return rows[np.arange(6) < lengths[values][:, None]].tobytes()


def bfile_lines(values: np.ndarray, first: int) -> bytes:
    """OEIS b-file lines ``n a(n)`` of G(first), G(first+1), ...: the heap, a space, the value.

    n is always the heap, so a b-file starts where its sequence's OEIS offset says: ``--start 0``
    for A046695 (Officers, from G(0)), ``--start 1`` for the many sequences that begin at G(1).
    """
    heaps = range(first, first + len(values))
    return "".join(f"{n} {v}\n" for n, v in zip(heaps, np.asarray(values).tolist())).encode()


@lru_cache(maxsize=1)
def _line_table() -> tuple[np.ndarray, np.ndarray]:
    """Row v: the bytes of ``f"{v}\\n"`` padded to 6, and each row's length, for v < 65536."""
    v = np.arange(1 << 16)
    digits = 1 + (v >= 10) + (v >= 100) + (v >= 1000) + (v >= 10000)
    lines = np.zeros((1 << 16, 6), dtype=np.uint8)
    lines[v, digits] = ord("\n")
    for place in range(5):  # place 0 is the last digit, in column digits - 1
        has = digits > place
        lines[v[has], (digits - 1 - place)[has]] = ord("0") + (v[has] // 10**place) % 10
    return lines, digits + 1
