"""Run the compiled kernels on a GPU through CuPy (the optional ``cuda`` extra).

CuPy is imported only inside the functions here, so importing this module
costs nothing on a machine without it; :func:`unavailable` says in one line
why the GPU backends cannot run (no driver, no CuPy, no GPU, no nvcc).

:class:`CudaEngine` is the GPU engine of :mod:`.driver`:

* ``speculate`` keeps two value buffers and the round state on the device and
  replays a CUDA graph of ``rounds_per_launch`` round kernels (phases 0..5
  repeating, so the host never has to intervene between rounds); after each
  replay it reads the 11-word state to see how far the front has come.
* ``verify`` launches the verifier over a whole range at once.

Both record timings (CUDA events) and figures in :attr:`CudaEngine.report`.
"""

from __future__ import annotations

import ctypes
import logging
import time
from dataclasses import dataclass, field, replace
from functools import lru_cache

import numpy as np

from ..errors import ToolMissingError
from . import twin
from .kernels import compile_kernels, find_nvcc
from .plan import CudaOptions, CudaPlan

log = logging.getLogger("octalgen")

#: Front log entries kept on the device (rounds beyond it still run, unlogged).
FRONT_LOG_CAPACITY = 1 << 22


@lru_cache(maxsize=1)
def unavailable() -> str | None:
    """None when a CUDA GPU, its driver, CuPy and nvcc are all here; else why not, in one line."""
    for library in ("libcuda.so.1", "libcuda.so", "nvcuda.dll"):
        try:
            ctypes.CDLL(library)
            break
        except OSError:
            continue
    else:
        return "no NVIDIA driver (libcuda) on this machine, so no CUDA GPU"
    try:
        import cupy
    except ImportError:
        return "CuPy is not installed (pip install 'octalgen[cuda]')"
    except Exception as exc:  # a broken CuPy install
        return f"CuPy cannot be imported: {type(exc).__name__}: {exc}"
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return "no CUDA GPU found"
    except Exception as exc:  # CUDARuntimeError: driver present but no usable device
        return f"no usable CUDA GPU: {exc}"
    try:
        find_nvcc()
    except ToolMissingError as exc:
        return str(exc)
    return None


def require_gpu() -> None:
    """Raise :class:`ToolMissingError` with the one-line reason when the GPU backends cannot run."""
    reason = unavailable()
    if reason is not None:
        raise ToolMissingError(reason)


@dataclass
class CudaEngine:
    """The GPU engine of :func:`octalgen.cuda.driver.compute`.

    Parameters
    ----------
    window : int
        Positions per round, a multiple of 32 (one block per 32).  Default: 32
        per multiprocessor, so every SM computes one block each round.
    options : CudaOptions
        Kernel shapes; ``arch`` is set from the device.
    rounds_per_launch : int
        Round kernels per graph replay (a multiple of 6).

    Attributes
    ----------
    report : dict
        Figures of the last ``speculate`` and ``verify`` calls.
    """

    window: int | None = None
    options: CudaOptions = field(default_factory=CudaOptions)
    rounds_per_launch: int = 240
    report: dict = field(default_factory=dict)

    def __post_init__(self):
        require_gpu()
        import cupy

        device = cupy.cuda.Device()
        major, minor = device.compute_capability[:-1], device.compute_capability[-1]
        self.options = replace(self.options, arch=f"sm_{major}{minor}")
        if self.window is None:
            self.window = 32 * device.attributes["MultiProcessorCount"]
        if self.window % 32 or self.window <= 0:
            raise ValueError(f"window must be a positive multiple of 32, not {self.window}")
        if self.rounds_per_launch % twin.PHASES:
            raise ValueError(f"rounds_per_launch must be a multiple of {twin.PHASES}")
        self._modules: dict[str, object] = {}

    def _function(self, plan: CudaPlan, name: str):
        import cupy

        compiled = compile_kernels(plan)
        module = self._modules.get(compiled.artefact.name)
        if module is None:
            module = self._modules[compiled.artefact.name] = cupy.RawModule(path=str(compiled.cubin))
            self.report["resource_usage"] = compiled.resource_usage
        return module.get_function(name)

    def speculate(self, plan: CudaPlan, prefix: np.ndarray, end: int) -> np.ndarray:
        import cupy

        kernel = self._function(plan, "octal_round")
        start = plan.start
        buffers = [cupy.zeros(end, dtype=cupy.uint8) for _ in range(2)]
        for buffer in buffers:
            buffer[:start] = cupy.asarray(np.asarray(prefix[:start], dtype=np.uint8))
        state = cupy.asarray(twin.initial_state(start))
        fronts = cupy.zeros(FRONT_LOG_CAPACITY, dtype=cupy.int64)
        grid, block = (self.window // 32,), (len(plan.groups) * 32,)
        cupy.cuda.runtime.deviceSynchronize()  # the copies above ran on the default stream
        stream = cupy.cuda.Stream(non_blocking=True)
        with stream:
            stream.begin_capture()
            for r in range(self.rounds_per_launch):
                phase = r % twin.PHASES
                read, write = buffers[phase % 2], buffers[1 - phase % 2]
                kernel(grid, block, (read, write, state, fronts, np.int64(FRONT_LOG_CAPACITY),
                                     np.int64(self.window), np.int64(end), np.int32(phase)))
            graph = stream.end_capture()
        began, finished = cupy.cuda.Event(), cupy.cuda.Event()
        rounds, front, wall = 0, start, time.perf_counter()
        began.record(stream)
        while front < end:
            graph.launch(stream)
            rounds += self.rounds_per_launch
            host_state = cupy.asnumpy(state, stream=stream)  # waits for the replay
            if host_state[twin.OVERFLOW] != twin.NO_POSITION:
                raise OverflowError(int(host_state[twin.OVERFLOW]))
            front = twin.next_front(host_state, rounds % 3, self.window, end)
        finished.record(stream)
        finished.synchronize()
        seconds = cupy.cuda.get_elapsed_time(began, finished) / 1000
        converged = int(host_state[twin.ROUND])
        logged = cupy.asnumpy(fronts[: min(converged, FRONT_LOG_CAPACITY)])
        logged = logged[logged < end]
        self.report["speculation"] = {
            "values": end - start, "seconds": seconds, "wall_seconds": time.perf_counter() - wall,
            "rounds_launched": rounds, "window": self.window,
            "advances": np.diff(np.append(logged, end)) if len(logged) else np.zeros(0, np.int64),
        }
        return cupy.asnumpy(buffers[rounds % 2])

    def verify(self, plan: CudaPlan, codes: np.ndarray, lo: int, hi: int) -> int | None:
        import cupy

        kernel = self._function(plan, "octal_verify")
        x = cupy.asarray(np.asarray(codes[:hi], dtype=np.uint8))
        scan = cupy.asarray(plan.scan_table(codes, hi))
        result = cupy.asarray(np.array([twin.NO_POSITION, 0, 0], dtype=np.int64))
        block = plan.options.verify_block
        began, finished = cupy.cuda.Event(), cupy.cuda.Event()
        began.record()
        kernel((-(-(hi - lo) // block),), (block,),
               (x, np.int64(lo), np.int64(hi), scan, np.int32(len(scan)), result))
        finished.record()
        finished.synchronize()
        first_bad, steps, longest = (int(v) for v in cupy.asnumpy(result))
        self.report["verification"] = {
            "values": hi - lo, "seconds": cupy.cuda.get_elapsed_time(began, finished) / 1000,
            "scan_steps_mean": steps / max(hi - lo, 1), "scan_steps_max": longest,
        }
        return None if first_bad == twin.NO_POSITION else first_bad
