"""Statistics of the proven values: what Grossman reports for Officers (section 4, Figure 10).

Counts, first and last heaps come from the scanner (:mod:`.scan`); this module turns them into the
figures ``run``, ``period`` and ``stats`` print, their JSON form, the histogram plot and its
counts as CSV.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import InputError, ToolMissingError
from ..output import write_output
from ..sparse import is_rare

_NEVER = np.iinfo(np.uint64).max


@dataclass
class Statistics:
    """Figures over the proven values G(0) ... G(values-1).

    Attributes
    ----------
    game : str
        Canonical code; ``name`` its common name (e.g. officers) if it has one.
    values : int
        How many values (N).
    counts, first, last : dict of int to int
        For every value that occurs: how often, its first heap and its last heap.
    digest : str
        FNV-1a-64 of G(0) ... G(N-1).
    digest_from : int
        S of the ranged digest (0 when none was asked for).
    range_digest : str
        FNV-1a-64 of G(S) ... G(N-1).
    mask : int or None
        The rare mask of the sparse space (0: none; None: not decided yet).
    parity : int or None
        For a sparse space of positions, its parity (:class:`~octalgen.sparse.Rarity`); None for range.
    rule : str or None
        The sparse space in words (:meth:`~octalgen.rare.RareTable.describe`).
    rare_positions : int
        How many rare positions the run's table holds (every one below N is exact).
    last_rare : (int, int) or None
        (position, value) of the last of them.
    zero_positions : list of int
        Heaps n with G(n) = 0 (the first :data:`~.tally.ZERO_POSITIONS`; the count is exact).
    rare_found : list of (int, int)
        (heap, value) of rare values found by verification during the run.
    mask_switches : list of (int, int, int)
        (heap, old mask, new mask) where a value rare under the old mask appeared far out and the
        run went on under a mask that made it common (:func:`~octalgen.sparse.find_late_switch`).
    """

    game: str
    values: int
    counts: dict[int, int]
    first: dict[int, int]
    digest: str
    digest_from: int = 0
    range_digest: str | None = None
    mask: int | None = None
    parity: int | None = None
    rule: str | None = None
    rare_positions: int = 0
    last_rare: tuple[int, int] | None = None
    zero_positions: list = field(default_factory=list)
    rare_found: list = field(default_factory=list)
    mask_switches: list = field(default_factory=list)
    name: str | None = None
    last: dict[int, int] = field(default_factory=dict)

    @classmethod
    def from_arrays(
        cls, game: str, counts: np.ndarray, first_seen: np.ndarray, last_seen: np.ndarray, **figures
    ) -> Statistics:
        present = np.flatnonzero(counts)
        return cls(
            game=game,
            counts={int(v): int(counts[v]) for v in present},
            first={int(v): int(first_seen[v]) for v in present if first_seen[v] != _NEVER},
            last={int(v): int(last_seen[v]) for v in present if last_seen[v] != _NEVER},
            **figures,
        )

    @property
    def largest(self) -> tuple[int, int] | None:
        """(largest value, its first heap)."""
        if not self.counts:
            return None
        value = max(self.counts)
        return value, self.first[value]

    @property
    def last_new(self) -> tuple[int, int] | None:
        """(the value that appeared last for the first time, that heap)."""
        if not self.first:
            return None
        value = max(self.first, key=self.first.__getitem__)
        return value, self.first[value]

    @property
    def zeros(self) -> int:
        return self.counts.get(0, 0)

    @property
    def sparse_space(self) -> str:
        """The kind of sparse space: ``range`` (rare values under a mask), ``positions`` (rare values
        under a mask and the heap's parity), ``none``, or ``undecided``."""
        if self.mask is None:
            return "undecided"
        if not self.mask:
            return "none"
        return "range" if self.parity is None else "positions"

    def rare_count(self, mask: int) -> int:
        """How many of the N values are rare under ``mask`` (an even number of set bits of G(n) & mask:
        range rarity, which the counts of values decide; positional rarity would need the heaps)."""
        return sum(c for v, c in self.counts.items() if is_rare(v, mask))

    def last_rare_under(self, mask: int) -> tuple[int, int] | None:
        """(heap, value) of the last of the N values that is rare under ``mask`` (range rarity, as
        :meth:`rare_count`), None when none is: the latest last heap of the values rare under it."""
        heaps = [(heap, v) for v, heap in self.last.items() if is_rare(v, mask)]
        return max(heaps, default=None)

    def to_json(self, masks=()) -> dict:
        largest, last_new = self.largest, self.last_new
        return {
            "game": self.game,
            "name": self.name,
            "values": self.values,
            "fnv1a64": self.digest,
            "fnv1a64_from": {"start": self.digest_from, "stop": self.values, "digest": self.range_digest}
            if self.digest_from
            else None,
            "largest": {"value": largest[0], "first_heap": largest[1]} if largest else None,
            "last_new": {"value": last_new[0], "first_heap": last_new[1]} if last_new else None,
            "sparse_space": self.sparse_space,
            "mask": f"{self.mask:#x}" if self.mask is not None else None,
            "parity": self.parity,
            "rule": self.rule,
            "rare_positions": self.rare_positions,
            "last_rare": {"heap": self.last_rare[0], "value": self.last_rare[1]} if self.last_rare else None,
            "rare_under_mask": {f"{m:#x}": self.rare_count(m) for m in masks},
            "last_rare_under_mask": {f"{m:#x}": _heap_and_value(self.last_rare_under(m)) for m in masks},
            "zeros": self.zeros,
            "zero_positions": self.zero_positions,
            "distinct_values": len(self.counts),
            "rare_found": [{"heap": p, "value": v} for p, v in self.rare_found],
            "mask_switches": [
                {"heap": p, "from": f"{old:#x}", "to": f"{new:#x}"} for p, old, new in self.mask_switches
            ],
            "counts": {str(v): c for v, c in sorted(self.counts.items())},
            "first_heap": {str(v): p for v, p in sorted(self.first.items())},
        }

    def lines(self, masks=()) -> list[str]:
        """The figures as text lines (the first is the digest line)."""
        lines = [f"fnv1a64 {self.digest}"]
        if self.digest_from:
            lines.append(f"fnv1a64 [{self.digest_from}, {self.values}) {self.range_digest}")
        lines.append(f"values {self.values} (G(0) ... G({self.values - 1}), all proven)")
        largest, last_new = self.largest, self.last_new
        if largest is not None and last_new is not None:  # both, once there is a value
            lines.append("largest value {} first at G({})".format(*largest))
            lines.append("last new value {} first at G({})".format(*last_new))
        if self.mask:
            last = "" if self.last_rare is None else " the last G({}) = {}".format(*self.last_rare)
            space = f"range, mask {self.mask:#x}" if self.parity is None else self.rule
            rare = "rare values" if self.parity is None else "rare positions"
            lines.append(f"sparse space: {space}; {self.rare_positions} {rare},{last}")
        elif self.mask == 0:
            lines.append("sparse space: none (every value computed by the exact solver)")
        for mask in masks:
            at = self.last_rare_under(mask)
            last = ", the last G({}) = {}".format(*at) if at else ""
            lines.append(f"rare under mask {mask:#x}: {self.rare_count(mask)} of {self.values} values{last}")
        shown = ", ".join(map(str, self.zero_positions[:20]))
        more = f", ... ({self.zeros - 20} more)" if self.zeros > 20 else ""
        lines.append(f"zeros {self.zeros}" + (f" at {shown}{more}" if self.zeros else ""))
        lines.append(f"distinct values {len(self.counts)}")
        found = ", ".join(f"G({p}) = {v}" for p, v in self.rare_found) or "none"
        lines.append(f"rare values found by verification: {found}")
        for heap, old, new in self.mask_switches:
            lines.append(
                f"mask switched at G({heap}): {old:#x} -> {new:#x} (a value rare under {old:#x} appeared far out)"
            )
        return lines

    def histogram_lines(self) -> list[str]:
        """``value count first-heap`` for every value, ascending."""
        return [f"{v} {c} {self.first.get(v, '')}".rstrip() for v, c in sorted(self.counts.items())]

    def histogram_csv(self) -> str:
        """The counts as CSV: a header ``value,count,first_heap``, then one row per value, ascending.

        Every value is listed, rare ones too (the plot leaves them out); a first heap that is
        not known is an empty field.
        """
        rows = [f"{v},{c},{self.first.get(v, '')}" for v, c in sorted(self.counts.items())]
        return "\n".join(["value,count,first_heap", *rows]) + "\n"


def _heap_and_value(at: tuple[int, int] | None) -> dict | None:
    return {"heap": at[0], "value": at[1]} if at else None


def plot_histogram(stats: Statistics, path) -> None:
    """Draw the histogram of common values (Grossman, Figure 10) into ``path``.

    The format is the one ``path``'s suffix names (``.png``, ``.svg``, ``.pdf``, ...). The image
    is drawn in memory first and then written by :func:`octalgen.output.write_output`, so a
    failure leaves whatever was at ``path`` untouched.

    Raises
    ------
    ToolMissingError
        When matplotlib is not installed.
    InputError
        When matplotlib cannot write the format of ``path``'s suffix.
    OutputError
        When ``path`` cannot be written.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ToolMissingError(
            "--plot needs matplotlib, which is not installed: pip install 'octalgen[plot]'"
        ) from None
    mask = (stats.mask or 0) if stats.parity is None else 0  # positional rarity: no value is always common
    shown = sorted(v for v in stats.counts if not is_rare(v, mask)) if mask else sorted(stats.counts)
    left_out = sum(c for v, c in stats.counts.items() if mask and is_rare(v, mask))
    figure, axes = plt.subplots(figsize=(10, 4))
    image_format = Path(path).suffix.lstrip(".").lower() or "png"
    if image_format not in figure.canvas.get_supported_filetypes():
        plt.close(figure)
        known = ", ".join(sorted(figure.canvas.get_supported_filetypes()))
        raise InputError(f"cannot draw {path}: matplotlib writes no .{image_format} files (it writes {known})")
    axes.bar(shown, [stats.counts[v] for v in shown], width=1.0, color="#3b6ea5")
    axes.set_yscale("log")
    axes.set_xlabel("value G(n)" + (" (common values)" if mask else ""))
    axes.set_ylabel("how many n")
    title = f"{stats.game}" + (f" ({stats.name})" if stats.name else "")
    title += f": values of G(0) ... G({stats.values - 1:,})"
    if mask:
        title += f"; the {left_out:,} rare values (mask {mask:#x}) left out"
    axes.set_title(title)
    figure.tight_layout()
    image = io.BytesIO()
    figure.savefig(image, format=image_format, dpi=120)
    plt.close(figure)
    write_output(path, image.getvalue())
