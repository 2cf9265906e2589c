"""``octalgen run`` with this tree against the issue's baseline commit, in alternate runs of one command.

Each round runs ``octalgen run GAME --until N --json`` once with this checkout's octalgen and once
with the baseline's (``git archive BASELINE`` unpacked in a temporary folder, imported through
``PYTHONPATH``; both share the build cache, whose key is the rendered source), in alternating
order, and prints a row per run: verified values/s, wall seconds, the coordinator's CPU seconds
per 10^8 values (the engine's accounting) and the digest; then the ratio of the medians::

    python benchmarks/run_vs_baseline.py                      # .6, N = 10^8, 2 rounds
    python benchmarks/run_vs_baseline.py --until 2e7 --rounds 3
    python benchmarks/run_vs_baseline.py --until 1e6 --rounds 1 -- --workers 2   # extra run options

Runs are alternated so that a machine whose load changes slows both alike; the load average is
printed before each row.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# This checkout's package, not an installed copy: the baseline is unpacked from this checkout's history.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from baseline import ROOT, unpack


def run_once(path: Path, game: str, until: str, extra: list[str], timeout: float) -> dict:
    """One run with the octalgen found at ``path``: its --json summary (or the error)."""
    env = dict(os.environ, PYTHONPATH=str(path))
    with tempfile.TemporaryDirectory(prefix="octalgen-vs-") as scratch:  # cwd: not the checkout (python -m)
        began = time.monotonic()
        try:
            done = subprocess.run(
                [sys.executable, "-m", "octalgen", "-q", "run", game, "--until", until, "--json", *extra],
                check=False,
                cwd=scratch,
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            return {"error": f"over {timeout:.0f} s"}
        wall = time.monotonic() - began
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]}
    summary = json.loads(done.stdout)
    coordinator = summary.get("cpu_roles", {}).get("coordinator", {}).get("per_1e8_values")
    return {
        "rate": summary["session"]["values_per_second"],
        "wall": wall,
        "coordinator": coordinator,
        "digest": summary["fnv1a64"],
        "module": path,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--game", default=".6")
    parser.add_argument("--until", default="1e8", help="values per run (default 1e8)")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each version (default 2)")
    parser.add_argument("--baseline", default="420a5e8", help="the commit compared against (default 420a5e8)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds a run may take (default 900)")
    parser.add_argument("extra", nargs="*", help="more options of octalgen run (after --)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="octalgen-baseline-") as temp:
        base_dir = unpack(args.baseline, Path(temp))
        versions = [("this tree", ROOT), (args.baseline, base_dir)]
        print(f"octalgen run {args.game} --until {args.until} {' '.join(args.extra)}; {os.cpu_count()} cores here")
        print(f"{'version':>10} {'values/s':>12} {'wall s':>8} {'coord. CPU s/1e8':>17} {'digest':>17} {'load':>5}")
        rates: dict[str, list[float]] = {name: [] for name, _ in versions}
        for round_ in range(args.rounds):
            for name, path in versions if round_ % 2 == 0 else versions[::-1]:
                load = os.getloadavg()[0]
                row = run_once(path, args.game, args.until, args.extra, args.timeout)
                if "error" in row:
                    print(f"{name:>10} failed: {row['error']}")
                    continue
                rates[name].append(row["rate"])
                coordinator = f"{row['coordinator']:.2f}" if row["coordinator"] is not None else "-"
                digest = row["digest"]
                print(
                    f"{name:>10} {row['rate']:>12,} {row['wall']:>8.1f} {coordinator:>17} {digest:>17} {load:>5.2f}",
                    flush=True,
                )
    new, old = (rates[name] for name, _ in versions)
    if new and old:
        print(
            f"median values/s: this tree {statistics.median(new):,.0f}, {args.baseline} "
            f"{statistics.median(old):,.0f}: ratio {statistics.median(new) / statistics.median(old):.2f}"
        )
    return 0 if new and old else 1


if __name__ == "__main__":
    sys.exit(main())
