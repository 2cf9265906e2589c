"""``octalgen period``: find and prove the period of a nim-sequence (Grossman 4, Guy–Smith).

Values come from the exact ``c`` pipeline and are kept in memory (two bytes per value).  The
scanner's rolling CRC-64 over the last W values is compared with its value at power-of-two
anchors; a hash match whose two windows hold equal values is a *candidate* period p.  Its least
preperiod i is found by comparing G(n) with G(n + p) backwards, every later value is checked
against the one p before it, and once G(0) ... G(2i + 2p + t - 1) are computed the candidate is
proven by the Guy–Smith theorem (:func:`~octalgen.periodicity.is_proven_period`, which also
checks that p and i are least).  Every claim rests on that explicit check, never on the hash.

W is the span that determines the next value for a game with a rare-value kernel
(``plan.window``: 20,628 for ``.6``).  A game without sparse space has no such span (each
value depends on all earlier ones), so W is :data:`UNSPARSE_WINDOW`: the window only decides
*when* a period is noticed (at the first anchor a >= i + W - 1 with a > p), never whether a
reported period is right.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import numpy as np

from ..cpu.pipeline import exact_values, starting_plan
from ..game import parse_game
from ..periodicity import is_proven_period, proof_length
from .scan import HASH_MATCH, Scanner

log = logging.getLogger("octalgen")

#: Window of the hash for games without a sparse space (see the module docstring).
UNSPARSE_WINDOW = 64

#: Values per step of the pipeline, with a kernel and without one.
KERNEL_CHUNK, EXACT_CHUNK = 1 << 20, 1 << 12


@dataclass
class Candidate:
    """A period p seen from i on, checked up to ``checked_to``; proven with G(0) ... G(length-1)."""

    period: int
    preperiod: int
    length: int
    checked_to: int


@dataclass
class PeriodReport:
    """What :func:`find_period` found.

    Attributes
    ----------
    period, preperiod : int or None
        The least period and least preperiod when proven.
    proof_length : int or None
        L: the proof used G(0) ... G(L-1).
    computed : int
        Values computed.
    window : int
        W of the hash.
    candidates : list of Candidate
        Candidates still open when the search stopped (needing more values than allowed).
    seconds : float
    """

    game: str
    period: int | None
    preperiod: int | None
    proof_length: int | None
    computed: int
    window: int
    max_take: int
    candidates: list = field(default_factory=list)
    seconds: float = 0.0

    def lines(self, limit: int) -> list[str]:
        if self.period is not None:
            p, i, t = self.period, self.preperiod, self.max_take
            return [f"period {p} preperiod {i}",
                    f"proof: G(n + {p}) = G(n) for {i} <= n < {2 * i + p + t} (Guy-Smith, t = {t}), "
                    f"checked on G(0) ... G({self.proof_length - 1})",
                    f"computed {self.computed} values in {self.seconds:.1f} s"]
        lines = [f"no period up to {limit}"]
        for c in self.candidates:
            lines.append(f"candidate period {c.period} preperiod {c.preperiod}: G(n + {c.period}) = G(n) checked for "
                         f"{c.preperiod} <= n < {limit - c.period}; the proof needs G(0) ... G({c.length - 1}): "
                         f"run with --max {c.length}")
        lines.append(f"(a period p with preperiod i is found once N > 2i + 2p + t and N > 2a, a the first power "
                     f"of two with a > p and a >= i + {self.window - 1}; window W = {self.window})")
        return lines


class _Search:
    def __init__(self, game, window: int):
        self.game = game
        self.scanner = Scanner(window)
        self.values = np.zeros(1 << 16, dtype=np.uint16)
        self.count = 0
        self.candidates: list[Candidate] = []
        self.proven: Candidate | None = None

    def add(self, chunk) -> None:
        chunk = np.asarray(chunk)
        while self.count + len(chunk) > len(self.values):
            self.values = np.concatenate([self.values, np.zeros_like(self.values)])
        first = self.count
        self.values[first: first + len(chunk)] = chunk
        self.count += len(chunk)
        for event in self.scanner.fold(chunk):
            if event.kind == HASH_MATCH and self._match(int(self.scanner.state.anchor), event.heap):
                self._check()  # with every value computed so far, which may already prove it
                if self.proven is not None:
                    return
        self._check()

    def _match(self, anchor: int, heap: int) -> bool:
        """A hash match: True when it makes a new candidate."""
        g, w = self.values, self.scanner.window
        period = heap - anchor
        if any(period % c.period == 0 for c in self.candidates):
            return False  # a multiple of an open candidate's period: nothing new
        if not np.array_equal(g[anchor - w + 1: anchor + 1], g[heap - w + 1: heap + 1]):
            log.debug("hash match at G(%d) with the anchor G(%d), windows differ", heap, anchor)
            return False
        known = g[: heap + 1]
        mismatch = np.flatnonzero(known[period:] != known[:-period])
        preperiod = int(mismatch[-1]) + 1 if len(mismatch) else 0
        length = proof_length(period, preperiod, self.game.max_take)
        log.info("candidate: the %d values ending at G(%d) recur ending at G(%d): period %d from G(%d); "
                 "proof needs G(0) ... G(%d)", w, anchor, heap, period, preperiod, length - 1)
        self.candidates.append(Candidate(period, preperiod, length, heap + 1))
        return True

    def _check(self) -> None:
        g = self.values
        for c in list(self.candidates):
            stop = self.count
            if stop > c.checked_to:
                bad = np.flatnonzero(g[c.checked_to: stop] != g[c.checked_to - c.period: stop - c.period])
                if len(bad):
                    log.info("candidate period %d fails at G(%d)", c.period, c.checked_to + int(bad[0]))
                    self.candidates.remove(c)
                    continue
                c.checked_to = stop
            if self.count >= c.length:
                if is_proven_period(g[: c.length], self.game, c.period, c.preperiod):
                    self.proven = c
                    return
                self.candidates.remove(c)


def find_period(game, max_values: int, table=None, threads=None, workers=None, window: int | None = None) -> PeriodReport:
    """Search G(0) ... G(max_values - 1) of ``game`` for a proven period; see the module docstring."""
    game = parse_game(game)
    began = time.perf_counter()
    plan, _prefix = starting_plan(game, table)
    if window is None:
        window = plan.window if plan is not None else UNSPARSE_WINDOW
    search = _Search(game, window)
    # Small chunks without a kernel: the exact solver is quadratic, so stop soon after a proof.
    chunk = KERNEL_CHUNK if plan is not None else EXACT_CHUNK
    chunks = exact_values(game, max_values, table=table, threads=threads, workers=workers, chunk=chunk)
    try:
        for chunk in chunks:
            search.add(chunk)
            if search.proven is not None:
                break
    finally:
        chunks.close()
    seconds = time.perf_counter() - began
    found = search.proven
    if found is not None:
        return PeriodReport(game.code, found.period, found.preperiod, found.length, search.count, window,
                            game.max_take, seconds=seconds)
    return PeriodReport(game.code, None, None, None, search.count, window, game.max_take,
                        candidates=search.candidates, seconds=seconds)
