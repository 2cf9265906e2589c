"""``octalgen synth CODE --target T`` or ``--board B``: place and route the kernel; a bitstream for a board.

Runs yosys and nextpnr (the ``synth`` extra or tools on PATH) on the emitted
Verilog; prints the resources used, the fmax nextpnr reports and the values
per second it implies (fmax / fold), and writes them as JSON.  Without
``--fold`` it takes the smallest fold whose estimate fits the device, and
says so.  With ``--board`` the kernel goes into the board's top level (PLL,
statistics, serial records: see :mod:`octalgen.hdl.streamer`) and ecppack
writes the bitstream next to the report.
"""

from __future__ import annotations

import logging
import math
from dataclasses import replace
from pathlib import Path

from ..engine.planning import plan_game
from ..errors import InputError
from . import progress_for
from .arguments import add_game, add_table, count_type, load_table, positive_count_type

log = logging.getLogger("octalgen")

DESCRIPTION = """\
Synthesise, place and route the speculative kernel with yosys and nextpnr and report LUTs,
flip-flops, block RAMs, fmax and values/s (fmax / fold), also as synth.json.  --target builds the
kernel alone, for a device; --board builds the kernel into a board's top level (PLL to --freq, the
statistics of every value, records over the USB serial link at --baud) and writes the bitstream
top.bit and board.json, which `octalgen fpga` reads.  Without --fold the fold is the smallest whose
estimate fits the device."""

EPILOG = """\
examples:
  octalgen synth .356 --target ice40-hx8k
  octalgen synth .6 --target ecp5-85k --fold 8
  octalgen synth .6 --board ulx3s-85f --fold 8 --lanes-per-stage 4 \\
      --mark-chain rows --block-ram-from 64 --router router2 --freq 95 \\
      -o build/board/officers              # the build of hdl/reports' .6
  then: openFPGALoader -b ulx3s build/board/officers/top.bit
        octalgen fpga .6 --port /dev/ttyUSB0"""


def register(sub) -> None:
    from ..hdl.boards import BOARDS
    from ..hdl.layout import LANES_PER_STAGE, MARK_CHAINS
    from ..hdl.synth import ROUTERS, TARGETS

    parser = sub.add_parser(
        "synth",
        help="synthesise, place and route the FPGA kernel; a bitstream for a board",
        description=DESCRIPTION,
        epilog=EPILOG,
    )
    add_game(parser)
    where = parser.add_mutually_exclusive_group(required=True)
    # Named in the help, not in the usage line, which argparse cannot break inside a group.
    where.add_argument(
        "--target", choices=tuple(TARGETS), metavar="FPGA", help=f"the FPGA (the kernel alone): {', '.join(TARGETS)}"
    )
    where.add_argument(
        "--board",
        choices=tuple(BOARDS),
        metavar="BOARD",
        help=f"the board (top level and bitstream): {', '.join(BOARDS)}",
    )
    parser.add_argument(
        "--fold",
        type=count_type,
        metavar="F",
        help="clocks per value (default: the smallest that the estimate fits in the device)",
    )
    parser.add_argument(
        "--freq",
        type=float,
        default=100.0,
        metavar="MHZ",
        help="target clock frequency for nextpnr, and with --board the PLL's (default 100); "
        "fmax is reported either way",
    )
    parser.add_argument(
        "--baud",
        type=float,
        default=3e6,
        metavar="BPS",
        help="with --board: the serial link's bit rate (default 3000000, the ULX3S's FT231X maximum)",
    )
    parser.add_argument(
        "--record-every",
        type=count_type,
        default=1 << 24,
        metavar="N",
        help="with --board: a summary and a histogram every N values, a power of two (default 2^24)",
    )
    parser.add_argument(
        "--router",
        choices=ROUTERS,
        default="router1",
        help="nextpnr's router (default router1, nextpnr's own; router2 converges on congested "
        "designs such as .6 at a small fold)",
    )
    parser.add_argument("--seed", type=int, default=1, help="nextpnr's placement seed (default 1)")
    parser.add_argument(
        "--lanes-per-stage",
        type=positive_count_type,
        default=LANES_PER_STAGE,
        metavar="L",
        help=f"mark units per stage of the chain (default {LANES_PER_STAGE}); fewer make smaller "
        "stages whose vector updates need fewer wires in one place (5 takes 0.8 LUT per unit "
        "and mark bit, 2 to 4 take 1; the .6 bitstream has 4, with --mark-chain rows)",
    )
    parser.add_argument(
        "--mark-chain",
        choices=MARK_CHAINS,
        default="vector",
        help="how a stage hands its marks to the next (default vector: the whole mark vector in "
        "one clock; rows: each lane marks rows of a small LUT RAM, handed on a few rows per "
        "clock, so a lane's wires stay local; fold 2 or more)",
    )
    parser.add_argument(
        "--block-ram-from",
        type=count_type,
        metavar="DEPTH",
        help="histories at least DEPTH deep go into block RAM (default: the target's, 64 on ECP5); "
        "0 lets yosys choose (LUT RAM up to its own limit), which frees block RAM sites",
    )
    add_table(parser)
    parser.add_argument(
        "-o",
        "--output",
        metavar="DIR",
        help="working directory: Verilog, scripts, logs, synth.json "
        "(default build/synth/MODULE-TARGET, build/board/MODULE-BOARD)",
    )
    parser.set_defaults(run=run)


def run(args) -> int:
    from ..hdl.kernel import SpeculativePipeline
    from ..hdl.layout import layout_pipeline
    from ..hdl.synth import choose_fold, estimate, find_tool, get_target

    board = None
    if args.board:
        from ..hdl.boards import get_board

        board = get_board(args.board)
        target = board.target
    else:
        target = get_target(args.target)
    if args.fold is not None and args.fold < 1:
        raise InputError("--fold must be at least 1")
    if args.freq <= 0:
        raise InputError("--freq must be positive")
    find_tool("yosys"), find_tool(f"nextpnr-{target.family}")  # fail early, before any work
    if board:
        find_tool("ecppack")
        board.load_platform()
    if args.block_ram_from is not None:  # the target's policy for the histories, replaced
        target = replace(target, block_ram_depth=args.block_ram_from or None)
    lanes, chain = args.lanes_per_stage, args.mark_chain
    plan, history = plan_game(args.game, load_table(args), required=True)
    if args.fold is None:
        fold, guess = choose_fold(plan, target, lanes_per_stage=lanes, mark_chain=chain)
        print(
            f"no --fold given: chose fold {fold}, the smallest whose estimate fits {target.name} "
            f"({guess.luts} LUTs, {guess.ffs} FFs, {guess.brams} block RAMs: "
            f"{guess.fraction(target):.0%} of the largest resource)"
        )
    else:
        fold = args.fold
        guess = estimate(layout_pipeline(plan, fold, lanes, chain), target)
        if guess.fraction(target) > 1:
            log.warning(
                "the estimate for fold %d exceeds %s (%.0f%% of its largest resource); placement will probably fail",
                fold,
                target.name,
                100 * guess.fraction(target),
            )
    kernel = SpeculativePipeline(
        plan, history, fold=fold, block_ram_depth=target.block_ram_depth, lanes_per_stage=lanes, mark_chain=chain
    )
    if board:
        return _run_board(args, board, kernel, history, guess)
    workdir = Path(args.output or Path("build") / "synth" / f"{kernel.module_name}-{target.name}")
    from ..hdl.synth import synthesise

    with progress_for(args, None, label=f"synth {plan.game.code} {target.name} fold {fold}") as progress:
        progress.phase("synthesis (yosys), then placing and routing (nextpnr)")
        report = synthesise(
            kernel,
            target,
            args.freq,
            workdir,
            fold_chosen=args.fold is None,
            estimated=guess,
            seed=args.seed,
            router=args.router,
        )
    (workdir / "synth.json").write_text(report.to_json())
    _print_report(report, kernel)
    print(f"  wrote {workdir / 'synth.json'} ({report.seconds:.0f} s in yosys and nextpnr)")
    return 0


def _print_report(report, kernel) -> None:
    layout = kernel.layout
    print(
        f"{report.game} on {report.target} at fold {report.fold} ({layout.mark_units} mark units, "
        f"{len(layout.stages)} stages handing on {layout.mark_chain}, latency {report.latency} clocks)"
    )
    print(f"  LUTs        {report.luts:>8} of {report.luts_available}")
    print(f"  flip-flops  {report.ffs:>8} of {report.ffs_available}")
    print(f"  block RAMs  {report.brams:>8} of {report.brams_available}")
    print(f"  fmax        {report.fmax_mhz:>8.2f} MHz (asked {report.target_mhz:g} MHz)")
    print(f"  values/s    {report.values_per_second:>8.3g}  (fmax / fold)")


def _run_board(args, board, kernel, history, guess) -> int:
    from ..hdl.boards import board_settings, ecp5_pll
    from ..hdl.streamer import ResultStreamer
    from ..hdl.top import build_board

    pll = ecp5_pll(board.reference_mhz, args.freq)
    settings = board_settings(pll.output_mhz, args.baud, args.record_every, 1024)
    streamer = ResultStreamer(kernel, history, settings)
    workdir = Path(args.output or Path("build") / "board" / f"{kernel.module_name}-{board.name}")
    report = build_board(
        streamer,
        board,
        pll,
        workdir,
        fold_chosen=args.fold is None,
        estimated=guess,
        seed=args.seed,
        router=args.router,
    )
    (workdir / "board.json").write_text(report.to_json())
    _print_report(report.synthesis, kernel)
    # Round the suggestion down: 73.55 MHz routed does not meet 74.  A rebuild places anew, so the
    # suggestion is a lower clock to try, not a promise.
    print(
        f"  clock       {report.clock_mhz:>8.2f} MHz from the PLL: timing "
        + (
            "met"
            if report.timing_met
            else f"NOT met (try a rebuild with --freq {math.floor(report.synthesis.fmax_mhz)} or less)"
        )
    )
    print(f"  serial      {report.baud:>8.0f} baud, a summary every {report.settings['record_every']} values")
    print(f"  bitstream   {workdir / report.bitstream} ({report.bitstream_bytes} bytes)")
    print(f"  wrote {workdir / 'board.json'} ({report.synthesis.seconds:.0f} s in yosys, nextpnr and ecppack)")
    return 0 if report.timing_met else 1
