"""Speed of the pure-Python exact reference on Officers, against the definition in the same run.

Usage: python benchmarks/bench_reference.py [N]   (default N = 100000)

Prints values/s of ``exact_values('.6', N)`` and of ``naive_values('.6', M)``
for a small M, and their ratio.  The issue's bar: the first 10^5 values of .6
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
    naive_n = 3000
    exact_s, exact_rate = rate(exact_values, n)
    naive_s, naive_rate = rate(naive_values, naive_n)
    print(f"exact  .6  N={n:>9,}  {exact_s:7.2f} s  {exact_rate:10,.0f} values/s")
    print(f"naive  .6  N={naive_n:>9,}  {naive_s:7.2f} s  {naive_rate:10,.0f} values/s (the definition, O(N^2))")
    print(f"ratio exact/naive (values/s): {exact_rate / naive_rate:.1f}")


if __name__ == "__main__":
    main()
