"""``octalgen values`` on one core with this tree against an earlier commit's, alternating, in one command.

The figure the comparisons with other programs use (``docs/performance.md``): CPU seconds (user and
system) of ``octalgen values CODE -n N --format u16 -o FILE`` run on one core, the process and
everything it starts.  Each round runs this checkout's octalgen (its working tree, uncommitted
changes included) and the baseline's (``git archive`` unpacked in a temporary folder, with its
templates where its package finds them first), in alternating order; every run must write the same
values.  Each child runs from a scratch folder, with only its own package on ``PYTHONPATH``: run
from the checkout, ``python -m octalgen`` would import the checkout's package for both, and the
editable install would give both the checkout's templates.  Both share the build cache, whose key
is the rendered source.  From the repository root::

    python benchmarks/values_vs_baseline.py .014 -n 1e7 --baseline HEAD --rounds 4
    python benchmarks/values_vs_baseline.py .6 .167 -n 1e7 --baseline 8b5adda --cpu 1
"""

from __future__ import annotations

import argparse
import hashlib
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

#: Prints where the package and its templates were found, in the child's set-up.
WHERE = (
    "import octalgen; from octalgen.shipped import shipped_folder; print(octalgen.__file__); "
    "print(shipped_folder('octalgen.templates', 'templates'))"
)


def imports(tree: Path, scratch: Path) -> tuple[str, str]:
    """Where a child given ``tree`` finds octalgen and its templates; stops unless both lie under ``tree``."""
    found = subprocess.run(
        [sys.executable, "-c", WHERE],
        cwd=scratch,
        env=dict(os.environ, PYTHONPATH=str(tree)),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    stray = [path for path in found if not Path(path).resolve().is_relative_to(tree.resolve())]
    if stray:
        raise SystemExit(f"a child given {tree} imports {stray[0]}")
    return found[0], found[1]


def run_once(tree: Path, code: str, count: str, scratch: Path) -> tuple[float, float, str]:
    """One ``values`` run with the package under ``tree``: (CPU seconds, wall seconds, its file's sha256)."""
    out = scratch / "values.u16"
    command = [sys.executable, "-m", "octalgen", "-q", "values", code, "-n", count, "--format", "u16", "-o", str(out)]
    env = dict(os.environ, PYTHONPATH=str(tree))
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # the untimed first run leaves both versions' bytecode
    began = time.monotonic()
    child = subprocess.Popen(command, cwd=scratch, env=env, stderr=subprocess.PIPE)
    stderr = child.stderr.read().decode() if child.stderr else ""
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.monotonic() - began
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{tree}: {(stderr.strip().splitlines() or ['no message'])[-1]}")
    digest = hashlib.sha256(out.read_bytes()).hexdigest()[:16]  # the same values: the same file
    out.unlink()
    return usage.ru_utime + usage.ru_stime, wall, digest


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("games", nargs="+", help="games (octal codes)")
    parser.add_argument("-n", "--count", default="1e7", help="values a run (default 1e7)")
    parser.add_argument("--baseline", default="HEAD", help="the commit compared against (default HEAD)")
    parser.add_argument("--rounds", type=int, default=4, help="runs of each version a game (default 4)")
    parser.add_argument("--cpu", type=int, default=0, help="the core every run is held to (default 0)")
    args = parser.parse_args()
    os.sched_setaffinity(0, {args.cpu})  # the children inherit it
    with tempfile.TemporaryDirectory(prefix="octalgen-values-vs-") as temp:
        baseline = Path(temp) / "baseline"
        baseline.mkdir()
        versions = [(args.baseline, unpack(args.baseline, baseline)), ("this tree", ROOT)]
        scratch = Path(temp) / "scratch"
        scratch.mkdir()
        print(f"octalgen values CODE -n {args.count} --format u16, on core {args.cpu}; CPU seconds (user + system)")
        for name, tree in versions:
            package, templates = imports(tree, scratch)
            print(f"{name}: {package}, templates {templates}")
        for code in args.games:
            for _, tree in versions:  # untimed: builds or loads each version's module
                run_once(tree, code, "1e5", scratch)
            seconds: dict[str, list[float]] = {name: [] for name, _ in versions}
            digests = set()
            for round_ in range(args.rounds):
                for name, tree in versions if round_ % 2 == 0 else versions[::-1]:
                    cpu, wall, digest = run_once(tree, code, args.count, scratch)
                    seconds[name].append(cpu)
                    digests.add(digest)
                    print(f"{code:>6} {name:>10} {cpu:8.3f} CPU-s {wall:8.3f} s wall  {digest}", flush=True)
            if len(digests) != 1:
                print(f"{code}: the versions wrote different values: {sorted(digests)}")
                return 1
            old, new = (statistics.median(seconds[name]) for name, _ in versions)
            print(f"{code:>6} median CPU-s: {args.baseline} {old:.3f}, this tree {new:.3f}: {old / new:.3f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
