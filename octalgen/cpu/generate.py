"""Generated C of the CPU engine: Python decides every value, ``templates/c/`` places them.

Three translation units, each with a provenance header (generator version, game, rare-table
digest, storage, terms, options; no timestamp), so equal inputs give equal bytes:

* :func:`exact_unit` (``octalgen_exact.c``): the exact rare-value solver of one game.  It
  depends only on the game's moves, never on a rare table.
* :func:`kernel_unit` (``octalgen_kernel.c``): the speculative kernel (one thread, and threads
  that hand each other blocks of heaps) and the exact verifier of one :class:`~octalgen.plan.KernelPlan`,
  one module for both (the verifier marks the same unrolled terms).
* :func:`naive_unit` (``octalgen_naive.c``): the plain-loop baseline ``octalgen bench`` measures against.

Each template (``c/exact.c.j2``, ``c/kernel.c.j2``, ``c/naive.c.j2``) places the values of its
unit and unrolls what a game's terms and moves make of it; the code that is the same for every game
is in the plain headers it includes (``c/include/octalgen/*.h``: ``marks.h`` what kernel and
verifier share, ``kernel.h``, ``verify.h`` with ``verify_u8.h`` or ``verify_u16.h``, ``exact.h``,
``naive.h``).  :func:`compile_unit` builds a unit into a cached cffi module
(:func:`octalgen.build.build_module`), keyed by the rendered source, the headers it includes and
its declarations; :attr:`CUnit.standalone` is the unit with its headers inlined, as ``octalgen emit
c`` writes it.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .. import __version__
from ..build import DEFAULT_CFLAGS, CompiledModule, build_module
from ..c_headers import inline_headers
from ..errors import InputError
from ..game import OctalGame, parse_game
from ..plan import KernelPlan
from ..render import render

#: Default for the largest thread count a kernel supports.
DEFAULT_MAX_THREADS = 64

#: The thread count a kernel takes is capped at one more than this (u8 / u16 storage: the codes of a
#: cache line less eight bytes), the bound ``--threads`` names; the blocks the threads hand each
#: other need no cap of their own.
_BATON_VALUES = {"u8": 56, "u16": 28}

#: Heaps per block of the threaded kernel, by storage: a whole number of cache lines of codes.  The
#: critical path of a block (``benchmarks/bench_kernel_threads.py --clock`` measures it) is far below
#: its work per thread, so the length decides only the overheads: per block (a baton, and a wait
#: whenever the thread before lost its core, which costs more the shorter the blocks) against per
#: heap (a row of marks, 256 bytes for u8, mex_size + 64 for u16; terms into blocks in flight marked
#: from a table, up to (threads - 1) x block in offset).  u16 rows are larger, so its blocks shorter.
DEFAULT_BLOCK_HEAPS = {"u8": 256, "u16": 64}

#: The verifier's proof scan marks options blindly, this many at a time, while more than
#: SPARSE_FROM rare values are missing; then it compares options with the missing values (u16).
DENSE_CHUNK = 128
SPARSE_FROM = 16

#: The order of the proof scan's pairs (x, rest - x) (octalgen/verify.h).  First a round of up to
#: ROUND_PAIRS x (about as many as a take of a probe's heaps scanned), the common heaps below
#: ROUND_SPAN taken by their values in turn: a pair's option is G(x) ^ G(rest - x), and x of every
#: value meet a heap's missing rare values far sooner than x in order, whose values are alike: at
#: G(2^23) ... the round alone finds every missing value of 75% of .6's heaps and 65% of .172's, the
#: first 1,280 x in order of 26% and 15%.  Then the x of regions starting at PAIR_REGIONS, in turn
#: (the values of heaps far apart differ in kind), in chunks from FIRST_CHUNK x.
ROUND_PAIRS = 1280
ROUND_SPAN = 1 << 15
PAIR_REGIONS = (1, 8192, 32768)
FIRST_CHUNK = 512

_LOAD_INSTRUCTION = {"u8": "movzbl", "u16": "movzwl"}
_CODE_TYPE = {"u8": "uint8_t", "u16": "uint16_t"}


@dataclass(frozen=True)
class CUnit:
    """One generated C translation unit.

    Attributes
    ----------
    name : str
        Base file name: the source is ``name.c``, the header ``name.h``.
    source : str
        The C source as it is compiled: it carries its own declarations and includes the shipped
        headers of fixed C (``templates/c/include/``); :attr:`standalone` inlines them.
    declarations : str
        The public functions, as C declarations; also the cffi ``cdef``.
    header : str
        ``name.h``: the declarations with the provenance header and an include guard.
    what : str
        Description for log lines ("compiled ... in X s").
    """

    name: str
    source: str
    declarations: str
    header: str
    what: str

    @property
    def standalone(self) -> str:
        """:attr:`source` with the shipped headers inlined: the file ``octalgen emit c`` writes, which
        compiles on its own."""
        return inline_headers(self.source)


def _unit(
    name: str, template: str, api_templates: tuple[str, ...], provenance: list[str], what: str, **context
) -> CUnit:
    provenance = [*provenance, *compile_lines(name)]
    declarations = "\n".join(render(f"c/{api}", **context) for api in api_templates)
    source = render(f"c/{template}", provenance=provenance, declarations=declarations, **context)
    header = render("c/header.h.j2", provenance=provenance, declarations=declarations, guard=name.upper() + "_H")
    return CUnit(name, source, declarations, header, what)


def compile_lines(name: str) -> list[str]:
    """The provenance lines that say how ``name.c`` compiles on its own: the flags octalgen builds it
    with, in C11 or GNU C11."""
    flags = " ".join(DEFAULT_CFLAGS).replace("-std=gnu11", "-std=c11")
    return [
        f"compile: cc {flags} -c {name}.c",
        "    (or -std=gnu11; add -DOCTALGEN_PORTABLE for plain C, no vector code)",
    ]


def _moves(game: OctalGame) -> dict:
    """The takes k of each kind of move, for loops the templates unroll."""
    moves = list(game.moves())
    return {
        "none_takes": [k for k, none, _one, _two in moves if none and k >= 1],
        "one_heap_takes": [k for k, _none, one, _two in moves if one and k >= 1],
        "two_heap_takes": [k for k, _none, _one, two in moves if two],
    }


def exact_unit(game) -> CUnit:
    """``octalgen_exact.c``: the exact solver of ``game`` (any mask, chosen at run time)."""
    game = parse_game(game)
    moves = _moves(game)
    provenance = [f"generator: octalgen {__version__}", f"game: {game.code}", "unit: exact rare-value solver"]
    return _unit(
        "octalgen_exact",
        "exact.c.j2",
        ("exact_api.j2",),
        provenance,
        f"exact solver for {game.code}",
        game=game.code,
        moves="; ".join(game.describe()),
        take_parity=game.take_parity or 0,
        **moves,
    )


def max_threads_for(plan: KernelPlan, requested: int = DEFAULT_MAX_THREADS) -> int:
    """The largest thread count a kernel of ``plan`` can support (``requested``, capped by the baton)."""
    return max(1, min(requested, _BATON_VALUES[plan.encoding.kind] + 1))


#: The declarations of the kernel unit's two functions.
_KERNEL_API = ("kernel_api.j2", "verify_api.j2")


def line_codes(plan: KernelPlan) -> int:
    """Stored codes per 64-byte cache line: a block of the threaded kernel is a whole number of them."""
    return 64 // plan.encoding.dtype.itemsize


def block_heaps_for(plan: KernelPlan, block_heaps: int | None = None) -> int:
    """The threaded kernel's block length for ``plan``: ``block_heaps`` (default by storage), checked
    to be a positive multiple of a cache line (64 bytes) of stored codes."""
    kind = plan.encoding.kind
    block = DEFAULT_BLOCK_HEAPS[kind] if block_heaps is None else int(block_heaps)
    line = line_codes(plan)
    if block <= 0 or block % line:
        raise InputError(f"a kernel block must be a positive multiple of {line} heaps ({kind} storage), not {block}")
    return block


def kernel_unit(plan: KernelPlan, max_threads: int = DEFAULT_MAX_THREADS, block_heaps: int | None = None) -> CUnit:
    """``octalgen_kernel.c``: speculative kernel and verifier for ``plan``.

    Parameters
    ----------
    plan : KernelPlan
    max_threads : int
        The kernel runs with up to this many threads (capped at 57 for u8, 29 for u16 storage).
    block_heaps : int, optional
        Heaps per block of the threaded kernel (see :func:`block_heaps_for`); the values do not
        depend on it.
    """
    if plan.mex_size > 1 << 16:
        raise InputError(f"{plan.game.code}: {len(plan.terms)} terms need a mark array beyond 16 bits")
    return _kernel_unit(plan, max_threads_for(plan, max_threads), block_heaps_for(plan, block_heaps))


@lru_cache(maxsize=8)
def _kernel_unit(plan: KernelPlan, recent: int, block_heaps: int) -> CUnit:
    """:func:`kernel_unit` once a process for each plan and build: a run's kernel and verifier are the same unit."""
    kind = plan.encoding.kind
    terms = plan.encoded_terms()
    unrolled = [("MARK" if c else "MARK0", o, c) for o, c in sorted(terms)]
    # A heap's scalar marks: the terms in the plan's order, those of offsets below `recent` last.
    heap_terms = [
        ("MARK" if c else "MARK0", o, c)
        for o, c in (*[t for t in terms if t[0] >= recent], *[t for t in terms if t[0] < recent])
    ]
    # The vector kernel's step takes the only term of offset 1 (if one) last; the others of offsets
    # below 16 are its near terms.
    first = [c for o, c in terms if o == 1]
    taken_last = first[0] if len(first) == 1 else None
    near = [(o, c) for o, c in sorted(terms) if o < 16 and not (o == 1 and taken_last is not None)]
    # The late pass of the threaded kernel: the terms with offsets below two blocks, from the largest
    # down, and for each heap i of a pair of blocks the first of them whose offset is at most i.
    late = [t for t in reversed(unrolled) if t[1] < 2 * block_heaps]
    late_offsets = sorted(t[1] for t in late)
    late_entry = [len(late_offsets) - bisect.bisect_right(late_offsets, i) for i in range(2 * block_heaps)]
    provenance = plan.provenance(
        unit="speculative kernel and verifier", threads=f"1 to {recent}", block=f"{block_heaps} heaps"
    )
    return _unit(
        "octalgen_kernel",
        "kernel.c.j2",
        _KERNEL_API,
        provenance,
        f"kernel for {plan.game.code} ({len(terms)} terms, {kind})",
        game=plan.game.code,
        term_count=len(terms),
        storage=plan.encoding.describe(),
        storage_u8=kind == "u8",
        code_type=_CODE_TYPE[kind],
        load_instruction=_LOAD_INSTRUCTION[kind],
        window=plan.window,
        mark_size=plan.encoding.capacity,
        mex_size=plan.mex_size,
        recent=recent,
        block_heaps=block_heaps,
        terms=unrolled,
        heap_terms=heap_terms,
        near_terms=near,
        taken_last=taken_last,
        late_terms=late,
        late_entry=late_entry,
        heap_classes=plan.heap_classes,
        parity=plan.table.parity or 0,
        common_bits=_common_rows(plan),
        need_limit=_need_limit(plan),
        dense_chunk=DENSE_CHUNK,
        sparse_from=SPARSE_FROM,
        rare_bits=[
            _bit_words(
                (v for v in range(_need_limit(plan)) if plan.table.rarity.rare_in_class(v, c)), _need_limit(plan)
            )
            for c in range(plan.heap_classes)
        ],
        decode=plan.encoding.decode_rows.tolist() if kind == "u8" else [],
        **(_code_scan_tables(plan) if kind == "u8" else {}),
        rare_options=list(plan.rare_options),
        round_pairs=ROUND_PAIRS,
        round_span=ROUND_SPAN,
        pair_regions=PAIR_REGIONS,
        first_chunk=FIRST_CHUNK,
        **_moves(plan.game),
    )


def naive_unit(plan: KernelPlan) -> CUnit:
    """``octalgen_naive.c``: Grossman's Figure 3 as a plain loop over the term table (the bench baseline)."""
    kind = plan.encoding.kind
    terms = plan.encoded_terms()
    provenance = plan.provenance(unit="naive baseline (loop over the term table)")
    return _unit(
        "octalgen_naive",
        "naive.c.j2",
        ("naive_api.j2",),
        provenance,
        f"naive baseline for {plan.game.code}",
        game=plan.game.code,
        term_count=len(terms),
        storage=plan.encoding.describe(),
        code_type=_CODE_TYPE[kind],
        window=plan.window,
        mex_size=plan.mex_size,
        offsets=[o for o, _ in terms],
        constants=[c for _, c in terms],
        common_bits=_common_rows(plan),
        parity=plan.table.parity or 0,
    )


def compile_unit(unit: CUnit, flags=DEFAULT_CFLAGS) -> CompiledModule:
    """Compile ``unit`` into a cached cffi module (see :func:`octalgen.build.build_module`)."""
    return build_module(unit.name, unit.source, unit.declarations, flags=flags, what=unit.what)


def _need_limit(plan: KernelPlan) -> int:
    """Raw values the verifier's need bitmap covers: every candidate is below it."""
    return 512 if plan.encoding.kind == "u8" else plan.mex_size


def _code_scan_tables(plan: KernelPlan) -> dict:
    """The u8 verifier's tables (octalgen/verify_u8.h, which scans in codes): ``rare_value``, the value rare
    at each heap class that has each code, and ``need_below``, for each class and candidate code the
    codes of the rare values below the candidate as a set of 256 bits (code c: bit c & 7 of byte
    c >> 3), ``need_count``, the codes in that set, and ``need_top``, one more than the largest of them
    (0 when empty).

    Raises
    ------
    InputError
        When a pair of common heaps can give a value common at the heap it is an option of: the
        scan then could not tell options from codes (sparse.Rarity rules this out: positional
        rarity needs the two-heap moves to take beans of one parity).
    """
    encoding, rarity = plan.encoding, plan.table.rarity
    for k in _moves(plan.game)["two_heap_takes"]:
        for x, y in ((0, 0), (0, 1), (1, 1)):  # heaps of every pair of classes
            a, b = (next(v for v in range(2, 1 << 9) if not rarity.is_rare(v, heap)) for heap in (x + 2, y + 2))
            if not rarity.is_rare(a ^ b, x + y + 4 + k):
                raise InputError(
                    f"{plan.game.code}: a two-heap option of common heaps can be common "
                    f"({rarity.kind} rarity, mask {rarity.mask:#x}): no u8 proof scan"
                )
    need_below, need_count, need_top, rare_value = [], [], [], encoding.rare_rows
    for common, rare in zip(encoding.decode_rows, rare_value):
        below = rare[None, :] < common[:, None]  # [candidate code, code]
        layout = np.packbits(below, axis=1, bitorder="little")  # code c: bit c & 7 of byte c >> 3
        need_below.append([f"{v:#04x}" for v in layout.ravel()])
        need_count.append(below.sum(axis=1).tolist())
        need_top.append(((256 - np.argmax(below[:, ::-1], axis=1)) * below.any(axis=1)).tolist())
    return {"need_below": need_below, "need_count": need_count, "need_top": need_top, "rare_value": rare_value.tolist()}


def _common_rows(plan: KernelPlan) -> list[list[str]]:
    """The common codes below ``mex_size`` as bit words, a row per heap class where they differ
    (u16 codes under positional rarity), else one row (every u8 code decodes to a common value)."""
    classes = plan.heap_classes if plan.encoding.kind == "u16" else 1
    return [_bit_words(plan.common_codes(c), plan.mex_size) for c in range(classes)]


def _bit_words(members, size: int) -> list[str]:
    """``members`` (ints below ``size``, a multiple of 64) as 64-bit words, in hex."""
    words = [0] * (size // 64)
    for v in members:
        words[v // 64] |= 1 << (v % 64)
    return [f"{w:#018x}u" for w in words]
