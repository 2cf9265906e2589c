"""Rare masks and rare-value tables: detection, shipped tables, YAML schema and its errors."""

import json
import subprocess
import sys

import numpy as np
import pytest

from octalgen.errors import TableError
from octalgen.game import parse_game
from octalgen.rare import RareTable, compute_table, shipped_table
from octalgen.reference import exact_values
from octalgen.sparse import find_rare_mask, is_rare


def test_rare_means_even_parity_under_the_mask():
    assert is_rare(0, 0x1EE) and is_rare(277, 0x1EE)  # 277 = 0b100010101: bits 2 and 8 under the mask
    assert not is_rare(2, 0x1EE) and not is_rare(1 | 2, 0x1EE)
    assert is_rare(1, 0x1EE)  # bit 0 is outside the mask


def test_officers_mask_is_found():
    assert find_rare_mask(exact_values(".6", 40_000)) == 0x1EE


def test_no_sparse_space_gives_mask_zero():
    # Dawson's Kayles and Guiles have every residue class hit again and again (0 is in Guiles' period).
    assert find_rare_mask(exact_values(".07", 4000)) == 0
    assert find_rare_mask(exact_values(".15", 4000)) == 0


@pytest.mark.parametrize("code, count", [(".356", 7), (".156", 15), (".45", 11), (".644", 31), (".16", 53)])
def test_rare_counts_of_small_games(code, count):
    assert shipped_table(code).count == count


def test_shipped_officers_table():
    table = shipped_table(".6")
    assert table.mask == 0x1EE
    assert table.count == 1584
    assert table.entries[-1] == (20627, 277)
    assert table.exact_to >= 10**6


#: Rogalski's open games: rare values at heaps 1 ... 2^24 (his published results, ../shared/README.md).
ROGALSKI_RARE_TO_2_24 = {".014": 2036, ".034": 1078, ".161": 488, ".167": 59, ".172": 2351}


@pytest.mark.parametrize("code, count", ROGALSKI_RARE_TO_2_24.items())
def test_shipped_tables_of_the_open_games_hold_rogalskis_rare_values(code, count):
    table = shipped_table(code)
    assert table.exact_to >= 1 << 24
    assert sum(1 for p in table.positions if 1 <= p <= 1 << 24) == count


@pytest.mark.parametrize(
    "code, upto",
    [(code, 60_000) for code in (".6", ".77", ".07", ".137", ".15", ".007", ".16", ".356", ".156", ".45", ".644")]
    + [(code, 20_000) for code in ROGALSKI_RARE_TO_2_24],  # their counts to 2^24 are checked above
)
def test_shipped_tables_agree_with_the_reference(code, upto):
    table = shipped_table(code)
    upto = min(table.exact_to, upto)
    values = exact_values(code, upto, mask=table.mask)
    rare = [(p, v) for p, v in table.entries if p < upto]
    assert rare == [(int(p), int(values[p])) for p in np.flatnonzero(np.bitwise_count(values & table.mask) % 2 == 0)]


def test_yaml_round_trip_is_exact():
    table = compute_table(".356", 2000)
    again = RareTable.from_yaml(table.to_yaml(), game=".356")
    assert again == table and again.digest == table.digest
    assert table.to_yaml() == again.to_yaml()  # byte-for-byte reproducible


def test_a_table_in_another_yaml_layout_reads_the_same():
    """The entries as to_yaml writes them are read a line at a time; any other layout as YAML."""
    table = shipped_table(".6")
    head, listed, _ = table.to_yaml().partition("\nrare:\n")
    assert listed
    flow = f"{head}\nrare: {json.dumps([list(e) for e in table.entries])}\n"
    assert RareTable.from_yaml(flow, game=".6") == RareTable.from_yaml(table.to_yaml(), game=".6") == table


@pytest.mark.parametrize(
    "written, edited",
    [
        ("exact_to: 1000000", "exact_to: 1_000_000"),  # YAML 1.1 reads 1000000
        ("mask: '0x1ee'", "mask: 0x1ee"),  # YAML reads the integer 494
        ("count: 1584", "count: 1584  # entries"),
        ("game: '.6'", 'game: ".6"'),
    ],
)
def test_a_head_written_otherwise_is_read_as_yaml_reads_it(written, edited):
    """The head as to_yaml writes it is read without PyYAML; any other text of it by PyYAML, alike."""
    text = shipped_table(".6").to_yaml()
    assert written in text
    assert RareTable.from_yaml(text.replace(written, edited), game=".6") == shipped_table(".6")


def test_a_shipped_table_loads_without_pyyaml(tmp_path):
    code = "import sys\nfrom octalgen.rare import shipped_table\nshipped_table('.014')\nprint('yaml' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False"]


def test_digest_depends_on_entries_not_on_exact_to():
    table = shipped_table(".356")
    longer = RareTable(table.game, table.mask, table.entries, table.exact_to * 2)
    assert longer.digest == table.digest
    fewer = RareTable(table.game, table.mask, table.entries[:-1], table.exact_to)
    assert fewer.digest != table.digest


def test_with_entry_adds_a_rare_value():
    table = shipped_table(".356")
    p, v = table.entries[-1]
    without = RareTable(table.game, table.mask, table.entries[:-1], table.exact_to)
    assert without.with_entry(p, v) == table


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda t: t.replace("game: '.356'", "game: '.6'"), "is for .6, not .356"),
        (lambda t: t.replace("schema: octalgen-rare-table/2", "schema: other/2"), "schema"),
        (lambda t: t.replace("kind: range", "kind: positions"), "needs parity"),
        (lambda t: t.replace("kind: range", "kind: ranges"), "kind"),
        (lambda t: t.rsplit("\n", 2)[0] + "\n", "truncated"),
        (lambda t: t.replace("[43, 14]", "[43, 13]"), "digest"),
        (lambda t: t.replace("[43, 14]", "[43, 12]"), "common"),
        (lambda t: t.replace("[43, 14]", "[43, '14']"), "integer pairs"),
        (lambda t: t.replace("exact_to:", "exakt_to:"), "exact_to"),
        (lambda t: "rare: [1, 2", "not valid YAML"),
        (lambda t: "- 1\n- 2\n", "mapping"),
    ],
)
def test_bad_tables_are_refused_with_a_reason(edit, message):
    text = shipped_table(".356").to_yaml()
    assert "[43, 14]" in text
    with pytest.raises(TableError, match=message):
        RareTable.from_yaml(edit(text), game=".356")


def test_table_invariants():
    game = parse_game(".6")
    with pytest.raises(TableError, match="first entry"):
        RareTable(game, 0x1EE, ((1, 0),), 10)
    with pytest.raises(TableError, match="ascend"):
        RareTable(game, 0x1EE, ((0, 0), (5, 0), (3, 0)), 10)
    with pytest.raises(TableError, match="exceed"):
        RareTable(game, 0x1EE, ((0, 0), (5, 0)), 5)
