"""``octalgen fpga CODE --port P``: read a board's records and check them against the exact engine."""

from __future__ import annotations

import argparse
import logging
import time

from ..engine.planning import plan_game
from ..errors import ComputationError, InputError, ToolMissingError
from . import progress_for
from .arguments import add_game, add_table, count_type, load_table

log = logging.getLogger("octalgen")

DESCRIPTION = """\
Read the records a board built with `octalgen synth CODE --board B` sends over its serial link
(format: octalgen/hdl/records.py), show how far it has got, and prove what it computed: the
generated C engine catches up in the background, and every summary (digest of all values so far,
largest value and where, histogram, rolling hash and anchors of the period search) is compared
field by field with the exact values at the same heap.  A disagreement names the two record heaps
between which the first wrong value lies, and exits 1.  --checkpoint compares the digest of an
`octalgen run` checkpoint instead of waiting for the engine, at the record whose heap is the
checkpoint's (build with a --record-every that divides it).  --values asks the board for a short
range of values, checked one by one."""

EPILOG = """\
examples:
  octalgen fpga .6 --port /dev/ttyUSB0 --until 1e9
  octalgen fpga .6 --port /dev/ttyUSB0 --checkpoint runs/officers
  octalgen fpga .6 --port /dev/ttyUSB0 --values 300000000:100 --until 4e8"""

#: Seconds without a byte from the board before giving up.
SILENCE = 30.0


def register(sub) -> None:
    parser = sub.add_parser(
        "fpga",
        help="read a board's records over serial and check them against the exact engine",
        description=DESCRIPTION,
        epilog=EPILOG,
    )
    add_game(parser)
    parser.add_argument(
        "--port", required=True, metavar="DEVICE", help="the board's serial port (/dev/ttyUSB0), or a pyserial URL"
    )
    parser.add_argument(
        "--baud",
        type=float,
        default=3e6,
        metavar="BPS",
        help="bit rate the board was built with (default 3000000; see its board.json)",
    )
    parser.add_argument(
        "--until",
        type=count_type,
        metavar="N",
        help="stop once a record at heap N or later is checked (default: until interrupted)",
    )
    parser.add_argument(
        "--checkpoint",
        metavar="DIR",
        help="an `octalgen run` checkpoint: compare its digest at its heap, without the engine",
    )
    parser.add_argument(
        "--values",
        metavar="START:COUNT",
        help="ask the board for G(START) ... G(START+COUNT-1) (at most 1024) and check each",
    )
    add_table(parser)
    parser.set_defaults(run=run)


def open_link(port: str, baud: float):
    """The serial link (pyserial; the ``board`` extra)."""
    try:
        import serial
    except ImportError:
        raise ToolMissingError("pyserial is not installed: pip install 'octalgen[board]'") from None
    try:
        return serial.serial_for_url(port, baudrate=int(baud), timeout=0.25)
    except (serial.SerialException, ValueError) as exc:
        raise InputError(f"cannot open {port}: {exc}") from None


def _values_option(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    try:
        start, count = (count_type(part) for part in text.split(":"))
    except (ValueError, argparse.ArgumentTypeError):
        raise InputError(f"--values {text!r}: give START:COUNT, e.g. 300000000:100") from None
    if not 1 <= count <= 1024:
        raise InputError("--values: COUNT must be 1 to 1024")
    return start, count


def run(args) -> int:
    from ..hdl.host import ExactFollower, check_histogram, check_summary, check_values, checkpoint_digest
    from ..hdl.records import BoardSummary, Histogram, RecordReader, Values, request

    if args.baud <= 0:
        raise InputError("--baud must be positive")
    wanted_values = _values_option(args.values)
    plan, _prefix = plan_game(args.game, load_table(args), required=True)
    checkpoint = checkpoint_digest(args.checkpoint) if args.checkpoint else None
    link = open_link(args.port, args.baud)
    follower = None if checkpoint else ExactFollower(args.game, plan.window, table=plan.table)
    reader = RecordReader()
    progress = progress_for(args, args.until, label=f"fpga {args.game.code}")
    pending: list = []  # records waiting for the exact engine
    board_heap, proven, last_good, status = 0, 0, None, None
    summary_of = {}
    values_left = wanted_values  # the requested values, until checked
    if wanted_values:
        link.write(request(*wanted_values))
        if follower:
            follower.want_values(*wanted_values)
    heard = time.monotonic()
    try:
        while status is None:
            data = link.read(4096)
            now = time.monotonic()
            if data:
                heard = now
            elif now - heard > SILENCE:
                raise ComputationError(
                    f"no bytes from {args.port} for {SILENCE:.0f} s (is the board configured, "
                    f"and built for {args.baud:g} baud?)"
                )
            for record in reader.feed(data):
                if status is not None:
                    break  # decided: the records after it in the same read are not looked at
                if isinstance(record, BoardSummary):
                    board_heap = max(board_heap, record.heap)
                    summary_of[record.heap] = record
                    if record.error:
                        print(
                            f"the board's kernel raised its error flag: a value past G({record.heap - 1}) "
                            f"does not fit {plan.encoding.describe()}"
                        )
                        status = 1
                if checkpoint and isinstance(record, BoardSummary):
                    if record.heap == checkpoint[0]:
                        agree = record.hexdigest == checkpoint[1]
                        print(
                            f"G({record.heap:,}): board digest {record.hexdigest}, checkpoint {checkpoint[1]}: "
                            + ("agree" if agree else "DIFFER")
                        )
                        status = 0 if agree else 1
                    elif record.heap > checkpoint[0]:
                        raise ComputationError(
                            f"the board's records passed G({checkpoint[0]:,}) without one at that heap (records "
                            f"fall at multiples of the board's --record-every, and a busy link skips some): "
                            f"use a checkpoint whose heap is a multiple of it, or no --checkpoint"
                        )
                elif follower and isinstance(record, (BoardSummary, Histogram)):
                    follower.want(record.heap)
                    pending.append(record)
                elif follower and isinstance(record, Values):
                    pending.append(record)
            while follower and pending and status is None:
                record = pending[0]
                if isinstance(record, Values):
                    if record.late:
                        print(
                            f"the board had passed G({record.start:,}) when the request arrived: ask for a later START"
                        )
                        pending.pop(0)
                        values_left = None
                        continue
                    exact = follower.values(record.start)
                    if exact is None or follower.position < record.start + len(record.values):
                        break
                    bad = check_values(record, exact)
                    print(
                        f"G({record.start:,}) ... G({record.start + len(record.values) - 1:,}) from the board: "
                        + (
                            "all equal the exact values"
                            if bad is None
                            else f"first wrong value G({bad:,}) = {record.values[bad - record.start]}, "
                            f"exact {exact[bad - record.start]}"
                        )
                    )
                    if bad is not None:
                        status = 1
                    pending.pop(0)
                    values_left = None
                    continue
                exact_state = follower.state(record.heap)
                if exact_state is None:
                    break
                pending.pop(0)
                differences = (
                    check_summary(record, exact_state)
                    if isinstance(record, BoardSummary)
                    else check_histogram(record, exact_state)
                )
                if differences:
                    where = (
                        f"the first wrong value lies in G({last_good:,}) ... G({record.heap - 1:,}) "
                        f"(records agreed at G({last_good:,}))"
                        if last_good is not None
                        else f"at or before G({record.heap - 1:,}) (no earlier record)"
                    )
                    print(f"MISMATCH at the record of heap {record.heap:,}: " + "; ".join(differences))
                    print(f"the board's values and the exact engine's part before heap {record.heap:,}: {where}")
                    status = 1
                    break
                if isinstance(record, Histogram):
                    last_good = proven = record.heap
                    summary = summary_of.get(record.heap)
                    if summary is not None:
                        log.info(
                            "G(%d): digest %s, largest %d first at G(%d), %d hash matches: agree with the exact engine",
                            record.heap,
                            summary.hexdigest,
                            summary.largest,
                            summary.largest_at,
                            summary.matches,
                        )
            if status is None and args.until is not None and proven >= args.until and values_left is None:
                status = 0
            if follower and follower.error is not None:
                raise follower.error
            if args.until is not None:
                progress.update(proven, board_heap)
    finally:
        progress.close()
        if follower:
            follower.close()
        close = getattr(link, "close", None)
        if close:
            close()
    if reader.rejected:
        log.warning("%d records failed their CRC and were skipped (noise on the link?)", reader.rejected)
    if status == 0 and last_good is not None:
        summary = summary_of[last_good]
        print(
            f"board checked to G({last_good - 1:,}): digest fnv1a64 {summary.hexdigest} agrees with the exact "
            f"engine; largest value {summary.largest} first at G({summary.largest_at:,}); "
            f"{summary.matches} hash matches with the anchor G({summary.anchor:,})"
        )
    return status
