"""A board's top level around the streamer, and the flow that makes its bitstream.

The top level (:class:`BoardTop`) takes the board's reference clock through
the ECP5 PLL to the kernel's clock, holds that clock off (a DCCA clock
buffer with its enable low) until the PLL has locked, so that the circuit's
first clock edge finds every register and memory as configured, and
connects the streamer (:class:`~octalgen.hdl.streamer.ResultStreamer`) to
the board's USB serial bridge and LEDs.  The board's pins and the
yosys/nextpnr/ecppack scripts come from ``amaranth-boards`` (the ``board``
extra); the tools are the ``synth`` extra's YoWASP builds (or native ones on
PATH), as for ``octalgen synth``.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from amaranth.hdl import ClockDomain, ClockSignal, Elaboratable, Instance, Module, Signal

from ..errors import ComputationError
from .boards import Board, PllSetting
from .synth import SynthesisReport, find_tool, nextpnr_options, read_report, tool_version

__all__ = ["BoardReport", "BoardTop", "build_board"]


class BoardTop(Elaboratable):
    """The streamer on a board: PLL, clock held until lock, serial link, LEDs.

    LED 0 shows the kernel's error flag; LEDs 1-7 count summaries (the
    streamer's heartbeat), so a running board blinks.
    """

    def __init__(self, streamer, board: Board, pll: PllSetting):
        self.streamer = streamer
        self.board = board
        self.pll = pll

    def elaborate(self, platform):
        m = Module()
        pll = self.pll
        reference = platform.request(platform.default_clk, 0)
        m.domains.reference = ClockDomain("reference", reset_less=True)
        m.d.comb += ClockSignal("reference").eq(reference.i)
        # The kernel's domain has no reset: it starts from its configured state, on its first edge.
        m.domains.sync = ClockDomain("sync", reset_less=True)
        fast, locked = Signal(name="pll_clk"), Signal(name="pll_locked")
        m.submodules.pll = Instance(
            "EHXPLLL",
            a_FREQUENCY_PIN_CLKI=f"{pll.reference_mhz:g}",
            a_FREQUENCY_PIN_CLKOP=f"{pll.output_mhz:g}",
            a_ICP_CURRENT="12",
            a_LPF_RESISTOR="8",
            a_MFG_ENABLE_FILTEROPAMP="1",
            a_MFG_GMCREF_SEL="2",
            p_PLLRST_ENA="DISABLED",
            p_INTFB_WAKE="DISABLED",
            p_STDBY_ENABLE="DISABLED",
            p_DPHASE_SOURCE="DISABLED",
            p_OUTDIVIDER_MUXA="DIVA",
            p_OUTDIVIDER_MUXB="DIVB",
            p_OUTDIVIDER_MUXC="DIVC",
            p_OUTDIVIDER_MUXD="DIVD",
            p_CLKI_DIV=pll.input_divider,
            p_CLKOP_ENABLE="ENABLED",
            p_CLKOP_DIV=pll.output_divider,
            p_CLKOP_CPHASE=(pll.output_divider - 1) // 2,
            p_CLKOP_FPHASE=0,
            p_FEEDBK_PATH="CLKOP",
            p_CLKFB_DIV=pll.feedback_divider,
            i_RST=0,
            i_STDBY=0,
            i_CLKI=ClockSignal("reference"),
            o_CLKOP=fast,
            i_CLKFB=fast,
            i_PHASESEL0=0,
            i_PHASESEL1=0,
            i_PHASEDIR=1,
            i_PHASESTEP=1,
            i_PHASELOADREG=1,
            i_PLLWAKESYNC=0,
            i_ENCLKOP=0,
            o_LOCK=locked,
        )
        # Lock, synchronised and held for 2^16 reference clocks (2.6 ms), then the clock runs for good.
        meta, steady = Signal(name="lock_meta"), Signal(name="lock_steady")
        wait = Signal(17)
        m.d.reference += [meta.eq(locked), steady.eq(meta)]
        with m.If(~steady):
            m.d.reference += wait.eq(0)
        with m.Elif(~wait[16]):
            m.d.reference += wait.eq(wait + 1)
        m.submodules.clock_gate = Instance("DCCA", i_CLKI=fast, i_CE=wait[16], o_CLKO=ClockSignal("sync"))
        platform.add_clock_constraint(fast, pll.output_mhz * 1e6)

        m.submodules.streamer = streamer = self.streamer
        uart = platform.request("uart", 0)
        m.d.comb += [uart.tx.o.eq(streamer.tx), streamer.rx.eq(uart.rx.i)]
        leds = [platform.request("led", i) for i in range(8)]
        m.d.comb += leds[0].o.eq(streamer.error)
        m.d.comb += [led.o.eq(streamer.heartbeat[i]) for i, led in enumerate(leds[1:])]
        return m


@dataclass(frozen=True)
class BoardReport:
    """A bitstream and what the flow made of the design (written as ``board.json``).

    Attributes
    ----------
    synthesis : SynthesisReport
        Resources and fmax of the whole top level (kernel, statistics, UART, PLL).
    board : str
    clock_mhz : float
        The kernel's clock as the PLL makes it.
    timing_met : bool
        fmax >= clock_mhz: the bitstream runs within its timing.
    baud : float
        The UART's bit rate (clock / clocks_per_bit).
    settings : dict
        The :class:`BoardSettings` it was built with.
    first : int
        The first heap the kernel computes (the preloaded history is G(0) ... G(first - 1)).
    table : str
        The rare table's digest.
    bitstream : str
        File name of the bitstream (in the report's directory).
    bitstream_bytes : int
    """

    synthesis: SynthesisReport
    board: str
    clock_mhz: float
    timing_met: bool
    baud: float
    settings: dict
    first: int
    table: str
    bitstream: str
    bitstream_bytes: int

    @property
    def values_per_second(self) -> float:
        return self.clock_mhz * 1e6 / self.synthesis.fold

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True) + "\n"


def build_board(
    streamer,
    board: Board,
    pll: PllSetting,
    workdir: Path,
    *,
    fold_chosen: bool = False,
    estimated=None,
    seed: int = 1,
    router: str = "router1",
) -> BoardReport:
    """Synthesise, place, route and pack ``streamer`` for ``board`` in ``workdir``; returns the report."""
    tools = {"YOSYS": find_tool("yosys"), "NEXTPNR_ECP5": find_tool("nextpnr-ecp5"), "ECPPACK": find_tool("ecppack")}
    platform = board.load_platform()
    workdir.mkdir(parents=True, exist_ok=True)
    top = BoardTop(streamer, board, pll)
    plan = platform.build(
        top, name="top", build_dir=str(workdir), do_build=False, nextpnr_opts=nextpnr_options(seed, router)
    )
    plan.extract(str(workdir))
    began = time.perf_counter()
    result = subprocess.run(
        ["sh", "build_top.sh"], check=False, cwd=workdir, env={**os.environ, **tools}, capture_output=True, text=True
    )
    if result.returncode != 0:
        tail = (result.stderr or result.stdout).strip().splitlines()[-3:]
        raise ComputationError(f"the board flow failed (logs in {workdir}: top.rpt, top.tim): " + " | ".join(tail))
    seconds = time.perf_counter() - began
    kernel = streamer.kernel
    synthesis = read_report(
        workdir,
        board.target,
        kernel,
        clock=_kernel_clock(pll),
        fold_chosen=fold_chosen,
        estimated=estimated,
        seconds=seconds,
        tools={
            "yosys": tool_version(tools["YOSYS"], "-V"),
            "nextpnr": tool_version(tools["NEXTPNR_ECP5"], "--version"),
            "ecppack": tool_version(tools["ECPPACK"], "--version"),
        },
        target_mhz=pll.output_mhz,
        router=router,
        seed=seed,
    )
    bitstream = workdir / "top.bit"
    settings = streamer.settings
    return BoardReport(
        synthesis=synthesis,
        board=board.name,
        clock_mhz=round(pll.output_mhz, 4),
        timing_met=synthesis.fmax_mhz >= pll.output_mhz,
        baud=round(pll.output_mhz * 1e6 / settings.clocks_per_bit),
        settings=asdict(settings),
        first=kernel.first,
        table=kernel.plan.table.digest,
        bitstream=bitstream.name,
        bitstream_bytes=bitstream.stat().st_size,
    )


def _kernel_clock(pll: PllSetting):
    """Picks the kernel clock's achieved fmax among nextpnr's clocks: the one constrained to the PLL's output."""

    def pick(fmax: dict) -> float:
        kernel = [v["achieved"] for v in fmax.values() if abs(v["constraint"] - pll.output_mhz) < 1e-3 * pll.output_mhz]
        if not kernel:
            raise ComputationError(f"nextpnr reported no clock at {pll.output_mhz:g} MHz (clocks: {', '.join(fmax)})")
        return min(kernel)

    return pick
