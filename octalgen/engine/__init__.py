"""Long runs: what a researcher leaves running for months (Grossman, sections 3.1 and 4).

* :mod:`.engine` — :class:`~.engine.LongRun` (``octalgen run``): speculative producer, verifier
  workers (local processes or Dask, :mod:`.executors`), a consumer of proven values, recovery
  when a new rare value appears, bounded memory, atomic self-checking checkpoints
  (:mod:`.checkpoint`) and kept values (:mod:`.store`).
* :mod:`.scan` — the per-value work in C: FNV-1a-64 digests, value counts and first heaps, the
  rolling CRC-64 over the last W values with power-of-two anchors.
* :mod:`.period` — ``octalgen period``: candidates from the CRC search, checked value by value
  and proven with the Guy–Smith theorem.
* :mod:`.stats` — the figures ``run`` and ``stats`` print, JSON, and the histogram plot.
* :mod:`.progress` — the progress bar (terminal) or periodic lines (log).
"""
