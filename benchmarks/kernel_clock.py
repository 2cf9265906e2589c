"""The threaded kernel built with a clock of its critical path (``c/baton_clock.h``), for
``bench_kernel_threads.py --clock``; never a build that computes values.

:func:`clocked_unit` is :func:`octalgen.cpu.generate.kernel_unit` with the clock placed before
``octalgen/kernel.h``, whose ``KERNEL_CLOCK_*`` points it fills, and ``octalgen_baton_clock``
declared: the kernel's own code, clocked.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from octalgen.cpu.generate import CUnit, kernel_unit

#: Where the clock goes: before the kernel's fixed code, which uses its points.
KERNEL_INCLUDE = '#include "octalgen/kernel.h"\n'
CLOCK_API = """
/* Benchmark build only, since the last call: clock ticks from a baton's arrival to the next one's
   departure, counts[k] for [4k, 4k + 4) ticks (counts[2047]: longer); counts[2048] the threads'
   work in ns, counts[2049] heaps clocked, counts[2050] ticks and counts[2051] ns the threads ran.
   Then cleared. */
void octalgen_baton_clock(uint64_t *counts);
"""
#: Buckets of the clock and clock ticks a bucket (as in c/baton_clock.h).
BUCKETS, TICK = 2048, 4


def clocked_unit(plan, block_heaps: int | None = None) -> CUnit:
    """The kernel unit of ``plan`` with the baton clock."""
    unit = kernel_unit(plan, block_heaps=block_heaps)
    clock = (Path(__file__).parent / "c" / "baton_clock.h").read_text()
    if unit.source.count(KERNEL_INCLUDE) != 1:
        raise RuntimeError(f"the kernel unit no longer includes {KERNEL_INCLUDE.strip()} once")
    return dataclasses.replace(
        unit,
        name="octalgen_kernel_clocked",
        source=unit.source.replace(KERNEL_INCLUDE, clock + "\n" + KERNEL_INCLUDE),
        declarations=unit.declarations + CLOCK_API,
        what=unit.what + " with the baton clock",
    )
