"""The values a run kept (``run --keep-values``), read back for ``octalgen export``, every file checked.

The files and their index are :mod:`.store`'s; this is the reader's side, from the checkpoint
directory alone.
"""

from __future__ import annotations

import numpy as np

from ..errors import CheckpointError
from .checkpoint import check_layout, read_checkpoint
from .store import ValueStore

__all__ = ["KeptValues", "read_kept_values"]


class KeptValues:
    """The proven values a run kept on disk (``run --keep-values``), read back and checked.

    Parameters
    ----------
    directory : path
        The run's ``--checkpoint`` directory.

    Attributes
    ----------
    game : str
        The game's canonical code.
    stop : int
        N: the values G(0) ... G(N-1) are kept (the run's proven position).
    digest : str
        The run's FNV-1a-64 digest of G(0) ... G(N-1), 16 hex digits.

    Raises
    ------
    CheckpointError
        When the directory holds no run checkpoint, or the run did not keep its values.
    """

    def __init__(self, directory):
        body = read_checkpoint(directory)
        if body is None:
            raise CheckpointError(f"{directory} holds no run checkpoint (checkpoint.json)")
        check_layout(body, directory)
        if not body["parameters"]["keep_values"]:
            raise CheckpointError(f"the run in {directory} did not keep its values (run it with --keep-values)")
        self.game = body["parameters"]["game"]
        self.stop = body["position"]
        self.digest = f"{body['consumers']['tally']['scanner']['fnv']:016x}"
        self._store = ValueStore(directory, body["history"]["files"], body["history"].get("sealed", ()))

    def chunks(self, start: int = 0, stop: int | None = None):
        """Yield ``(first heap, uint16 array)`` covering G(start) ... G(stop-1), one file at a time.

        Each file's sha256 is checked before its values are yielded.
        """
        stop = self.stop if stop is None else stop
        if not 0 <= start <= stop <= self.stop:
            raise CheckpointError(
                f"the kept values cover G(0) ... G({self.stop - 1}), not G({start}) ... G({stop - 1})"
            )
        for entry in self._store.index:
            lo, hi = entry["first"], entry["first"] + entry["count"]
            if hi > start and lo < stop:
                first = max(start, lo)
                yield first, self._store.read(first, min(stop, hi))


def read_kept_values(directory, start: int = 0, stop: int | None = None) -> np.ndarray:
    """G(start) ... G(stop-1) kept by ``octalgen run --keep-values --checkpoint directory``."""
    parts = [values for _first, values in KeptValues(directory).chunks(start, stop)]
    return np.concatenate(parts) if parts else np.zeros(0, np.uint16)
