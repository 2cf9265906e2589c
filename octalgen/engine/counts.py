"""Count tables: how many of G(1) ... G(n) take each value, at every power of two n a run passes.

This is the form in which rogalski-wmii-uni-lodz-pl/octal publishes its open games
(``results/0.<code>/<n>``), and the layout octalgen writes them in:

* a directory named after the game, ``0.<code>`` (``.167`` → ``0.167``; ``4.07`` stays ``4.07``),
  holding one file per n, named with n in decimal;
* in each file, one ``value count`` line (one space, one newline) for every value from 0 to the
  largest of G(1) ... G(n), in increasing order, zero counts included;
* heap 0 is not counted (the counts of a file add up to n).

A run takes a table each time its count of G(0) ... G(n) is complete for a power of two n >= 2
(:class:`CountTables`, kept in the run's checkpoint), and one at its end; :func:`write_tables`
writes them, :func:`read_tables` reads such a directory back and :func:`compare_tables` says
whether two sets of tables are equal or where they first differ.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..output import check_directory, write_output
from .arrays import pack_array, unpack_array
from .scan import first_anchor

#: The least n a table is taken at (rogalski's tables start at 2).
FIRST_TABLE = 2

_LINE = re.compile(r"(\d+) (\d+)")


def table_of(counts: np.ndarray) -> np.ndarray:
    """The table of G(1) ... G(n) from ``counts``, the counts of every value over G(0) ... G(n), n >= 1.

    G(0) = 0 is taken out; the table ends at the largest value that occurs.
    """
    table = np.array(counts, dtype=np.uint64)
    table[0] -= 1
    present = np.flatnonzero(table)
    return table[: present[-1] + 1].copy()


def format_table(table: np.ndarray) -> str:
    """A table as the text of its file: ``value count`` lines, 0 ... its largest value."""
    return "".join(f"{value} {count}\n" for value, count in enumerate(table.tolist()))


def game_directory(code: str) -> str:
    """The name of a game's directory of tables (``.167`` → ``0.167``)."""
    return "0" + code if code.startswith(".") else code


class CountTables:
    """The tables a run took at the powers of two it passed (part of its checkpoint).

    Parameters
    ----------
    position : int
        G(0) ... G(position - 1) are counted already: the next table is at the least power of two
        n >= max(position, 2), taken once G(n) is counted.
    tables : dict of int to ndarray, optional
        The tables taken so far, by n.
    since : int
        The heap from which every power of two passed has its table: 0, except for a run resumed
        from a checkpoint of an octalgen that took none (then the position it was resumed at).

    Attributes
    ----------
    due : int
        The position (heaps counted) at which the next table is taken: its n plus one.
    """

    def __init__(self, position: int = 0, tables: dict | None = None, since: int = 0):
        self.tables: dict[int, np.ndarray] = dict(tables or {})
        self.since = since
        self.due = first_anchor(max(position, FIRST_TABLE)) + 1
        self._packed: dict[int, dict] = {}  # tables as a checkpoint stores them: packed once each

    def take(self, counts: np.ndarray) -> None:
        """Keep the table of n = :attr:`due` - 1 (``counts``: the counts over G(0) ... G(n))."""
        n = self.due - 1
        self.tables[n] = table_of(counts)
        self.due = 2 * n + 1

    def with_end(self, counts: np.ndarray, position: int) -> dict[int, np.ndarray]:
        """Every table, with the one at ``position`` - 1 (the run's end; ``counts`` over G(0) ... G(position - 1))."""
        tables = dict(self.tables)
        if position >= 2:
            tables.setdefault(position - 1, table_of(counts))
        return dict(sorted(tables.items()))

    def state(self) -> dict:
        """The tables and :attr:`since`, for a checkpoint (each table packed once)."""
        for n, table in self.tables.items():
            if n not in self._packed:
                self._packed[n] = pack_array(table)
        return {"since": self.since, "tables": {str(n): self._packed[n] for n in sorted(self.tables)}}

    @classmethod
    def restore(cls, state: dict | None, position: int) -> CountTables:
        """The tables of a checkpoint's ``state`` at ``position`` (None: a checkpoint that kept none)."""
        if state is None:
            return cls(position, since=position)
        tables = {int(n): unpack_array(packed) for n, packed in state["tables"].items()}
        restored = cls(position, tables, int(state["since"]))
        restored._packed = {int(n): packed for n, packed in state["tables"].items()}
        return restored


def output_directory(directory, code: str) -> Path:
    """``directory/0.<code>``, made where missing and checked to be writable (before a long computation).

    Raises :class:`~octalgen.errors.OutputError` when it cannot be written.
    """
    where = Path(directory) / game_directory(code)
    check_directory(where)
    return where


def write_tables(directory, code: str, tables: dict[int, np.ndarray]) -> Path:
    """Write ``tables`` into ``directory/0.<code>/<n>`` (each file replaced atomically); returns ``directory/0.<code>``.

    Raises :class:`~octalgen.errors.OutputError` when it cannot be written.
    """
    where = output_directory(directory, code)
    for n, table in sorted(tables.items()):
        write_output(where / str(n), format_table(table))
    return where


def tables_directory(directory, code: str) -> Path:
    """The directory of ``code``'s tables in ``directory``: ``directory/0.<code>`` where it exists (a copy of
    rogalski's ``results``), else ``directory`` itself.

    Raises :class:`~octalgen.errors.InputError` when ``directory`` is missing or holds no table.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise InputError(f"{directory}: no such directory")
    inner = directory / game_directory(code)
    where = inner if inner.is_dir() else directory
    try:
        found = _table_files(where)
    except OSError as exc:
        raise InputError(f"cannot read {where}: {exc.strerror}") from None
    if not found:
        raise InputError(
            f"{directory} holds no count tables of {code} (files named n, in it or in {inner.name}/ in it)"
        )
    return where


def _table_files(directory: Path) -> dict[int, Path]:
    return {int(path.name): path for path in directory.iterdir() if path.name.isdigit() and path.is_file()}


def read_tables(directory) -> dict[int, str]:
    """The text of every table in ``directory`` (a game's, :func:`tables_directory`), by n."""
    try:
        return {n: path.read_text() for n, path in sorted(_table_files(Path(directory)).items())}
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the count tables in {directory}: {exc}") from None


def count_words(ns) -> str:
    """``3 tables (n = 2 ... 8)``: how many tables, and the first and last n."""
    ns = sorted(ns)
    if not ns:
        return "no table"
    span = f"n = {ns[0]}" if len(ns) == 1 else f"n = {ns[0]} ... {ns[-1]}"
    return f"{len(ns)} table{'s' if len(ns) > 1 else ''} ({span})"


@dataclass(frozen=True)
class Comparison:
    """How a run's tables compare with others (:func:`compare_tables`).

    Attributes
    ----------
    compared : tuple of int
        The n whose tables were compared (those both have), in increasing order, up to the first that differs.
    difference : tuple or None
        ``(n, value, ours, theirs)`` where they first differ: the two lines for that value, None
        where a table has no line for it.
    """

    compared: tuple
    difference: tuple | None

    @property
    def equal(self) -> bool:
        return self.difference is None and bool(self.compared)

    def describe(self, theirs_name: str) -> str:
        """One line: equal (how many tables, which n), or the first difference."""
        if not self.compared:
            return f"no table in common with {theirs_name}"
        if self.difference is None:
            return f"equal: {count_words(self.compared)} match {theirs_name}"
        n, value, ours, theirs = self.difference
        return f"differ at n = {n}, value {value}: ours {_said(ours)}, {theirs_name}'s {_said(theirs)}"

    def to_json(self) -> dict:
        n, value, ours, theirs = self.difference or (None,) * 4
        return {
            "equal": self.equal,
            "compared": len(self.compared),
            "first_n": self.compared[0] if self.compared else None,
            "last_n": self.compared[-1] if self.compared else None,
            "difference": None if self.difference is None else {"n": n, "value": value, "ours": ours, "theirs": theirs},
        }


def _said(line: str | None) -> str:
    """A line of a table as a difference tells it: its count, or the line itself where it is not ``value count``."""
    if line is None:
        return "no line"
    match = _LINE.fullmatch(line[:-1]) if line.endswith("\n") else None
    return match.group(2) if match else repr(line)


def compare_tables(ours: dict[int, np.ndarray], theirs: dict[int, str]) -> Comparison:
    """Compare ``ours`` (tables by n) with ``theirs`` (file texts by n, :func:`read_tables`) byte for byte,
    over the n both have, in increasing n; the first difference is told by value (line i is value i's)."""
    compared = []
    for n in sorted(set(ours) & set(theirs)):
        compared.append(n)
        mine = format_table(ours[n])
        if mine == theirs[n]:
            continue
        a, b = mine.splitlines(keepends=True), theirs[n].splitlines(keepends=True)
        i = next(i for i in range(max(len(a), len(b))) if i >= len(a) or i >= len(b) or a[i] != b[i])
        return Comparison(tuple(compared), (n, i, a[i] if i < len(a) else None, b[i] if i < len(b) else None))
    return Comparison(tuple(compared), None)
