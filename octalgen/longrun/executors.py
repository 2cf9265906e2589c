"""Where verification tasks run: this process, local worker processes, or a Dask cluster.

Every executor has ``submit(fn, *args)`` returning a future with ``result()``, ``done()`` and
``cancel()``, and ``close()``.  Tasks are plain picklable calls
(:func:`octalgen.cpu.pipeline.verify_interval` on a :class:`~octalgen.cpu.verify.Verifier`
and a stretch of codes), so any engine that runs Python functions can run them.
"""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

from ..errors import InputError, ToolMissingError

#: Seconds to wait for a Dask scheduler to answer.
CONNECT_TIMEOUT = 20.0


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

    def close(self) -> None:
        pass


class LocalProcesses:
    """A pool of ``workers`` local processes (spawned: no inherited threads or locks)."""

    def __init__(self, workers: int):
        self.workers = workers
        self._pool = ProcessPoolExecutor(workers, mp_context=get_context("spawn"))

    def submit(self, fn, *args):
        return self._pool.submit(fn, *args)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


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
        try:
            self._client = Client(address, timeout=timeout or CONNECT_TIMEOUT, set_as_default=False)
        except (OSError, TimeoutError, ValueError) as exc:
            raise InputError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
        self.workers = max(1, sum(w.get("nthreads", 1) for w in self._client.scheduler_info()["workers"].values()))

    def submit(self, fn, *args):
        return self._client.submit(fn, *args, pure=False)

    def close(self) -> None:
        self._client.close()


def make_executor(workers: int, scheduler: str | None):
    """The executor for ``--workers`` / ``--scheduler``."""
    if scheduler:
        return DaskCluster(scheduler)
    if workers <= 0:
        return InProcess()
    return LocalProcesses(workers)
