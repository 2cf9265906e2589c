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

Every claim rests on these explicit comparisons, never on the hash, and none relies on a
kernel: games without a sparse space are searched the same way.  Given a claim (``--period P
--preperiod I``) the same comparisons check it from the start and name the first n where
G(n + P) != G(n), or where I or P is not least.
"""

from __future__ import annotations

import logging

import numpy as np

from ..errors import ComputationError
from ..periodicity import prime_factors, proof_length

log = logging.getLogger("octalgen")

#: Values compared per read when scanning back and forth.
BLOCK = 1 << 21


class ExactProof:
    """Candidates checked value by value against the stored history (see the module docstring).

    Parameters
    ----------
    max_take : int
        t of the Guy–Smith theorem (the game's largest move).
    claim : (int, int), optional
        ``(P, I)`` to check instead of searching.

    Attributes
    ----------
    candidates : list of dict
        Open candidates: ``{"period", "preperiod", "checked_to", "proof_length"}``.
    proven : dict or None
        ``{"period", "preperiod", "proof_length"}``: least period and preperiod, proven.
    refuted : str or None
        For a claim: why it does not hold (the first n where it fails).
    """

    name = "exact"

    def __init__(self, max_take: int, claim: tuple[int, int] | None = None):
        self.max_take = max_take
        self.claim = claim
        self.history = None
        self.candidates: list[dict] = []
        self.proven = None
        self.refuted = None
        if claim is not None:
            period, preperiod = claim
            self.candidates.append(self._candidate(period, preperiod, 0))

    def attach(self, engine) -> None:
        self.history = engine.history
        if not self.history.keep_all:
            raise ComputationError("the exact period proof needs a history that keeps every value")

    def _candidate(self, period: int, preperiod: int, checked_to: int) -> dict:
        return {"period": period, "preperiod": preperiod, "checked_to": checked_to,
                "proof_length": proof_length(period, preperiod, self.max_take)}

    @property
    def finished(self) -> bool:
        return self.proven is not None or self.refuted is not None

    def _values(self, start: int, stop: int) -> np.ndarray:
        values = self.history.values(start, stop)
        if values is None:
            raise ComputationError(f"G({start}) ... G({stop - 1}) are no longer held: a bug, please report it")
        return values

    # -- search ---------------------------------------------------------------------------

    def propose(self, period: int, anchor: int, window: int, heap: int) -> None:
        if self.claim is not None or self.finished:
            return
        if any(period % c["period"] == 0 for c in self.candidates):
            return  # a multiple of an open candidate: nothing new
        preperiod = self._least_preperiod(period, heap - period + 1)
        candidate = self._candidate(period, preperiod, heap + 1)
        log.info("candidate: the %d values ending at G(%d) recur ending at G(%d): period %d, least preperiod "
                 "%d; the proof needs G(0) ... G(%d)", window, anchor, heap, period, preperiod,
                 candidate["proof_length"] - 1)
        self.candidates.append(candidate)

    def _least_preperiod(self, period: int, upper: int) -> int:
        """The least i with G(n + period) = G(n) for i <= n < upper (all values below upper + period held)."""
        hi = upper
        while hi > 0:
            lo = max(0, hi - BLOCK)
            differ = np.flatnonzero(self._values(lo, hi) != self._values(lo + period, hi + period))
            if len(differ):
                return lo + int(differ[-1]) + 1
            hi = lo
        return 0

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

    def _check(self, candidate: dict, position: int) -> bool:
        """Compare G(m) with G(m - p) for the values proven since the last check; False at a difference."""
        p, i = candidate["period"], candidate["preperiod"]
        start = max(candidate["checked_to"], i + p)
        if self.claim is not None and i > 0 and candidate["checked_to"] <= i - 1 + p < position:
            before, after = int(self._values(i - 1, i)[0]), int(self._values(i - 1 + p, i + p)[0])
            if before == after:
                self.refuted = f"the preperiod {i} is not least: G({i - 1} + {p}) = G({i - 1}) = {before}"
                return False
        for lo in range(start, position, BLOCK):
            hi = min(position, lo + BLOCK)
            differ = np.flatnonzero(self._values(lo, hi) != self._values(lo - p, hi - p))
            if len(differ):
                n = lo - p + int(differ[0])
                log.info("candidate period %d fails: G(%d + %d) != G(%d)", p, n, p, n)
                if self.claim is not None:
                    later, earlier = int(self._values(n + p, n + p + 1)[0]), int(self._values(n, n + 1)[0])
                    self.refuted = f"G(n + {p}) != G(n) at n = {n}: G({n + p}) = {later}, G({n}) = {earlier}"
                return False
        candidate["checked_to"] = max(candidate["checked_to"], position)
        return True

    def _prove(self, candidate: dict) -> None:
        """Guy–Smith holds for the candidate: reduce it to the least period and preperiod."""
        p, i = candidate["period"], candidate["preperiod"]
        reduced = True
        while reduced:
            reduced = False
            for r in prime_factors(p):
                q = p // r
                if self._is_period_over_one_period(q, i, p):
                    if self.claim is not None:
                        self.refuted = f"the period {p} is not least: {q} is also a period from G({i})"
                        return
                    log.info("period %d from G(%d) is %d times the period %d", p, i, r, q)
                    p, i, reduced = q, self._least_preperiod(q, i), True
                    break
        self.proven = {"period": p, "preperiod": i, "proof_length": proof_length(p, i, self.max_take)}
        self.candidates = []
        log.info("PERIOD PROVEN: period %d, preperiod %d (Guy-Smith, with G(0) ... G(%d))", p, i,
                    self.proven["proof_length"] - 1)

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
        return {"candidates": self.candidates, "proven": self.proven, "refuted": self.refuted}

    def restore(self, state: dict) -> None:
        self.candidates, self.proven, self.refuted = state["candidates"], state["proven"], state["refuted"]
