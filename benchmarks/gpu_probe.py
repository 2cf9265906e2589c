"""The lent-GPU probe: the launch-per-round GPU path against its alternatives, in one command, JSON under $OUT.

What it measures (``.6`` to ``--count``, default 10^8), each on the same GPU in the same command:

1. registers, shared memory and spills of every kernel (``nvcc --resource-usage``): the default
   options and the cached marks;
2. ``octalgen run .6 --until COUNT --backend cuda --json`` (a fresh checkpoint directory each
   time): digest, verified values/s over the whole run, wall seconds; with ``--old DIR``
   also the same command from an older checkout (see below);
3. :func:`octalgen.cuda.bench.run_benchmark` (what ``benchmarks/cuda_bench.py --count``
   reports) with the defaults (no cached marks, asynchronous proofs) and with cached marks,
   each proof waited for: speculative and verified values/s over the whole run and in steady
   state (second half), rounds, microseconds per round, advance per round, rounds per window,
   positions recomputed per value, verification seconds on the GPU, checksums; with
   ``--old DIR`` also that checkout's ``benchmarks/cuda_bench.py --count COUNT --json``.

The JSON is written after every step: a step that fails keeps the figures of those before it.

Everything goes to ``$OUT/gpu_probe.json`` (or ``--out``), and a before/after table to stdout.
Exit status 0 when every digest is the agreed one, 1 otherwise, and 1 with one line on
stderr when there is no usable GPU (nothing else is run).  Each run takes seconds; nvcc's
compiles take most of the rest.

How to run it through the device tool, from this machine (the device has no network, so the
wheels travel with the tree; ``build/`` is ignored by git, so it may be carried)::

    pip download --only-binary=:all: --no-deps -d build/wheels cupy-cuda12x fastrlock   # here, once,
    # with octalgen's own dependencies too (numpy cffi jinja2 markupsafe pyyaml rich) if the device lacks them
    git archive COMMIT --prefix=old/ | tar -x -C build/probe                            # an older path, optional
    run(command="pip install --no-index --no-deps --target build/site build/wheels/*.whl -q && "
                "PYTHONPATH=$PWD:$PWD/build/site python benchmarks/gpu_probe.py --old build/probe/old",
        carry=["build/wheels", "build/probe"], timeout_s=300)

(cupy-cuda13x for a CUDA 13 driver; if the wheels pass the 64 MiB that the tool carries, ask
for a machine with CuPy installed.)  An uninstalled checkout finds its own ``templates/``
(:func:`octalgen.shipped.shipped_folder`), this one and the old one alike.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from octalgen.cli.arguments import count_type  # noqa: E402 - this checkout's octalgen, found through ROOT

#: The digest of .6 over G(0) ... G(10^8 - 1), standard FNV-1a-64, and octalgen 0.2's (shared/README.md).
AGREED = {10**8: ("0a4a3e704932696f", "454292924ee5b56d"), 10**9: ("d9a026479495e1c6", "8ca9e7b5bf5be17c")}


def run_command(checkout: Path, until: int, directory: Path) -> dict:
    """``octalgen run .6 --until N --backend cuda --checkpoint DIR --json`` in ``checkout``: its JSON and wall time."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(checkout), os.environ.get("PYTHONPATH", "")]))
    began = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "octalgen",
            "-q",
            "run",
            ".6",
            "--until",
            str(until),
            "--backend",
            "cuda",
            "--checkpoint",
            str(directory),
            "--json",
        ],
        check=False,
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - began
    if done.returncode:
        return {"failed": done.stderr.strip().splitlines()[-1:] or [f"exit {done.returncode}"], "seconds": seconds}
    summary = json.loads(done.stdout)
    return {"seconds": seconds, "values_per_s": until / seconds, "summary": summary, "digest": _find(summary, "digest")}


def _find(tree, key):
    """The first value of ``key`` anywhere in a JSON tree."""
    if isinstance(tree, dict):
        if key in tree:
            return tree[key]
        tree = list(tree.values())
    if isinstance(tree, list):
        for item in tree:
            found = _find(item, key)
            if found is not None:
                return found
    return None


def old_bench(checkout: Path, until: int, scratch: Path) -> dict:
    """The old checkout's ``benchmarks/cuda_bench.py --count N --json``."""
    out = scratch / "old-bench.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(checkout), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run(
        [sys.executable, "benchmarks/cuda_bench.py", "--count", str(until), "--json", str(out)],
        check=False,
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode or not out.exists():
        return {"failed": done.stderr.strip().splitlines()[-1:] or [f"exit {done.returncode}"]}
    return {"runs": json.loads(out.read_text()), "stdout": done.stdout}


def resources(options) -> dict:
    """Registers, shared memory and spills of each kernel, from nvcc."""
    from octalgen.api import rare_table
    from octalgen.cuda.cuda_plan import make_cuda_plan
    from octalgen.cuda.kernels import compile_kernels
    from octalgen.cuda.occupancy import parse_resource_usage

    usage = compile_kernels(make_cuda_plan(rare_table(".6"), options=options)).resource_usage
    return {kernel: {"registers": r, "shared_bytes": b} for kernel, (r, b) in parse_resource_usage(usage).items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=count_type, default=10**8, help="values of .6 (default 1e8)")
    parser.add_argument("--old", type=Path, help="an older checkout to run beside (git archive COMMIT)")
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", ".")) / "gpu_probe.json")
    args = parser.parse_args()

    from octalgen.cuda.runtime import unavailable

    reason = unavailable()
    if reason is not None:
        print(f"gpu_probe: {reason}", file=sys.stderr)
        return 1
    import cupy

    from octalgen.cuda.bench import run_benchmark
    from octalgen.cuda.cuda_plan import CudaOptions
    from octalgen.cuda.plugin import CudaKernels
    from octalgen.cuda.runtime import device_defaults

    arch, window = device_defaults()
    old_options = CudaOptions(cache_final=True, arch=arch)
    figures = {
        "device": cupy.cuda.runtime.getDeviceProperties(0)["name"].decode(),
        "arch": arch,
        "window": window,
        "count": args.count,
        "agreed_digests": AGREED.get(args.count),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)

    def save() -> None:  # after every step (see above)
        args.out.write_text(json.dumps(figures, indent=1, default=str))

    with tempfile.TemporaryDirectory() as scratch_name:
        scratch = Path(scratch_name)
        figures["resources"] = {
            "new": resources(CudaOptions(arch=arch)),
            "old_options": resources(old_options),
        }
        save()
        figures["run"] = {"new": run_command(ROOT, args.count, scratch / "new")}
        save()
        figures["bench"] = {"new": run_benchmark(".6", args.count, make_kernels=CudaKernels)}
        save()
        figures["bench"]["old_options"] = run_benchmark(
            ".6", args.count, make_kernels=lambda: CudaKernels(options=old_options, asynchronous=False)
        )
        save()
        if args.old:
            figures["run"]["old_checkout"] = run_command(args.old.resolve(), args.count, scratch / "old")
            figures["bench"]["old_checkout"] = old_bench(args.old.resolve(), args.count, scratch)
            save()

    print(f"{figures['device']} ({arch}), .6 to {args.count:.3g}; JSON in {args.out}")
    for name, run in figures["run"].items():
        print(
            f"run {name:>12}: digest {run.get('digest')} {run.get('values_per_s', 0) / 1e6:8.2f} M verified "
            f"values/s over {run.get('seconds', 0):.1f} s {run.get('failed', '')}"
        )
    for name, bench in figures["bench"].items():
        if "runs" in bench or "failed" in bench:
            print(f"bench {name:>10}: see the JSON {bench.get('failed', '')}")
            continue
        print(
            f"bench {name:>10}: speculative {bench['speculative_values_per_s'] / 1e6:.2f} M/s "
            f"(steady {(bench.get('speculative_steady_values_per_s') or 0) / 1e6:.2f}), verified "
            f"{bench['verified_values_per_s'] / 1e6:.2f} M/s (steady "
            f"{(bench.get('verified_steady_values_per_s') or 0) / 1e6:.2f}), {bench['microseconds_per_round']:.2f} "
            f"us/round, {bench['rounds']} rounds, checksum {bench['checksum']}"
        )
    for name, kernels in figures["resources"].items():
        print(f"registers {name:>11}: " + ", ".join(f"{k} {v['registers']}" for k, v in kernels.items()))
    agreed = set(AGREED.get(args.count, ()))
    digests = [r.get("digest") for r in figures["run"].values()]
    digests += [b["checksum"] for b in figures["bench"].values() if "checksum" in b]
    return 0 if not agreed or all(d in agreed for d in digests) else 1


if __name__ == "__main__":
    sys.exit(main())
