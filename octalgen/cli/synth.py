"""``octalgen synth CODE --target T``: place and route the kernel, report LUTs, RAMs and fmax.

Runs yosys and nextpnr (the ``synth`` extra or tools on PATH) on the emitted
Verilog; prints the resources used, the fmax nextpnr reports and the values
per second it implies (fmax / fold), and writes them as JSON.  Without
``--fold`` it takes the smallest fold whose estimate fits the device, and
says so.
"""

from __future__ import annotations

import logging
from pathlib import Path

from ..errors import InputError
from ..plan import make_plan
from . import progress_for
from .arguments import add_game, add_table, count_type, load_table

log = logging.getLogger("octalgen")


def register(sub) -> None:
    from ..hdl.synth import TARGETS

    parser = sub.add_parser(
        "synth", help="synthesise, place and route the FPGA kernel; report resources and fmax",
        description="Synthesise the FPGA pipeline of a game with yosys and place and route it with nextpnr "
                    "(pip install 'octalgen[synth]', or the tools on PATH), then report the LUTs, flip-flops and "
                    "block RAMs used, the fmax nextpnr reports and the values/s it implies (fmax / fold); the "
                    "figures are also written to synth.json.  Without --fold the smallest fold whose estimate "
                    "fits the device is chosen, and said.  Large designs take minutes.",
        epilog="examples:\n"
               "  octalgen synth .356 --target ice40-hx8k\n"
               "  octalgen synth .6 --target ecp5-85k --fold 20")
    add_game(parser)
    parser.add_argument("--target", required=True, choices=tuple(TARGETS), help="the FPGA")
    parser.add_argument("--fold", type=count_type, metavar="F",
                        help="clocks per value (default: the smallest that the estimate fits in the device)")
    parser.add_argument("--freq", type=float, default=100.0, metavar="MHZ",
                        help="target clock frequency for nextpnr (default 100); fmax is reported either way")
    add_table(parser)
    parser.add_argument("-o", "--output", metavar="DIR",
                        help="working directory: Verilog, scripts, logs, synth.json (default build/synth/MODULE-TARGET)")
    parser.set_defaults(run=run)


def run(args) -> int:
    from ..hdl.kernel import SpeculativeKernel
    from ..hdl.layout import layout_pipeline
    from ..hdl.synth import choose_fold, estimate, find_tool, get_target, synthesise
    from ..hdl.verilog import preload_history

    target = get_target(args.target)
    if args.fold is not None and args.fold < 1:
        raise InputError("--fold must be at least 1")
    if args.freq <= 0:
        raise InputError("--freq must be positive")
    find_tool("yosys"), find_tool(f"nextpnr-{target.family}")  # fail early, before any work
    plan = make_plan(load_table(args))
    if args.fold is None:
        fold, guess = choose_fold(plan, target)
        print(f"no --fold given: chose fold {fold}, the smallest whose estimate fits {target.name} "
              f"({guess.luts} LUTs, {guess.ffs} FFs, {guess.brams} block RAMs: "
              f"{guess.fraction(target):.0%} of the largest resource)")
    else:
        fold = args.fold
        guess = estimate(layout_pipeline(plan, fold), target)
        if guess.fraction(target) > 1:
            log.warning("the estimate for fold %d exceeds %s (%.0f%% of its largest resource); "
                        "placement will probably fail", fold, target.name, 100 * guess.fraction(target))
    kernel = SpeculativeKernel(plan, preload_history(plan), fold=fold)
    workdir = Path(args.output or Path("build") / "synth" / f"{kernel.module_name}-{target.name}")
    with progress_for(args, None, label=f"synth {plan.game.code} {target.name} fold {fold}") as progress:
        progress.phase("synthesis (yosys), then placing and routing (nextpnr)")
        report = synthesise(kernel, target, args.freq, workdir, fold_chosen=args.fold is None, estimated=guess)
    (workdir / "synth.json").write_text(report.to_json())
    print(f"{report.game} on {report.target} at fold {report.fold} ({kernel.layout.mark_units} mark units, "
          f"latency {report.latency} clocks)")
    print(f"  LUTs        {report.luts:>8} of {report.luts_available}")
    print(f"  flip-flops  {report.ffs:>8} of {report.ffs_available}")
    print(f"  block RAMs  {report.brams:>8} of {report.brams_available}")
    print(f"  fmax        {report.fmax_mhz:>8.2f} MHz (asked {report.target_mhz:g} MHz)")
    print(f"  values/s    {report.values_per_second:>8.3g}  (fmax / fold)")
    print(f"  wrote {workdir / 'synth.json'} ({report.seconds:.0f} s in yosys and nextpnr)")
    return 0
