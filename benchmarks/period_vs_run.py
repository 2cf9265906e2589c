"""``octalgen period`` against ``octalgen run`` over the same values, in one command.

``period`` finds and proves a game's least period and preperiod; ``run`` proves the same values
with its statistics.  Both are the one engine; ``period`` also keeps every value on disk and
reads values back to find the least preperiod and to compare each value with the one a period
before it.  This prints each command's wall time and peak memory and the ratio (goal: period
within 1.5x of run, both under 1 GB)::

    python benchmarks/period_vs_run.py                 # .1777: period 60,620,715 from 160,949,018
    python benchmarks/period_vs_run.py --game .16      # small: seconds

Each command runs in its own process, timed by ``/usr/bin/time`` (elapsed, maximum RSS), with the
same cores split given to both (one kernel thread, a verifier per core), so that neither pays for
measuring the machine's rates (the automatic split caches them after its first run).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile


def measure(command: list[str]) -> tuple[float, float, str]:
    """(wall seconds, peak RSS in MB, stdout) of one octalgen command."""
    timed = ["/usr/bin/time", "-f", "TIMED %e %M", sys.executable, "-m", "octalgen", "-q", *command]
    done = subprocess.run(timed, check=False, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed: {done.stderr.strip().splitlines()[-1]}")
    seconds, kilobytes = re.search(r"TIMED ([\d.]+) (\d+)", done.stderr).groups()
    return float(seconds), int(kilobytes) / 1024, done.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--game", default=".1777")
    parser.add_argument("--max", default="5e8", help="period --max (default 5e8)")
    args = parser.parse_args()
    cores = ["--threads", "1", "--workers", str(len(os.sched_getaffinity(0)))]
    with tempfile.TemporaryDirectory(prefix="octalgen-bench-") as scratch:
        period_s, period_mb, out = measure(
            ["period", args.game, "--max", args.max, "--checkpoint", os.path.join(scratch, "period"), *cores]
        )
        print(out.strip())
        computed = int(re.search(r"computed (\d+) values", out).group(1))
        run_s, run_mb, _ = measure(
            ["run", args.game, "--until", str(computed), "--checkpoint", os.path.join(scratch, "run"), *cores]
        )
    print(f"{'command':<44} {'seconds':>8} {'peak MB':>8} {'values/s':>12}")
    for name, seconds, megabytes in (
        (f"octalgen period {args.game} --max {args.max}", period_s, period_mb),
        (f"octalgen run {args.game} --until {computed}", run_s, run_mb),
    ):
        print(f"{name:<44} {seconds:8.1f} {megabytes:8.0f} {computed / seconds:12,.0f}")
    print(
        f"period / run: {period_s / run_s:.2f}x the time (goal: at most 1.5x) over the same {computed} values; "
        f"load average {os.getloadavg()[0]:.2f} at the end"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
