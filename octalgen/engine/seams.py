"""What the engine asks of what plugs into it: the kernel plug-in and the consumers.

* The **kernel plug-in** (:class:`KernelPlugin`) makes, for a plan, the producer's kernel
  (:class:`ChunkFiller`) and the verifier (:class:`ProofVerifier`).  The ``backends`` registry
  hands them out (:attr:`~octalgen.backends.Backend.plugin`): :class:`octalgen.cpu.plugin.CKernels`,
  the generated C, is the engine's default; :class:`octalgen.cuda.plugin.CudaKernels` (the GPU)
  and its numpy twin are the others.
* A **consumer** (:class:`Consumer`) is handed the proven values in order: the
  :class:`~.tally.Tally` of ``run``, ``period`` and ``stats``, the value sink of ``values``.
  It sees the run's :class:`~.history.History` (to read proven values back), never the engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from ..plan import KernelPlan

if TYPE_CHECKING:  # names in annotations only: the seams depend on no concrete module
    from ..cpu.verify import VerifyResult
    from .history import History


@runtime_checkable
class ChunkFiller(Protocol):
    """The producer's kernel: speculative codes, heap after heap (:class:`~octalgen.cpu.kernel.SpeculativeKernel`)."""

    #: The stored codes' dtype (uint8 or uint16).
    dtype: np.dtype
    #: The most threads :meth:`fill` may be given.
    max_threads: int
    #: The block length :meth:`fill` uses for each thread count it is given without one (the split
    #: sets it from its measurements; absent: the kernel's default).
    tuned_blocks: dict[int, int]

    @property
    def code(self) -> str:
        """Names the code whose speed the split of the cores measures (the compiled module's artefact,
        which also holds the verifier): rates cached for other code are measured again."""

    def blocks(self) -> list[int]:
        """The lengths of the blocks of heaps :meth:`fill`'s threads may hand each other (empty: the
        kernel has no such choice)."""

    def fill(
        self, buffer: np.ndarray, first_heap: int, threads: int = 1, patient: bool = False, block: int | None = None
    ) -> int | None:
        """Compute heaps ``first_heap`` ... into ``buffer[W:]`` from the codes of the W heaps before, in
        ``buffer[:W]``; raises :class:`~octalgen.cpu.kernel.StorageOverflow` at a value the storage cannot hold.
        ``patient`` threads never give up waiting for each other; ``block``: one of :meth:`blocks`.
        Returns the heap from which one thread went on where the threads kept waiting for each other
        (the cores were busy), else None."""

    def fill_crossings(self, buffer: np.ndarray, first_heap: int) -> None:
        """As :meth:`fill` with one thread, heap by heap, for a stretch of the crossing heaps of a plan that
        starts early (:attr:`~octalgen.plan.KernelPlan.crossings`): each of them from its terms that read
        a common heap.  Asked only of the kernels of a plug-in that takes such plans
        (:attr:`KernelPlugin.early_start`)."""


@runtime_checkable
class ProofVerifier(Protocol):
    """Proves a produced chunk (as :class:`~octalgen.cpu.verify.Verifier`); picklable unless the plug-in
    verifies here."""

    plan: KernelPlan

    def verify(self, codes: np.ndarray, base: int, prefix, a: int, b: int) -> VerifyResult:
        """Prove heaps ``a`` ... ``b - 1`` from ``codes`` (heaps ``base`` ...) and the exact ``prefix``."""


@runtime_checkable
class KernelPlugin(Protocol):
    """Makes the producer's kernel and the verifier of a plan.

    Attributes
    ----------
    backend : str
        What runs the kernel and the verifier (``"c"``, ``"cuda"``, ...): the rates the split of the
        cores measures and refines are kept per backend (:mod:`.split`).
    verify_here : bool
        The verifier must run in this process (a GPU's): no worker processes are started.
    verify_piece : int
        Heaps per verification call in this process (a stop request is noticed between calls).
    early_start : bool
        Its verifiers take the crossing heaps of a plan that starts early
        (:attr:`~octalgen.plan.KernelPlan.crossings`): the engine plans one after a rare value
        found far out (:func:`~.planning.plan_for`) only for such a plug-in.
    """

    backend: str
    verify_here: bool
    verify_piece: int
    early_start: bool

    def __call__(self, plan: KernelPlan) -> tuple[ChunkFiller, ProofVerifier]:
        """The kernel and the verifier of ``plan``, ready to run (built now, or loaded from the cache)."""


class Consumer(Protocol):
    """What the engine hands proven values to.

    The engine calls every method; a consumer that subclasses this class inherits the defaults:
    no values read back, nothing to restart, nothing kept in checkpoints, never finished.

    Attributes
    ----------
    name : str
        Its key among the consumers' states in a checkpoint.
    """

    name: str

    @property
    def finished(self) -> bool:
        """True ends the run (e.g. a period is proven)."""
        return False

    @property
    def finishes_at(self) -> int | None:
        """N where it will be finished if G(0) ... G(N-1) agree with what it expects (a period's proof
        is complete there), or None.

        The engine produces no value at N or beyond until this consumer has been handed G(N-1),
        and hands values on in a piece that ends at N: a run that ends there computes N values,
        not the rest of a chunk.
        """
        return None

    @property
    def looks_at(self) -> int | None:
        """The next N where it examines G(0) ... G(N-1) as a whole (a search), or None.

        The engine hands values on in a piece that ends at N (it does not hold production back).
        """
        return None

    def attach(self, history: History) -> None:
        """Before the first value: the history of the run, to read proven values back from."""
        return None

    def accept(self, first: int, values: np.ndarray) -> None:
        """G(first) ... G(first + len(values) - 1), proven, in order (uint16)."""
        raise NotImplementedError

    def restart(self, window: int, tail: np.ndarray, anchor_from: int) -> None:
        """The values from here on follow a new recurrence of ``window`` values (``tail``: the last
        ``window``); period anchors start at ``anchor_from``."""
        return None

    def state(self) -> dict | None:
        """What a checkpoint keeps of it (JSON-friendly), or None for nothing."""
        return None

    def restore(self, state: dict | None) -> None:
        """Go on from :meth:`state`'s result (None where it kept nothing)."""
        return None
