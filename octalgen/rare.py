"""Rare values: the sparse space of a game, and the table of where rare values occur.

A value v is *rare* for mask m when ``popcount(v & m)`` is even and *common*
when it is odd.  For Officers (``.6``) m = 0x1EE (bits 1, 2, 3, 5, 6, 7, 8),
and only 1584 of more than 10^14 known values are rare, the last at
G(20627) = 277.  :func:`find_rare_mask` finds m from a prefix of values;
:class:`RareTable` is the immutable table every backend is generated from.

Table files are YAML, schema ``octalgen-rare-table/1``::

    schema: octalgen-rare-table/1
    game: '.6'              # canonical octal code
    mask: '0x1ee'           # rare mask, hexadecimal string
    exact_to: 1000000       # G(n) is established exactly for every n < exact_to,
                            # and every rare value among them is listed below
    count: 1584             # number of entries (a check against truncation)
    last_position: 20627    # position of the last entry (the same check)
    digest: sha256:...      # digest of game, mask and entries (see RareTable.digest)
    rare:                   # [position, value], ascending positions
    - [0, 0]
    - [1, 0]
    ...

Loading checks all of this and raises :class:`~octalgen.errors.TableError`
with a one-line reason when anything is off.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cached_property, lru_cache
from importlib import resources
from pathlib import Path

import numpy as np
import yaml

from .errors import TableError
from .game import OctalGame, parse_game

SCHEMA = "octalgen-rare-table/1"

#: Values computed when a table is made for a game that ships none.
DEFAULT_TABLE_UPTO = 1 << 15

#: A mask is accepted only if at most this fraction of the second half of the values is rare:
#: rare values must die out, not merely be a minority.
SPARSE_TAIL_FRACTION = 0.01

#: Masks are searched over this many low bits (2^bits candidate masks).
MASK_SEARCH_BITS = 20

# libyaml's safe loader where PyYAML was built with it: the .6 table loads in milliseconds, not a second.
_SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_SafeDumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

_KEYS = ("schema", "game", "mask", "exact_to", "count", "last_position", "digest", "rare")


def is_rare(value: int, mask: int) -> bool:
    """True when ``value`` has an even number of set bits under ``mask``."""
    return (int(value) & mask).bit_count() % 2 == 0


def find_rare_mask(values, max_bits: int = MASK_SEARCH_BITS, tail_fraction: float = SPARSE_TAIL_FRACTION) -> int:
    """The rare mask of a nim-sequence prefix, or 0 if it shows no sparse space.

    Parameters
    ----------
    values : array_like of int
        A prefix G(0) ... G(N-1) of a nim-sequence.
    max_bits : int
        Only masks within the lowest ``max_bits`` bits are considered.
    tail_fraction : float
        The mask is accepted only if at most this fraction of the second half
        of the values (the *tail*) is rare under it.

    Returns
    -------
    int
        The mask with the fewest rare values in the tail, then the fewest
        overall, then the numerically smallest; 0 (every value rare) if even
        that mask leaves more than ``tail_fraction`` of the tail rare.

    Notes
    -----
    For mask m the number of rare values is ``(N + W[m]) / 2`` where W is the
    Walsh–Hadamard transform of the histogram of values, so every mask is
    scored at once in O(B 2^B) for B bits.
    """
    values = np.asarray(values, dtype=np.int64)
    if len(values) < 2:
        return 0
    bits = min(max(int(values.max()).bit_length(), 1), max_bits)
    tail = values[len(values) // 2 :]
    rare_total = _rare_counts(values, bits)
    rare_tail = _rare_counts(tail, bits)
    best = int(np.lexsort((np.arange(len(rare_total)), rare_total, rare_tail))[0])
    if best == 0 or rare_tail[best] > tail_fraction * len(tail):
        return 0
    return best


def find_solver_mask(values, take_parity: int | None, budget: float,
                     max_bits: int = MASK_SEARCH_BITS) -> tuple[int, bool]:
    """The mask under which the exact rare-value algorithm goes fastest on the next values.

    Unlike a table's mask, this one need not make rare values die out: every heap's candidate
    costs one option per rare position so far, so the mask minimising the rare positions, plus
    half those of the second half again (where the next values will add to them at its rate),
    wins; it is used only while that score stays below ``budget`` times the number of values
    (beyond it, marking every option is cheaper).  Rarity may also count the heap's parity:
    with ``position_parity``, G(p) is rare when ``popcount(G(p) & mask) + p + take_parity`` is
    even (Flammenkamp's sparse and common positions; ``.104`` has such a sparse space, under
    0x17, and no other).  That is the plain rarity of the values ``2 G(p) + (p + take_parity) %
    2``, so both kinds are scored at once.

    Parameters
    ----------
    values : array_like of int
        A prefix G(0) ... G(N-1).
    take_parity : int or None
        The parity of the beans every two-heap move takes; None when they differ (or there is
        no such move): then only masks without the heap's parity are considered.
    budget : float
        The largest score accepted, as a fraction of N.
    max_bits : int
        Only masks within the lowest ``max_bits`` bits of the values are considered.

    Returns
    -------
    (int, bool)
        The mask and whether it counts the heap's parity; (0, False) when none is worth it.
    """
    values = np.asarray(values, dtype=np.int64)
    if len(values) < 2:
        return 0, False
    if take_parity is not None:
        values = (values << 1) | ((np.arange(len(values)) + take_parity) & 1)
        max_bits += 1
    bits = min(max(int(values.max()).bit_length(), 1), max_bits)
    score = _rare_counts(values, bits) + _rare_counts(values[len(values) // 2:], bits)
    score[: 2 if take_parity is not None else 1] = np.iinfo(np.int64).max  # no split (or parity alone)
    best = int(np.argmin(score))
    if score[best] > budget * len(values):
        return 0, False
    return (best >> 1, bool(best & 1)) if take_parity is not None else (best, False)


def _rare_counts(values: np.ndarray, bits: int) -> np.ndarray:
    """Number of rare values under every mask below 2**bits (Walsh–Hadamard transform)."""
    walsh = np.bincount(values & ((1 << bits) - 1), minlength=1 << bits).astype(np.int64)
    h = 1
    while h < len(walsh):
        w = walsh.reshape(-1, 2 * h)
        left, right = w[:, :h].copy(), w[:, h:].copy()
        w[:, :h] = left + right
        w[:, h:] = left - right
        h *= 2
    return (len(values) + walsh) // 2


@dataclass(frozen=True)
class RareTable:
    """Where the rare values of a game occur, as far as it is known exactly.

    Parameters
    ----------
    game : OctalGame
    mask : int
        Rare mask; 0 means every value is rare.
    entries : tuple of (int, int)
        ``(position, value)`` of every rare value below ``exact_to``, ascending.
    exact_to : int
        G(n) is established exactly for every n < exact_to.
    """

    game: OctalGame
    mask: int
    entries: tuple[tuple[int, int], ...]
    exact_to: int

    def __post_init__(self):
        entries = tuple((int(p), int(v)) for p, v in self.entries)
        object.__setattr__(self, "entries", entries)
        where = f"rare table for {self.game.code}"
        if self.mask < 0:
            raise TableError(f"{where}: mask {self.mask} is negative")
        if not entries or entries[0] != (0, 0):
            raise TableError(f"{where}: the first entry must be [0, 0] (G(0) = 0 is always rare)")
        for (p0, _), (p1, _) in zip(entries, entries[1:]):
            if p1 <= p0:
                raise TableError(f"{where}: positions must ascend, but {p1} follows {p0}")
        for p, v in entries:
            if v < 0:
                raise TableError(f"{where}: G({p}) = {v} is negative")
            if not is_rare(v, self.mask):
                raise TableError(f"{where}: G({p}) = {v} is common under mask {self.mask:#x}, not rare")
        if self.exact_to <= entries[-1][0]:
            raise TableError(
                f"{where}: exact_to {self.exact_to} must exceed the last rare position {entries[-1][0]}"
            )

    # -- derived views ---------------------------------------------------

    @property
    def positions(self) -> tuple[int, ...]:
        return tuple(p for p, _ in self.entries)

    @property
    def values(self) -> tuple[int, ...]:
        return tuple(v for _, v in self.entries)

    @property
    def count(self) -> int:
        return len(self.entries)

    @property
    def last_position(self) -> int:
        return self.entries[-1][0]

    @cached_property
    def digest(self) -> str:
        """``sha256:<hex>`` of the schema, game, mask and entries (not ``exact_to``).

        Generated code depends on exactly these, so equal digests mean equal kernels.
        """
        text = f"{SCHEMA}\n{self.game.code}\n{self.mask:#x}\n" + "".join(f"{p} {v}\n" for p, v in self.entries)
        return "sha256:" + hashlib.sha256(text.encode()).hexdigest()

    def is_rare(self, value: int) -> bool:
        """True when ``value`` is rare under this table's mask."""
        return is_rare(value, self.mask)

    def with_entry(self, position: int, value: int, exact_to: int | None = None) -> "RareTable":
        """A new table with one more rare value (as found by a verifier)."""
        entries = sorted((dict(self.entries) | {position: value}).items())
        return RareTable(self.game, self.mask, tuple(entries), max(exact_to or 0, self.exact_to, position + 1))

    # -- making and storing ----------------------------------------------

    @classmethod
    def from_values(cls, game, values, mask: int | None = None) -> "RareTable":
        """The table of exactly known values G(0) ... G(len-1); the mask is found if not given."""
        game = parse_game(game)
        values = np.asarray(values, dtype=np.int64)
        if mask is None:
            mask = find_rare_mask(values)
        rare = np.flatnonzero(np.bitwise_count(values & mask) % 2 == 0)
        return cls(game, mask, tuple((int(p), int(values[p])) for p in rare), len(values))

    def to_yaml(self) -> str:
        """The table as YAML text in schema ``octalgen-rare-table/1``."""
        document = {
            "schema": SCHEMA,
            "game": self.game.code,
            "mask": f"{self.mask:#x}",
            "exact_to": self.exact_to,
            "count": self.count,
            "last_position": self.last_position,
            "digest": self.digest,
            "rare": [list(e) for e in self.entries],
        }
        header = f"# octalgen rare-value table: {self.game.code}, {self.count} rare values, exact below {self.exact_to}\n"
        return header + yaml.dump(document, Dumper=_SafeDumper, default_flow_style=None, sort_keys=False, width=120)

    @classmethod
    def from_yaml(cls, text: str, game=None, source: str = "rare table") -> "RareTable":
        """Parse and check a table; ``game`` (optional) is the game it must belong to."""
        try:
            doc = yaml.load(text, Loader=_SafeLoader)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" at line {mark.line + 1}" if mark else ""
            raise TableError(f"{source}: not valid YAML{where}") from None
        if not isinstance(doc, dict):
            raise TableError(f"{source}: expected a YAML mapping with keys {', '.join(_KEYS)}")
        missing = [k for k in _KEYS if k not in doc and k != "digest"]
        unknown = [k for k in doc if k not in _KEYS]
        if missing or unknown:
            what = f"missing {', '.join(missing)}" if missing else f"unknown key {unknown[0]!r}"
            raise TableError(f"{source}: {what} (schema {SCHEMA})")
        if doc["schema"] != SCHEMA:
            raise TableError(f"{source}: schema {doc['schema']!r} is not {SCHEMA!r}")
        try:
            table_game = parse_game(str(doc["game"]))
        except TableError:
            raise
        except Exception as exc:  # a GameCodeError, reported as a table problem
            raise TableError(f"{source}: {exc}") from None
        if game is not None and parse_game(game) != table_game:
            raise TableError(f"{source}: the table is for {table_game.code}, not {parse_game(game).code}")
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
        table = cls(table_game, mask, tuple(tuple(e) for e in rare), doc["exact_to"])
        if doc["count"] != table.count or doc["last_position"] != table.last_position:
            raise TableError(
                f"{source}: says {doc['count']} entries ending at {doc['last_position']}, "
                f"but lists {table.count} ending at {table.last_position} (truncated or edited?)"
            )
        if doc.get("digest") not in (None, table.digest):
            raise TableError(f"{source}: digest does not match the entries (edited or corrupt file)")
        return table

    @classmethod
    def load(cls, path, game=None) -> "RareTable":
        """Read a table file; see :meth:`from_yaml`."""
        path = Path(path)
        try:
            text = path.read_text()
        except OSError as exc:
            raise TableError(f"cannot read rare table {path}: {exc.strerror}") from None
        return cls.from_yaml(text, game=game, source=str(path))

    def save(self, path) -> None:
        """Write the table as YAML (atomically: a temporary file renamed into place)."""
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(self.to_yaml())
        tmp.replace(path)


def table_filename(game: OctalGame) -> str:
    """File name of a game's shipped table, e.g. ``0.6.yaml``, ``4.07.yaml``."""
    code = game.code
    return ("0" + code if code.startswith(".") else code) + ".yaml"


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
    from .reference import exact_values  # reference imports this module

    game = parse_game(game)
    return RareTable.from_values(game, exact_values(game, upto))


def rare_table(game, upto: int | None = None) -> RareTable:
    """The shipped table, or one computed to ``upto`` (default :data:`DEFAULT_TABLE_UPTO`).

    A shipped table is used when it is exact at least to ``upto``.
    """
    game = parse_game(game)
    table = shipped_table(game)
    if table is not None and (upto is None or upto <= table.exact_to):
        return table
    return compute_table(game, upto or DEFAULT_TABLE_UPTO)
