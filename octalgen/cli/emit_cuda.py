"""``octalgen emit cuda CODE``: the generated CUDA (round kernel and verifier) of a game, to ``-o FILE`` or stdout."""

from __future__ import annotations

import sys

from ..cuda.cuda_plan import CudaOptions, cuda_plan_for
from ..cuda.kernels import render_kernels
from ..engine.planning import plan_game
from ..output import check_output, write_output
from .arguments import add_game, add_table, count_type, load_table


def register(targets) -> None:
    parser = targets.add_parser(
        "cuda",
        help="CUDA kernels: speculative fixed-point round and exact verifier",
        description="Write the generated CUDA of a game: the round kernel, which recomputes a window of "
        "speculative values from the previous round until nothing changes (the fixed point), and the "
        "verifier that proves every value.  Needs no GPU (--backend cuda runs them).",
        epilog="examples:\n"
        "  octalgen emit cuda .6 -o officers.cu\n"
        "  octalgen emit cuda .6 --term-groups 8 --arch sm_80",
    )
    add_game(parser)
    add_table(parser)
    parser.add_argument(
        "-o", "--output", metavar="FILE", help="the CUDA file to write (one file, so -o names it; default: stdout)"
    )
    parser.add_argument(
        "--term-groups",
        type=count_type,
        default=CudaOptions.term_groups,
        metavar="G",
        help="warps per block of the round kernel (default %(default)s)",
    )
    parser.add_argument(
        "--cached-marks",
        dest="cache_final",
        action="store_true",
        help="cache the marks of final inputs instead of recomputing every term of every window "
        "position each round (off by default: a round lasts as long as its busiest block, "
        "which still marks most terms)",
    )
    parser.add_argument("--arch", default=CudaOptions.arch, help="nvcc target (default %(default)s)")
    parser.set_defaults(run=run)


def run(args) -> int:
    if args.output:
        check_output(args.output)  # before planning and rendering
    options = CudaOptions(term_groups=args.term_groups, cache_final=args.cache_final, arch=args.arch)
    plan, _prefix = plan_game(args.game, load_table(args), required=True)
    source = render_kernels(cuda_plan_for(plan, options))
    if args.output:
        write_output(args.output, source)
    else:
        sys.stdout.write(source)
    return 0
