"""The GPU as the engine's kernel plug-in: a streaming producer and an in-process verifier.

:class:`octalgen.engine.core.Engine` takes ``kernels(plan) -> (producer, verifier)``
(the protocol :class:`octalgen.engine.seams.KernelPlugin`).  :class:`CudaKernels` gives it the
generated CUDA through CuPy, :class:`TwinKernels` the same decisions in numpy
(:mod:`.twin`, small sizes: for CI).  Both set ``verify_here``: the engine then
verifies in this process, where the device is.

* :class:`FixedPointProducer` ``fill(buffer, first_heap, threads)`` hands the engine the
  fixed point of the heaps after the ``W`` codes at the buffer's start.  The
  speculator keeps going from where the last call ended (it checks that the
  engine's history is what it produced), so on the GPU the rounds of the next
  chunk run while the engine verifies this one, on another stream; after a
  recovery or a resume the engine's history differs and it starts afresh from
  it.  A value too large for byte storage raises
  :class:`~octalgen.cpu.kernel.StorageOverflow` with the values before it filled in.
* :class:`HybridVerifier` ``verify(codes, base, prefix, a, b)`` proves ``[a, b)`` from
  the exact prefix (its scan table) and the stretch of codes from ``base``, on the
  device.  A heap the device leaves unproven (its pair scan ran out of table,
  needed a partner before the stretch, or found the value wrong) is decided by
  the exact C verifier (:class:`octalgen.cpu.verify.Verifier`), whose answer is
  returned when it is not "proven": failed (with the true value when decided) or
  undecided, never "proven" unless proven.  :class:`AsynchronousHybridVerifier` (the
  default) also has ``submit`` (the engine's
  :class:`~octalgen.engine.executors.AsynchronousVerifier`): it starts the device's proof
  and returns a :class:`DeviceProof`, done when the device is, so the engine produces
  the next chunks meanwhile.

Only byte (u8) storage exists on the GPU: a u16 plan is refused with one
:class:`~octalgen.errors.ComputationError` line that names the C backend.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, replace
from typing import ClassVar

import numpy as np

from ..cpu.kernel import StorageOverflow
from ..cpu.verify import PROVEN, Verifier, VerifyResult
from ..engine.executors import recent_start, verify_interval
from ..errors import ComputationError, InputError, InternalError
from ..plan import KernelPlan
from . import twin
from .cuda_plan import CudaOptions, CudaPlan, storage_problem

__all__ = [
    "AsynchronousHybridVerifier",
    "CudaKernels",
    "DeviceProof",
    "FixedPointProducer",
    "HybridVerifier",
    "RoundFigures",
    "StreamingKernels",
    "TwinKernels",
    "VerifyFigures",
]

log = logging.getLogger("octalgen")


@dataclass
class RoundFigures:
    """What the speculators' rounds did, summed over a plug-in's life (the benchmark's figures).

    Bounded however long the run: the advances and the rounds per window are kept as histograms
    (counts by value), which give their means and percentiles exactly
    (:func:`~.bench.histogram_distribution`).

    Attributes
    ----------
    rounds : int
        Rounds that computed something (the GPU also runs empty rounds at its limit).
    empty_rounds : int
    values : int
        Positions made final.
    marks : int
        Term marks made (:func:`~.twin.round_marks`); ``marks / terms / values`` is the
        positions recomputed per value.
    advance_counts : numpy.ndarray
        Element a: rounds (that computed something) that made a positions final.
    window : int
        Positions per round, the stretch :attr:`window_counts` counts rounds over (0: not yet known).
    window_counts : numpy.ndarray
        Element k: stretches of ``window`` successive positions that took the front k rounds
        to cross (as :func:`~.bench.rounds_per_window`).
    seconds : float
        The speculators' time in rounds (on the GPU: device time of the round kernels).
    """

    terms: int = 0
    seconds: float = 0.0
    rounds: int = 0
    empty_rounds: int = 0
    values: int = 0
    marks: int = 0
    window: int = 0
    advance_counts: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    window_counts: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    _crossed: int = 0  # positions made final so far (by the real rounds)
    _last_crossing: int = -1  # the real round (numbered from 0) that crossed the last stretch

    def add(self, terms: twin.TermIndex, log_rows: np.ndarray, f_prev: int, front: int, cache_final: bool) -> None:
        """Rounds ``log_rows`` ((front, hi) each) run after a round with front ``f_prev``; ``front`` is the next."""
        if not len(log_rows):
            return
        self.terms = len(terms.offsets)
        fronts = np.append(log_rows[:, 0], front)
        steps = np.diff(fronts)
        real = (steps > 0) | (log_rows[:, 1] > log_rows[:, 0])
        if cache_final:
            previous = np.concatenate([[f_prev], log_rows[:-1, 0]])
            self.marks += sum(
                twin.round_marks(terms, int(p), int(f), int(h), cache_final) for p, (f, h) in zip(previous, log_rows)
            )
        else:  # every window position marks every term
            self.marks += int((log_rows[:, 1] - log_rows[:, 0]).sum()) * self.terms
        self._count(steps[real])
        self.empty_rounds += int((~real).sum())
        self.values += int(steps.sum())

    def _count(self, advances: np.ndarray) -> None:
        self.advance_counts = _add_counts(self.advance_counts, advances)
        if self.window:
            reached = self._crossed + np.cumsum(advances)
            if len(reached):
                stretches = np.arange((self._crossed // self.window + 1) * self.window, reached[-1] + 1, self.window)
                crossings = self.rounds + np.searchsorted(reached, stretches)
                self.window_counts = _add_counts(
                    self.window_counts, np.diff(np.concatenate([[self._last_crossing], crossings]))
                )
                if len(crossings):
                    self._last_crossing = int(crossings[-1])
                self._crossed = int(reached[-1])
        self.rounds += len(advances)

    @property
    def recomputed_per_value(self) -> float:
        """Term marks per final value, in units of one position's terms."""
        return self.marks / self.terms / self.values if self.values else 0.0


def _add_counts(counts: np.ndarray, samples: np.ndarray) -> np.ndarray:
    """``counts`` (by value) with ``samples`` (non-negative integers) counted in."""
    more = np.bincount(samples.astype(np.int64), minlength=len(counts))
    more[: len(counts)] += counts
    return more


class FixedPointProducer:
    """The engine's producer on a speculator (:class:`~.twin.Speculator` or the GPU's).

    Same contract as :class:`octalgen.cpu.kernel.SpeculativeKernel.fill` with one thread.
    """

    max_threads = 1
    dtype = np.dtype(np.uint8)
    tuned_blocks: ClassVar[dict[int, int]] = {}
    #: The split of the cores never measures it: the plug-in verifies in this process.
    code = "cuda fixed-point producer"

    def blocks(self) -> list[int]:
        """None to choose: the GPU's producer is one."""
        return []

    def __init__(self, plan: CudaPlan, speculator, figures: RoundFigures):
        self.plan = plan.kernel
        self.cuda_plan = plan
        self.speculator = speculator
        self.figures = figures
        self._next_heap: int | None = None
        self._tail: np.ndarray | None = None
        self._origin = 0  # heap of the speculator's position 0
        self._served = 0  # the speculator's first position not yet handed out
        self._logged_front = 0
        self._logged_seconds = 0.0

    def fill_crossings(self, buffer: np.ndarray, first_heap: int) -> None:
        """Never asked: the GPU plug-in takes no plan that starts early (its verifier takes no crossing heap)."""
        raise InternalError("the GPU producer was asked for the crossing heaps of a plan that starts early")

    def fill(
        self, buffer: np.ndarray, first_heap: int, threads: int = 1, patient: bool = False, block: int | None = None
    ) -> None:
        """Compute heaps ``first_heap`` ... into ``buffer[W:]`` from the codes in ``buffer[:W]`` (one GPU
        producer: it never falls back, so it returns None)."""
        kernel = self.plan
        w = kernel.window
        if first_heap < kernel.start:
            raise InputError(
                f"the kernel starts at heap {kernel.start}, not {first_heap} (earlier heaps need the exact solver)"
            )
        if buffer.dtype != self.dtype or not buffer.flags.c_contiguous or not buffer.flags.writeable:
            raise InputError(f"kernel buffer must be a writable, contiguous {self.dtype} array")
        if len(buffer) < w or threads != 1:
            raise InputError(f"the GPU producer needs a buffer of at least the window of {w} codes and one thread")
        speculator = self.speculator
        if first_heap != self._next_heap or self._tail is None or not np.array_equal(buffer[:w], self._tail):
            self._harvest()
            speculator.reset(buffer[:w])
            self._origin, self._served, self._logged_front = first_heap - w, w, 0
        self._next_heap = None  # until this call has finished
        done, count = 0, len(buffer) - w
        while done < count:
            target = self._served + min(count - done, speculator.capacity)
            speculator.advance(target)
            self._harvest()  # into the bounded figures, before the device's round log comes round again
            final = min(target, speculator.front)
            speculator.read(self._served, final, out=buffer[w + done : w + done + final - self._served])
            done += final - self._served
            self._served = final
            speculator.release(final)
            if final < target:
                overflow = speculator.overflow
                if overflow is None:
                    raise InternalError(f"the speculator stopped at G({self._origin + final})")
                self._harvest()
                raise StorageOverflow(self._origin + overflow, self.plan)
        self._next_heap = first_heap + count
        self._tail = buffer[len(buffer) - w :].copy()

    def _harvest(self) -> None:
        """Add the speculator's rounds since the last harvest to the figures."""
        rows = self.speculator.take_log()
        self.figures.seconds += self.speculator.seconds - self._logged_seconds
        self._logged_seconds = self.speculator.seconds
        if len(rows):
            front = self.speculator.front
            self.figures.add(self.speculator.terms, rows, self._logged_front, front, self.cuda_plan.options.cache_final)
            self._logged_front = int(rows[-1, 0])

    def figures_now(self) -> RoundFigures:
        self._harvest()
        return self.figures


@dataclass
class VerifyFigures:
    """What the verifier did: heaps proven on the device, scan steps, heaps settled on the CPU."""

    values: int = 0
    scan_steps: int = 0
    scan_steps_max: int = 0
    settled_on_cpu: list = field(default_factory=list)
    seconds: float = 0.0


class HybridVerifier:
    """The engine's verifier: a device verifier (:func:`~.twin.verify` or the GPU's) first, the exact C
    verifier for the heaps it leaves unproven.

    Same contract as :meth:`octalgen.cpu.verify.Verifier.verify`.
    """

    def __init__(self, plan: CudaPlan, device, figures: VerifyFigures):
        self.plan = plan.kernel
        self.cuda_plan = plan
        self.device = device
        self.figures = figures
        self.cpu = Verifier(plan.kernel)
        self._prefix = None
        self._scan: np.ndarray | None = None

    def verify(self, codes: np.ndarray, base: int, prefix, a: int, b: int) -> VerifyResult:
        codes = self._prepare(codes, base, prefix, a, b)
        return self._finish(codes, base, prefix, a, b, self.device.verify(codes, base, self._scan, a, b))

    def _prepare(self, codes: np.ndarray, base: int, prefix, a: int, b: int) -> np.ndarray:
        """Check the call, and make the scan table where the prefix is new; the codes, contiguous."""
        kernel = self.plan
        codes = np.ascontiguousarray(codes)
        if codes.dtype != np.uint8:
            raise InputError(f"values must be stored codes of dtype uint8, not {codes.dtype}")
        if not kernel.start <= a <= b or base > a - kernel.window or base + len(codes) < b:
            raise InputError(
                f"verify [{a}, {b}): needs {kernel.start} <= a <= b and codes covering heaps "
                f"{a - kernel.window} to {b - 1}, not {base} to {base + len(codes) - 1}"
            )
        if prefix is not self._prefix:
            self.cpu.verify(codes, base, prefix, a, a)  # checks the prefix against the table (no C runs)
            if self._scan is None or len(self._scan) < self.cuda_plan.options.scan_steps:
                self._scan = self.cuda_plan.scan_table(prefix)
            self._prefix = prefix
        return codes

    def record(self, lo: int, b: int, outcome) -> None:
        """Add a device verification of ``[lo, b)`` (its ``outcome``) to the figures."""
        bad, steps, longest, seconds = outcome
        figures = self.figures
        figures.scan_steps += steps
        figures.scan_steps_max = max(figures.scan_steps_max, longest)
        figures.seconds += seconds
        figures.values += (b if bad is None else bad) - lo

    def _finish(self, codes: np.ndarray, base: int, prefix, lo: int, b: int, outcome) -> VerifyResult:
        """The device's ``outcome`` for ``[lo, b)``; the CPU decides each heap it left unproven, and
        the device goes on after it."""
        scanned = 0
        while True:
            self.record(lo, b, outcome)
            bad, steps = outcome[0], outcome[1]
            scanned += steps
            if bad is None:
                return VerifyResult(PROVEN, options_scanned=scanned)
            result = self.cpu.verify(codes, base, prefix, bad, bad + 1)
            if not result.proven:
                return VerifyResult(result.status, result.heap, result.true_value, scanned + result.options_scanned)
            log.info("the GPU pair scan could not prove G(%d); proven on the CPU", bad)
            self.figures.settled_on_cpu.append(bad)
            scanned += result.options_scanned
            lo = bad + 1
            if lo >= b:
                return VerifyResult(PROVEN, options_scanned=scanned)
            outcome = self.device.verify(codes, base, self._scan, lo, b)


class AsynchronousHybridVerifier(HybridVerifier):
    """A :class:`HybridVerifier` that also starts proofs without waiting for them (the engine's
    :class:`~octalgen.engine.executors.AsynchronousVerifier`): the default of the plug-ins."""

    def submit(self, codes: np.ndarray, base: int, prefix, a: int, b: int) -> DeviceProof:
        """Start the device's proof of ``[a, b)`` as :func:`~octalgen.engine.executors.verify_task` would
        (from the recent codes first) and return at once."""
        began = time.thread_time()
        recent = recent_start(self.plan, base, a)
        stretch = self._prepare(codes[recent - base : b - base], recent, prefix, a, b)
        launch = self.device.launch(stretch, recent, self._scan, a, b)
        return DeviceProof(self, launch, (codes, base, prefix, a, b), time.thread_time() - began)


class DeviceProof:
    """A proof under way on the device (:meth:`HybridVerifier.submit`): the engine's future.

    Done when the device's launch is.  Where the device proved every heap, that is the result;
    else the heaps from the first one it left unproven are proven here as a synchronous call
    would (:func:`~octalgen.engine.executors.verify_interval`: the CPU decides, the device goes on).
    """

    def __init__(self, verifier: HybridVerifier, launch, task: tuple, seconds: float):
        self._verifier, self._launch, self._seconds = verifier, launch, seconds
        self._task: tuple | None = task
        self._value: tuple[VerifyResult, float] | None = None

    def done(self) -> bool:
        return self._value is not None or self._launch.done()

    def result(self, timeout: float | None = None):
        """``(VerifyResult, CPU seconds here)``; :class:`TimeoutError` when the device is not done in ``timeout``."""
        if self._value is None:
            if not self._launch.wait(timeout):
                raise TimeoutError
            began = time.thread_time()
            assert self._task is not None  # let go only once the result is known
            codes, base, prefix, a, b = self._task
            outcome = self._launch.outcome()
            bad = outcome[0]
            self._verifier.record(a, b, outcome)
            result = VerifyResult(PROVEN, options_scanned=outcome[1])
            if bad is not None:
                rest = verify_interval(self._verifier, codes, base, prefix, bad, b)
                result = (
                    rest if not rest.proven else VerifyResult(PROVEN, options_scanned=outcome[1] + rest.options_scanned)
                )
            self._value = (result, self._seconds + time.thread_time() - began)
            self._task = None  # the codes are not needed any more
        return self._value

    def cancel(self) -> bool:
        return True  # nothing waits for it; the device finishes the launch on its own


class StreamingKernels:
    """The kernel plug-in: a :class:`FixedPointProducer` and a :class:`HybridVerifier` for the current plan only.

    Subclasses say where the speculator and the device verifier run (:meth:`_devices`).
    """

    #: The engine keeps the split's rates per backend (:mod:`octalgen.engine.split`).
    backend = "cuda"
    verify_here = True
    #: Heaps per verification call: the device's share of a chunk (each call uploads its history).
    verify_piece = 1 << 21
    #: The device's verifier takes no crossing heaps: a rare value found far out leaves exact steps to
    #: about 2m.
    early_start = False

    def __init__(self, window: int, options: CudaOptions, asynchronous: bool = True):
        self.window = window
        self.options = options
        self.verifier_class = AsynchronousHybridVerifier if asynchronous else HybridVerifier
        self.rounds = RoundFigures(window=window)
        self.verification = VerifyFigures()
        self._made: dict[KernelPlan, tuple[FixedPointProducer, HybridVerifier]] = {}

    def __call__(self, plan: KernelPlan):
        if plan not in self._made:
            problem = storage_problem(plan)
            if problem:
                raise ComputationError(problem)
            for producer, _ in self._made.values():
                producer.figures_now()
            cuda_plan = CudaPlan(plan, self.options)
            speculator, device = self._devices(cuda_plan)
            self._made = {
                plan: (
                    FixedPointProducer(cuda_plan, speculator, self.rounds),
                    self.verifier_class(cuda_plan, device, self.verification),
                )
            }
        return self._made[plan]

    def _devices(self, plan: CudaPlan):
        raise NotImplementedError

    def figures(self) -> tuple[RoundFigures, VerifyFigures]:
        """The rounds and the verification so far."""
        for producer, _ in self._made.values():
            producer.figures_now()
        return self.rounds, self.verification


class TwinKernels(StreamingKernels):
    """The plug-in on the numpy twin: the GPU's decisions at small sizes, without a GPU.

    Parameters
    ----------
    window : int
        Positions per round (a multiple of 32, as on the GPU).
    options : CudaOptions, optional
    ring : int, optional
        Codes per value ring (default :func:`~.twin.ring_size`).
    asynchronous : bool
        Proofs started without waiting for them (False: each proven when the engine asks).
    """

    backend = "cuda-twin"

    def __init__(
        self,
        window: int = 256,
        options: CudaOptions | None = None,
        ring: int | None = None,
        asynchronous: bool = True,
    ):
        if window % 32 or window <= 0:
            raise InputError(f"window must be a positive multiple of 32, not {window}")
        super().__init__(window, options or CudaOptions(), asynchronous)
        self.ring = ring

    def _devices(self, plan: CudaPlan):
        return twin.Speculator(plan, self.window, self.ring or 0, plan.options.cache_final), twin.DeviceVerifier(plan)


class CudaKernels(StreamingKernels):
    """The plug-in on the GPU (CuPy): the generated kernels of :mod:`.kernels`, run by :mod:`.runtime`.

    Parameters
    ----------
    window : int, optional
        Positions per round, a multiple of 32 (default: 32 per multiprocessor).
    options : CudaOptions, optional
        Kernel shapes; ``arch`` is set from the device.
    asynchronous : bool
        Proofs started on the verification stream without waiting for them (False: the engine
        waits for each chunk's proof before it produces the next).
    """

    def __init__(self, window: int | None = None, options: CudaOptions | None = None, asynchronous: bool = True):
        from .runtime import device_defaults

        arch, default_window = device_defaults()
        window = window or default_window
        if window % 32 or window <= 0:
            raise InputError(f"window must be a positive multiple of 32, not {window}")
        super().__init__(window, replace(options or CudaOptions(), arch=arch), asynchronous)

    def _devices(self, plan: CudaPlan):
        from .runtime import GpuSpeculator, GpuVerifier

        return GpuSpeculator(plan, self.window), GpuVerifier(plan)
