"""The verifier against commit c62a57f's, per core, on the same codes of a game, in one command.

Issue 27 asks for a verifier twice as fast per core as the one at c62a57f.  Both are built and
timed by :func:`baseline.compare_verifiers` (c62a57f's whole package unpacked from
this checkout's history and imported in a child process, this checkout's by the same child
code, alternating), on the exact values G(0) ... G(P + N - 1) (from ``octalgen.values``, cached
beside the module cache): the first P as the prefix, heaps P ... P + N - 1 proven in calls of
``--chunk`` heaps with the engine's recent history (2^20 heaps before each call).  The figure is
CPU time of the verifying thread, prefix check included, as the engine counts a task.  Run from
the repository root::

    python benchmarks/bench_verifier.py                 # .6, N = 2^21, P = 2^23, chunk 2^21
    python benchmarks/bench_verifier.py -n 4e6 --chunk 524288
    python benchmarks/bench_verifier.py --baseline 2450a59
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

# This checkout's package, not an installed copy: the baseline is unpacked from this checkout's history.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from baseline import BASELINE_COMMIT, compare_verifiers  # noqa: E402
from octalgen.engine.executors import VERIFY_HISTORY  # noqa: E402


def _exact(code: str, count: int) -> np.ndarray:
    """G(0) ... G(count - 1), exact, cached in a file (the first run computes them: seconds)."""
    folder = Path(os.environ.get("OCTALGEN_CACHE_DIR", Path.home() / ".cache" / "octalgen")) / "bench-verifier"
    path = folder / f"{code.strip('.').replace('/', '_')}-{count}.npy"
    if path.exists():
        return np.load(path)
    import octalgen

    values = octalgen.values(code, count)
    folder.mkdir(parents=True, exist_ok=True)
    np.save(path, values)
    return values


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("code", nargs="?", default=".6")
    parser.add_argument("-n", "--count", type=lambda t: int(float(t)), default=1 << 21,
                        help="heaps proven per round (default 2^21)")
    parser.add_argument("--prefix", type=lambda t: int(float(t)), default=1 << 23,
                        help="prefix length P, the first heap proven (default 2^23, the engine's)")
    parser.add_argument("--chunk", type=lambda t: int(float(t)), default=1 << 21,
                        help="heaps per verify call (default 2^21, the engine's chunk)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", default=BASELINE_COMMIT,
                        help=f"the commit whose verifier is measured beside this tree's (default {BASELINE_COMMIT}, "
                             "the issue's)")
    args = parser.parse_args()
    values = _exact(args.code, args.prefix + args.count)
    print(f"verifier, {args.code}: heaps {args.prefix} ... {args.prefix + args.count - 1} (N = {args.count}) "
          f"in calls of {args.chunk}, prefix P = {args.prefix} (read-only map), one thread; "
          f"CPU seconds of the verifying thread, prefix check included; {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.2f}")
    old, new = compare_verifiers(args.code, values, args.prefix, args.count, args.chunk, VERIFY_HISTORY,
                                 args.rounds, args.baseline)
    for timing in (old, new):
        print(f"  {timing.version:<10} {args.count / timing.median / 1e6:7.3f} M values/s per core  "
              f"({timing.median:.2f} s, median of {args.rounds}; {timing.scanned / args.count:.0f} options/heap)")
    print(f"  ratio      {old.median / new.median:7.2f}x  (goal 2x); all proven; load {os.getloadavg()[0]:.2f} at end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
