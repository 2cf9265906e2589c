"""``octalgen emit hdl CODE``: Verilog of the speculative kernel circuit, or its simulation.

Without ``--sim`` the Verilog (with its provenance header) is written to
``-o FILE``, by default ``generated/<game>/octalgen_hdl_f<F>.v`` (next to what
``emit c`` writes).  With ``--sim`` the circuit is simulated from
configuration and every value it emits is compared with the exact values of
the default exact backend (the Verilog is written only when ``-o`` is given);
exit status 0 when all match, 1 on the first mismatch (reported with its
heap size) or a raised error flag.
"""

from __future__ import annotations

from pathlib import Path

from ..backends import compute_values
from ..engine.planning import plan_game
from ..errors import InputError
from ..output import check_directory, check_output, write_output
from . import progress_for
from .arguments import GENERATED_DIRECTORY, add_game, add_table, count_type, game_folder, load_table

#: Values simulated when --cycles is not given.
DEFAULT_VALUES = {"amaranth": 2000, "verilator": 1_000_000}


def register(sub) -> None:
    parser = sub.add_parser(
        "hdl",
        help="Verilog of the FPGA pipeline (one value per F clocks), or simulate it",
        description="Write the Verilog of the speculative kernel as an FPGA pipeline that emits one value every F "
        "clocks (--fold F: F times fewer mark units), or with --sim simulate it and compare every "
        "value with the exact values; exit status 1 on the first mismatch.  --simulator verilator "
        "runs the emitted Verilog itself (for long runs); it needs verilator on PATH "
        "(Debian/Ubuntu: apt install verilator), checked before any work.",
        epilog="examples:\n"
        "  octalgen emit hdl .6 --fold 20      # generated/0.6/octalgen_hdl_f20.v\n"
        "  octalgen emit hdl .6 --fold 8 -o officers.v\n"
        "  octalgen emit hdl .356 --sim        # amaranth.sim, 2000 values\n"
        "  octalgen emit hdl .6 --sim --simulator verilator --cycles 1e6",
    )
    add_game(parser)
    parser.add_argument(
        "--fold",
        type=count_type,
        default=1,
        metavar="F",
        help="clocks per value: F-fold fewer mark units (default 1: one value per clock)",
    )
    add_table(parser)
    parser.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help=f"the Verilog file to write (one file, so -o names it; default "
        f"{GENERATED_DIRECTORY}/<game>/octalgen_hdl_f<F>.v; with --sim only if given)",
    )
    parser.add_argument(
        "--sim",
        action="store_true",
        help="simulate and compare every value with the reference instead of only writing Verilog",
    )
    parser.add_argument(
        "--cycles",
        type=count_type,
        metavar="N",
        help="clocks to simulate (default: the latency plus "
        + ", ".join(f"{n} values with {s}" for s, n in DEFAULT_VALUES.items())
        + ")",
    )
    parser.add_argument(
        "--simulator",
        choices=tuple(DEFAULT_VALUES),
        default="amaranth",
        help="amaranth (amaranth.sim, default) or verilator (the emitted Verilog, for long runs)",
    )
    parser.set_defaults(run=run)


def run(args) -> int:
    from ..hdl.kernel import SpeculativePipeline
    from ..hdl.verilog import emit_verilog

    if args.fold < 1:
        raise InputError("--fold must be at least 1")
    if not args.sim and (args.cycles is not None or args.simulator != "amaranth"):
        raise InputError("--cycles and --simulator need --sim")
    if args.simulator == "verilator":
        from ..hdl.simulate import find_verilator

        find_verilator()  # one line naming how to install it, before any work
    # Where the Verilog goes must be writable before any work.
    if args.output:
        check_output(args.output)
    elif not args.sim:
        check_directory(game_folder(GENERATED_DIRECTORY, args.game))
    plan, prefix = plan_game(args.game, load_table(args), required=True)
    first = plan.start
    if not args.sim:
        kernel = SpeculativePipeline(plan, prefix, fold=args.fold)
        path = Path(args.output) if args.output else verilog_path(Path(GENERATED_DIRECTORY), kernel)
        write_output(path, emit_verilog(kernel))
        layout = kernel.layout
        print(
            f"wrote {path}: {plan.game.code} at fold {layout.fold}, {layout.mark_units} mark units, "
            f"latency {kernel.latency} clocks, one value every {layout.fold} clocks from G({first})"
        )
        return 0

    from ..hdl.layout import layout_pipeline
    from ..hdl.simulate import build_verilator, compare, simulate

    layout = layout_pipeline(plan, args.fold)
    cycles = args.cycles if args.cycles is not None else layout.latency + DEFAULT_VALUES[args.simulator] * layout.fold
    expected = max(0, -(-(cycles - layout.latency) // layout.fold))
    if expected == 0:
        raise InputError(f"--cycles {cycles} ends before the first value (latency {layout.latency} clocks)")
    with progress_for(args, expected, label=f"{plan.game.code} fold {layout.fold}", items="values") as progress:
        progress.phase(f"computing {first + expected:,} reference values")
        reference = compute_values(plan.game, 0, first + expected, table=plan.table)
        progress.phase("building the circuit")
        kernel = SpeculativePipeline(plan, prefix, fold=args.fold)
        verilog = None
        if args.simulator == "verilator" or args.output:
            verilog = emit_verilog(kernel)
            if args.output:
                write_output(args.output, verilog)
                print(f"wrote {args.output}")
        if args.simulator == "verilator":
            progress.phase("verilator: compiling the model (minutes the first time; cached)")
            assert verilog is not None  # emitted just above for verilator
            build_verilator(verilog, kernel.module_name)
        sim = simulate(kernel, cycles, args.simulator, verilog=verilog, progress=progress)
    result = compare(sim, reference, first)
    last = first + result.checked - 1
    span = f"G({first}) ... G({last})" if result.checked else "none"
    print(
        f"{plan.game.code} at fold {layout.fold} ({sim.simulator}): {result.checked} values checked "
        f"against the reference ({span}), {sim.cycles} clocks, latency {kernel.latency}"
    )
    print(f"speed: {sim.cycles_per_second:,.0f} cycles/s, {sim.cycles_per_second / layout.fold:,.0f} values/s")
    if result.mismatch is None:
        print("all values match the reference")
        return 0
    heap, got, want = result.mismatch
    if got is None:
        print(
            f"first mismatch at heap {heap}: the circuit raised its error flag "
            f"(a value does not fit {plan.encoding.describe()}); the reference has G({heap}) = {want}"
        )
    else:
        print(f"first mismatch at heap {heap}: circuit G({heap}) = {got}, reference G({heap}) = {want}")
    return 1


def verilog_path(directory: Path, kernel) -> Path:
    """Where ``emit hdl`` without ``-o`` puts a kernel when ``directory`` is ``generated/``:
    ``directory/<game>/octalgen_hdl_f<F>.v`` (``<game>`` as for ``emit c``)."""
    return game_folder(directory, kernel.plan.game) / f"octalgen_hdl_f{kernel.fold}.v"
