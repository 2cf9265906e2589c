"""Checkpoints of a long run: one JSON file, written atomically, that checks itself.

``DIR/checkpoint.json`` holds ``{"schema", "sha256", "body"}``: ``sha256`` is the digest of
the canonical JSON of ``body``, so a truncated or edited file is recognised and refused.
Arrays are packed by :mod:`.arrays`: inside the body when small, in files of their own when
large, so that the checkpoint stays small and quick to write at any heap.

Writing goes to ``checkpoint.json.tmp``, which is flushed and fsync'd, renamed over the old
checkpoint, and the directory fsync'd: at any moment (``kill -9`` included) the file is either
the previous checkpoint or the new one.  A failed write leaves the previous checkpoint as it
was and raises :class:`~octalgen.errors.CheckpointError`.

What a run's body holds is :class:`RunState`, a frozen value: :meth:`RunState.to_body` and
:meth:`RunState.from_body` are the only places that know the body's fields.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from .. import __version__
from ..errors import CheckpointError
from ..output import check_new_directory
from ..rare import RareTable, shipped_table
from .arrays import inlined, outlined, remove_unnamed_arrays

SCHEMA = "octalgen-run-checkpoint/1"
FILENAME = "checkpoint.json"

#: Layout of the body this version writes (``octalgen_checkpoint``).  Layout 1 (octalgen 0.1)
#: held only the last W values besides the prefix: a run could not always go on from it.
#: Layout 2 (octalgen 0.2) holds digests from a non-standard FNV offset basis (see checksum.py).
LAYOUT = 3

#: The layout of a checkpoint whose history lists sealed segments of its index (:mod:`.store`): the
#: same as LAYOUT otherwise, numbered apart so that a version that cannot read the segments refuses
#: it rather than take their files for a killed run's and delete them.
SEALED_LAYOUT = 4


def _canonical(body: dict) -> bytes:
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def checkpoint_path(directory) -> Path:
    return Path(directory) / FILENAME


def check_writable(directory) -> None:
    """Make ``directory`` if needed and make sure a file can be written there, before any work.

    Only ``directory`` itself is made: a missing directory above it, or a file in its place, is
    refused as any output path is (:func:`~octalgen.output.check_new_directory`).
    """
    directory = Path(directory)
    check_new_directory(directory, "checkpoint directory")
    try:
        directory.mkdir(exist_ok=True)
        probe = directory / ".octalgen-write-test"
        with open(probe, "wb") as handle:
            handle.write(b"ok")
            handle.flush()
            os.fsync(handle.fileno())
        probe.unlink()
    except OSError as exc:
        raise CheckpointError(f"checkpoint directory {directory} is not writable: {exc.strerror}") from None


def write_file_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` via a temporary file, fsync, rename and directory fsync.

    Raises
    ------
    OSError
        When any step fails; the temporary file is removed and ``path`` is unchanged.
    """
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    fsync_directory(path.parent)


def fsync_directory(directory: Path) -> None:
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def write_checkpoint(directory, body: dict) -> None:
    """Write ``body`` as the checkpoint of ``directory`` (atomically; see the module docstring)."""
    path = checkpoint_path(directory)
    try:  # the large arrays' files first, then the checkpoint that names them
        body = outlined(body, Path(directory), write_file_atomically)
        document = {"schema": SCHEMA, "sha256": hashlib.sha256(_canonical(body)).hexdigest(), "body": body}
        write_file_atomically(path, json.dumps(document, sort_keys=True, separators=(",", ":")).encode())
    except OSError as exc:
        reason = "the disk is full" if exc.errno == errno.ENOSPC else exc.strerror or str(exc)
        raise CheckpointError(
            f"cannot write checkpoint {path}: {reason} (the previous checkpoint is unchanged)"
        ) from None
    remove_unnamed_arrays(Path(directory), body)


def read_checkpoint(directory) -> dict | None:
    """The body of ``directory``'s checkpoint, or None when it has none.

    Raises
    ------
    CheckpointError
        When the file cannot be read, is not a checkpoint, or fails its checksum.  The file is
        never modified.
    """
    path = checkpoint_path(directory)
    if not path.exists():
        return None
    refuse = f"checkpoint {path}"
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise CheckpointError(f"cannot read {refuse}: {exc.strerror}") from None
    try:
        document = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise CheckpointError(f"{refuse} is truncated or corrupt (not valid JSON); it was left untouched") from None
    if not isinstance(document, dict) or document.get("schema") != SCHEMA or not isinstance(document.get("body"), dict):
        raise CheckpointError(f"{refuse} is not an octalgen run checkpoint ({SCHEMA}); it was left untouched")
    if hashlib.sha256(_canonical(document["body"])).hexdigest() != document.get("sha256"):
        raise CheckpointError(f"{refuse} fails its checksum (corrupt or edited); it was left untouched")
    inlined(document["body"], Path(directory))
    return document["body"]


def _claim_words(claim) -> str:
    return "a search for the period" if claim is None else "--period {} --preperiod {}".format(*claim)


#: How each field of a checkpoint's ``parameters`` is told to a user when a command's differs:
#: ``key: (theirs, ours) -> words``, ``theirs`` being the checkpoint's value and ``ours`` the command's.
#: The order is the order of telling: of several differences, the first here is the one said.
_MISMATCH_WORDS = {
    "command": lambda theirs, ours: f"it was written by octalgen {theirs}, not octalgen {ours}",
    "game": lambda theirs, ours: f"it is a run of {theirs}, not {ours}",
    "table": lambda theirs, ours: "it was started from another rare table (a different --table, or none)",
    "keep_values": lambda theirs, ours: (
        "its run keeps every proven value (--keep-values) and this command does not: add --keep-values"
        if theirs
        else "its run did not keep every proven value, which this command needs (octalgen period keeps them all; "
        "octalgen run keeps them with --keep-values)"
    ),
    "digest_from": lambda theirs, ours: (
        f"it was started with --digest-from {theirs or 0}, this command gives --digest-from {ours or 0}"
    ),
    "claim": lambda theirs, ours: f"it holds {_claim_words(theirs)}, this command asks for {_claim_words(ours)}",
}


def most_telling_first(identity: dict) -> list:
    """The items of ``identity``, those whose difference tells a user most first (the command, the game, ...)."""
    order = list(_MISMATCH_WORDS)
    return sorted(identity.items(), key=lambda item: order.index(item[0]) if item[0] in order else len(order))


def mismatch_reason(key: str, theirs, ours) -> str:
    """Why a checkpoint whose parameter ``key`` is ``theirs`` cannot be resumed by a command with ``ours``,
    in a user's words (options, not field names)."""
    words = _MISMATCH_WORDS.get(key)
    return words(theirs, ours) if words is not None else f"its {key} is {theirs!r}, this command's {ours!r}"


def check_layout(body: dict, directory) -> None:
    """Raise :class:`CheckpointError` unless ``body`` has the layout this version writes."""
    layout = body.get("octalgen_checkpoint")
    if layout in (LAYOUT, SEALED_LAYOUT):
        return
    if layout == 1:
        raise CheckpointError(
            f"checkpoint in {directory} was written by octalgen 0.1, whose checkpoints lack the "
            "recent values a run needs to go on; start the run again in a new directory "
            "(this one was left untouched)"
        )
    if layout == 2:
        raise CheckpointError(
            f"checkpoint in {directory} was written by octalgen 0.2, whose digests start from a "
            "non-standard offset basis (the digest is now the standard FNV-1a-64); start a new "
            "checkpoint directory (this one was left untouched)"
        )
    raise CheckpointError(f"checkpoint in {directory} has an unknown layout {layout!r}; it was left untouched")


@dataclass(frozen=True)
class RunState:
    """Everything a stopped run needs to go on exactly as if it had not stopped (a checkpoint's body).

    Attributes
    ----------
    parameters : dict
        What the run is (game, starting table, command and its parameters): a command whose own
        differ may not resume it.
    until : int
        The run's goal when it was written.
    position : int
        G(0) ... G(position-1) are proven.
    table, table_digest : str or None
        The rare table as YAML and its digest (None: the first values have not decided it yet).
    storage : str or None
        The kernel's value storage (``"u8"``, ``"u16"``; None: the plan's choice).
    files : list
        The history's files on disk listed in the checkpoint itself (:attr:`~.store.ValueStore.inline`).
    sealed : list
        The sealed segments of the files' index, each a file of its own (:attr:`~.store.ValueStore.sealed`).
    prefix_length, window : int
        The history's prefix and the kernel's window (:class:`~.history.History`).
    keep_all : bool
        The history keeps every value on disk.
    late_values : tuple of int or None
        The distinct values seen past the prefix (:meth:`~.history.History.late_values`; None in
        a checkpoint of octalgen 0.3.0, which did not keep them).
    consumers : dict
        ``{name: state}`` of the consumers that keep one.
    rare_found : tuple of (int, int)
        The rare values found by verification, ``(heap, value)``.
    mask_switches : tuple of (int, int, int)
        The changes of the rare mask where a rare value appeared far out, ``(heap, old mask, new mask)``.
    elapsed : float
        Wall seconds the run has taken over all its sessions.
    """

    parameters: dict
    until: int
    position: int
    table: str | None
    table_digest: str | None
    storage: str | None
    files: list
    sealed: list
    prefix_length: int
    window: int
    keep_all: bool
    late_values: tuple | None
    consumers: dict
    rare_found: tuple
    mask_switches: tuple
    elapsed: float

    def to_body(self) -> dict:
        """The checkpoint's body (JSON-friendly), in the current :data:`LAYOUT` (:data:`SEALED_LAYOUT`
        where the index has sealed segments)."""
        return {
            "octalgen_checkpoint": SEALED_LAYOUT if self.sealed else LAYOUT,
            "octalgen": __version__,
            "parameters": self.parameters,
            "until": self.until,
            "position": self.position,
            "table": self.table,
            "table_digest": self.table_digest,
            "storage": self.storage,
            "history": {
                "files": self.files,
                "sealed": self.sealed,
                "prefix_length": self.prefix_length,
                "window": self.window,
                "keep_all": self.keep_all,
                "late_values": list(self.late_values) if self.late_values is not None else None,
            },
            "consumers": self.consumers,
            "rare_found": [list(e) for e in self.rare_found],
            "mask_switches": [list(e) for e in self.mask_switches],
            "elapsed": self.elapsed,
        }

    @classmethod
    def from_body(cls, body: dict, directory) -> RunState:
        """The state in a checkpoint's ``body`` (read from ``directory``).

        Raises
        ------
        CheckpointError
            When the body has another layout or lacks a field (the checkpoint is left untouched).
        """
        check_layout(body, directory)
        try:
            history = body["history"]
            return cls(
                parameters=dict(body["parameters"]),
                until=int(body["until"]),
                position=int(body["position"]),
                table=body["table"],
                table_digest=body["table_digest"],
                storage=body["storage"],
                files=list(history["files"]),
                sealed=list(history.get("sealed", ())),
                prefix_length=int(history["prefix_length"]),
                window=int(history["window"]),
                keep_all=bool(history["keep_all"]),
                late_values=ints_or_none(history.get("late_values")),
                consumers=dict(body["consumers"]),
                rare_found=tuple((int(p), int(v)) for p, v in body["rare_found"]),
                mask_switches=tuple(tuple(int(x) for x in e) for e in body.get("mask_switches", ())),
                elapsed=float(body["elapsed"]),
            )
        except (KeyError, TypeError, ValueError) as exc:  # a body this version cannot read
            raise malformed(directory, exc) from None

    def check_resumable(self, identity: dict, until: int, directory) -> None:
        """Raise :class:`CheckpointError` unless a command of ``identity`` and ``until`` may go on from it."""
        where = f"checkpoint in {directory}"
        for key, ours in most_telling_first(identity):
            if self.parameters.get(key) != ours:
                reason = mismatch_reason(key, self.parameters.get(key), ours)
                raise CheckpointError(
                    f"{where} belongs to another run: {reason}; it was left untouched: use another "
                    "--checkpoint directory"
                )
        if self.position > until:
            raise CheckpointError(
                f"{where} is at G({self.position}), beyond --until {until}; ask for --until {self.position} or more"
            )

    def rare_table(self, game, directory) -> RareTable | None:
        """The run's rare table (None where none was decided yet), checked against its digest."""
        if self.table is None:
            return None
        where = f"checkpoint in {directory}"
        try:
            table = RareTable.from_yaml(self.table, game=game, source=where)
        except (KeyError, TypeError, ValueError) as exc:
            raise malformed(directory, exc) from None
        if table.digest != self.table_digest:
            raise CheckpointError(f"{where}: its rare table does not match its digest; it was left untouched")
        return table


def ints_or_none(values) -> tuple | None:
    """``values`` as a tuple of ints, None staying None (checkpoint fields that may be absent)."""
    return None if values is None else tuple(int(v) for v in values)


def malformed(directory, error: Exception) -> CheckpointError:
    """The error for a checkpoint whose body this version cannot go on from (``error``: what failed)."""
    return CheckpointError(
        f"checkpoint in {directory} is malformed ({type(error).__name__}: {error}); it was left untouched"
    )


def table_identity(game, table: RareTable | None) -> str:
    """How the table a run starts from is named in its checkpoint's parameters (a digest, or ``"computed"``)."""
    if table is not None:
        return table.digest
    shipped = shipped_table(game)
    return shipped.digest if shipped is not None else "computed"
