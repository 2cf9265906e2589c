"""The exact loop of the CUDA backends: prefix, speculate, verify, extend the table on a failure.

An *engine* does the two heavy steps, on the GPU (:class:`~octalgen.cuda.runtime.CudaEngine`)
or in numpy (:class:`TwinEngine`); this module decides everything else, the
same way for both, so CI runs the GPU backend's control flow with the twin:

1. G(0) ... G(plan.start - 1) exactly on the CPU (the fastest exact CPU
   backend; they are few).  If they hold a rare value the table lacks, the
   table is rebuilt from them and the plan made again.
2. The engine speculates every position up to ``end`` (the fixed point).
3. The engine proves every speculated position.  If position p fails, every
   value below p is exact and G(p) is computed on the CPU.  If it is the
   speculated value (the GPU's pair scan gave up), verification goes on after
   p; otherwise it is a new rare value: the table gains it, the kernels are
   planned (and compiled) again, and the loop goes on from p + 1.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from ..errors import ComputationError
from ..game import parse_game
from ..rare import RareTable, is_rare, rare_table
from ..reference import ExactSolver
from . import twin
from .plan import CudaOptions, CudaPlan, make_cuda_plan

log = logging.getLogger("octalgen")


class Engine(Protocol):
    """The two heavy steps of the loop."""

    def speculate(self, plan: CudaPlan, prefix: np.ndarray, end: int) -> np.ndarray:
        """Codes of the speculative sequence below ``end`` (``prefix`` holds the exact codes below plan.start)."""

    def verify(self, plan: CudaPlan, codes: np.ndarray, lo: int, hi: int) -> int | None:
        """The first position in ``[lo, hi)`` whose code is not proven, or None."""


@dataclass
class TwinEngine:
    """The numpy twin as an engine (small sizes only: it is for tests and measurements).

    Fills :attr:`report` like the GPU engine, with wall-clock seconds.
    """

    window: int = 1024
    options: CudaOptions = field(default_factory=CudaOptions)
    report: dict = field(default_factory=dict)

    def speculate(self, plan, prefix, end):
        began = time.perf_counter()
        run = twin.FixedPoint(plan, prefix, end, self.window)
        codes = run.run()
        self.report["speculation"] = {"values": end - plan.start, "seconds": time.perf_counter() - began,
                                      "window": self.window, "advances": run.advances()}
        return codes

    def verify(self, plan, codes, lo, hi):
        began = time.perf_counter()
        verdict = twin.verify(plan, codes, lo, hi)
        steps = verdict.scan_steps
        self.report["verification"] = {"values": hi - lo, "seconds": time.perf_counter() - began,
                                       "scan_steps_mean": float(steps.mean()) if len(steps) else 0.0,
                                       "scan_steps_max": int(steps.max()) if len(steps) else 0}
        return verdict.first_bad


def exact_cpu_values(game, count: int, table: RareTable, known=None) -> np.ndarray:
    """G(0) ... G(count-1) on the CPU, continuing from ``known`` exact values when given.

    From scratch this asks the fastest available exact backend that is not a
    CUDA one (the C backend where it is built, else the reference).
    """
    if known is not None and len(known):
        solver = ExactSolver(table.game, mask=table.mask, values=known)
        return solver.extend(count).copy()
    from ..backends import backends, compute_values

    cpu = [b for b in backends().values() if b.exact and not b.name.startswith("cuda") and b.unavailable() is None]
    name = max(cpu, key=lambda b: b.speed_rank).name
    return compute_values(table.game, 0, count, backend=name, table=table)


def compute(game, end: int, engine: Engine, table: RareTable | None = None, exact: bool = True,
            options: CudaOptions | None = None) -> np.ndarray:
    """G(0) ... G(end-1) through ``engine``: proven when ``exact``, else speculative past the plan's start.

    Raises
    ------
    InputError
        When the game has no u8 speculative kernel (see :func:`make_cuda_plan`).
    ComputationError
        When a value outgrows 8-bit storage.
    """
    game = parse_game(game)
    table = table or rare_table(game)
    known = np.zeros(0, dtype=np.int64)
    while True:
        start = make_cuda_plan(table, options=options).start
        if len(known) < min(start, end):
            known = exact_cpu_values(game, min(start, end), table, known)
        if end <= start:
            return known[:end]
        checked = _check_prefix(table, known)
        if checked is not table:
            table = checked
            continue  # the prefix held rare values the table lacked: plan again, further out
        commons = known[~(np.bitwise_count(known & table.mask) % 2 == 0)]
        plan = make_cuda_plan(table, max_common=int(commons.max()) if len(commons) else None, options=options)
        codes = _speculate(engine, plan, known, end)
        if not exact:
            return _decode(plan, known, codes)
        proof = prove(engine, plan, table, known, codes, end)
        if proof.first_wrong is None:
            return _decode(plan, known, codes)
        bad = proof.first_wrong
        known, value = proof.values, int(proof.values[bad])
        if not is_rare(value, table.mask):
            raise ComputationError(f"{game.code}: G({bad}) = {value} is common but not the speculated value (a bug)")
        log.info("new rare value G(%d) = %d: extending the rare table and planning again", bad, value)
        table = table.with_entry(bad, value, exact_to=bad + 1)

@dataclass
class Proof:
    """What :func:`prove` found.

    Attributes
    ----------
    first_wrong : int or None
        The first position whose speculated value is wrong (a new rare value), or None.
    values : numpy.ndarray or None
        With ``first_wrong``: the exact values G(0) ... G(first_wrong).
    settled_on_cpu : list of int
        Positions whose pair scan the engine gave up on, proven on the CPU instead.
    launches : list of dict
        The engine's ``report["verification"]`` of each of its verify calls.
    cpu_seconds : float
        Wall-clock time of the CPU's part.
    """

    first_wrong: int | None
    values: np.ndarray | None = None
    settled_on_cpu: list[int] = field(default_factory=list)
    launches: list[dict] = field(default_factory=list)
    cpu_seconds: float = 0.0


def prove(engine: Engine, plan: CudaPlan, table: RareTable, known: np.ndarray, codes: np.ndarray,
          end: int) -> Proof:
    """Prove the speculated ``codes`` from ``plan.start`` up to ``end`` (``known``: the exact prefix).

    The engine proves positions in bulk; where it stops, every value before that
    position is exact, so the CPU computes that one value from them: the speculated
    value (the engine's pair scan gave up: proving goes on after it) or a new rare value.
    """
    proof = Proof(None)
    lo = plan.start
    while (bad := engine.verify(plan, codes, lo, end)) is not None:
        proof.launches.append(engine.report["verification"])
        began = time.perf_counter()
        values = exact_cpu_values(table.game, bad + 1, table, _decode(plan, known, codes[:bad]))
        proof.cpu_seconds += time.perf_counter() - began
        if values[bad] != plan.kernel.encoding.decode(int(codes[bad])):
            proof.first_wrong, proof.values = bad, values
            return proof
        log.info("the GPU pair scan gave up at G(%d); proven on the CPU", bad)
        proof.settled_on_cpu.append(bad)
        lo = bad + 1
    proof.launches.append(engine.report["verification"])
    return proof


def _check_prefix(table: RareTable, known: np.ndarray) -> RareTable:
    """The table, or one rebuilt from the exact prefix when it holds rare values the table lacks."""
    rare = np.flatnonzero(np.bitwise_count(known & table.mask) % 2 == 0)
    listed = [p for p in table.positions if p < len(known)]
    if np.array_equal(rare, listed):
        return table
    log.info("the exact prefix has rare values the table lacks; rebuilding the table from it")
    return RareTable.from_values(table.game, known, mask=table.mask)


def _speculate(engine: Engine, plan: CudaPlan, known: np.ndarray, end: int) -> np.ndarray:
    prefix = plan.kernel.encoding.encode_array(known[: plan.start])
    try:
        return engine.speculate(plan, prefix, end)
    except OverflowError as exc:
        raise ComputationError(
            f"{plan.game.code}: G({exc.args[0]}) is 512 or more and does not fit the CUDA kernels' "
            "8-bit storage; use the C backend"
        ) from None


def _decode(plan: CudaPlan, known: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Values: the exact prefix as computed, decoded codes (common values) after it."""
    values = plan.kernel.encoding.decode_array(codes)
    values[: len(known)] = known[: len(values)]
    return values
