"""Run a speculative kernel in a simulator and compare its values with the reference.

Two simulators: ``amaranth`` (amaranth.sim, needs nothing else; slow, for a
few thousand values) and ``verilator`` (the emitted Verilog compiled with the
test bench ``hdl/verilator_tb.cpp``; cached like every octalgen build; for
millions of values).  Both run from configuration for a number of clocks and
record every value emitted with ``valid`` high, and the clock in which
``error`` rose, if it did.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from ..build import cached_build, run_compiler, tool_identity
from ..errors import BuildError, ToolMissingError
from ..shipped import shipped_folder
from .kernel import SpeculativePipeline

__all__ = [
    "SIMULATORS",
    "BoardRun",
    "Comparison",
    "SimulationProgress",
    "SimulationRun",
    "build_verilator",
    "compare",
    "find_verilator",
    "simulate",
    "simulate_amaranth",
    "simulate_board",
    "simulate_verilator",
    "testbench_source",
    "uart_levels",
]

SIMULATORS = ("amaranth", "verilator")

#: Flags for Verilator and the C++ compiler it drives; part of the cache key.
VERILATOR_FLAGS = (
    "--cc",
    "--exe",
    "--build",
    "-O3",
    "-Wno-fatal",
    "-Wno-lint",
    "-Wno-style",
    "--prefix",
    "Vkernel",
    "-CFLAGS",
    "-O1",
)


class SimulationProgress(Protocol):
    """Where a simulation reports how far it has come (:class:`octalgen.progress.Progress` is one)."""

    def phase(self, text: str) -> None:
        """What the simulation does now ("elaborating", "simulating ...")."""

    def update(self, count: int) -> None:
        """``count`` values have been emitted so far."""


@dataclass(frozen=True)
class SimulationRun:
    """What a simulated kernel emitted.

    Attributes
    ----------
    values : numpy.ndarray
        The values emitted with ``valid`` high, in order (G(first), G(first+1), ...).
    cycles : int
        Clocks simulated.
    error_cycle : int or None
        The clock in which ``error`` was first high (the run stops there).
    seconds : float
        Wall time of the simulation proper (not building it).
    simulator : str
    """

    values: np.ndarray
    cycles: int
    error_cycle: int | None
    seconds: float
    simulator: str

    @property
    def cycles_per_second(self) -> float:
        return self.cycles / self.seconds if self.seconds > 0 else float("inf")


@dataclass(frozen=True)
class Comparison:
    """A simulation checked against reference values.

    Attributes
    ----------
    checked : int
        Values compared: all that the circuit emitted, or up to and including
        the first mismatch.
    mismatch : tuple of (int, int or None, int) or None
        The first disagreement: (heap size, circuit value or None for the
        error flag, reference value); None when all matched.
    """

    checked: int
    mismatch: tuple[int, int | None, int] | None

    @property
    def ok(self) -> bool:
        return self.mismatch is None


def compare(run: SimulationRun, reference, first: int) -> Comparison:
    """Compare ``run.values`` with ``reference[first:]`` (G(first) ... of the exact values)."""
    expected = np.asarray(reference[first : first + len(run.values)], dtype=np.int64)
    got = run.values[: len(expected)]
    bad = np.flatnonzero(got != expected)
    if len(bad):
        i = int(bad[0])
        return Comparison(i + 1, (first + i, int(got[i]), int(expected[i])))
    if run.error_cycle is not None:
        heap = first + len(got)
        if heap < len(reference):  # the circuit gave up where the reference has a value
            return Comparison(len(got) + 1, (heap, None, int(reference[heap])))
    return Comparison(len(got), None)


def simulate(
    kernel: SpeculativePipeline,
    cycles: int,
    simulator: str = "amaranth",
    verilog: str | None = None,
    progress: SimulationProgress | None = None,
) -> SimulationRun:
    """Run ``kernel`` for ``cycles`` clocks in ``simulator`` (``verilog``: its emitted text, for Verilator).

    ``progress`` hears each phase and, from amaranth.sim, every value as it is emitted (the
    Verilator model runs as one subprocess and reports at its end).
    """
    if simulator == "amaranth":
        return simulate_amaranth(kernel, cycles, progress)
    if simulator == "verilator":
        if verilog is None:
            from .verilog import emit_verilog

            verilog = emit_verilog(kernel)
        if progress is not None:
            progress.phase(f"simulating {cycles:,} clocks with verilator")
        run = simulate_verilator(verilog, kernel.module_name, cycles)
        if progress is not None:
            progress.update(len(run.values))
        return run
    raise ValueError(f"unknown simulator {simulator!r}")


def simulate_amaranth(
    kernel: SpeculativePipeline, cycles: int, progress: SimulationProgress | None = None
) -> SimulationRun:
    """Run the kernel in amaranth.sim (Python) for ``cycles`` clocks.

    Elaborating a large kernel for the simulator takes a while before the first clock;
    ``progress`` hears that phase, then every value emitted.
    """
    from amaranth.sim import Simulator

    if progress is not None:
        progress.phase("elaborating the circuit for amaranth.sim")
    sim = Simulator(kernel)
    sim.add_clock(1e-8)
    if progress is not None:
        progress.phase(f"simulating {cycles:,} clocks with amaranth.sim")
    values: list[int] = []
    error_cycle: int | None = None
    simulated = 0

    async def bench(ctx):
        nonlocal error_cycle, simulated
        cycle = 0
        if cycles <= 0:
            return
        # Each tick samples the outputs as they were during the clock it ends.
        async for _, _, valid, value, error in ctx.tick().sample(kernel.valid, kernel.value, kernel.error):
            if error:
                error_cycle = cycle
                break
            if valid:
                values.append(value)
                if progress is not None:
                    progress.update(len(values))
            cycle += 1
            if cycle >= cycles:
                break
        simulated = cycle

    sim.add_testbench(bench)
    began = time.perf_counter()
    sim.run()
    seconds = time.perf_counter() - began
    return SimulationRun(np.array(values, dtype=np.int64), simulated, error_cycle, seconds, "amaranth")


def testbench_source() -> str:
    """The Verilator C++ test bench shipped with octalgen (``hdl/verilator_tb.cpp``)."""
    return (shipped_folder("octalgen.hdl.files", "hdl") / "verilator_tb.cpp").read_text()


def find_verilator() -> str:
    """The ``verilator`` command, or :class:`ToolMissingError` saying how to get it."""
    found = shutil.which("verilator")
    if not found:
        raise ToolMissingError(
            "verilator not found on PATH; install it (Debian/Ubuntu: apt-get install verilator) "
            "or use --simulator amaranth"
        )
    return found


def build_verilator(verilog: str, module: str):
    """Compile the Verilog and the test bench into a cached simulator binary; returns its path."""
    verilator = find_verilator()
    bench = testbench_source()
    material = {
        "kind": "verilator",
        "verilog": verilog,
        "module": module,
        "bench": bench,
        "verilator": tool_identity((verilator,)),
        "flags": list(VERILATOR_FLAGS),
    }

    def builder(staging: Path, name: str) -> None:
        (staging / "kernel.v").write_text(verilog)
        (staging / "verilator_tb.cpp").write_text(bench)
        command = [
            verilator,
            *VERILATOR_FLAGS,
            "--top-module",
            module,
            "-Mdir",
            "obj",
            "-o",
            "Vkernel",
            "kernel.v",
            "verilator_tb.cpp",
        ]
        run_compiler(command, staging, name, staging / "kernel.v")
        (staging / "Vkernel").write_bytes((staging / "obj" / "Vkernel").read_bytes())
        (staging / "Vkernel").chmod(0o755)
        shutil.rmtree(staging / "obj")  # objects are large; only the binary is kept

    artefact = cached_build("verilator", material, builder, what=f"Verilator model of {module}")
    return artefact.path / "Vkernel"


def simulate_verilator(verilog: str, module: str, cycles: int) -> SimulationRun:
    """Run the emitted Verilog under Verilator for ``cycles`` clocks."""
    binary = build_verilator(verilog, module)
    with tempfile.TemporaryDirectory(prefix="octalgen-verilator-") as tmp:
        values_file = Path(tmp) / "values.u16"
        result = subprocess.run(
            [str(binary), str(cycles), str(values_file)], check=False, capture_output=True, text=True
        )
        if result.returncode != 0:
            raise BuildError(f"the Verilator model {binary} failed: {(result.stderr or result.stdout).strip()}")
        fields = result.stdout.split()
        summary = dict(zip(fields[::2], fields[1::2]))
        values = np.fromfile(values_file, dtype="<u2").astype(np.int64)
    error = int(summary["error"])
    return SimulationRun(
        values, int(summary["cycles"]), None if error < 0 else error, float(summary["seconds"]), "verilator"
    )


@dataclass(frozen=True)
class BoardRun:
    """What a simulated board sent over its serial link.

    Attributes
    ----------
    data : bytes
        Every byte the UART model received, in order.
    records : list
        The records in ``data`` (:mod:`octalgen.hdl.records`), in order.
    rejected : int
        Records that failed their CRC (0 in a correct design).
    cycles : int
    seconds : float
    """

    data: bytes
    records: list
    rejected: int
    cycles: int
    seconds: float


def uart_levels(data: bytes, clocks_per_bit: int) -> list[int]:
    """The line levels, one per clock, that send ``data`` as 8N1 (start bit, bits LSB first, stop bit)."""
    levels = []
    for byte in data:
        for bit in [0] + [byte >> k & 1 for k in range(8)] + [1]:
            levels += [bit] * clocks_per_bit
    return levels


def simulate_board(streamer, cycles: int, requests=()) -> BoardRun:
    """Run a :class:`~octalgen.hdl.streamer.ResultStreamer` in amaranth.sim with a model of the serial link.

    The host side is a UART at the streamer's bit time: it finds each start
    bit by its falling edge, samples every bit in its middle and checks the
    stop bit (a framing error raises).  ``requests`` are ``(clock, bytes)``:
    each is sent to the board as 8N1 from that clock on.
    """
    from amaranth.sim import Simulator

    from .records import RecordReader

    cpb = streamer.settings.clocks_per_bit
    sending = {}
    for clock, data in requests:
        for k, level in enumerate(uart_levels(data, cpb)):
            sending[clock + k] = level
    received = bytearray()
    sim = Simulator(streamer)
    sim.add_clock(1e-8)
    outcome = {"cycles": 0}

    async def host(ctx):
        clock = 0
        edge = None  # clock of the current start bit's falling edge
        previous = 1
        ctx.set(streamer.rx, sending.get(0, 1))
        async for _, _, line in ctx.tick().sample(streamer.tx):
            # `line` is the level during `clock`.
            if edge is None:
                if previous == 1 and line == 0:
                    edge = clock
            else:
                since = clock - edge - cpb // 2
                if since >= 0 and since % cpb == 0:
                    k = since // cpb
                    if k == 0 and line != 0:
                        edge = None  # a glitch, not a start bit
                    elif 1 <= k <= 8:
                        shift[k - 1] = line
                    elif k == 9:
                        if line != 1:
                            raise AssertionError(f"framing error: stop bit low in clock {clock}")
                        received.append(sum(bit << i for i, bit in enumerate(shift)))
                        edge = None
            previous = line
            clock += 1
            ctx.set(streamer.rx, sending.get(clock, 1))
            if clock >= cycles:
                break
        outcome["cycles"] = clock

    shift = [0] * 8
    sim.add_testbench(host)
    began = time.perf_counter()
    sim.run()
    seconds = time.perf_counter() - began
    reader = RecordReader()
    records = reader.feed(bytes(received))
    return BoardRun(bytes(received), records, reader.rejected, outcome["cycles"], seconds)
