"""Statistics of a long run: what Grossman reports for Officers (section 4, Figure 10).

Counts and first heaps come from the scanner (:mod:`.scan`); this module turns them into the
figures ``octalgen run`` and ``octalgen stats`` print, their JSON form, and the histogram plot.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import ToolMissingError
from ..rare import is_rare

_NEVER = np.iinfo(np.uint64).max


@dataclass
class Statistics:
    """Figures over the proven values G(0) ... G(values-1).

    Attributes
    ----------
    game : str
    values : int
        How many values (N).
    counts, first : dict of int to int
        For every value that occurs: how often, and its first heap.
    rare_found : list of (int, int)
        (heap, value) of rare values found by verification during the run.
    digest : str
        FNV-1a-64 of G(0) ... G(N-1).
    digest_from : int
        S of the ranged digest (0 when none was asked for).
    range_digest : str
        FNV-1a-64 of G(S) ... G(N-1).
    mask : int
        The rare mask (to tell common values from rare ones).
    """

    game: str
    values: int
    counts: dict[int, int]
    first: dict[int, int]
    digest: str
    digest_from: int = 0
    range_digest: str | None = None
    mask: int = 0
    rare_found: list = field(default_factory=list)

    @classmethod
    def from_arrays(cls, game: str, counts: np.ndarray, first_seen: np.ndarray, **figures) -> "Statistics":
        present = np.flatnonzero(counts)
        return cls(game=game, counts={int(v): int(counts[v]) for v in present},
                   first={int(v): int(first_seen[v]) for v in present if first_seen[v] != _NEVER}, **figures)

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
        value = max(self.first, key=self.first.get)
        return value, self.first[value]

    @property
    def zeros(self) -> int:
        return self.counts.get(0, 0)

    def to_json(self) -> dict:
        largest, last_new = self.largest, self.last_new
        return {
            "game": self.game,
            "values": self.values,
            "fnv1a64": self.digest,
            "fnv1a64_from": {"start": self.digest_from, "stop": self.values, "digest": self.range_digest}
            if self.digest_from else None,
            "largest": {"value": largest[0], "first_heap": largest[1]} if largest else None,
            "last_new": {"value": last_new[0], "first_heap": last_new[1]} if last_new else None,
            "zeros": self.zeros,
            "distinct_values": len(self.counts),
            "rare_found": [{"heap": p, "value": v} for p, v in self.rare_found],
            "counts": {str(v): c for v, c in sorted(self.counts.items())},
            "first_heap": {str(v): p for v, p in sorted(self.first.items())},
        }

    def lines(self) -> list[str]:
        """The figures as text lines (the first is the digest line)."""
        lines = [f"fnv1a64 {self.digest}"]
        if self.digest_from:
            lines.append(f"fnv1a64 [{self.digest_from}, {self.values}) {self.range_digest}")
        lines.append(f"values {self.values} (G(0) ... G({self.values - 1}), all proven)")
        if self.largest:
            lines.append("largest value {} first at G({})".format(*self.largest))
            lines.append("last new value {} first at G({})".format(*self.last_new))
        lines.append(f"zeros {self.zeros}")
        lines.append(f"distinct values {len(self.counts)}")
        found = ", ".join(f"G({p}) = {v}" for p, v in self.rare_found) or "none"
        lines.append(f"rare values found by verification: {found}")
        return lines

    def histogram_lines(self) -> list[str]:
        """``value count first-heap`` for every value, ascending."""
        return [f"{v} {c} {self.first.get(v, '')}".rstrip() for v, c in sorted(self.counts.items())]


def plot_histogram(stats: Statistics, path) -> None:
    """Draw the histogram of common values (Grossman, Figure 10) into ``path`` (PNG).

    Raises
    ------
    ToolMissingError
        When matplotlib is not installed.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ToolMissingError("--plot needs matplotlib, which is not installed: pip install 'octalgen[plot]'") from None
    common = sorted(v for v in stats.counts if not is_rare(v, stats.mask)) if stats.mask else sorted(stats.counts)
    figure, axes = plt.subplots(figsize=(10, 4))
    axes.bar(common, [stats.counts[v] for v in common], width=1.0, color="#3b6ea5")
    axes.set_yscale("log")
    axes.set_xlabel("value G(n)" + (" (common values)" if stats.mask else ""))
    axes.set_ylabel("count")
    axes.set_title(f"{stats.game}: values of G(0) ... G({stats.values - 1})")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
