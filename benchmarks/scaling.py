"""How exact throughput grows with the cores: one table, a row per core count (issue: every core at work).

For c = 1, 2, 4, 8, 16 ... cores (those this machine has), ``octalgen run GAME --until N`` runs
restricted to c cores (``taskset``), with the automatic split of kernel threads and verifying
processes; each row gives the split, the kernel's speculative rate with those threads (measured
by the split), the verified values/s over the run, the split's prediction (steady state) and its
expectation for the row's N (start and drain included: the figure the row checks), and the ratio to
one core::

    python benchmarks/scaling.py                 # .6, N at least 10^7 (each row well under a minute here)
    python benchmarks/scaling.py --count 5e7

Each row's N is at least ``--count`` and at least CHUNKS_PER_WORKER chunks (of the engine's
default size) per core, so that every verifying process gets several chunks and the row does not
measure the start and the last chunk's drain; the row prints its N.  With 16 cores that is
1.3 * 10^8 values (about 20 s at 8 M values/s).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

from octalgen.engine.options import CHUNK

#: Chunks per core a row proves at least.
CHUNKS_PER_WORKER = 4


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--game", default=".6")
    parser.add_argument("--count", default="1e7", help="values per row (default 1e7)")
    args = parser.parse_args()
    available = sorted(os.sched_getaffinity(0))
    counts = [c for c in (1, 2, 4, 8, 16, 32, 64) if c <= len(available)]
    print(
        f"octalgen run {args.game} --until {args.count}, automatic split; {len(available)} cores here, "
        f"load average {os.getloadavg()[0]:.2f} at start"
    )
    print(
        f"{'cores':>5} {'N':>11} {'threads':>7} {'verifiers':>9} {'speculative/s':>14} {'verified/s':>12} "
        f"{'predicted/s':>12} {'expected/s':>11} {'x 1 core':>9}"
    )
    base = None
    for cores in counts:
        cpus = ",".join(str(c) for c in available[:cores])
        count = max(int(float(args.count)), cores * CHUNKS_PER_WORKER * CHUNK)
        with tempfile.TemporaryDirectory(prefix="octalgen-scaling-") as scratch:
            done = subprocess.run(
                [
                    "taskset",
                    "-c",
                    cpus,
                    sys.executable,
                    "-m",
                    "octalgen",
                    "-q",
                    "run",
                    args.game,
                    "--until",
                    str(count),
                    "--checkpoint",
                    scratch,
                    "--json",
                ],
                check=False,
                capture_output=True,
                text=True,
            )
        if done.returncode != 0:
            sys.exit(f"{cores} cores: {done.stderr.strip()}")
        figures = json.loads(done.stdout)
        split, rate = figures["cores"], figures["session"]["values_per_second"]
        threads = split["kernel_threads"] if split else 1
        speculative = split["kernel_values_per_second"][str(threads)] if split else None
        base = base or rate
        print(
            f"{cores:>5} {count:>11,} {threads:>7} {split['verifying_processes'] if split else 0:>9} "
            f"{speculative or 0:>14,} {rate:>12,} {split['predicted_values_per_second'] if split else 0:>12,} "
            f"{(split or {}).get('expected_values_per_second') or 0:>11,} {rate / base:>9.2f}"
        )
        print(
            f"      digest {figures['fnv1a64']}; CPU seconds per 10^8 values: "
            + ", ".join(f"{role} {r['per_1e8_values']}" for role, r in figures["cpu_roles"].items() if r["cpu_seconds"])
        )
    print(f"load average {os.getloadavg()[0]:.2f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
