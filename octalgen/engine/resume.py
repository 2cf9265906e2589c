"""Where a run starts — afresh, or from its checkpoint directory — and when its checkpoints are written.

:class:`Checkpoints` stands for a run's checkpoint directory (or its absence): the
:class:`~.checkpoint.RunState` a run goes on from, the :class:`~.history.History` it starts
with (its files in the directory, or in a temporary one for ``keep_all`` without a
directory), and the writing of a checkpoint every ``every`` seconds.  The engine says what the
state is; this says where it goes.

A run resumed from its directory first checks every stored file of its history against the
checkpoint's index (size and sha256): one that is missing or damaged is written again from
values computed and proven anew by a run of their own (the engine's ``recompute``), and must
hash to what the index records; so a resumed run never reports "all proven" over a damaged
store, and ``octalgen export`` then reads it whole.
"""

from __future__ import annotations

import logging
import tempfile
import time
from pathlib import Path

import numpy as np

from ..errors import CheckpointError
from .checkpoint import RunState, check_writable, ints_or_none, malformed, read_checkpoint, write_checkpoint
from .history import History
from .store import ValueStore

log = logging.getLogger("octalgen")


class Checkpoints:
    """A run's checkpoint directory.

    Parameters
    ----------
    directory : path or None
        None: the run keeps no checkpoint.
    identity : dict
        What a checkpoint must match to be resumed (see :meth:`~.checkpoint.RunState.check_resumable`).
    every : float
        Seconds between checkpoints.
    """

    def __init__(self, directory, identity: dict, every: float):
        self.directory = Path(directory) if directory is not None else None
        self.identity = identity
        self.every = every
        self._last = time.monotonic()
        self._temporary: tempfile.TemporaryDirectory[str] | None = None  # values of a run without a directory
        self._yaml = (None, None)  # the table last written, and its YAML

    def resume(self, until: int) -> RunState | None:
        """The state to go on from (None: start afresh); refuses another run's checkpoint before any work."""
        if self.directory is None:
            return None
        body = read_checkpoint(self.directory)
        check_writable(self.directory)
        if body is None:
            return None
        state = RunState.from_body(body, self.directory)
        state.check_resumable(self.identity, until, self.directory)
        return state

    def history(
        self,
        state: RunState | None,
        keep_all: bool,
        prefix_limit: int,
        recent_limit: int,
        far_tape=None,
        recompute=None,
    ) -> History:
        """The history a run starts with: empty, or ``state``'s read back from the directory
        (``far_tape``, ``recompute``: see :class:`~.history.History`; it spills into the directory)."""
        connections = {"far_tape": far_tape, "spill_dir": self.directory, "recompute": recompute}
        if state is not None:
            try:
                store = ValueStore(self.directory, state.files, state.sealed)
                store.prune_unlisted()
                damaged = store.damaged()
            except (KeyError, TypeError, ValueError) as exc:
                raise malformed(self.directory, exc) from None
            if damaged:
                self._repair(store, damaged, recompute)
            try:
                return History.restore(
                    store,
                    state.position,
                    state.prefix_length,
                    state.window,
                    state.keep_all,
                    state.late_values,
                    prefix_limit,
                    recent_limit,
                    **connections,
                )
            except (KeyError, TypeError, ValueError) as exc:
                raise malformed(self.directory, exc) from None
        fresh: ValueStore | None = None
        if self.directory is not None:
            fresh = ValueStore(self.directory)
            fresh.prune_unlisted()  # files of a run that never wrote its first checkpoint
        elif keep_all:
            self._temporary = tempfile.TemporaryDirectory(prefix="octalgen-values-")
            fresh = ValueStore(self._temporary.name)
        return History(fresh, keep_all, prefix_limit, recent_limit, **connections)

    def _repair(self, store: ValueStore, damaged: list, recompute) -> None:
        """Write the store's ``damaged`` files (:meth:`~.store.ValueStore.damaged`) again from G(0) ...
        proven anew by ``recompute`` (see the module docstring), up to the end of the last of them."""
        entry, what = damaged[0]
        said = f"stored file {store.root / entry['file']} {what}"
        if recompute is None:
            raise CheckpointError(f"{said}; this run cannot compute its values anew")
        if len(damaged) > 1:
            said += f", and {len(damaged) - 1} more {'is' if len(damaged) == 2 else 'are'} damaged"
        stop = max(entry["first"] + entry["count"] for entry, _ in damaged)
        log.warning(
            "%s: computing G(0) ... G(%d) anew to write %s again", said, stop - 1, "it" if len(damaged) == 1 else "them"
        )
        with tempfile.TemporaryDirectory(prefix="octalgen-repair-", dir=self.directory) as folder:
            values = np.memmap(Path(folder) / "values.u16", dtype=np.uint16, mode="w+", shape=(stop,))
            recompute(stop, values)
            for entry, _ in damaged:
                store.repair(entry, values[entry["first"] : entry["first"] + entry["count"]])
            del values

    def restore_consumers(self, state: RunState, consumers) -> None:
        """Give each consumer its state in ``state`` (None where it kept none)."""
        for consumer in consumers:
            try:
                consumer.restore(state.consumers.get(consumer.name))
            except (KeyError, TypeError, ValueError) as exc:  # a state this version cannot go on from
                raise malformed(self.directory, exc) from None

    @property
    def due(self) -> bool:
        """Whether the next checkpoint is due (never without a directory)."""
        return self.directory is not None and time.monotonic() - self._last >= self.every

    def write(self, history: History, until: int, planning, consumers: dict, recovery, elapsed: float) -> None:
        """Write a checkpoint of a run at ``history.position`` (see :class:`~.checkpoint.RunState`): its
        plan state (:class:`~.planning.Planning`), its consumers' states, what its recoveries found
        (:class:`~.recovery.Recovery`) and its wall seconds.

        The history's files are made durable first; files it no longer needs are deleted only
        once the checkpoint that no longer lists them is written.
        """
        table, storage = planning.table, planning.storage
        store = history.store
        dropped = []
        if store is not None:
            dropped = store.retain(history.needed)
            store.sync()
        if table is not None and self._yaml[0] is not table:  # YAML costs more than the rest: once a table
            self._yaml = (table, table.to_yaml())
        state = RunState(
            parameters=self.identity,
            until=until,
            position=history.position,
            table=self._yaml[1] if table is not None else None,
            table_digest=table.digest if table is not None else None,
            storage=storage,
            files=store.inline if store is not None else [],
            sealed=list(store.sealed) if store is not None else [],
            prefix_length=len(history.prefix),
            window=history.window,
            keep_all=history.keep_all,
            late_values=ints_or_none(history.late_values()),
            consumers=consumers,
            rare_found=tuple(recovery.rare_found),
            mask_switches=tuple(recovery.mask_switches),
            elapsed=elapsed,
        )
        write_checkpoint(self.directory, state.to_body())
        if store is not None:
            store.delete(dropped)
        self._last = time.monotonic()

    def close(self) -> None:
        """Remove the temporary directory of a ``keep_all`` run without a checkpoint directory."""
        if self._temporary is not None:
            self._temporary.cleanup()
            self._temporary = None
