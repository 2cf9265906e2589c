"""How many verifier blocks a multiprocessor holds while a round block still fits beside them.

The verifier runs on its own stream beside the round kernel.  A verify launch of one block per
128 heaps (16,384 blocks for a chunk of 2^21) would fill the registers of every multiprocessor,
so that the next round's blocks would wait for the verification to drain.  The verifier
therefore loops over its heaps with a capped grid
(:func:`verify_grid_cap`), sized from the kernels' own figures (``nvcc --resource-usage``:
:func:`parse_resource_usage`) and the device's (:class:`Multiprocessor`):

* a block of ``t`` threads using ``r`` registers each takes ``ceil(t / 32)`` warps of
  ``ceil(32 r / 256) * 256`` registers (registers are allocated per warp, 256 at a time);
* it takes its static shared memory plus the 1 KiB the driver reserves per block;
* what one round block takes is set aside first; the verifier gets as many blocks as the
  rest of the registers, threads, shared memory and block slots all allow (at least one).

For ``.6`` on a GPU of compute capability 9.0 (65,536 registers, 2,048 threads, 228 KiB of
shared memory and 32 blocks per multiprocessor; 132 multiprocessors), a round block of 512
threads at 32 registers takes 16,384 registers and 9,344 bytes; a verifier block of 128 threads
at 80 registers takes 10,240 registers and 33,792 bytes, so 4 verifier blocks fit beside it
(registers: 49,152 / 10,240 = 4.8) and the grid is capped at 528 blocks; at 64 registers
(8,192 each) 6 fit (shared memory: 223,232 / 33,792 = 6.6), 792 blocks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import ComputationError

__all__ = [
    "REGISTER_UNIT",
    "RESERVED_SHARED_PER_BLOCK",
    "KernelResources",
    "Multiprocessor",
    "parse_resource_usage",
    "verify_grid_cap",
]

#: Registers are allocated to a warp in units of this many.
REGISTER_UNIT = 256

#: Shared memory the driver reserves for each resident block (bytes).
RESERVED_SHARED_PER_BLOCK = 1024


@dataclass(frozen=True)
class KernelResources:
    """What one thread block of a kernel takes: registers per thread, static shared memory, threads."""

    registers: int
    shared: int
    threads: int

    @property
    def warp_registers(self) -> int:
        """Registers one warp is allocated."""
        return -(-32 * self.registers // REGISTER_UNIT) * REGISTER_UNIT

    @property
    def block_registers(self) -> int:
        return -(-self.threads // 32) * self.warp_registers


@dataclass(frozen=True)
class Multiprocessor:
    """What one streaming multiprocessor holds (the defaults: compute capability 9.0's)."""

    registers: int = 65536
    threads: int = 2048
    shared: int = 228 * 1024
    blocks: int = 32

    def blocks_of(self, kernel: KernelResources, beside: KernelResources | None = None) -> int:
        """Blocks of ``kernel`` that fit on one multiprocessor with one block of ``beside`` resident."""
        registers, threads, shared, blocks = self.registers, self.threads, self.shared, self.blocks
        if beside is not None:
            registers -= beside.block_registers
            threads -= beside.threads
            shared -= beside.shared + RESERVED_SHARED_PER_BLOCK
            blocks -= 1
        return max(
            0,
            min(
                registers // kernel.block_registers,
                threads // kernel.threads,
                shared // (kernel.shared + RESERVED_SHARED_PER_BLOCK),
                blocks,
            ),
        )


def verify_grid_cap(
    multiprocessors: int, device: Multiprocessor, verify: KernelResources, round_block: KernelResources
) -> int:
    """Verifier blocks in flight at most: as many as fit beside one round block on every
    multiprocessor, and at least one per multiprocessor (the verification must go on)."""
    return multiprocessors * max(1, device.blocks_of(verify, beside=round_block))


_ENTRY = re.compile(r"Compiling entry function '(\w+)'")
_USED = re.compile(r"Used (\d+) registers.*?(\d+) bytes smem")


def parse_resource_usage(report: str) -> dict[str, tuple[int, int]]:
    """``{kernel: (registers per thread, static shared memory in bytes)}`` from ``nvcc --resource-usage``.

    Raises
    ------
    ComputationError
        A kernel named in the report without its figures.
    """
    figures, kernel = {}, None
    for line in report.splitlines():
        entry = _ENTRY.search(line)
        if entry:
            kernel = entry.group(1)
            continue
        used = _USED.search(line)
        if used and kernel is not None:
            figures[kernel] = (int(used.group(1)), int(used.group(2)))
            kernel = None
    if kernel is not None:
        raise ComputationError(f"nvcc's resource usage names {kernel} without its registers")
    return figures
