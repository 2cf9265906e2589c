"""``octalgen period``: the least period and least preperiod, proven with the Guy–Smith theorem.

:class:`ExactProof` is the prover of :class:`~.tally.Tally` for ``period``.  It reads values
back from the run's history, which keeps every value on disk (:class:`~.history.History`
with ``keep_all``), so memory stays bounded whatever N:

* a hash-match candidate p (see :mod:`.tally`) gets its least preperiod i by comparing G(n)
  with G(n + p) backwards from the match until they differ;
* every later value m is compared with G(m - p) as it is proven; a difference drops the
  candidate;
* once G(0) ... G(2i + 2p + t - 1) are proven, G(n + p) = G(n) holds for i <= n < 2i + p + t,
  so the period is proven (Guy–Smith); p is then reduced to the least period (for each prime
  r dividing p, p/r is a period from i when G(n + p/r) = G(n) over one period) and i recomputed
  for it.

The hash sees a repetition only once it reaches an anchor (a power of two) and recurs after
it, which can be long after the values prove it.  So the prover also searches the values
directly (:func:`~octalgen.periodicity.search_periods`) each time the position has grown by
a quarter, and at the run's last value: a period the values prove is proven there, and a
repetition that already covers half of what its proof needs becomes a candidate, checked
value by value like a hash's and proven at the first position where the Guy–Smith bound is
met.  The engine hands values on in pieces that end at each search and at the nearest
candidate's proof length (:attr:`ExactProof.looks_at`, :attr:`ExactProof.finishes_at`), and
produces nothing beyond that length while the candidate holds: the run ends as soon as a proof
is complete, with G(0) ... G(2i + 2p + t - 1) proven, not at the end of a chunk.

Every claim rests on these explicit comparisons, never on the hash, and none relies on a
kernel: games without a sparse space are searched the same way.  Given a claim (``--period P
--preperiod I``) the same comparisons check it from the start: the first n >= I where G(n + P)
!= G(n) refutes it; once the proof length is reached it holds, and it is refuted only if a
shorter period or I - 1 also works (each named).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InternalError
from ..periodicity import last_mismatch, prime_factors, proof_length, search_periods

if TYPE_CHECKING:
    from .history import History

log = logging.getLogger("octalgen")

#: Values compared per read when scanning back and forth.
BLOCK = 1 << 21

#: The direct search runs at ``SEARCH_STEP`` values, then again once the position has grown by
#: ``SEARCH_GROWTH`` (by ``SEARCH_STEP`` at least).  A repetition becomes a candidate at 3/4 of
#: its proof length at the latest (it then covers half of what the proof needs), and from
#: 4 ``SEARCH_STEP`` on searches are 1.25 < 4/3 times apart, so one falls between 3/4 of any
#: longer proof length and the length itself: the repetition is a candidate before its proof is
#: complete, and the run ends where it is (shorter proofs, at most ``SEARCH_STEP`` values later).
SEARCH_GROWTH, SEARCH_STEP = 0.25, 1 << 4

#: Open candidates at most (each costs a compare of every later value).
MAX_CANDIDATES = 8


class ExactProof:
    """Candidates checked value by value against the stored history (see the module docstring).

    Parameters
    ----------
    max_take : int
        t of the Guy–Smith theorem (the game's largest move).
    claim : (int, int), optional
        ``(P, I)`` to check instead of searching.
    until : int, optional
        N of the run (the engine's ``until``): the direct search also runs at G(N-1), so every
        period that G(0) ... G(N-1) prove is found.  Without it the search runs only as the
        position grows by a quarter.

    Attributes
    ----------
    candidates : list of dict
        Open candidates: ``{"period", "preperiod", "checked_to", "proof_length"}``.
    seen : list of dict
        Every candidate of the search so far, in the order seen, each with its ``outcome``:
        ``"open"``, ``"failed"`` (``checked_to`` is then n + period for the first n where
        G(n + period) != G(n)), ``"proven"``, or ``"reduced"`` (a period, but a multiple of the
        least one or with a longer preperiod: the least is recorded beside it as proven, or, for
        a claim, ``refuted`` names it).
    proven : dict or None
        ``{"period", "preperiod", "proof_length"}``: least period and preperiod, proven.
    refuted : str or None
        For a claim: why it does not hold (the first n >= I where G(n + P) != G(n), or the
        shorter period, or the witness that I - 1 is a preperiod too).
    """

    name = "exact"

    def __init__(self, max_take: int, claim: tuple[int, int] | None = None, *, until: int | None = None):
        self.max_take = max_take
        self.claim = claim
        self.history: History | None = None
        self.until = until
        self.next_search = SEARCH_STEP
        self.candidates: list[dict] = []
        self.seen: list[dict] = []
        self.proven: dict | None = None
        self.refuted: str | None = None
        if claim is not None:
            period, preperiod = claim
            self.candidates.append(self._candidate(period, preperiod, 0))
            self._note(self.candidates[-1], "open")

    def attach(self, history: History) -> None:
        self.history = history
        if not history.keep_all:
            raise InternalError("the exact period proof needs a history that keeps every value")

    def _candidate(self, period: int, preperiod: int, checked_to: int) -> dict:
        return {
            "period": period,
            "preperiod": preperiod,
            "checked_to": checked_to,
            "proof_length": proof_length(period, preperiod, self.max_take),
        }

    def _note(self, candidate: dict, outcome: str) -> None:
        """Record ``candidate`` in :attr:`seen` with ``outcome``, or bring its record up to date."""
        for record in self.seen:
            if (record["period"], record["preperiod"]) == (candidate["period"], candidate["preperiod"]):
                record.update(candidate, outcome=outcome)
                return
        self.seen.append({**candidate, "outcome": outcome})

    @property
    def finished(self) -> bool:
        return self.proven is not None or self.refuted is not None

    @property
    def finishes_at(self) -> int | None:
        """The proof length of the nearest open candidate: the run ends there if it holds."""
        if self.finished or not self.candidates:
            return None
        return min(c["proof_length"] for c in self.candidates)

    @property
    def looks_at(self) -> int | None:
        """Where the next direct search runs (searches run exactly there, so that a repetition is a
        candidate before its proof length, and the run ends at that length)."""
        return None if self.finished or self.claim is not None else self.next_search

    def _values(self, start: int, stop: int) -> np.ndarray:
        assert self.history is not None  # attached before the first value
        values = self.history.values(start, stop)
        if values is None:
            raise InternalError(f"G({start}) ... G({stop - 1}) are no longer held")
        return values

    # -- search ---------------------------------------------------------------------------

    def propose(self, period: int, anchor: int, window: int, heap: int) -> None:
        if self.claim is not None or self.finished:
            return
        if any(period % c["period"] == 0 for c in self.candidates):
            return  # a multiple of an open candidate: nothing new
        preperiod = self._least_preperiod(period, heap - period + 1)
        candidate = self._candidate(period, preperiod, heap + 1)
        log.info(
            "candidate: the %d values ending at G(%d) recur ending at G(%d): period %d, least preperiod "
            "%d; the proof needs G(0) ... G(%d)",
            window,
            anchor,
            heap,
            period,
            preperiod,
            candidate["proof_length"] - 1,
        )
        self.candidates.append(candidate)
        self._note(candidate, "open")

    def _least_preperiod(self, period: int, upper: int) -> int:
        """The least i with G(n + period) = G(n) for i <= n < upper (all values below upper + period held)."""
        last = last_mismatch(self._values, period, 0, upper)
        return 0 if last is None else last + 1

    def _search(self, position: int) -> None:
        """The direct search over G(0) ... G(position-1): a proven period, or candidates to check."""
        self.next_search = position + max(int(position * SEARCH_GROWTH), SEARCH_STEP)
        found = search_periods(self._values, position, self.max_take)
        if found.proven is not None:
            log.info(
                "direct search: G(0) ... G(%d) prove period %d with preperiod %d",
                position - 1,
                found.proven.period,
                found.proven.preperiod,
            )
            self._prove(self._candidate(found.proven.period, found.proven.preperiod, position))
            return
        for repetition in found.candidates:
            if len(self.candidates) >= MAX_CANDIDATES:
                break
            if any(repetition.period % c["period"] == 0 for c in self.candidates):
                continue  # a multiple of an open candidate: nothing new
            log.info(
                "candidate: G(n + %d) = G(n) for %d <= n < %d (direct search); the proof needs G(0) ... G(%d)",
                repetition.period,
                repetition.preperiod,
                position - repetition.period,
                repetition.proof_length - 1,
            )
            self.candidates.append(self._candidate(repetition.period, repetition.preperiod, position))
            self._note(self.candidates[-1], "open")

    # -- checking -------------------------------------------------------------------------

    def accept(self, position: int) -> None:
        for candidate in list(self.candidates):
            if not self._check(candidate, position):
                if self.claim is not None:
                    return
                self.candidates.remove(candidate)
                continue
            if position >= candidate["proof_length"]:
                self._prove(candidate)
                return
        if self.claim is None and (position >= self.next_search or (self.until is not None and position >= self.until)):
            self._search(position)

    def _check(self, candidate: dict, position: int) -> bool:
        """Compare G(m) with G(m - p) for the values proven since the last check; False at a difference."""
        p, i = candidate["period"], candidate["preperiod"]
        start = max(candidate["checked_to"], i + p)
        for lo in range(start, position, BLOCK):
            hi = min(position, lo + BLOCK)
            differ = np.flatnonzero(self._values(lo, hi) != self._values(lo - p, hi - p))
            if len(differ):
                n = lo - p + int(differ[0])
                log.info("candidate period %d fails: G(%d + %d) != G(%d)", p, n, p, n)
                self._note({**candidate, "checked_to": n + p}, "failed")
                if self.claim is not None:
                    later, earlier = int(self._values(n + p, n + p + 1)[0]), int(self._values(n, n + 1)[0])
                    self.refuted = (
                        f"{i} is not a preperiod of period {p}: G(n + {p}) != G(n) at n = {n} "
                        f"(G({n + p}) = {later}, G({n}) = {earlier})"
                    )
                return False
        candidate["checked_to"] = max(candidate["checked_to"], position)
        self._note(candidate, "open")
        return True

    def _prove(self, candidate: dict) -> None:
        """Guy–Smith holds for the candidate: reduce it to the least period and preperiod.

        For a claim, it is proven only if it is already least; else ``refuted`` names the
        shorter period, or the witness G(I - 1 + P) = G(I - 1) that I - 1 is a preperiod too.
        """
        p, i = candidate["period"], candidate["preperiod"]
        least = self._least_period(p, i)
        preperiod = self._least_preperiod(p, i)  # the same for every period of the sequence
        if self.claim is not None and (least, preperiod) != (p, i):
            reasons = []
            if least != p:
                reasons.append(f"the period {p} is not least: {least} is also a period from G({i}) (the least period)")
            if preperiod != i:
                value = int(self._values(i - 1, i)[0])
                reasons.append(
                    f"the preperiod {i} is not least: G({i - 1} + {p}) = G({i - 1}) = {value}, so {i - 1} "
                    f"is a preperiod too (the least is {preperiod})"
                )
            self.refuted = "; ".join(reasons)
            self._note(candidate, "reduced")
            return
        length = proof_length(least, preperiod, self.max_take)
        self.proven = {"period": least, "preperiod": preperiod, "proof_length": length}
        self._note(candidate, "proven" if (least, preperiod) == (p, i) else "reduced")
        if (least, preperiod) != (p, i):
            self._note(self._candidate(least, preperiod, length), "proven")
        self.candidates = []
        log.info(
            "PERIOD PROVEN: period %d, preperiod %d (Guy-Smith, with G(0) ... G(%d))", least, preperiod, length - 1
        )

    def _least_period(self, period: int, preperiod: int) -> int:
        """The least period of a sequence proven to have ``period`` from ``preperiod`` (it divides period)."""
        reduced = True
        while reduced:
            reduced = False
            for r in prime_factors(period):
                q = period // r
                if self._is_period_over_one_period(q, preperiod, period):
                    log.info("period %d from G(%d) is %d times the period %d", period, preperiod, r, q)
                    period, reduced = q, True
                    break
        return period

    def _is_period_over_one_period(self, q: int, start: int, period: int) -> bool:
        """G(n + q) = G(n) for start <= n < start + period (so q is a period from start, as period is)."""
        for lo in range(start, start + period, BLOCK):
            hi = min(start + period, lo + BLOCK)
            if not np.array_equal(self._values(lo, hi), self._values(lo + q, hi + q)):
                return False
        return True

    def reset(self) -> None:
        """Nothing to drop: every comparison was made on proven values."""

    def state(self) -> dict:
        return {
            "candidates": self.candidates,
            "seen": self.seen,
            "proven": self.proven,
            "refuted": self.refuted,
            "next_search": self.next_search,
        }

    def restore(self, state: dict) -> None:
        self.candidates, self.proven, self.refuted = state["candidates"], state["proven"], state["refuted"]
        # absent in checkpoints of octalgen 0.3: the candidates still open are what is known of them
        self.seen = state.get("seen", [{**c, "outcome": "open"} for c in self.candidates])
        self.next_search = state.get("next_search", 0)  # absent in checkpoints of octalgen 0.2
