"""The one engine every proving command uses: produce, verify, recover, hand on.

The loop and its rooms:

* :mod:`.core` — :class:`~.core.Engine`, the loop that ties the rooms together (exact step or
  pipeline step, hand on, checkpoint), with its :class:`~.options.EngineOptions` (:mod:`.options`).
* :mod:`.planning` — the one owner of the plan: the rare table, the value storage, the kernel
  plan, and every decision about them (the plan's values themselves: :mod:`octalgen.plan`).
* :mod:`.exact_steps` — the exact steps: values from the exact solver up to the kernel's first heap.
* :mod:`.producer` — the speculative kernel's ring of codes, filled chunk by chunk
  (:mod:`.producer_thread`: in a thread of its own); a far term's window, too long for memory,
  is on a tape on disk, whose one keeper is :mod:`.tape`.
* :mod:`.pipeline` — chunks produced ahead, proven by the executors (this process, local
  processes, Dask: :mod:`.executors`; the pool of local worker processes: :mod:`.workers`, what
  each runs: :mod:`.worker_process`, the files they map: :mod:`.staged_files`; the split of the
  cores: :mod:`.split`), taken back in order.
* :mod:`.recovery` — a proof that did not go through, tried again in order; G(m) decided exactly
  (:mod:`.exact_heap`: one heap's value from the values before it, read in pieces).
* :mod:`.seams` — the protocols of what plugs in: the kernel plug-in (handed out by the
  :mod:`octalgen.backends` registry) and the consumers.
* :mod:`.history` — the proven values a proof scan or a recovery may need again, bounded in
  memory, on disk in the run's directory (:mod:`.store`; read back for ``export``:
  :mod:`.kept_values`), or computed anew by a run of their own (:mod:`.recompute`).
* :mod:`.checkpoint` — the run's state (:class:`~.checkpoint.RunState`) and its file;
  :mod:`.resume` — starting afresh or from it, and writing it as the run goes.
* :mod:`.signals` — Ctrl-C and SIGTERM as a stop at the next safe point (and the command line's
  handling of them outside a run); :mod:`.accounting` — the run's wall seconds and CPU seconds per
  role.
* Consumers, handed values in order as one (:mod:`.consumer_set`): :mod:`.tally` (digests,
  counts, zeros, period candidates; the recurrence proof of ``run``), :mod:`.period_proof` (the
  exact period proof of ``period``), :mod:`.values` (the value stream of ``values`` and the
  ``c`` backends).
* :mod:`.scan` — the per-value work in C: FNV-1a-64 digests, value counts and first heaps, the
  rolling CRC-64 over the last W values with power-of-two anchors.
* :mod:`.value_statistics` — the figures of the proven values; :mod:`.run_summary` — what a run
  reports (``run``, ``period``, ``stats``), and :func:`~.run_summary.summarized_run`, the one way
  a front-end runs the engine for a report.

The package itself imports nothing, so that a plug-in module may import the rooms it needs
without importing the loop.

Front-ends (``octalgen values``, ``run``, ``period``, ``stats``, ``survey``, ``bench``, and
:mod:`octalgen.api`) choose the consumers and options and pass an :class:`~octalgen.game.OctalGame`
down; nothing below them parses text.
"""
