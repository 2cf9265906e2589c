"""The verifier against an earlier commit's (default 420a5e8), per core, on the same codes, in one command.

Both are built and timed by :func:`baseline.compare_verifiers` (the baseline's whole package unpacked
from this checkout's history and imported in a child process, this checkout's by the same child code,
alternating), on the exact values G(0) ... G(P + N - 1) (from ``octalgen.values``, cached beside the
module cache): the first P as the prefix, heaps P ... P + N - 1 proven in calls of ``--chunk`` heaps
with the engine's recent history (2^20 heaps before each call).  The figure is the CPU time of the
verifying thread, as the engine counts a task: CPU nanoseconds per heap, per pair option scanned
(the options differ: this tree scans the pairs in another order), and values per CPU-second.  Every
game is measured with its plan's storage and, with ``--storage``, with another.  Run from the
repository root::

    python benchmarks/bench_verifier.py                        # .6 (u8) and .172 (u16)
    python benchmarks/bench_verifier.py .6:u16 .014 -n 1e6
    python benchmarks/bench_verifier.py --baseline 44615ce --rounds 5
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

# This checkout's package, not an installed copy: the baseline is unpacked from this checkout's history.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from baseline import BASELINE_COMMIT, compare_verifiers

from octalgen.engine.executors import VERIFY_HISTORY


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
    parser.add_argument(
        "games",
        nargs="*",
        default=[".6", ".172:u16"],
        help="games, each CODE or CODE:STORAGE (u8 or u16; default .6 and .172:u16)",
    )
    parser.add_argument(
        "-n", "--count", type=lambda t: int(float(t)), default=1 << 21, help="heaps proven per round (default 2^21)"
    )
    parser.add_argument(
        "--prefix",
        type=lambda t: int(float(t)),
        default=1 << 23,
        help="prefix length P, the first heap proven (default 2^23, the engine's)",
    )
    parser.add_argument(
        "--chunk",
        type=lambda t: int(float(t)),
        default=1 << 21,
        help="heaps per verify call (default 2^21, the engine's chunk)",
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--baseline",
        default=BASELINE_COMMIT,
        help=f"the commit whose verifier is measured beside this tree's (default {BASELINE_COMMIT})",
    )
    args = parser.parse_args()
    print(
        f"verifier: heaps {args.prefix} ... {args.prefix + args.count - 1} (N = {args.count}) in calls of "
        f"{args.chunk}, prefix P = {args.prefix} (read-only map), one thread; CPU time of the verifying "
        f"thread; {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}"
    )
    for game in args.games:
        code, _, storage = game.partition(":")
        values = _exact(code, args.prefix + args.count)
        old, new = compare_verifiers(
            code,
            values,
            args.prefix,
            args.count,
            args.chunk,
            VERIFY_HISTORY,
            args.rounds,
            args.baseline,
            storage=storage or None,
        )
        print(f"{code} ({storage or 'plan storage'}):")
        for timing in (old, new):
            per_heap = timing.median / args.count * 1e9
            print(
                f"  {timing.version:<10} {args.count / timing.median / 1e6:7.3f} M values/CPU-s  "
                f"{per_heap:7.1f} ns/heap  {timing.scanned / args.count:7.0f} options/heap  "
                f"{per_heap * args.count / timing.scanned:6.3f} ns/option  (median of {args.rounds})"
            )
        print(
            f"  CPU per value: {new.median / old.median:.2f} of {args.baseline}'s ({old.median / new.median:.2f}x); "
            f"all proven"
        )
    print(f"load {os.getloadavg()[0]:.2f} at end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
