"""The exact verifier against independent truth: the pure-Python reference's values.

For each game (``.6`` and ``.16`` with range rarity, ``.104`` with rarity by positions, ``.6``
stored as u16) the verifier must prove the true codes, and name the first wrong heap and its true
value when a fault is planted (a flipped bit, as ``conftest.kernel_fault`` plants it, and one that
keeps the value common) or when the table lacks a rare value.  The prefix is given writable, read-only
and memory-mapped (as worker processes map the run's prefix): a read-only prefix is checked against
the table once, and that must never let a wrong prefix through.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
from collections import OrderedDict
from functools import cache

import numpy as np
import pytest

from octalgen.build import load_module_at, loader_identity, module_address
from octalgen.cpu import verify
from octalgen.cpu.kernel import SpeculativeKernel
from octalgen.cpu.verify import Verifier
from octalgen.errors import InputError
from octalgen.plan import make_plan
from octalgen.rare import shipped_table
from octalgen.reference import exact_values

#: (code, storage, heaps): reference values take a few seconds each.
GAMES = [(".6", None, 56_000), (".16", None, 50_000), (".104", None, 20_000), (".6", "u16", 56_000)]


@cache
def _truth(code: str, count: int) -> np.ndarray:
    values = exact_values(code, count, mask=shipped_table(code).mask)
    values.flags.writeable = False
    return values


class Game:
    """A plan, the reference values G(0) ... G(count - 1) and their stored codes."""

    def __init__(self, code, storage, count):
        self.plan = make_plan(shipped_table(code), storage=storage)
        self.truth = _truth(code, count)
        self.dtype = SpeculativeKernel(self.plan).dtype
        self.codes = self.plan.encoding.encode_array(self.truth).astype(self.dtype)
        self.base = self.plan.start - self.plan.window

    def prefix(self, kind: str, tmp_path=None) -> np.ndarray:
        """The exact prefix G(0) ... G(start - 1): a writable copy, read-only, or a read-only map."""
        values = np.array(self.truth[: self.plan.start], dtype=np.uint16)
        if kind == "read-only":
            values.flags.writeable = False
        elif kind == "mapped":
            path = tmp_path / "prefix.u16"
            values.tofile(path)
            values = np.memmap(path, dtype=np.uint16, mode="r")
        return values

    def verify(self, codes, prefix, a=None, b=None):
        return Verifier(self.plan).verify(
            codes[self.base :], self.base, prefix, a or self.plan.start, b or len(self.truth)
        )


@pytest.fixture(scope="module", params=GAMES, ids=lambda g: f"{g[0]} {g[1] or 'u8'}")
def game(request):
    return Game(*request.param)


@pytest.mark.parametrize("kind", ["writable", "read-only", "mapped"])
def test_the_true_codes_are_proven(game, kind, tmp_path):
    prefix = game.prefix(kind, tmp_path)
    for _ in range(2):  # the second call with the same prefix: checked once if read-only
        result = game.verify(game.codes, prefix)
        assert result.proven, result


@pytest.mark.parametrize("kind", ["writable", "read-only"])
def test_planted_faults_are_found_with_the_true_value(game, kind):
    plan, truth = game.plan, game.truth
    prefix = game.prefix(kind)
    mask = plan.table.mask
    low = mask & -mask
    common_flip = 0x21 if plan.encoding.kind == "u8" else low | ((mask ^ low) & -(mask ^ low))
    heaps = (plan.start, plan.start + 1, plan.start + 4999, (plan.start + len(truth)) // 2, len(truth) - 1)
    for flip in (1, common_flip):  # 1: conftest.kernel_fault's flip
        for heap in heaps:
            bad = game.codes.copy()
            bad[heap] ^= flip
            for a, b in ((plan.start, len(truth)), (max(plan.start, heap - 1500), min(len(truth), heap + 1500))):
                result = game.verify(bad, prefix, a, b)
                assert (result.status, result.heap, result.true_value) == ("failed", heap, truth[heap]), (
                    flip,
                    heap,
                    a,
                    b,
                )


def test_a_rare_value_the_table_lacks_is_found():
    # .16's table cut after G(3604) = 7: the kernel misses the rare G(13932) = 6 and the verifier
    # must say so, with the true (rare) value.
    truth = _truth(".16", 20_000)
    full = shipped_table(".16")
    plan = make_plan(full.with_entries([e for e in full.entries if e[0] <= 3604], 13_932))
    assert plan.start < 13_932
    kernel = SpeculativeKernel(plan)
    window = plan.encoding.encode_array(truth[plan.start - plan.window : plan.start]).astype(kernel.dtype)
    codes = np.concatenate([window, kernel.run(window, plan.start, len(truth) - plan.start)])
    base = plan.start - plan.window
    for frozen in (False, True):
        prefix = np.array(truth[: plan.start], dtype=np.uint16)
        prefix.flags.writeable = not frozen
        result = Verifier(plan).verify(codes, base, prefix, plan.start, len(truth))
        assert (result.status, result.heap, result.true_value) == ("failed", 13_932, truth[13_932])
        assert full.is_rare(result.true_value)


def test_a_checked_prefix_never_lets_a_wrong_one_through():
    game = Game(".6", None, 56_000)
    good = game.prefix("read-only")
    assert game.verify(game.codes, good).proven  # now remembered as checked
    wrong = np.array(good)
    wrong[20_627] = 278  # a common value where the table has the rare 277
    for frozen in (False, True):
        wrong.flags.writeable = not frozen
        with pytest.raises(InputError, match="contradicts the rare table"):
            game.verify(game.codes, wrong)
    # A read-only view of a writable array may still change: it is checked at every call.
    backing = np.array(game.truth[: game.plan.start], dtype=np.uint16)
    view = backing[:]
    view.flags.writeable = False
    assert game.verify(game.codes, view).proven
    backing[20_627] = 278
    with pytest.raises(InputError, match="contradicts the rare table"):
        game.verify(game.codes, view)


def _checks_from(monkeypatch) -> list[int]:
    """Where each check of a prefix starts, as verifiers check them from now on (none remembered)."""
    monkeypatch.setattr(verify, "_CHECKED", OrderedDict())  # none of another test's prefixes
    starts: list[int] = []
    check = Verifier._checked_prefix
    monkeypatch.setattr(Verifier, "_checked_prefix", lambda self, p, at=0: starts.append(at) or check(self, p, at))
    return starts


def test_a_read_only_prefix_is_checked_once(monkeypatch):
    game = Game(".16", None, 50_000)
    checks = _checks_from(monkeypatch)
    frozen, writable = game.prefix("read-only"), game.prefix("writable")
    results = [
        game.verify(game.codes, prefix, b=game.plan.start + 2000) for prefix in (frozen, frozen, writable, writable)
    ]
    assert all(result.proven for result in results)
    assert checks == [0, 0, 0]  # once for the read-only prefix, at every call for the writable one


@pytest.mark.parametrize("storage", ["u8", "u16"])
def test_a_read_only_prefix_that_extends_a_checked_one_is_checked_past_it(monkeypatch, storage):
    """A run's prefix grows: the longer one is checked and stored only past the last, whose head it
    must repeat; one whose head differs is checked whole, and a wrong value there is caught."""
    game = Game(".6", storage, 56_000)
    checks = _checks_from(monkeypatch)
    full = np.array(game.truth[:50_000], dtype=np.uint16)  # past the kernel's first heap, as a run's
    full.flags.writeable = False
    head = np.array(full[:30_000])  # in other memory: compared value by value
    head.flags.writeable = False
    assert game.verify(game.codes, head, b=game.plan.start + 2000).proven
    assert game.verify(game.codes, full, b=game.plan.start + 2000).proven
    assert game.verify(game.codes, full[:-1000], b=game.plan.start + 2000).proven
    assert checks == [0, 30_000, 30_000]  # the shorter view extends the head, not the full prefix
    wrong = np.array(game.truth[: game.plan.start], dtype=np.uint16)
    wrong[20_627] = 278  # a common value where the table has the rare 277
    wrong.flags.writeable = False
    with pytest.raises(InputError, match="contradicts the rare table"):
        game.verify(game.codes, wrong)
    assert checks[-1] == 0


def test_a_worker_keeps_the_verifier_it_unpickled_and_loads_the_module_the_run_had_loaded(tmp_path):
    """A worker process gets the verifier anew with every task: it must keep the first it unpickled (the
    plan's tables and the module made once) and load the module from where the run had it, rendering
    nothing; the module it loads proves the true codes."""
    game = Game(".16", None, 50_000)
    verifier = Verifier(game.plan)
    name = verifier.module.artefact.name  # loaded here, as the run's verifier is
    task = tmp_path / "task.pickle"
    task.write_bytes(pickle.dumps((verifier, game.codes[game.base :], game.base, game.prefix("writable"))))
    worker = f"""
import pickle, sys
first, codes, base, prefix = pickle.loads(open({str(task)!r}, "rb").read())
again = pickle.loads(open({str(task)!r}, "rb").read())[0]
result = again.verify(codes, base, prefix, again.plan.start, base + len(codes))
print(again is first, "jinja2" in sys.modules, again.module.artefact.name, result.proven)
"""
    said = subprocess.run([sys.executable, "-c", worker], capture_output=True, text=True, check=True).stdout.split()
    assert said == ["True", "False", name, "True"]


def test_a_module_is_not_loaded_from_where_another_machine_or_python_had_it(tmp_path):
    module = Verifier(Game(".16", None, 50_000).plan).module
    unloaded = "octalgen_kernel_not_loaded_here"  # not loaded in this process: looked for where it is said to be
    assert load_module_at((unloaded, str(module.artefact.path), "another machine")) is None
    assert load_module_at((unloaded, str(tmp_path), loader_identity())) is None  # no complete artefact there
    assert load_module_at(module_address(module)) is module


def test_u8_codes_over_a_far_rare_position_are_proven_by_its_table_entry():
    """G(71,722) = 116 of .034 is rare under 0x1ff, past a prefix of 2^16: a far rare position, whose u8
    code stands for a common value.  The scan takes its pairs apart (an option only with another rare
    heap), so codes from before it prove the values as codes from past it do."""
    from octalgen.engine.exact_steps import exact_solver
    from octalgen.game import parse_game
    from octalgen.rare import RareTable

    game = parse_game(".034")
    values = exact_solver(game, None).extend(150_000).astype(np.int64)
    plan = make_plan(RareTable.from_values(game, values[: 1 << 16], mask=0x1FF).with_entry(71_722, 116), storage="u8")
    verifier, a = Verifier(plan), plan.start
    codes = plan.encoding.encode_array(values).astype(np.uint8)
    for base in (a - plan.window, 71_000, 1):
        assert verifier.verify(codes[base:], base, values[: 1 << 16], a, len(values)).proven
    wrong = codes.copy()
    wrong[a + 100] ^= 1
    result = verifier.verify(wrong[1:], 1, values[: 1 << 16], a, len(values))
    assert (result.status, result.heap, result.true_value) == ("failed", a + 100, values[a + 100])


# -- far out: many heaps a batch, the round in lanes ----------------------------------------------------

#: Heaps from here on are proven many at a time (128 where the CPU has AVX-512 VBMI), their round taken in
#: lanes (every x of the round is below 32768, so every heap past 2 x 32768 + k); the truth is the exact C
#: solver's.
FAR_FROM, FAR_TO = 1 << 17, (1 << 17) + 4096


@cache
def _far_truth(code: str) -> np.ndarray:
    from octalgen.cpu.exact import exact_values_c

    values = exact_values_c(code, FAR_TO, mask=shipped_table(code).mask)
    values.flags.writeable = False
    return values


def _far_verify(plan, codes, scan, a, b):
    from test_cpu_kernel import SCANS

    base = plan.start - plan.window
    return Verifier(plan, flags=SCANS[scan]).verify(codes[base:], base, _far_truth(plan.game.code)[: plan.start], a, b)


@pytest.mark.parametrize("storage", ["u8", "u16"])
def test_far_heaps_are_proven_alike_by_every_scan(storage):
    """Every proof scan proves the same heaps with the same count of pairs: the round taken in lanes finds
    what each heap's own round finds."""
    from test_cpu_kernel import SCANS

    plan = make_plan(shipped_table(".6"), storage=storage)
    codes = plan.encoding.encode_array(_far_truth(".6")).astype(plan.encoding.dtype)
    results = {scan: _far_verify(plan, codes, scan, FAR_FROM, FAR_TO) for scan in SCANS}
    assert all(result.proven for result in results.values()), results
    assert len({result.options_scanned for result in results.values()}) == 1, results


@pytest.mark.parametrize("storage", ["u8", "u16"])
@pytest.mark.parametrize("scan", ["native", "plain", "32-byte vectors", "64-byte vectors, no byte permutes"])
def test_a_fault_in_any_heap_of_a_batch_is_caught(storage, scan):
    """A wrong value in any of the 128 heaps of a batch (sorted by their values into lanes) is caught with
    the true value: one code off (a lower one unmarked, or its own marked), and 17 and 33 off (other ranges
    of 16 and of 32 codes)."""
    plan = make_plan(shipped_table(".6"), storage=storage)
    truth = _far_truth(".6")
    codes = plan.encoding.encode_array(truth).astype(plan.encoding.dtype)
    mask = plan.table.mask
    low = mask & -mask
    flips = (1, 0x11, 0x21) if storage == "u8" else (low | ((mask ^ low) & -(mask ^ low)), 0x40 | low)
    a = FAR_FROM + 128
    for heap in range(a, a + 128, 3):
        for flip in flips:
            bad = codes.copy()
            bad[heap] ^= flip
            if storage == "u16" and plan.table.is_rare(int(bad[heap]), heap):
                continue  # a rare value: refused before the proof
            result = _far_verify(plan, bad, scan, a, a + 256)
            assert (result.status, result.heap, result.true_value) == ("failed", heap, truth[heap]), (heap, flip)
