"""The GPU measurement: values/s of speculation and of proven runs, rounds and work per window, checksum.

:func:`run_benchmark` is what ``octalgen bench --backend cuda`` and
``benchmarks/cuda_bench.py`` call.  Both runs go through the engine exactly as
``octalgen run --backend cuda`` does (exact prefix, kernel plug-in, digests in
C), once with the proofs off (``cuda-speculative``) and once with them on; the
values/s are over the whole run (wall clock), and in steady state: over the
second half of the values (:class:`Stopwatch`; the compile, the exact prefix and
the start-up left out).  The device figures (kernel
seconds from CUDA events, rounds, term marks) come from the plug-in.  A warm-up
run compiles and loads the kernels first.
"""

from __future__ import annotations

import time

import numpy as np

from ..engine.options import EngineOptions
from ..engine.planning import plan_game
from ..engine.run_summary import summarized_run
from ..engine.seams import Consumer
from ..engine.tally import Tally
from ..game import parse_game

__all__ = [
    "KNOWN_CHECKSUMS",
    "WARM_UP",
    "Stopwatch",
    "distribution",
    "histogram_distribution",
    "rounds_per_window",
    "run_benchmark",
    "run_through_engine",
]

#: Agreed FNV-1a-64 checksums of .6 over G(0) ... G(N-1) (shared/README.md).
KNOWN_CHECKSUMS = {(".6", 10**8): "0a4a3e704932696f"}

#: Values of the warm-up run past the kernel's first heap.
WARM_UP = 100_000


def rounds_per_window(advances: np.ndarray, window: int) -> np.ndarray:
    """Rounds the front took to cross each successive stretch of ``window`` positions."""
    fronts = np.cumsum(advances)
    if not len(fronts):
        return np.zeros(0, dtype=np.int64)
    crossed = np.searchsorted(fronts, np.arange(window, fronts[-1] + 1, window))
    return np.diff(np.concatenate([[-1], crossed]))


def distribution(samples: np.ndarray) -> dict:
    """Mean and percentiles of ``samples``."""
    if not len(samples):
        return {}
    q = np.percentile(samples, [0, 10, 50, 90, 99, 100])
    return {
        "count": len(samples),
        "mean": float(np.mean(samples)),
        **{f"p{p}": float(v) for p, v in zip((0, 10, 50, 90, 99, 100), q)},
    }


def histogram_distribution(counts: np.ndarray) -> dict:
    """:func:`distribution` of the samples that ``counts`` counts by value (counts[v]: samples equal to v),
    exactly, without making the samples (numpy's linear percentiles)."""
    counts = np.asarray(counts, dtype=np.int64)
    total = int(counts.sum())
    if not total:
        return {}
    values, cumulative = np.arange(len(counts)), np.cumsum(counts)

    def at(rank: int) -> int:  # the sample of this rank (from 0) in sorted order
        return int(np.searchsorted(cumulative, rank, side="right"))

    result = {"count": total, "mean": float((values * counts).sum() / total)}
    for p in (0, 10, 50, 90, 99, 100):
        position = p / 100 * (total - 1)
        lo = int(np.floor(position))
        hi = min(lo + 1, total - 1)
        result[f"p{p}"] = float(at(lo) + (at(hi) - at(lo)) * (position - lo))
    return result


class Stopwatch(Consumer):
    """A consumer that notes when the values reach ``halfway``: the steady-state rate is the values
    after it over the time they took."""

    name = "stopwatch"

    def __init__(self, halfway: int):
        self.halfway = halfway
        self.reached: tuple[int, float] | None = None  # (position, time) at the first piece past halfway
        self.last: tuple[int, float] | None = None

    def accept(self, first: int, values: np.ndarray) -> None:
        now = (first + len(values), time.perf_counter())
        if self.reached is None and now[0] >= self.halfway:
            self.reached = now
        self.last = now

    def rate(self) -> float | None:
        """Values per second after halfway (None when too few pieces came after it)."""
        if self.reached is None or self.last is None or self.last[0] == self.reached[0]:
            return None
        return (self.last[0] - self.reached[0]) / (self.last[1] - self.reached[1])


def run_through_engine(game, count: int, kernels, verify: bool) -> tuple[float, str, float | None]:
    """G(0) ... G(count-1) through the engine with ``kernels``: (wall seconds, FNV-1a-64 digest,
    steady-state values/s over the second half)."""
    tally, stopwatch = Tally(), Stopwatch(count // 2)
    began = time.perf_counter()
    _, summary = summarized_run(game, EngineOptions(until=count, verify=verify), tally, (stopwatch,), kernels=kernels)
    return time.perf_counter() - began, summary.statistics.digest, stopwatch.rate()


def run_benchmark(
    game: str = ".6",
    count: int = 10**8,
    window: int | None = None,
    options=None,
    verify: bool = True,
    make_kernels=None,
) -> dict:
    """Compute G(0) ... G(count-1) of ``game`` speculatively and proven, and return the figures.

    ``make_kernels()`` makes a fresh plug-in for each run (default:
    :class:`~octalgen.cuda.plugin.CudaKernels` with ``window`` and ``options``;
    :class:`~octalgen.cuda.plugin.TwinKernels` in tests).

    Returns
    -------
    dict
        ``speculative_values_per_s`` and ``verified_values_per_s`` (whole runs, wall
        clock), the same ``..._steady_values_per_s`` over the second half of the values,
        ``kernel_values_per_s`` (final positions over the round kernels' device
        time), the rounds, microseconds per round, the advance per round and rounds per
        window (distributions), ``recomputed_per_value`` (term marks per value, in units of
        one position's terms), the verification's device seconds and scan steps, the heaps
        the CPU settled, and the checksum with whether it matches the agreed one.
    """
    octal = parse_game(game)
    if make_kernels is None:
        from . import plugin

        def make_kernels():
            return plugin.CudaKernels(window, options)

    warm = make_kernels()
    began = time.perf_counter()
    plan = plan_game(octal, required=True)[0]
    speculator = warm(plan)[0].speculator
    run_through_engine(octal, min(count, plan.start + WARM_UP), warm, verify=True)
    figures: dict = {
        "game": octal.code,
        "count": count,
        "window": warm.window,
        "term_groups": warm.options.term_groups,
        "cache_final": warm.options.cache_final,
        "compile_and_warmup_seconds": time.perf_counter() - began,
        "resource_usage": getattr(speculator, "resource_usage", ""),
    }

    kernels = make_kernels()
    seconds, digest, steady = run_through_engine(octal, count, kernels, verify=False)
    rounds, _ = kernels.figures()
    figures["speculative_seconds"] = seconds
    figures["speculative_values_per_s"] = count / seconds
    figures["speculative_steady_values_per_s"] = steady
    figures["speculative_checksum"] = digest
    figures["kernel_seconds"] = rounds.seconds
    figures["kernel_values_per_s"] = rounds.values / rounds.seconds if rounds.seconds else None
    figures["rounds"] = rounds.rounds
    figures["empty_rounds"] = rounds.empty_rounds
    figures["microseconds_per_round"] = 1e6 * rounds.seconds / max(rounds.rounds + rounds.empty_rounds, 1)
    figures["advance_per_round"] = histogram_distribution(rounds.advance_counts)
    figures["rounds_per_window"] = histogram_distribution(rounds.window_counts)
    figures["recomputed_per_value"] = rounds.recomputed_per_value
    figures["checksum"] = digest
    if verify:
        kernels = make_kernels()
        seconds, digest, steady = run_through_engine(octal, count, kernels, verify=True)
        _, verification = kernels.figures()
        figures["verified_seconds"] = seconds
        figures["verified_values_per_s"] = count / seconds
        figures["verified_steady_values_per_s"] = steady
        figures["verification_seconds"] = verification.seconds
        figures["scan_steps_mean"] = verification.scan_steps / max(verification.values, 1)
        figures["scan_steps_max"] = verification.scan_steps_max
        figures["settled_on_cpu"] = list(verification.settled_on_cpu)
        figures["checksum"] = digest
    known = KNOWN_CHECKSUMS.get((octal.code, count))
    figures["checksum_known"] = known
    figures["checksum_ok"] = (
        known in (None, figures["checksum"]) and figures["checksum"] == figures["speculative_checksum"]
    )
    return figures
