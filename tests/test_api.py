"""The Python interface (``octalgen.values``, ``period``, ``rare_table``, ``info``) against independent truth."""

import subprocess
import sys

import numpy as np
import pytest

import octalgen
from octalgen.errors import GameCodeError, InputError, OctalgenError, OutputPathError, TableError
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
    with pytest.raises(TableError, match=r"is for \.356, not \.6"):
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
    code = (
        "import sys, octalgen; heavy = [m for m in ('numpy', 'cffi', 'amaranth', 'octalgen.api') "
        "if m in sys.modules]; print(heavy); octalgen.info; print('amaranth' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split("\n")[:2] == ["[]", "False"]


# -- the command line's limits, in the API ------------------------------------------------------


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: octalgen.values(".6", 5, start=10**16), "start must be at most 1e15, not 10000000000000000"),
        (lambda: octalgen.values(".6", 10, start=10**15 - 5), "start + n must be at most 1e15"),
        (lambda: octalgen.values(".6", 10**15 + 1), "n must be at most 1e15"),
        (lambda: octalgen.values(".6", True), "n must be a whole number, not True"),
        (lambda: octalgen.values(".6", 5, start=False), "start must be a whole number, not False"),
        (lambda: octalgen.values(".6", np.bool_(True)), "n must be a whole number"),
        (lambda: octalgen.values(".6", float("nan")), "n must be a whole number, not nan"),
        (lambda: octalgen.values(".6", float("inf")), "n must be a whole number, not inf"),
        (lambda: octalgen.values(".6", "10"), "n must be a whole number, not '10'"),
        (lambda: octalgen.values(".6", 5, threads=0), "threads must be at least 1, not 0"),
        (lambda: octalgen.values(".6", 5, threads=True), "threads must be a whole number, not True"),
        (lambda: octalgen.values(".6", 5, workers=2000), "workers must be at most 1024, not 2000"),
        (lambda: octalgen.values(".6", 5, backend=3), "backend must be a backend's name as text"),
        (lambda: list(octalgen.iter_values(".6", 5, start=-1)), "start must be at least 0, not -1"),
        (lambda: octalgen.period(".137", max=True), "max must be a whole number, not True"),
        (lambda: octalgen.period(".137", max=10**16), "max must be at most 1e15"),
        (lambda: octalgen.period(".137", claim=(True, 52)), "the claimed period must be a whole number"),
        (lambda: octalgen.period(".137", chunk=100), "chunk must be at least 1024, not 100"),
        (lambda: octalgen.period(".137", chunk=1 << 27), "chunk must be at most 67108864"),
        (
            lambda: octalgen.period(".137", checkpoint_every=float("nan")),
            "checkpoint_every must be a number of seconds",
        ),
        (lambda: octalgen.period(".137", checkpoint_every=True), "checkpoint_every must be a number of seconds"),
        (lambda: octalgen.period(".137", scheduler=8786), "scheduler must be a Dask scheduler's address as text"),
        (lambda: octalgen.rare_table(".6", upto=0), "upto must be at least 1, not 0"),
    ],
)
def test_the_api_holds_numbers_to_the_command_lines_limits_in_one_line(call, message):
    with pytest.raises(InputError) as raised:
        call()
    assert message in str(raised.value) and "\n" not in str(raised.value)


@pytest.mark.parametrize(
    "args",
    [
        ("-n", 5, "--start", "1e16"),
        ("-n", "1e15", "--start", 10),
        ("-n", "2e15"),
        ("-n", 5, "--threads", 0),
        ("-n", 5, "--workers", 2000),
    ],
)
def test_the_command_line_refuses_what_the_api_refuses(cli, args):
    result = cli("values", ".6", *args)
    assert result.code == 2 and result.err.count("\n") == 1 and result.out == ""


def test_a_count_too_large_for_memory_is_refused_before_any_work():
    with pytest.raises(InputError, match=r"1000000000000000 values need .* GiB of memory.*octalgen.iter_values"):
        octalgen.values(".6", 10**15)


def test_iter_values_and_values_agree_on_dtype():
    chunks = list(octalgen.iter_values(".6", 3000, backend="reference"))
    assert {chunk.dtype for chunk in chunks} == {octalgen.values(".6", 10).dtype} == {np.dtype(np.uint16)}


def test_period_candidates_hold_every_candidate_seen_with_its_outcome():
    proven = octalgen.period(".16")  # Gangolli and Plambeck: period 149459 from G(105351)
    assert [(c.period, c.preperiod, c.outcome) for c in proven.candidates] == [(149459, 105351, "proven")]
    assert proven.open_candidates == ()
    short = octalgen.period(".16", 400_000)  # seen, but its proof needs 509,622 values
    assert [(c.period, c.preperiod, c.proof_length, c.outcome) for c in short.candidates] == [
        (149459, 105351, 509_622, "open")
    ]
    assert short.open_candidates == short.candidates and not short.proven
    refuted = octalgen.period(".137", claim=(68, 52))  # a multiple of the least period, 34
    assert [(c.period, c.outcome) for c in refuted.candidates] == [(68, "reduced")] and refuted.refuted


def test_a_resumed_period_counts_this_sessions_values(tmp_path):
    first = octalgen.period(".16", 300_000, checkpoint=tmp_path / "p")
    assert first.session_values == first.values == 300_000 and not first.proven
    second = octalgen.period(".16", 600_000, checkpoint=tmp_path / "p")
    assert second.proven and second.values == 509_622 and second.session_values == 509_622 - 300_000


def test_a_period_checkpoint_needs_its_parent_directory(tmp_path):
    with pytest.raises(OutputPathError, match=r"the directory .*missing does not exist"):
        octalgen.period(".137", checkpoint=tmp_path / "missing" / "p")
    assert list(tmp_path.iterdir()) == []


# A user's script, run as a user runs it: the API's numbers, dtype, errors and candidates.
USER_SCRIPT = """\
import numpy as np
import octalgen

print("errors", octalgen.errors.InputError.__name__)
for call in ("octalgen.values('.6', 5, start=10**16)", "octalgen.values('.6', 10**15)",
             "octalgen.values('.6', True)"):
    try:
        eval(call)
        print("accepted", call)
    except octalgen.errors.InputError as exc:
        print("refused", str(exc).count(chr(10)) + 1, "line")
chunks = list(octalgen.iter_values(".6", 30000))
print("dtypes", sorted({str(c.dtype) for c in chunks}), octalgen.values(".6", 5).dtype)
print("values", *np.concatenate(chunks)[20620:20630])
r = octalgen.period(".16", workers=0)  # verified in this process
print("candidates", [(c.period, c.preperiod, c.outcome) for c in r.candidates])
"""


def test_the_api_from_a_users_script(tmp_path):
    script = tmp_path / "user.py"
    script.write_text(USER_SCRIPT)
    done = subprocess.run(
        [sys.executable, str(script)], check=False, capture_output=True, text=True, cwd=tmp_path, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "errors InputError",
        "refused 1 line",
        "refused 1 line",
        "refused 1 line",
        "dtypes ['uint16'] uint16",
        "values " + " ".join(map(str, naive_values(".6", 20630)[20620:])),
        "candidates [(149459, 105351, 'proven')]",
    ]
