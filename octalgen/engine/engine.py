"""The long run: speculative producer, parallel verifiers, and a consumer of proven values.

:class:`LongRun` computes and proves G(0) ... G(N-1) of a game with a speculative kernel, in
bounded memory, resumable from its checkpoint (``octalgen run``):

* **Producer.**  The exact prefix G(0) ... G(start-1) comes from
  :func:`~octalgen.cpu.pipeline.starting_plan` (the table reconciled with it).  From ``start``
  the :class:`~octalgen.cpu.kernel.SpeculativeKernel` computes chunks; its whole state is the
  heap and the last ``plan.window`` codes.  Each chunk goes to a verification task with the
  codes it needs (the window, :data:`~octalgen.cpu.pipeline.VERIFY_HISTORY` more, the chunk).
  The producer only waits when :attr:`RunOptions.backlog` chunks are unverified.
* **Verifiers.**  :func:`~octalgen.cpu.pipeline.verify_interval` in this process, local worker
  processes, or a Dask cluster (:mod:`.executors`).
* **Consumer.**  Chunks are taken in order as they are proven: the scanner (:mod:`.scan`)
  folds them into the digests, the counts and the period-search hash; ``--keep-values`` writes
  them to disk (:mod:`.store`).  Everything a resume needs is this consumer's state, which is
  what the checkpoint holds: the position proven, the rare table, the exact prefix the
  verifier needs, the last W values (the kernel window and the hash window), the scanner
  state, the anchor window and the period candidate, the rare values found, the index of kept
  values.  A run killed at any moment resumes from its last checkpoint and ends with the same
  figures, because everything past the checkpoint is recomputed the same way.
* **Recovery.**  When verification stops at heap m, the proven part is consumed, later chunks
  are dropped, and G(m) is decided by :func:`~octalgen.cpu.pipeline.resolve_failure` (the
  exact solver on G(0) ... G(m-1)) when those values are at hand (the exact prefix and recent
  values reach back to 0, or they were kept on disk), else from the verifier's own decision
  when it is a common value.  A new rare value is announced, recorded, and the run goes on
  with a new plan from :func:`~octalgen.cpu.pipeline.starting_plan` (its window grows past m).

Period search (Grossman, section 4) with the Guy–Smith theorem: when the window of W values
ending at a power-of-two anchor a recurs ending at a + p (hash match, then values compared),
the kernel's values are periodic from i0 = a - W + 1, since each value is a function of the W
before it.  Verified values equal the kernel's, so once G(0) ... G(2 i0 + 2p + t - 1) are
all proven (no correction since the anchor) G(n + p) = G(n) holds for i0 <= n < 2 i0 + p + t,
which proves period p from i0.  p is the least period (an earlier recurrence would have
matched first); the least preperiod is at most i0 (``octalgen period`` finds it exactly).

Memory is bounded whatever N: the prefix (:data:`PREFIX_LIMIT` values), a window,
:data:`RECENT` recent values, and the backlog of chunks (while the prefix is still growing,
the kernel's ring keeps every code since the kernel's first heap: at most PREFIX_LIMIT more).
"""

from __future__ import annotations

import logging
import signal
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import __version__
from ..errors import CheckpointError, ComputationError, InputError
from ..game import parse_game
from ..periodicity import proof_length
from ..plan import KernelPlan, make_plan
from ..rare import RareTable, is_rare, shipped_table
from ..cpu.kernel import SpeculativeKernel, StorageOverflow, code_dtype, default_threads
from ..cpu.pipeline import VERIFY_HISTORY, resolve_failure, starting_plan
from ..cpu.verify import PROVEN, UNDECIDED, Verifier
from .checkpoint import (check_writable, pack_array, read_checkpoint, read_side_file, unpack_array,
                         write_checkpoint, write_side_file)
from .executors import make_executor, verify_task
from .progress import Progress
from .scan import ANCHORED, HASH_MATCH, Scanner
from .stats import Statistics
from .store import ValueStore

log = logging.getLogger("octalgen")

#: Heaps per kernel chunk (one verification task each).
CHUNK = 1 << 21

#: Proven values the consumer keeps (beyond the checkpointed window) for a verification that
#: needs a longer history, and to recover early failures exactly.
RECENT = 1 << 23

#: The verifier's prefix grows to the first this many values: its proof scans pair G(x) with
#: G(n - 1 - x) for x = 1, 2, ... and must reach G(x) (for .6 near G(19,067,570), x = 144,607).
PREFIX_LIMIT = 1 << 23

#: Seconds between checkpoints.
CHECKPOINT_EVERY = 5.0


@dataclass(frozen=True)
class RunOptions:
    """What ``octalgen run`` was asked to do.

    Attributes
    ----------
    until : int
        Prove G(0) ... G(until - 1).
    digest_from : int
        Also report the digest of G(digest_from) ... (0: not asked for).
    keep_values : bool
        Write the proven values to chunk files.
    threads : int
        Kernel threads.
    workers : int or None
        Local verification processes (None: all cores; 0: verify in this process).
    scheduler : str or None
        Address of a Dask scheduler to send verification to instead.
    chunk : int
        Heaps per kernel chunk.
    backlog : int or None
        Unverified chunks the producer may run ahead (None: twice the workers, plus two).
    checkpoint_every : float
        Seconds between checkpoints.
    backend : str
        ``"c"`` (this module's pipeline) or another exact backend that yields proven values
        (``"cuda"``): then only the consumer runs here.
    """

    until: int
    digest_from: int = 0
    keep_values: bool = False
    threads: int = 1
    workers: int | None = None
    scheduler: str | None = None
    chunk: int = CHUNK
    backlog: int | None = None
    checkpoint_every: float = CHECKPOINT_EVERY
    backend: str = "c"


@dataclass
class _Pending:
    """A produced chunk [first, stop) waiting for its verification."""

    first: int
    stop: int
    plan: KernelPlan
    codes: np.ndarray
    future: object


class _Stop(KeyboardInterrupt):
    """SIGTERM: stop like Ctrl-C (the exit checkpoint is written)."""


@dataclass
class RunSummary:
    """What a run (or its checkpoint) reports."""

    statistics: Statistics
    period: dict | None
    candidate: dict | None
    hash_matches: int
    seconds: float
    session_values: int
    session_seconds: float
    table: RareTable

    @property
    def values_per_second(self) -> float:
        return self.session_values / self.session_seconds if self.session_seconds > 0 else 0.0

    def lines(self) -> list[str]:
        lines = self.statistics.lines()
        if self.period:
            p = self.period
            lines.append(f"period {p['period']} from G({p['from']}) proven by Guy-Smith with G(0) ... "
                         f"G({p['proof_length'] - 1}) (least preperiod at most {p['from']}; "
                         "octalgen period finds it)")
        elif self.candidate:
            c = self.candidate
            lines.append(f"period candidate {c['period']} from G({c['from']}): proven once G(0) ... "
                         f"G({c['proof_length'] - 1}) are verified")
        else:
            lines.append(f"period none found (hash matches {self.hash_matches}, none a repeated window)")
        lines.append(f"rare table {self.table.digest} ({self.table.count} rare values)")
        if self.session_seconds > 0:
            lines.append(f"values/s {self.values_per_second:,.0f} ({self.session_values} values in "
                         f"{self.session_seconds:.1f} s this session)")
        return lines

    def to_json(self) -> dict:
        result = self.statistics.to_json()
        result.update(period=self.period, period_candidate=self.candidate, hash_matches=self.hash_matches,
                      rare_table=self.table.digest, seconds=self.seconds,
                      values_per_second=round(self.values_per_second))
        return result


def table_identity(game, table: RareTable | None) -> str:
    """How the starting table is named in a checkpoint's parameters."""
    if table is not None:
        return table.digest
    shipped = shipped_table(game)
    return shipped.digest if shipped is not None else "computed"


class LongRun:
    """One resumable run; see the module docstring.

    Parameters
    ----------
    game : OctalGame or str
    options : RunOptions
    directory : path, optional
        Checkpoint directory (None: no checkpoints).
    table : RareTable, optional
        Starting rare table (default: shipped, else computed); reconciled with the exact prefix.
    progress : Progress, optional
    """

    def __init__(self, game, options: RunOptions, directory=None, table: RareTable | None = None,
                 progress: Progress | None = None):
        self.game = parse_game(game)
        self.options = options
        self.directory = Path(directory) if directory is not None else None
        self.start_table = table
        self.progress = progress or Progress(options.until, enabled=False)
        self.parameters = {"game": self.game.code, "table": table_identity(self.game, table),
                           "digest_from": options.digest_from, "keep_values": options.keep_values}
        self.pending: deque[_Pending] = deque()
        self._kernels: dict[KernelPlan, tuple[SpeculativeKernel, Verifier]] = {}
        self._mutating = False
        self._saved_prefix = None
        self._shared = (None, None)
        self._last_checkpoint = time.monotonic()
        self._began = None  # when this session began running (None outside run())
        self.session_values = 0
        self.session_seconds = 0.0

    # -- the run ------------------------------------------------------------------------

    def run(self) -> RunSummary:
        """Run to ``options.until`` (or a proven period); checkpoint periodically and at exit."""
        if self.options.backend != "c":
            from ..backends import get_backend

            get_backend(self.options.backend)  # one clear line here when it cannot run
        self._start()
        self._began, first = time.monotonic(), self.position
        previous = signal.signal(signal.SIGTERM, self._terminate) if _main_thread() else None
        try:
            if self.options.backend == "c":
                self._run_pipeline()
            else:
                self._run_backend()
        finally:
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)
            self.session_values = self.position - first
            self.session_seconds = time.monotonic() - self._began
            self.elapsed += self.session_seconds
            self._began = None
            self.progress.close()
            if self.directory is not None and not self._mutating:
                self._checkpoint()
        return self.summary()

    @property
    def position(self) -> int:
        return self.scanner.position

    def _finished(self) -> bool:
        return self.position >= self.options.until or self.period is not None

    def _run_pipeline(self) -> None:
        options = self.options
        workers = default_threads() if options.workers is None else options.workers
        executor = make_executor(workers, options.scheduler)
        backlog = options.backlog or 2 * executor.workers + 2
        try:
            self._reset_producer()
            while not self._finished():
                can_produce = self.produced_to < options.until and self.position >= self.plan.start
                if can_produce and len(self.pending) < backlog:
                    self._produce(executor)
                    self._consume(block=False)
                elif self.pending:
                    self._consume(block=True)
                else:
                    raise ComputationError(f"the run stalled at G({self.position}): a bug, please report it")
                self._maybe_checkpoint()
                self.progress.update(self.position, self.produced_to)
        finally:
            for pending in self.pending:
                pending.future.cancel()
            self.pending.clear()
            executor.close()

    def _run_backend(self) -> None:
        """Proven values from another exact backend (e.g. ``cuda``); only the consumer runs here."""
        from ..backends import get_backend

        backend = get_backend(self.options.backend)
        for chunk in backend.compute(self.game, self.position, self.options.until - self.position):
            self._accept(chunk, None, kernel=False)
            self._maybe_checkpoint()
            self.progress.update(self.position, self.position)
            if self._finished():
                break

    def _maybe_checkpoint(self) -> None:
        if self.directory is not None and time.monotonic() - self._last_checkpoint >= self.options.checkpoint_every:
            self._checkpoint()
            self._last_checkpoint = time.monotonic()

    def _terminate(self, signum, frame):
        raise _Stop("terminated")

    # -- start and resume ---------------------------------------------------------------

    def _start(self) -> None:
        body = read_checkpoint(self.directory) if self.directory is not None else None
        if self.directory is not None:
            check_writable(self.directory)
        if body is not None:
            try:
                self._restore(body)
            except (KeyError, TypeError, ValueError) as exc:  # a layout this version does not know
                raise CheckpointError(f"checkpoint in {self.directory} is malformed ({type(exc).__name__}: {exc}); "
                                      "it was left untouched") from None
            log.info("resuming from the checkpoint in %s at G(%d)", self.directory, self.position)
            return
        plan, prefix = starting_plan(self.game, self.start_table)
        if plan is None:
            raise InputError(f"{self.game.code} has no sparse space (or no move leaving a heap): no speculative "
                             "kernel, so no long run; use octalgen period or octalgen values")
        self.table, self.plan, self.storage = plan.table, plan, plan.encoding.kind
        self.prefix = np.asarray(prefix, dtype=np.uint16)
        self.scanner = Scanner(plan.window, self.options.digest_from, anchor_from=plan.start - 1)
        self.recent: deque[tuple[int, np.ndarray]] = deque()
        self.store = ValueStore(self.directory) if self.options.keep_values else None
        if self.store is not None:
            self.store.prune()
        self.anchor_window = self.candidate = self.period = None
        self.rare_found: list[tuple[int, int]] = []
        self.elapsed = 0.0
        self._accept(self.prefix[: self.options.until], None, kernel=False)

    def _restore(self, body: dict) -> None:
        where = f"checkpoint in {self.directory}"
        if body.get("octalgen_checkpoint") != 1:
            raise CheckpointError(f"{where} has an unknown layout; it was left untouched")
        theirs = body["parameters"]
        for key, ours in self.parameters.items():
            if theirs.get(key) != ours:
                raise CheckpointError(f"{where} belongs to another run ({key} {theirs.get(key)!r}, this command "
                                      f"{ours!r}); it was left untouched: use another --checkpoint directory")
        if body["position"] > self.options.until:
            raise CheckpointError(f"{where} is at G({body['position']}), beyond --until {self.options.until}; "
                                  f"ask for --until {body['position']} or more")
        self.table = RareTable.from_yaml(body["table"], game=self.game, source=where)
        if self.table.digest != body["table_digest"]:
            raise CheckpointError(f"{where}: its rare table does not match its digest; it was left untouched")
        self.storage = body["storage"]
        self.plan = make_plan(self.table, storage=self.storage)
        self._saved_prefix = body["prefix"]
        self.prefix = np.frombuffer(read_side_file(self.directory, self._saved_prefix), dtype="<u2").astype(np.uint16)
        tail = unpack_array(body["tail"])
        self.scanner = Scanner.from_dict(body["scanner"], *_counts(body), tail)
        if self.scanner.position != body["position"] or self.scanner.window != self.plan.window:
            raise CheckpointError(f"{where} is inconsistent (scanner and position disagree); it was left untouched")
        self.recent = deque([(self.position - len(tail), tail.copy())])
        self.anchor_window = unpack_array(body["anchor_window"]) if body["anchor_window"] else None
        self.candidate, self.period = body["candidate"], body["period"]
        self.rare_found = [tuple(e) for e in body["rare_found"]]
        self.store = ValueStore(self.directory, body["values_index"]) if self.options.keep_values else None
        if self.store is not None:
            self.store.prune()
        self.elapsed = body["elapsed"]

    def _checkpoint(self) -> None:
        s = self.scanner
        present = np.flatnonzero(s.counts).astype(np.uint16)
        body = {
            "octalgen_checkpoint": 1,
            "octalgen": __version__,
            "parameters": self.parameters,
            "until": self.options.until,
            "position": self.position,
            "table": self.table.to_yaml(),
            "table_digest": self.table.digest,
            "storage": self.storage,
            "prefix": self._save_prefix(),
            "scanner": s.to_dict(),
            "tail": pack_array(s.tail),
            "present": pack_array(present),
            "counts": pack_array(s.counts[present]),
            "first_seen": pack_array(s.first_seen[present]),
            "anchor_window": pack_array(self.anchor_window) if self.anchor_window is not None else None,
            "candidate": self.candidate,
            "period": self.period,
            "rare_found": [list(e) for e in self.rare_found],
            "values_index": self.store.index if self.store is not None else [],
            "elapsed": self.elapsed + (time.monotonic() - self._began if self._began is not None else 0.0),
        }
        write_checkpoint(self.directory, body)
        for stale in self.directory.glob("prefix-*.u16"):  # earlier versions, no longer referred to
            if stale.name != body["prefix"]["file"]:
                stale.unlink()

    def _save_prefix(self) -> dict:
        """The prefix as a file beside the checkpoint (it changes only while it grows, so is rarely written)."""
        length = len(self.prefix)
        if self._saved_prefix is None or self._saved_prefix["length"] != length:
            reference = write_side_file(self.directory, f"prefix-{length}.u16", self.prefix.astype("<u2").tobytes())
            self._saved_prefix = {**reference, "length": length}
        return self._saved_prefix

    # -- producer -----------------------------------------------------------------------

    def _kernel(self, plan: KernelPlan):
        if plan not in self._kernels:
            self._kernels = {plan: (SpeculativeKernel(plan), Verifier(plan))}  # only the current one
        return self._kernels[plan]

    def _reset_producer(self) -> None:
        """Start producing again from the proven position (after a start, resume or recovery)."""
        for pending in self.pending:
            pending.future.cancel()
        self.pending.clear()
        self.producer_plan = self.plan
        self.produced_to = self.position
        if self.position >= self.plan.start:
            window = self.scanner.tail[len(self.scanner.tail) - self.plan.window:]
            self.ring = self.plan.encoding.encode_array(window).astype(code_dtype(self.plan))
            self.ring_base = self.position - self.plan.window

    def _produce(self, executor) -> None:
        plan = self.producer_plan
        kernel, verifier = self._kernel(plan)
        w, a = plan.window, self.produced_to
        b = min(self.options.until, a + self.options.chunk)
        buffer = np.empty(w + b - a, dtype=kernel.dtype)
        buffer[:w] = self.ring[len(self.ring) - w:]
        overflow = None
        try:
            kernel.fill(buffer, a, min(self.options.threads, kernel.max_threads))
        except StorageOverflow as exc:
            overflow, b = exc, exc.heap
        codes = buffer[w: w + b - a]
        if a < b:
            # Until the verifiers' shared prefix is complete, a chunk produced ahead may need any
            # value since that prefix ends (a proof scan pairs G(x) with G(n - 1 - x)), so it gets
            # every code the ring holds: otherwise its scans stop undecided and this process
            # re-verifies the chunk alone, which serialises the first PREFIX_LIMIT values.
            prefix_complete = len(self.prefix) >= PREFIX_LIMIT
            start = max(self.ring_base, a - w - VERIFY_HISTORY) if prefix_complete else self.ring_base
            history = np.concatenate([self.ring[start - self.ring_base:], codes])
            if self._shared[0] is not self.prefix:
                self._shared = (self.prefix, executor.share(self.prefix))
            future = executor.submit(verify_task, verifier, history, start, self._shared[1], a, b)
            self.pending.append(_Pending(a, b, plan, codes, future))
            self.ring = np.concatenate([self.ring, codes])
            keep = w + VERIFY_HISTORY
            if prefix_complete and len(self.ring) > keep:
                self.ring_base += len(self.ring) - keep
                self.ring = self.ring[len(self.ring) - keep:].copy()
            self.produced_to = b
        if overflow is not None:
            log.warning("%s; continuing with 16-bit storage", overflow)
            values = plan.encoding.decode_array(self.ring)
            self.producer_plan = make_plan(plan.table, storage="u16")
            self.ring = values.astype(np.uint16)

    # -- consumer -----------------------------------------------------------------------

    def _consume(self, block: bool) -> None:
        while self.pending and (block or self.pending[0].future.done()):
            block = False
            head = self.pending.popleft()
            result = head.future.result()
            if result.status == UNDECIDED:
                result = self._verify_with_recent(head, result)
            if result.status == PROVEN:
                self._accept(head.plan.encoding.decode_array(head.codes), head.plan, kernel=True)
            else:
                self._failed(head, result)
                return

    def _accept(self, values, plan: KernelPlan | None, kernel: bool) -> None:
        """Fold proven values G(position) ... into the statistics, hash and store."""
        values = np.asarray(values, dtype=np.uint16)
        if not len(values):
            return
        self._mutating = True
        first = self.position
        if plan is not None and plan is not self.plan:
            self.plan, self.storage = plan, plan.encoding.kind  # the producer switched storage
        if self.store is not None:
            self.store.append(first, values, self.plan.encoding if kernel else None)
        for event in self.scanner.fold(values):
            self._on_event(event.kind, event.heap)
        if first <= len(self.prefix) < PREFIX_LIMIT and first + len(values) > len(self.prefix):
            self.prefix = np.concatenate([self.prefix, values[len(self.prefix) - first: PREFIX_LIMIT - first]])
        self.recent.append((first, values))
        while sum(len(v) for _, v in self.recent) - len(self.recent[0][1]) >= RECENT:
            self.recent.popleft()
        if self.candidate is not None and self.position >= self.candidate["proof_length"]:
            if self.options.backend == "c":
                self.period = dict(self.candidate)
                log.warning("PERIOD PROVEN: %s has period %d from G(%d) (Guy-Smith, with G(0) ... G(%d) verified)",
                            self.game.code, self.period["period"], self.period["from"],
                            self.period["proof_length"] - 1)
        self._mutating = False

    def _on_event(self, kind: int, heap: int) -> None:
        if kind == ANCHORED:
            self.anchor_window = self.scanner.tail.copy()
        elif kind == HASH_MATCH and self.candidate is None and self.anchor_window is not None \
                and np.array_equal(self.scanner.tail, self.anchor_window):
            anchor, w = self.scanner.anchor, self.scanner.window
            period, start = heap - anchor, anchor - w + 1
            self.candidate = {"period": period, "from": start, "anchor": anchor, "found_at": heap,
                              "proof_length": proof_length(period, start, self.game.max_take)}
            log.warning("period candidate: the %d values ending at G(%d) recur ending at G(%d): period %d from "
                        "G(%d), proven once G(0) ... G(%d) are verified", w, anchor, heap, period, start,
                        self.candidate["proof_length"] - 1)

    def _values_before(self, heap: int) -> np.ndarray | None:
        """G(0) ... G(heap-1) if this run has them (prefix and recent values, or kept files)."""
        first = self.recent[0][0] if self.recent else self.position
        if first <= len(self.prefix):
            recent = np.concatenate([v for _, v in self.recent]) if self.recent else np.zeros(0, np.uint16)
            values = np.concatenate([self.prefix, recent[len(self.prefix) - first:]])
            return values[:heap]
        if self.store is not None and self.store.stop >= heap:
            return self.store.read(0, heap)
        return None

    def _failed(self, head: _Pending, result) -> None:
        """Verification stopped at heap m of ``head``: consume what is proven, decide G(m), go on."""
        m = result.heap
        self._accept(head.plan.encoding.decode_array(head.codes[: m - head.first]), head.plan, kernel=True)
        self._mutating = True
        history = self._values_before(m)
        if history is not None:
            value, table, needs_u16 = resolve_failure(self.game, self.table, head.plan.encoding, history, result)
        elif result.true_value is not None and not is_rare(result.true_value, self.table.mask):
            value, table = result.true_value, self.table
            needs_u16 = not head.plan.encoding.fits(value)
            log.warning("verification corrected G(%d) to %d (the kernel's value was wrong)", m, value)
        else:
            raise ComputationError(
                f"verification stopped at G({m}) and deciding it needs more of G(0) ... G({m - 1}) than this run "
                f"holds (the first {len(self.prefix)} and the last {RECENT} values; all of them with --keep-values); "
                "the checkpoint holds everything proven before it")
        self.anchor_window = self.candidate = None
        if table is not self.table:
            self._new_rare_value(m, value, table, history)
        else:
            if needs_u16:
                self.storage = "u16"
                self.plan = make_plan(self.table, storage="u16")
            w = self.scanner.window
            self.scanner.rewindow(w, self.scanner.tail, anchor_from=self.position + 1)
            self._mutating = False
            self._accept([value], None, kernel=False)
        self._reset_producer()

    def _verify_with_recent(self, head: _Pending, result):
        """Retry an undecided verification from its heap on with the prefix and recent values held now."""
        m = result.heap
        recent = np.concatenate([v for _, v in self.recent])
        first = self.position - len(recent)
        start = max(first, self.plan.start - self.plan.window)
        codes = head.plan.encoding.encode_array(recent[start - first:]).astype(head.codes.dtype)
        codes = np.concatenate([codes, head.codes])
        return Verifier(head.plan).verify(codes, start, self.prefix, m, head.stop)

    def _new_rare_value(self, m: int, value: int, table: RareTable, history: np.ndarray) -> None:
        banner = "!" * 72
        log.warning("%s\nNEW RARE VALUE: G(%d) = %d of %s, found by verification; added to the rare table, "
                    "kernel regenerated\n%s", banner, m, value, self.game.code, banner)
        self.rare_found.append((m, value))
        known = np.append(history, np.uint16(value))
        plan, prefix = starting_plan(self.game, table, None if self.storage == "u8" else self.storage, values=known)
        if plan is None:
            raise ComputationError(f"after the new rare value G({m}) the table of {self.game.code} has no kernel")
        self.table, self.plan, self.storage = plan.table, plan, plan.encoding.kind
        self.prefix = np.asarray(prefix, dtype=np.uint16)
        w = plan.window
        window = np.zeros(w, dtype=np.uint16)
        keep = min(w, m)
        window[w - keep:] = history[m - keep:]
        self.scanner.rewindow(w, window, anchor_from=plan.start - 1)
        self._mutating = False
        self._accept(self.prefix[m: self.options.until], None, kernel=False)

    # -- results ------------------------------------------------------------------------

    def summary(self) -> RunSummary:
        s = self.scanner
        statistics = Statistics.from_arrays(
            self.game.code, s.counts, s.first_seen, values=self.position, digest=s.digest(),
            digest_from=self.options.digest_from, range_digest=s.range_digest(), mask=self.table.mask,
            rare_found=list(self.rare_found))
        return RunSummary(statistics, self.period, self.candidate, int(s.state.hash_matches), self.elapsed,
                          self.session_values, self.session_seconds, self.table)


def summary_of_checkpoint(directory) -> RunSummary:
    """The figures of the run whose checkpoint is in ``directory`` (``octalgen stats``)."""
    body = read_checkpoint(directory)
    if body is None:
        raise CheckpointError(f"{directory} holds no run checkpoint (checkpoint.json)")
    if body.get("octalgen_checkpoint") != 1:
        raise CheckpointError(f"checkpoint in {directory} has an unknown layout")
    game = parse_game(body["parameters"]["game"])
    table = RareTable.from_yaml(body["table"], game=game, source=f"checkpoint in {directory}")
    counts, first_seen = _counts(body)
    scanner = body["scanner"]
    statistics = Statistics.from_arrays(
        game.code, counts, first_seen, values=body["position"], digest=f"{scanner['fnv']:016x}",
        digest_from=body["parameters"]["digest_from"], range_digest=f"{scanner['fnv_range']:016x}",
        mask=table.mask, rare_found=[tuple(e) for e in body["rare_found"]])
    return RunSummary(statistics, body["period"], body["candidate"], scanner["hash_matches"], body["elapsed"],
                      0, 0.0, table)


def _counts(body: dict) -> tuple[np.ndarray, np.ndarray]:
    """The scanner's count and first-heap arrays from a checkpoint (stored for values present only)."""
    counts = np.zeros(1 << 16, np.uint64)
    first_seen = np.full(1 << 16, np.iinfo(np.uint64).max, np.uint64)
    present = unpack_array(body["present"]).astype(np.int64)
    counts[present] = unpack_array(body["counts"])
    first_seen[present] = unpack_array(body["first_seen"])
    return counts, first_seen


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()
