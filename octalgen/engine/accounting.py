"""Where a run's CPU time goes: the kernel, the verifiers, the exact solver, the consumers.

The engine adds each role's CPU seconds as it spends them (thread time for work done in the
coordinating process, the tasks' own time for verification elsewhere); the coordinator's share
is what remains of the process's CPU time.  ``run --json`` prints :meth:`Accounting.roles`, and
the rates measured feed the split of the cores (:func:`~.split.refine`).
"""

from __future__ import annotations

from dataclasses import dataclass

from .split import REFINE_AFTER

#: Values a session must have handed on before its coordinator's CPU per value replaces the cached
#: figure: its start (about a quarter of a CPU-second) must count little.
COORDINATOR_AFTER = 1 << 26


@dataclass
class Accounting:
    """CPU seconds of each role, and the values each role handled, this session."""

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

    @property
    def coordinator(self) -> float:
        """CPU seconds of the coordinating process: what remains of the process's once the roles it
        hosts are counted."""
        return max(0.0, self.process - self.kernel - self.verifiers_here - self.consumers - self.exact
                   - self.measuring)

    def roles(self) -> dict:
        """``{role: {"cpu_seconds", "per_1e8_values", "values_per_cpu_second"}}``."""
        rows = {"kernel": (self.kernel, self.kernel_values), "verifiers": (self.verifiers, self.verified_values),
                "exact solver": (self.exact, None), "consumers": (self.consumers, self.values),
                "split measurement": (self.measuring, None), "coordinator": (self.coordinator, self.values)}
        result = {}
        for role, (seconds, values) in rows.items():
            result[role] = {"cpu_seconds": round(seconds, 3),
                            "per_1e8_values": round(seconds * 1e8 / self.values, 3) if self.values else None,
                            "values_per_cpu_second": round(values / seconds) if values and seconds > 0 else None}
        return result

    def measured_rates(self) -> tuple[float | None, float | None, float | None]:
        """(kernel, verifier) values per CPU second and the coordinator's CPU seconds per value, each
        None unless this session measured enough."""
        kernel = self.kernel_values / self.kernel \
            if self.kernel_values >= REFINE_AFTER and self.kernel > 0 else None
        verify = self.verified_values / self.verifiers \
            if self.verified_values >= REFINE_AFTER and self.verifiers > 0 else None
        coordinator = self.coordinator / self.values if self.values >= COORDINATOR_AFTER else None
        return kernel, verify, coordinator
