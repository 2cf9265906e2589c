"""The generated C as the engine's kernel plug-in, its default (:class:`~octalgen.engine.seams.KernelPlugin`)."""

from __future__ import annotations

from ..engine.executors import IN_PROCESS_PIECE
from ..engine.split import DEFAULT_BACKEND
from ..plan import KernelPlan
from .kernel import SpeculativeKernel
from .verify import Verifier


class CKernels:
    """The generated C kernel and verifier of each plan, built (or loaded from the cache) when first asked for."""

    backend = DEFAULT_BACKEND
    verify_here = False
    verify_piece = IN_PROCESS_PIECE
    early_start = True

    def __init__(self):
        self._made: dict[KernelPlan, tuple[SpeculativeKernel, Verifier]] = {}

    def __call__(self, plan: KernelPlan) -> tuple[SpeculativeKernel, Verifier]:
        if plan not in self._made:
            kernel, verifier = SpeculativeKernel(plan), Verifier(plan)
            _ = kernel.module  # built (or loaded) now, while the engine shows "building kernel"
            _ = verifier.module  # the same unit: loaded, so that worker processes load it from where it lies
            self._made = {plan: (kernel, verifier)}  # only the current one
        return self._made[plan]
