"""The GPU backends, through the engine (:mod:`octalgen.engine`) with the GPU kernel plug-in.

* ``cuda``: exact.  Exact prefix on the CPU, speculation and verification on the GPU
  (:class:`~octalgen.cuda.plugin.CudaKernels`), recovery on the CPU.
* ``cuda-speculative``: the GPU's fixed point without verification (NOT proven).

Importing this module touches no GPU and imports no CuPy; ``unavailable()`` gives the
one-line reason when they cannot run.
"""

from __future__ import annotations

from . import Backend, register


def _unavailable() -> str | None:
    from ..cuda.runtime import unavailable

    return unavailable()


def _plugin():
    from ..cuda.plugin import CudaKernels

    return CudaKernels()


def _computer(verify: bool):
    def compute(game, start, count, table=None, threads=None, **options):
        from ..engine.values import stream_values

        yield from stream_values(game, start, count, table, kernels=_plugin(), verify=verify, **options)

    return compute


# A low speed rank keeps the CPU backends the default: a GPU run pays for an nvcc compile and
# only wins on long runs; ask for it with --backend cuda.
register(
    Backend(
        name="cuda",
        exact=True,
        speed_rank=1,
        summary="generated CUDA: speculative fixed point and exact verifier on an NVIDIA GPU (exact)",
        compute=_computer(verify=True),
        unavailable=_unavailable,
        plugin=_plugin,
    )
)
register(
    Backend(
        name="cuda-speculative",
        exact=False,
        speed_rank=1,
        summary="generated CUDA speculative fixed point only (NOT proven)",
        compute=_computer(verify=False),
        unavailable=_unavailable,
        plugin=_plugin,
    )
)
