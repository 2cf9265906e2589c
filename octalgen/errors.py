"""The errors of octalgen: the one family a user is told about, and the one that means a bug.

Library code raises :class:`OctalgenError` and its subclasses for what a user can act on (bad
input, a missing tool, a full disk, a stopped run); the command line prints its message as one
line on stderr and exits with :attr:`~OctalgenError.exit_code`.

:class:`InternalError` is apart from that family: an internal invariant that does not hold, that
is a bug in octalgen.  It is not an :class:`OctalgenError`, so that no ``except OctalgenError``
swallows it; the command line prints it with its traceback and a request to report it, and
exits with :data:`INTERNAL_ERROR_EXIT` (``EX_SOFTWARE`` of BSD's ``sysexits.h``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "INTERNAL_ERROR_EXIT",
    "BuildError",
    "CheckpointError",
    "ComputationError",
    "GameCodeError",
    "InputError",
    "InternalError",
    "Interrupted",
    "OctalgenError",
    "OutputError",
    "OutputPathError",
    "TableError",
    "Terminated",
    "ToolMissingError",
    "stop_signal",
    "stopped_by",
]

#: The exit status of the command line for an :class:`InternalError` (or any other bug).
INTERNAL_ERROR_EXIT = 70


class OctalgenError(Exception):
    """Base class of every error octalgen reports to a user.

    Attributes
    ----------
    exit_code : int
        The process exit status the command line uses for this error:
        2 for bad input or usage, 1 for a failed computation.
    """

    exit_code = 1


class InputError(OctalgenError):
    """Bad input from the user: a malformed code, option or file."""

    exit_code = 2


class GameCodeError(InputError):
    """An octal code, game name or subtraction set that cannot be parsed."""


class TableError(InputError):
    """A rare-value table that is malformed, inconsistent or for another game."""


class OutputError(OctalgenError):
    """An output file that cannot be written: a full disk, a missing directory, no permission, a directory."""


class OutputPathError(OutputError, InputError):
    """An output path that names no place to write: its directory does not exist, or it names a file
    where a directory is needed (or a directory where a file is).  Bad input: exit status 2."""

    exit_code = 2


class ToolMissingError(OctalgenError):
    """An external program (compiler, synthesis tool) is not installed."""


class BuildError(OctalgenError):
    """Generated code failed to compile; the message carries the compiler output.

    Attributes
    ----------
    compiler_output : str
        All the compiler printed (empty where it did not run).
    kept : pathlib.Path or None
        Where the failed build's source and log were kept.
    """

    compiler_output: str = ""
    kept: Path | None = None


class ComputationError(OctalgenError):
    """A computation could not finish correctly (e.g. a value outgrew its storage)."""


class InternalError(RuntimeError):
    """An internal invariant does not hold: a bug in octalgen, to be reported with its traceback.

    Not an :class:`OctalgenError`: what a user can act on is one of those; this is not.
    """

    exit_code = INTERNAL_ERROR_EXIT


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Python raises :class:`KeyboardInterrupt` for Ctrl-C.

    The command line makes SIGTERM raise it wherever no run is under way (a run notices both at
    its next safe point instead, and raises :class:`Interrupted`), and a build raises it (or
    KeyboardInterrupt) when its compiler was stopped by SIGTERM (or Ctrl-C).  A KeyboardInterrupt,
    so that what cleans up after Ctrl-C (a compile's staging directory, a temporary directory)
    cleans up after it too.
    """


def stop_signal(stop: KeyboardInterrupt) -> int:
    """The signal behind a KeyboardInterrupt: SIGTERM for :class:`Terminated`, else SIGINT (Ctrl-C)."""
    import signal

    return signal.SIGTERM if isinstance(stop, Terminated) else signal.SIGINT


def stopped_by(signal_number: int) -> str:
    """``stopped by Ctrl-C`` or ``stopped by SIGTERM``: how a stopped command begins its line."""
    import signal

    return "stopped by " + ("Ctrl-C" if signal_number == signal.SIGINT else "SIGTERM")


class CheckpointError(InputError):
    """A checkpoint that is corrupt, unreadable or belongs to another run."""


class Interrupted(OctalgenError):
    """The user stopped a computation (Ctrl-C or SIGTERM); everything proven before is kept.

    Attributes
    ----------
    signal_number : int
        ``signal.SIGINT`` or ``signal.SIGTERM``.
    proven : int or None
        N: G(0) ... G(N-1) were proven when it stopped (None: ``what`` says what was done).
    checkpoint : path or None
        Where the checkpoint was written (None: the command keeps none).
    exit_code : int
        130 for SIGINT, 143 for SIGTERM (128 + the signal number, as shells report it).

    Notes
    -----
    ``checkpoints=False`` is for a command that cannot keep a checkpoint at all (``values``):
    its message then says nothing of one, rather than that none was asked for.
    """

    def __init__(
        self, signal_number: int, proven: int | None, checkpoint=None, what: str | None = None, checkpoints: bool = True
    ):
        self.signal_number, self.proven, self.checkpoint = signal_number, proven, checkpoint
        self.exit_code = 128 + signal_number
        done = what or (f"G(0) ... G({proven - 1}) proven" if proven else "nothing proven yet")
        if checkpoint is not None:
            where = f"; checkpoint in {checkpoint}"
        else:
            where = " (no checkpoint was asked for)" if checkpoints else ""
        super().__init__(f"{stopped_by(signal_number)}: {done}{where}")
