"""``octalgen stats DIR``: the figures of a run from its checkpoint."""

from __future__ import annotations

import argparse
import sys

from ..engine.stats import plot_histogram
from ..engine.summary import summary_of_checkpoint
from ..errors import InputError
from .arguments import mask_type
from .run import print_summary

DESCRIPTION = """\
Print the figures of a run (octalgen run or octalgen period) from its checkpoint directory,
without computing anything: the FNV-1a-64 digest of the proven values, their count, the largest
value and where it first appears, the sparse space (range or positions, the rare mask, how many
rare positions, the last one), the positions of the zeros, rare values found by verification, the period or period
candidate, and how many values of each size (--histogram).  --mask counts the values that are
rare under another mask, as published statistics do; --plot draws the histogram of the common
values (Grossman's Figure 10; needs matplotlib)."""

EXAMPLES = """\
examples:
  octalgen stats runs/officers
  octalgen stats runs/officers --json
  octalgen stats runs/officers --mask 0x1ee --mask 0x1fe
  octalgen stats runs/officers --plot officers.png"""


def register(sub) -> None:
    parser = sub.add_parser("stats", help="figures of a run (digest, counts, largest value, ...) from its checkpoint",
                            description=DESCRIPTION, epilog=EXAMPLES,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("directory", metavar="DIR", help="the run's --checkpoint directory")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--histogram", action="store_true", help="also print 'value count first-heap' lines")
    parser.add_argument("--mask", type=mask_type, action="append", default=[], metavar="M",
                        help="also count the values that are rare under mask M (hexadecimal, e.g. 0x7b8); repeatable")
    parser.add_argument("--plot", metavar="FILE.png", help="draw the histogram of common values (needs matplotlib)")
    parser.set_defaults(run=run)


def run(args) -> int:
    summary = summary_of_checkpoint(args.directory)
    if args.plot:
        try:
            plot_histogram(summary.statistics, args.plot)
        except OSError as exc:
            raise InputError(f"cannot write the plot {args.plot}: {exc.strerror}") from None
        print(f"octalgen: wrote the histogram to {args.plot}", file=sys.stderr)
    print_summary(summary, args.json, args.mask)
    if args.histogram and not args.json:
        sys.stdout.write("\n".join(summary.statistics.histogram_lines()) + "\n")
    return 0
