"""Speed of the generated pick-up-stones C, with baselines measured in the same run.

    .venv/bin/python benchmarks/bench_stones.py            # N = 10^6, 10^7, 10^8
    .venv/bin/python benchmarks/bench_stones.py --quick    # N = 10^6, 10^7

For each rule set (the paper's games: classic S = {1, 5, 8, 10}, no-repeat
S = {1, ..., 5} with memory 1, asymmetric Game 1 S_L = {2, 5, 9},
S_R = {3, 4, 8}) it prints the generated kernel's time and pile sizes per
second for each N, and two baselines run here and now:

* ``naive C``: the textbook bottom-up loop (one byte per outcome, every count
  tried at every pile size; for no-repeat the paper's matrix, one row per
  previous move), compiled with the same flags, at N = 10^7;
* ``python``: the plain-Python reference (:mod:`octalgen.stones.reference`)
  on a smaller N.

Ratios are rates over the baseline's rate, so they hold whatever the load;
the load average is printed before and after.  Both baselines are checked
against the generated kernel on the pile sizes they compute.
"""

from __future__ import annotations

import argparse
import functools
import os
import time

import numpy as np

from octalgen.build import build_module
from octalgen.stones import Asymmetric, Classic, NoRepeat
from octalgen.stones.ccode import StonesKernel
from octalgen.stones.reference import reference_outcomes

GAMES = {
    "classic": Classic((1, 5, 8, 10)),
    "no-repeat": NoRepeat((1, 2, 3, 4, 5)),
    "asymmetric": Asymmetric((2, 5, 9), (3, 4, 8)),
}
PYTHON_COUNT = {"classic": 200_000, "no-repeat": 20_000, "asymmetric": 200_000}
NAIVE_COUNT = 10**7
PAPER_GAME_1_SECONDS = 13.4  # Fisher, section 5.2: N = 10^7 on a 700 MHz Athlon (both players first)

# The textbook loops, as a baseline: outcomes as bytes (1 = the player to move loses), every count tried.
NAIVE_SOURCE = r"""
#include <stdint.h>
void naive_classic(int64_t count, const int64_t *moves, int64_t m, uint8_t *lose)
{
    for (int64_t n = 0; n < count; n++) {
        uint8_t l = 1;
        for (int64_t j = 0; j < m; j++)
            if (moves[j] <= n && lose[n - moves[j]])
                l = 0;
        lose[n] = l;
    }
}
void naive_asymmetric(int64_t count, const int64_t *left, int64_t ml, const int64_t *right, int64_t mr,
                      uint8_t *left_loses, uint8_t *right_loses)
{
    for (int64_t n = 0; n < count; n++) {
        uint8_t l = 1, r = 1;
        for (int64_t j = 0; j < ml; j++)
            if (left[j] <= n && right_loses[n - left[j]])
                l = 0;
        for (int64_t j = 0; j < mr; j++)
            if (right[j] <= n && left_loses[n - right[j]])
                r = 0;
        left_loses[n] = l;
        right_loses[n] = r;
    }
}
/* Fisher's matrix: lose[p * count + n] = 1 when the player to move after the opponent removed moves[p] loses. */
void naive_no_repeat(int64_t count, const int64_t *moves, int64_t m, uint8_t *lose, uint8_t *safe)
{
    for (int64_t n = 0; n < count; n++) {
        uint8_t all = 1;
        for (int64_t p = 0; p < m; p++) {
            uint8_t l = 1;
            for (int64_t j = 0; j < m; j++)
                if (j != p && moves[j] <= n && lose[j * count + n - moves[j]])
                    l = 0;
            lose[p * count + n] = l;
            all &= l;
        }
        safe[n] = all;
    }
}
"""
NAIVE_CDEF = """
void naive_classic(int64_t count, const int64_t *moves, int64_t m, uint8_t *lose);
void naive_asymmetric(int64_t count, const int64_t *left, int64_t ml, const int64_t *right, int64_t mr,
                      uint8_t *left_loses, uint8_t *right_loses);
void naive_no_repeat(int64_t count, const int64_t *moves, int64_t m, uint8_t *lose, uint8_t *safe);
"""


def _seconds(function, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        began = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - began)
    return best


def _unpack(packed: np.ndarray, count: int) -> np.ndarray:
    return np.unpackbits(packed.astype("<u8").view(np.uint8), axis=-1, bitorder="little", count=count).astype(bool)


def _naive(module, rule: str, game, count: int) -> np.ndarray:
    """The naive loop's second-wins bits, shape (channels, count)."""
    ffi, lib = module.ffi, module.lib

    def pointer(array):
        return ffi.from_buffer("int64_t[]" if array.dtype == np.int64 else "uint8_t[]", array)

    if rule == "classic":
        moves = np.array(game.moves, dtype=np.int64)
        lose = np.zeros(count, dtype=np.uint8)
        lib.naive_classic(count, pointer(moves), len(moves), pointer(lose))
        return lose[None].astype(bool)
    if rule == "asymmetric":
        left, right = np.array(game.left, dtype=np.int64), np.array(game.right, dtype=np.int64)
        loses = np.zeros((2, count), dtype=np.uint8)
        lib.naive_asymmetric(
            count, pointer(left), len(left), pointer(right), len(right), pointer(loses[0]), pointer(loses[1])
        )
        return loses.astype(bool)
    moves = np.array(game.moves, dtype=np.int64)
    matrix = np.zeros(len(moves) * count, dtype=np.uint8)
    safe = np.zeros(count, dtype=np.uint8)
    lib.naive_no_repeat(count, pointer(moves), len(moves), pointer(matrix), pointer(safe))
    return safe[None].astype(bool)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="leave out N = 10^8")
    args = parser.parse_args()
    counts = [10**6, 10**7] + ([] if args.quick else [10**8])
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    naive = build_module("stones_naive", NAIVE_SOURCE, NAIVE_CDEF, what="naive pick-up-stones loops")
    for rule, game in GAMES.items():
        kernel = StonesKernel(game)
        print(f"\n{game.describe()}  [{kernel.plan.describe()}]")
        rates = {}
        for count in counts:
            seconds = _seconds(functools.partial(kernel.packed, count), 3 if count < 10**8 else 1)
            rates[count] = count / seconds
            print(f"  generated C  N = 10^{len(str(count)) - 1}: {seconds:8.4f} s  {rates[count]:.3g} pile sizes/s")

        ours = _unpack(kernel.packed(NAIVE_COUNT), NAIVE_COUNT)
        naive_bits = None

        def run_naive():
            nonlocal naive_bits
            naive_bits = _naive(naive, rule, game, NAIVE_COUNT)  # noqa: B023 - timed at once, in this iteration

        seconds = _seconds(run_naive, 1)
        assert np.array_equal(naive_bits, ours), f"naive C and generated C disagree on {game.describe()}"
        print(
            f"  naive C      N = 10^7: {seconds:8.4f} s  {NAIVE_COUNT / seconds:.3g} pile sizes/s;"
            f" generated C is {rates[NAIVE_COUNT] * seconds / NAIVE_COUNT:.1f}x faster"
        )
        if rule == "asymmetric":
            print(
                f"  the paper's Game 1 at N = 10^7: {PAPER_GAME_1_SECONDS} s (700 MHz Athlon, 2003); "
                f"generated C here {NAIVE_COUNT / rates[NAIVE_COUNT]:.4f} s"
            )

        python_count = PYTHON_COUNT[rule]
        reference = None

        def run_reference():
            nonlocal reference
            reference = reference_outcomes(game, python_count)  # noqa: B023 - timed at once, in this iteration

        seconds = _seconds(run_reference, 1)
        channels = np.array([reference.second_wins[c] for c in game.channels])
        assert np.array_equal(channels, ours[:, :python_count]), "reference and generated C disagree"
        print(
            f"  python       N = {python_count}: {seconds:8.4f} s  {python_count / seconds:.3g} pile sizes/s;"
            f" generated C (N = 10^7) is {rates[NAIVE_COUNT] * seconds / python_count:.0f}x faster"
        )
    print(f"\nload average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
