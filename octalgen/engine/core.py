"""The one engine: the loop that ties the rooms together (their map: :mod:`octalgen.engine`).

Every octalgen command that proves values (``values``, ``run``, ``period``, ``survey``, the
``c`` backend) is a front-end of :class:`Engine`.  Each step of its loop is an **exact step**
(:mod:`.exact_steps`: up to the kernel's first heap, or throughout for a game without a kernel)
or a **pipeline step**: the producer fills a chunk, the verifiers prove it, results are taken in
order, and a proof that does not go through goes to :mod:`.recovery`.  Every decision about the
plan is :mod:`.planning`'s: the loop tells it what happened and runs what it answers.  Proven
values go in order to the history and the consumers; a checkpoint (every ``checkpoint_every``
seconds, and at exit) lets a run stopped at any moment (Ctrl-C, SIGTERM, ``kill -9``) go on
exactly as the uninterrupted run would have.  Ctrl-C and SIGTERM are noticed within a fraction
of a second: long C calls are split, workers are killed, the exit checkpoint is written, and
:class:`~octalgen.errors.Interrupted` says what was proven and where it is.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np

from ..cpu.plugin import CKernels
from ..cpu.verify import PROVEN
from ..errors import InternalError, Interrupted, stop_signal
from ..game import OctalGame
from ..rare import DEFAULT_TABLE_UPTO, RareTable
from .accounting import Accounting
from .checkpoint import table_identity
from .consumer_set import ConsumerSet
from .exact_steps import ExactSteps, exact_target
from .executors import VERIFY_HISTORY
from .history import History
from .options import EngineOptions
from .pipeline import Pipeline, start_pipeline
from .planning import Planning
from .producer import Chunk, Producer
from .recompute import recompute_values
from .recovery import Recovery
from .resume import Checkpoints
from .scan import decode_codes
from .seams import Consumer, KernelPlugin
from .signals import StopRequest, StopRequested
from .split import Split
from .tally import UNSPARSE_WINDOW
from .tape import FarTermTape

__all__ = ["Engine", "EngineOptions"]

log = logging.getLogger("octalgen")


class Engine:
    """One computation of G(0) ... G(until-1) through the loop of the module docstring.

    Parameters
    ----------
    game : OctalGame
    options : EngineOptions
    consumers : sequence of Consumer
        What the proven values are handed to (:class:`~.seams.Consumer`), in this order.
    table : RareTable, optional
        Rare values to start from (a hint); default: the shipped table, else one from the first values.
    directory : path, optional
        Checkpoint directory (checkpoints, the history's files), resumed from.
    identity : dict, optional
        What the checkpoint must match to be resumed (the command and its parameters).
    keep_all : bool
        Keep every proven value on disk (``--keep-values``; ``period``), in a temporary directory
        without ``directory``.
    progress : Progress, optional
        Told the phase and how far the run has come (:class:`~octalgen.progress.Progress`).
    kernels : KernelPlugin, optional
        Default: the generated C (:class:`~octalgen.cpu.plugin.CKernels`).
    stop : StopRequest, optional
        An enclosing run's (:meth:`recompute`): a stop asked of it stops this one too.
    """

    def __init__(
        self,
        game: OctalGame,
        options: EngineOptions,
        consumers: tuple[Consumer, ...] = (),
        *,
        table: RareTable | None = None,
        directory=None,
        identity: dict | None = None,
        keep_all: bool = False,
        progress=None,
        kernels: KernelPlugin | None = None,
        stop: StopRequest | None = None,
    ):
        self.game = game
        self.options = options
        self.consumers = ConsumerSet(consumers, options.until)
        self.start_table = table
        self.directory = Path(directory) if directory is not None else None
        self.keep_all = keep_all
        self.progress = progress
        self.kernels = kernels or CKernels()
        self.stop = stop or StopRequest()
        # The rooms; the run's state is the plan's, the history's, the consumers' and the recoveries'.
        self.planning = Planning(game, options.storage, self.kernels.early_start)
        self._history: History | None = None  # made when the run starts
        what = {"game": game.code, "table": table_identity(game, table), "keep_values": keep_all}
        identity = {**what, **(identity or {})}
        self.checkpoints = Checkpoints(self.directory, identity, options.checkpoint_every)
        self.exact = ExactSteps(game, self.directory)
        self.producer = Producer(self.kernels, self.stop.check)
        self.far_tape = FarTermTape(self.directory, self.stop.check)
        self.recovery = Recovery(self.producer.kernels, self.planning, self.stop.check)
        self.pipeline: Pipeline | None = None
        self.session = Accounting()  # the run's wall seconds, and CPU seconds per role this session
        self.threads = options.threads or 1
        self.split: Split | None = None  # the automatic split of the cores, when one was made
        self._consistent = True  # False while a change is half made: no checkpoint then
        self._started = False
        self._phase_shown: str | None = None

    @property
    def position(self) -> int:
        """N: G(0) ... G(N-1) are proven (or, with ``verify=False``, computed)."""
        return self._history.position if self._history is not None else 0

    @property
    def history(self) -> History:
        """The run's :class:`~.history.History` (made when the run starts)."""
        if self._history is None:
            raise InternalError("the run's history is read before the run starts")
        return self._history

    # -- running --------------------------------------------------------------------------

    def run(self) -> Engine:
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
        self.session.begin()
        first = None
        restore_signals = self.stop.catch_signals()
        stopped = False
        try:
            self._start()
            self._started = True
            first = self.position
            while not self.consumers.done(self.position):
                if self.planning.plan is None or self.position < self.planning.plan.start:
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
        except KeyboardInterrupt as stop:  # a compile cancelled by the signal, or a second Ctrl-C: at once
            stopped = True
            self.stop.signal = self.stop.signal or stop_signal(stop)
        finally:
            self._close_session(first)  # workers are killed first
            restore_signals()
            try:
                if self.directory is not None and self._started and self._consistent:
                    self._checkpoint()
            finally:
                self.checkpoints.close()
        if stopped:
            if self.stop.signal is None:
                raise InternalError("the run stopped though no stop was requested")
            raise Interrupted(self.stop.signal, self.position, self.directory)

    def _phase(self, text: str, eta: bool = True) -> None:
        if self.progress is not None and text != self._phase_shown:
            self.progress.phase(text, eta=eta)
            self._phase_shown = text

    def _close_session(self, first: int | None) -> None:
        """Settle this session's figures (:mod:`.accounting`), and give the split the rates it measured."""
        pipeline, self.pipeline = self.pipeline, None
        if pipeline is not None:
            pipeline.close()
        done = self.position - first if first is not None else 0
        self.session.close(pipeline, self.producer, self.exact, self.recovery, done)
        if self.planning.plan is not None and self.options.workers != 0:
            self.session.refine_split(self.planning.plan, self.threads, self.kernels.backend)

    # -- start, resume, checkpoints -------------------------------------------------------

    def _start(self) -> None:
        options = self.options
        state = self.checkpoints.resume(options.until)
        table = state.rare_table(self.game, self.directory) if state is not None else None
        limits = options.prefix_limit, options.recent_limit
        self._history = self.checkpoints.history(state, self.keep_all, *limits, self.far_tape, self.recompute)
        self.history.keep_late = options.keep_late
        self.history.exact_held = self.exact.held
        if state is not None:
            self.planning.restore(table, state.storage, self.history)
            self.checkpoints.restore_consumers(state, self.consumers.members)
            self.recovery.rare_found, self.recovery.mask_switches = list(state.rare_found), list(state.mask_switches)
            self.session.elapsed = state.elapsed
            log.info("resuming from the checkpoint in %s at G(%d)", self.directory, self.position)
        else:
            self.planning.first_table(self.start_table)
            if self.planning.table is not None:
                self._replan()
        self.consumers.attach(self.history)
        if state is None and self.planning.table is not None:
            self._restart_consumers()

    def _checkpoint(self) -> None:
        consumers, seconds = self.consumers.states(), self.session.run_seconds()
        self.checkpoints.write(self.history, self.options.until, self.planning, consumers, self.recovery, seconds)

    # -- exact steps ----------------------------------------------------------------------

    def _exact_step(self) -> None:
        planning = self.planning
        if planning.table is None and self.position >= min(self.options.until, DEFAULT_TABLE_UPTO):
            planning.table_from(self.history.values_before(self.position))
            self._replan(restart=True)
            return
        piece_end = self.consumers.piece_end(self.position)
        stop, rarity = exact_target(planning.table, planning.plan, self.position, piece_end)
        prefix = planning.plan is not None or planning.table is None  # the kernel takes over after it: no ETA
        self._phase("exact prefix" if prefix else "exact values", eta=not prefix)
        self._accept(self.exact.values(self.position, stop, rarity, self.history.values_before))
        if planning.plan is not None and self.position >= planning.plan.start:  # the exact values decide the plan
            values = self.exact.held(self.position)
            values = values if values is not None else self.history.values_before(self.position)
            planning.reconcile(values)
            if self._replan():
                self._restart_consumers()
            plan = planning.plan
            if plan is not None:  # up to its limit: rare positions past it are far ones (see Verifier.verify)
                self.history.ensure_prefix(values[: min(plan.start, self.history.prefix_limit)])
            if plan is not None and self.position >= plan.start:  # a far term's tape filled from the solver's values
                self._reset_producer(values)
                self.exact.forget()  # the kernel takes over: the solver's values (all of them) are let go

    def _replan(self, restart: bool = False) -> bool:
        """Planning's plan, what the history keeps for it, and (``restart``) the consumers following it."""
        changed = self.planning.replan(self.history)
        self.history.follow(self.planning.plan)
        if restart:
            self._restart_consumers()
        return changed

    def _restart_consumers(self, anchor_from: int | None = None) -> None:
        """The consumers follow the plan's recurrence from here (:meth:`~.consumer_set.ConsumerSet.restart`)."""
        plan = self.planning.plan
        held = self.exact.tail(self.position, plan.window if plan is not None else UNSPARSE_WINDOW)
        self.consumers.restart(self.history, plan, held, anchor_from)

    # -- produce, verify, recover ---------------------------------------------------------

    def _pipeline_step(self) -> None:
        if self.planning.change_due(self.position, self.producer.overflow):
            self._replan()
            self._reset_producer()
        if self.producer.produced_to < self.position:  # exact steps or a recovery moved on
            self._reset_producer()
        if self._phase_shown != "running":
            self._phase("building kernel")
            self.producer.prepare()
        if self.pipeline is None:
            self.pipeline, self.split = start_pipeline(
                self.options, self.kernels, self.planning.kernel_plan, self.history, self.producer, self.stop
            )
            self.threads = self.split.threads if self.split is not None else self.threads
        self._phase("running")
        # Until the prefix is complete, a chunk produced ahead may need any value since the prefix
        # ends (a proof scan pairs G(x) with G(n - 1 - x)), so it gets every code the ring holds;
        # otherwise its scans would stop undecided and be retried here alone.
        proof_history = 0 if not self.options.verify else VERIFY_HISTORY if self.history.prefix_complete else None
        until = self.consumers.compute_to(self.position)
        steps = self.pipeline.step(until, self.options.chunk, self.threads, proof_history, self.history.prefix)
        for chunk, result in steps:
            if result is not None and result.status != PROVEN:
                retried, switch = self.recovery.try_again(chunk, result, self.history)
                if retried.status != PROVEN:
                    self._recover(chunk, retried, switch)
                    return
            self._accept(decode_codes(chunk.plan.encoding, chunk.codes, chunk.first), chunk.plan.encoding, chunk.codes)
            if self.consumers.done(self.position):
                return

    def _reset_producer(self, known: np.ndarray | None = None) -> None:
        """Produce again from the proven position (after a start, a resume, a recovery or a new plan);
        ``known``: G(0) ... G(position - 1), where they are at hand (the exact solver's)."""
        if self.pipeline is not None:
            self.pipeline.cancel()
        plan, position = self.planning.plan, self.position
        window, tape = self.far_tape.producer_start(plan, position, self.options.until, self.history, known)
        self.producer.reset(plan, position, window, tape)

    def _recover(self, chunk: Chunk, failure, switch: RareTable | None) -> None:
        """A proof failed (or stayed undecided) at heap m of ``chunk``: hand on what is proven, then go on
        under ``switch`` (a table under another mask, :meth:`~.recovery.Recovery.try_again`), or decide G(m)."""
        m = failure.heap
        proven = chunk.codes[: m - chunk.first]
        self._accept(decode_codes(chunk.plan.encoding, proven, chunk.first), chunk.plan.encoding, proven)
        if self.consumers.done(self.position):
            return  # the run ends before the heap whose proof failed
        self._consistent = False
        found = self.recovery.go_on(chunk, failure, switch, self.history)
        if found is None or found.new_rare:  # another mask, or a new rare value: the consumers follow the new plan
            self._replan(restart=True)
        else:  # a corrected value: the kernel goes on after it
            if found.needs_u16:
                self._replan()
            self._restart_consumers(found.heap + 1)
        if found is not None:
            self._accept(found.values)
        self._consistent = True
        self._reset_producer()
        if self.far_tape.tape is not None:  # it holds every value past the prefix: a recomputation's copy goes
            self.history.recomputed = None

    # -- handing on -----------------------------------------------------------------------

    def _accept(self, values: np.ndarray, encoding=None, codes: np.ndarray | None = None) -> None:
        """Hand proven values G(position) ... to the history and the consumers (``codes``: the kernel's,
        under ``encoding``; see :meth:`~.consumer_set.ConsumerSet.hand_on`)."""
        values = np.asarray(values, dtype=np.uint16)
        if not len(values):
            return
        self._consistent = False
        began = time.thread_time()
        self.consumers.hand_on(self.history, values, encoding, codes)
        if codes is not None:  # a chunk's codes: on the tape, where the producer writes on one
            self.far_tape.proven(self.position)
        self.session.consumers += time.thread_time() - began
        self._consistent = True

    #: G(0) ... G(heap-1) computed anew (recovery's last resort: the history's ``recompute``).
    recompute = recompute_values
