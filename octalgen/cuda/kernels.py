"""Render the CUDA kernels for a plan and compile them with nvcc into the build cache.

Flow: :class:`~.cuda_plan.CudaPlan` -> :func:`render_kernels` (``templates/cuda/kernels.cu.j2``)
-> :func:`compile_kernels` (nvcc, cached by :func:`octalgen.build.cached_build`)
-> a cubin that :mod:`.runtime` loads.  Nothing here needs a GPU or CuPy.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from ..build import Artefact, cached_build, command_from_environment, run_compiler, tool_identity
from ..errors import ToolMissingError
from ..render import render
from .cuda_plan import CudaPlan

__all__ = ["NVCC_FLAGS", "CompiledKernels", "compile_kernels", "find_nvcc", "render_kernels"]

#: nvcc flags, chosen deliberately (all part of the cache key):
#: ``-cubin -arch=sm_XX``: machine code for exactly the target (sm_90: compute capability 9.0), no
#: PTX for the driver to JIT at load; ``-O3``: full device optimisation; ``-lineinfo``: source lines
#: for Nsight Compute at no run-time cost; ``--Werror all-warnings``: generated code must compile
#: cleanly; ``--resource-usage``: registers, shared memory, spills into resource-usage.txt.
NVCC_FLAGS = ("-O3", "-lineinfo", "--Werror", "all-warnings", "--resource-usage")


@dataclass(frozen=True)
class CompiledKernels:
    """A compiled kernel module.

    Attributes
    ----------
    plan : CudaPlan
    cubin : Path
        The machine code (``kernels.cubin``).
    source : Path
        The generated CUDA (``kernels.cu``), kept beside it.
    resource_usage : str
        nvcc's report: registers, shared memory, stack and spills per kernel.
    artefact : Artefact
    """

    plan: CudaPlan
    cubin: Path
    source: Path
    resource_usage: str
    artefact: Artefact


def find_nvcc() -> list[str]:
    """The nvcc command: ``$NVCC`` if set, else ``nvcc`` on PATH, else /usr/local/cuda/bin/nvcc.

    Raises
    ------
    ToolMissingError
    """
    chosen = command_from_environment("NVCC", "CUDA compiler")
    if chosen:
        return chosen
    for candidate in ("nvcc", "/usr/local/cuda/bin/nvcc"):
        if shutil.which(candidate):
            return [candidate]
    raise ToolMissingError("nvcc (the CUDA compiler) not found; install the CUDA toolkit or set NVCC=/path/to/nvcc")


def render_kernels(plan: CudaPlan) -> str:
    """The CUDA source of both kernels for ``plan`` (byte-for-byte reproducible)."""
    groups = plan.round_warps
    by_offset = sorted(plan.kernel.encoded_terms())
    return render(
        "cuda/kernels.cu.j2",
        provenance=plan.provenance(),
        term_groups=groups,
        mex_words=-(-64 // groups),
        terms_by_offset=by_offset,
        cache_final=plan.options.cache_final,
        verify_block=plan.options.verify_block,
        scan_chunk=plan.options.scan_chunk,
        scan_bound=plan.options.scan_bound,
        rare_codes_below=plan.rare_codes_below.tolist(),
        parity=plan.table.parity or 0,
        rare_options=list(plan.kernel.rare_options),
        two_heap_moves=list(plan.two_heap_moves),
    )


def compile_kernels(plan: CudaPlan) -> CompiledKernels:
    """Render and compile the kernels of ``plan`` (cached by source, flags, nvcc and target).

    Raises
    ------
    ToolMissingError
        No nvcc.
    BuildError
        nvcc failed (its messages and the kept source are in the error).
    """
    nvcc = find_nvcc()
    source = render_kernels(plan)
    arch = plan.options.arch
    flags = [f"-arch={arch}", *NVCC_FLAGS]
    material = {
        "kind": "cuda-cubin",
        "source": source,
        "flags": flags,
        "nvcc": tool_identity(tuple(nvcc)),
        "arch": arch,
    }

    def builder(staging: Path, name: str) -> None:
        (staging / "kernels.cu").write_text(source)
        command = [*nvcc, "-cubin", *flags, "kernels.cu", "-o", "kernels.cubin"]
        report = run_compiler(command, staging, name, staging / "kernels.cu")
        (staging / "resource-usage.txt").write_text(report)

    artefact = cached_build("cuda_octal", material, builder, what=f"CUDA kernels for {plan.game.code}")
    return CompiledKernels(
        plan,
        artefact.path / "kernels.cubin",
        artefact.path / "kernels.cu",
        (artefact.path / "resource-usage.txt").read_text(),
        artefact,
    )
