"""A late rare value that no mask helps with, with this tree and with the code it replaces, in one command.

Two cases, each version in a process of its own (the baseline from ``git archive``, as
``benchmarks/run_vs_baseline.py`` does), with a checkpoint directory of its own:

* ``.167`` (default) with the mask switch turned off, a test double for a game where no mask helps:
  under the mask its first values choose (0x3d) G(332,129,728) = 64 is rare, and so is
  G(628,834,638) = 64.  A real far heap m, and a second one.
* ``.034`` from its first 2^16 values under 0x1ff, with a prefix and recent values of 2^16 (the
  engine's default is 2^23): G(71,722) = 116 and G(374,473) = 102 are far past them.

Each row gives values/s over G(0) ... G(m - 1), before the first event, and over as long a stretch
after it, G(m) ... G(2m - 1) (where the run reaches that far), and their ratio; the peak RSS of the
coordinating process and of the largest other one (verifying processes, the compiler), each as
anonymous + file-backed + shared pages, sampled from ``/proc`` every 0.2 s; the disk the run's
directory held at its end; the events, and the digest::

    python benchmarks/far_term.py                          # .167 to 7 x 10^8, against 5799677
    python benchmarks/far_term.py --game .034 --until 1e8 --baseline 27d1e82
    python benchmarks/far_term.py --until 2e7 --no-baseline
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

#: The main this work started from: after a far event, exact steps to 2m within the prefix, a u16
#: kernel from m to 2m past it, G(m) decided by an exact solver holding every value below m.
BASELINE = "5799677"

CHILD = r"""
import json, os, resource, sys, threading, time
import numpy as np

def peaks(pid, out, done):
    # The most resident kB of each process of the run's tree: anonymous, file-backed, shared.
    def children(p):
        try:
            found = []
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    found += [int(c) for c in f.read().split()]
            return found
        except OSError:
            return []
    while not done.is_set():
        tree, todo = [], [pid]
        while todo:
            p = todo.pop()
            tree.append(p)
            todo += children(p)
        for p in tree:
            try:
                with open(f"/proc/{p}/status") as f:
                    fields = dict(line.split(":", 1) for line in f if line.startswith(("Rss", "Name")))
            except OSError:
                continue
            kb = sum(int(fields.get(k, "0 kB").split()[0]) for k in ("RssAnon", "RssFile", "RssShmem"))
            key = "main" if p == pid else "other"
            out[key] = max(out.get(key, 0), kb)
        done.wait(0.2)

def main():
    game_code, until, directory = sys.argv[1], int(float(sys.argv[2])), sys.argv[3]
    from octalgen.engine import recovery
    from octalgen.engine.core import Engine, EngineOptions
    from octalgen.engine.exact_steps import exact_solver
    from octalgen.engine.run_summary import summarize
    from octalgen.engine.tally import RecurrenceProof, Tally
    from octalgen.game import parse_game
    from octalgen.rare import RareTable
    game = parse_game(game_code)
    tally = Tally(0, RecurrenceProof(game.max_take))
    identity = {"command": "run", "digest_from": 0}
    if game_code == ".167":
        recovery.late_switch = lambda *args: None  # the double: no mask makes the late 64 common
        engine = Engine(game, EngineOptions(until=until), [tally], directory=directory, identity=identity)
    else:
        first = exact_solver(game, None).extend(1 << 16).astype(np.int64)
        engine = Engine(game, EngineOptions(until=until, prefix_limit=1 << 16, recent_limit=1 << 16), [tally],
                        table=RareTable.from_values(game, first, mask=0x1ff), directory=directory, identity=identity)
    rss, done = {}, threading.Event()
    watcher = threading.Thread(target=peaks, args=(os.getpid(), rss, done), daemon=True)
    watcher.start()
    began, marks = time.monotonic(), []
    for _ in engine.steps():
        marks.append((time.monotonic() - began, engine.position))
    end = time.monotonic() - began
    done.set()
    watcher.join()
    t = np.array(marks)
    at = lambda heap: float(np.interp(heap, t[:, 1], t[:, 0]))
    events = [[int(h), int(v)] for h, v in engine.recovery.rare_found]
    m = events[0][0] if events else None
    after = min(2 * m, until) if m else None
    disk = sum(f.stat().st_size for f in __import__("pathlib").Path(directory).rglob("*") if f.is_file())
    print(json.dumps({"seconds": end, "values_per_second": until / end, "events": events,
                      "before": m / at(m) if m else None, "after": (after - m) / (at(after) - at(m)) if m else None,
                      "stretch": [m, after], "rss_main_mb": rss.get("main", 0) / 1024,
                      "rss_other_mb": rss.get("other", 0) / 1024,
                      "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "disk_mb": disk / 2**20,
                      "digest": summarize(engine, tally).statistics.digest, "threads": engine.threads}))

if __name__ == "__main__":
    main()
"""


def run(path: Path, game: str, until: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="octalgen-far-") as scratch:
        script = Path(scratch) / "far.py"
        script.write_text(CHILD)
        done = subprocess.run(
            [sys.executable, str(script), game, str(until), str(Path(scratch) / "run")],
            cwd=scratch,
            check=False,
            capture_output=True,
            text=True,
            env=dict(os.environ, PYTHONPATH=str(path)),
        )
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def show(name: str, row: dict) -> None:
    if "error" in row:
        print(f"{name:10} error: {row['error']}")
        return
    ratio = f"{row['after'] / row['before']:.2f}x" if row["before"] and row["after"] else "-"
    stretch = row["stretch"]
    print(
        f"{name:10} {row['seconds']:7.1f} s  {row['values_per_second'] / 1e6:6.2f} M values/s;  "
        f"before G({stretch[0]:,}) "
        f"{(row['before'] or 0) / 1e6:6.2f} M/s, G({stretch[0]:,}) ... G({(stretch[1] or 1) - 1:,}) "
        f"{(row['after'] or 0) / 1e6:6.2f} M/s ({ratio})"
    )
    print(
        f"{'':10} peak RSS: coordinating process {row['rss_main_mb']:.0f} MB (ru_maxrss {row['maxrss_mb']:.0f} MB), "
        f"largest other {row['rss_other_mb']:.0f} MB; disk {row['disk_mb']:,.0f} MB; rare found {row['events']}; "
        f"digest {row['digest']}; kernel threads {row['threads']}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", choices=(".167", ".034"), default=".167")
    parser.add_argument("--until", type=float, default=None, help="default 7e8 for .167, 1e8 for .034")
    parser.add_argument("--baseline", default=BASELINE)
    parser.add_argument("--no-baseline", action="store_true", help="this tree only")
    args = parser.parse_args()
    until = int(args.until or (7e8 if args.game == ".167" else 1e8))
    print(f"{args.game}, no mask helps, N = {until:,}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="octalgen-far-base-") as folder:
        versions = [("this tree", ROOT)]
        if not args.no_baseline:
            versions.append((args.baseline, unpack(args.baseline, Path(folder))))
        for name, path in versions:
            show(name, run(path, args.game, until))


if __name__ == "__main__":
    main()
