"""Where the verification runs and what computes the values: chunks produced ahead proven by the
workers, both kernel plug-ins against the engine's protocols, a Dask cluster giving the local
digest, an unreachable scheduler as one line, and the rates that split the cores between roles."""

from __future__ import annotations

import os
from collections import OrderedDict
from types import SimpleNamespace

import pytest
from engine_helpers import c_values, run_engine

from octalgen.checksum import fnv1a64
from octalgen.cpu.exact import exact_values_c
from octalgen.cpu.plugin import CKernels
from octalgen.cpu.verify import Verifier, is_frozen
from octalgen.engine import recovery
from octalgen.engine.seams import ChunkFiller, KernelPlugin, ProofVerifier
from octalgen.plan import make_plan
from octalgen.rare import shipped_table


def test_chunks_produced_ahead_are_proven_by_the_workers(monkeypatch):
    """While the prefix still grows, chunks produced ahead carry the codes their proof scans need:
    none comes back undecided to be verified again in this process."""
    retried = []
    again = recovery.verify_again
    monkeypatch.setattr(
        recovery,
        "verify_again",
        lambda verifier, chunk, result, *more: retried.append(result.heap) or again(verifier, chunk, result, *more),
    )
    until = 1_500_000
    summary = run_engine(".6", until, workers=1, chunk=1 << 18, backlog=8)  # all produced ahead
    assert retried == []
    assert summary.statistics.digest == fnv1a64(c_values(".6", until))


def test_a_prefix_verified_in_this_process_is_checked_once_as_it_grows(monkeypatch):
    """With no workers the run hands the verifier its history's prefix itself, read-only: each value is
    checked once, as the prefix grows, not again for every share, piece or chunk."""
    from octalgen.cpu import verify
    from octalgen.engine.executors import InProcess

    until = 1_500_000
    expected = fnv1a64(c_values(".6", until))
    monkeypatch.setattr(verify, "_CHECKED", OrderedDict())  # none of another test's prefixes
    shared, checked = [], []
    share, check = InProcess.share, Verifier._checked_prefix
    monkeypatch.setattr(InProcess, "share", lambda self, array: shared.append(share(self, array)) or shared[-1])
    monkeypatch.setattr(
        Verifier, "_checked_prefix", lambda self, p, start=0: checked.append((start, len(p))) or check(self, p, start)
    )
    summary = run_engine(".6", until, workers=0, chunk=1 << 18)  # pieces of 2^17: two a chunk
    assert summary.statistics.digest == expected
    assert len(shared) >= 2 and all(is_frozen(handle) for handle in shared)
    lengths = [len(handle) for handle in shared]
    assert checked == list(zip([0, *lengths[:-1]], lengths))  # from where the last check ended


def test_on_one_core_the_run_verifies_in_its_own_process(monkeypatch):
    """A worker on the kernel's only core would take turns with it, adding its start-up and its copies."""
    from octalgen.engine import pipeline

    until = 2_500_000  # past a small job, which never starts workers
    made = []
    make = pipeline.make_executor
    monkeypatch.setattr(pipeline, "make_executor", lambda workers, *more: made.append(workers) or make(workers, *more))
    monkeypatch.setattr(pipeline, "default_threads", lambda: 1)
    summary = run_engine(".6", until)
    assert made == [0]
    assert summary.statistics.digest == fnv1a64(c_values(".6", until))


def test_both_kernel_plug_ins_implement_the_engines_seam():
    from octalgen.cuda.plugin import TwinKernels

    plan = make_plan(shipped_table(".6"))
    for plugin in (CKernels(), TwinKernels(64)):
        assert isinstance(plugin, KernelPlugin)
        producer, verifier = plugin(plan)
        assert isinstance(producer, ChunkFiller) and isinstance(verifier, ProofVerifier)
        assert verifier.plan == plan


@pytest.mark.parametrize("recent_limit", [None, 1 << 12], ids=["ring", "tape"])
def test_dask_cluster_gives_the_local_digest(recent_limit):
    """Also where the window (20,628 values) is longer than the recent values: the kernel's codes are then
    on a tape, which a cluster's workers cannot map; they are sent the window and the scans' reach."""
    distributed = pytest.importorskip("distributed")
    local = run_engine(".6", 1 << 20, workers=0, chunk=1 << 18)
    options = {} if recent_limit is None else {"recent_limit": recent_limit}
    with distributed.LocalCluster(
        n_workers=1,
        threads_per_worker=2,
        processes=False,
        protocol="tcp",
        host="127.0.0.1",
        scheduler_port=0,
        dashboard_address=":0",
    ) as cluster:
        remote = run_engine(".6", 1 << 20, scheduler=cluster.scheduler_address, chunk=1 << 18, **options)
    assert remote.statistics.digest == local.statistics.digest
    assert remote.statistics.counts == local.statistics.counts


def test_an_unreachable_scheduler_is_one_line(cli, monkeypatch):
    monkeypatch.setattr("octalgen.engine.executors.CONNECT_TIMEOUT", 2.0)
    result = cli("run", ".6", "--until", 10_000_000, "--scheduler", "tcp://127.0.0.1:9")
    assert result.code == 2 and result.err.count("\n") == 1 and "cannot reach the Dask scheduler" in result.err


def test_a_long_run_replaces_the_start_up_rates_of_the_split(tmp_path, monkeypatch):
    """The rates a run measured per CPU second (one kernel thread) replace a poor start-up sample."""
    from octalgen.engine import split
    from octalgen.plan import make_plan

    monkeypatch.setenv("OCTALGEN_CACHE_DIR", str(tmp_path))
    plan = make_plan(shipped_table(".6"))
    split._store(plan, 2, {"kernel": {1: 4e5, 2: 5e5}, "blocks": {}, "verify": 4e4})  # sampled on a busy machine
    split.refine(plan, 2, threads=1, kernel_rate=9.6e5, verify_rate=3.6e5, backend="c")
    rates = split._cached(plan, 2)
    threads, workers, predicted = split.predict({int(t): r for t, r in rates["kernel"].items()}, rates["verify"], 2)
    # One thread beside two verifying processes: the CPU per value is 1/k + 1/v + c on each of 2 cores.
    assert (threads, workers) == (1, 2)
    assert predicted == pytest.approx(2 / (1 / 9.6e5 + 1 / 3.6e5 + split.COORDINATOR_SECONDS))
    split.refine(plan, 2, threads=2, kernel_rate=2e6, verify_rate=None, backend="c")  # two threads spin: no CPU rate
    assert split._cached(plan, 2)["kernel"]["1"] == 9.6e5 and split._cached(plan, 2)["kernel"]["2"] == 5e5


def test_the_start_up_sample_proves_heaps_whose_round_goes_in_lanes():
    """The verifier's start-up rate is measured on the last heaps of the kernel's sample, whose scan
    does not read back into the exact prefix (the first 2 ROUND_SPAN heaps' rounds do, proven several
    times slower, and would have the split take the verifier for far slower than it is): every heap
    it proves there is proven."""
    from octalgen.cpu.generate import ROUND_SPAN
    from octalgen.engine import split

    plan = make_plan(shipped_table(".6"))
    kernel, verifier = CKernels()(plan)
    values = c_values(".6", plan.start)
    window = plan.encoding.encode_array(values[plan.start - plan.window :]).astype(kernel.dtype)
    calls = []

    class Recording:
        def verify(self, codes, base, prefix, a, b):
            calls.append((a, b, verifier.verify(codes, base, prefix, a, b)))
            return calls[-1][2]

    rates = split._measure(plan, kernel, Recording(), window, values, plan.start, cores=1)
    assert rates["verify"] > 0 and all(result.proven for _, _, result in calls)
    a, b, _ = calls[-1]  # the timed one
    assert (b - a, b) == (split.VERIFY_SAMPLE, plan.start + split.KERNEL_SAMPLE)
    assert min(a for a, _, _ in calls) >= plan.start + 2 * ROUND_SPAN


def test_the_split_expects_the_coordinator_the_start_and_the_drain_and_says_when_it_missed(monkeypatch, tmp_path):
    from dataclasses import replace

    from octalgen.engine import split

    # The coordinator's CPU per value comes off the verifiers' cores, once a long run measured it.
    monkeypatch.setenv("OCTALGEN_CACHE_DIR", str(tmp_path))
    plan = make_plan(shipped_table(".6"))
    split._store(plan, 4, {"kernel": {1: 4e6, 2: 7e6}, "blocks": {2: 64}, "verify": 1e6, "code": "kernel k"})
    assert split.predict({1: 4e6, 2: 7e6}, 1e6, 4, coordinator=0.0)[2] == pytest.approx(4 / (1 / 4e6 + 1 / 1e6))
    split.refine(plan, 4, 2, None, None, "c", coordinator=1e-6)  # a coordinator as slow as a verifier
    chosen = split.choose(plan, SimpleNamespace(tuned_blocks={}, code="kernel k"), None, None, None, 0, cores=4)
    assert (chosen.threads, chosen.workers) == (1, 4)
    assert chosen.predicted == pytest.approx(4 / (1 / 4e6 + 1 / 1e6 + 1e-6))
    # A session of N values: N at the predicted rate, the first chunk before any proof, the last
    # chunk's proofs after the kernel is done (4 processes).
    n, chunk, first = 10**7, 1 << 21, 1 << 16
    seconds = n / chosen.predicted + first / 4e6 + chunk / (4 * 1e6)
    assert chosen.expected(n, chunk, first) == pytest.approx(n / seconds)
    assert chosen.expected(1000, chunk, first) == pytest.approx(
        1000 / (1000 / chosen.predicted + 1000 / 4e6 + 1000 / 4e6)
    )
    # The summary gives both, and a line of its own where they differ by more than a quarter.
    summary = run_engine(".6", 60_000, workers=0)
    expected = chosen.expected(n, chunk, first)
    for seconds, missed in ((n / expected, False), (n / (0.7 * expected), True), (n / (1.3 * expected), True)):
        shown = replace(summary, split=chosen, expected=expected, session_values=n, session_seconds=seconds)
        lines = shown.lines(engineering=True)
        assert any(f"of the {expected / 1e6:.2f} M expected for 10,000,000 values" in line for line in lines), lines
        assert any("split of the cores expected" in line for line in lines) == missed
        assert shown.to_json()["cores"]["expected_values_per_second"] == round(expected)


def test_the_split_measures_every_block_length_and_the_kernel_keeps_the_fastest(monkeypatch, tmp_path):
    # Each thread count is measured with each block length the kernel takes; the fastest is that
    # count's rate, and the kernel hands its threads blocks of it (also to --threads chosen by hand).
    # An entry cached before block lengths were measured, or for other code, is measured again.
    from octalgen.cpu.kernel import SpeculativeKernel
    from octalgen.engine import split

    monkeypatch.setenv("OCTALGEN_CACHE_DIR", str(tmp_path))
    plan = make_plan(shipped_table(".16"))
    kernel, verifier = SpeculativeKernel(plan), Verifier(plan)
    exact = exact_values_c(".16", plan.start + 10, mask=plan.table.mask)
    window = plan.encoding.encode_array(exact[plan.start - plan.window : plan.start]).astype(kernel.dtype)
    tried, fill = [], kernel.fill

    def counted(buffer, first_heap, threads, patient=False, block=None):
        tried.append((threads, block))
        return fill(buffer, first_heap, threads, patient, block)

    monkeypatch.setattr(kernel, "fill", counted)
    split._store(plan, 5, {"kernel": {1: 4e6, 2: 7e6}, "verify": 1e6})  # no blocks: from an earlier version
    chosen = split.choose(plan, kernel, verifier, window, exact[: plan.start], plan.start, cores=5)
    assert split.thread_counts(5, 57) == [1, 2, 3, 4] and split.thread_counts(16, 57) == [1, 2, 3, 4, 6, 8, 12]
    assert sorted(tried) == sorted([(1, None)] + [(t, b) for t in (2, 3, 4) for b in (256, 128, 64)])
    assert set(chosen.blocks) == {2, 3, 4} and kernel.tuned_blocks == chosen.blocks
    assert split._cached(plan, 5)["blocks"] == {str(t): b for t, b in chosen.blocks.items()}
    assert split._cached(plan, 5)["code"] == kernel.code
    # Measured once: the next run reads the entry, unless it was measured for other code (an upgrade).
    tried.clear()
    assert split.choose(plan, kernel, verifier, window, exact[: plan.start], plan.start, cores=5) == chosen
    assert tried == []
    split._store(plan, 5, {**split._cached(plan, 5), "code": "octalgen_kernel_of_another_version"})
    again = split.choose(plan, kernel, verifier, window, exact[: plan.start], plan.start, cores=5)
    assert len(tried) == 10 and split._cached(plan, 5)["code"] == kernel.code
    # --threads by hand: the block this machine's split measured for that count, without measuring ...
    monkeypatch.setattr(split, "default_threads", lambda: 5)
    hand = SpeculativeKernel(plan)
    monkeypatch.setattr(hand, "fill", lambda *a, **k: pytest.fail("measured again"))
    split.tune_blocks(plan, hand, window, plan.start, 3)
    assert hand.tuned_blocks == {3: again.blocks[3]}  # the cached measurement: the latest
    # ... or, where none did, the fastest of a measurement of that count now.
    monkeypatch.setattr(split, "default_threads", lambda: 7)
    fresh = SpeculativeKernel(plan)
    split.tune_blocks(plan, fresh, window, plan.start, 3)
    assert list(fresh.tuned_blocks) == [3] and fresh.tuned_blocks[3] in fresh.blocks()


def test_the_splits_measurement_is_a_role_of_its_own_not_the_coordinators():
    # Choosing the split samples the kernel with up to 12 threads in the coordinating process, once
    # per machine.  Counted as the coordinator's, it showed as 4.1 CPU-s per 10^8 values in the run on
    # an H100's 16-core host that measured the split (0.5 to 0.6 in runs that did not), and a long run
    # would have cached it as the coordinator's cost per value.
    from octalgen.engine.accounting import Accounting

    session = Accounting(
        kernel=2.0, verifiers_here=1.0, consumers=0.5, exact=0.25, measuring=3.0, process=10.0, values=1 << 27
    )
    assert session.coordinator == pytest.approx(3.25)
    assert session.roles()["split measurement"]["cpu_seconds"] == 3.0
    assert session.measured_rates()[2] == pytest.approx(3.25 / (1 << 27))


def test_a_staged_history_reaches_the_worker_whole_and_its_file_serves_the_next_task():
    """A chunk's codes go to a worker through a file it maps (not the pipe), written from its pieces:
    the worker's proof is the one made here from the array itself.  Once the task is over the file
    is written again for the next task (a longer one grows it); a cancelled task's file is removed,
    since its worker may still read it.  The prefix, as it grows, is appended to its file."""
    import os

    import numpy as np

    from octalgen.engine.executors import LocalProcesses, StagedArray, verify_task

    plan = make_plan(shipped_table(".6"))
    kernel, verifier = CKernels()(plan)
    until = plan.start + 50_000
    codes = plan.encoding.encode_array(c_values(".6", until)[plan.start - plan.window :]).astype(kernel.dtype)
    prefix = c_values(".6", plan.start)
    base = plan.start - plan.window
    pool = LocalProcesses(1)
    try:
        short = pool.stage(codes[:1000])
        pool.release(short)
        staged = pool.stage(codes)
        assert isinstance(staged, StagedArray) and staged.path == short.path and len(staged.array()) == len(codes)
        shared = pool.share(prefix[:5000])
        grown = pool.share(prefix)
        assert grown.path == shared.path and np.array_equal(grown.array(), prefix)
        there = pool.submit(
            verify_task, verifier, staged.head(len(codes) - 10_000), base, grown, plan.start, until - 10_000
        ).result(timeout=60)[0]
        here = verify_task(verifier, codes[: len(codes) - 10_000], base, prefix, plan.start, until - 10_000)[0]
        assert there == here and there.status == "proven"
        pool.release(staged)
        assert os.path.exists(staged.path)
        again = pool.stage(codes[::-1])
        assert again.path == staged.path and np.array_equal(again.array(), codes[::-1])
        pool.release(again, finished=False)
        assert not os.path.exists(again.path)
    finally:
        pool.close(kill=True)
    assert not os.path.exists(shared.path)


def _threads_with_numpy() -> int:
    """The threads of the process that runs this, once numpy (and its BLAS) is imported."""
    import numpy  # noqa: F401 - its BLAS starts its threads when imported

    return len(os.listdir("/proc/self/task"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="threads are counted in /proc")
def test_a_worker_process_starts_no_blas_threads():
    """A task never multiplies matrices: numpy's BLAS in a worker keeps to the calling thread, where its
    default starts one a core, each spinning a while.  The worker has its own thread and the one that
    watches its parent."""
    from octalgen.engine.executors import LocalProcesses

    pool = LocalProcesses(1)
    try:
        assert pool.submit(_threads_with_numpy).result(timeout=60) == 2
    finally:
        pool.close(kill=True)


def test_the_files_of_a_killed_run_are_swept_by_the_next_one(tmp_path):
    """A run killed with ``kill -9`` cannot remove its shared files: the next run's workers do,
    and only those of runs that are gone."""
    import os
    import subprocess
    import tempfile

    from octalgen.engine import staged_files

    gone = subprocess.Popen(["true"])
    gone.wait()  # its pid names no process now (reused only after the kernel wraps around)
    folder = staged_files.staging_dir() or tempfile.gettempdir()
    dead = os.path.join(folder, f"octalgen-codes-{gone.pid}-test0001")
    alive = os.path.join(folder, f"octalgen-codes-{os.getpid()}-test0002")
    for path in (dead, alive):
        open(path, "wb").close()
    try:
        staged_files.sweep_staged_files()
        assert not os.path.exists(dead) and os.path.exists(alive)
    finally:
        for path in (dead, alive):
            if os.path.exists(path):
                os.unlink(path)
