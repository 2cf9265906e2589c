"""The speculative kernel: generated, compiled and called from Python.

A :class:`SpeculativeKernel` computes, for a plan, the values the plan predicts: each heap's
value is the least common value not marked by the plan's terms.  Its whole state is the heap
number n and the last ``plan.window`` stored codes, so a run can stop and resume anywhere
(a checkpoint holds exactly that).  Values are stored codes (:class:`~octalgen.plan.Encoding`):
decode them with ``plan.encoding.decode_array(codes, first_heap)``.

The kernel is exact only while no new rare value appears; :class:`~octalgen.cpu.verify.Verifier`
proves its output.
"""

from __future__ import annotations

import logging
import os
from functools import cached_property

import numpy as np

from ..build import DEFAULT_CFLAGS
from ..errors import ComputationError, InputError
from ..plan import KernelPlan
from .generate import (
    DEFAULT_MAX_THREADS,
    block_heaps_for,
    compile_unit,
    kernel_unit,
    line_codes,
    max_threads_for,
    naive_unit,
)

log = logging.getLogger("octalgen")


class StorageOverflow(ComputationError):
    """A value does not fit the plan's storage (u8: all 256 common codes are options).

    Attributes
    ----------
    heap : int
        The first heap whose value could not be stored; values before it were computed.
    """

    def __init__(self, heap: int, plan: KernelPlan):
        self.heap = heap
        super().__init__(
            f"G({heap}) of {plan.game.code} does not fit {plan.encoding.kind} storage "
            f"(every one of its {plan.mex_size} codes is an option); use 16-bit storage"
        )


def code_dtype(plan: KernelPlan) -> np.dtype:
    """The numpy dtype of a plan's stored codes (uint8 or uint16)."""
    return plan.encoding.dtype


def code_ctype(dtype) -> str:
    """The C type of stored codes of numpy ``dtype`` (for cffi casts)."""
    return "uint8_t" if np.dtype(dtype) == np.uint8 else "uint16_t"


def default_threads() -> int:
    """All cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class SpeculativeKernel:
    """The generated kernel of one plan, ready to run.

    Parameters
    ----------
    plan : KernelPlan
    max_threads : int
        Largest thread count the generated code supports (see :func:`~octalgen.cpu.generate.kernel_unit`).
    flags : sequence of str
        Compiler flags (the default: optimised for this CPU).
    block_heaps : int, optional
        The longest block of heaps the threads hand each other (default by storage, see
        :func:`~octalgen.cpu.generate.block_heaps_for`), and each call's block unless it names
        a shorter one; the values do not depend on it.

    Notes
    -----
    The compiled module is built (or loaded from the cache) on first use, so a kernel can be
    made cheaply and pickled to another process.
    """

    def __init__(
        self,
        plan: KernelPlan,
        max_threads: int = DEFAULT_MAX_THREADS,
        flags=DEFAULT_CFLAGS,
        block_heaps: int | None = None,
    ):
        self.plan = plan
        self.max_threads = max_threads_for(plan, max_threads)
        self.flags = tuple(flags)
        self.block_heaps = block_heaps_for(plan, block_heaps)
        self.dtype = code_dtype(plan)
        self.fell_back_at: int | None = None
        #: The block length for each thread count a call gives without one (:mod:`~octalgen.engine.split`
        #: sets it from what it measured; absent: :attr:`block_heaps`).
        self.tuned_blocks: dict[int, int] = {}

    def __getstate__(self):
        return {
            "plan": self.plan,
            "max_threads": self.max_threads,
            "flags": self.flags,
            "dtype": self.dtype,
            "block_heaps": self.block_heaps,
            "fell_back_at": None,
            "tuned_blocks": self.tuned_blocks,
        }

    @cached_property
    def unit(self):
        """The generated C (:class:`~octalgen.cpu.generate.CUnit`)."""
        return kernel_unit(self.plan, self.max_threads, self.block_heaps)

    @cached_property
    def module(self):
        """The compiled cffi module (built or loaded from the cache on first use)."""
        return compile_unit(self.unit, self.flags)

    @property
    def code(self) -> str:
        """The compiled module's artefact name, a digest of its source, flags, compiler and machine
        (:class:`~octalgen.engine.seams.ChunkFiller`)."""
        return self.module.artefact.name

    def blocks(self) -> list[int]:
        """The block lengths a call may name: :attr:`block_heaps` and its halves down to a cache line
        of codes (the split measures them for each thread count)."""
        line = line_codes(self.plan)
        return [b for b in (self.block_heaps >> k for k in range(3)) if b >= line and b % line == 0]

    def fill(
        self, buffer: np.ndarray, first_heap: int, threads: int = 1, patient: bool = False, block: int | None = None
    ) -> int | None:
        """Compute heaps ``first_heap`` ... in place.

        Parameters
        ----------
        buffer : numpy.ndarray
            Stored codes, C-contiguous and writable: ``buffer[:window]`` are the values of
            heaps ``first_heap - window`` ... ``first_heap - 1``; the rest is overwritten
            with the values of heaps ``first_heap``, ``first_heap + 1``, ...
        first_heap : int
            Must be at least ``plan.start`` (earlier heaps read rare values the kernel cannot mark).
        threads : int
            1 to :attr:`max_threads`; the values do not depend on it.
        patient : bool
            Threads pass every block of heaps to each other, so a thread that loses its core to
            other work stalls them all.  Unless patient, threads that keep waiting stop and one thread
            finishes the buffer (:attr:`fell_back_at` then names the heap).
        block : int, optional
            Heaps per block handed between threads, one of :meth:`blocks` (default: ``tuned_blocks``'
            for ``threads``, else :attr:`block_heaps`); the values do not depend on it.

        Returns
        -------
        int or None
            :attr:`fell_back_at`: the heap from which one thread finished the buffer, or None.

        Raises
        ------
        StorageOverflow
            When a value does not fit (the heap is named; values before it are filled in).
        """
        window = self.plan.window
        self._check_buffer(buffer, first_heap)
        if not 1 <= threads <= self.max_threads:
            raise InputError(f"threads must be 1 to {self.max_threads}, not {threads}")
        block = self.tuned_blocks.get(threads, self.block_heaps) if block is None else block
        if block not in self.blocks():
            raise InputError(f"a block of {block} heaps: this kernel takes {', '.join(map(str, self.blocks()))}")
        ffi, lib = self.module.ffi, self.module.lib
        done = ffi.new("uint64_t *")
        self.fell_back_at = None
        offset = 0
        while True:
            part = buffer[offset:]
            status = lib.octalgen_kernel_fill(
                ffi.from_buffer(f"{code_ctype(self.dtype)}[]", part),
                len(part) - window,
                first_heap + offset,
                threads,
                block,
                patient,
                done,
            )
            offset += int(done[0])
            if status == 0:
                return self.fell_back_at
            if status == 1:
                raise StorageOverflow(first_heap + offset, self.plan)
            if status == -1:
                raise ComputationError("the kernel could not start its threads or allocate their memory")
            self.fell_back_at, threads = first_heap + offset, 1
            log.info(
                "kernel threads kept waiting for each other (the cores are busy): one thread from G(%d)",
                self.fell_back_at,
            )

    def fill_crossings(self, buffer: np.ndarray, first_heap: int) -> None:
        """Compute heaps ``first_heap`` ... in place as :meth:`fill` does, one by one: a stretch of the
        crossing heaps of a plan that starts early (:attr:`~octalgen.plan.KernelPlan.crossings`), each
        from its terms that read a common heap (one that reads a rare position marks nothing).  Same
        buffer and errors as :meth:`fill`, one thread."""
        self._check_buffer(buffer, first_heap)
        plan = self.plan
        stop = first_heap + len(buffer) - plan.window
        crossings = plan.crossings[np.searchsorted(plan.crossings, first_heap) : np.searchsorted(plan.crossings, stop)]
        ffi, lib = self.module.ffi, self.module.lib
        flags = plan.rare_flags
        stopped = lib.octalgen_kernel_fill_crossing(
            ffi.from_buffer(f"{code_ctype(self.dtype)}[]", buffer),
            len(buffer) - plan.window,
            first_heap,
            ffi.from_buffer("uint8_t[]", flags),
            len(flags),
            ffi.from_buffer("uint64_t[]", crossings),
            len(crossings),
        )
        if stopped >= 0:
            raise StorageOverflow(first_heap + stopped, self.plan)

    def _check_buffer(self, buffer: np.ndarray, first_heap: int) -> None:
        """InputError unless ``buffer`` and ``first_heap`` fit :meth:`fill`."""
        window = self.plan.window
        if first_heap < self.plan.start:
            raise InputError(
                f"the kernel starts at heap {self.plan.start}, not {first_heap} (earlier heaps need the exact solver)"
            )
        if buffer.dtype != self.dtype or not buffer.flags.c_contiguous or not buffer.flags.writeable:
            raise InputError(f"kernel buffer must be a writable, contiguous {self.dtype} array")
        if len(buffer) < window:
            raise InputError(f"kernel buffer holds {len(buffer)} values, fewer than the window of {window}")

    def run(
        self,
        window: np.ndarray,
        first_heap: int,
        count: int,
        threads: int = 1,
        patient: bool = False,
        block: int | None = None,
    ) -> np.ndarray:
        """The codes of heaps ``first_heap`` ... ``first_heap + count - 1``, from the window before them.

        A convenience around :meth:`fill` for callers that keep the window separately
        (e.g. restored from a checkpoint): ``window`` is the last ``plan.window`` codes.
        """
        buffer = np.empty(self.plan.window + count, dtype=self.dtype)
        buffer[: self.plan.window] = window[len(window) - self.plan.window :]
        self.fill(buffer, first_heap, threads, patient, block)
        return buffer[self.plan.window :]


class NaiveKernel(SpeculativeKernel):
    """Grossman's Figure 3 as a plain loop over the term table: the baseline ``octalgen bench`` reports.

    Same contract as :class:`SpeculativeKernel` with one thread.
    """

    def __init__(self, plan: KernelPlan, flags=DEFAULT_CFLAGS):
        super().__init__(plan, 1, flags)

    @cached_property
    def unit(self):
        return naive_unit(self.plan)

    def fill(
        self, buffer: np.ndarray, first_heap: int, threads: int = 1, patient: bool = False, block: int | None = None
    ) -> int | None:
        if first_heap < self.plan.start or threads != 1 or buffer.dtype != self.dtype:
            raise InputError("the naive kernel runs one thread from plan.start on a buffer of stored codes")
        ffi, lib = self.module.ffi, self.module.lib
        result = lib.octalgen_naive_fill(
            ffi.from_buffer(f"{code_ctype(self.dtype)}[]", buffer), len(buffer) - self.plan.window, first_heap
        )
        if result >= 0:
            raise StorageOverflow(first_heap + result, self.plan)
        return None
