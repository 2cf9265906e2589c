"""The GPU kernel plug-in through the engine, on the numpy twin (TwinKernels: the GPU's decisions).

``run`` with the plug-in gives the reference's digests, resumes from checkpoints, proves .16's
period, recovers a planted fault and a new rare value, and refuses u16 storage in one line;
``bench``, ``run --backend cuda`` and the ``cuda`` backends work on it.  No GPU needed.
"""

from __future__ import annotations

import itertools
import logging
from functools import cache

import numpy as np
import pytest
from engine_helpers import run_engine

from octalgen.backends import compute_values
from octalgen.checksum import fnv1a64
from octalgen.cpu.kernel import StorageOverflow, default_threads
from octalgen.cpu.plugin import CKernels
from octalgen.cuda import plugin, runtime, twin
from octalgen.cuda.cuda_plan import CODES, CudaOptions
from octalgen.engine import accounting, split
from octalgen.engine.planning import plan_game
from octalgen.engine.tally import RecurrenceProof
from octalgen.errors import ComputationError, Interrupted
from octalgen.game import parse_game
from octalgen.rare import RareTable, shipped_table
from octalgen.reference import exact_values


def run_twin(code, until, directory=None, stop_at=None, table=None, kernels=None, prover=None, **options):
    """``octalgen run`` in this process with the twin plug-in; returns (summary, kernels)."""
    kernels = kernels or plugin.TwinKernels(256)
    summary = run_engine(
        code,
        until,
        directory,
        stop_at,
        table,
        prover=prover,
        kernels=kernels,
        chunk=options.pop("chunk", 1 << 13),
        **options,
    )
    return summary, kernels


@cache
def reference_digest(code: str, count: int) -> str:
    return fnv1a64(exact_values(code, count))


@pytest.mark.parametrize(
    "code, until, options",
    [
        (".644", 6_000, CudaOptions()),
        (".644", 6_000, CudaOptions(cache_final=True)),
        (".16", 40_000, CudaOptions()),
        (".16", 40_000, CudaOptions(scan_chunk=32, scan_bound=64)),  # most scans go through the tail queue
        (".6", 48_000, CudaOptions()),
    ],
)
def test_run_with_the_twin_gives_the_reference_digest(code, until, options):
    summary, kernels = run_twin(code, until, kernels=plugin.TwinKernels(128, options))
    assert summary.statistics.digest == reference_digest(code, until)
    rounds, verification = kernels.figures()
    start = plan_game(parse_game(code))[0].start
    assert verification.values == until - start
    assert until - start <= rounds.values < until - start + kernels.window  # the front may pass the end
    assert rounds.rounds == rounds.advance_counts.sum() > 0 and rounds.recomputed_per_value > 0
    assert not verification.settled_on_cpu


@pytest.fixture(scope="module")
def sixteen_60k():
    return run_twin(".16", 60_000)[0].statistics


def test_stops_and_resumes_give_the_uninterrupted_figures(sixteen_60k, tmp_path):
    # In the exact prefix, at the kernel's first heap (27,873), inside and at the end of chunks.
    reached = []
    for stop in [5_000, 27_873, 30_000, 33_000, 44_000]:
        with pytest.raises(Interrupted) as raised:
            run_twin(".16", 60_000, tmp_path, stop_at=stop, chunk=1 << 12)
        reached.append(raised.value.proven)
        assert stop <= reached[-1] < 60_000
    assert len(set(reached)) == len(reached)
    final = run_twin(".16", 60_000, tmp_path, chunk=1 << 12)[0].statistics
    assert final.to_json() == sixteen_60k.to_json()
    assert final.digest == reference_digest(".16", 60_000)


def test_run_proves_the_period_of_16_and_stops():
    summary, _ = run_twin(".16", 2_000_000, kernels=plugin.TwinKernels(1024), prover=RecurrenceProof, chunk=1 << 16)
    period = summary.period
    assert period["period"] == 149459 and period["from"] >= 105351
    values = summary.statistics.values
    assert period["proof_length"] <= values < 2_000_000  # stopped once proven
    assert summary.statistics.digest == fnv1a64(compute_values(".16", 0, values, backend="c", workers=0))


def _plant_fault(monkeypatch, at: int) -> list:
    """Flip a bit of the twin's code at offset ``at`` of the first read long enough, once (the list
    returned names it once done)."""
    read, planted = twin.Speculator.read, []

    def faulty_read(self, lo, hi, out=None):
        codes = read(self, lo, hi, out)
        if not planted and len(codes) > at:
            codes[at] ^= 1
            planted.append(at)
        return codes

    monkeypatch.setattr(twin.Speculator, "read", faulty_read)
    return planted


def test_a_planted_fault_is_corrected(monkeypatch, caplog):
    planted = _plant_fault(monkeypatch, 3000)
    with caplog.at_level(logging.WARNING, logger="octalgen"):
        summary, _ = run_twin(".16", 40_000)
    assert planted and "verification corrected G(" in caplog.text
    assert summary.statistics.digest == reference_digest(".16", 40_000)


class LateDevice:
    """A device verifier whose launches finish later, and out of order: each is done a random number
    of looks (at any launch: the device's clock) after it started; the twin computes its outcome."""

    def __init__(self, device, finishes: list, seed: int = 28):
        self.device, self.rng, self.clock, self.finishes = device, np.random.default_rng(seed), 0, finishes

    def verify(self, *args):
        return self.device.verify(*args)

    def launch(self, *args):
        finish = self.clock + int(self.rng.integers(1, 12))
        self.finishes.append(finish)
        return LateLaunch(self, self.device.verify(*args), finish)


class LateLaunch:
    def __init__(self, device: LateDevice, outcome, finish: int):
        self._device, self._outcome, self._finish = device, outcome, finish

    def done(self) -> bool:
        self._device.clock += 1  # every look lets the device run on
        return self._device.clock >= self._finish

    def wait(self, timeout=None) -> bool:
        return self.done()  # False stands for the timeout running out

    def outcome(self):
        assert self._device.clock >= self._finish, "an outcome read before its launch was done"
        return self._outcome


class LateTwinKernels(plugin.TwinKernels):
    """The twin plug-in with a :class:`LateDevice` verifier; ``finishes``: every launch's finishing time,
    in the order of the launches (a recovery's run may make a plan, and a device, of its own)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.finishes = []

    def _devices(self, plan):
        speculator, device = super()._devices(plan)
        return speculator, LateDevice(device, self.finishes)


def test_asynchronous_proofs_done_late_and_out_of_order_keep_the_order_and_recover(monkeypatch, caplog):
    planted = _plant_fault(monkeypatch, 1000)
    kernels = LateTwinKernels(256)
    with caplog.at_level(logging.WARNING, logger="octalgen"):
        summary, _ = run_twin(".16", 60_000, kernels=kernels, chunk=1 << 11)
    finishes = kernels.finishes
    assert any(later < earlier for earlier, later in itertools.pairwise(finishes))  # a later launch finished first
    assert planted and "verification corrected G(" in caplog.text
    assert summary.statistics.digest == reference_digest(".16", 60_000)


def test_synchronous_proofs_as_before_give_the_reference_digest():
    kernels = plugin.TwinKernels(128, asynchronous=False)
    summary, _ = run_twin(".644", 6_000, kernels=kernels)
    assert kernels(plan_game(parse_game(".644"))[0])[1].__class__ is plugin.HybridVerifier
    assert summary.statistics.digest == reference_digest(".644", 6_000)


def test_asynchronous_proofs_stop_checkpoint_and_resume(sixteen_60k, tmp_path):
    for stop in [30_000, 44_000]:
        with pytest.raises(Interrupted):
            run_twin(".16", 60_000, tmp_path, stop_at=stop, chunk=1 << 11, kernels=LateTwinKernels(256))
    final = run_twin(".16", 60_000, tmp_path, chunk=1 << 11, kernels=LateTwinKernels(256))[0].statistics
    assert final.to_json() == sixteen_60k.to_json()


def test_asynchronous_proofs_find_a_new_rare_value(caplog):
    with caplog.at_level(logging.WARNING, logger="octalgen"):
        summary, _ = run_twin(".16", 40_000, table=_cut_16(), kernels=LateTwinKernels(256), chunk=1 << 11)
    assert "NEW RARE VALUE: G(13932)" in caplog.text
    assert summary.statistics.digest == reference_digest(".16", 40_000)


def _cut_16():
    """.16's table cut after its rare value at 3604: the kernel then meets a new rare value at 13932."""
    table = shipped_table(".16")
    return RareTable(table.game, table.mask, tuple(e for e in table.entries if e[0] <= 3604), 3605)


def test_a_new_rare_value_is_found_and_the_run_goes_on(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="octalgen"):
        summary, _kernels = run_twin(".16", 40_000, tmp_path, table=_cut_16())
    assert "NEW RARE VALUE: G(13932)" in caplog.text
    assert summary.statistics.rare_found[0][0] == 13932
    assert summary.statistics.digest == reference_digest(".16", 40_000)


def test_a_c_run_extended_on_the_twin_ends_right_and_leaves_the_c_split_alone(tmp_path, monkeypatch):
    """``--backend c`` to 30,000 then the GPU plug-in (twin) to 45,000 from the same checkpoint: the
    reference's digest; and the GPU session's measured rates do not replace the C backend's cached
    ones (a GPU run's once made ``--backend c`` choose 1 kernel thread and 16 verifiers)."""
    monkeypatch.setattr(split, "_path", lambda: tmp_path / "core-split.json")
    monkeypatch.setattr(accounting, "REFINE_AFTER", 1000)  # these short sessions' rates count
    plan, cores = plan_game(parse_game(".16"))[0], default_threads()
    seeded = {"kernel": {"1": 1.0}, "verify": 1.0}
    split._store(plan, cores, seeded, backend="c")
    checkpoint = tmp_path / "run"
    run_twin(".16", 30_000, checkpoint, kernels=CKernels())
    c_rates = split._cached(plan, cores, "c")
    assert c_rates != seeded and c_rates["kernel"]["1"] > 1.0  # the C session refined its own rates
    summary, twin_kernels = run_twin(".16", 45_000, checkpoint)
    assert summary.statistics.digest == reference_digest(".16", 45_000)
    assert twin_kernels.figures()[1].values > 1000  # the twin proved enough to measure its rates
    assert split._cached(plan, cores, "c") == c_rates
    assert split._cached(plan, cores, twin_kernels.backend) is None  # no split was made for it to refine


def test_scans_the_device_gives_up_on_are_settled_on_the_cpu():
    kernels = plugin.TwinKernels(64, CudaOptions(scan_chunk=4, scan_steps=8))
    summary, _ = run_twin(".644", 6_000, kernels=kernels)
    assert summary.statistics.digest == reference_digest(".644", 6_000)
    assert kernels.figures()[1].settled_on_cpu  # eight steps are too few somewhere


def test_u16_storage_is_refused_in_one_line():
    with pytest.raises(ComputationError, match=r"8 bits.*use the C backend \(--backend c\)") as raised:
        run_twin(".6", 50_000, storage="u16")
    assert "\n" not in str(raised.value)


def test_the_producer_raises_storage_overflow_with_the_values_before_it():
    plan = plan_game(parse_game(".6"))[0]
    producer, _ = plugin.TwinKernels(64)(plan)
    w = plan.window
    buffer = np.zeros(w + 100, dtype=np.uint8)
    # Make the terms of heap start + 10 mark every one of the 256 codes, so its value cannot be stored.
    for code, (offset, constant) in zip(range(CODES), plan.encoded_terms()):
        buffer[w + 10 - offset] = code ^ constant
    speculator = twin.Speculator(producer.cuda_plan, 64)
    speculator.reset(buffer[:w].copy())
    speculator.advance(w + 10)
    before = speculator.read(w, w + 10)
    with pytest.raises(StorageOverflow) as raised:
        producer.fill(buffer, plan.start)
    assert raised.value.heap == plan.start + 10
    assert np.array_equal(buffer[w : w + 10], before)


def test_the_producer_goes_on_from_its_last_call_and_restarts_from_other_history(monkeypatch):
    plan = plan_game(parse_game(".644"))[0]
    values = exact_values(".644", plan.start + 3000)
    codes = plan.encoding.encode_array(values).astype(np.uint8)
    producer, _ = plugin.TwinKernels(64)(plan)
    resets = []
    reset = twin.Speculator.reset
    monkeypatch.setattr(twin.Speculator, "reset", lambda self, history: resets.append(1) or reset(self, history))
    w = plan.window
    for first in (plan.start, plan.start + 1000, plan.start + 2000, plan.start + 500):
        buffer = np.zeros(w + 1000 if first != plan.start + 500 else w + 200, dtype=np.uint8)
        buffer[:w] = codes[first - w : first]
        producer.fill(buffer, first)
        assert np.array_equal(buffer[w:], codes[first : first + len(buffer) - w])
    assert len(resets) == 2  # the first call, and the jump back to start + 500


# -- bench, run --backend cuda and the backends on the twin ---------------------------------


def test_benchmark_figures_with_the_twin():
    from octalgen.cuda.bench import run_benchmark

    figures = run_benchmark(".644", 4000, make_kernels=lambda: plugin.TwinKernels(64))
    assert figures["checksum"] == figures["speculative_checksum"] == reference_digest(".644", 4000)
    assert figures["checksum_ok"] and figures["settled_on_cpu"] == []
    start = plan_game(parse_game(".644"))[0].start
    assert figures["rounds"] == figures["advance_per_round"]["count"]
    made_final = figures["advance_per_round"]["mean"] * figures["rounds"]
    assert 4000 - start <= made_final < 4000 - start + 64
    assert figures["rounds_per_window"]["count"] == (4000 - start) // 64
    assert 0 < figures["recomputed_per_value"] < 64 / figures["advance_per_round"]["mean"]


@pytest.fixture
def twin_as_gpu(monkeypatch):
    """The GPU entry points on the twin: the commands then run their GPU code paths."""
    monkeypatch.setattr(runtime, "unavailable", lambda: None)
    monkeypatch.setattr(runtime, "require_gpu", lambda: None)
    monkeypatch.setattr(plugin, "CudaKernels", lambda window=None, options=None: plugin.TwinKernels(64, options))


def test_bench_command_on_the_twin_reports_the_checksum(cli, twin_as_gpu):
    result = cli("bench", ".644", "-n", 4000, "--backend", "cuda")
    assert result.code == 0, result.err
    assert f"fnv1a64 {reference_digest('.644', 4000)}" in result.out
    assert "x the C kernel" in result.out and "positions recomputed per value" in result.out


def test_run_backend_cuda_on_the_twin_checkpoints_and_resumes(cli, twin_as_gpu, tmp_path):
    first = cli("run", ".16", "--until", 30_000, "--backend", "cuda", "--checkpoint", tmp_path)
    assert first.code == 0, first.err
    extended = cli("run", ".16", "--until", 45_000, "--backend", "cuda", "--checkpoint", tmp_path)
    assert extended.code == 0, extended.err
    assert f"fnv1a64 {reference_digest('.16', 45_000)}" in extended.out


@pytest.mark.parametrize("backend", ["cuda", "cuda-speculative"])
def test_gpu_backends_on_the_twin_equal_the_reference(twin_as_gpu, backend):
    assert np.array_equal(compute_values(".16", 0, 32_000, backend=backend), exact_values(".16", 32_000))


def test_bench_command_without_a_gpu_is_one_line(cli):
    if runtime.unavailable() is None:
        pytest.skip("a GPU is here")
    result = cli("bench", ".6", "-n", 1000, "--backend", "cuda")
    assert result.code == 1 and result.err.count("\n") == 1 and runtime.unavailable() in result.err


def test_round_figures_are_a_bounded_summary_that_loses_nothing_the_benchmark_reports():
    """Rounds added piece by piece into histograms give the figures of the whole log at once."""
    from octalgen.cuda.bench import distribution, histogram_distribution, rounds_per_window

    rng = np.random.default_rng(28)
    plan = plan_game(parse_game(".644"))[0]
    terms = twin.TermIndex.of(plugin.CudaPlan(plan, CudaOptions()))
    window = 64
    advances = np.where(rng.random(5000) < 0.1, 0, rng.integers(1, window + 1, 5000))  # some empty rounds
    fronts = 1000 + np.concatenate([[0], np.cumsum(advances)])
    his = np.where(advances > 0, fronts[:-1] + window, fronts[:-1])  # an empty round computed nothing
    rows = np.stack([fronts[:-1], his], axis=1)
    figures = plugin.RoundFigures(window=window)
    cut = np.sort(rng.choice(np.arange(1, len(rows)), 40, replace=False))
    previous = 0
    for lo, hi in zip([0, *cut], [*cut, len(rows)]):
        figures.add(terms, rows[lo:hi], previous, int(fronts[hi]), cache_final=False)
        previous = int(rows[hi - 1, 0])
    real = advances[advances > 0]
    assert figures.rounds == len(real) and figures.empty_rounds == len(advances) - len(real)
    assert figures.values == int(advances.sum())
    assert figures.marks == int((his - fronts[:-1]).sum()) * len(terms.offsets)
    assert histogram_distribution(figures.advance_counts) == pytest.approx(distribution(real))
    assert histogram_distribution(figures.window_counts) == pytest.approx(distribution(rounds_per_window(real, window)))
    assert len(figures.advance_counts) <= window + 1  # bounded by the window, however many rounds
