"""Exact values of games without a sparse space: the blocked method against the classic one.

Usage: python benchmarks/dense_exact.py [--quick] [--threads 2] [GAME ...]
       (default: .04 .06 .007 .104; --quick: every N / 8; --threads 2: the blocked method with a
       helper thread)

The baseline is today's exact solver on these games: the classic method (Grossman's Figure 2, one
heap at a time) with mask 0, the plain mex over all options, which is also what the classic method
does fastest on them.  The blocked method picks its mask itself (``.104``: a mask with the heap's
parity).  Both run in this one command, in this process.  For each game:

* ``full``: both methods from G(0) to the same N, values/s and the ratio.  The classic method is
  quadratic, so its N is the largest power of two it finishes in about a minute on the project's
  2-core machine; the blocked method also runs to the game's larger N alone.
* ``window``: the per-value rate at N itself: both continue from the exact values G(0) ... G(N-W-1)
  and compute the last W heaps before N (the classic cost of a heap grows linearly with it, so
  this is the classic rate at equal N).
* ``estimate``: the classic run to the larger N, integrated from its per-heap costs measured on
  windows at N/8, N/4, N/2 and N (said so in the output: it is not a timed run).

Timings are wall clock: on a shared machine repeat the command and compare ratios.
"""

from __future__ import annotations

import itertools
import sys
import time

import numpy as np

from octalgen.cpu.exact import CExactSolver

#: game, N for the blocked method, N for the full classic run (about a minute on 2 cores).
GAMES = {
    ".04": (1 << 20, 1 << 18),
    ".06": (1 << 18, 1 << 18),
    ".007": (1 << 19, 1 << 18),
    ".104": (1 << 22, 1 << 18),
}
#: Heaps in a window.
WINDOW = 1024


def timed(solver: CExactSolver, count: int) -> float:
    began = time.perf_counter()
    solver.extend(count)
    return time.perf_counter() - began


def per_heap(method: str, game: str, values: np.ndarray, end: int, threads: int = 1) -> float:
    """Seconds per heap of ``method`` on heaps [end - WINDOW, end), from the exact values before."""
    solver = CExactSolver(
        game, mask=0 if method == "classic" else None, values=values[: end - WINDOW], method=method, threads=threads
    )
    seconds = timed(solver, end)
    assert np.array_equal(solver.values[end - WINDOW :], values[end - WINDOW : end]), (game, method, end)
    return seconds / WINDOW


def line(game, method, n, seconds, note=""):
    print(f"{game:5} {method:8} N={n:>10,}  {seconds:8.2f} s  {n / seconds:10,.0f} values/s  {note}", flush=True)


def bench(game: str, n: int, n_classic: int, quick: bool, threads: int) -> None:
    if quick:
        n, n_classic = n // 8, n_classic // 8
    blocked = CExactSolver(game, threads=threads)
    small = timed(blocked, n_classic)
    large = small + timed(blocked, n)
    values = blocked.values.copy()
    classic = CExactSolver(game, mask=0, method="classic")
    classic_s = timed(classic, n_classic)
    assert np.array_equal(classic.values, values[:n_classic]), game
    name = "blocked" if threads == 1 else f"blocked{threads}"
    line(game, "classic", n_classic, classic_s, "(baseline: mask 0)")
    line(game, name, n_classic, small, f"full runs at equal N: {classic_s / small:.1f}x")
    if n == n_classic:
        print()
        return
    parity = " with the heap's parity" if blocked.position_parity else ""
    line(game, name, n, large, f"(mask {blocked.mask:#x}{parity} at the end)")
    new_heap = per_heap("blocked", game, values, n, threads)
    costs = {m: per_heap("classic", game, values, m) for m in (n // 8, n // 4, n // 2, n)}
    print(
        f"      window   heaps [{n - WINDOW:,}, {n:,}): {name} {new_heap * 1e6:,.1f} us/heap, "
        f"classic {costs[n] * 1e6:,.1f} us/heap: {costs[n] / new_heap:.1f}x at equal N"
    )
    # Piecewise-linear per-heap cost from 0 through the measured points, integrated to N.
    points = [(0, 0.0), *sorted(costs.items())]
    estimate = sum((b - a) * (ca + cb) / 2 for (a, ca), (b, cb) in itertools.pairwise(points))
    print(
        f"      estimate classic to N={n:,}: {estimate:,.0f} s (not timed), "
        f"{name} {large:.1f} s: {estimate / large:.1f}x\n",
        flush=True,
    )


def main(argv: list[str]) -> None:
    quick = "--quick" in argv
    threads = 2 if "--threads" in argv and argv[argv.index("--threads") + 1] == "2" else 1
    games = [a for a in argv if a in GAMES] or list(GAMES)
    for game in games:
        bench(game, *GAMES[game], quick, threads)


if __name__ == "__main__":
    main(sys.argv[1:])
