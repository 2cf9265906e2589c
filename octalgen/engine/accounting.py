"""Where a run's time goes: its sessions' wall seconds, and the CPU seconds of the kernel, the
verifiers, the exact solver, the consumers.

Each room counts its own CPU seconds as it spends them (thread time for work done in the
coordinating process, the tasks' own time for verification elsewhere); at the end of a session
:class:`Accounting` takes them (:meth:`~Accounting.close`), and the coordinator's share is what
remains of the process's CPU time.  ``run --json`` prints :meth:`Accounting.roles`, and the rates
measured feed the split of the cores (:meth:`~Accounting.refine_split`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ..plan import KernelPlan
from . import split
from .split import REFINE_AFTER

#: Values a session must have handed on before its coordinator's CPU per value replaces the cached
#: figure: its start (about a quarter of a CPU-second) must count little.
COORDINATOR_AFTER = 1 << 26


@dataclass
class Accounting:
    """CPU seconds of each role, and the values each role handled, this session; the run's wall seconds.

    ``elapsed`` is the wall seconds of the run's earlier sessions (a checkpoint keeps it), and of
    this one once it is closed; ``wall`` and ``process`` this session's wall and CPU seconds.
    """

    kernel: float = 0.0
    verifiers: float = 0.0
    verifiers_here: float = 0.0
    consumers: float = 0.0
    exact: float = 0.0
    measuring: float = 0.0  # choosing the split of the cores: once per machine, not per value
    process: float = 0.0
    wall: float = 0.0
    kernel_values: int = 0
    verified_values: int = 0
    values: int = 0
    kernel_fallbacks: int = 0  # kernel calls whose threads fell back to one (the cores were busy)
    first_fallback: int | None = None
    elapsed: float = 0.0
    began: float | None = None  # the monotonic clock and the process's CPU time when the session began
    cpu_began: float = 0.0

    def begin(self) -> None:
        """A session begins now."""
        self.began, self.cpu_began = time.monotonic(), time.process_time()

    def run_seconds(self) -> float:
        """Wall seconds of the run so far: its earlier sessions', and this one's up to now."""
        return self.elapsed + (time.monotonic() - self.began if self.began is not None else 0.0)

    def close(self, pipeline, producer, exact, recovery, values: int) -> None:
        """Settle the session: the figures of the :class:`~.pipeline.Pipeline` about to close (its
        proofs and the split's measurements; None: it had none), the producer's kernel figures, the
        exact solver's and the recovery's CPU seconds (proofs tried again in this process; taken, so
        counted once), the ``values`` it proved, and its wall and CPU seconds."""
        if pipeline is not None:
            self.verifiers += pipeline.cpu_seconds
            self.verifiers_here += pipeline.cpu_seconds_here
            self.measuring += pipeline.measuring_seconds
            self.verified_values += pipeline.values
        self.verifiers += recovery.cpu_seconds
        self.verifiers_here += recovery.cpu_seconds
        recovery.cpu_seconds = 0.0
        self.kernel, self.kernel_values = producer.cpu_seconds, producer.values
        self.kernel_fallbacks, self.first_fallback = producer.fallbacks, producer.first_fallback
        self.exact = exact.cpu_seconds
        self.values = values
        assert self.began is not None  # begin() came first
        self.wall, self.process = time.monotonic() - self.began, time.process_time() - self.cpu_began
        self.elapsed += self.wall
        self.began = None

    def refine_split(self, plan: KernelPlan, threads: int, backend: str) -> None:
        """Give the split of the cores the rates this session measured (:func:`~.split.refine`)."""
        kernel, verify, coordinator = self.measured_rates()
        split.refine(plan, None, threads, kernel, verify, backend, coordinator)

    @property
    def coordinator(self) -> float:
        """CPU seconds of the coordinating process: what remains of the process's once the roles it
        hosts are counted."""
        return max(0.0, self.process - self.kernel - self.verifiers_here - self.consumers - self.exact - self.measuring)

    def roles(self) -> dict:
        """``{role: {"cpu_seconds", "per_1e8_values", "values_per_cpu_second"}}``."""
        rows = {
            "kernel": (self.kernel, self.kernel_values),
            "verifiers": (self.verifiers, self.verified_values),
            "exact solver": (self.exact, None),
            "consumers": (self.consumers, self.values),
            "split measurement": (self.measuring, None),
            "coordinator": (self.coordinator, self.values),
        }
        result = {}
        for role, (seconds, values) in rows.items():
            result[role] = {
                "cpu_seconds": round(seconds, 3),
                "per_1e8_values": round(seconds * 1e8 / self.values, 3) if self.values else None,
                "values_per_cpu_second": round(values / seconds) if values and seconds > 0 else None,
            }
        return result

    def measured_rates(self) -> tuple[float | None, float | None, float | None]:
        """(kernel, verifier) values per CPU second and the coordinator's CPU seconds per value, each
        None unless this session measured enough."""
        kernel = self.kernel_values / self.kernel if self.kernel_values >= REFINE_AFTER and self.kernel > 0 else None
        verify = (
            self.verified_values / self.verifiers
            if self.verified_values >= REFINE_AFTER and self.verifiers > 0
            else None
        )
        coordinator = self.coordinator / self.values if self.values >= COORDINATOR_AFTER else None
        return kernel, verify, coordinator
