"""FNV-1a-64 digests of nim-sequences, the checksum independent programs agree on.

The digest of G(a) ... G(b-1) is the standard FNV-1a-64 (offset basis 0xcbf29ce484222325,
prime 0x100000001b3) with each value folded in as one 16-bit symbol rather than byte by byte::

    h = 14695981039346656037
    for v in values:
        h = ((h ^ v) * 1099511628211) % 2**64

octalgen 0.2 started from 1469598103934665603, a digit short of the standard offset basis, so
the digests it printed differ from these, and its checkpoints are refused (their layout is older).
"""

from __future__ import annotations

import numpy as np

__all__ = ["FNV_OFFSET", "FNV_PRIME", "Fnv1a64", "fnv1a64"]

#: The standard FNV-1a-64 offset basis, 0xcbf29ce484222325.
FNV_OFFSET = 14695981039346656037
#: The FNV-1a-64 prime, 2^40 + 2^8 + 0xb3.
FNV_PRIME = 1099511628211
_MASK64 = (1 << 64) - 1


class Fnv1a64:
    """Running FNV-1a-64 over values: ``h = (h ^ G(p)) * prime mod 2**64`` from the standard offset basis.

    Each value is folded in whole, as one 16-bit symbol (not byte by byte), as the published
    checksums for ``.6`` are defined.

    Parameters
    ----------
    state : int, optional
        A state to resume from (e.g. read from a checkpoint).
    """

    def __init__(self, state: int = FNV_OFFSET):
        self.state = state

    def update(self, values) -> Fnv1a64:
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
