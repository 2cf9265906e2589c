"""``octalgen export DIR``: the values a run kept (``run --keep-values``), read back and checked;
``octalgen export DIR --counts OUT``: the run's count tables in rogalski's layout (:mod:`~octalgen.engine.counts`).

**Chunk format.**  ``octalgen run --keep-values --checkpoint DIR`` writes the proven values
G(0) ... G(N-1) to files ``DIR/values/G<first heap, 15 digits>.<kind>``, one per proven
stretch, in heap order; the index of the files is kept in the run's checkpoint
(``DIR/checkpoint.json``, itself checksummed), one entry per file: its first heap, its count,
its kind, its sha256, and for ``u8`` the rare mask, the dropped bit and, for a sparse space of
positions, its parity.  A ``u16`` file holds
one little-endian 16-bit value per heap (the exact prefix, which holds the rare values, and
games whose values need 16 bits).  A ``u8`` file holds one byte per heap, only for common
values (an odd number of set bits under the rare mask M): with b the dropped bit (the lowest
set bit of M), a value v is stored as the byte c = ((v >> (b+1)) << b) | (v & (2^b - 1)),
i.e. bit b deleted and the higher bits shifted down; decoding re-inserts a 0 at bit b,
v' = ((c >> b) << (b+1)) | (c & (2^b - 1)), and sets bit b when v' has an even number of set
bits under M, so that the value is common again (b is in M, so exactly one of the two choices
is).  For Officers (M = 0x1ee, b = 1) this stores every value below 512 in one byte.  With a
parity P (a sparse space of positions, such as ``.104``'s) a value is common at its heap n when
popcount(v & M) + n + P is odd: decoding then sets bit b when popcount(v' & M) + n + P is even.

``export`` first reads every file, checks each against its sha256 and the whole of G(0) ...
G(N-1) against the run's FNV-1a-64 digest (so it reads all kept values even for a short range),
in bounded memory; only when all of that holds does it read the asked range again and write it
as text, an OEIS b-file (``n G(n)`` lines), raw ``u16`` or a ``.npy`` file.  So a corrupt file
anywhere gives an error and no output at all, on stdout as in a file.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import CheckpointError, InputError, OctalgenError
from ..output import check_output
from . import progress_for
from .arguments import count_type, output_stream, refuse_binary_on_terminal
from .values import bfile_lines, decimal_lines

FORMATS = ("text", "bfile", "u16", "npy")

#: Values per piece written (bounded memory within a large chunk file).
_PIECE = 1 << 20


def register(sub) -> None:
    parser = sub.add_parser(
        "export",
        help="read back the values a run kept (run --keep-values): text, bfile, u16 or npy",
        description="Read the proven values that `octalgen run ... --keep-values --checkpoint DIR` kept in "
        "DIR/values/, decode them, check every file against its sha256 in the checkpoint's index "
        "and all of them against the run's FNV-1a-64 digest, and then write G(S) ... G(S+N-1): as "
        "text (one value per line), bfile (OEIS b-file: 'n G(n)' lines), u16 (raw little-endian "
        "16-bit integers) or npy (a NumPy array of dtype <u2).  Memory stays bounded whatever the "
        "run's size; all kept values are read for the checks even when a short range is asked for.  "
        "Nothing is written unless everything checked out.",
        epilog="examples:\n"
        "  octalgen run .6 --until 1e7 --checkpoint runs/kept --keep-values\n"
        "  octalgen export runs/kept --start 20620 -n 10    # G(20620) ... G(20629)\n"
        "  octalgen export runs/kept --format bfile -o b046695.txt    # OEIS b-file\n"
        "  octalgen export runs/kept --format npy -o officers.npy     # for numpy.load\n"
        "  octalgen export runs/161 --counts tables    # tables/0.161/2, /4, ... /1073741824",
    )
    parser.add_argument("directory", metavar="DIR", help="the run's --checkpoint directory")
    parser.add_argument("--start", type=count_type, default=0, metavar="S", help="first heap (default 0)")
    parser.add_argument(
        "-n", "--count", type=count_type, metavar="N", help="how many values (default: all kept values from S on)"
    )
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="text",
        help="text: one decimal per line (default); bfile: 'n G(n)' lines (OEIS b-file); u16: raw "
        "little-endian uint16; npy: NumPy file",
    )
    parser.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write here instead of stdout: a regular file is replaced only once the whole output "
        "is written; a device or FIFO is written in place",
    )
    parser.add_argument(
        "--counts",
        metavar="OUT",
        help="instead of values: write the counts of each value among G(1) ... G(n), at every power "
        "of two n >= 2 the run passed and at its end, as OUT/0.<code>/<n> with one 'value count' "
        "line per value from 0 to the largest, zero counts included (the layout of "
        "rogalski-wmii-uni-lodz-pl/octal's results/); needs no kept values",
    )
    parser.set_defaults(run=run)


def run(args) -> int:
    from ..engine.kept_values import KeptValues

    if args.format in ("u16", "npy"):
        refuse_binary_on_terminal(args.format, args.output)
    if not Path(args.directory).is_dir():
        raise InputError(f"{args.directory}: no such directory")
    if args.counts is not None:
        return _export_counts(args)
    kept = KeptValues(args.directory)
    start = args.start
    count = kept.stop - start if args.count is None else args.count
    if args.count == 0:
        raise InputError("-n 0 asks for no values")
    if kept.stop == 0:
        raise InputError(f"the run in {args.directory} has kept no values yet")
    if start >= kept.stop or start + count > kept.stop:
        raise InputError(
            f"the run in {args.directory} kept G(0) ... G({kept.stop - 1}); "
            f"G({start}) ... G({start + count - 1}) goes beyond it"
        )
    if args.output:
        check_output(args.output)  # before every kept value is read and checked
    with progress_for(args, kept.stop, label=f"export {kept.game}", writes_stdout=args.output is None) as progress:
        progress.phase("checking")
        digest = _checked_digest(kept, progress)
        if digest != kept.digest:
            raise OctalgenError(
                f"the values kept in {args.directory} have digest {digest}, but the run proved "
                f"{kept.digest}: they are not the run's values (nothing written)"
            )
        progress.phase("writing")
        with output_stream(args.output) as out:
            if args.format == "npy":
                np.lib.format.write_array_header_1_0(out, {"descr": "<u2", "fortran_order": False, "shape": (count,)})
            _copy(kept, start, start + count, args.format, out)
    return 0


def _export_counts(args) -> int:
    """``--counts OUT``: the run's count tables, from its checkpoint, into OUT/0.<code>/."""
    from ..engine.run_summary import summary_of_checkpoint
    from .run import write_counts

    given = [
        option for option, value in (("--start", args.start), ("-n", args.count), ("-o", args.output)) if value
    ] + (["--format"] if args.format != "text" else [])
    if given:
        raise InputError(f"--counts writes the count tables, not values: {', '.join(given)} does not go with it")
    summary = summary_of_checkpoint(args.directory)
    if not summary.count_tables:
        raise InputError(f"the run in {args.directory} has proven fewer than two values: no table to write")
    write_counts(args.counts, summary)
    return 0


def _checked_digest(kept, progress) -> str:
    """The digest of every value ``kept`` (a KeptValues) holds, each file checked against its sha256 on the way."""
    from ..engine.scan import Scanner

    digest = Scanner(1, anchor_from=1 << 62)  # only its digest is used: no period-search anchors
    position = 0
    for first, values in kept.chunks(0, kept.stop):
        if first != position:
            raise CheckpointError(f"the index of kept values jumps from G({position}) to G({first})")
        for _event in digest.fold(values):
            pass
        position = first + len(values)
        progress.update(position)
    if position != kept.stop:
        raise CheckpointError(
            f"the kept values end at G({position - 1}), but the run proved G(0) ... G({kept.stop - 1})"
        )
    return digest.digest()


def _copy(kept, start: int, stop: int, fmt: str, out) -> None:
    """Write G(start) ... G(stop-1) of ``kept`` to ``out`` (its files are read, and sha256-checked, again)."""
    for first, values in kept.chunks(start, stop):
        for piece in range(0, len(values), _PIECE):
            _write(values[piece : piece + _PIECE], first + piece, fmt, out)


def _write(values: np.ndarray, first: int, fmt: str, out) -> None:
    """G(first), G(first+1), ... (``values``) to ``out`` in ``fmt``; npy is u16 after its header."""
    if fmt == "text":
        out.write(decimal_lines(values))
    elif fmt == "bfile":
        out.write(bfile_lines(values, first))
    else:
        out.write(values.astype("<u2", copy=False).tobytes())
