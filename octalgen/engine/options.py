"""How the engine computes: :class:`EngineOptions`, and the defaults of its sizes and intervals."""

from __future__ import annotations

from dataclasses import dataclass

from .history import PREFIX_LIMIT, RECENT_LIMIT

#: Heaps per kernel chunk (one verification task each).
CHUNK = 1 << 21

#: Heaps of the first chunk after the producer is reset (each next chunk is twice as large, up to
#: the chunk size): the first kernel values are proven soon after the kernel starts.
FIRST_CHUNK = 1 << 16

#: Seconds between checkpoints.
CHECKPOINT_EVERY = 5.0

#: With no --workers given, a run with at most this many heaps left for the kernel verifies in
#: this process: starting worker processes would cost more than they save.
SMALL_JOB = 1 << 21


@dataclass(frozen=True)
class EngineOptions:
    """How to compute.

    Attributes
    ----------
    until : int
        Compute G(0) ... G(until - 1).
    threads : int or None
        Kernel threads (None: 1, or chosen with ``workers`` when both are None; see :mod:`.split`).
    workers : int or None
        Local verification processes (None: all cores, none for a small job; 0: verify in this process).
    scheduler : str or None
        Address of a Dask scheduler to send verification to instead.
    chunk : int
        Heaps per kernel chunk and verification task (the first chunks after a start are smaller:
        :data:`FIRST_CHUNK`).
    backlog : int or None
        Unverified chunks the producer may run ahead (None: twice the workers, plus two).
    verify : bool
        False: the kernel's values are handed on unproven (``c-speculative``; never called proven).
    storage : {"u8", "u16"} or None
        Force the kernel's value storage (default: the plan's choice).
    checkpoint_every : float
        Seconds between checkpoints.
    prefix_limit, recent_limit : int
        How many values the history keeps in memory (see :class:`~.history.History`).
    keep_late : bool
        With a checkpoint directory, keep every proven value in its files (a byte a value under u8
        storage), so that a rare value found far out is decided from them, not recomputed (False:
        the prefix and the recent values only; :attr:`~.history.History.keep_late`).
    """

    until: int
    threads: int | None = None
    workers: int | None = None
    scheduler: str | None = None
    chunk: int = CHUNK
    backlog: int | None = None
    verify: bool = True
    storage: str | None = None
    checkpoint_every: float = CHECKPOINT_EVERY
    prefix_limit: int = PREFIX_LIMIT
    recent_limit: int = RECENT_LIMIT
    keep_late: bool = True
