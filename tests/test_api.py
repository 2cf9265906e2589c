"""The Python interface (``octalgen.values``, ``period``, ``rare_table``, ``info``) against independent truth."""

import subprocess
import sys

import numpy as np
import pytest

import octalgen
from octalgen.errors import GameCodeError, InputError, OctalgenError, TableError
from octalgen.game import parse_game
from octalgen.rare import RareTable, shipped_table
from octalgen.reference import naive_values

# Published periods (Guy and Smith 1956; Winning Ways): Dawson's chess .137 has period 34 from
# G(52) on, Kayles .77 period 12 from G(71).
DAWSONS_CHESS = (".137", 34, 52)


@pytest.mark.parametrize("game", [".6", ".77", ".137", "4.07", "S(1,5,8,10)"])
def test_values_are_the_definitions(game):
    expected = naive_values(game, 400)
    got = octalgen.values(game, 400)
    assert got.dtype == np.uint16 and got.tolist() == expected


def test_values_from_a_start_offset_and_by_name():
    expected = naive_values(".6", 1200)[1000:1200]
    assert octalgen.values("officers", 200, start=1000).tolist() == expected
    assert octalgen.values(parse_game(".6"), 200, start=1000, backend="reference").tolist() == expected
    assert octalgen.values(".6", 2e2, start=1e3).tolist() == expected  # whole floats, as the command line takes


def test_values_match_the_oeis(oeis_sequences):
    for entry in oeis_sequences[:4]:
        data = entry["data"]
        assert octalgen.values(entry["game"], len(data), start=entry["offset"]).tolist() == data, entry["oeis"]


def test_iter_values_streams_the_same_values():
    chunks = list(octalgen.iter_values(".16", 3000, start=500))
    assert np.concatenate(chunks).tolist() == naive_values(".16", 3500)[500:]
    assert octalgen.values(".16", 0).shape == (0,)


def test_values_refuse_bad_arguments_with_the_librarys_errors():
    with pytest.raises(GameCodeError):
        octalgen.values(".9", 10)
    with pytest.raises(GameCodeError, match="not int"):
        octalgen.values(6, 10)
    with pytest.raises(InputError, match="n must be at least 0"):
        octalgen.values(".6", -1)
    with pytest.raises(InputError, match="start must be a whole number"):
        octalgen.values(".6", 5, start=1.5)
    with pytest.raises(InputError, match="unknown backend 'abacus'"):
        octalgen.values(".6", 5, backend="abacus")
    with pytest.raises(TableError, match="is for .356, not .6"):
        octalgen.values(".6", 5, table=shipped_table(".356"))


def test_period_of_a_published_game():
    game, period, preperiod = DAWSONS_CHESS
    result = octalgen.period(game)
    assert (result.period, result.preperiod, result.proven) == (period, preperiod, True)
    assert result.game == game and result.refuted is None
    # Guy–Smith: G(0) ... G(2i + 2p + t - 1) prove it (t = 3 for .137)
    assert result.proof_length == 2 * preperiod + 2 * period + 3 <= result.values <= result.limit


def test_period_checks_a_claim():
    game, period, preperiod = DAWSONS_CHESS
    proven = octalgen.period(game, claim=(period, preperiod))
    assert proven.proven and (proven.period, proven.preperiod) == (period, preperiod)
    assert proven.values == proven.limit == 2 * preperiod + 2 * period + 3
    refuted = octalgen.period(game, claim=(period, preperiod - 1))
    assert not refuted.proven and refuted.period is None and refuted.refuted


def test_period_not_found_within_max():
    result = octalgen.period(".137", max=100)
    assert not result.proven and result.period is None and result.values == result.limit == 100


def test_period_refuses_bad_arguments():
    with pytest.raises(InputError, match="claim must be"):
        octalgen.period(".137", claim=34)
    with pytest.raises(InputError, match="max must be at least 1"):
        octalgen.period(".137", max=0)
    with pytest.raises(GameCodeError):
        octalgen.period("officer")
    with pytest.raises(InputError, match="checkpoint_every must be a number of seconds"):
        octalgen.period(".137", checkpoint_every=-1)
    with pytest.raises(InputError, match="chunk must be at least 1"):
        octalgen.period(".137", chunk=0)


def test_period_limit_is_what_octalgen_period_computes_at_most():
    from octalgen.api import DEFAULT_PERIOD_MAX, period_limit

    game, period, preperiod = DAWSONS_CHESS
    assert period_limit(game) == DEFAULT_PERIOD_MAX
    assert period_limit(game, 5000, claim=(period, preperiod)) == 5000
    assert period_limit(game, claim=(period, preperiod)) == 2 * preperiod + 2 * period + 3  # t = 3


def test_rare_table_is_the_shipped_one_or_exact_to_upto():
    assert octalgen.rare_table("officers") == shipped_table(".6")
    cut = octalgen.rare_table(".6", upto=5000)
    reference = np.array(naive_values(".6", 5000))
    rare = np.flatnonzero(cut.rare_flags(reference, 0))
    assert cut.exact_to == 5000 and cut.mask == 0x1EE
    assert list(cut.entries) == [(int(p), int(reference[p])) for p in rare]


def test_rare_table_computed_for_a_game_without_a_shipped_one():
    game = "S(1,5,8,10)"
    assert shipped_table(game) is None
    table = octalgen.rare_table(game, upto=3000)
    values = np.array(naive_values(game, 3000))
    assert isinstance(table, RareTable) and table.exact_to == 3000
    assert list(table.entries) == [(int(p), int(values[p])) for p in np.flatnonzero(table.rare_flags(values, 0))]
    with pytest.raises(InputError, match="speculative"):
        octalgen.rare_table(game, upto=3000, backend="c-speculative")


def test_info_of_officers_and_kayles():
    officers = octalgen.info("officers")
    assert (officers.code, officers.name, officers.mask) == (".6", "officers", 0x1EE)
    assert officers.rare_count == 1584 and officers.last_rare == (20627, 277)  # Grossman's figures
    assert officers.moves == ("remove 1 bean, leaving one heap or two non-empty heaps",)
    assert not officers.solved and officers.period is None
    kayles = octalgen.info(".77")
    assert kayles.solved and (kayles.period, kayles.preperiod) == (12, 71)
    with pytest.raises(OctalgenError):
        octalgen.info("officer")


def test_results_are_frozen():
    about = octalgen.info(".6")
    with pytest.raises(AttributeError):
        about.code = ".7"
    assert about == octalgen.info(parse_game("0.6")) and "table" not in repr(about)


def test_import_octalgen_stays_cheap():
    code = ("import sys, octalgen; heavy = [m for m in ('numpy', 'cffi', 'amaranth', 'octalgen.api') "
            "if m in sys.modules]; print(heavy); octalgen.info; print('amaranth' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split("\n")[:2] == ["[]", "False"]
