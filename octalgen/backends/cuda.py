"""The GPU backends: ``cuda`` (exact: speculation verified on the GPU) and ``cuda-speculative``.

See :mod:`octalgen.cuda`.  Importing this module touches no GPU and imports no
CuPy; ``unavailable()`` gives the one-line reason when they cannot run.
"""

from __future__ import annotations

from . import Backend, register

#: Values per yielded chunk.
CHUNK = 1 << 22


def _unavailable() -> str | None:
    from ..cuda.runtime import unavailable

    return unavailable()


def _computer(exact: bool):
    def compute(game, start, count, table=None, threads=None):
        from ..cuda.driver import compute as drive
        from ..cuda.runtime import CudaEngine

        engine = CudaEngine()
        values = drive(game, start + count, engine, table=table, exact=exact, options=engine.options)
        for lo in range(start, start + count, CHUNK):
            yield values[lo : min(lo + CHUNK, start + count)]

    return compute


# A low speed rank keeps the CPU backends the default: a GPU run pays for an nvcc compile
# (seconds) and only wins on long runs; ask for it with --backend cuda.
register(
    Backend(
        name="cuda",
        exact=True,
        speed_rank=1,
        summary="generated CUDA: speculative fixed point and exact verifier on an NVIDIA GPU (exact)",
        compute=_computer(exact=True),
        unavailable=_unavailable,
    )
)
register(
    Backend(
        name="cuda-speculative",
        exact=False,
        speed_rank=1,
        summary="generated CUDA speculative fixed point only (NOT proven)",
        compute=_computer(exact=False),
        unavailable=_unavailable,
    )
)
