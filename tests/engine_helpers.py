"""Helpers shared by the engine tests: a run as ``octalgen run`` makes it in this process, values
from the ``c`` backend to check it against, and octalgen's command line run as a separate process
(``octalgen_command``, ``run_octalgen``), with the checkpoint position of such a run (the resume and
signal tests)."""

import os
import signal
import subprocess
import sys

from octalgen.backends import compute_values
from octalgen.engine.checkpoint import read_checkpoint
from octalgen.engine.options import EngineOptions
from octalgen.engine.run_summary import summarized_run
from octalgen.engine.seams import Consumer
from octalgen.engine.tally import RecurrenceProof, Tally
from octalgen.game import parse_game


class StopAt(Consumer):
    """A consumer that presses Ctrl-C (or sends ``signal_number``) once ``position`` is proven: the signal
    goes to this process, and the engine (running in the main thread) stops at its next safe point."""

    name = "stop-at"

    def __init__(self, position: int, signal_number: int = signal.SIGINT):
        self.position = position
        self.signal_number = signal_number
        self.sent = False

    def accept(self, first, values) -> None:
        if not self.sent and first + len(values) >= self.position:
            self.sent = True  # once: a second signal acts at once, as the engine's handler promises
            os.kill(os.getpid(), self.signal_number)


def run_engine(
    code,
    until,
    directory=None,
    stop_at=None,
    table=None,
    keep_all=False,
    digest_from=0,
    prover=RecurrenceProof,
    kernels=None,
    **options,
):
    """A run as ``octalgen run`` makes it (:func:`~octalgen.engine.run_summary.summarized_run`), in this
    process, with any engine option (``prover``: the tally's; ``stop_at``: a Ctrl-C there); returns its
    summary."""
    game = parse_game(code)
    tally = Tally(digest_from, prover(game.max_take) if prover else None)
    stop = (StopAt(stop_at),) if stop_at is not None else ()
    return summarized_run(
        game,
        EngineOptions(until=until, **options),
        tally,
        stop,
        table=table,
        directory=directory,
        identity={"command": "run", "digest_from": digest_from},
        keep_all=keep_all,
        kernels=kernels,
    )[1]


def c_values(code, count):
    """Values from the ``c`` backend (itself checked against the reference by test_backend_c)."""
    return compute_values(code, 0, count, backend="c", workers=0)


def octalgen_command(*arguments) -> list[str]:
    """``python -m octalgen ARGUMENTS``: the command line as a user types it, for a process of its own."""
    return [sys.executable, "-m", "octalgen", *map(str, arguments)]


def run_octalgen(*arguments, check: bool = True, timeout: float | None = None) -> subprocess.CompletedProcess:
    """Run ``octalgen ARGUMENTS`` as a separate process, its output captured as text; with ``check``
    its exit status must be 0 (the assertion shows its stderr)."""
    done = subprocess.run(octalgen_command(*arguments), check=False, capture_output=True, text=True, timeout=timeout)
    if check:
        assert done.returncode == 0, done.stderr
    return done


def _command(directory, until, *extra):
    return octalgen_command(
        "-q",
        "run",
        ".6",
        "--until",
        until,
        "--checkpoint",
        directory,
        "--chunk",
        1 << 16,
        "--checkpoint-every",
        "0.2",
        "--keep-values",
        "--json",
        *extra,
    )


def _position(directory) -> int:
    try:
        body = read_checkpoint(directory)
    except Exception:  # noqa: BLE001 - a checkpoint being replaced is read again
        return 0
    return body["position"] if body else 0
