"""Speed of the pure-Python exact reference on Officers, against the definition in the same run.

Usage: python benchmarks/bench_reference.py [N]   (default N = 100000)

Prints values/s of ``exact_values('.6', N)``, and of both ``exact_values`` and
``naive_values`` (the definition, O(M^2)) for a small M, with their ratio.  The issue's bar: the first 10^5 values of .6
in under a minute on the project's 2-core machine.
"""

import sys
import time

from octalgen.reference import exact_values, naive_values


def rate(function, count):
    began = time.perf_counter()
    function(".6", count)
    seconds = time.perf_counter() - began
    return seconds, count / seconds


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    small = 6000
    exact_s, exact_rate = rate(exact_values, n)
    small_s, small_rate = rate(exact_values, small)
    naive_s, naive_rate = rate(naive_values, small)
    print(f"exact  .6  N={n:>9,}  {exact_s:7.2f} s  {exact_rate:10,.0f} values/s")
    print(f"exact  .6  N={small:>9,}  {small_s:7.2f} s  {small_rate:10,.0f} values/s")
    print(f"naive  .6  N={small:>9,}  {naive_s:7.2f} s  {naive_rate:10,.0f} values/s (the definition, O(N^2))")
    print(f"ratio exact/naive at N={small:,}: {small_rate / naive_rate:.1f}")


if __name__ == "__main__":
    main()
