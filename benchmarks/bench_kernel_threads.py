"""How the speculative kernel scales with threads, and what the speculative mex is worth.

    python benchmarks/bench_kernel_threads.py                  # threads 1 ... the cores here
    python benchmarks/bench_kernel_threads.py --threads 1,2,4  # more threads than cores: oversubscribed
    python benchmarks/bench_kernel_threads.py --quick          # fewer heaps per row

Grossman (section 3.3): thread j computes the heaps n = j (mod m) and hands the newest values on
in a baton; each thread marks what it can and takes the mex *before* its baton arrives, so that
after it only the few late terms are marked and the guess checked.  The time per heap is then
bounded by the work divided by the threads, or by the critical path from one baton to the next
(the baton's trip between cores, the late terms, and, without the speculation, the mex).

Three tables, every kernel checked against the one-thread values:

1. **Scaling**: the ``.6`` kernel with 1, 2, ... threads (values/s, wall clock, the median of
   ``--rounds`` alternating rounds), ratio to one thread.  Only as many threads as this process
   has cores are measured unless ``--threads`` asks for more (the table then says so).
2. **Speculative mex, speed**: on 2 threads, the production kernel against the variant whose mex
   waits for the baton (``kernel_variant_unit(..., speculative_mex=False)``, built only here), for
   ``.6`` (1584 terms: at 2 threads the work per heap outweighs the critical path) and ``.16``
   (53 terms: the critical path is all there is).
3. **Speculative mex, critical path**: both variants again, built with a clock
   (``baton_clock=True``: the time-stamp counter on x86) of each heap's critical path, from its
   baton's arrival to the next baton's departure: median and mean of the fastest 90% in ns, and how
   often a late term marked the guess so that the mex had to be taken after the baton after all
   (the speculative kernel's only mex on the critical path).  Medians hold on a busy machine,
   where the speeds of table 2 measure mostly how often the two threads are on cores at once.

Threads are patient (no fall-back to one thread when the machine is busy), and a round stops
after ``ROUND_SECONDS`` with the heaps it did, so that every row ends within a minute.  The load
average is printed before and after.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from functools import cached_property

import numpy as np

from octalgen.cpu.generate import kernel_variant_unit
from octalgen.cpu.kernel import SpeculativeKernel, default_threads
from octalgen.engine.plans import plan_game
from octalgen.game import parse_game

#: Heaps per round (``--quick``: a quarter): about a second for one thread on an idle core.
HEAPS = {".6": 1 << 21, ".16": 1 << 25}
#: Heaps per kernel call; a round is as many calls as fit in ROUND_SECONDS.
PIECE = 1 << 16
ROUND_SECONDS = 5.0
CLOCK_TICKS, CLOCK_BUCKETS = 4, 2048  # as in templates/c/bench/kernel.c.j2


class VariantKernel(SpeculativeKernel):
    """A benchmark build of the kernel (see :func:`~octalgen.cpu.generate.kernel_variant_unit`)."""

    def __init__(self, plan, speculative_mex: bool = True, baton_clock: bool = False):
        super().__init__(plan)
        self.variant = {"speculative_mex": speculative_mex, "baton_clock": baton_clock}

    @cached_property
    def unit(self):
        return kernel_variant_unit(self.plan, self.max_threads, **self.variant)

    def clock(self) -> np.ndarray:
        """The critical-path clock since the last call (clocked builds only)."""
        counts = np.zeros(CLOCK_BUCKETS + 4, dtype=np.uint64)
        self.module.lib.octalgen_baton_clock(self.module.ffi.from_buffer("uint64_t[]", counts))
        return counts


class Game:
    """A game's plan, the window its kernel starts from, and the one-thread values to check against."""

    def __init__(self, code: str, heaps: int):
        self.plan, prefix = plan_game(parse_game(code), required=True)
        self.code, self.heaps = code, heaps
        plan = self.plan
        self.window = plan.encoding.encode_array(prefix[plan.start - plan.window:]).astype(
            SpeculativeKernel(plan).dtype)
        self.truth = SpeculativeKernel(plan).run(self.window, plan.start, heaps)

    def round(self, kernel: SpeculativeKernel, threads: int) -> float:
        """Values/s of one round: PIECE heaps per call until all heaps or ROUND_SECONDS."""
        window, done, began = self.window, 0, time.perf_counter()
        while done < self.heaps and time.perf_counter() - began < ROUND_SECONDS:
            count = min(PIECE, self.heaps - done)
            values = kernel.run(window, self.plan.start + done, count, threads, patient=True)
            if not np.array_equal(values, self.truth[done: done + count]):
                raise SystemExit(f"{self.code}: {threads} threads disagree with one thread near heap "
                                 f"{self.plan.start + done}")
            window = np.concatenate([window, values])[-self.plan.window:]
            done += count
        return done / (time.perf_counter() - began)


def median_rates(game: Game, runs, rounds: int) -> list[float]:
    """Median values/s of each (kernel, threads) in ``runs``, measured in alternating rounds."""
    rates = [[] for _ in runs]
    for _ in range(rounds):
        for (kernel, threads), found in zip(runs, rates):
            found.append(game.round(kernel, threads))
    return [statistics.median(found) for found in rates]


def load() -> str:
    return "%.2f" % os.getloadavg()[0]


def scaling(game: Game, threads: list[int], rounds: int, cores: int) -> None:
    kernel = SpeculativeKernel(game.plan)
    kernel.module  # compile (or load) before any clock starts
    rates = median_rates(game, [(kernel, t) for t in threads], rounds)
    print(f"\n1. scaling: the {game.code} kernel ({len(game.plan.terms)} terms), {game.heaps} heaps a round, "
          f"median of {rounds}")
    for t, rate in zip(threads, rates):
        note = "" if t <= cores else f"   (more threads than the {cores} cores: oversubscribed)"
        print(f"  {t:>3} thread{'s' if t > 1 else ' '}  {rate / 1e6:8.3f} M values/s   "
              f"{rate / rates[0]:5.2f}x one thread   {rate / rates[0] / t:5.0%} per thread{note}")


def mex_speed(game: Game, rounds: int) -> None:
    production, variant = SpeculativeKernel(game.plan), VariantKernel(game.plan, speculative_mex=False)
    production.module, variant.module
    one, spec, standard = median_rates(game, [(production, 1), (production, 2), (variant, 2)], rounds)
    print(f"  {game.code:<4} ({len(game.plan.terms):>4} terms)  1 thread {one / 1e6:7.3f}   "
          f"2 threads: speculative mex {spec / 1e6:7.3f}, mex after the baton {standard / 1e6:7.3f} "
          f"M values/s   speculative {spec / standard:.2f}x the other, {spec / one:.2f}x one thread")


def critical_path(game: Game, rounds: int) -> None:
    """The clocked critical path on 2 threads, speculative mex against the mex after the baton.

    The clock steps in about 10 ns in a virtual machine: the mean of the fastest 90% (whose
    quantisation errors average out, and which leaves out heaps whose thread lost its core)
    resolves finer than the median.
    """
    kernels = {speculative: VariantKernel(game.plan, speculative_mex=speculative, baton_clock=True)
               for speculative in (True, False)}
    counts = {speculative: np.zeros(CLOCK_BUCKETS + 4, dtype=np.uint64) for speculative in kernels}
    for _ in range(rounds):
        for speculative, kernel in kernels.items():
            kernel.clock()  # clear
            game.round(kernel, 2)
            counts[speculative] += kernel.clock()
    figures = []
    for speculative, found in counts.items():
        heaps, ticks, ns = (int(c) for c in found[CLOCK_BUCKETS + 1:])
        bucket_ns = CLOCK_TICKS * ns / ticks
        cumulative = np.cumsum(found[:CLOCK_BUCKETS]).astype(float)
        middle, last = (int(np.searchsorted(cumulative, q * heaps)) for q in (0.5, 0.9))
        weights = found[: last + 1].astype(float)
        weights[-1] -= cumulative[last] - 0.9 * heaps  # exactly the fastest 90%
        fastest = float(np.dot(weights, np.arange(last + 1) + 0.5) / weights.sum() * bucket_ns)
        again = f" (guess taken again at {found[CLOCK_BUCKETS] / heaps:.2%} of heaps)" if speculative else ""
        figures.append(f"{'speculative mex' if speculative else 'mex after the baton'}: median "
                       f"{(middle + 0.5) * bucket_ns:4.0f} ns, fastest 90% {fastest:5.1f} ns on average{again}")
    print(f"  {game.code:<4} ({len(game.plan.terms):>4} terms)  " + ";  ".join(figures))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", help="thread counts for the scaling table, e.g. 1,2,4 (default: 1 ... cores)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per row (default 3)")
    parser.add_argument("--quick", action="store_true", help="a quarter of the heaps per round")
    args = parser.parse_args()
    cores = default_threads()
    threads = [int(t) for t in args.threads.split(",")] if args.threads else list(range(1, cores + 1))
    scale = 4 if args.quick else 1
    print(f"bench_kernel_threads: {cores} cores for this process, load average {load()} at start")
    officers = Game(".6", HEAPS[".6"] // scale)
    scaling(officers, threads, args.rounds, cores)
    small = Game(".16", HEAPS[".16"] // scale)
    print(f"\n2. speculative mex against the mex after the baton: values/s on 2 threads"
          f"{'' if cores >= 2 else ' (one core here: oversubscribed)'}, median of {args.rounds}")
    for game in (officers, small):
        mex_speed(game, args.rounds)
    print("\n3. critical path on 2 threads: from a baton's arrival to the next one's departure, per heap")
    for game in (officers, small):
        critical_path(game, args.rounds)
    print(f"load average {load()} at end")


if __name__ == "__main__":
    main()
