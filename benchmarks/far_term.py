"""A far term where no mask helps, with this tree and with the code it replaces, in one command.

``.034`` from its first 2^16 values under the mask 0x1ff, with a prefix and recent values of 2^16
(the engine's default is 2^23: no game is known to give a far rare value that no mask helps with
within reach of a small machine, so the limits are made small instead): the proofs of G(71,722) =
116 and G(374,473) = 102 fail, no mask makes them common, and each becomes a term at offsets m + k
past the values held.  Each version runs in a process of its own (the baseline from ``git archive``,
as ``benchmarks/run_vs_baseline.py`` does) and prints a row: values/s over the run and past heap
10^6 (after both events), CPU seconds of the exact solver, the peak RSS of the coordinating process
and of the largest verifying process, and the digest::

    python benchmarks/far_term.py                       # N = 10^8, against 27d1e82
    python benchmarks/far_term.py --until 2e7 --baseline 3ecc694
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from baseline import unpack  # noqa: E402

#: The main this work started from: exact steps to 2m, the window held in memory.
BASELINE = "27d1e82"

CHILD = r"""
import json, resource, sys, time
import numpy as np
from octalgen.engine.core import Engine, EngineOptions
from octalgen.engine.exact_steps import exact_solver
from octalgen.engine.run_summary import summarize
from octalgen.engine.tally import RecurrenceProof, Tally
from octalgen.game import parse_game
from octalgen.rare import RareTable

def main():
    until, after = int(sys.argv[1]), 10 ** 6
    workers = None if sys.argv[2] == "auto" else int(sys.argv[2])
    game = parse_game(".034")
    first = exact_solver(game, None).extend(1 << 16).astype(np.int64)
    tally = Tally(0, RecurrenceProof(game.max_take))
    engine = Engine(game, EngineOptions(until=until, workers=workers, chunk=1 << 20, prefix_limit=1 << 16, recent_limit=1 << 16,
                                        checkpoint_every=1e9), [tally],
                    table=RareTable.from_values(game, first, mask=0x1ff), identity={"command": "run", "digest_from": 0})
    began, passed = time.monotonic(), None
    for _ in engine.steps():
        if passed is None and engine.position >= after:
            passed = (time.monotonic(), engine.position)
    end = time.monotonic()
    print(json.dumps({"values_per_second": until / (end - began),
                      "after_1e6": (until - passed[1]) / (end - passed[0]),
                      "exact_cpu_s": engine.exact.cpu_seconds, "rare_found": engine.recovery.rare_found,
                      "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      # every child's: the verifying processes', and the compiler's where the build cache
                      # lacked a module (a cold cache once showed 106 MB here, a warm one 58)
                      "worker_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
                      "digest": summarize(engine, tally).statistics.digest,
                      "threads": engine.threads, "roles": {k: v["per_1e8_values"] for k, v in engine.session.roles().items()}}))

if __name__ == "__main__":
    main()
"""


def run(path: Path, until: int, workers: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="octalgen-far-") as scratch:
        script = Path(scratch) / "far.py"
        script.write_text(CHILD)
        done = subprocess.run([sys.executable, str(script), str(until), workers], cwd=scratch, capture_output=True, text=True,
                              env=dict(os.environ, PYTHONPATH=str(path)))
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--until", type=float, default=1e8)
    parser.add_argument("--baseline", default=BASELINE)
    parser.add_argument("--workers", default="auto", help="verifying processes (default: the engine's split)")
    args = parser.parse_args()
    until = int(args.until)
    print(f".034 under 0x1ff, prefix and recent values 2^16, N = {until:,}, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="octalgen-far-base-") as folder:
        for name, path in (("this tree", ROOT), (args.baseline, unpack(args.baseline, Path(folder)))):
            row = run(path, until, args.workers)
            if "error" in row:
                print(f"{name:10} error: {row['error']}")
                continue
            print(f"{name:10} {row['values_per_second']:>12,.0f} values/s  {row['after_1e6']:>12,.0f} past 10^6  "
                  f"exact solver {row['exact_cpu_s']:6.2f} CPU-s  RSS {row['rss_mb']:6.0f} MB "
                  f"(largest child {row['worker_rss_mb']:4.0f} MB)  rare {row['rare_found']}  digest {row['digest']}")
            print(f"{'':10} kernel threads {row['threads']}; CPU-s per 10^8 values: "
                  + ", ".join(f"{role} {seconds}" for role, seconds in row["roles"].items()))


if __name__ == "__main__":
    main()
