"""Where verification tasks run: this process, local worker processes, or a Dask cluster.

Every executor has ``submit(fn, *args)`` returning a future with ``result()``, ``done()`` and
``cancel()``, and ``close()``.  Tasks are plain picklable calls
(:func:`octalgen.cpu.pipeline.verify_interval` on a :class:`~octalgen.cpu.verify.Verifier`
and a stretch of codes), so any engine that runs Python functions can run them.
"""

from __future__ import annotations

import os
import tempfile
import warnings
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from multiprocessing import get_context

import numpy as np

from ..cpu.pipeline import verify_interval

from ..errors import InputError, ToolMissingError

#: Seconds to wait for a Dask scheduler to answer.
CONNECT_TIMEOUT = 20.0


@dataclass(frozen=True)
class SharedArray:
    """A read-only array in a file that local worker processes map instead of unpickling it."""

    path: str
    dtype: str
    length: int

    def array(self) -> np.ndarray:
        return _mapped(self)


@lru_cache(maxsize=4)
def _mapped(shared: SharedArray) -> np.ndarray:
    return np.memmap(shared.path, dtype=np.dtype(shared.dtype), mode="r", shape=(shared.length,))


def verify_task(verifier, codes, base, prefix, a, b):
    """A verification task: :func:`~octalgen.cpu.pipeline.verify_interval` with a shared prefix."""
    if isinstance(prefix, SharedArray):
        prefix = prefix.array()
    return verify_interval(verifier, codes, base, prefix, a, b)


class _Done:
    """A finished future (verification run in this process)."""

    def __init__(self, value):
        self._value = value

    def result(self, timeout=None):
        return self._value

    def done(self) -> bool:
        return True

    def cancel(self) -> bool:
        return False


class InProcess:
    """Runs each task at once, in this process (``--workers 0``)."""

    workers = 1

    def submit(self, fn, *args):
        return _Done(fn(*args))

    def share(self, array: np.ndarray):
        """A handle to pass ``array`` to many tasks (here: the array itself)."""
        return array

    def close(self) -> None:
        pass


class LocalProcesses:
    """A pool of ``workers`` local processes (spawned: no inherited threads or locks)."""

    def __init__(self, workers: int):
        self.workers = workers
        self._pool = ProcessPoolExecutor(workers, mp_context=get_context("spawn"))
        self._files: list[str] = []

    def submit(self, fn, *args):
        return self._pool.submit(fn, *args)

    def share(self, array: np.ndarray) -> SharedArray:
        """Write ``array`` to a file in /dev/shm (memory) that the workers map."""
        handle, path = tempfile.mkstemp(prefix="octalgen-prefix-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
        with os.fdopen(handle, "wb") as out:
            out.write(np.ascontiguousarray(array).tobytes())
        self._files.append(path)
        return SharedArray(path, array.dtype.str, len(array))

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
        for path in self._files:
            os.unlink(path)


class DaskCluster:
    """Tasks go to a running Dask distributed scheduler (``--scheduler tcp://host:port``).

    The workers need octalgen and a C compiler (each builds or loads the verifier from its own
    cache).  Results come back in submission order through the futures.
    """

    def __init__(self, address: str, timeout: float | None = None):
        try:
            from distributed import Client
        except ImportError:
            raise ToolMissingError("--scheduler needs Dask distributed, which is not installed: "
                                   "pip install 'octalgen[cluster]'") from None
        # Each task carries its chunk of codes, so Dask finds every graph "large": not the user's concern.
        warnings.filterwarnings("ignore", message="Sending large graph", category=UserWarning)
        try:
            self._client = Client(address, timeout=timeout or CONNECT_TIMEOUT, set_as_default=False)
        except (OSError, TimeoutError, ValueError) as exc:
            raise InputError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
        self.workers = max(1, sum(w.get("nthreads", 1) for w in self._client.scheduler_info()["workers"].values()))

    def submit(self, fn, *args):
        return self._client.submit(fn, *args, pure=False)

    def share(self, array: np.ndarray):
        """Send ``array`` to every worker once; tasks given the handle receive the array."""
        return self._client.scatter(array, broadcast=True)

    def close(self) -> None:
        self._client.close()


def make_executor(workers: int, scheduler: str | None):
    """The executor for ``--workers`` / ``--scheduler``."""
    if scheduler:
        return DaskCluster(scheduler)
    if workers <= 0:
        return InProcess()
    return LocalProcesses(workers)
