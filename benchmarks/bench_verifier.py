"""The verifier against commit c62a57f's, per core, on the same codes of a game, in one command.

Issue 27 asks for a verifier twice as fast per core as the one at c62a57f.  This builds both:
c62a57f's whole package (``git archive``: its octalgen/ and templates/) is unpacked into a
temporary folder and imported from there in a child process, so its templates, its generate.py
and its verify.py (with the per-call prefix check) are the ones measured; this checkout is
measured by the same child code.  Both get the same inputs, written once to files:

* the exact values G(0) ... G(P + N - 1) (from ``octalgen.values``, cached beside the module
  cache), the first P of them as the prefix, read-only and memory-mapped as a worker process
  maps the run's shared prefix;
* the u8 codes of heaps P ... P + N - 1 (the codes the kernel gives: they are exact), proven in
  tasks of ``--chunk`` heaps with the engine's recent history (2^20 heaps before each task).

Each role runs ``--rounds`` times, old and new alternating, in one process each; the figure is
CPU time of the verifying thread (``time.thread_time``), prefix check included, as the engine
counts a task.  Both must report every heap proven.  Run from the repository root::

    python benchmarks/bench_verifier.py                 # .6, N = 2^21, P = 2^23, chunk 2^21
    python benchmarks/bench_verifier.py -n 4e6 --chunk 524288
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

BASELINE = "c62a57f"
ROOT = Path(__file__).resolve().parent.parent
#: Heaps of history before a task, beyond the kernel's window (octalgen.engine.executors.VERIFY_HISTORY).
VERIFY_HISTORY = 1 << 20

#: The child: plans the game with whichever octalgen PYTHONPATH gives, times its verifier on the
#: files, prints one JSON line.
CHILD = r"""
import json, sys, time
import numpy as np
import octalgen
from octalgen.cpu.verify import Verifier
from octalgen.game import parse_game
try:
    from octalgen.engine.plans import plan_game
except ImportError:  # c62a57f: the engine's kernel_start
    from octalgen.engine.core import kernel_start as plan_game

folder, code, count, chunk, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
plan, _ = plan_game(parse_game(code))
prefix = np.memmap(folder + "/prefix.u16", dtype=np.uint16, mode="r")
codes = np.fromfile(folder + "/codes.u8", dtype=np.uint8)
first = len(prefix)
base = first - plan.window - (1 << 20)
verifier = Verifier(plan)
verifier.module  # built or loaded before the clock starts
seconds, scanned = [], 0
for _ in range(rounds):
    began = time.thread_time()
    for a in range(first, first + count, chunk):
        b = min(a + chunk, first + count)
        recent = max(base, a - plan.window - (1 << 20))  # as the engine's verify_interval
        result = verifier.verify(codes[recent - base: b - base], recent, prefix, a, b)
        if not result.proven:
            raise SystemExit(f"not proven: {result}")
        scanned += result.options_scanned
    seconds.append(time.thread_time() - began)
print(json.dumps({"octalgen": octalgen.__file__, "seconds": seconds, "scanned": scanned // rounds}))
"""


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


def _baseline_tree(folder: Path, baseline: str) -> Path:
    """The baseline's octalgen/ and templates/ under folder; templates as octalgen.templates, as installed."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", baseline, "octalgen", "templates"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    (folder / "templates").rename(folder / "octalgen" / "templates")
    (folder / "octalgen" / "templates" / "__init__.py").touch()
    return folder


def _child(path: Path, data: Path, args, rounds: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(path))
    out = subprocess.run([sys.executable, "-c", CHILD, str(data), args.code, str(args.count), str(args.chunk),
                          str(rounds)], env=env, check=True, capture_output=True, text=True, cwd=str(data))
    return json.loads(out.stdout.strip().splitlines()[-1])


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
    parser.add_argument("--baseline", default=BASELINE,
                        help=f"the commit whose verifier is measured beside this tree's (default {BASELINE}, the issue's)")
    args = parser.parse_args()

    from octalgen.engine.plans import plan_game
    from octalgen.game import parse_game

    plan, _ = plan_game(parse_game(args.code), required=True)
    if plan.encoding.kind != "u8":
        parser.error(f"{args.code} stores u16 values: this benchmark feeds u8 codes")
    values = _exact(args.code, args.prefix + args.count)
    base = args.prefix - plan.window - VERIFY_HISTORY
    with tempfile.TemporaryDirectory(prefix="bench-verifier-") as temp:
        data = Path(temp)
        values[: args.prefix].astype(np.uint16).tofile(data / "prefix.u16")
        plan.encoding.encode_array(values[base: args.prefix + args.count]).astype(np.uint8).tofile(data / "codes.u8")
        old_tree = _baseline_tree(Path(tempfile.mkdtemp(dir=temp)), args.baseline)
        print(f"verifier, {args.code}: heaps {args.prefix} ... {args.prefix + args.count - 1} (N = {args.count}) "
              f"in calls of {args.chunk}, prefix P = {args.prefix} (read-only map), one thread; "
              f"CPU seconds of the verifying thread, prefix check included; {os.cpu_count()} cores, "
              f"load {os.getloadavg()[0]:.2f}")
        _child(old_tree, data, args, 1)  # builds c62a57f's module (minutes the first time), then warm
        _child(ROOT, data, args, 1)
        old, new = [], []
        for _ in range(args.rounds):  # alternating: both share whatever load there is
            old.append(_child(old_tree, data, args, 1))
            new.append(_child(ROOT, data, args, 1))
    assert all(r["octalgen"].startswith(str(old_tree)) for r in old), old[0]["octalgen"]
    assert all(r["octalgen"].startswith(str(ROOT)) for r in new), new[0]["octalgen"]
    old_s = float(np.median([r["seconds"][0] for r in old]))
    new_s = float(np.median([r["seconds"][0] for r in new]))
    for name, seconds, runs in ((args.baseline, old_s, old), ("this tree", new_s, new)):
        print(f"  {name:<10} {args.count / seconds / 1e6:7.3f} M values/s per core  "
              f"({seconds:.2f} s, median of {args.rounds}; {runs[0]['scanned'] / args.count:.0f} options/heap)")
    print(f"  ratio      {old_s / new_s:7.2f}x  (goal 2x); all proven; load {os.getloadavg()[0]:.2f} at end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
