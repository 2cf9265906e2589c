"""How many rounds the fixed point needs, measured with the numpy twin (no GPU).

Usage: python benchmarks/fixedpoint_rounds.py [GAME ...] [--span N]   (default .6 .16, N = 60000)

For each game, with the exact prefix from the reference and its values up to
start + N as the check:

* fixed windows: successive windows [lo, lo + W) iterated from zeros until a
  round changes nothing (Jacobi from a cold start); the rounds each needed;
* sliding windows, as the round kernel runs them: the front's advance per
  round, the rounds per W positions, and the work (positions computed per
  final value, i.e. W / mean advance).

Every run is checked against the reference values.
"""

import argparse
import time

import numpy as np

from octalgen.cuda import twin
from octalgen.cuda.bench import distribution, rounds_per_window
from octalgen.cuda.plan import make_cuda_plan
from octalgen.rare import rare_table
from octalgen.reference import exact_values

FIXED = (256, 1024, 4096)
SLIDING = (256, 1056, 2112, 4224, 8448)


def short(d: dict) -> str:
    return f"mean {d['mean']:7.1f}  p10 {d['p10']:6.0f}  p50 {d['p50']:6.0f}  p90 {d['p90']:6.0f}  max {d['p100']:6.0f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("games", nargs="*", default=[".6", ".16"])
    parser.add_argument("--span", type=int, default=60000, help="positions past the plan's first heap")
    args = parser.parse_args()
    for game in args.games:
        table = rare_table(game)
        plan = make_cuda_plan(table)
        end = plan.start + args.span
        began = time.perf_counter()
        codes = plan.kernel.encoding.encode_array(exact_values(game, end, mask=table.mask))
        print(f"\n{game}: {len(plan.offsets)} terms, first heap "
              f"{plan.start}, positions {plan.start}..{end - 1} (reference: {time.perf_counter() - began:.0f} s)")
        for window in FIXED:
            rounds = [twin.window_rounds(plan, codes, lo, window) for lo in range(plan.start, end - window + 1, window)]
            print(f"  fixed   W={window:>5}: rounds per window  {short(distribution(np.array(rounds)))}"
                  f"  ({len(rounds)} windows)")
        for window in SLIDING:
            run = twin.FixedPoint(plan, codes[: plan.start], end, window)
            assert np.array_equal(run.run(), codes)
            advances = run.advances()
            per_window = rounds_per_window(advances, window)
            print(f"  sliding W={window:>5}: advance per round  {short(distribution(advances))}")
            print(f"  {'':15}rounds per window  {short(distribution(per_window))}"
                  f"  work {window * len(advances) / args.span:5.1f} positions per value")


if __name__ == "__main__":
    main()
