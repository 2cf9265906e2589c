"""The one engine every proving command uses: produce, verify, recover, hand on.

The loop and its rooms:

* :mod:`.core` — :class:`~.core.Engine`, the loop that ties the rooms together (exact step or
  pipeline step, hand on, checkpoint), with its :class:`~.options.EngineOptions` (:mod:`.options`).
* :mod:`.exact` — the exact steps: values from the exact solver up to the kernel's first heap.
* :mod:`.producer` — the speculative kernel's ring of codes, filled chunk by chunk (or, where a
  far term's window is too long for memory, its tape on disk: :mod:`.tape`).
* :mod:`.pipeline` — chunks produced ahead, proven by the executors (this process, local
  processes, Dask: :mod:`.executors`; the local worker processes and the files they map:
  :mod:`.workers`; the split of the cores: :mod:`.split`), taken back in order.
* :mod:`.recovery` — an undecided proof tried again with more values; a failed one decided
  exactly (beside :mod:`.plans`: the rare table and kernel plan decided from exact values).
* :mod:`.seams` — the protocols of what plugs in: the kernel plug-in (the generated C by
  default, :mod:`octalgen.cuda.plugin` for the GPU) and the consumers.
* :mod:`.history` — the proven values a proof scan or a recovery may need again, bounded in
  memory, on disk in the run's directory (:mod:`.store`).
* :mod:`.checkpoint` — the run's state (:class:`~.checkpoint.RunState`) and its file;
  :mod:`.resume` — starting afresh or from it, and writing it as the run goes.
* :mod:`.signals` — Ctrl-C and SIGTERM as a stop at the next safe point; :mod:`.accounting` —
  CPU seconds per role.
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
