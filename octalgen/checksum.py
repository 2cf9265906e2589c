"""FNV-1a-64 digests of nim-sequences, the checksum independent programs agree on."""

from __future__ import annotations

import numpy as np

FNV_OFFSET = 1469598103934665603
FNV_PRIME = 1099511628211
_MASK64 = (1 << 64) - 1


class Fnv1a64:
    """Running FNV-1a-64 over values: ``h = (h ^ G(p)) * prime mod 2**64``.

    Each value is folded in whole (not byte by byte), as the published
    checksums for ``.6`` are defined.

    Parameters
    ----------
    state : int, optional
        A state to resume from (e.g. read from a checkpoint).
    """

    def __init__(self, state: int = FNV_OFFSET):
        self.state = state

    def update(self, values) -> "Fnv1a64":
        """Fold ``values`` (any iterable or array of non-negative ints) into the digest."""
        h = self.state
        if isinstance(values, np.ndarray):
            values = values.tolist()
        for v in values:
            h = ((h ^ v) * FNV_PRIME) & _MASK64
        self.state = h
        return self

    def hexdigest(self) -> str:
        """The digest as 16 lower-case hex digits."""
        return f"{self.state:016x}"


def fnv1a64(values) -> str:
    """FNV-1a-64 of ``values`` as 16 hex digits."""
    return Fnv1a64().update(values).hexdigest()
