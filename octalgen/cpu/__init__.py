"""The CPU backend: generated C for exact and speculative values (Grossman, sections 2-3.3).

Flow: plan (:mod:`octalgen.plan`) -> render (:mod:`.generate`, ``templates/c/``) -> build
(:func:`octalgen.build.build_module`, cached) -> the wrappers below.  The engine
(:mod:`octalgen.engine`) and the CUDA backend use this API; it is stable.

Exact solver — :class:`~.exact.CExactSolver` ``(game, mask=None, values=())``
    The rare-value algorithm (Figure 2) for any octal game, from ``game.moves()``.  Computes
    G from scratch or continues from given exact values; finds rare values itself (never
    reads a table).  ``.extend(count)`` returns ``.values`` (uint16 view); ``.rare_positions``;
    ``.mask``.  Mask 0 (no sparse space, e.g. ``.07``, ``.04``): a full mex per heap,
    quadratic.  Use it for the prefix before ``plan.start``, for games without a kernel and
    to recompute G(n) after a verification failure.  Values of 65536 or more raise
    :class:`~octalgen.errors.ComputationError` naming the heap.

Speculative kernel — :class:`~.kernel.SpeculativeKernel` ``(plan, max_threads=64, flags=...)``
    Fully unrolled Figure 4 (three instructions per term on x86-64) and the unrolled /
    AVX-512 mex.  Resumable: its whole state is (n, the last ``plan.window`` stored codes).
    ``.fill(buffer, first_heap, threads=1, patient=False)`` fills ``buffer[window:]`` in place
    given ``buffer[:window]``; ``.run(window, first_heap, count, threads)`` returns a new array.
    Threads take blocks of heaps in turn (Grossman 3.3's baton, once per block rather than once
    per heap): before the previous block's baton arrives a thread marks every term whose input
    is already final, then the late terms and the mex; each block's output is written a cache
    line at a time from the thread's own copy.  Unless ``patient``, threads that keep waiting (a busy machine) hand over to one
    thread (``.fell_back_at``).  Codes are ``plan.encoding`` codes (uint8 or uint16; decode with
    ``plan.encoding.decode_array``).  A value that does not fit raises
    :class:`~.kernel.StorageOverflow` with ``.heap``; values before it are filled in.

Verifier — :class:`~.verify.Verifier` ``(plan)``
    ``.verify(values, base, prefix, a, b) -> VerifyResult`` proves heaps [a, b): ``values``
    are stored codes of heaps ``base ...`` (at least ``[a - window, b)``), ``prefix`` the exact
    G(0) ... G(P-1) with P past the table's last rare position (checked against the table:
    the table is never trusted).  Bounded memory: only pairs with both heaps in the prefix or
    in ``values`` are scanned.  Result ``status``: ``"proven"``; ``"failed"`` at ``heap`` with
    ``true_value`` (None if the history could not decide it); ``"undecided"`` at ``heap`` (more
    history needed; never reported as proven).  With ``base <= P`` it is always decisive.
    Verifier and inputs pickle; a worker process loads the module from the cache.  The proof
    scan and the marks are vectorised for the build's CPU (``verify.PLAIN_SCAN_FLAGS``: plain C).

The engine (:mod:`octalgen.engine`) runs these: exact steps, the kernel as producer, verifiers
in parallel, recovery from a failed proof, and the consumers of proven values.
"""

from .exact import CExactSolver
from .kernel import NaiveKernel, SpeculativeKernel, StorageOverflow
from .verify import Verifier, VerifyResult

__all__ = [
    "CExactSolver",
    "SpeculativeKernel",
    "NaiveKernel",
    "StorageOverflow",
    "Verifier",
    "VerifyResult",
]
