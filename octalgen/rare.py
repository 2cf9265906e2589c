"""The rare-value table of a game: where its rare values occur, as far as they are known exactly.

A :class:`RareTable` lists the rare positions of a game under its sparse space (the rule of
:class:`~octalgen.sparse.Rarity`: a mask, range or positional rarity; see :mod:`octalgen.sparse`)
below ``exact_to``.  It is the immutable table every backend is generated from, and a hint the
engine checks against the exact values (:func:`octalgen.engine.planning.reconcile`).

Table files are YAML, schema ``octalgen-rare-table/2`` (``/1`` files, which have neither
``kind`` nor ``parity``, load as range tables)::

    schema: octalgen-rare-table/2
    game: '.6'              # canonical octal code
    kind: range             # range, or positions (then also parity: t mod 2)
    mask: '0x1ee'           # rare mask, hexadecimal string
    exact_to: 1000000       # G(n) is established exactly for every n < exact_to,
                            # and every rare value among them is listed below
    count: 1584             # number of entries (a check against truncation)
    last_position: 20627    # position of the last entry (the same check; -1 when there is none)
    digest: sha256:...      # digest of game, kind, mask and entries (see RareTable.digest)
    rare:                   # [position, value], ascending positions
    - [0, 0]
    - [1, 0]
    ...

Loading checks all of this and raises :class:`~octalgen.errors.TableError`
with a one-line reason when anything is off.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from dataclasses import dataclass
from functools import cached_property, lru_cache
from importlib import resources
from pathlib import Path

import numpy as np

from .errors import GameCodeError, TableError
from .game import OctalGame, parse_game
from .output import write_output
from .reference import exact_values
from .sparse import Rarity, find_rare_space

__all__ = [
    "DEFAULT_TABLE_UPTO",
    "KINDS",
    "SCHEMA",
    "SCHEMA_1",
    "RareTable",
    "compute_table",
    "shipped_table",
    "table_filename",
]

SCHEMA = "octalgen-rare-table/2"

#: The first schema (range tables only): still loaded, and its digest text is kept for range
#: tables, so that their digests (in checkpoints, generated files) are unchanged.
SCHEMA_1 = "octalgen-rare-table/1"

#: Values computed when a table is made for a game that ships none.
DEFAULT_TABLE_UPTO = 1 << 15

#: The entries as :meth:`RareTable.to_yaml` writes them, ``- [position, value]`` a line: read without
#: PyYAML's constructor, slow for the thousands of a large table (a table in another layout is read as
#: YAML, and the same checks follow).
_ENTRY_LINE = r"- \[(0|[1-9]\d*), (0|[1-9]\d*)\]\n"
_ENTRY = re.compile(_ENTRY_LINE)
_ENTRY_LINES = re.compile(f"(?:{_ENTRY_LINE})*")

#: A line of the head as ``to_yaml`` writes it, ``key: value``, with a value that YAML reads as this
#: text does (a quoted string, a decimal integer, a schema, kind or digest): read without importing
#: PyYAML, which every command that loads a shipped table would otherwise import for eight lines.
_HEAD_LINE = re.compile(
    r"([a-z_]+): (?:'([^'\n]*)'|(-?(?:0|[1-9]\d*))|(octalgen-rare-table/\d+|range|positions|sha256:[0-9a-f]{64}))"
)

_KEYS = ("schema", "game", "kind", "parity", "mask", "exact_to", "count", "last_position", "digest", "rare")
_KEYS_1 = tuple(k for k in _KEYS if k not in ("kind", "parity"))
KINDS = ("range", "positions")


@dataclass(frozen=True)
class RareTable:
    """Where the rare values of a game occur, as far as it is known exactly.

    Parameters
    ----------
    game : OctalGame
    mask : int
        Rare mask; 0 means every value is rare.
    entries : tuple of (int, int)
        ``(position, value)`` of every rare position below ``exact_to``, ascending.
    exact_to : int
        G(n) is established exactly for every n < exact_to.
    parity : int or None
        None for range rarity; for positional rarity (see :class:`~octalgen.sparse.Rarity`) the game's take
        parity (``game.take_parity``), which it must be.
    """

    game: OctalGame
    mask: int
    entries: tuple[tuple[int, int], ...]
    exact_to: int
    parity: int | None = None

    def __post_init__(self):
        entries = tuple((int(p), int(v)) for p, v in self.entries)
        object.__setattr__(self, "entries", entries)
        where = f"rare table for {self.game.code}"
        if self.mask < 0:
            raise TableError(f"{where}: mask {self.mask} is negative")
        if self.parity is not None:
            if self.parity != self.game.take_parity:
                need = (
                    "its two-heap moves take beans of both parities"
                    if self.game.take_parity is None
                    else f"its two-heap moves take beans of parity {self.game.take_parity}"
                )
                raise TableError(f"{where}: positional rarity with parity {self.parity} does not fit the game ({need})")
            if self.mask == 0:
                raise TableError(f"{where}: positional rarity needs a mask")
        rarity = self.rarity
        if rarity.is_rare(0, 0) and (not entries or entries[0] != (0, 0)):
            raise TableError(f"{where}: the first entry must be [0, 0] (G(0) = 0 is rare at 0)")
        for (p0, _), (p1, _) in itertools.pairwise(entries):
            if p1 <= p0:
                raise TableError(f"{where}: positions must ascend, but {p1} follows {p0}")
        for p, v in entries:
            if v < 0 or p < 0:
                raise TableError(f"{where}: G({p}) = {v} is negative")
            if not rarity.is_rare(v, p):
                raise TableError(f"{where}: G({p}) = {v} is common under {self.describe()}, not rare")
        if self.exact_to <= self.last_position:
            raise TableError(
                f"{where}: exact_to {self.exact_to} must exceed the last rare position {self.last_position}"
            )

    # -- derived views ---------------------------------------------------

    @property
    def rarity(self) -> Rarity:
        """The rule of this table's sparse space."""
        return Rarity(self.mask, self.parity)

    @property
    def kind(self) -> str:
        """``range`` or ``positions`` (see :class:`~octalgen.sparse.Rarity`)."""
        return self.rarity.kind

    @cached_property
    def positions(self) -> tuple[int, ...]:
        return tuple(p for p, _ in self.entries)

    @cached_property
    def values(self) -> tuple[int, ...]:
        return tuple(v for _, v in self.entries)

    @property
    def count(self) -> int:
        return len(self.entries)

    @property
    def last_position(self) -> int:
        """The last rare position; -1 when there is none (positional rarity with G(0) common)."""
        return self.entries[-1][0] if self.entries else -1

    @cached_property
    def digest(self) -> str:
        """``sha256:<hex>`` of the game, kind, mask and entries (not ``exact_to``).

        Generated code depends on exactly these, so equal digests mean equal kernels.  A range
        table hashes the text of schema 1 (its digest did not change with schema 2); a
        positional one adds its kind and parity.
        """
        head = f"{SCHEMA_1}\n" if self.parity is None else f"{SCHEMA}\npositions {self.parity}\n"
        text = head + f"{self.game.code}\n{self.mask:#x}\n" + "".join(f"{p} {v}\n" for p, v in self.entries)
        return "sha256:" + hashlib.sha256(text.encode()).hexdigest()

    def is_rare(self, value: int, heap: int | None = None) -> bool:
        """True when ``value`` is rare at ``heap`` (positional rarity needs the heap)."""
        return self.rarity.is_rare(value, heap)

    def rare_flags(self, values, first: int | None = None) -> np.ndarray:
        """Boolean array: is ``values[i]`` rare at heap ``first + i`` (:meth:`.Rarity.rare_flags`)."""
        return self.rarity.rare_flags(values, first)

    def describe(self) -> str:
        """The sparse space in words: ``range (popcount(G(n) & 0x1ee) even)`` or ``positions (...)``."""
        takes = [k for k, _none, _one, two in self.game.moves() if two]
        return f"{self.kind} ({self.rarity.describe(min(takes) if self.parity is not None else None)})"

    def with_entry(self, position: int, value: int, exact_to: int | None = None) -> RareTable:
        """A new table with one more rare value (as found by a verifier)."""
        entries = sorted((dict(self.entries) | {position: value}).items())
        return RareTable(
            self.game, self.mask, tuple(entries), max(exact_to or 0, self.exact_to, position + 1), self.parity
        )

    def with_entries(self, entries, exact_to: int) -> RareTable:
        """A new table of the same game and rarity with these entries."""
        return RareTable(self.game, self.mask, tuple(entries), exact_to, self.parity)

    # -- making and storing ----------------------------------------------

    @classmethod
    def from_values(cls, game, values, mask: int | None = None, parity: int | None = None) -> RareTable:
        """The table of exactly known values G(0) ... G(len-1).

        Without ``mask`` the sparse space (kind and mask) is found from the values
        (:func:`~octalgen.sparse.find_rare_space`; positional rarity where the game's take parity allows it);
        with it, ``parity`` (None: range) says the kind.
        """
        game = parse_game(game)
        values = np.asarray(values, dtype=np.int64)
        rarity = find_rare_space(values, game.take_parity) if mask is None else Rarity(mask, parity)
        rare = np.flatnonzero(rarity.rare_flags(values, 0))
        return cls(game, rarity.mask, tuple((int(p), int(values[p])) for p in rare), len(values), rarity.parity)

    def to_yaml(self) -> str:
        """The table as YAML text in schema ``octalgen-rare-table/2``."""
        document: dict[str, object] = {"schema": SCHEMA, "game": self.game.code, "kind": self.kind}
        if self.parity is not None:
            document["parity"] = self.parity
        document |= {
            "mask": f"{self.mask:#x}",
            "exact_to": self.exact_to,
            "count": self.count,
            "last_position": self.last_position,
            "digest": self.digest,
            "rare": [list(e) for e in self.entries],
        }
        header = (
            f"# octalgen rare-value table: {self.game.code}, sparse space {self.describe()}, "
            f"{self.count} {'rare values' if self.parity is None else 'rare positions'}, "
            f"exact below {self.exact_to}\n"
        )
        import yaml

        dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
        return header + yaml.dump(document, Dumper=dumper, default_flow_style=None, sort_keys=False, width=120)

    @classmethod
    def from_yaml(cls, text: str, game=None, source: str = "rare table") -> RareTable:
        """Parse and check a table (schema 2, or schema 1: a range table); ``game`` (optional) is the
        game it must belong to."""
        head, listed, entries = text.partition("\nrare:\n")
        doc = _written_head(head) if listed and _ENTRY_LINES.fullmatch(entries) else None
        if doc is not None:  # the table as to_yaml writes it: read by line
            doc["rare"] = [[int(p), int(v)] for p, v in _ENTRY.findall(entries)]
        else:
            import yaml  # here: a worker process gets its tables pickled, never as text

            # libyaml's safe loader where PyYAML was built with it: the .6 table loads in milliseconds, not a second.
            loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
            try:
                doc = yaml.load(text, Loader=loader)
            except yaml.YAMLError as exc:
                mark = getattr(exc, "problem_mark", None)
                where = f" at line {mark.line + 1}" if mark else ""
                raise TableError(f"{source}: not valid YAML{where}") from None
        if not isinstance(doc, dict):
            raise TableError(f"{source}: expected a YAML mapping with keys {', '.join(_KEYS)}")
        schema = doc.get("schema")
        if schema not in (SCHEMA, SCHEMA_1):
            raise TableError(f"{source}: schema {schema!r} is not {SCHEMA!r} (or {SCHEMA_1!r})")
        keys = _KEYS if schema == SCHEMA else _KEYS_1
        optional = ("digest", "parity")
        missing = [k for k in keys if k not in doc and k not in optional]
        unknown = [k for k in doc if k not in keys]
        if missing or unknown:
            what = f"missing {', '.join(missing)}" if missing else f"unknown key {unknown[0]!r}"
            raise TableError(f"{source}: {what} (schema {schema})")
        try:
            table_game = parse_game(str(doc["game"]))
        except GameCodeError as exc:  # reported as a table problem
            raise TableError(f"{source}: {exc}") from None
        if game is not None and parse_game(game) != table_game:
            raise TableError(f"{source}: the table is for {table_game.code}, not {parse_game(game).code}")
        kind = doc.get("kind", "range")
        if kind not in KINDS:
            raise TableError(f"{source}: kind {kind!r} is not {' or '.join(KINDS)}")
        parity = doc.get("parity")
        if (kind == "positions") != (parity is not None) or parity not in (None, 0, 1):
            raise TableError(f"{source}: a positions table needs parity 0 or 1, a range table none")
        mask_text = doc["mask"]
        try:
            mask = int(mask_text, 16) if isinstance(mask_text, str) else int(mask_text)
        except ValueError:
            raise TableError(f"{source}: mask {mask_text!r} is not a hexadecimal number") from None
        rare = doc["rare"]
        if not isinstance(rare, list) or not all(
            isinstance(e, list) and len(e) == 2 and all(type(x) is int for x in e) for e in rare
        ):
            raise TableError(f"{source}: 'rare' must be a list of [position, value] integer pairs")
        for key in ("exact_to", "count", "last_position"):
            if type(doc[key]) is not int:
                raise TableError(f"{source}: {key} must be an integer")
        table = cls(table_game, mask, tuple(tuple(e) for e in rare), doc["exact_to"], parity)
        if doc["count"] != table.count or doc["last_position"] != table.last_position:
            raise TableError(
                f"{source}: says {doc['count']} entries ending at {doc['last_position']}, "
                f"but lists {table.count} ending at {table.last_position} (truncated or edited?)"
            )
        if doc.get("digest") not in (None, table.digest):
            raise TableError(f"{source}: digest does not match the entries (edited or corrupt file)")
        return table

    @classmethod
    def load(cls, path, game=None) -> RareTable:
        """Read a table file; see :meth:`from_yaml`."""
        path = Path(path)
        try:
            text = path.read_text()
        except OSError as exc:
            raise TableError(f"cannot read rare table {path}: {exc.strerror}") from None
        return cls.from_yaml(text, game=game, source=str(path))

    def save(self, path) -> None:
        """Write the table as YAML by :func:`octalgen.output.write_output` (a file is replaced atomically).

        Raises
        ------
        OutputError
            When ``path`` cannot be written.
        """
        write_output(path, self.to_yaml())


def table_filename(game: OctalGame) -> str:
    """File name of a game's shipped table, e.g. ``0.6.yaml``, ``4.07.yaml``."""
    code = game.code
    return ("0" + code if code.startswith(".") else code) + ".yaml"


def _written_head(head: str) -> dict | None:
    """The keys of a table's head as :meth:`RareTable.to_yaml` writes them (comment lines, then
    :data:`_HEAD_LINE` lines, each key once), read as YAML reads them; None for any other text."""
    doc: dict[str, object] = {}
    for line in head.split("\n"):
        if line.startswith("#"):
            continue
        found = _HEAD_LINE.fullmatch(line)
        if found is None or found[1] in doc or found[1] == "rare":
            return None
        quoted, number, word = found[2], found[3], found[4]
        doc[found[1]] = int(number) if number is not None else quoted if quoted is not None else word
    return doc


def shipped_table(game) -> RareTable | None:
    """The table shipped inside the package for ``game``, or None."""
    return _shipped_table(parse_game(game))


@lru_cache(maxsize=64)
def _shipped_table(game: OctalGame) -> RareTable | None:
    resource = resources.files("octalgen") / "tables" / table_filename(game)
    if not resource.is_file():
        return None
    return RareTable.from_yaml(resource.read_text(), game=game, source=f"shipped table {resource.name}")


def compute_table(game, upto: int = DEFAULT_TABLE_UPTO) -> RareTable:
    """Compute a table exactly with the reference solver for G(0) ... G(upto-1)."""
    game = parse_game(game)
    return RareTable.from_values(game, exact_values(game, upto))
