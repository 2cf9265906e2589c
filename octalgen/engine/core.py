"""The one engine: the loop that ties the rooms together (their map: :mod:`octalgen.engine`).

Every octalgen command that proves values (``values``, ``run``, ``period``, ``bench``'s exact
row, the ``c`` backend) is a front-end of :class:`Engine`.  Each step of its loop is an **exact
step** (:mod:`.exact`: up to the kernel's first heap, or throughout for a game without a kernel;
the rare table is a hint, reconciled with the exact values) or a **pipeline step**: the producer
fills a chunk, the verifiers prove it, results are taken in order, and a proof that does not go
through goes to recovery.  Proven values go in order to the history and the consumers; a
checkpoint (every ``checkpoint_every`` seconds, exact steps included, and at exit) lets a run
stopped at any moment (Ctrl-C, SIGTERM, ``kill -9``) go on exactly as the uninterrupted run
would have.  Ctrl-C and SIGTERM are noticed within a fraction of a second: long C calls are
split, workers are killed, the exit checkpoint is written, and
:class:`~octalgen.errors.Interrupted` says what was proven and where it is.
"""

from __future__ import annotations

import logging
import signal
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from ..cpu.verify import FAILED, PROVEN, UNDECIDED
from ..errors import ComputationError, Interrupted
from ..game import OctalGame
from ..mapped import SPILL_FROM, SPILL_PIECE, mapped_array
from ..plan import KernelPlan
from ..rare import DEFAULT_TABLE_UPTO, RareTable, shipped_table
from . import split
from .accounting import Accounting
from .checkpoint import table_identity
from .exact import ExactSteps, exact_target
from .executors import VERIFY_HISTORY
from .history import History
from .options import CHECKPOINT_EVERY, CHUNK, EngineOptions
from .plans import plan_for, reconcile
from .producer import Chunk, Producer, log_plan
from .recovery import announce, announce_switch, decide, late_switch
from .resume import Checkpoints
from .scan import decode_codes
from .seams import Consumer, KernelPlugin, Kernels
from .signals import StopRequest, StopRequested
from .tape import Tape
from .tally import UNSPARSE_WINDOW
from .pipeline import Pipeline, start_pipeline

__all__ = ["CHECKPOINT_EVERY", "CHUNK", "Engine", "EngineOptions", "Kernels", "recompute_values"]

log = logging.getLogger("octalgen")


class Engine:
    """One computation of G(0) ... G(until-1) through the loop of the module docstring.

    Parameters
    ----------
    game : OctalGame
    options : EngineOptions
    consumers : sequence of Consumer
        What the proven values are handed to (:class:`~.seams.Consumer`).
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
        With ``phase(text, eta=...)``, ``update(proven, produced)`` and ``close()``
        (:class:`~octalgen.progress.Progress`).
    kernels : KernelPlugin, optional
        The producer's kernel and the verifier of each plan (default: :class:`~.seams.Kernels`, the generated C).
    stop : StopRequest, optional
        The stop request of an enclosing run (:func:`recompute_values`): a stop asked of it stops this one too.
    """

    def __init__(self, game: OctalGame, options: EngineOptions, consumers: tuple[Consumer, ...] = (), *,
                 table: RareTable | None = None, directory=None, identity: dict | None = None,
                 keep_all: bool = False, progress=None, kernels: KernelPlugin | None = None,
                 stop: StopRequest | None = None):
        self.game = game
        self.options = options
        self.consumers = list(consumers)
        self.start_table = table
        self.directory = Path(directory) if directory is not None else None
        self.keep_all = keep_all
        self.progress = progress
        self.kernels = kernels or Kernels()
        # The run's state: what a checkpoint keeps.
        self.table: RareTable | None = None
        self.plan: KernelPlan | None = None
        self.storage = options.storage
        self.history: History | None = None
        self.rare_found: list[tuple[int, int]] = []
        self.mask_switches: list[tuple[int, int, int]] = []  # (heap, old mask, new mask)
        self.elapsed = 0.0
        # The rooms.
        self.stop = stop or StopRequest()
        self.checkpoints = Checkpoints(self.directory, {"game": game.code, "table": table_identity(game, table),
                                                        "keep_values": keep_all, **(identity or {})},
                                       options.checkpoint_every)
        self.exact = ExactSteps(game, self.directory)
        self.producer = Producer(self.kernels, self.stop.check)
        self.pipeline: Pipeline | None = None
        self.session = Accounting()  # CPU seconds per role this session (its roles(): per 10^8 values)
        self.threads = options.threads or 1
        self.split = None  # the automatic split of the cores, when one was made
        # The loop's own bookkeeping.
        self._consistent = True  # False while a change is half made: no checkpoint then
        self._started = False
        self._session_began = None
        self._phase_shown = None
        self._switched_at = None  # the heap of this session's last mask switch: a second failure there is decided
        self._u8_from = None  # where a u16 plan that starts sooner than the u8 one gives way to it
        self._tape_good_to = 0  # the producer's tape holds proven codes below it (a far term's window)

    @property
    def position(self) -> int:
        """N: G(0) ... G(N-1) are proven (or, with ``verify=False``, computed)."""
        return self.history.position if self.history is not None else 0

    # -- running --------------------------------------------------------------------------

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
        first = None
        restore_signals = self.stop.catch_signals()
        stopped = False
        try:
            self._start()
            self._started = True
            first = self.position
            while not self._done():
                if self.plan is None or self.position < self.plan.start:
                    self._exact_step()
                else:
                    self._pipeline_step()
                self.stop.check()
                if self.checkpoints.due:
                    self._checkpoint()
                if self.progress is not None:
                    self.progress.update(self.position, max(self.producer.produced_to, self.position))
                yield
        except StopRequested:
            stopped = True
        finally:
            self._close_session(first, began, cpu_began)  # workers are killed first
            restore_signals()
            try:
                if self.directory is not None and self._started and self._consistent:
                    self._checkpoint()
            finally:
                self.checkpoints.close()
        if stopped:
            raise Interrupted(self.stop.signal, self.position, self.directory)

    def request_stop(self, signal_number: int = signal.SIGINT) -> None:
        """Stop at the next safe point, as Ctrl-C does (the run then raises :class:`Interrupted`)."""
        self.stop.request(signal_number)

    def _done(self) -> bool:
        return self.position >= self.options.until or any(c.finished for c in self.consumers)

    def _goal(self) -> int:
        """Where computing stops for now: ``until``, or before it where a consumer expects to be finished."""
        return min([self.options.until, *self._ahead([self._u8_from])]
                   + self._ahead(c.finishes_at for c in self.consumers))

    def _cut(self) -> int:
        """Where the next piece of values handed on ends: the goal, or before it where a consumer looks
        at the values so far (a search)."""
        return min([self._goal()] + self._ahead(c.looks_at for c in self.consumers))

    def _ahead(self, positions) -> list[int]:  # the positions still to come
        return [n for n in positions if n is not None and n > self.position]

    def _phase(self, text: str, eta: bool = True) -> None:
        if self.progress is not None and text != self._phase_shown:
            self.progress.phase(text, eta=eta)
            self._phase_shown = text

    def _close_session(self, first: int | None, began: float, cpu_began: float) -> None:
        """Settle this session's figures, and give the split the rates it measured."""
        session = self.session
        if self.pipeline is not None:
            session.verifiers += self.pipeline.cpu_seconds
            session.verifiers_here += self.pipeline.cpu_seconds_here
            session.measuring += self.pipeline.measuring_seconds
            session.verified_values += self.pipeline.values
            self.pipeline.close()
            self.pipeline = None
        session.kernel, session.kernel_values = self.producer.cpu_seconds, self.producer.values
        session.kernel_fallbacks, session.first_fallback = self.producer.fallbacks, self.producer.first_fallback
        session.exact = self.exact.cpu_seconds
        session.values = self.position - first if first is not None else 0
        session.wall = time.monotonic() - began
        session.process = time.process_time() - cpu_began
        self.elapsed += session.wall
        self._session_began = None
        if self.plan is not None and self.options.workers != 0:
            kernel, verify, coordinator = session.measured_rates()
            split.refine(self.plan, None, self.threads, kernel, verify, self.kernels.backend, coordinator)

    # -- start, resume, checkpoints -------------------------------------------------------

    def _start(self) -> None:
        options = self.options
        state = self.checkpoints.resume(options.until)
        if state is not None:
            self.table = state.rare_table(self.game, self.directory)
            self.storage = state.storage
        self.history = self.checkpoints.history(state, self.keep_all, options.prefix_limit, options.recent_limit)
        self.history.tape_of = lambda: self.producer.tape
        if state is not None:
            known = self._known_values() if self.table is not None else None
            self.plan = self._plan_now(known) if known is not None else None
            self._u8_from = self._narrower_start(known)
            self.checkpoints.restore_consumers(state, self.consumers)
            self.rare_found, self.elapsed = list(state.rare_found), state.elapsed
            self.mask_switches = list(state.mask_switches)
            log.info("resuming from the checkpoint in %s at G(%d)", self.directory, self.position)
        else:
            self.table = self.start_table if self.start_table is not None else shipped_table(self.game)
            if self.table is not None:
                self._replan()
        for consumer in self.consumers:
            consumer.attach(self.history)
        if state is None and self.table is not None:
            self._restart_consumers(self._anchor_from())

    def _checkpoint(self) -> None:
        states = {c.name: c.state() for c in self.consumers}
        elapsed = self.elapsed + (time.monotonic() - self._session_began if self._session_began else 0.0)
        self.checkpoints.write(self.history, self.options.until, self.table, self.storage,
                               {name: s for name, s in states.items() if s is not None}, self.rare_found,
                               self.mask_switches, elapsed)

    # -- exact steps ----------------------------------------------------------------------

    def _exact_step(self) -> None:
        if self.table is None and self.position >= min(self.options.until, DEFAULT_TABLE_UPTO):
            self.table = RareTable.from_values(self.game, self.history.values_before(self.position))
            log.info("rare table of %s from its first %d values: sparse space %s, %d rare positions", self.game.code,
                     self.position, self.table.describe(), self.table.count)
            self._replan()
            self._restart_consumers(self._anchor_from())
            return
        stop, rarity = exact_target(self.table, self.plan, self.position, self._cut())
        prefix = self.plan is not None or self.table is None  # the kernel takes over after it: no ETA from its rate
        self._phase("exact prefix" if prefix else "exact values", eta=not prefix)
        self._accept(self.exact.values(self.position, stop, rarity, self.values_before))
        if self.plan is not None and self.position >= self.plan.start:  # the exact values decide table and storage
            values = self.exact.held(self.position)
            values = values if values is not None else self.values_before(self.position)
            self.table = reconcile(self.table, values)
            if self._replan():
                self._restart_consumers(self._anchor_from())
            if self.plan is not None:  # up to its limit: rare positions past it are far ones (see Verifier.verify)
                self.history.ensure_prefix(values[: min(self.plan.start, self.history.prefix_limit)])
            if self.plan is not None and self.position >= self.plan.start:
                if self.plan.window > self.history.recent_limit:  # a far term: its tape from the solver's values
                    self._reset_producer(values)
                self.exact.forget()  # the kernel takes over: the solver's values (all of them) are let go

    def _known_values(self) -> np.ndarray:
        """The prefix, and under a mask the values that appeared past it: what u8 storage must hold."""
        late = self.history.late_values() if self.table.kind == "range" else None
        return self.history.prefix if late is None else np.concatenate([self.history.prefix, late])

    def _plan_now(self, known: np.ndarray) -> KernelPlan | None:
        """The plan for the current table and storage from the run's position (:func:`~.plans.plan_for`:
        u16 where the u8 kernel could not start until far on); ``known``: :meth:`_known_values`."""
        far_from = self.history.prefix_limit if "u16" in self.kernels.storages else None
        return plan_for(self.table, known, self.storage, position=self.position, far_from=far_from)

    def _narrower_start(self, known: np.ndarray | None) -> int | None:
        """Where a u16 plan chosen because it starts sooner gives way to the u8 one (None: it does not)."""
        if self.plan is None or self.plan.encoding.kind != "u16" or self.storage is not None:
            return None
        narrower = plan_for(self.table, known, self.storage)
        return narrower.start if narrower.encoding.kind == "u8" else None

    def _replan(self) -> bool:
        """Plan the kernel for the current table and storage; True when the plan changed."""
        known = self._known_values()
        plan = self._plan_now(known)
        if plan is None:
            self.history.keep_all = self.history.keep_all or self.history.store is not None
            log.info("%s has no sparse space or no move leaving a heap: the exact solver computes every value",
                     self.game.code)
        changed = plan != self.plan
        if plan is not None:
            log_plan(plan, self.plan)
        self.plan = plan
        self._u8_from = self._narrower_start(known)
        self.history.window = plan.window if plan is not None else 0
        return changed

    def _anchor_from(self) -> int:
        return self.plan.start - 1 if self.plan is not None else 0

    def _restart_consumers(self, anchor_from: int) -> None:
        window = self.plan.window if self.plan is not None else UNSPARSE_WINDOW
        tail = self.exact.tail(self.position, window)  # at hand where the solver holds every value
        tail = tail if tail is not None else self.history.tail(window)
        self.history.cover(tail)  # the period search reads the values leaving its window from the history
        for consumer in self.consumers:
            consumer.restart(window, tail, anchor_from)

    # -- produce, verify, recover ---------------------------------------------------------

    def _pipeline_step(self) -> None:
        if self._u8_from is not None and self.position >= self._u8_from:  # the u8 kernel can take over
            self._replan()
            self._reset_producer()
        if self.producer.produced_to < self.position:  # exact steps or a recovery moved on
            self._reset_producer()
        if self._phase_shown != "running":
            self._phase("building kernel")
            self.producer.prepare()
        if self.pipeline is None:
            self.pipeline, self.split = start_pipeline(self.options, self.kernels, self.plan, self.history,
                                                       self.producer, self.stop)
            self.threads = self.split.threads if self.split is not None else self.threads
        self._phase("running")
        # Until the prefix is complete, a chunk produced ahead may need any value since the prefix
        # ends (a proof scan pairs G(x) with G(n - 1 - x)), so it gets every code the ring holds;
        # otherwise its scans would stop undecided and be retried here alone.
        reach = 0 if not self.options.verify else VERIFY_HISTORY if self.history.prefix_complete else None
        for chunk, result in self.pipeline.step(self._goal(), self.options.chunk, self.threads, reach,
                                                self.history.prefix):
            if result is not None and result.status == UNDECIDED:  # again with the recent values
                result = self.pipeline.verify_again(chunk, result, self.history)
            # Far out, a table under another mask instead of a far term (or of every value):
            switch = self._late_switch(chunk, result) if result is not None and result.status != PROVEN else None
            if switch is None and result is not None and result.status == UNDECIDED:  # with every value
                result = self.pipeline.verify_again(chunk, result, self.history, self.values_before)
                switch = self._late_switch(chunk, result) if result.status == FAILED else None
            if result is not None and result.status != PROVEN:
                self._recover(chunk, result, switch)
                return
            self._accept(decode_codes(chunk.plan.encoding, chunk.codes, chunk.first), chunk.plan, codes=chunk.codes)
            if self._done():
                return

    def _reset_producer(self, known: np.ndarray | None = None) -> None:
        """Produce again from the proven position (after a start, a resume or a recovery); ``known``:
        G(0) ... G(position - 1), where they are at hand (the exact solver's)."""
        if self.pipeline is not None:
            self.pipeline.cancel()
        kernel_runs = self.plan is not None and self.position >= self.plan.start
        if kernel_runs and self.plan.window > self.history.recent_limit:  # a far term: the window on a tape
            self.producer.reset(self.plan, self.position, None, self._tape(known))
        else:
            self.producer.reset(self.plan, self.position, self.history.tail(self.plan.window) if kernel_runs else None)

    def _tape(self, known: np.ndarray | None) -> Tape:
        """The producer's tape, holding the proven codes from the end of the prefix (or the plan's window,
        where it starts later) to the position: the one it has, with the values proven since its last
        chunk written, or a new one.  With the prefix it holds every value, so that a recovery reads
        them back rather than computing them again."""
        plan, position, tape = self.plan, self.position, self.producer.tape
        first = min(position - plan.window, self.history.prefix_limit)
        if tape is None or tape.encoding != plan.encoding or tape.first > first or tape.stop < self.options.until:
            tape = Tape(plan.encoding, first, self.options.until - first, self.directory, plan.table.entries)
            self._tape_good_to = first
        tape.rare.update((p, v) for p, v in plan.table.entries if p >= tape.first)  # a new one since, too

        everything = None  # G(0) ... G(position - 1), got at most once for the whole fill

        def read(lo: int, hi: int) -> np.ndarray:  # the solver's values, the history's (memory, store, old tape)
            nonlocal everything
            values = known[lo: hi] if known is not None else self.history.values(lo, hi)
            if values is None:  # not at hand: every value up to the position once, not up to hi per piece
                if everything is None:
                    everything = self.values_before(position)
                values = everything[lo: hi]
            return values

        tape.fill(self._tape_good_to, position, read, self.stop.check)
        self._tape_good_to = position
        return tape

    def _recover(self, chunk: Chunk, failure, switch: RareTable | None) -> None:
        """A proof failed (or stayed undecided) at heap m of ``chunk``: hand on what is proven, then go on
        under ``switch`` (a table under another mask, :meth:`_late_switch`), or decide G(m)."""
        m = failure.heap
        proven = chunk.codes[: m - chunk.first]
        self._accept(decode_codes(chunk.plan.encoding, proven, chunk.first), chunk.plan, codes=proven)
        if self._done():
            return  # the run ends before the heap whose proof failed
        self._consistent = False
        if switch is not None:
            announce_switch(m, self.table, switch, len(self.history.prefix), self.game.code)
            self.mask_switches.append((m, self.table.mask, switch.mask))
            self.table, self._switched_at = switch, m
            self._replan()  # its first heap is before the prefix's end: the kernel goes on from m
            self._restart_consumers(self._anchor_from())
        else:
            self._decide(chunk, failure)
        self._consistent = True
        self._reset_producer()

    def _decide(self, chunk: Chunk, failure) -> None:
        m = failure.heap
        found = decide(self.table, chunk.plan.encoding, self.history, failure, self.values_before, self.directory)
        announce(found, self.game.code)
        if found.new_rare:
            self.rare_found.append((m, found.value))
            self.table = found.table
            self.exact.adopt(found.table.rarity, found.solver)
            self._replan()  # the kernel's first heap moves past m: exact steps go on from m
            self._restart_consumers(self._anchor_from())
        else:
            if found.needs_u16:
                self.storage = "u16"
                self._replan()
            self._restart_consumers(m + 1)
            self._accept(np.array([found.value], dtype=np.uint16))

    def _late_switch(self, chunk: Chunk, failure) -> RareTable | None:
        """The table under another mask where G(m) would be a far term (:func:`~.recovery.late_switch`);
        None where none helps, or where this session switched at m already (G(m) is then decided)."""
        if failure.heap == self._switched_at:
            return None
        return late_switch(self.table, self.history, chunk, failure, self.storage)

    # -- handing on -----------------------------------------------------------------------

    def _accept(self, values: np.ndarray, plan: KernelPlan | None = None, codes: np.ndarray | None = None) -> None:
        """Hand proven values G(position) ... to the history and the consumers.

        They go in pieces that end where a consumer looks at the values or may be finished
        (:meth:`_cut`); once the run is done, the rest is dropped: the run ends at that piece,
        not at the end of a chunk.  ``codes``: the kernel's codes the values were decoded from
        (under ``plan``'s encoding).
        """
        values = np.asarray(values, dtype=np.uint16)
        if not len(values):
            return
        self._consistent = False
        if plan is not None and plan is not self.plan:  # the producer switched to 16-bit storage
            self.plan, self.storage = plan, plan.encoding.kind
        began = time.thread_time()
        encoding = self.plan.encoding if self.plan is not None else None  # the store uses it only with codes
        start = 0
        while start < len(values) and not self._done():
            first = self.position
            stop = min(len(values), start + self._cut() - first)
            piece = values[start: stop]
            self.history.append(piece, encoding, codes=codes[start: stop] if codes is not None else None)
            for consumer in self.consumers:
                consumer.accept(first, piece)
            start = stop
        if codes is not None and self.producer.tape is not None:  # a chunk's codes: they are on the tape
            self._tape_good_to = self.position
        self.session.consumers += time.thread_time() - began
        self._consistent = True

    def values_before(self, heap: int) -> np.ndarray:
        """G(0) ... G(heap-1): from the history, or recomputed when it no longer holds them; from
        :data:`~octalgen.mapped.SPILL_FROM` values on, in a file on disk (:mod:`octalgen.mapped`),
        written in pieces: a rare value decided far out does not hold every value in memory."""
        out = None
        if heap >= SPILL_FROM:
            out = mapped_array(heap, np.uint16, self.directory, f"values before G({heap})")
            if _copy_values(self.history, out):
                return out
        else:
            values = self.history.values_before(heap)
            if values is not None:
                return values
        log.warning("G(0) ... G(%d) are needed again and this run no longer holds them: recomputing them "
                    "(keep every value with --keep-values to avoid this)", heap - 1)
        try:
            return recompute_values(self.game, heap, self.table, self.options, self.kernels, self.directory, self.stop,
                                    out)
        except Interrupted:  # this run's own stop request (the recomputation shares it): it stops where it stands
            raise StopRequested from None


def recompute_values(game: OctalGame, heap: int, table: RareTable | None, options: EngineOptions,
                     kernels: KernelPlugin | None = None, scratch=None, stop: StopRequest | None = None,
                     out: np.ndarray | None = None) -> np.ndarray:
    """G(0) ... G(heap-1), computed anew by a run of their own (recovery's last resort).

    The run keeps every value in a temporary directory (under ``scratch``, when given), so that
    a recovery of its own finds them there rather than recomputing in turn; ``stop``: the
    enclosing run's stop request, which stops this run too (:class:`~octalgen.errors.Interrupted`).
    ``out``: an array of ``heap`` values to write them to, in pieces (one on disk, see
    :meth:`Engine.values_before`), instead of joining them in memory.
    """
    with tempfile.TemporaryDirectory(prefix="octalgen-recompute-", dir=scratch) as directory:
        engine = Engine(game, replace(options, until=heap, backlog=None), table=table, directory=directory,
                        keep_all=True, kernels=kernels, stop=stop)
        engine.run()
        if out is None:
            return engine.history.values_before(heap)
        if not _copy_values(engine.history, out):  # it kept every value: a bug if one is missing
            raise ComputationError(f"a recomputation to G({heap}) lost values it kept: a bug, please report it")
        return out


def _copy_values(history: History, out: np.ndarray) -> bool:
    """Copy G(0) ... G(len(out) - 1) from ``history`` into ``out`` in pieces; False where it lacks some."""
    for lo in range(0, len(out), SPILL_PIECE):
        piece = history.values(lo, min(len(out), lo + SPILL_PIECE))
        if piece is None:
            return False
        out[lo: lo + len(piece)] = piece
    return True
