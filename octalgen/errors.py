"""The one error family of octalgen.

Library code raises these; the command line catches :class:`OctalgenError`,
prints its message as one line on stderr and exits with :attr:`exit_code`.
"""


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


class ToolMissingError(OctalgenError):
    """An external program (compiler, synthesis tool) is not installed."""


class BuildError(OctalgenError):
    """Generated code failed to compile; the message carries the compiler output."""


class ComputationError(OctalgenError):
    """A computation could not finish correctly (e.g. a value outgrew its storage)."""


class CheckpointError(InputError):
    """A checkpoint that is corrupt, unreadable or belongs to another run."""
