"""``octalgen stats DIR``: the figures of a run from its checkpoint."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..engine.run_summary import summary_of_checkpoint
from ..engine.value_statistics import plot_histogram
from ..errors import InputError
from ..output import check_output, write_output
from .arguments import add_masks
from .run import print_summary

DESCRIPTION = """\
Print the figures of a run (octalgen run or octalgen period) from its checkpoint directory,
without computing anything: the FNV-1a-64 digest of the proven values, their count, the largest
value and where it first appears, the sparse space (range or positions, the rare mask, how many
rare values or positions, the last one), the positions of the zeros, rare values found by
verification, the period or period candidate, and how many values of each size (--histogram).
--mask counts the values that are rare under another mask, as published statistics do, and says
where the last one is; --plot draws the histogram of the common
values (Grossman's Figure 10; needs matplotlib) and writes the counts of every value beside it as
CSV (value,count,first_heap; --csv alone writes only those).  --compare RDIR compares the run's
count tables (the counts of each value among G(1) ... G(n) at every power of two n it passed and
at its end) byte for byte with the files RDIR/0.<code>/<n> (or RDIR/<n>) of rogalski's layout,
over the n both have: it prints "equal" with how many tables and up to which n (exit status 0),
or the first n and value where they differ, with both counts (exit status 1)."""

EXAMPLES = """\
examples:
  octalgen stats runs/officers
  octalgen stats runs/officers --json
  octalgen stats runs/officers --mask 0x1ee --mask 0x1fe
  octalgen stats runs/officers --plot officers.png   (also officers.csv)
  octalgen stats runs/officers --csv counts.csv
  octalgen stats runs/161 --compare octal/results   (a clone of rogalski-wmii-uni-lodz-pl/octal)"""


def register(sub) -> None:
    parser = sub.add_parser(
        "stats",
        help="figures of a run (digest, counts, largest value, ...) from its checkpoint",
        description=DESCRIPTION,
        epilog=EXAMPLES,
    )
    parser.add_argument("directory", metavar="DIR", help="the run's --checkpoint directory (or its checkpoint.json)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--histogram", action="store_true", help="also print 'value count first-heap' lines")
    add_masks(parser, "0x7b8")
    parser.add_argument(
        "--plot",
        metavar="FILE.png",
        help="draw the histogram of common values (needs matplotlib); its counts go beside it, "
        "as FILE with the suffix .csv",
    )
    parser.add_argument(
        "--csv",
        metavar="FILE.csv",
        help="write the counts as CSV: value,count,first_heap for every value (with --plot: "
        "instead of beside the plot)",
    )
    parser.add_argument(
        "--compare",
        metavar="RDIR",
        help="instead of the figures: compare the run's count tables with those in RDIR/0.<code>/ "
        "(or RDIR itself), files named n of 'value count' lines; exit status 0 when equal, 1 "
        "at the first difference",
    )
    parser.set_defaults(run=run)


def compare(args) -> int:
    """``--compare RDIR``: one line (or JSON) saying equal or where the tables first differ; 0 or 1."""
    from ..engine.counts import compare_tables, read_tables, tables_directory

    summary = summary_of_checkpoint(args.directory)
    code = summary.statistics.game
    theirs = tables_directory(args.compare, code)
    comparison = compare_tables(summary.count_tables, read_tables(theirs))
    if args.json:
        json.dump(dict(comparison.to_json(), directory=str(theirs)), sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        print(comparison.describe(str(theirs)))
    return 0 if comparison.equal else 1


def run(args) -> int:
    if args.compare is not None:
        if args.plot or args.csv or args.mask or args.histogram:
            raise InputError("--compare prints the comparison alone: leave out --plot, --csv, --mask and --histogram")
        return compare(args)
    counts_path = args.csv or (str(Path(args.plot).with_suffix(".csv")) if args.plot else None)
    if args.plot and counts_path is not None and Path(counts_path) == Path(args.plot):
        raise InputError(
            f"--plot {args.plot} would be overwritten by the counts (CSV): name an image (.png, .svg, "
            "...) and, with --csv, another file"
        )
    for path in (args.plot, counts_path):
        if path:
            check_output(path)  # both, before either is written
    summary = summary_of_checkpoint(args.directory)
    if args.plot:
        plot_histogram(summary.statistics, args.plot)
    if counts_path:
        write_output(counts_path, summary.statistics.histogram_csv())
    if args.plot:
        print(f"octalgen: wrote the histogram to {args.plot} and its counts to {counts_path}", file=sys.stderr)
    elif counts_path:
        print(f"octalgen: wrote the counts to {counts_path}", file=sys.stderr)
    print_summary(summary, args.json, args.mask)
    if args.histogram and not args.json:
        sys.stdout.write("\n".join(summary.statistics.histogram_lines()) + "\n")
    return 0
