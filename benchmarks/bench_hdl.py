"""Simulation speed of the FPGA kernel: the two decoder styles, under Verilator and amaranth.sim.

Usage: python benchmarks/bench_hdl.py [CODE] [FOLD] [VALUES]   (default .356 1 200000)

Builds the kernel with each decoder style (``shift``: ``1 << x``; ``compare``:
one comparator per code; the same circuit after synthesis), runs it in the
same process under Verilator (VALUES values) and amaranth.sim (VALUES / 100),
checks every value against the reference, and prints cycles/s and the ratio
compare/shift for each simulator.  Verilator builds are cached; their time is
not counted.
"""

import sys

from octalgen.api import rare_table
from octalgen.hdl.kernel import SpeculativePipeline
from octalgen.hdl.simulate import compare, simulate_amaranth, simulate_verilator
from octalgen.hdl.verilog import emit_verilog
from octalgen.plan import make_plan
from octalgen.reference import exact_values


def main():
    code = sys.argv[1] if len(sys.argv) > 1 else ".356"
    fold = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    values = int(sys.argv[3]) if len(sys.argv) > 3 else 200_000
    plan = make_plan(rare_table(code))
    reference = exact_values(code, plan.start + values)
    rates = {}
    for style in ("shift", "compare"):
        kernel = SpeculativePipeline(plan, reference[: plan.start], fold=fold, decoder=style)
        verilog = emit_verilog(kernel)
        for simulator, count in (("verilator", values), ("amaranth", max(values // 100, 100))):
            cycles = kernel.latency + count * fold
            if simulator == "verilator":
                run = simulate_verilator(verilog, kernel.module_name, cycles)
            else:
                run = simulate_amaranth(kernel, cycles)
            result = compare(run, reference, plan.start)
            assert result.ok and result.checked == count, result.mismatch
            rates[style, simulator] = run.cycles_per_second
            print(
                f"{code} fold {fold} {style:8} {simulator:10} {count:>9,} values  "
                f"{run.cycles_per_second:12,.0f} cycles/s"
            )
    for simulator in ("verilator", "amaranth"):
        print(f"{simulator}: compare/shift = {rates['compare', simulator] / rates['shift', simulator]:.2f}")


if __name__ == "__main__":
    main()
