"""Every figure the GPU machine is lent for, in one command: JSON under ``$OUT``, a table last.

The lent machine (an H100 or H200 with 16 host cores) reaches no package index, so octalgen runs
from this checkout (``python -m octalgen``) with its missing dependencies carried as wheels::

    pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux2014_x86_64 -d .whl cffi pycparser          # here, once (.whl is ignored)
    run(command="pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && "
                "PYTHONPATH=/tmp/site python3 benchmarks/device_probe.py", carry=[".whl"], timeout_s=540)

Steps, most important first; each runs in a child with a time limit, and the JSON is written
after every step, so a step that hangs or fails costs only itself:

1. the machine: ``lscpu``, ``nvidia-smi``, the compilers;
2. ``octalgen run .6 --until 1e9 --backend cuda --json``: verified values/s over the whole run
   and the digest (``d9a026479495e1c6``);
3. ``octalgen run .6 --until 3e8 --json`` with the automatic split: values/s, the split's
   predicted rate, CPU seconds per role per 10^8 values;
4. a run begun with ``--backend c`` (to 3 * 10^7) and continued with ``--backend cuda`` from the
   same checkpoint (to 10^8): the digest ``0a4a3e704932696f``;
5. ``benchmarks/gpu_probe.py --count 1e8`` (registers, the CUDA benchmark with new and old
   options);
6. ``benchmarks/bench_kernel_threads.py --threads 1,2,4,8,12,16 --no-baseline``;
7. ``benchmarks/scaling.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = Path(os.environ.get("OUT", "."))
DIGESTS = {10**8: "0a4a3e704932696f", 10**9: "d9a026479495e1c6"}


def shell(command: str, limit: float) -> dict:
    """Run ``command`` in the checkout: exit status, seconds, and the ends of its output."""
    began = time.perf_counter()
    try:
        done = subprocess.run(command, check=False, shell=True, cwd=ROOT, capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired as stopped:
        return {
            "command": command,
            "failed": f"no result in {limit} s",
            "seconds": time.perf_counter() - began,
            "stdout": (stopped.stdout or b"")[-4000:].decode(errors="replace") if stopped.stdout else "",
        }
    return {
        "command": command,
        "status": done.returncode,
        "seconds": round(time.perf_counter() - began, 2),
        "stdout": done.stdout[-20000:],
        "stderr": done.stderr[-3000:],
    }


def octalgen_run(arguments: str, limit: float) -> dict:
    """``octalgen -q run ARGUMENTS --json``: the step's record with the summary parsed."""
    step = shell(f"{sys.executable} -m octalgen -q run {arguments} --json", limit)
    try:
        summary = json.loads(step.pop("stdout"))
    except (ValueError, KeyError):
        return step
    for bulky in ("counts", "first_heap", "zero_positions"):
        summary.pop(bulky, None)
    step["summary"] = summary
    return step


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    figures: dict = {"began": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}
    os.environ.setdefault("OCTALGEN_CACHE_DIR", "/tmp/octalgen-cache")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    scratch = Path(tempfile.mkdtemp(prefix="octalgen-device-"))

    def save(name: str, record: dict) -> None:
        figures[name] = record
        (OUT / "device.json").write_text(json.dumps(figures, indent=1, default=str))
        print(
            f"[{time.strftime('%H:%M:%S')}] {name}: {record.get('seconds', '')} s "
            f"{record.get('failed', '')}{'status ' + str(record['status']) if record.get('status') else ''}",
            flush=True,
        )

    save(
        "machine",
        {
            key: shell(command, 30)["stdout"]
            for key, command in {
                "lscpu": "lscpu",
                "nvidia_smi": "nvidia-smi",
                "nproc": "nproc",
                "python": f"{sys.executable} -VV",
                "cc": "cc --version | head -1",
                "nvcc": "nvcc --version | tail -2",
            }.items()
        },
    )
    save("gpu_1e9", octalgen_run(f".6 --until 1e9 --backend cuda --checkpoint {scratch}/g9", 120))
    save("cpu_3e8", octalgen_run(f".6 --until 3e8 --checkpoint {scratch}/c3", 90))
    begun = octalgen_run(f".6 --until 3e7 --backend c --checkpoint {scratch}/cc", 40)
    save(
        "c_then_cuda",
        {"c": begun, "cuda": octalgen_run(f".6 --until 1e8 --backend cuda --checkpoint {scratch}/cc", 50)},
    )
    save("gpu_probe", shell(f"{sys.executable} benchmarks/gpu_probe.py --count 1e8 --out {OUT}/gpu_probe.json", 100))
    save(
        "kernel_threads",
        shell(f"{sys.executable} benchmarks/bench_kernel_threads.py --threads 1,2,4,8,12,16 --no-baseline", 60),
    )
    save("scaling", shell(f"{sys.executable} benchmarks/scaling.py", 60))

    print("\nstep            seconds  digest             values/s")
    for name in ("gpu_1e9", "cpu_3e8"):
        summary = figures[name].get("summary", {})
        print(
            f"{name:<15} {figures[name].get('seconds', 0):>7}  {summary.get('fnv1a64', '-'):<18} "
            f"{summary.get('session', {}).get('values_per_second', '-')}  {figures[name].get('failed', '')}"
        )
    cuda = figures["c_then_cuda"]["cuda"].get("summary", {})
    print(f"c then cuda     {'':>7}  {cuda.get('fnv1a64', '-'):<18} (agreed {DIGESTS[10**8]})")
    for name in ("gpu_probe", "kernel_threads", "scaling"):
        print(f"--- {name} ({figures[name].get('seconds')} s) ---")
        print(figures[name].get("stdout", "")[-2500:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
