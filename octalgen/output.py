"""Writing a command's output file without ever damaging what is at the path.

Every file a command writes at a user's request (``-o``, ``--out``, ``--plot``) goes through
:func:`output_file` (or :func:`write_output` for content already in memory):

* a regular file, or a path where nothing is yet, is replaced **atomically**: the bytes go to a
  temporary file in the same directory, which is flushed, fsync'd and renamed over the path only
  once everything was written.  A reader sees the old file or the whole new one; a failed
  command leaves neither a half-written file nor the temporary one.  (A file with other hard
  links is replaced under this name only: the other names keep the old content.)
* a character or block device and a FIFO are written **in place**: renaming a file over
  ``/dev/full`` or over a named pipe would replace the device or the pipe itself by a file, and
  the pipe's reader would get nothing.
* a symbolic link is **followed** and kept: what it points to is written by the rules above (a
  dangling link gets its target created).
* a directory, or anything else (a socket), is refused.

Every failure (a full disk, a missing directory, no permission, ``/proc``) is an
:class:`~octalgen.errors.OutputError` reading ``cannot write PATH: reason``, PATH as the user
wrote it; a path that names no place to write (its directory missing, a directory where a file
belongs, a file where a directory belongs) is an :class:`~octalgen.errors.OutputPathError`, bad
input.  A directory is made only where a command makes its own folder (a checkpoint directory,
``emit``'s ``DIR/<game>``); a missing directory above what the user named is refused, so a
mistyped path is not created.  :func:`check_output` (and :func:`check_directory` and :func:`check_new_directory`, for
folders) makes the same decisions and leaves nothing behind, so that a command refuses a path it
could never write *before* a long computation.
"""

from __future__ import annotations

import logging
import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from .errors import OutputError, OutputPathError

log = logging.getLogger("octalgen")

#: How many temporary names are tried before giving up (each one is random: a clash is very rare).
_TEMPORARY_TRIES = 8


class OutputWriter:
    """A binary output file being written; a failed write raises :class:`OutputError` naming the path.

    Only :meth:`write` and :meth:`flush` are offered: that is all the commands (and
    ``numpy.lib.format``) use, and it keeps every write behind the conversion of ``OSError``
    into the one-line error.

    Parameters
    ----------
    handle : binary file
        The open file (the temporary file, or the device or FIFO itself).
    path : path
        The path as the user gave it, for messages.
    in_place : bool
        True for a device or FIFO, written as the bytes come; False for a file, which appears
        (or is replaced) only once the whole output was written.

    Attributes
    ----------
    written : int
        Bytes written so far.
    """

    def __init__(self, handle, path, in_place: bool = False):
        self._handle = handle
        self.path = path
        self.in_place = in_place
        self.written = 0

    def write(self, data) -> int:
        """Write ``data`` (bytes-like); returns the number of bytes written."""
        try:
            count = self._handle.write(data)
        except OSError as exc:
            raise _error(self.path, exc) from None
        self.written += count
        return count

    def flush(self) -> None:
        """Hand what is buffered to the operating system."""
        try:
            self._handle.flush()
        except OSError as exc:
            raise _error(self.path, exc) from None


@contextmanager
def output_file(path) -> Iterator[OutputWriter]:
    """Open ``path`` for a command's output: replaced atomically, or written in place (see the module).

    The file (or the temporary file, for an atomic replacement) is opened when the block is
    entered, so a path that cannot be written fails before the block does any work; a FIFO is
    opened then too, which waits for its reader as a shell redirection does.  When the block
    ends normally everything is flushed (and fsync'd, and renamed into place); when it raises,
    the temporary file is removed and the target is left as it was.

    Parameters
    ----------
    path : str or path-like
        Where the output goes.

    Yields
    ------
    OutputWriter
        Write the output's bytes to it.

    Raises
    ------
    OutputError
        When the path is a directory or a socket, or opening, writing, syncing or renaming fails.
    """
    path = Path(path)
    target, in_place = _resolve(path)
    if in_place:
        temporary, handle = None, _guarded(path, open, target, "wb")
    else:
        temporary, handle = _create_temporary(target, path)
    try:
        writer = OutputWriter(handle, path, in_place)
        yield writer
        _finish(path, handle, synced=temporary is not None)
        if temporary is not None:
            _guarded(path, os.replace, temporary, target)
            _sync_directory(target.parent)
        log.debug(
            "wrote %s: %d bytes, %s",
            path,
            writer.written,
            "in place" if temporary is None else f"renamed into place from {temporary.name}",
        )
    except BaseException:
        _discard(handle, temporary)
        raise


def write_output(path, content: bytes | str) -> None:
    """Write ``content`` (text is written as UTF-8) to ``path`` by the rules of :func:`output_file`.

    Raises
    ------
    OutputError
        When ``path`` cannot be written; nothing half-written is left behind.
    """
    with output_file(path) as out:
        out.write(content.encode() if isinstance(content, str) else content)


def check_output(path) -> None:
    """Make sure ``path`` can be written, without writing it: the cheap check before a long computation.

    A device or FIFO must be writable; for a file (new or to be replaced) a temporary file is
    created in its directory and removed again, which is what :func:`output_file` will do (a
    permission check alone would pass for root in ``/proc`` or on a read-only mount).

    Parameters
    ----------
    path : str or path-like
        Where the output will go; its directory must exist.

    Raises
    ------
    OutputError
        With the reason the path cannot be written.
    """
    path = Path(path)
    target, in_place = _resolve(path)
    if in_place:
        if not os.access(target, os.W_OK):
            raise OutputError(f"cannot write {path}: permission denied")
        return
    temporary, handle = _create_temporary(target, path)
    _discard(handle, temporary)


def check_directory(directory) -> None:
    """Make a per-game folder ``DIR/<game>`` and ``DIR`` where missing; make sure files can be created in it.

    For commands that write files of their own naming into a folder of the directory the user
    named (``emit c``, ``emit hdl``): ``DIR`` and the game's folder are made, as
    :func:`check_new_directory` makes a checkpoint directory; a missing directory above ``DIR``
    is refused.

    Raises
    ------
    OutputPathError
        When the directory above ``DIR`` does not exist, or a file stands where a folder belongs.
    OutputError
        Reading ``cannot write into DIRECTORY: reason``.
    """
    directory = Path(directory)
    check_new_directory(directory.parent)
    if directory.parent.is_dir():  # else it is made below, and nothing stands in the game folder's place
        check_new_directory(directory)
    label = f"into {directory}"
    _guarded(label, directory.mkdir, parents=True, exist_ok=True)  # at most DIR and the game's folder
    temporary, handle = _create_temporary(directory / ".octalgen-check", label)
    _discard(handle, temporary)


def check_new_directory(directory, what: str = "directory") -> None:
    """Refuse ``directory`` as a folder a command makes (or reuses) when it cannot be one.

    For ``--checkpoint DIR``: an existing directory is taken as it is; a missing one must have
    an existing directory above it (the command makes only ``DIR`` itself); anything else there
    (a file) is refused.  Nothing is created.

    Parameters
    ----------
    directory : str or path-like
        The folder, as the user gave it.
    what : str
        What the folder is for, in the message (``checkpoint directory``).

    Raises
    ------
    OutputPathError
        ``cannot use DIR as a checkpoint directory: it is a file``, or ``cannot write DIR: the
        directory PARENT does not exist``.
    """
    directory = Path(directory)
    if directory.is_dir():
        return
    if directory.exists() or directory.is_symlink():
        kind = "a file" if directory.is_file() else "a dangling link" if directory.is_symlink() else "not a directory"
        raise OutputPathError(f"cannot use {directory} as a {what}: it is {kind}")
    parent = Path(os.path.realpath(directory)).parent
    if not parent.is_dir():
        raise OutputPathError(f"cannot write {directory}: the directory {parent} does not exist")


def _resolve(path: Path) -> tuple[Path, bool]:
    """What writing ``path`` means: (the file to write, whether it is written in place).

    Symbolic links are followed, so the link itself is never replaced.
    """
    target = Path(os.path.realpath(path))
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        return target, False
    except OSError as exc:  # e.g. a loop of links, or a file used as a directory
        raise _error(path, exc) from None
    if stat.S_ISDIR(mode):
        raise OutputPathError(f"cannot write {path}: it is a directory (name a file in it)")
    if stat.S_ISREG(mode):
        return target, False
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISFIFO(mode):
        return target, True
    raise OutputError(f"cannot write {path}: it is neither a file, a device nor a FIFO")


def _create_temporary(target: Path, label) -> tuple[Path, object]:
    """A new temporary file beside ``target``: (its path, the open binary file).

    It gets the mode of the file it will replace, or the mode a new file gets (0666 less the
    umask).  ``label`` is what an error message calls the output.
    """
    try:
        keep_mode = stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        keep_mode = None
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for attempt in range(_TEMPORARY_TRIES):
        temporary = target.with_name(f".{target.name}.{secrets.token_hex(4)}.partial")
        try:
            descriptor = os.open(temporary, flags, 0o666)
            break
        except FileExistsError:
            if attempt == _TEMPORARY_TRIES - 1:
                raise OutputError(f"cannot write {label}: no free temporary name beside it") from None
        except FileNotFoundError:
            if not target.parent.is_dir():
                raise OutputPathError(f"cannot write {label}: the directory {target.parent} does not exist") from None
            # The directory is there but takes no new file: /proc, /sys.
            raise OutputError(f"cannot write {label}: no file can be created in {target.parent}") from None
        except OSError as exc:
            raise _error(label, exc) from None
    try:
        if keep_mode is not None:
            os.fchmod(descriptor, keep_mode)
        return temporary, os.fdopen(descriptor, "wb")
    except OSError as exc:
        os.close(descriptor)
        temporary.unlink(missing_ok=True)
        raise _error(label, exc) from None


def _finish(path: Path, handle, synced: bool) -> None:
    """Flush and close ``handle``; with ``synced``, fsync it first (a file about to be renamed into place)."""
    try:
        handle.flush()
        if synced:  # a rename must not reach the disk before the bytes it publishes
            os.fsync(handle.fileno())
        handle.close()
    except OSError as exc:
        raise _error(path, exc) from None


def _discard(handle, temporary: Path | None) -> None:
    """Close ``handle`` ignoring errors (it failed already) and remove ``temporary`` if there is one."""
    with suppress(OSError):
        handle.close()
    if temporary is not None:
        with suppress(OSError):
            temporary.unlink(missing_ok=True)


def _sync_directory(directory: Path) -> None:
    """fsync ``directory``, so that the rename survives a crash; best effort (not every file system allows it)."""
    try:
        descriptor = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


def _guarded(label, operation, *args, **kwargs):
    """``operation(*args, **kwargs)``, an ``OSError`` turned into :func:`_error`'s one line."""
    try:
        return operation(*args, **kwargs)
    except OSError as exc:
        raise _error(label, exc) from None


def _error(label, exc: OSError) -> OutputError:
    """``cannot write LABEL: reason``, the reason as the operating system words it (lower case first)."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    return OutputError(f"cannot write {label}: {reason[:1].lower() + reason[1:]}")
