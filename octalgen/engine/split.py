"""How to share the cores between kernel threads and verifying processes, so that every core works.

With neither ``--threads`` nor ``--workers``, the engine measures, once per machine and kernel
(cached under the build cache, with the name of the compiled code measured: other code, after an
upgrade say, is measured again), how fast the kernel runs with 1, 2, 3, 4, 6, 8, ... threads, each
with every block length it takes (:meth:`~octalgen.cpu.kernel.SpeculativeKernel.blocks`: the best
one is that thread count's rate, and the kernel then hands its threads blocks of that length), and
how fast one process verifies, and chooses the split that this model predicts to be fastest on
C cores:

* one kernel thread never waits for another, so it can share the cores with C verifying
  processes: rate = min(k(1), C / (1/k(1) + 1/v)), the CPU per value being 1/k + 1/v;
* T >= 2 threads pass a baton and spin while they wait, so each needs a core of its own and
  the verifiers get the rest: rate = min(k(T), (C - T) v);

each with the coordinating process's CPU per value, c, added to the verifiers' (1/v + c).  A session
of N values also waits for its first chunk before any proof starts, and proves its last chunk after
the kernel is done (split among the W processes): it should take
N / rate + first / k(T) + last / (W v) seconds (:meth:`Split.expected`).

The expectation for the session and the rate achieved are both reported, with a line where they
differ by more than a quarter, so a wrong model shows.  Rates are
values per CPU second of the role (wall time only for T >= 2 threads, which spin), so a
measurement on a busy machine is not a slow one; and a long enough run with one kernel thread
replaces the cached start-up rates with the rates its own accounting measured (:func:`refine`),
which are the better figures: the start-up sample is short, and its heaps are the first few hundred
thousand past the kernel's first heap.

The block length matters with many threads (the threads hand blocks to each other: short
blocks keep more of them busy, long ones cost fewer hand-overs), so each thread count is measured
with every block length the kernel takes.

Each backend's rates are its own: the cache is keyed by the kernel plug-in's ``backend`` name too,
so a GPU run's measured rates never become the generated C's (which would choose a split for a
kernel that is not running).
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass

import numpy as np

from ..build import cache_dir, machine_identity
from ..cpu.kernel import code_dtype, default_threads
from ..plan import KernelPlan

log = logging.getLogger("octalgen")

#: The backend of the default kernel plug-in (:class:`~octalgen.cpu.plugin.CKernels`, the generated C).
DEFAULT_BACKEND = "c"

#: Heaps the kernel computes per measurement, and of them the last that the verifier proves (after an
#: untimed call on a few before them).
KERNEL_SAMPLE, VERIFY_SAMPLE, VERIFY_WARM_UP = 1 << 18, 1 << 15, 1 << 10

#: CPU seconds of the coordinating process per value, until a run has measured its own (what a long
#: run of ``.6`` measures: see docs/performance.md).
COORDINATOR_SECONDS = 4.3e-9


@dataclass(frozen=True)
class Split:
    """Kernel threads, verifying processes, and the rates behind the choice (values/s)."""

    threads: int
    workers: int
    predicted: float
    kernel_rates: dict
    verify_rate: float
    #: The block length measured fastest for each thread count (heaps; absent: the kernel's own).
    blocks: dict

    def expected(self, values: int, chunk: int, first: int) -> float:
        """Values/s a session of ``values`` values should achieve (see the module docstring):
        chunks of ``chunk`` heaps, the first of ``first``."""
        seconds = (
            values / self.predicted
            + min(values, first) / self.kernel_rates[self.threads]
            + min(values, chunk) / (max(1, self.workers) * self.verify_rate)
        )
        return values / seconds

    def describe(self) -> str:
        block = f" in blocks of {self.blocks[self.threads]} heaps" if self.threads in self.blocks else ""
        return (
            f"{self.threads} kernel thread{'s' * (self.threads > 1)}{block} and {self.workers} verifying "
            f"process{'es' * (self.workers != 1)}, predicted {self.predicted / 1e6:.2f} M values/s (kernel "
            f"{self.kernel_rates[self.threads] / 1e6:.2f} M/s, verifier {self.verify_rate / 1e6:.2f} M/s per core)"
        )


def predict(
    kernel_rates: dict[int, float], verify_rate: float, cores: int, coordinator: float = COORDINATOR_SECONDS
) -> tuple[int, int, float]:
    """(threads, workers, values/s) of the fastest split by the model of the module docstring
    (``coordinator``: its CPU seconds per value)."""
    k1 = kernel_rates[1]
    best = (1, cores, min(k1, cores / (1 / k1 + 1 / verify_rate + coordinator)))
    for threads, rate in sorted(kernel_rates.items()):
        if 2 <= threads < cores:
            predicted = min(rate, (cores - threads) / (1 / verify_rate + coordinator))
            if predicted > best[2] * 1.05:  # more threads only for a clear gain
                best = (threads, cores - threads, predicted)
    return best


def choose(
    plan: KernelPlan,
    kernel,
    verifier,
    window: np.ndarray,
    prefix: np.ndarray,
    start: int,
    cores: int | None = None,
    backend: str = DEFAULT_BACKEND,
) -> Split:
    """Measure (or read from the cache) the rates of ``plan``'s kernel and verifier; choose the split.

    ``window`` holds the codes of the ``plan.window`` heaps before ``start`` (a proven position);
    ``prefix`` the exact values the verifier needs; ``backend`` names the kernel plug-in
    (:attr:`~.seams.KernelPlugin.backend`) whose rates these are.  A kernel that takes several block
    lengths (``blocks()``) is given the fastest for each thread count (``tuned_blocks``).
    """
    cores = cores or default_threads()
    rates, code = _cached(plan, cores, backend), kernel.code
    # Measured again: an entry for other code (octalgen upgraded, the templates or flags changed), or
    # one that names no code.
    if rates is None or rates.get("code") != code:
        rates = {**_measure(plan, kernel, verifier, window, prefix, start, cores), "code": code}
        _store(plan, cores, rates, backend)
    kernel_rates = {int(t): r for t, r in rates["kernel"].items()}
    blocks = {int(t): b for t, b in rates["blocks"].items()}
    kernel.tuned_blocks = dict(blocks)
    threads, workers, predicted = predict(
        kernel_rates, rates["verify"], cores, rates.get("coordinator", COORDINATOR_SECONDS)
    )
    return Split(threads, workers, predicted, kernel_rates, rates["verify"], blocks)


def thread_counts(cores: int, max_threads: int) -> list[int]:
    """The kernel thread counts the split measures: 1, and 2, 3, 4, 6, 8, 12, ... below ``cores``
    (each thread needs a core, and a split with no verifying process proves nothing)."""
    counts, power = [1], 2
    while power < cores and power <= max_threads:
        counts += [t for t in (power, power + power // 2) if t < cores and t <= max_threads]
        power *= 2
    return sorted(set(counts))


def tune_blocks(
    plan: KernelPlan, kernel, window: np.ndarray, start: int, threads: int, backend: str = DEFAULT_BACKEND
) -> None:
    """Give ``kernel`` the fastest block length for ``threads`` chosen by hand (``--threads``): the one
    the split measured on this machine for this code where it did, else the fastest of a measurement now."""
    if threads < 2 or not kernel.blocks():
        return
    cached = _cached(plan, default_threads(), backend) or {}
    block = (cached.get("blocks") or {}).get(str(threads)) if cached.get("code") == kernel.code else None
    if block is None:
        buffer = np.empty(plan.window + KERNEL_SAMPLE, dtype=code_dtype(plan))
        block = max(kernel.blocks(), key=lambda b: _kernel_rate(kernel, buffer, window, start, threads, b))
    kernel.tuned_blocks = {**kernel.tuned_blocks, threads: block}


def _kernel_rate(kernel, buffer: np.ndarray, window: np.ndarray, start: int, threads: int, block: int | None) -> float:
    """Heaps per second of ``kernel`` filling ``buffer`` after ``window`` (per CPU second for one
    thread, which runs in this one; per second of wall time for threads that spin)."""
    clock = time.thread_time if threads == 1 else time.perf_counter
    buffer[: len(window)] = window
    began = clock()
    kernel.fill(buffer, start, threads, patient=True, block=block)
    return (len(buffer) - len(window)) / max(clock() - began, 1e-9)


def _measure(plan, kernel, verifier, window, prefix, start, cores) -> dict:
    buffer = np.empty(plan.window + KERNEL_SAMPLE, dtype=code_dtype(plan))
    kernel_rates: dict[int, float] = {}
    blocks: dict[int, int] = {}
    for threads in thread_counts(cores, kernel.max_threads):
        for block in (kernel.blocks() if threads > 1 else []) or [None]:
            rate = _kernel_rate(kernel, buffer, window, start, threads, block)
            if rate > kernel_rates.get(threads, 0):
                kernel_rates[threads] = rate
                if block is not None:
                    blocks[threads] = block
    # The verifier proves the last heaps the kernel computed: the first ones, whose proof reads back
    # into the exact prefix, are proven several times slower than all later ones (their scan's first
    # round cannot go in lanes), and would make the verifier look slower than it is.  An untimed first
    # call checks the prefix and brings the tables into the caches, which would take a large part of
    # a timed sample this short.
    base, end = start - plan.window, start + KERNEL_SAMPLE
    verifier.verify(buffer, base, prefix, end - VERIFY_SAMPLE - VERIFY_WARM_UP, end - VERIFY_SAMPLE)
    began = time.thread_time()
    verifier.verify(buffer, base, prefix, end - VERIFY_SAMPLE, end)
    verify_rate = VERIFY_SAMPLE / max(time.thread_time() - began, 1e-9)
    return {"kernel": kernel_rates, "blocks": blocks, "verify": verify_rate}


#: Values a run must have had its kernel produce and its verifiers prove before its rates replace
#: the cached ones (a few seconds of work: long enough that start-up costs do not count).
REFINE_AFTER = 1 << 23


def refine(
    plan: KernelPlan,
    cores: int | None,
    threads: int,
    kernel_rate: float | None,
    verify_rate: float | None,
    backend: str,
    coordinator: float | None = None,
) -> None:
    """Cache the per-CPU-second rates a run measured (``Accounting.roles``) for the next split.

    Only a run with one kernel thread measures the kernel's rate; the verifiers' rate (and the
    coordinator's CPU seconds per value) are taken from any run.  ``None`` rates leave the cached
    ones as they are.  The rates go to ``backend``'s entry (:attr:`~.seams.KernelPlugin.backend`):
    a GPU run's never split the cores of a later ``--backend c`` run.
    """
    kernel_rate = kernel_rate if threads == 1 else None  # threads that spin give no rate per CPU second
    if not (kernel_rate or verify_rate or coordinator):
        return
    cores = cores or default_threads()
    rates = _cached(plan, cores, backend)
    if rates is None:
        return  # no split was made for this backend on this machine: nothing to correct
    if kernel_rate:
        rates["kernel"]["1"] = kernel_rate
    if verify_rate:
        rates["verify"] = verify_rate
    if coordinator:
        rates["coordinator"] = coordinator
    _store(plan, cores, rates, backend)


def _key(plan: KernelPlan, cores: int, backend: str) -> str:
    return f"{machine_identity()} {cores} cores {plan.table.digest} {plan.encoding.kind} backend {backend}"


def _path():
    return cache_dir() / "core-split.json"


def _cached(plan: KernelPlan, cores: int, backend: str = DEFAULT_BACKEND) -> dict | None:
    try:
        return json.loads(_path().read_text()).get(_key(plan, cores, backend))
    except (OSError, ValueError):
        return None


def _store(plan: KernelPlan, cores: int, rates: dict, backend: str = DEFAULT_BACKEND) -> None:
    try:
        known = json.loads(_path().read_text())
    except (OSError, ValueError):
        known = {}
    known[_key(plan, cores, backend)] = rates
    try:
        _path().parent.mkdir(parents=True, exist_ok=True)
        tmp = _path().with_suffix(".tmp")
        tmp.write_text(json.dumps(known, indent=1))
        tmp.replace(_path())
    except OSError as exc:  # a cache that cannot be written only costs a measurement next time
        log.info("cannot cache the measured rates in %s: %s", _path(), exc.strerror)
