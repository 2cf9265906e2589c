"""The GPU measurement of issue 7: .6 to 10^8 on an H100, checked against the agreed checksum.

Usage (on a GPU machine, from the repository root; CuPy and nvcc needed):

    python benchmarks/cuda_bench.py [--game .6] [--count 1e8] [--sweep] [--json FILE]

On a machine where octalgen cannot be pip-installed (no network), run it from
the checkout: ``ln -sfn ../templates octalgen/templates; PYTHONPATH=$PWD python3 ...``.

Prints, for the main run: speculative values/s, verified values/s (both over
kernel time for the positions the GPU computed), the checksum of G(0) ...
G(count-1) against the agreed one, the advance of the front per round and the
rounds the front needed per window of positions.  ``--sweep`` adds
speculation-only runs of 10^7 values over window sizes, warps per block and
the term loop against unrolled terms: the table the defaults are chosen from.  Exit status 1 if the checksum or
the verification fails.
"""

import argparse
import json
import sys

from octalgen.cuda.bench import run_benchmark
from octalgen.cuda.plan import CudaOptions


def count(text: str) -> int:
    return int(float(text)) if "e" in text.lower() else int(text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", default=".6")
    parser.add_argument("--count", type=count, default=10**8)
    parser.add_argument("--window", type=int, help="positions per round (default: 32 per SM)")
    parser.add_argument("--scan-steps", type=count, help=f"verifier scan table length (default {CudaOptions.scan_steps})")
    parser.add_argument("--sweep", action="store_true", help="also sweep window sizes, warps per block, term loop")
    parser.add_argument("--json", help="write every figure here")
    args = parser.parse_args()

    main_options = CudaOptions() if args.scan_steps is None else CudaOptions(scan_steps=args.scan_steps)
    main_run = run_benchmark(args.game, args.count, window=args.window, options=main_options)
    runs = [main_run]
    if args.sweep:
        sm_window = main_run["window"]
        shapes = [(window, CudaOptions()) for window in (sm_window // 4, sm_window // 2, sm_window, 2 * sm_window,
                                                         4 * sm_window)]
        shapes += [(sm_window, CudaOptions(term_loop=loop, term_groups=groups))
                   for loop, groups in ((True, 8), (True, 32), (False, 16), (False, 32))]
        for window, options in shapes:
            runs.append(run_benchmark(args.game, 10**7, window=window, options=options, verify=False, checksum=False))
    if args.json:
        with open(args.json, "w") as out:
            json.dump(runs, out, indent=1, default=str)

    print(main_run["resource_usage"])
    print(f"\n{'game':>5} {'count':>11} {'window':>7} {'warps':>5} {'loop':>5} {'spec M/s':>9} {'verified M/s':>12} "
          f"{'rounds':>8} {'us/round':>8} {'adv/round':>9} {'rounds/window p50 p90 max':>27}")
    for run in runs:
        rpw = run["rounds_per_window"]
        verified = run.get("verified_values_per_s")
        print(f"{run['game']:>5} {run['count']:>11} {run['window']:>7} {run['term_groups']:>5} {str(run['term_loop']):>5} "
              f"{run['speculative_values_per_s'] / 1e6:9.2f} "
              f"{(verified / 1e6 if verified else float('nan')):12.2f} {run['rounds']:>8} "
              f"{run['microseconds_per_round']:8.2f} "
              f"{run['advance_per_round']['mean']:9.1f} "
              f"{rpw.get('p50', 0):>9.0f} {rpw.get('p90', 0):>5.0f} {rpw.get('p100', 0):>5.0f}")
    print(f"\nadvance per round: {main_run['advance_per_round']}")
    print(f"rounds per window of {main_run['window']}: {main_run['rounds_per_window']}")
    print(f"verification: {main_run.get('verification_seconds')} s on the GPU, first wrong {main_run.get('first_unproven')}, "
          f"scan steps mean {main_run.get('scan_steps_mean')} max {main_run.get('scan_steps_max')}; "
          f"{len(main_run.get('settled_on_cpu', []))} pair scans gave up, proven on the CPU in "
          f"{main_run.get('cpu_settle_seconds')} s")
    print(f"checksum G(0..{args.count - 1}): {main_run.get('checksum')} (agreed: {main_run.get('checksum_known')}) "
          f"{'OK' if main_run.get('checksum_ok') else 'MISMATCH'}")
    return 0 if main_run.get("checksum_ok") and main_run.get("first_unproven") is None else 1


if __name__ == "__main__":
    sys.exit(main())
