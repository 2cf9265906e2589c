"""``octalgen stats DIR``: the figures of a run from its checkpoint."""

from __future__ import annotations

import sys

from ..errors import InputError
from ..engine.engine import summary_of_checkpoint
from ..engine.stats import plot_histogram
from .run import print_summary


def register(sub) -> None:
    parser = sub.add_parser("stats", help="figures of a run (digest, counts, largest value, ...) from its checkpoint")
    parser.add_argument("directory", metavar="DIR", help="the run's --checkpoint directory")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--histogram", action="store_true", help="also print 'value count first-heap' lines")
    parser.add_argument("--plot", metavar="FILE.png", help="draw the histogram of common values (needs matplotlib)")
    parser.set_defaults(run=run)


def run(args) -> int:
    summary = summary_of_checkpoint(args.directory)
    if args.plot:
        try:
            plot_histogram(summary.statistics, args.plot)
        except OSError as exc:
            raise InputError(f"cannot write the plot {args.plot}: {exc.strerror}") from None
    print_summary(summary, args.json)
    if args.histogram and not args.json:
        sys.stdout.write("\n".join(summary.statistics.histogram_lines()) + "\n")
    return 0
