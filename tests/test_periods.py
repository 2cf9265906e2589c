"""Known periods, checked on the reference's values with the Guy–Smith theorem; the direct
search against the definition; ``octalgen period`` finding .127's period and refuting claims; the
engine's search on every solved game, resumed from its checkpoint, and a run that stops once it
has proven .16's period (the periods of .354 and .1777 behind ``-m slow``)."""

import numpy as np
import pytest
from engine_helpers import StopAt, c_values, run_engine

from octalgen import periodicity
from octalgen.checksum import fnv1a64
from octalgen.cpu.plugin import CKernels
from octalgen.cpu.verify import FAILED, VerifyResult
from octalgen.engine.core import Engine, EngineOptions
from octalgen.engine.period_proof import ExactProof
from octalgen.engine.run_summary import summarized_run
from octalgen.engine.tally import Tally
from octalgen.errors import Interrupted
from octalgen.game import parse_game
from octalgen.periodicity import (
    Repetition,
    is_proven_period,
    least_preperiod,
    proof_length,
    search_periods,
    solved_games,
)
from octalgen.reference import exact_values

KNOWN = [(".77", 12, 71), (".07", 34, 53), (".137", 34, 52), (".4", 34, 54), (".16", 149459, 105351)]


@pytest.mark.parametrize("code, period, preperiod", KNOWN)
def test_known_periods(code, period, preperiod):
    # The published periods are the truth here; the values come from the c backend (checked against
    # the reference in test_backend_c.py): the reference takes 8 s for .16's 509,622.
    values = c_values(code, proof_length(period, preperiod, len(code) - 1))
    assert is_proven_period(values, code, period, preperiod)
    # And not one value less would do, nor a shorter period or preperiod.
    assert not is_proven_period(values[:-1], code, period, preperiod)
    assert not is_proven_period(values, code, period, preperiod - 1)


def test_guy_smith_proof_length():
    # G(n + p) = G(n) for i <= n < 2i + p + t needs G(0) ... G(2i + 2p + t - 1).
    assert proof_length(12, 71, 2) == 2 * 71 + 2 * 12 + 2
    assert proof_length(149459, 105351, 2) == 509_622  # within the 510,622 values the issue asks for


SMALL = [row for row in solved_games().values() if proof_length(row.period, row.preperiod, row.game.max_take) < 5000]


@pytest.mark.parametrize("row", SMALL, ids=[row.game.code for row in SMALL])
def test_solved_games_table(row):
    values = exact_values(row.game, proof_length(row.period, row.preperiod, row.game.max_take))
    assert is_proven_period(values, row.game, row.period, row.preperiod)
    assert int(values.max()) == row.max_value


def test_a_wrong_period_is_not_proven():
    values = exact_values(".77", 400)
    assert not is_proven_period(values, ".77", 24, 71)  # a multiple of the least period
    assert not is_proven_period(values, ".77", 11, 71)


# -- the direct search ------------------------------------------------------------------------


def least_proven_by_definition(values, max_take):
    """The least p, with its least preperiod a over ``values``, such that 2a + 2p + t <= N: one p at a time."""
    for period in range(1, len(values)):
        preperiod = least_preperiod(values, period)
        if proof_length(period, preperiod, max_take) <= len(values):
            return period, preperiod
    return None


def search(values, max_take):
    values = np.asarray(values)
    return search_periods(lambda start, stop: values[start:stop], len(values), max_take)


def test_the_direct_search_agrees_with_the_definition(monkeypatch):
    # Tiny blocks, so that the window compare and the backward scans cross many block boundaries.
    monkeypatch.setattr(periodicity, "SEARCH_BLOCK", 5)
    monkeypatch.setattr(periodicity, "FIRST_SCAN", 3)
    rng = np.random.default_rng(30)
    for _ in range(1500):
        length, max_take = int(rng.integers(2, 300)), int(rng.integers(1, 5))
        alphabet = int(rng.integers(1, 4))
        head = rng.integers(0, alphabet, int(rng.integers(0, length)))
        cycle = rng.integers(0, alphabet, int(rng.integers(1, max(2, length // 2))))
        values = np.concatenate([head, np.resize(cycle, length)])[:length].astype(np.uint16)
        if rng.random() < 0.3:
            values[int(rng.integers(0, length))] = 7  # a late exception
        found = search(values, max_take).proven
        assert (None if found is None else (found.period, found.preperiod)) == least_proven_by_definition(
            values, max_take
        ), values.tolist()


@pytest.mark.parametrize("row", SMALL, ids=[row.game.code for row in SMALL])
def test_the_direct_search_proves_solved_games_with_their_proof_length_and_not_one_value_less(row):
    length = proof_length(row.period, row.preperiod, row.game.max_take)
    values = exact_values(row.game, length + 50)
    assert search(values[:length], row.game.max_take).proven == Repetition(row.period, row.preperiod, length)
    assert search(values[: length + 50], row.game.max_take).proven == Repetition(row.period, row.preperiod, length)
    short = search(values[: length - 1], row.game.max_take)
    assert short.proven is None and Repetition(row.period, row.preperiod, length) in short.candidates
    for n in range(length - 1, max(0, length - 200), -7):
        assert search(values[:n], row.game.max_take).proven is None
    assert least_proven_by_definition(values[:length], row.game.max_take) == (row.period, row.preperiod)


# .127: period 4 with preperiod 46,578 (Gangolli and Plambeck [5]); t = 3, so the Guy–Smith proof
# needs G(0) ... G(93,166).  The power-of-two anchors of the hash saw it only after 2^17 values.
G127_PERIOD, G127_PREPERIOD, G127_PROOF = 4, 46_578, 2 * 46_578 + 2 * 4 + 3


def test_the_period_of_127_by_the_reference():
    values = exact_values(".127", G127_PROOF)
    assert is_proven_period(values, ".127", G127_PERIOD, G127_PREPERIOD)
    assert search(values, 3).proven == Repetition(G127_PERIOD, G127_PREPERIOD, G127_PROOF)
    assert search(values[:-1], 3).proven is None


def test_period_finds_127_within_two_to_the_17_values(cli):
    result = cli("period", ".127", "--max", 1 << 17)
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0] == "period 4 preperiod 46578"
    assert f"checked on G(0) ... G({G127_PROOF - 1})" in lines[1]


def test_period_names_the_values_a_seen_period_still_needs(cli):
    out = cli("period", ".127", "--max", 90_000).out
    assert out.splitlines()[0] == "no period up to 90000"
    assert "candidate period 4 preperiod 46578" in out and f"run with --max {G127_PROOF}" in out


@pytest.mark.parametrize(
    "code, period, preperiod, workers",
    [
        (".16", 149459, 105351, 0),
        (".16", 149459, 105351, 1),
        (".127", G127_PERIOD, G127_PREPERIOD, 0),
        (".137", 34, 52, 0),
        (".77", 12, 71, 0),
    ],
)
def test_the_search_ends_as_soon_as_the_proof_is_complete(code, period, preperiod, workers):
    # Values reach the prover in chunks (.16's run proved 1,010,913 before its proof of 509,622
    # ended it); a search that ends at the proof computes exactly 2i + 2p + t values.
    import octalgen

    result = octalgen.period(code, workers=workers)
    assert (result.period, result.preperiod) == (period, preperiod)
    needed = proof_length(period, preperiod, parse_game(code).max_take)
    assert result.proof_length == result.values == needed


# -- claims -----------------------------------------------------------------------------------


KAYLES = exact_values(".77", 200).tolist()


@pytest.mark.parametrize(
    "period, preperiod, says",
    [
        (12, 71, None),
        # Not a preperiod: the first n >= I where G(n + P) != G(n), with both values.
        (
            12,
            70,
            f"70 is not a preperiod of period 12: G(n + 12) != G(n) at n = 70 (G(82) = {KAYLES[82]}, "
            f"G(70) = {KAYLES[70]})",
        ),
        (13, 71, "71 is not a preperiod of period 13: G(n + 13) != G(n) at n = "),
        # A preperiod, not least: the witness that I - 1 is one too.
        (
            12,
            73,
            f"the preperiod 73 is not least: G(72 + 12) = G(72) = {KAYLES[72]}, so 72 is a preperiod too "
            "(the least is 71)",
        ),
        # A period, not least: the shorter one.
        (36, 71, "the period 36 is not least: 12 is also a period from G(71) (the least period)"),
    ],
)
def test_a_claim_about_kayles_is_proven_or_refuted_truly(cli, period, preperiod, says):
    result = cli("period", ".77", "--period", period, "--preperiod", preperiod)
    if says is None:
        assert result.code == 0 and result.out.splitlines()[0] == "period 12 preperiod 71"
    else:
        assert result.code == 1 and result.out.startswith("claim refuted: " + says), result.out


def test_a_refuted_claim_names_both_values_where_it_fails(cli):
    n = next(n for n in range(71, 187) if KAYLES[n + 13] != KAYLES[n])  # the first n >= 71, by the reference
    result = cli("period", ".77", "--period", 13, "--preperiod", 71)
    assert f"at n = {n} (G({n + 13}) = {KAYLES[n + 13]}, G({n}) = {KAYLES[n]})" in result.out


def test_the_claim_of_issue_30_on_16(cli):
    # 105350 is no preperiod of .16's period at all: G(105350) = 16 but G(254809) = 14 (the reference
    # gives the same; the c backend is checked against it in test_backend_c.py).
    values = c_values(".16", 254_810)
    assert (int(values[105_350]), int(values[254_809])) == (16, 14)
    result = cli("period", ".16", "--period", 149459, "--preperiod", 105350)
    assert result.code == 1
    assert result.out.splitlines()[0] == (
        "claim refuted: 105350 is not a preperiod of period 149459: "
        "G(n + 149459) != G(n) at n = 105350 (G(254809) = 14, G(105350) = 16)"
    )


# -- the engine's search: `octalgen period`, claims, resumes, a run that proves a period ------


def find_period(code, limit, directory=None, claim=None):
    game = parse_game(code)
    tally = Tally(0, ExactProof(game.max_take, claim, until=limit))
    return summarized_run(
        game,
        EngineOptions(until=limit, workers=0),
        tally,
        directory=directory,
        identity={"command": "period", "claim": list(claim) if claim else None},
        keep_all=True,
    )[1]


def test_period_of_every_solved_game():
    wrong = {}
    for game, row in solved_games().items():
        if proof_length(row.period, row.preperiod, game.max_take) > 10**6:
            continue  # .354, .104, .1777: their proofs are tested in tests/test_info.py
        found = find_period(game, 10**6).period or {}
        if (found.get("period"), found.get("preperiod")) != (row.period, row.preperiod):
            wrong[game.code] = (found, row.period, row.preperiod)
    assert not wrong


def test_period_command(cli):
    result = cli("period", ".16")
    assert result.code == 0
    assert result.out.splitlines()[0] == "period 149459 preperiod 105351"
    assert "105351 <= n < 360163" in result.out and "G(509621)" in result.out


def test_no_period_and_what_is_still_needed(cli):
    assert cli("period", ".6", "--max", 50_000).out.splitlines()[0] == "no period up to 50000"
    # .16 has seen its period by 420,000 values, but the proof needs 509,622.
    out = cli("period", ".16", "--max", 480_000).out
    assert out.splitlines()[0] == "no period up to 480000"
    assert "candidate period 149459 preperiod 105351" in out and "--max 509622" in out


@pytest.mark.parametrize(
    "period, preperiod, says",
    [
        (149459, 105351, None),
        (149460, 105351, "G(n + 149460) != G(n) at n = 105351"),
        (149459, 105352, "the preperiod 105352 is not least"),
        (2 * 149459, 105351, "the period 298918 is not least: 149459 is also a period"),
    ],
)
def test_a_claimed_period_is_proven_or_refuted_where_it_fails(cli, period, preperiod, says):
    result = cli("period", ".16", "--period", period, "--preperiod", preperiod)
    if says is None:
        assert result.code == 0 and result.out.splitlines()[0] == "period 149459 preperiod 105351"
    else:
        assert result.code == 1 and says in result.out, result.out


def test_period_resumes_from_its_checkpoint(tmp_path):
    with pytest.raises(Interrupted):
        game = parse_game(".16")
        tally = Tally(0, ExactProof(game.max_take))
        engine = Engine(
            game,
            EngineOptions(until=10**6, workers=0, chunk=1 << 15),
            [tally, StopAt(300_000)],
            directory=tmp_path,
            identity={"command": "period", "claim": None},
            keep_all=True,
        )
        engine.run()
    found = find_period(".16", 10**6, tmp_path).period
    assert (found["period"], found["preperiod"]) == (149459, 105351)


@pytest.mark.parametrize("recent_limit", [None, 1 << 12], ids=["window-held", "window-on-a-tape"])
def test_run_proves_a_period_and_stops(tmp_path, recent_limit, monkeypatch):
    """Also where the kernel's window (13,937 values) is longer than the recent values held: the kernel
    reads it from a tape, and the period search reads the anchor's window back where a hash matches."""
    copies, copied_window = [], Tally._copied_window

    def recorded(self):
        window = copied_window(self)
        copies.append(window is not None)
        return window

    monkeypatch.setattr(Tally, "_copied_window", recorded)
    options = {} if recent_limit is None else {"recent_limit": recent_limit}
    summary = run_engine(".16", 2_000_000, tmp_path, workers=0, chunk=1 << 16, **options)
    assert copies and set(copies) == {recent_limit is None}  # an anchor's window copied, or read back
    period = summary.period
    assert period["period"] == 149459 and period["from"] >= 105351
    assert summary.statistics.values < 2_000_000  # stopped once proven
    assert summary.statistics.digest == fnv1a64(c_values(".16", summary.statistics.values))


@pytest.mark.slow
def test_period_354_needs_tens_of_millions_of_values():
    found = find_period(".354", 30_000_000).period
    assert (found["period"], found["preperiod"]) == (1180, 10_061_916)


@pytest.mark.slow
def test_period_1777_flammenkamp():
    found = find_period(".1777", 500_000_000).period
    assert (found["period"], found["preperiod"]) == (60_620_715, 160_949_018)


def test_a_period_is_found_by_its_hash_after_the_search_restarts_mid_run(tmp_path):
    """A proof that fails at G(300,000) (made to: the value is decided exactly, the same) restarts the
    period search with the window's values there; its hash must be the window's, or no later window
    matches the anchor's and the period goes unseen."""

    class FailingOnce(CKernels):
        def __call__(self, plan):
            kernel, verifier = super().__call__(plan)
            return kernel, _FailOnce(verifier, 300_000)

    summary = run_engine(".16", 2_000_000, tmp_path, workers=0, chunk=1 << 16, kernels=FailingOnce())
    assert summary.period is not None and summary.period["period"] == 149459
    assert summary.statistics.digest == fnv1a64(c_values(".16", summary.statistics.values))


class _FailOnce:
    """A verifier whose proof of ``heap`` fails once (as for a wrong kernel value)."""

    def __init__(self, verifier, heap):
        self.verifier, self.heap, self.plan, self.failed = verifier, heap, verifier.plan, False

    def verify(self, codes, base, prefix, a, b):
        if a <= self.heap < b and not self.failed:
            self.failed = True
            result = self.verifier.verify(codes, base, prefix, a, self.heap)
            return result if not result.proven else VerifyResult(FAILED, self.heap)
        return self.verifier.verify(codes, base, prefix, a, b)
