"""Where the rounds of the fixed point go, and the work they repeat, measured with the numpy twin (no GPU).

Usage: python benchmarks/fixedpoint_rounds.py [GAME ...] [--from HEAP] [--span N] [--windows W,W,...]
(default .6 .16 from each plan's first heap, N = 30000, windows 1056,2112,4224)

For each game and window, the twin's speculator (octalgen.cuda.twin: the round kernel's exact
decisions) runs N positions after the W values before HEAP (values from the C backend; the
twin's output is checked against them), once recomputing every term of every window position
each round (before: ``cache_final=False``) and once caching the marks of final inputs (after).
Both make the same rounds; the table gives

* rounds, the front's advance per round and the rounds per window of positions;
* positions recomputed per value: term marks per final value in units of one position's terms
  (before, and after with and without the one-time marking of the history at the start);
* the busiest block: a round lasts as long as its busiest block of 32 positions (one per
  multiprocessor), so the mean over rounds of the most marks one window block makes, after
  over before (before: every block marks every term of its 32 positions);
* how far changes reach: changes per value, their distance from the front (median, 90th
  percentile) and what a changed-inputs frontier would recompute (positions with an input
  changed in the last round, or new to the window, per value).
"""

import argparse
import time

import numpy as np

from octalgen.api import rare_table
from octalgen.backends import compute_values
from octalgen.cuda import twin
from octalgen.cuda.bench import distribution, rounds_per_window
from octalgen.cuda.cuda_plan import CudaOptions, make_cuda_plan


def run(plan, codes, first, span, window, cache_final):
    """The twin over [first, first + span): its log and changes, checked against ``codes``."""
    w = plan.kernel.window
    speculator = twin.Speculator(
        plan,
        window,
        ring=twin.ring_size(plan, window, span + w + window),
        cache_final=cache_final,
        keep_changes=not cache_final,
    )
    speculator.reset(codes[first - w : first])
    speculator.advance(w + span)
    if not np.array_equal(speculator.read(w, w + span), codes[first : first + span]):
        raise AssertionError("the fixed point differs from the values")
    return speculator


def frontier(speculator, offsets):
    """Positions per round with an input changed in the previous round, or new to the window."""
    total, changed, hi_prev = 0, np.zeros(0, np.int64), 0
    for (front, hi, _), moved in zip(speculator.log, speculator.changes):
        dirty = np.zeros(hi - front, dtype=bool)
        dirty[max(hi_prev, front) - front :] = True
        targets = (changed[:, None] + offsets[None, :]).ravel()
        targets = targets[(targets >= front) & (targets < hi)]
        dirty[targets - front] = True
        total += int(dirty.sum())
        changed, hi_prev = front + moved, hi
    return total


def busiest_block(speculator, window):
    """Mean over rounds (round 0 left out) of the most term marks one window block of 32 makes."""
    terms, most, f_prev = speculator.terms, [], None
    for front, hi, _ in speculator.log:
        if f_prev is not None and hi > front:
            n = np.arange(front, front + window)
            young = np.where(n < hi, terms.upto(n - front), 0)
            newly = terms.upto(n - f_prev) - terms.upto(n - front)
            most.append((young + newly).reshape(-1, 32).sum(axis=1).max())
        f_prev = front
    return float(np.mean(most))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("games", nargs="*", default=[".6", ".16"])
    parser.add_argument("--from", dest="first", type=int, default=0, help="first heap (default: the plan's first)")
    parser.add_argument("--span", type=int, default=30000, help="positions computed")
    parser.add_argument("--windows", default="1056,2112,4224", help="positions per round, comma-separated")
    args = parser.parse_args()
    windows = [int(w) for w in args.windows.split(",")]
    print(
        f"{'game':>5} {'from':>8} {'window':>6} {'rounds':>6} {'adv/round':>9} {'rounds/window p50 p90 max':>26} "
        f"{'recomputed/value: before':>25} {'after':>6} {'after*':>6} {'changes/value':>13} "
        f"{'dist p50 p90':>13} {'frontier/value':>14} {'busiest block':>13}"
    )
    for game in args.games:
        table = rare_table(game)
        plan = make_cuda_plan(table)
        first = max(args.first, plan.start)
        codes = plan.kernel.encoding.encode_array(compute_values(game, 0, first + args.span, backend="c", workers=0))
        terms = len(plan.offsets)
        for window in windows:
            began = time.perf_counter()
            before = run(plan, codes, first, args.span, window, cache_final=False)
            after = run(
                make_cuda_plan(table, options=CudaOptions(cache_final=True)),
                codes,
                first,
                args.span,
                window,
                cache_final=True,
            )
            assert [row[:2] for row in before.log] == [row[:2] for row in after.log]  # the same rounds
            fronts = np.array([front for front, _, _ in before.log] + [before.front])
            advances = np.diff(fronts)
            per_window = distribution(rounds_per_window(advances, window))
            made = fronts[-1] - fronts[0]
            marks_before = sum(m for *_, m in before.log)
            marks_after = sum(m for *_, m in after.log)
            steady = sum(m for *_, m in after.log[1:])  # without round 0's marking of the history
            changes = np.concatenate(before.changes)
            print(
                f"{game:>5} {first:>8} {window:>6} {len(before.log):>6} {advances.mean():>9.1f} "
                f"{per_window.get('p50', 0):>16.0f} {per_window.get('p90', 0):>4.0f} "
                f"{per_window.get('p100', 0):>4.0f} "
                f"{marks_before / terms / made:>25.2f} {marks_after / terms / made:>6.2f} "
                f"{steady / terms / made:>6.2f} {len(changes) / made:>13.2f} "
                f"{np.percentile(changes, 50):>6.0f} {np.percentile(changes, 90):>6.0f} "
                f"{frontier(before, plan.offsets) / made:>14.2f} "
                f"{busiest_block(after, window) / (32 * terms):>13.2f}   ({time.perf_counter() - began:.0f} s)",
                flush=True,
            )
    print(
        "\nafter* leaves out round 0, which marks the W values of the history once per (re)start; busiest "
        "block: after / before."
    )


if __name__ == "__main__":
    main()
