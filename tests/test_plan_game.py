"""One way to a plan: :func:`~octalgen.engine.planning.plan_game`, and the table reconciled quietly where
nothing is wrong.

Truth is the pure-Python reference: the prefix must be its values, the reconciled table its rare values
below the kernel's first heap, and the plan the one a run of the engine starts its kernel with.
"""

from __future__ import annotations

import logging
import subprocess
import sys

import numpy as np
import pytest

from octalgen.engine.core import Engine, EngineOptions
from octalgen.engine.planning import plan_game
from octalgen.errors import InputError
from octalgen.game import parse_game
from octalgen.rare import DEFAULT_TABLE_UPTO, RareTable, shipped_table
from octalgen.reference import exact_values


def rare_entries(values, rarity) -> tuple[tuple[int, int], ...]:
    return tuple((int(p), int(values[p])) for p in np.flatnonzero(rarity.rare_flags(values, 0)))


def test_a_shipped_table_gives_its_own_kernel_and_the_exact_prefix():
    plan, prefix = plan_game(parse_game(".16"))
    assert plan.table == shipped_table(".16")
    assert plan.start == plan.window + plan.table.last_position + 1 == len(prefix)
    assert prefix.dtype == np.uint16 and np.array_equal(prefix, exact_values(".16", plan.start))


def test_a_table_found_from_the_first_values_is_extended_to_the_kernels_first_heap(caplog):
    """``.363`` ships no table: its first values miss rare values that lie before the kernel could start."""
    game = parse_game(".363")
    assert shipped_table(game) is None
    with caplog.at_level(logging.DEBUG, logger="octalgen"):
        plan, prefix = plan_game(game)
    truth = exact_values(game, plan.start)
    assert np.array_equal(prefix, truth)
    assert plan.table.entries == rare_entries(truth, plan.table.rarity) and plan.table.exact_to == plan.start
    first = RareTable.from_values(game, truth[:DEFAULT_TABLE_UPTO])
    added = plan.table.count - first.count
    assert added > 0 and plan.start == plan.window + plan.table.last_position + 1
    # The table was octalgen's own guess: extending it is no warning, one line at info level, each value at debug.
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    infos = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO and "extended" in r.getMessage()]
    assert len(infos) == 1 and infos[0].startswith(".363: ") and f"{added} rare values added" in infos[0]
    assert len([r for r in caplog.records if r.levelno == logging.DEBUG and "extended" in r.getMessage()]) == added


def test_the_plan_is_the_one_the_engine_starts_its_kernel_with():
    game = parse_game(".363")
    plan, _prefix = plan_game(game)
    engine = Engine(game, EngineOptions(until=plan.start + 5000, workers=0))
    engine.run()
    assert engine.planning.plan == plan


def test_a_wrong_table_is_corrected_with_one_warning_naming_the_game(caplog):
    shipped = shipped_table(".16")
    entries = dict(shipped.entries)
    (a, value), (b, _), (c, _) = shipped.entries[5:8]
    del entries[b], entries[c]
    entries[a] = 1 if value != 1 else 6  # still rare under the mask, but not G(a)
    damaged = shipped.with_entries(sorted(entries.items()), shipped.exact_to)
    with caplog.at_level(logging.WARNING, logger="octalgen"):
        plan, prefix = plan_game(parse_game(".16"), damaged)
    assert plan.table == shipped and np.array_equal(prefix, exact_values(".16", plan.start))
    [warning] = caplog.records
    assert warning.getMessage() == (
        f".16: rare table says G({a}) = {entries[a]}, but it is {value}, and 2 more of "
        f"its entries below {shipped.exact_to} are wrong; corrected"
    )


def test_a_game_without_a_kernel(caplog):
    with caplog.at_level(logging.INFO, logger="octalgen"):
        plan, _prefix = plan_game(parse_game(".07"))
    assert plan is None and "has no sparse space (rare mask 0)" in caplog.text
    with pytest.raises(InputError, match="no sparse space"):
        plan_game(parse_game(".07"), required=True)


def test_no_kernel_whose_first_heap_lies_past_the_limit():
    """``.14``'s rare values still appear past G(100000): its kernel would start past 2^16."""
    game = parse_game(".14")
    plan, prefix = plan_game(game, limit=1 << 16)
    assert plan is None and len(prefix) < 1 << 16 and np.array_equal(prefix[:2000], exact_values(game, 2000))
    with pytest.raises(InputError, match=r"^\.14: rare values still appear at G\(\d+\)"):
        plan_game(game, required=True, limit=1 << 16)


def test_values_extending_the_table_says_nothing_by_default_and_one_line_a_step_with_v():
    """The flood of issue 30: 241 lines, one per rare value the exact solver added to octalgen's own table."""
    command = [sys.executable, "-m", "octalgen", "values", ".14", "-n", "131072"]
    quiet = subprocess.run([*command, "-q"], check=False, capture_output=True, text=True)
    assert quiet.returncode == 0 and quiet.stderr == "" and len(quiet.stdout.split()) == 131072
    told = subprocess.run([*command, "-v"], check=False, capture_output=True, text=True).stderr.splitlines()
    extended = [line for line in told if "rare table extended" in line]
    assert 1 <= len(extended) <= 5 and all(line.startswith("octalgen: .14: ") for line in extended)
