"""Exact values from the generated C: exact prefix, speculative kernel, verification, recovery.

:func:`exact_values` is what ``octalgen values --backend c`` runs:

1. The exact solver computes G(0) ... G(start-1), where ``start`` is the first heap the
   kernel may compute.  The rare table is a hint, never trusted: it is reconciled with the
   rare values of this exact prefix (a missing or wrong entry is fixed, with a warning),
   which may move ``start`` and extend the prefix.
2. The kernel computes a chunk speculatively; the verifier proves it in parallel processes.
3. If verification fails at heap n, G(n) is computed exactly.  A rare value is added to the
   table and the kernel regenerated (the exact solver carries on from n to the new start);
   a common value is corrected and the kernel resumes after it.  A value too large for u8
   storage switches the run to u16.  A value beyond 16 bits is an error naming the heap.

Only proven values are ever yielded.  Games with mask 0 (no sparse space) get the exact
solver throughout: a plain mex, quadratic in the number of values.
"""

from __future__ import annotations

import logging
import os
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from contextlib import ExitStack
from multiprocessing import get_context
from pathlib import Path

import numpy as np

from ..errors import ComputationError
from ..game import parse_game
from ..plan import KernelPlan, make_plan, plan_terms
from ..rare import DEFAULT_TABLE_UPTO, RareTable, is_rare, shipped_table
from .exact import CExactSolver
from .kernel import SpeculativeKernel, StorageOverflow, code_dtype, default_threads
from .verify import PROVEN, UNDECIDED, Verifier, VerifyResult

log = logging.getLogger("octalgen")

#: Heaps the kernel computes (and the verifier then proves) per step.
CHUNK = 1 << 22

#: Below this many heaps per chunk verification stays in this process: starting worker
#: processes costs more than it saves.
POOL_THRESHOLD = 1 << 20

#: Heaps of history before an interval (beyond the kernel's window) that verification is first
#: given: proof scans rarely reach further, and one that does is retried with everything.
VERIFY_HISTORY = 1 << 20


def reconcile(table: RareTable, values) -> RareTable:
    """``table`` with its entries below ``len(values)`` replaced by the rare values of ``values``.

    ``values`` are exact values G(0) ... G(N-1).  Each difference is logged as a warning naming
    the position; entries at N or beyond are kept as they are (nothing can check them yet).
    """
    values = np.asarray(values, dtype=np.int64)
    rare = np.flatnonzero(np.bitwise_count(values & table.mask) % 2 == 0)
    found = {int(p): int(values[p]) for p in rare}
    listed = {p: v for p, v in table.entries if p < len(values)}
    if found == listed:
        return table if table.exact_to >= len(values) else RareTable(
            table.game, table.mask, table.entries, len(values))
    for p in sorted(found.keys() | listed.keys()):
        if p not in listed:
            log.warning("rare table lacks G(%d) = %d (found by the exact solver); added", p, found[p])
        elif p not in found:
            log.warning("rare table lists G(%d) = %d, but G(%d) = %d is common; removed", p, listed[p], p,
                        values[p])
        elif found[p] != listed[p]:
            log.warning("rare table says G(%d) = %d, but it is %d; corrected", p, listed[p], found[p])
    entries = sorted(found.items()) + [e for e in table.entries if e[0] >= len(values)]
    return RareTable(table.game, table.mask, tuple(entries), max(table.exact_to, len(values)))


def plan_for(table: RareTable, values, storage: str | None = None) -> KernelPlan:
    """The kernel plan of ``table``, with u8 storage only if the exact ``values`` known so far allow it."""
    known = np.asarray(values, dtype=np.int64)
    common = known[np.bitwise_count(known & table.mask) % 2 == 1]
    return make_plan(table, max_common=int(common.max()) if len(common) else None, storage=storage)


def starting_plan(game, table: RareTable | None = None, storage: str | None = None, values=()):
    """The plan ``values --backend c`` starts its kernel with, and the exact values before its start.

    The table (default: shipped, else computed from the first
    :data:`~octalgen.rare.DEFAULT_TABLE_UPTO` exact values) is reconciled with the exact prefix
    as in :func:`exact_values`.  Returns ``(plan, prefix)``; plan is None for a game the kernel
    cannot compute (mask 0 or no move leaving a heap).  ``values`` are exact values G(0) ...
    already known (e.g. up to a new rare value): the exact solver continues from them.
    """
    game = parse_game(game)
    table = table if table is not None else shipped_table(game)
    solver = CExactSolver(game, mask=table.mask if table is not None else None, values=values)
    if table is None:
        table = RareTable.from_values(game, solver.extend(DEFAULT_TABLE_UPTO))
    while table.mask and plan_terms(table):
        plan = plan_for(table, solver.values, storage)
        if len(solver) >= plan.start:
            return plan, solver.values[: plan.start].copy()
        table = reconcile(table, solver.extend(plan.start))
    return None, solver.values.copy()


class _Run:
    """One computation of G(0) ... G(count-1); see the module docstring."""

    def __init__(self, game, count, table, threads, workers, storage, verify, chunk, pool_threshold):
        self.game = parse_game(game)
        self.count = count
        self.table = table if table is not None else shipped_table(self.game)
        self.threads = threads or default_threads()
        self.workers = workers or self.threads
        self.storage = storage
        self.verify = verify
        self.chunk = chunk
        self.pool_threshold = pool_threshold
        self.values = np.zeros(count, dtype=np.uint16)  # G(n) for n < self.known is established
        self.known = 0
        self.solver = None
        self.plan = None
        self.codes = None       # stored codes of heaps codes_base ... count-1 (the kernel's history)
        self.codes_base = 0
        self._stack = ExitStack()
        self._pool = None
        self._kernels: dict[KernelPlan, tuple[SpeculativeKernel, Verifier]] = {}

    # -- the driver ----------------------------------------------------------------------

    def run(self):
        with self._stack:
            if self.table is None:
                yield from self._exact_to(min(self.count, DEFAULT_TABLE_UPTO))
                if self.known < self.count:
                    self.table = RareTable.from_values(self.game, self.values[: self.known])
                    log.info("rare table of %s from its first %d values: mask %#x, %d rare values",
                             self.game.code, self.known, self.table.mask, self.table.count)
            while self.known < self.count:
                if self.table.mask == 0 or not plan_terms(self.table):
                    log.info("%s has no sparse space or no move leaving a heap: the exact solver computes "
                             "every value", self.game.code)
                    yield from self._exact_to(self.count)
                    break
                plan = self._plan()
                if self.known < plan.start:
                    yield from self._exact_to(min(plan.start, self.count))
                    self.table = reconcile(self.table, self.values[: self.known])
                    continue
                yield from self._speculate()

    def _plan(self) -> KernelPlan:
        plan = plan_for(self.table, self.values[: self.known], self.storage)
        previous, self.plan = self.plan, plan
        if previous is None or (previous.table.digest, previous.encoding) != (plan.table.digest, plan.encoding):
            self.codes = None
            log.info("kernel plan for %s: %d terms, window %d, first heap %d, storage %s", self.game.code,
                     len(plan.terms), plan.window, plan.start, plan.encoding.kind)
        return plan

    def _exact_to(self, stop: int):
        """Extend the established values with the exact solver; yield them."""
        if self.known >= stop:
            return
        mask = self.table.mask if self.table is not None else None
        if self.solver is None or len(self.solver) != self.known or (mask is not None and self.solver.mask != mask):
            self.solver = CExactSolver(self.game, mask=mask, values=self.values[: self.known])
        began = time.perf_counter()
        first = self.known
        while self.known < stop:
            step = min(stop, self.known + self.chunk)
            self.values[self.known: step] = self.solver.extend(step)[self.known:]
            yield self.values[self.known: step].astype(np.int64)
            self.known = step
        log.info("exact solver: G(%d) ... G(%d) in %.2f s", first, stop - 1, time.perf_counter() - began)

    def _speculate(self):
        """Kernel and verifier over the next chunk; yield what was proven, or recover."""
        plan = self.plan
        kernel, verifier = self._kernel(plan)
        a = self.known
        b = min(self.count, a + self.chunk)
        codes = self._codes(plan)
        lo = a - plan.window - self.codes_base
        codes[lo: a - self.codes_base] = plan.encoding.encode_array(self.values[a - plan.window: a])
        overflow = None
        began = time.perf_counter()
        try:
            kernel.fill(codes[lo: b - self.codes_base], a, min(self.threads, kernel.max_threads))
        except StorageOverflow as exc:
            overflow, b = exc, exc.heap
        spent = time.perf_counter() - began
        log.debug("kernel: G(%d) ... G(%d) in %.2f s", a, b - 1, spent)
        failure = self._verify(verifier, a, b) if self.verify and a < b else None
        proven_to = failure.heap if failure is not None else b
        self.values[a:proven_to] = plan.encoding.decode_array(codes[a - self.codes_base: proven_to - self.codes_base])
        if proven_to > a:
            yield self.values[a:proven_to].astype(np.int64)
        self.known = proven_to
        if failure is not None:
            yield self._recover(failure)
        elif overflow is not None:
            log.warning("%s; continuing with 16-bit storage", overflow)
            self.storage = "u16"

    def _verify(self, verifier: Verifier, a: int, b: int):
        """The first failure in [a, b), or None when all of it is proven."""
        prefix = self.values[: self.plan.start]
        began = time.perf_counter()
        if b - a < self.pool_threshold or self.workers == 1:
            results = [verify_interval(verifier, self.codes, self.codes_base, prefix, a, b)]
        else:
            pool = self._worker_pool()
            pieces = np.linspace(a, b, 2 * self.workers + 1).astype(np.int64)
            jobs = [pool.submit(_verify_shared, verifier, self.codes.filename, self.codes.dtype.str,
                                len(self.codes), self.codes_base, prefix, int(lo), int(hi))
                    for lo, hi in zip(pieces, pieces[1:]) if lo < hi]
            results = [job.result() for job in jobs]
        log.debug("verified G(%d) ... G(%d) in %.2f s", a, b - 1, time.perf_counter() - began)
        failures = [r for r in results if r.status != PROVEN]
        return min(failures, key=lambda r: r.heap) if failures else None

    def _recover(self, failure) -> np.ndarray:
        """G(n) at a failed heap, computed exactly, then a new table or storage as needed; returns [G(n)]."""
        n = failure.heap
        value, self.table, needs_u16 = resolve_failure(self.game, self.table, self.plan.encoding,
                                                       self.values[:n], failure)
        if needs_u16:
            self.storage = "u16"
        self.values[n] = value
        self.known = n + 1
        self.codes = None  # rebuilt from the established values
        return self.values[n: n + 1].astype(np.int64)

    # -- resources -----------------------------------------------------------------------

    def _kernel(self, plan: KernelPlan):
        if plan not in self._kernels:
            self._kernels[plan] = (SpeculativeKernel(plan), Verifier(plan))
        return self._kernels[plan]

    def _codes(self, plan: KernelPlan) -> np.ndarray:
        """The codes buffer for heaps start - window ... count - 1, shared with workers if they are used."""
        if self.codes is None:
            self.codes_base = plan.start - plan.window
            dtype = code_dtype(plan)
            shape = self.count - self.codes_base
            if self.verify and self.workers > 1 and min(self.chunk, self.count - plan.start) >= self.pool_threshold:
                handle = self._stack.enter_context(tempfile.NamedTemporaryFile(
                    prefix="octalgen-codes-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None))
                self.codes = np.memmap(handle.name, dtype=dtype, mode="w+", shape=shape)
            else:
                self.codes = np.zeros(shape, dtype=dtype)
        return self.codes

    def _worker_pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(self.workers, mp_context=get_context("spawn"))
            self._stack.callback(self._pool.shutdown, cancel_futures=True)
        return self._pool


def resolve_failure(game, table: RareTable, encoding, values, failure: VerifyResult):
    """The exact G(n) where verification stopped (n = ``len(values)``), and what follows from it.

    ``values`` are the established G(0) ... G(n-1).  Returns ``(value, table, needs_u16)``: a
    rare value is added to the table (a new kernel is needed), a common one is a correction
    (``needs_u16`` when it does not fit the storage).  Both are logged as warnings.
    """
    n = failure.heap
    solver = CExactSolver(game, mask=table.mask, values=values)
    value = int(solver.extend(n + 1)[n])
    if failure.true_value is not None and failure.true_value != value:
        raise ComputationError(f"the verifier says G({n}) = {failure.true_value}, the exact solver "
                               f"{value}: a bug, please report it")
    if is_rare(value, table.mask):
        log.warning("verification found a new rare value G(%d) = %d; adding it to the rare table and "
                    "regenerating the kernel", n, value)
        return value, table.with_entry(n, value), False
    log.warning("verification corrected G(%d) to %d (the kernel's value was wrong)", n, value)
    return value, table, not encoding.fits(value)


def verify_interval(verifier: Verifier, codes: np.ndarray, base: int, prefix, a: int, b: int):
    """Verify [a, b) from recent history first, all of ``codes`` (heaps base ...) where that is undecided."""
    plan = verifier.plan
    recent = max(base, a - plan.window - VERIFY_HISTORY)
    result = verifier.verify(codes[recent - base: b - base], recent, prefix, a, b)
    if result.status == UNDECIDED and recent > base:
        retry = verifier.verify(codes[: b - base], base, prefix, result.heap, b)
        result = retry if retry.status != PROVEN else VerifyResult(
            PROVEN, options_scanned=result.options_scanned + retry.options_scanned)
    return result


def _verify_shared(verifier: Verifier, path: str, dtype: str, length: int, base: int, prefix, a: int, b: int):
    """Worker-process side of verification: the codes come from a shared file, not a pickle."""
    codes = np.memmap(Path(path), dtype=np.dtype(dtype), mode="r", shape=(length,))
    return verify_interval(verifier, codes, base, prefix, a, b)


def exact_values(game, count: int, table: RareTable | None = None, threads: int | None = None,
                 workers: int | None = None, storage: str | None = None, chunk: int = CHUNK,
                 pool_threshold: int = POOL_THRESHOLD):
    """Yield G(0) ... G(count-1) in int64 chunks, every value proven.

    Parameters
    ----------
    game : OctalGame or str
    count : int
    table : RareTable, optional
        Rare values to start from (a hint: reconciled with the exact prefix, extended by
        verification).  Default: the shipped table, else one computed from the first
        :data:`~octalgen.rare.DEFAULT_TABLE_UPTO` exact values.
    threads : int, optional
        Kernel threads (default: all cores).
    workers : int, optional
        Verification processes (default: ``threads``).
    storage : {"u8", "u16"}, optional
        Force a storage for the kernel (default: the plan's choice).
    chunk, pool_threshold : int
        Heaps per kernel step; fewer heaps than ``pool_threshold`` per step are verified in
        this process.
    """
    return _Run(game, count, table, threads, workers, storage, True, chunk, pool_threshold).run()


def speculative_values(game, count: int, table: RareTable | None = None, threads: int | None = None,
                       storage: str | None = None, chunk: int = CHUNK):
    """Yield G(0) ... G(count-1) in int64 chunks: the prefix exact, the rest the kernel's unproven values."""
    return _Run(game, count, table, threads, 1, storage, False, chunk, POOL_THRESHOLD).run()
