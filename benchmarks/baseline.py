"""An earlier commit's verifier, built from this checkout's git history and timed beside this one.

A speed-up is a ratio against the code it replaces, built and run the same way on the same
inputs.  :func:`compare_verifiers` unpacks an earlier commit's whole package (``git archive``:
its ``octalgen/`` and ``templates/``) into a temporary folder and runs the same child script
with each package on its ``PYTHONPATH``, alternating, so each uses its own templates,
generator and verifier (with whatever prefix check it had).  Both are given the same files:

* the exact values G(0) ... G(P - 1), the prefix, memory-mapped read-only as a worker process
  maps the run's shared prefix;
* the stored codes (u8, or u16 with ``storage="u16"``) of heaps ``base`` ... P + N - 1 (exact),
  proven from heap P in calls of ``chunk`` heaps, each with the engine's recent history before it
  (:data:`~octalgen.engine.executors.VERIFY_HISTORY` heaps beyond the kernel's window).

The figure is the CPU time of the verifying thread, as the engine counts a task, after one untimed
call that builds or loads the module and checks the prefix.  Both must prove every heap.
``bench_verifier.py`` uses it; it needs a git checkout of octalgen that holds the commit (an
installed wheel has no history).
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

from octalgen.errors import ComputationError, ToolMissingError

#: The verifier before its CPU per value was halved: the code bench_verifier.py measures against.
BASELINE_COMMIT = "420a5e8"

#: This checkout's root (the folder holding ``octalgen/``).
ROOT = Path(__file__).resolve().parents[1]

#: The child: plans the game with whichever octalgen PYTHONPATH gives, times its verifier on the
#: files, prints one JSON line.  Only what every version since the baseline has: plan_game,
#: make_plan(table, storage=...), Verifier(plan) and verify(codes, base, prefix, a, b).
CHILD = r"""
import json, sys, time
import numpy as np
import octalgen
from octalgen.cpu.verify import Verifier
from octalgen.game import parse_game
from octalgen.plan import make_plan
try:
    from octalgen.engine.planning import plan_game
except ImportError:  # the baseline's: before the engine's planning had one module
    from octalgen.engine.plans import plan_game

folder, code, storage = sys.argv[1], sys.argv[2], sys.argv[3]
first, base, count, chunk, history, rounds = (int(a) for a in sys.argv[4:10])
plan, _ = plan_game(parse_game(code))
if storage != plan.encoding.kind:
    plan = make_plan(plan.table, storage=storage)
prefix = np.memmap(folder + "/prefix.u16", dtype=np.uint16, mode="r")
codes = np.fromfile(folder + "/codes." + storage, dtype=np.uint8 if storage == "u8" else np.uint16)
verifier = Verifier(plan)
recent = max(base, first - plan.window - history)
verifier.verify(codes[recent - base: first + 1 - base], recent, prefix, first, first + 1)  # build, check the prefix
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
    found = subprocess.run(
        ["git", "-C", str(ROOT), "cat-file", "-e", f"{commit}^{{commit}}"], capture_output=True, check=False
    )
    return None if found.returncode == 0 else f"this checkout's history has no commit {commit}"


def unpack(commit: str, folder: Path) -> Path:
    """``commit``'s octalgen/ and templates/ under ``folder``, templates as ``octalgen.templates`` (as installed)."""
    reason = unavailable(commit)
    if reason is not None:
        raise ToolMissingError(f"cannot build the verifier of {commit}: {reason}")
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", commit, "octalgen", "templates"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    (folder / "templates").rename(folder / "octalgen" / "templates")
    (folder / "octalgen" / "templates" / "__init__.py").touch()
    return folder


def compare_verifiers(
    code: str,
    values: np.ndarray,
    first: int,
    count: int,
    chunk: int,
    history: int,
    rounds: int,
    commit: str = BASELINE_COMMIT,
    prefix_length: int | None = None,
    storage: str | None = None,
) -> tuple[VerifierTiming, VerifierTiming]:
    """``commit``'s verifier and this checkout's, each proving heaps ``first`` ... ``first + count - 1``
    of ``code`` from ``values`` (exact: G(0) ... at least to the last heap), ``rounds`` times,
    alternating, each in a child process of its own.  ``history``: heaps before each call beyond the
    window; ``prefix_length``: the prefix given (default ``first``); ``storage``: ``"u8"`` or
    ``"u16"`` (default: the game's plan's).  Returns (baseline, this checkout)."""
    from octalgen.engine.planning import plan_game
    from octalgen.game import parse_game
    from octalgen.plan import make_plan

    plan, _ = plan_game(parse_game(code), required=True)
    storage = storage or plan.encoding.kind
    if storage != plan.encoding.kind:
        plan = make_plan(plan.table, storage=storage)
    base = max(plan.start - plan.window, first - plan.window - history)
    with tempfile.TemporaryDirectory(prefix="octalgen-baseline-") as temp:
        data = Path(temp)
        np.asarray(values[: first if prefix_length is None else prefix_length], dtype=np.uint16).tofile(
            data / "prefix.u16"
        )
        plan.encoding.encode_array(values[base : first + count]).astype(plan.encoding.dtype).tofile(
            data / f"codes.{storage}"
        )
        old_tree = unpack(commit, Path(tempfile.mkdtemp(dir=temp)))
        arguments = [str(data), code, storage, str(first), str(base), str(count), str(chunk), str(history), "1"]

        def child(tree: Path) -> dict:
            done = subprocess.run(
                [sys.executable, "-c", CHILD, *arguments],
                env=dict(os.environ, PYTHONPATH=str(tree)),
                capture_output=True,
                text=True,
                cwd=temp,
                check=False,
            )
            if done.returncode:
                last = (done.stderr.strip().splitlines() or ["no message"])[-1]
                raise ComputationError(f"the verifier of {tree} failed: {last}")
            result = json.loads(done.stdout.strip().splitlines()[-1])
            if not result["octalgen"].startswith(str(tree)):
                raise ComputationError(f"the child imported {result['octalgen']}, not the package of {tree}")
            return result

        old, new = [], []
        for _ in range(rounds):  # alternating: both share whatever load there is
            old.append(child(old_tree))
            new.append(child(ROOT))
    return (
        VerifierTiming(commit, tuple(r["seconds"][0] for r in old), old[0]["scanned"]),
        VerifierTiming("this tree", tuple(r["seconds"][0] for r in new), new[0]["scanned"]),
    )
