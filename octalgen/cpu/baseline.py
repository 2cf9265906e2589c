"""An earlier commit's verifier, built from this checkout's git history and timed beside this one.

A speed-up is a ratio against the code it replaces, built and run the same way on the same
inputs.  :func:`compare_verifiers` unpacks an earlier commit's whole package (``git archive``:
its ``octalgen/`` and ``templates/``) into a temporary folder and runs the same child script
with each package on its ``PYTHONPATH``, alternating, so each uses its own templates,
generator and verifier (with whatever prefix check it had).  Both are given the same files:

* the exact values G(0) ... G(P - 1), the prefix, memory-mapped read-only as a worker process
  maps the run's shared prefix;
* the u8 codes of heaps ``base`` ... P + N - 1 (the kernel's codes: they are exact), proven from
  heap P in calls of ``chunk`` heaps, each with the engine's recent history before it
  (:data:`~octalgen.engine.executors.VERIFY_HISTORY` heaps beyond the kernel's window).

The figure is the CPU time of the verifying thread, as the engine counts a task.  Both must
prove every heap.  ``octalgen bench`` and ``benchmarks/bench_verifier.py`` use it; it needs a
git checkout of octalgen that holds the commit (an installed wheel has no history).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import ComputationError, ToolMissingError

#: The verifier issue 27 measured: 0.91 M values/s per core on a 2-core Intel machine.
BASELINE_COMMIT = "c62a57f"

#: This checkout's root (the folder holding ``octalgen/``).
ROOT = Path(__file__).resolve().parents[2]

#: The child: plans the game with whichever octalgen PYTHONPATH gives, times its verifier on the
#: files, prints one JSON line.  Only what every version since c62a57f has: plan_game (or, at
#: c62a57f, the engine's kernel_start), Verifier(plan) and verify(codes, base, prefix, a, b).
CHILD = r"""
import json, sys, time
import numpy as np
import octalgen
from octalgen.cpu.verify import Verifier
from octalgen.game import parse_game
try:
    from octalgen.engine.planning import plan_game
except ImportError:  # c62a57f: the engine's kernel_start
    from octalgen.engine.core import kernel_start as plan_game

folder, code = sys.argv[1], sys.argv[2]
first, base, count, chunk, history, rounds = (int(a) for a in sys.argv[3:9])
plan, _ = plan_game(parse_game(code))
prefix = np.memmap(folder + "/prefix.u16", dtype=np.uint16, mode="r")
codes = np.fromfile(folder + "/codes.u8", dtype=np.uint8)
verifier = Verifier(plan)
verifier.module  # built or loaded before the clock starts
seconds, scanned = [], 0
for _ in range(rounds):
    began = time.thread_time()
    for a in range(first, first + count, chunk):
        b = min(a + chunk, first + count)
        recent = max(base, a - plan.window - history)  # as the engine's verify_interval
        result = verifier.verify(codes[recent - base: b - base], recent, prefix, a, b)
        if not result.proven:
            raise SystemExit(f"not proven: {result}")
        scanned += result.options_scanned
    seconds.append(time.thread_time() - began)
print(json.dumps({"octalgen": octalgen.__file__, "seconds": seconds, "scanned": scanned // rounds}))
"""


@dataclass(frozen=True)
class VerifierTiming:
    """One version's verifier on the inputs: CPU seconds per round and options scanned per round."""

    version: str
    seconds: tuple[float, ...]
    scanned: int

    @property
    def median(self) -> float:
        return float(np.median(self.seconds))


def unavailable(commit: str = BASELINE_COMMIT) -> str | None:
    """Why ``commit``'s package cannot be unpacked here (None: it can)."""
    if shutil.which("git") is None:
        return "git is not installed"
    if not (ROOT / ".git").exists():
        return "this octalgen is not a git checkout (an installed copy has no history)"
    found = subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e", f"{commit}^{{commit}}"], capture_output=True)
    return None if found.returncode == 0 else f"this checkout's history has no commit {commit}"


def unpack(commit: str, folder: Path) -> Path:
    """``commit``'s octalgen/ and templates/ under ``folder``, templates as ``octalgen.templates`` (as installed)."""
    reason = unavailable(commit)
    if reason is not None:
        raise ToolMissingError(f"cannot build the verifier of {commit}: {reason}")
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "octalgen", "templates"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    (folder / "templates").rename(folder / "octalgen" / "templates")
    (folder / "octalgen" / "templates" / "__init__.py").touch()
    return folder


def compare_verifiers(code: str, values: np.ndarray, first: int, count: int, chunk: int, history: int,
                      rounds: int, commit: str = BASELINE_COMMIT,
                      prefix_length: int | None = None) -> tuple[VerifierTiming, VerifierTiming]:
    """``commit``'s verifier and this checkout's, each proving heaps ``first`` ... ``first + count - 1``
    of ``code`` from ``values`` (exact: G(0) ... at least to the last heap), ``rounds`` times,
    alternating after one untimed call each (it builds or loads the module).  ``history``: heaps
    before each call beyond the window; ``prefix_length``: the prefix given (default ``first``; a
    run's is at most 2^23 values, and c62a57f's verifier checked it at every call).  Returns
    (baseline, this checkout)."""
    from ..engine.planning import plan_game
    from ..game import parse_game

    plan, _ = plan_game(parse_game(code), required=True)
    if plan.encoding.kind != "u8":
        raise ComputationError(f"{code} stores u16 values: the baseline verifier is fed u8 codes")
    base = max(plan.start - plan.window, first - plan.window - history)
    with tempfile.TemporaryDirectory(prefix="octalgen-baseline-") as temp:
        data = Path(temp)
        np.asarray(values[: first if prefix_length is None else prefix_length], dtype=np.uint16).tofile(
            data / "prefix.u16")
        plan.encoding.encode_array(values[base: first + count]).astype(np.uint8).tofile(data / "codes.u8")
        old_tree = unpack(commit, Path(tempfile.mkdtemp(dir=temp)))
        arguments = [str(data), code, str(first), str(base), str(count), str(chunk), str(history), "1"]

        def child(tree: Path) -> dict:
            done = subprocess.run([sys.executable, "-c", CHILD, *arguments], env=dict(os.environ, PYTHONPATH=str(tree)),
                                  capture_output=True, text=True, cwd=temp)
            if done.returncode:
                last = (done.stderr.strip().splitlines() or ["no message"])[-1]
                raise ComputationError(f"the verifier of {tree} failed: {last}")
            result = json.loads(done.stdout.strip().splitlines()[-1])
            if not result["octalgen"].startswith(str(tree)):
                raise ComputationError(f"the child imported {result['octalgen']}, not the package of {tree}")
            return result

        child(old_tree), child(ROOT)
        old, new = [], []
        for _ in range(rounds):  # alternating: both share whatever load there is
            old.append(child(old_tree))
            new.append(child(ROOT))
    return (VerifierTiming(commit, tuple(r["seconds"][0] for r in old), old[0]["scanned"]),
            VerifierTiming("this tree", tuple(r["seconds"][0] for r in new), new[0]["scanned"]))
