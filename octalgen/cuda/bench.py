"""The GPU measurement: values/s of speculation and verification, checksum, rounds per window.

:func:`run_benchmark` is what ``octalgen bench --backend cuda`` and
``benchmarks/cuda_bench.py`` call.  It needs a GPU; all times are CUDA-event
times of the kernels (compilation and the CPU prefix are reported apart).
"""

from __future__ import annotations

import logging
import time
from functools import lru_cache

import numpy as np

from ..checksum import Fnv1a64
from ..rare import rare_table
from ..reference import exact_values
from .driver import prove
from .plan import CudaOptions, make_cuda_plan

log = logging.getLogger("octalgen")

#: Agreed FNV-1a-64 checksums of .6 over G(0) ... G(N-1) (shared/README.md).
KNOWN_CHECKSUMS = {(".6", 10**8): "454292924ee5b56d"}


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
    return {"count": int(len(samples)), "mean": float(np.mean(samples)),
            **{f"p{p}": float(v) for p, v in zip((0, 10, 50, 90, 99, 100), q)}}


@lru_cache(maxsize=4)
def _exact_prefix(game: str, count: int) -> np.ndarray:
    # The reference, not the backend registry: the measurement depends on no other backend.
    return exact_values(game, count, mask=rare_table(game).mask)


def run_benchmark(game: str = ".6", count: int = 10**8, window: int | None = None,
                  options: CudaOptions | None = None, verify: bool = True, checksum: bool = True,
                  engine=None) -> dict:
    """Speculate (and verify) G(0) ... G(count-1) of ``game`` on the GPU and return the figures.

    ``engine`` replaces the GPU engine (:class:`~octalgen.cuda.driver.TwinEngine` in tests).

    Returns
    -------
    dict
        ``speculative_values_per_s`` and ``verified_values_per_s`` (kernel time
        over the positions the GPU computed), ``seconds`` per stage, the
        rounds, the advance per round and rounds per window (distributions),
        the checksum and whether it matches the agreed one.
    """
    if engine is None:
        from .runtime import CudaEngine

        engine = CudaEngine(window=window, options=options or CudaOptions())
    table = rare_table(game)
    figures: dict = {"game": game, "count": count, "window": engine.window,
                     "term_groups": engine.options.term_groups, "term_loop": engine.options.term_loop}

    began = time.perf_counter()
    known = _exact_prefix(game, make_cuda_plan(table).start)
    commons = known[np.bitwise_count(known & table.mask) % 2 == 1]
    plan = make_cuda_plan(table, max_common=int(commons.max()), options=engine.options)
    figures["cpu_prefix_seconds"] = time.perf_counter() - began
    prefix = plan.kernel.encoding.encode_array(known[: plan.start])

    began = time.perf_counter()
    engine.speculate(plan, prefix, min(count, plan.start + 100_000))  # compile, load, warm up
    figures["compile_and_warmup_seconds"] = time.perf_counter() - began
    figures["resource_usage"] = engine.report.get("resource_usage", "")

    codes = engine.speculate(plan, prefix, count)
    spec = engine.report["speculation"]
    computed = count - plan.start
    figures["speculation_seconds"] = spec["seconds"]
    figures["speculative_values_per_s"] = computed / spec["seconds"]
    figures["rounds"] = int(len(spec["advances"]))
    # Kernel time per launched round (the graph replays past convergence are no-op rounds: a floor).
    figures["microseconds_per_round"] = 1e6 * spec["seconds"] / max(spec.get("rounds_launched", figures["rounds"]), 1)
    figures["advance_per_round"] = distribution(spec["advances"])
    figures["rounds_per_window"] = distribution(rounds_per_window(spec["advances"], engine.window))
    if verify:
        # The exact loop's proof: GPU launches, and the CPU for positions whose pair scan gave up.
        proof = prove(engine, plan, table, known, codes, count)
        gpu_seconds = sum(launch["seconds"] for launch in proof.launches)
        figures["first_unproven"] = proof.first_wrong
        figures["settled_on_cpu"] = proof.settled_on_cpu
        figures["verification_seconds"] = gpu_seconds
        figures["cpu_settle_seconds"] = proof.cpu_seconds
        figures["scan_steps_mean"] = proof.launches[0]["scan_steps_mean"]
        figures["scan_steps_max"] = max(launch["scan_steps_max"] for launch in proof.launches)
        figures["verified_values_per_s"] = computed / (spec["seconds"] + gpu_seconds + proof.cpu_seconds)
    if checksum:
        values = plan.kernel.encoding.decode_array(codes)
        values[: plan.start] = known[: plan.start]
        digest = Fnv1a64()
        for lo in range(0, count, 1 << 22):
            digest.update(values[lo : lo + (1 << 22)])
        digest = digest.hexdigest()
        figures["checksum"] = digest
        figures["checksum_ok"] = KNOWN_CHECKSUMS.get((game, count)) in (None, digest)
        figures["checksum_known"] = KNOWN_CHECKSUMS.get((game, count))
    return figures
