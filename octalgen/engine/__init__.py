"""The one engine every proving command uses: produce, verify, recover, hand on.

* :mod:`.core` — :class:`~.core.Engine`: exact steps, the speculative producer, verifiers
  (this process, local processes, Dask: :mod:`.executors`), recovery (:mod:`.plans`), the
  consumers, checkpoints (:mod:`.checkpoint`) and resume.
* :mod:`.history` — the proven values a proof scan or a recovery may need again, bounded in
  memory, on disk in the run's directory (:mod:`.store`).
* Consumers: :mod:`.tally` (digests, counts, zeros, period candidates; the recurrence proof of
  ``run``), :mod:`.period` (the exact period proof of ``period``), :mod:`.values` (the value
  stream of ``values`` and the ``c`` backends).
* :mod:`.scan` — the per-value work in C: FNV-1a-64 digests, value counts and first heaps, the
  rolling CRC-64 over the last W values with power-of-two anchors.
* :mod:`.stats`, :mod:`.summary` — the figures ``run``, ``period`` and ``stats`` print.

Front-ends (``octalgen values``, ``run``, ``period``, ``stats``, ``bench``) choose the consumers
and options and pass an :class:`~octalgen.game.OctalGame` down; nothing below them parses text.
"""

from .summary import RunSummary, summary_of_checkpoint

__all__ = ["RunSummary", "summary_of_checkpoint"]
