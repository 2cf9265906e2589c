"""The GPU kernel plug-in through the engine, on the numpy twin (TwinKernels: the GPU's decisions).

``run`` with the plug-in gives the reference's digests, resumes from checkpoints, proves .16's
period, recovers a planted fault and a new rare value, and refuses u16 storage in one line;
``bench``, ``run --backend cuda`` and the ``cuda`` backends work on it.  No GPU needed.
"""

from __future__ import annotations

import logging
from functools import lru_cache

import numpy as np
import pytest

from octalgen.backends import compute_values
from octalgen.checksum import fnv1a64
from octalgen.cpu.kernel import StorageOverflow
from octalgen.cuda import plugin, runtime, twin
from octalgen.cuda.cuda_plan import CODES, CudaOptions
from octalgen.engine.core import Engine, EngineOptions
from octalgen.engine.plans import plan_game
from octalgen.engine.summary import summarize
from octalgen.engine.tally import RecurrenceProof, Tally
from octalgen.errors import ComputationError, Interrupted
from octalgen.game import parse_game
from octalgen.rare import RareTable, shipped_table
from octalgen.reference import exact_values
from engine_helpers import StopAt  # the consumer that stops a run as Ctrl-C does


def run_twin(code, until, directory=None, stop_at=None, table=None, kernels=None, prover=None, **options):
    """``octalgen run`` in this process with the twin plug-in; returns (summary, kernels)."""
    game = parse_game(code)
    kernels = kernels or plugin.TwinKernels(256)
    tally = Tally(0, prover(game.max_take) if prover else None)
    consumers = [tally] + ([StopAt(stop_at)] if stop_at is not None else [])
    engine = Engine(game, EngineOptions(until=until, chunk=options.pop("chunk", 1 << 13), **options), consumers,
                    table=table, directory=directory, identity={"command": "run", "digest_from": 0}, kernels=kernels)
    engine.run()
    return summarize(engine, tally), kernels


@lru_cache(maxsize=None)
def reference_digest(code: str, count: int) -> str:
    return fnv1a64(exact_values(code, count))


@pytest.mark.parametrize("code, until, options", [
    (".644", 6_000, CudaOptions()),
    (".644", 6_000, CudaOptions(cache_final=False)),
    (".16", 40_000, CudaOptions()),
    (".6", 48_000, CudaOptions()),
])
def test_run_with_the_twin_gives_the_reference_digest(code, until, options):
    summary, kernels = run_twin(code, until, kernels=plugin.TwinKernels(128, options))
    assert summary.statistics.digest == reference_digest(code, until)
    rounds, verification = kernels.figures()
    start = plan_game(parse_game(code))[0].start
    assert verification.values == until - start
    assert until - start <= rounds.values < until - start + kernels.window  # the front may pass the end
    assert rounds.rounds >= len(np.concatenate(rounds.advances)) > 0 and rounds.recomputed_per_value > 0
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
    summary, _ = run_twin(".16", 2_000_000, kernels=plugin.TwinKernels(1024), prover=RecurrenceProof,
                          chunk=1 << 16)
    period = summary.period
    assert period["period"] == 149459 and period["from"] >= 105351
    values = summary.statistics.values
    assert period["proof_length"] <= values < 2_000_000  # stopped once proven
    assert summary.statistics.digest == fnv1a64(compute_values(".16", 0, values, backend="c", workers=0))


def test_a_planted_fault_is_corrected(monkeypatch, caplog):
    read, planted = twin.Speculator.read, []

    def faulty_read(self, lo, hi):
        codes = read(self, lo, hi)
        if not planted and len(codes) > 3000:
            codes[3000] ^= 1
            planted.append(3000)
        return codes

    monkeypatch.setattr(twin.Speculator, "read", faulty_read)
    with caplog.at_level(logging.WARNING, logger="octalgen"):
        summary, _ = run_twin(".16", 40_000)
    assert planted and "verification corrected G(" in caplog.text
    assert summary.statistics.digest == reference_digest(".16", 40_000)


def _cut_16():
    """.16's table cut after its rare value at 3604: the kernel then meets a new rare value at 13932."""
    table = shipped_table(".16")
    return RareTable(table.game, table.mask, tuple(e for e in table.entries if e[0] <= 3604), 3605)


def test_a_new_rare_value_is_found_and_the_run_goes_on(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="octalgen"):
        summary, kernels = run_twin(".16", 40_000, tmp_path, table=_cut_16())
    assert "NEW RARE VALUE: G(13932)" in caplog.text
    assert summary.statistics.rare_found[0][0] == 13932
    assert summary.statistics.digest == reference_digest(".16", 40_000)


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
    assert np.array_equal(buffer[w: w + 10], before)


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
        buffer[:w] = codes[first - w: first]
        producer.fill(buffer, first)
        assert np.array_equal(buffer[w:], codes[first: first + len(buffer) - w])
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
