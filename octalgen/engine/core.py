"""The one engine: produce speculative chunks, verify them, recover, and hand proven values on.

Every octalgen command that proves values (``values``, ``run``, ``period``, ``bench``'s exact
row, the ``c`` backend) is a front-end of :class:`Engine`:

* **Exact steps.**  G(0) ... up to the kernel's first heap come from the exact solver
  (:class:`~octalgen.cpu.exact.CExactSolver`), which finds the rare values itself.  The rare
  table is a hint: it is reconciled with those values (:func:`~.plans.reconcile`), which may
  move the first heap.  Without a table the first :data:`~octalgen.rare.DEFAULT_TABLE_UPTO`
  values decide the mask.  A game with no kernel (mask 0, or no move that leaves a heap) gets
  the exact solver throughout.
* **Producer.**  From the kernel's first heap a speculative kernel (the generated C by
  default; see :class:`Kernels`) fills chunks; its whole state is the heap and the last
  ``plan.window`` codes.  It runs at most ``backlog`` chunks ahead of the proven position.
* **Verifiers.**  Each chunk is a task (:func:`~.executors.verify_task`) with the codes its
  proof scans need, run in this process, in local worker processes or on a Dask cluster.  A
  scan that needs values from further back is retried here with the recent values, then with
  every value (read back from disk, or recomputed).
* **Recovery.**  Where a proof fails at heap m, G(m) is computed exactly from G(0) ... G(m-1)
  (:func:`~.plans.decide_failure`): a new rare value extends the table and the exact steps go
  on to the new first heap; a common value corrects the kernel (a fault); a value too large
  for byte storage switches the kernel to 16 bits.
* **Consumers.**  Proven values are handed on in order to the consumers the command chose
  (:class:`~.tally.Tally` for digests, statistics and the period search; a value sink for
  ``values``) and to the :class:`~.history.History`, which keeps what proof scans and recovery
  may need again, and writes it to the checkpoint directory.

A checkpoint (every ``checkpoint_every`` seconds and at exit) holds the position, the table,
the storage, the consumers' states and the list of the history's files, so a run stopped at
any moment (Ctrl-C, SIGTERM, ``kill -9``) goes on from it exactly as the uninterrupted run
would have: whatever a proof scan or a recovery may need is in the checkpoint or recomputed
from it.  Memory is bounded whatever N: the history (32 MiB), the kernel's window, and the
chunks in flight.  Ctrl-C and SIGTERM are noticed within a fraction of a second: long C calls
are split, workers are killed, the exit checkpoint is written, and
:class:`~octalgen.errors.Interrupted` says what was proven and where it is.
"""

from __future__ import annotations

import logging
import signal
import tempfile
import threading
import time
from collections import deque
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from .. import __version__
from ..cpu.exact import CExactSolver
from ..cpu.kernel import SpeculativeKernel, StorageOverflow, code_dtype, default_threads
from ..cpu.verify import PROVEN, UNDECIDED, Verifier
from ..errors import CheckpointError, ComputationError, Interrupted
from ..game import OctalGame
from ..plan import KernelPlan, make_plan
from ..rare import DEFAULT_TABLE_UPTO, RareTable, Rarity, shipped_table
from .checkpoint import LAYOUT, check_layout, check_writable, read_checkpoint, write_checkpoint
from .executors import IN_PROCESS_PIECE, VERIFY_HISTORY, InProcess, StopRequested, make_executor, verify_task
from . import split
from .history import PREFIX_LIMIT, RECENT_LIMIT, History
from .plans import decide_failure, exact_solver, plan_for, reconcile
from .store import ValueStore
from .tally import UNSPARSE_WINDOW

log = logging.getLogger("octalgen")

#: Heaps per kernel chunk (one verification task each).
CHUNK = 1 << 21

#: Heaps per call into the kernel, and per exact step: a stop request is noticed between calls.
FILL_STEP = 1 << 18
EXACT_STEP = 1 << 15

#: Seconds between checkpoints.
CHECKPOINT_EVERY = 5.0

#: With no --workers given, a run with at most this many heaps left for the kernel verifies in
#: this process (spawning workers costs about a second of CPU; this is about two of verifying).
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
        Heaps per kernel chunk and verification task.
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


class Kernels:
    """Makes the producer and the verifier of a plan: the generated C (the default plug-in).

    Another backend plugs in by giving objects with the same two calls: the producer's
    ``fill(buffer, first_heap, threads)`` (and ``max_threads``, ``dtype``) as
    :class:`~octalgen.cpu.kernel.SpeculativeKernel`, the verifier's picklable
    ``verify(codes, base, prefix, a, b) -> VerifyResult`` as :class:`~octalgen.cpu.verify.Verifier`,
    and its ``plan`` (the :class:`~octalgen.plan.KernelPlan`).  A plug-in whose verifier must run in
    this process (a GPU's) sets ``verify_here = True``, and may set ``verify_piece``: heaps per call
    (default :data:`~.executors.IN_PROCESS_PIECE`).
    """

    verify_here = False

    def __init__(self):
        self._made: dict[KernelPlan, tuple] = {}

    def __call__(self, plan: KernelPlan):
        if plan not in self._made:
            self._made = {plan: (SpeculativeKernel(plan), Verifier(plan))}  # only the current one
        return self._made[plan]


@dataclass
class _Pending:
    """A produced chunk [first, stop) waiting for its verification."""

    first: int
    stop: int
    plan: KernelPlan
    codes: np.ndarray
    future: object


@dataclass
class Accounting:
    """CPU seconds of each role, this session (see :meth:`Engine.accounting`)."""

    kernel: float = 0.0
    verifiers: float = 0.0
    verifiers_here: float = 0.0
    consumers: float = 0.0
    exact: float = 0.0
    process: float = 0.0
    wall: float = 0.0
    kernel_values: int = 0
    verified_values: int = 0
    values: int = 0

    def roles(self) -> dict:
        """``{role: {"cpu_seconds", "per_1e8_values", "values_per_cpu_second"}}``."""
        coordinator = max(0.0, self.process - self.kernel - self.verifiers_here - self.consumers - self.exact)
        rows = {"kernel": (self.kernel, self.kernel_values), "verifiers": (self.verifiers, self.verified_values),
                "exact solver": (self.exact, None), "consumers": (self.consumers, self.values),
                "coordinator": (coordinator, self.values)}
        result = {}
        for role, (seconds, values) in rows.items():
            result[role] = {"cpu_seconds": round(seconds, 3),
                            "per_1e8_values": round(seconds * 1e8 / self.values, 3) if self.values else None,
                            "values_per_cpu_second": round(values / seconds) if values and seconds > 0 else None}
        return result


class Engine:
    """One computation of G(0) ... G(until-1) through the pipeline of the module docstring.

    Parameters
    ----------
    game : OctalGame
    options : EngineOptions
    consumers : sequence
        Objects with ``accept(first, values)``; optional ``attach(engine)``, ``restart(window,
        tail, anchor_from)`` (the values from here on follow a new recurrence), ``finished``
        (True ends the run), and ``name``/``state()``/``restore(state)`` (kept in checkpoints).
    table : RareTable, optional
        Rare values to start from (a hint, reconciled with the exact values).  Default: the
        shipped table, else one computed from the first values.
    directory : path, optional
        Checkpoint directory: checkpoints, and the history's files.  Resumed from.
    identity : dict, optional
        What the checkpoint must match to be resumed (the command and its parameters).
    keep_all : bool
        Keep every proven value on disk (``--keep-values``; ``period``).  Without a
        ``directory`` they go to a temporary directory removed at the end.
    progress : object, optional
        With ``phase(text)``, ``update(proven, produced)`` and ``close()``.
    kernels : callable, optional
        ``kernels(plan) -> (producer, verifier)`` (default: :class:`Kernels`, the generated C).
    """

    def __init__(self, game: OctalGame, options: EngineOptions, consumers=(), *, table: RareTable | None = None,
                 directory=None, identity: dict | None = None, keep_all: bool = False, progress=None,
                 kernels=None):
        self.game = game
        self.options = options
        self.consumers = list(consumers)
        self.start_table = table
        self.directory = Path(directory) if directory is not None else None
        self.keep_all = keep_all
        self.progress = progress
        self.kernels = kernels or Kernels()
        self.identity = {"game": game.code, "table": _table_identity(game, table), "keep_values": keep_all,
                         **(identity or {})}
        self.table: RareTable | None = None
        self.plan: KernelPlan | None = None
        self.storage = options.storage
        self.history: History | None = None
        self.rare_found: list[tuple[int, int]] = []
        self.elapsed = 0.0
        self.session = Accounting()
        self.pending: deque[_Pending] = deque()
        self.produced_to = 0
        self._solver: CExactSolver | None = None
        self._shared = (None, None)
        self._consistent = True
        self._stop_signal: int | None = None
        self._temporary = None
        self._started = False
        self._session_began = None
        self._verifying_here = False
        self.threads = options.threads or 1
        self.split = None  # the automatic split of the cores, when one was made
        self._phase_shown = None
        self._yaml = (None, None)
        self._solver_rarity: Rarity | None = None
        self._last_checkpoint = time.monotonic()

    # -- running --------------------------------------------------------------------------

    @property
    def position(self) -> int:
        """N: G(0) ... G(N-1) are proven (or, with ``verify=False``, computed)."""
        return self.history.position if self.history is not None else 0

    def run(self) -> "Engine":
        """Run to the end (``until``, or a consumer finished); returns the engine."""
        for _ in self.steps():
            pass
        return self

    def steps(self):
        """Run as a generator: it yields after each batch of values handed to the consumers.

        Raises
        ------
        Interrupted
            After Ctrl-C or SIGTERM (the exit checkpoint is written first).
        """
        began, cpu_began = time.monotonic(), time.process_time()
        self._session_began = began
        executor = first = None
        previous = self._catch_signals()
        stopped = False
        try:
            self._start()
            self._started = True
            first = self.position
            while not self._done():
                if self.plan is None or self.position < self.plan.start:
                    self._exact_step()
                else:
                    if executor is None:
                        executor = self._executor()
                    if self.produced_to < self.position:  # exact steps or a recovery moved on
                        self._reset_producer()
                    self._pipeline_step(executor)
                self._check_stop()
                self._maybe_checkpoint()
                self._report()
                yield
        except StopRequested:
            stopped = True
        finally:
            for pending in self.pending:
                pending.future.cancel()
            self.pending.clear()
            if executor is not None:
                executor.close(kill=True)
            self._restore_signals(previous)
            self.session.values = self.position - first if first is not None else 0
            self.session.wall = time.monotonic() - began
            self.session.process = time.process_time() - cpu_began
            self.elapsed += self.session.wall
            self._refine_split()
            self._session_began = None
            try:
                if self.directory is not None and self._started and self._consistent:
                    self._checkpoint()
            finally:
                if self._temporary is not None:
                    self._temporary.cleanup()
        if stopped:
            raise Interrupted(self._stop_signal, self.position, self.directory)

    def _done(self) -> bool:
        return self.position >= self.options.until or any(getattr(c, "finished", False) for c in self.consumers)

    def _report(self) -> None:
        if self.progress is not None:
            self.progress.update(self.position, max(self.produced_to, self.position))

    def _phase(self, text: str) -> None:
        if self.progress is not None and text != self._phase_shown:
            self.progress.phase(text)
            self._phase_shown = text

    # -- stopping -------------------------------------------------------------------------

    def _catch_signals(self):
        """Ctrl-C and SIGTERM ask the loop to stop at its next safe point (main thread only)."""
        if threading.current_thread() is not threading.main_thread():
            return None

        def request(signum, frame):
            self.request_stop(signum)
            signal.signal(signum, previous[signum])  # a second one acts at once

        previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
        for s in previous:
            signal.signal(s, request)
        return previous

    @staticmethod
    def _restore_signals(previous) -> None:
        if previous:
            for s, handler in previous.items():
                signal.signal(s, handler)

    def request_stop(self, signal_number: int = signal.SIGINT) -> None:
        """Stop at the next safe point, as Ctrl-C does (the run then raises :class:`Interrupted`)."""
        self._stop_signal = signal_number

    def stop_requested(self) -> bool:
        return self._stop_signal is not None

    def _check_stop(self) -> None:
        if self._stop_signal is not None:
            raise StopRequested

    # -- start and resume -----------------------------------------------------------------

    def _start(self) -> None:
        body = None
        if self.directory is not None:
            body = read_checkpoint(self.directory)
            check_writable(self.directory)
        if body is not None:
            self._restore(body)
            log.info("resuming from the checkpoint in %s at G(%d)", self.directory, self.position)
        else:
            store = None
            if self.directory is not None:
                store = ValueStore(self.directory)
                store.prune_unlisted()
            elif self.keep_all:
                self._temporary = tempfile.TemporaryDirectory(prefix="octalgen-values-")
                store = ValueStore(self._temporary.name)
            self.history = History(store, self.keep_all, self.options.prefix_limit, self.options.recent_limit)
            self.table = self.start_table if self.start_table is not None else shipped_table(self.game)
            if self.table is not None:
                self._replan()
        for consumer in self.consumers:
            if hasattr(consumer, "attach"):
                consumer.attach(self)
        if body is None and self.table is not None:
            self._restart_consumers(self._anchor_from())

    def _restore(self, body: dict) -> None:
        where = f"checkpoint in {self.directory}"
        check_layout(body, self.directory)
        theirs = body["parameters"]
        for key, ours in self.identity.items():
            if theirs.get(key) != ours:
                raise CheckpointError(f"{where} belongs to another run ({key} {theirs.get(key)!r}, this command "
                                      f"{ours!r}); it was left untouched: use another --checkpoint directory")
        position = body["position"]
        if position > self.options.until:
            raise CheckpointError(f"{where} is at G({position}), beyond --until {self.options.until}; "
                                  f"ask for --until {position} or more")
        try:
            if body["table"] is not None:
                self.table = RareTable.from_yaml(body["table"], game=self.game, source=where)
                if self.table.digest != body["table_digest"]:
                    raise CheckpointError(f"{where}: its rare table does not match its digest; it was left untouched")
            self.storage = body["storage"]
            saved = body["history"]
            store = ValueStore(self.directory, saved["files"])
            store.prune_unlisted()
            self.history = History.restore(store, position, saved["prefix_length"], saved["window"], saved["keep_all"],
                                           self.options.prefix_limit, self.options.recent_limit)
            if self.table is not None:
                self.plan = plan_for(self.table, self.history.prefix, self.storage)
            states = body["consumers"]
            for consumer in self.consumers:
                if hasattr(consumer, "restore"):
                    consumer.restore(states[consumer.name])
            self.rare_found = [tuple(e) for e in body["rare_found"]]
            self.elapsed = body["elapsed"]
        except (KeyError, TypeError, ValueError) as exc:  # a body this version cannot read
            raise CheckpointError(f"{where} is malformed ({type(exc).__name__}: {exc}); it was left untouched") from None

    def _checkpoint(self) -> None:
        history = self.history
        store = history.store
        dropped = []
        if store is not None:
            store.sync()
            dropped = store.retain(history.needed)
        body = {
            "octalgen_checkpoint": LAYOUT,
            "octalgen": __version__,
            "parameters": self.identity,
            "until": self.options.until,
            "position": self.position,
            "table": self._table_yaml(),
            "table_digest": self.table.digest if self.table is not None else None,
            "storage": self.storage,
            "history": {"files": store.index if store is not None else [], "prefix_length": len(history.prefix),
                        "window": history.window, "keep_all": history.keep_all},
            "consumers": {c.name: c.state() for c in self.consumers if hasattr(c, "state")},
            "rare_found": [list(e) for e in self.rare_found],
            "elapsed": self.elapsed + (time.monotonic() - self._session_began if self._session_began else 0.0),
        }
        write_checkpoint(self.directory, body)
        if store is not None:
            store.delete(dropped)

    def _table_yaml(self) -> str | None:
        """The table as YAML, made once per table (writing YAML costs more than a checkpoint's other parts)."""
        if self.table is None:
            return None
        if self._yaml[0] is not self.table:
            self._yaml = (self.table, self.table.to_yaml())
        return self._yaml[1]

    def _maybe_checkpoint(self) -> None:
        if self.directory is not None and time.monotonic() - self._last_checkpoint >= self.options.checkpoint_every:
            self._checkpoint()
            self._last_checkpoint = time.monotonic()

    # -- exact steps ----------------------------------------------------------------------

    def _exact_step(self) -> None:
        until = self.options.until
        if self.table is None:  # no table given or shipped: the first values decide the mask
            stop = min(until, DEFAULT_TABLE_UPTO)
            if self.position < stop:
                self._accept_exact(min(stop, self.position + EXACT_STEP), rarity=None)
                return
            self.table = RareTable.from_values(self.game, self.history.values_before(self.position))
            log.info("rare table of %s from its first %d values: sparse space %s, %d rare positions", self.game.code,
                     self.position, self.table.describe(), self.table.count)
            self._replan()
            self._restart_consumers(self._anchor_from())
            return
        if self.plan is None:  # no kernel: the solver chooses the mask that makes it fastest
            rarity = self.table.rarity if self.table.mask else None
            self._accept_exact(min(until, self.position + EXACT_STEP), rarity=rarity)
            return
        self._accept_exact(min(until, self.plan.start, self.position + EXACT_STEP), rarity=self.table.rarity)
        if self.position >= self.plan.start:  # the exact values decide the table and the storage
            values = self._exact_values()
            self.table = reconcile(self.table, values)
            if self._replan():
                self._restart_consumers(self._anchor_from())
            if self.plan is not None:
                self.history.ensure_prefix(values[: self.plan.start])

    def _accept_exact(self, stop: int, rarity: Rarity | None) -> None:
        """G(position) ... G(stop-1) from the exact solver, handed on."""
        self._phase("exact prefix" if self.plan is not None or self.table is None else "exact values")
        solver = self._solver
        if solver is None or len(solver) != self.position or self._solver_rarity != rarity:
            solver = self._solver = exact_solver(self.game, rarity, self.values_before(self.position))
            self._solver_rarity = rarity
        began = time.thread_time()
        values = solver.extend(stop)[self.position: stop].copy()
        self.session.exact += time.thread_time() - began
        self._accept(values)

    def _exact_values(self) -> np.ndarray:
        """G(0) ... G(position-1): the exact solver holds them all after exact steps."""
        if self._solver is not None and len(self._solver) == self.position:
            return self._solver.values
        return self.values_before(self.position)

    def _replan(self) -> bool:
        """Plan the kernel for the current table and storage; True when the plan changed."""
        plan = plan_for(self.table, self.history.prefix, self.storage)
        if plan is None:
            self.history.keep_all = self.history.keep_all or self.history.store is not None
            log.info("%s has no sparse space or no move leaving a heap: the exact solver computes every value",
                     self.game.code)
        changed = plan != self.plan
        self.plan = plan
        self.history.window = plan.window if plan is not None else 0
        if changed and plan is not None:
            _log_plan(plan)
        return changed

    def _anchor_from(self) -> int:
        return self.plan.start - 1 if self.plan is not None else 0

    def _restart_consumers(self, anchor_from: int) -> None:
        window = self.plan.window if self.plan is not None else UNSPARSE_WINDOW
        if self._solver is not None and len(self._solver) == self.position:  # it holds every value
            tail = np.zeros(window, dtype=np.uint16)
            have = min(window, self.position)
            tail[window - have:] = self._solver.values[self.position - have:]
        else:
            tail = self.history.tail(window)
        for consumer in self.consumers:
            if hasattr(consumer, "restart"):
                consumer.restart(window, tail, anchor_from)

    # -- the pipeline ---------------------------------------------------------------------

    def _executor(self):
        options = self.options
        if not options.verify or getattr(self.kernels, "verify_here", False):
            workers = 0
        elif options.workers is not None:
            workers = options.workers
        elif options.scheduler is None and options.until - self.position <= SMALL_JOB:
            workers = 0  # starting worker processes would cost more than they save
        elif options.threads is None and options.scheduler is None:
            kernel, verifier = self.kernels(self.plan)
            window = self.plan.encoding.encode_array(self.history.tail(self.plan.window)).astype(kernel.dtype)
            self.split = split.choose(self.plan, kernel, verifier, window, self.history.prefix, self.position)
            log.info("cores: %s", self.split.describe())
            self.threads, workers = self.split.threads, self.split.workers
        else:
            workers = default_threads()
        executor = make_executor(workers, options.scheduler, self.stop_requested,
                                 getattr(self.kernels, "verify_piece", IN_PROCESS_PIECE))
        self._verifying_here = isinstance(executor, InProcess)
        self.backlog = options.backlog or 2 * executor.workers + 2
        return executor

    def _pipeline_step(self, executor) -> None:
        can_produce = self.produced_to < self.options.until
        if can_produce and len(self.pending) < self.backlog:
            self._produce(executor)
            self._consume(block=False)
        elif self.pending:
            self._consume(block=True)
        else:
            raise ComputationError(f"the run stalled at G({self.position}): a bug, please report it")

    def _reset_producer(self) -> None:
        """Produce again from the proven position (after a start, a resume or a recovery)."""
        for pending in self.pending:
            pending.future.cancel()
        self.pending.clear()
        self.producer_plan = self.plan
        self.produced_to = self.position
        if self.plan is not None and self.position >= self.plan.start:
            window = self.history.tail(self.plan.window)
            self.ring = self.plan.encoding.encode_array(window).astype(code_dtype(self.plan))
            self.ring_base = self.position - self.plan.window

    def _produce(self, executor) -> None:
        plan = self.producer_plan
        kernel, verifier = self.kernels(plan)
        if self._phase_shown != "running":
            self._phase("building kernel")
            getattr(kernel, "module", None)  # compile (or load) it now, while the phase says so
            self._phase("running")
        w, a = plan.window, self.produced_to
        b = min(self.options.until, a + self.options.chunk)
        buffer = np.empty(w + b - a, dtype=kernel.dtype)
        buffer[:w] = self.ring[len(self.ring) - w:]
        overflow = None
        threads = min(self.threads, kernel.max_threads)
        began = time.process_time()
        try:
            for lo in range(0, b - a, FILL_STEP):  # in steps, so that a stop request is noticed
                self._check_stop()
                hi = min(b - a, lo + FILL_STEP)
                kernel.fill(buffer[lo: w + hi], a + lo, threads)
        except StorageOverflow as exc:
            overflow, b = exc, exc.heap
        finally:
            self.session.kernel += time.process_time() - began
        codes = buffer[w: w + b - a]
        self.session.kernel_values += b - a
        if a < b and not self.options.verify:
            self._accept(plan.encoding.decode_values(codes, a), plan, codes=codes)
            self.ring = np.concatenate([self.ring[len(self.ring) - w:], codes])
            self.ring_base = b - len(self.ring)
            self.produced_to = b
        elif a < b:
            # Until the prefix is complete, a chunk produced ahead may need any value since the
            # prefix ends (a proof scan pairs G(x) with G(n - 1 - x)), so it gets every code the
            # ring holds; otherwise its scans would stop undecided and be retried here alone.
            complete = self.history.prefix_complete
            start = max(self.ring_base, a - w - VERIFY_HISTORY) if complete else self.ring_base
            history = np.concatenate([self.ring[start - self.ring_base:], codes])
            prefix = self.history.prefix
            if self._shared[0] is None or len(self._shared[0]) != len(prefix):
                self._shared = (prefix, executor.share(prefix))
            future = executor.submit(verify_task, verifier, history, start, self._shared[1], a, b)
            self.pending.append(_Pending(a, b, plan, codes, future))
            self.ring = np.concatenate([self.ring, codes])
            keep = w + VERIFY_HISTORY
            if complete and len(self.ring) > keep:
                self.ring_base += len(self.ring) - keep
                self.ring = self.ring[len(self.ring) - keep:].copy()
            self.produced_to = b
        if overflow is not None:
            log.warning("%s; continuing with 16-bit storage", overflow)
            values = plan.encoding.decode_array(self.ring, self.ring_base)
            self.producer_plan = make_plan(plan.table, storage="u16")
            _log_plan(self.producer_plan)
            self.ring = values.astype(np.uint16)

    def _result(self, future):
        """A task's result, waiting in short slices so that a stop request is noticed."""
        while True:
            self._check_stop()
            try:
                return future.result(timeout=0.2)
            except TimeoutError:
                continue

    def _consume(self, block: bool) -> None:
        while self.pending and (block or self.pending[0].future.done()) and not self._done():
            block = False
            head = self.pending[0]
            result, seconds = self._result(head.future)
            self.pending.popleft()
            self.session.verifiers += seconds
            if self._verifying_here:
                self.session.verifiers_here += seconds
            self.session.verified_values += head.stop - head.first
            if result.status == UNDECIDED:
                result = self._verify_again(head, result)
            if result.status == PROVEN:
                self._accept(head.plan.encoding.decode_values(head.codes, head.first), head.plan, codes=head.codes)
            else:
                self._failed(head, result)
                return

    def _verify_again(self, head: _Pending, result):
        """Verify an undecided chunk again here: with the recent values, then with every value."""
        plan = head.plan
        verifier = self.kernels(plan)[1]
        earliest = plan.start - plan.window  # every value from here on is common: codes hold it
        first, recent = self.history.recent_values()
        start = max(first, earliest)
        codes = np.concatenate([plan.encoding.encode_array(recent[start - first:]).astype(head.codes.dtype),
                                head.codes])
        began = time.thread_time()
        result = verifier.verify(codes, start, self.history.prefix, result.heap, head.stop)
        if result.status == UNDECIDED:
            log.info("G(%d) needs values from further back than this run holds in memory", result.heap)
            values = self.values_before(head.first)
            codes = np.concatenate([plan.encoding.encode_array(values[earliest:]).astype(head.codes.dtype),
                                    head.codes])
            result = verifier.verify(codes, earliest, self.history.prefix, result.heap, head.stop)
        spent = time.thread_time() - began
        self.session.verifiers += spent
        self.session.verifiers_here += spent
        return result

    def _failed(self, head: _Pending, result) -> None:
        """A proof failed at heap m of ``head``: hand on what is proven, decide G(m), go on."""
        m = result.heap
        proven = head.codes[: m - head.first]
        self._accept(head.plan.encoding.decode_values(proven, head.first), head.plan, codes=proven)
        self._consistent = False
        known = self.history.values_before(m)
        if known is None and result.true_value is not None and not self.table.is_rare(result.true_value, m):
            value, table, needs_u16 = result.true_value, self.table, not head.plan.encoding.fits(result.true_value)
        else:
            if known is None:
                known = self.values_before(m)
            value, table, needs_u16 = decide_failure(self.table, head.plan.encoding, known, result)
        if table is not self.table:
            banner = "!" * 72
            log.warning("%s\nNEW RARE VALUE: G(%d) = %d of %s, found by verification; added to the rare table, "
                        "kernel regenerated\n%s", banner, m, value, self.game.code, banner)
            self.rare_found.append((m, value))
            self.table = table
            self._solver, self._solver_rarity = exact_solver(self.game, table.rarity, known), table.rarity
            self._replan()  # the kernel's first heap moves past m: exact steps go on from m
            self._restart_consumers(self._anchor_from())
        else:
            log.warning("verification corrected G(%d) to %d (the kernel's value was wrong)", m, value)
            if needs_u16:
                self.storage = "u16"
                self._replan()
            self._restart_consumers(m + 1)
            self._consistent = True
            self._accept(np.array([value], dtype=np.uint16))
        self._consistent = True
        self._reset_producer()

    # -- handing on -----------------------------------------------------------------------

    def _accept(self, values: np.ndarray, plan: KernelPlan | None = None, codes: np.ndarray | None = None) -> None:
        """Hand proven values G(position) ... to the history and the consumers.

        ``codes``: the kernel's codes the values were decoded from (under ``plan``'s encoding).
        """
        values = np.asarray(values, dtype=np.uint16)
        if not len(values):
            return
        self._consistent = False
        if plan is not None and plan is not self.plan:  # the producer switched to 16-bit storage
            self.plan, self.storage = plan, plan.encoding.kind
        began = time.thread_time()
        first = self.position
        encoding = self.plan.encoding if self.plan is not None else None  # the store uses it only with codes
        self.history.append(values, encoding, prefix_at_least=self.plan.start if self.plan is not None else 0,
                            codes=codes)
        for consumer in self.consumers:
            consumer.accept(first, values)
        self.session.consumers += time.thread_time() - began
        self._consistent = True

    def values_before(self, heap: int) -> np.ndarray:
        """G(0) ... G(heap-1): from the history, or recomputed when it no longer holds them."""
        values = self.history.values_before(heap)
        if values is not None:
            return values
        log.warning("G(0) ... G(%d) are needed again and this run no longer holds them: recomputing them "
                    "(keep every value with --keep-values to avoid this)", heap - 1)
        with tempfile.TemporaryDirectory(prefix="octalgen-recompute-", dir=self.directory) as scratch:
            nested = Engine(self.game, replace(self.options, until=heap, backlog=None), table=self.table,
                            directory=scratch, keep_all=True, kernels=self.kernels)
            nested.run()
            return nested.history.values_before(heap)

    def _refine_split(self) -> None:
        """Give the split's cache the rates this session measured, when it measured enough."""
        session = self.session
        if self.plan is None or self.options.workers == 0:
            return
        kernel = session.kernel_values / session.kernel if session.kernel_values >= split.REFINE_AFTER \
            and session.kernel > 0 else None
        verify = session.verified_values / session.verifiers if session.verified_values >= split.REFINE_AFTER \
            and session.verifiers > 0 else None
        split.refine(self.plan, None, self.threads, kernel, verify)

    # -- results --------------------------------------------------------------------------

    def accounting(self) -> dict:
        """CPU seconds per role this session, per 10^8 values, and each role's rate."""
        return self.session.roles()


def _log_plan(plan: KernelPlan) -> None:
    log.info("kernel plan for %s: %d terms, window %d, first heap %d, storage %s", plan.game.code, len(plan.terms),
             plan.window, plan.start, plan.encoding.kind)


def _table_identity(game, table: RareTable | None) -> str:
    """How the starting table is named in a checkpoint's parameters."""
    if table is not None:
        return table.digest
    shipped = shipped_table(game)
    return shipped.digest if shipped is not None else "computed"


def kernel_start(game: OctalGame, table: RareTable | None = None) -> tuple[KernelPlan | None, np.ndarray]:
    """The kernel plan a run starts its producer with, and the exact values before its first heap.

    What ``octalgen emit c`` writes and ``octalgen bench`` times: the engine's exact steps up to
    the kernel's first heap (the table reconciled with them).  The plan is None for a game with
    no kernel; the values are then the first :data:`~octalgen.rare.DEFAULT_TABLE_UPTO`.
    """
    engine = Engine(game, EngineOptions(until=1 << 62), table=table)
    steps = engine.steps()
    try:
        for _ in steps:
            if engine.table is not None and (engine.plan is None or engine.position >= engine.plan.start):
                break
    finally:
        steps.close()
    plan = engine.plan
    return plan, engine.history.prefix[: plan.start if plan is not None else engine.position].copy()
