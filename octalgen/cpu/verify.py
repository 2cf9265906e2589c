"""The exact verifier: proves a kernel's values, interval by interval, in bounded memory.

For heap n the plan's speculation G(n) = s is proven when

1. the marks of the plan's terms, recomputed from the values, give exactly s: every common
   option involves a heap at a rare position, and those are the terms; and
2. every rare value below s is an option: the scan over pairs G(x) ^ G(rest - x) for
   x = 1, 2, ... (Grossman, Figure 2) reaches each of them, or a one-heap option rare at n
   does (``plan.rare_options``, positional rarity only).

Common and rare are the table's (:class:`~octalgen.sparse.Rarity`): with positional rarity they
depend on the heap's parity, which the generated code looks up per heap (two rows of each
table, chosen by the heap's class), never per term.

Step 1 is only right if the rare positions below n are exactly the table's.  The verifier
checks that against the prefix it is given (the exact values G(0) ... G(P-1)) and requires the
values after the prefix to be common but at the table's far rare positions (those past P, found
far out): u16 values are checked; a u8 code stands for a common value, and the scan takes the
pairs of a far rare position apart, by the table.  A term that reads a rare position (at the
crossing heaps of a plan that starts early, :attr:`~octalgen.plan.KernelPlan.crossings`) marks
nothing there: its option is rare.  A read-only prefix (the memory map that worker processes
share, the run's own history) is checked once per process, not once per call: a run hands every
task the same one, of up to 2^23 values; as it grows, each new one is checked only past the last.

Memory is bounded: ``values`` may hold only a recent stretch G(base) ... of a long run.  The
scan then uses only pairs whose two heaps are both in the prefix or the stretch.  The result
for [a, b) is one of

* ``proven``: every value in [a, b) is proven;
* ``failed`` at n: the value at n is not the plan's speculation, or is proven wrong;
  ``true_value`` is G(n) when it could be decided (with the whole history it always can);
* ``undecided`` at n: the value at n could be neither proven nor refuted from the history
  given.  Nothing is ever reported proven that was not.

Intervals are independent (the values before a are assumed right, and proven by the
intervals that hold them), so verifiers run in parallel processes: a :class:`Verifier` and
its inputs pickle, and a worker loads the compiled module from the cache.
"""

from __future__ import annotations

import mmap
import threading
from collections import OrderedDict
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np

from ..build import DEFAULT_CFLAGS, load_module_at, module_address
from ..errors import InputError, InternalError
from ..plan import KernelPlan
from .generate import DEFAULT_MAX_THREADS, compile_unit, kernel_unit, max_threads_for
from .kernel import code_ctype, code_dtype

PROVEN, FAILED, UNDECIDED = "proven", "failed", "undecided"

#: Build flags for the verifier with its plain C proof scan and scalar marks (no vector code): a row
#: of ``octalgen bench``, and what the tests compare the vector paths with.
PLAIN_SCAN_FLAGS = (*DEFAULT_CFLAGS, "-DOCTALGEN_PLAIN_SCAN")
_STATUS = {0: PROVEN, 1: FAILED, 2: UNDECIDED}

#: Heaps before the interval whose u16 values :meth:`Verifier.verify` checks against the table.
CHECKED_BEFORE = 1 << 20

#: The proof scan reads the values given at most this many heaps before the interval (and the whole
#: prefix): a far term's window, which the terms read, is hundreds of millions of heaps, whose pages
#: a deep scan would all bring in.  A scan that needs more stays undecided; the engine decides such a
#: heap from the values read in pieces (:mod:`octalgen.engine.exact_heap`).
SCAN_REACH = 1 << 24

#: Values of the prefix checked and stored at a time: a run's prefix is 2^23 values, and temporaries of
#: its whole length would cost each worker process fresh pages by the thousand.
_PIECE = 1 << 16

#: Codes a verifier's buffer of prefix codes has room for at first: a run's prefix grows to 2^23 values.
_CODES_ROOM = 1 << 23

#: Read-only prefixes already checked and stored as the scan reads them, by (id, table digest,
#: encoding): the entry (a :class:`_Checked`) holds the array itself, so its id cannot be reused while
#: it is here.  A few suffice: a run shares one prefix at a time, each extending the last, and one that
#: begins with an entry's prefix is checked and stored only past it.
_CHECKED: OrderedDict[tuple, _Checked] = OrderedDict()
_CHECKED_KEEP = 4
_CHECKED_LOCK = threading.Lock()  # verifiers may run in threads (a Dask worker's)


@dataclass(frozen=True)
class VerifyResult:
    """What the verifier found for an interval [a, b).

    Attributes
    ----------
    status : str
        ``"proven"``, ``"failed"`` or ``"undecided"``.
    heap : int or None
        The first heap that is not proven (None when proven).
    true_value : int or None
        For ``failed``: G(heap) when decided.  It differs from the value given, except when
        the value given is rare, i.e. a rare value the table lacks.
    options_scanned : int
        Pair options the proof scans looked at (a measure of the work).
    """

    status: str
    heap: int | None = None
    true_value: int | None = None
    options_scanned: int = 0

    @property
    def proven(self) -> bool:
        return self.status == PROVEN

    @property
    def unproven_heap(self) -> int:
        """:attr:`heap` of a result that is not proven: the first heap whose proof did not go through."""
        if self.heap is None:
            raise InternalError(f"a {self.status} proof names no heap where it stopped")
        return self.heap


class Verifier:
    """The exact verifier of one plan (compiled with the plan's kernel: the same terms).

    Parameters
    ----------
    plan : KernelPlan
    max_threads, flags
        As for :class:`~octalgen.cpu.kernel.SpeculativeKernel`: the same values load the same module.

    Notes
    -----
    The code is chosen for the CPU it is built on (the build's ``-march``; the module cache is
    keyed by the CPU): the proof scan looks many options up at once in the set of rare values
    still missing (AVX-512 VBMI byte permutes, AVX-512BW or AVX2 shuffles, GCC vectors elsewhere),
    and the kernel's marks are checked for 8, 16 or 128 heaps at once (with AVX-512 VBMI the 128
    sorted by their values), the scan's first round of pairs taken for them in the same vector
    lanes.  :data:`PLAIN_SCAN_FLAGS` builds the plain C scan and scalar marks.  Every path scans
    the same pairs in the same order (octalgen/verify.h), so results and ``options_scanned`` agree.
    """

    def __init__(self, plan: KernelPlan, max_threads: int = DEFAULT_MAX_THREADS, flags=DEFAULT_CFLAGS):
        self.plan = plan
        self.flags = tuple(flags)
        self.max_threads = max_threads_for(plan, max_threads)
        self.dtype = code_dtype(plan)

    def __reduce__(self):
        loaded = self.__dict__.get("module")  # where a worker of this machine finds it (see module_address)
        return _unpickled_verifier, (self.plan, self.max_threads, self.flags, loaded and module_address(loaded))

    @cached_property
    def _positions(self) -> np.ndarray:
        """The table's rare positions, ascending, uint64 (those past a prefix are far ones)."""
        return np.array(self.plan.table.positions, dtype=np.uint64)

    @cached_property
    def module(self):
        return compile_unit(kernel_unit(self.plan, self.max_threads), self.flags)

    def verify(self, values: np.ndarray, base: int, prefix, a: int, b: int) -> VerifyResult:
        """Prove the values of heaps ``a`` ... ``b - 1``.

        Parameters
        ----------
        values : numpy.ndarray
            Stored codes of heaps ``base`` ... ``base + len(values) - 1`` (the plan's dtype).
            Must cover ``[a - plan.window, b)``.
        base : int
            Heap of ``values[0]``.
        prefix : array_like of int
            Exact values G(0) ... G(P-1), whose rare positions must be the table's below P.
            The table's entries at P or past it are *far* rare positions (found far out, where
            the engine keeps its prefix short): ``values`` hold their values (u16) or the codes
            of their values (u8: bit b deleted, as for the prefix's).  With ``base <= P`` and
            ``a - P`` at most :data:`SCAN_REACH` the history is complete and the answer always
            decisive.
        a, b : int
            The interval; ``a >= plan.start``.

        Raises
        ------
        InputError
            When the inputs do not fit these rules, or the prefix contradicts the table (the
            table is then wrong: fix it against the prefix and make a new plan).
        """
        plan = self.plan
        prefix = self._prefix(prefix)
        values = np.ascontiguousarray(values)
        if values.dtype != self.dtype:
            raise InputError(f"values must be stored codes of dtype {self.dtype}, not {values.dtype}")
        if not plan.start <= a <= b:
            raise InputError(f"verify [{a}, {b}): needs plan.start = {plan.start} <= a <= b")
        if base > a - plan.window or base + len(values) < b:
            raise InputError(
                f"verify [{a}, {b}): values must cover heaps {a - plan.window} to {b - 1}, "
                f"not {base} to {base + len(values) - 1}"
            )
        if self.dtype == np.uint16:
            self._check_common(values, base, len(prefix[0]), a)
        if a == b:
            return VerifyResult(PROVEN)
        stored, rare = prefix
        far = self._positions[np.searchsorted(self._positions, len(stored)) :]
        crossings = plan.crossings[np.searchsorted(plan.crossings, a) : np.searchsorted(plan.crossings, b)]
        result = np.zeros(4, dtype=np.int64)
        ffi, lib = self.module.ffi, self.module.lib
        codes = f"{code_ctype(self.dtype)}[]"
        lib.octalgen_verify(
            ffi.from_buffer(codes, stored),
            len(stored),
            ffi.from_buffer("uint8_t[]", rare),
            len(rare),
            ffi.from_buffer(codes, values),
            base,
            len(values),
            ffi.from_buffer("uint64_t[]", far),
            len(far),
            ffi.from_buffer("uint64_t[]", crossings),
            len(crossings),
            max(base, a - SCAN_REACH),
            a,
            b,
            ffi.from_buffer("int64_t[]", result),
        )
        status = _STATUS[int(result[0])]
        if status == PROVEN:
            return VerifyResult(PROVEN, options_scanned=int(result[3]))
        true_value = int(result[2]) if result[2] >= 0 else None
        return VerifyResult(status, int(result[1]), true_value, int(result[3]))

    def _prefix(self, prefix) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`_stored_prefix` of ``prefix`` once checked; a read-only prefix is checked and stored once,
        and one that extends an earlier one (a run's, as it grows) only past it (see :data:`_CHECKED`)."""
        if not is_frozen(prefix):
            return self._stored_prefix(self._checked_prefix(prefix))[0]
        tag = (self.plan.table.digest, self.plan.encoding)
        key = (id(prefix), *tag)
        with _CHECKED_LOCK:  # the buffer of codes is written past its end by one verifier at a time
            known = _CHECKED.get(key)
            if known is not None and known.prefix is prefix:
                _CHECKED.move_to_end(key)
                return known.stored
            earlier = sorted((c for k, c in _CHECKED.items() if k[1:] == tag), key=lambda c: -len(c.prefix))
            head = next((c for c in earlier if _begins_with(prefix, c.prefix)), None)
            start = len(head.prefix) if head is not None else 0
            checked = self._checked_prefix(prefix, start)
            stored, codes = self._stored_prefix(checked, start, head.codes if head is not None else None)
            _CHECKED[key] = _Checked(prefix, stored, codes)
            while len(_CHECKED) > _CHECKED_KEEP:
                _CHECKED.popitem(last=False)
            return stored

    def _checked_prefix(self, prefix, start: int = 0) -> np.ndarray:
        """The prefix as uint16, after checking that its rare values from ``start`` on are exactly the
        table's there, below its end (the table's entries past it are far ones: see :meth:`verify`)."""
        table = self.plan.table
        prefix = np.asarray(prefix)
        rest = prefix[start:]
        if len(rest) and not np.can_cast(prefix.dtype, np.uint16) and (rest.min() < 0 or rest.max() >= 1 << 16):
            raise InputError("prefix values must lie in 0 ... 65535")
        prefix = np.ascontiguousarray(prefix, dtype=np.uint16)
        found = [np.zeros(0, np.int64)]
        for lo in range(start, len(prefix), _PIECE):
            found.append(lo + np.flatnonzero(table.rare_flags(prefix[lo : lo + _PIECE], lo)))
        rare = np.concatenate(found)
        entries = tuple(zip(rare.tolist(), prefix[rare].tolist()))
        if entries != tuple(e for e in table.entries if start <= e[0] < len(prefix)):
            raise InputError(
                f"the prefix G(0) ... G({len(prefix) - 1}) contradicts the rare table "
                f"{table.digest[:19]}: fix the table against it and make a new plan"
            )
        return prefix

    def _stored_prefix(
        self, prefix: np.ndarray, start: int = 0, codes: _Codes | None = None
    ) -> tuple[tuple[np.ndarray, np.ndarray], _Codes | None]:
        """What the C scan reads of a checked prefix: its stored codes, and the rare flags of its heaps
        up to the last rare position (0xff at a rare position; u8 codes only, whose scan must leave
        out the pairs of one rare and one common heap; empty for u16, where the codes are the values).
        The flags are the table's positions, which the check found to be the prefix's.  A rare value's
        u8 code is cut to 8 bits: only flagged pairs read it.

        ``codes``: the buffer holding the u8 codes of the prefix's first ``start`` values, which are
        encoded only from there on.  Returns the stored prefix, and the buffer that holds its codes.
        """
        if self.dtype == np.uint16:
            return (prefix, np.zeros(0, dtype=np.uint8)), None
        rare = np.zeros(min(len(prefix), self.plan.table.last_position + 1), dtype=np.uint8)
        rare[self._positions[: np.searchsorted(self._positions, len(rare))]] = 0xFF
        codes = _Codes.holding(codes, start, len(prefix))
        for lo in range(start, len(prefix), _PIECE):
            hi = min(lo + _PIECE, len(prefix))
            codes.array[lo:hi] = self.plan.encoding.encode_array(prefix[lo:hi])
        codes.filled = len(prefix)
        return (codes.array[: len(prefix)], rare), codes

    def _check_common(self, values: np.ndarray, base: int, prefix_length: int, a: int) -> None:
        """u16 values before a and past the prefix must be common, but at the table's far rare positions
        (u8 codes always are common).  Checked over the :data:`CHECKED_BEFORE` heaps before a: a far
        term's window (a run's tape) is m values long, and its values were proven by earlier calls."""
        stop = a - base
        start = max(0, prefix_length - base, stop - CHECKED_BEFORE)
        if start < stop:
            before = values[start:stop].astype(np.int64)
            rare = np.flatnonzero(self.plan.table.rare_flags(before, base + start))
            far = dict(e for e in self.plan.table.entries if base + start <= e[0] < base + stop)
            for index in rare.tolist():
                heap = base + start + index
                if far.get(heap) != int(before[index]):
                    raise InputError(
                        f"G({heap}) = {int(before[index])} is rare but not in the table: "
                        "add it to the table and make a new plan"
                    )


@lru_cache(maxsize=4)
def _unpickled_verifier(plan: KernelPlan, max_threads: int, flags: tuple, address: tuple | None) -> Verifier:
    """The verifier a pickled one becomes: one a process for each plan, so that a worker, which gets
    the verifier anew with every task, makes the plan's tables and loads the module once; loaded
    from where the pickling process had it (``address``), where this process can, not generated again."""
    verifier = Verifier(plan, max_threads, flags)
    module = load_module_at(address) if address is not None else None
    if module is not None:
        verifier.__dict__["module"] = module  # what the cached property would have made
    return verifier


class _Codes:
    """The u8 codes of a read-only prefix and of the longer ones that begin with it, in one buffer written
    only past ``filled``: the codes handed out for a shorter prefix (a view of its head) never change."""

    def __init__(self, capacity: int):
        self.array, self.filled = np.empty(capacity, dtype=np.uint8), 0

    @classmethod
    def holding(cls, codes: _Codes | None, start: int, length: int) -> _Codes:
        """``codes`` where ``length`` codes may follow its first ``start`` there, else a new buffer
        holding a copy of them, with room for a run's whole prefix or twice ``length`` (its pages
        cost nothing until written; a copy would cost fresh ones)."""
        if codes is not None and codes.filled == start and len(codes.array) >= length:
            return codes
        grown = cls(max(2 * length, _CODES_ROOM))
        if codes is not None:
            grown.array[:start] = codes.array[:start]
        return grown


@dataclass
class _Checked:
    """A read-only prefix that was checked, what the scan reads of it, and the buffer of its codes."""

    prefix: np.ndarray
    stored: tuple[np.ndarray, np.ndarray]
    codes: _Codes | None


def _begins_with(longer, head) -> bool:
    """True when read-only ``longer`` begins with the values of read-only ``head``: at once where
    they lie in the same memory."""
    longer, head = np.asarray(longer), np.asarray(head)
    if longer.ndim != 1 or head.ndim != 1 or len(longer) < len(head) or longer.dtype != head.dtype:
        return False
    if not len(head) or (_address(head) is not None and _address(longer) == _address(head)):
        return True
    ends = [*range(_PIECE << 4, len(head), _PIECE << 4), len(head)]
    return all(np.array_equal(longer[lo:hi], head[lo:hi]) for lo, hi in zip([0, *ends], ends))


def _address(array: np.ndarray) -> int | None:
    """Where a contiguous array's values begin in memory (None for a strided one)."""
    return array.__array_interface__["data"][0] if array.flags.c_contiguous else None


def is_frozen(array) -> bool:
    """Whether nothing changes the values of ``array``, so that a verifier may check it once.

    Parameters
    ----------
    array : object

    Returns
    -------
    bool
        True where ``array`` and every array it views are read-only, on memory of their own or a
        memory map, which its owner only writes past them: a worker process maps the prefix from
        a file the run appends to, and the run's history grows its prefix in an anonymous map.
    """
    while isinstance(array, np.ndarray):
        if array.flags.writeable:
            return False
        array = array.base
    return array is None or isinstance(array, (bytes, mmap.mmap))
