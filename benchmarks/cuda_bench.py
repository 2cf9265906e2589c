"""The GPU measurement: .6 to 10^8 with --backend cuda, checked against the agreed checksum.

Usage (on a GPU machine, from the repository root; CuPy and nvcc needed):

    python benchmarks/cuda_bench.py [--game .6] [--count 1e8] [--window W] [--sweep] [--json FILE]

On a machine where octalgen cannot be pip-installed (no network), run it from
the checkout: ``ln -sfn ../templates octalgen/templates; PYTHONPATH=$PWD python3 ...``.

Every run goes through the engine as ``octalgen run --backend cuda`` does
(:func:`octalgen.cuda.bench.run_benchmark`).  The first two rows are the default
(every window position recomputes every term each round: ``cache_final=False``)
and the marks of final inputs cached (``cache_final=True``), measured in the
same command; their ratio is the figure to quote.  Columns:
speculative and verified values/s over the whole run and in steady state (the
second half of the values), the round kernels' values/s over their device time, rounds,
microseconds per round, the front's advance per round, rounds per window
(median, 90th percentile, largest) and the positions recomputed per value
(term marks per value in units of one position's terms).  ``--sweep`` adds
speculation-only runs of 10^7 values over window sizes and warps per block.
Exit status 1 if a checksum or a verification fails.
"""

import argparse
import json
import sys

from octalgen.cli.arguments import count_type
from octalgen.cuda.bench import run_benchmark
from octalgen.cuda.cuda_plan import CudaOptions


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", default=".6")
    parser.add_argument("--count", type=count_type, default=10**8)
    parser.add_argument("--window", type=int, help="positions per round (default: 32 per SM)")
    parser.add_argument(
        "--scan-steps", type=count_type, help=f"verifier scan table length (default {CudaOptions.scan_steps})"
    )
    parser.add_argument("--sweep", action="store_true", help="also sweep window sizes and warps per block")
    parser.add_argument("--json", help="write every figure here")
    args = parser.parse_args()

    scan = {} if args.scan_steps is None else {"scan_steps": args.scan_steps}
    before = run_benchmark(args.game, args.count, args.window, CudaOptions(cache_final=False, **scan))
    after = run_benchmark(args.game, args.count, args.window, CudaOptions(cache_final=True, **scan))
    runs = [before, after]
    if args.sweep:
        sm_window = after["window"]
        shapes = [(window, CudaOptions()) for window in (sm_window // 4, sm_window // 2, 2 * sm_window, 4 * sm_window)]
        shapes += [(sm_window, CudaOptions(term_groups=groups)) for groups in (8, 32)]
        for window, options in shapes:
            runs.append(run_benchmark(args.game, 10**7, window, options, verify=False))
    if args.json:
        with open(args.json, "w") as out:
            json.dump(runs, out, indent=1, default=str)

    print(after["resource_usage"])
    print(
        f"\n{'game':>5} {'count':>11} {'window':>7} {'warps':>5} {'cache':>5} {'spec M/s':>9} {'verified M/s':>12} "
        f"{'kernel M/s':>10} {'rounds':>8} {'us/round':>8} {'adv/round':>9} {'rounds/window p50 p90 max':>27} "
        f"{'recomputed/value':>16}"
    )
    for run in runs:
        rpw = run["rounds_per_window"]
        verified = run.get("verified_values_per_s")
        print(
            f"{run['game']:>5} {run['count']:>11} {run['window']:>7} {run['term_groups']:>5} "
            f"{run['cache_final']!s:>5} {run['speculative_values_per_s'] / 1e6:9.2f} "
            f"{(verified / 1e6 if verified else float('nan')):12.2f} {(run['kernel_values_per_s'] or 0) / 1e6:10.2f} "
            f"{run['rounds']:>8} {run['microseconds_per_round']:8.2f} {run['advance_per_round']['mean']:9.1f} "
            f"{rpw.get('p50', 0):>9.0f} {rpw.get('p90', 0):>5.0f} {rpw.get('p100', 0):>5.0f} "
            f"{run['recomputed_per_value']:16.2f}"
        )
    speculative = after["speculative_values_per_s"] / before["speculative_values_per_s"]
    for run in (before, after):
        print(
            f"{run['cache_final']!s:>5}: steady state (second half) speculative "
            f"{(run['speculative_steady_values_per_s'] or 0) / 1e6:.2f} M/s, verified "
            f"{(run['verified_steady_values_per_s'] or 0) / 1e6:.2f} M/s"
        )
    print(
        f"\ncached / default: speculative {speculative:.2f}x, "
        f"verified {after['verified_values_per_s'] / before['verified_values_per_s']:.2f}x, kernel "
        f"{(after['kernel_values_per_s'] or 0) / (before['kernel_values_per_s'] or 1):.2f}x, positions recomputed "
        f"per value {after['recomputed_per_value'] / before['recomputed_per_value']:.2f}x"
    )
    for run in (before, after):
        print(
            f"cache_final={run['cache_final']}: verification {run['verification_seconds']:.2f} s on the GPU, scan "
            f"steps mean {run['scan_steps_mean']:.0f} max {run['scan_steps_max']}; "
            f"{len(run['settled_on_cpu'])} heaps settled on the CPU; checksum G(0..{args.count - 1}) "
            f"{run['checksum']} (agreed: {run['checksum_known']}) {'OK' if run['checksum_ok'] else 'MISMATCH'}"
        )
    return 0 if before["checksum_ok"] and after["checksum_ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
