"""``octalgen bench CODE``: how fast the generated C is, against baselines measured in the same run.

For N heaps from the kernel's first heap it times the speculative kernel with one thread and
with T, the naive C baseline (Grossman's Figure 3 as a loop over the term table, same flags),
the verifier in one process, and the whole exact backend with T threads and T verifying
processes; the pure-Python reference is timed on its first, smaller count.  It also checks
that all of them agree, so a fast wrong kernel cannot pass.  Tests never time anything:
speed is measured here.
"""

from __future__ import annotations

import os
import time

import numpy as np

from ..cpu.kernel import NaiveKernel, SpeculativeKernel, default_threads
from ..cpu.pipeline import exact_values, starting_plan
from ..cpu.verify import Verifier
from ..errors import ComputationError, InputError
from ..reference import exact_values as reference_values
from .arguments import add_game, count_type

DEFAULT_COUNT = 1 << 22
REFERENCE_COUNT = 20_000


def register(sub) -> None:
    parser = sub.add_parser("bench", help="time the generated C against the naive C loop and the Python reference")
    add_game(parser)
    parser.add_argument("-n", "--count", type=count_type, default=DEFAULT_COUNT, metavar="N",
                        help=f"heaps to compute from the kernel's first heap (default {DEFAULT_COUNT})")
    parser.add_argument("--threads", type=count_type, metavar="T",
                        help="threads and verifying processes for the multi-threaded figures (default: all cores)")
    parser.set_defaults(run=run)


def _timed(function, *args, **kwargs):
    began = time.perf_counter()
    result = function(*args, **kwargs)
    return result, time.perf_counter() - began


def _load() -> str:
    try:
        return "%.2f" % os.getloadavg()[0]
    except OSError:
        return "unknown"


def run(args) -> int:
    game, count = args.game, args.count
    threads = args.threads or default_threads()
    if count < 1 or threads < 1:
        raise InputError("-n and --threads must be at least 1")
    plan, prefix = starting_plan(game)
    if plan is None:
        raise InputError(f"{game.code} has no speculative kernel (no sparse space): nothing to bench")
    threads = min(threads, SpeculativeKernel(plan).max_threads)
    start, window = plan.start, plan.window
    print(f"octalgen bench {game.code}: N = {count} heaps from G({start}); kernel of {len(plan.terms)} terms, "
          f"{plan.encoding.kind} storage; {os.cpu_count()} cores, load average {_load()} at start")

    def buffer():
        codes = np.empty(window + count, dtype=SpeculativeKernel(plan).dtype)
        codes[:window] = plan.encoding.encode_array(prefix[start - window:])
        return codes

    kernel, naive, verifier = SpeculativeKernel(plan), NaiveKernel(plan), Verifier(plan)
    kernel.module, naive.module, verifier.module  # compile (or load) before any clock starts
    one = buffer()
    _, one_s = _timed(kernel.fill, one, start, 1)
    many = buffer()
    _, many_s = _timed(kernel.fill, many, start, threads)
    fell_back = kernel.fell_back_at
    plain = buffer()
    _, naive_s = _timed(naive.fill, plain, start)
    verdict, verify_s = _timed(verifier.verify, one, start - window, prefix, start, start + count)
    chunks, exact_s = _timed(lambda: list(exact_values(game, start + count, threads=threads)))
    reference, reference_s = _timed(reference_values, game, min(REFERENCE_COUNT, start + count))

    exact = np.concatenate(chunks)
    decoded = plan.encoding.decode_array(one[window:])
    if not (np.array_equal(one, many) and np.array_equal(one, plain) and verdict.proven
            and np.array_equal(exact[start:], decoded) and np.array_equal(exact[: len(reference)], reference)):
        raise ComputationError(f"bench: the kernels, verifier and reference disagree ({verdict}); please report")

    rate = {name: count / seconds for name, seconds in
            (("one", one_s), ("many", many_s), ("naive", naive_s), ("verify", verify_s))}
    exact_rate = (start + count) / exact_s
    reference_rate = len(reference) / reference_s
    note = f" (fell back to one thread at G({fell_back}): cores busy)" if fell_back is not None else ""
    rows = [
        ("speculative kernel, 1 thread", rate["one"], f"{rate['one'] / rate['naive']:.2f}x naive C"),
        (f"speculative kernel, {threads} threads", rate["many"], f"{rate['many'] / rate['one']:.2f}x one thread{note}"),
        ("naive C (loop over the term table)", rate["naive"], "the baseline, same compiler flags"),
        ("verifier, 1 process", rate["verify"], f"per core; {verdict.options_scanned / count:.0f} options "
                                                 "scanned per heap"),
        (f"exact --backend c, {threads} threads", exact_rate, f"G(0) ... G({start + count - 1}): exact prefix, "
                                                              f"kernel, {threads} verifying processes"),
        (f"Python reference, first {len(reference)}", reference_rate,
         f"kernel {rate['one'] / reference_rate:.0f}x, exact C {exact_rate / reference_rate:.0f}x faster"),
    ]
    for name, value, comment in rows:
        print(f"  {name:<40} {value / 1e6:9.3f} M values/s   {comment}")
    print(f"all agree (kernel 1 and {threads} threads, naive, verifier, exact backend, reference); "
          f"load average {_load()} at end")
    return 0
