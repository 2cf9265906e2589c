"""How the speculative kernel scales with threads: this tree's block kernel against c62a57f's.

    python benchmarks/bench_kernel_threads.py                      # .6, threads 1,2, both kernels
    python benchmarks/bench_kernel_threads.py --baseline 7cd030a   # against another commit's kernel
    python benchmarks/bench_kernel_threads.py --threads 1,2,4,8    # more threads than cores: oversubscribed
    python benchmarks/bench_kernel_threads.py --blocks 64,128,256  # this tree's kernel at other block lengths
    python benchmarks/bench_kernel_threads.py --clock              # and its critical path per heap

c62a57f's kernel hands every heap to the next thread in a baton (one cache-line trip between
cores per heap).  This tree's hands over blocks of B heaps (templates/c/kernel.c.j2): a thread
marks every term whose source is already final while the blocks before its own are in flight,
and after the previous block's baton only the terms reaching into that block and its own, and
the mex.  The model, per heap:

    time = max(critical path per block / B, work / T)
    critical path per block = baton hop + B x (terms with offsets up to B + i at heap i + mex)
    work = all terms + mex (+ the terms reaching into the T - 1 blocks in flight, marked from a
           table rather than unrolled: a little more per heap as T x B grows)

so T threads give T x one thread until work / T falls to the critical path per heap.  ``--clock``
measures both on this tree's kernel (critical path from the baton's arrival to the next one's
departure; work: the threads' CPU time less their waits).

Each row is its own process, so that both kernels are built and run the same way: c62a57f's
(or ``--baseline``'s) package and templates are extracted (``git archive``) into a temporary folder and imported from
there, this tree's from here.  A row runs ``--rounds`` rounds of N heaps (N is printed), each cut
at ROUND_SECONDS, in calls of up to PIECE heaps chained by their windows, with patient threads (no
fall-back to one thread on a busy machine), and prints the median values/s, the process CPU time
per heap, and digests of the values (of the first 2^14, 2^15, ... heaps and of all): every two rows
must agree as far as both got (it says so).  Rows alternate between the kernels.  Every row ends
within a minute.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

# This checkout's package, not an installed copy: the baseline is unpacked from this checkout's history.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from baseline import ROOT, unpack

BASELINE = "c62a57f"
#: Most heaps per kernel call (the first calls of a round are shorter), and the longest a round
#: runs (it then stops with the heaps it did).
PIECE = 1 << 18
ROUND_SECONDS = 12.0

#: One row, run by either version of the package (its API is the same in both for this).
ROW = r"""
import hashlib, json, statistics, sys, time
import numpy as np
import octalgen
from octalgen.cpu.exact import exact_values_c
from octalgen.cpu.kernel import SpeculativeKernel
from octalgen.game import parse_game

code, heaps, threads, rounds, block, piece, limit = sys.argv[1:]
heaps, threads, rounds, block, piece = int(heaps), int(threads), int(rounds), int(block), int(piece)
limit = float(limit)
try:
    from octalgen.engine.planning import plan_game
    plan, _ = plan_game(parse_game(code))  # the shipped table, or one found from the first values
except ImportError:  # before planning had a module of its own: shipped tables only
    from octalgen.plan import make_plan
    from octalgen.rare import shipped_table
    plan = make_plan(shipped_table(code))
kernel = SpeculativeKernel(plan, block_heaps=block) if block else SpeculativeKernel(plan)
prefix = exact_values_c(code, plan.start, mask=plan.table.mask)
first_window = plan.encoding.encode_array(prefix[plan.start - plan.window:]).astype(kernel.dtype)
kernel.module  # build (or load) before any clock starts
rates, cpus, digests = [], [], set()
for _ in range(rounds):
    window, done, parts = first_window, 0, []
    wall, cpu = time.perf_counter(), time.process_time()
    step = 1 << 14  # doubled up to piece: a busy machine's slow calls still end a round near its limit
    while done < heaps and time.perf_counter() - wall < limit:
        count = min(step, heaps - done)
        step = min(2 * step, piece)
        values = kernel.run(window, plan.start + done, count, threads, patient=True)
        parts.append(values)
        window = np.concatenate([window, values])[-plan.window:]
        done += count
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    rates.append(done / wall)
    cpus.append(cpu / done)
    decoded = plan.encoding.decode_array(np.concatenate(parts)).astype(np.int64)
    for length in {done, *(1 << k for k in range(14, 40) if 1 << k <= done)}:  # lengths other rows reach too
        digests.add((length, hashlib.sha256(decoded[:length].tobytes()).hexdigest()[:16]))
print(json.dumps({"rate": statistics.median(rates), "cpu": statistics.median(cpus), "digests": sorted(digests),
                  "package": octalgen.__file__, "block": getattr(kernel, "block_heaps", None)}))
"""


def row(args, threads: int, block: int, tree: Path | None) -> dict:
    """Runs one row in its own process: this tree's kernel (tree None) or the one extracted at ``tree``."""
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    command = [
        sys.executable,
        "-c",
        ROW,
        args.game,
        str(args.heaps),
        str(threads),
        str(args.rounds),
        str(block),
        str(PIECE),
        str(ROUND_SECONDS),
    ]
    done = subprocess.run(command, check=False, env=env, cwd=str(tree or ROOT), capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"row failed ({args.baseline if tree else 'this tree'}, {threads} threads):\n{done.stderr}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    expected = str(tree) if tree is not None else str(ROOT)
    if not result["package"].startswith(expected):
        raise SystemExit(f"the row imported {result['package']}, not the package under {expected}")
    return result


def clock(args, threads: int, block: int) -> str:
    """This tree's kernel built with the critical-path clock: the median and mean per heap, in ns,
    and the threads' work per heap (their CPU time less their waits for batons and the stages'
    marks, which a fuller count would add: a lower bound)."""
    import numpy as np
    from kernel_clock import BUCKETS, TICK, clocked_unit

    from octalgen.cpu.exact import exact_values_c
    from octalgen.cpu.kernel import SpeculativeKernel
    from octalgen.plan import make_plan
    from octalgen.rare import shipped_table

    buckets, tick = BUCKETS, TICK
    plan = make_plan(shipped_table(args.game))

    class Clocked(SpeculativeKernel):
        @property
        def unit(self):
            return clocked_unit(self.plan, self.block_heaps)

    kernel = Clocked(plan, block_heaps=block or None)
    prefix = exact_values_c(args.game, plan.start, mask=plan.table.mask)
    window = plan.encoding.encode_array(prefix[plan.start - plan.window :]).astype(kernel.dtype)
    counts = np.zeros(buckets + 4, dtype=np.uint64)
    lib, ffi = kernel.module.lib, kernel.module.ffi
    lib.octalgen_baton_clock(ffi.from_buffer("uint64_t[]", counts))  # clear
    kernel.run(window, plan.start, min(args.heaps, 1 << 20), threads, patient=True)
    lib.octalgen_baton_clock(ffi.from_buffer("uint64_t[]", counts))
    heaps, ticks, ns = (int(c) for c in counts[buckets + 1 :])
    if not heaps:
        return "no block waited for a baton"
    bucket_ns = tick * ns / ticks
    cumulative = np.cumsum(counts[:buckets]).astype(float)
    middle = int(np.searchsorted(cumulative, 0.5 * heaps))
    mean = float(np.dot(counts[:buckets].astype(float), np.arange(buckets) + 0.5) / heaps * bucket_ns)
    work = int(counts[buckets]) / heaps  # all threads' CPU time less their waits (and the stages), per heap
    return (
        f"critical path median {(middle + 0.5) * bucket_ns:5.1f} ns, mean {mean:5.1f} ns per heap;  "
        f"work {work:6.1f} CPU ns per heap in all, {work / threads:6.1f} per thread"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", default=".6", help="the game (default .6)")
    parser.add_argument("--threads", default="1,2", help="thread counts, e.g. 1,2,4 (default 1,2)")
    parser.add_argument("--heaps", type=int, default=1 << 22, help="N, heaps per round (default 2^22)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per row, the median is printed (default 3)")
    parser.add_argument("--blocks", default="0", help="this tree's block lengths, e.g. 64,128,256 (0: its default)")
    parser.add_argument(
        "--baseline", default=BASELINE, help=f"the commit whose kernel is timed beside this tree's (default {BASELINE})"
    )
    parser.add_argument("--no-baseline", action="store_true", help="leave out the baseline's kernel")
    parser.add_argument("--clock", action="store_true", help="also clock this tree's critical path per heap")
    args = parser.parse_args()
    threads = [int(t) for t in args.threads.split(",")]
    blocks = [int(b) for b in args.blocks.split(",")]
    cores = len(os.sched_getaffinity(0))
    print(
        f"bench_kernel_threads: {args.game}, N = {args.heaps} heaps a round (cut at {ROUND_SECONDS:.0f} s), "
        f"median of {args.rounds}; {cores} cores here, load average {os.getloadavg()[0]:.2f} at start"
    )
    digests = set()
    with tempfile.TemporaryDirectory() as folder:
        tree = None if args.no_baseline else unpack(args.baseline, Path(folder))
        ones = {}
        for t in threads:
            over = "" if t <= cores else "  (oversubscribed)"
            kernels = [(f"this tree, B={b or 'default'}", b, None) for b in blocks]
            if tree is not None:
                label = f"{BASELINE} (per-heap baton)" if args.baseline == BASELINE else args.baseline
                kernels.append((label, 0, tree))
            for label, block, where in kernels:
                result = row(args, t, block, where)
                name = f"this tree, B={result['block']}" if where is None and block == 0 else label
                digests.update(map(tuple, result["digests"]))
                if t == 1:
                    ones[name] = result["rate"]
                ratio = f"{result['rate'] / ones[name]:5.2f}x one thread" if name in ones else ""
                print(
                    f"  {name:<28} {t:>3} thread{'s' if t > 1 else ' '}  {result['rate'] / 1e6:7.3f} M values/s  "
                    f"{result['cpu'] * 1e9:7.1f} CPU ns/heap  {ratio}{over}",
                    flush=True,
                )
    if args.clock:
        for t in threads:
            if t > 1:
                for b in blocks:
                    print(f"  this tree, B={b or 'default'}, {t} threads: {clock(args, t, b)}", flush=True)
    lengths = {d[0] for d in digests}
    agree = len(digests) == len(lengths)  # one digest per length: every row that got so far agrees
    print(
        f"values: {'the same' if agree else 'DIFFERENT'} in every row (sha256 of the decoded values of the first "
        f"{min(lengths)} to {max(lengths)} heaps, every row against every other as far as both got)"
    )
    print(f"load average {os.getloadavg()[0]:.2f} at end")
    if not agree:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
