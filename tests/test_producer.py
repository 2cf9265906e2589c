"""The producer in a thread of its own: the same chunks, byte for byte, as the producer called on the
coordinating thread, across resets (a recovery), a value too large for 8 bits (reported, and the
engine's reset in 16 bits) and stop requests; the codes checked against the ``c`` backend's values;
the last chunk's pieces combined in order."""

from __future__ import annotations

import itertools
import select

import numpy as np
import pytest
from engine_helpers import c_values, run_engine

from octalgen.checksum import fnv1a64
from octalgen.cpu.kernel import SpeculativeKernel, StorageOverflow
from octalgen.cpu.plugin import CKernels
from octalgen.cpu.verify import FAILED, PROVEN, UNDECIDED, VerifyResult
from octalgen.engine.executors import _Done
from octalgen.engine.pipeline import _Pieces
from octalgen.engine.producer import Producer, term_reads
from octalgen.engine.producer_thread import ProducerThread
from octalgen.engine.signals import StopRequest, StopRequested
from octalgen.engine.tape import Tape
from octalgen.game import parse_game
from octalgen.plan import make_plan
from octalgen.rare import RareTable, shipped_table

UNTIL = 400_000
SIZE = 1 << 16


@pytest.fixture(scope="module")
def truth():
    return c_values(".6", UNTIL)


@pytest.fixture(scope="module")
def plan():
    return make_plan(shipped_table(".6"))


def _reset(producer, plan, truth, position):
    producer.reset(plan, position, truth[position - plan.window : position])


def _take(thread: ProducerThread, timeout: float = 60.0):
    """The next chunk of the producer's thread, waiting on its wake-up descriptor as the pipeline does."""
    for _ in range(int(timeout / 0.05)):
        chunk = thread.take()
        if chunk is not None:
            return chunk
        select.select([thread.wake], [], [], 0.05)
    raise AssertionError("the producer's thread gave no chunk")


def _key(chunk):
    return (
        chunk.first,
        chunk.stop,
        chunk.plan.encoding.kind,
        chunk.base,
        chunk.codes.dtype.str,
        chunk.codes.tobytes(),
        chunk.history.tobytes(),
    )


def _script(plan, truth, produce, reset, overflow):
    """Chunks from the kernel's first heap, a reset back inside the third chunk (as after a recovery
    at heap m: production goes on from m + 1), then to UNTIL; where the producer reports a value
    too large for its storage (``overflow()``), a reset there with the plan in 16 bits, as the engine
    makes it once every heap before it is proven."""
    reset(plan, plan.start)
    chunks = [produce() for _ in range(3)]
    m = chunks[2].first + 1234
    reset(plan, m + 1)
    while not chunks or chunks[-1].stop < UNTIL:
        chunks.append(produce())
        if overflow() is not None:
            assert overflow().heap == chunks[-1].stop
            plan = make_plan(plan.table, storage="u16")
            reset(plan, chunks[-1].stop)
    return chunks, m


def _unthreaded(plan, truth, proof_history):
    producer = Producer(CKernels(), lambda: None)
    return _script(
        plan,
        truth,
        lambda: producer.produce(UNTIL, SIZE, 1, proof_history),
        lambda plan, position: _reset(producer, plan, truth, position),
        lambda: producer.overflow,
    )


def _threaded(plan, truth, proof_history):
    thread = ProducerThread(Producer(CKernels(), lambda: None))

    def reset(plan, position):
        _reset(thread, plan, truth, position)
        thread.run(UNTIL, SIZE, 1, proof_history, ahead=1)

    try:
        return _script(plan, truth, lambda: _take(thread), reset, lambda: thread.overflow)
    finally:
        thread.close()


def _check_codes(chunks, truth, m):
    """The codes decode to the c backend's values, and every chunk's history ends with its own codes."""
    for chunk in chunks:
        values = chunk.plan.encoding.decode_values(chunk.codes, chunk.first)
        assert np.array_equal(values, truth[chunk.first : chunk.stop])
        assert np.array_equal(chunk.history[len(chunk.history) - len(chunk.codes) :], chunk.codes)
        assert chunk.base + len(chunk.history) == chunk.stop
    after = [c for c in chunks if c.first > m]
    assert after[0].first == m + 1 and after[-1].stop == UNTIL


@pytest.mark.parametrize("proof_history", [None, 1 << 15])
def test_the_threaded_producer_gives_the_same_chunks_across_a_reset(plan, truth, proof_history):
    threaded, m = _threaded(plan, truth, proof_history)
    unthreaded, m_again = _unthreaded(plan, truth, proof_history)
    assert m == m_again and [_key(c) for c in threaded] == [_key(c) for c in unthreaded]
    _check_codes(threaded, truth, m)


def test_the_threaded_producer_stops_at_a_value_too_large_as_the_unthreaded_one(plan, truth, monkeypatch):
    # No known game reaches 512 soon: the kernel is made to report a value too large, after the reset;
    # the producer stops there and goes on in 16 bits once reset so.
    overflow_at = plan.start + 300_000
    monkeypatch.setattr(SpeculativeKernel, "fill", _overflowing_at(overflow_at))
    threaded, m = _threaded(plan, truth, None)
    unthreaded, _ = _unthreaded(plan, truth, None)
    assert [_key(c) for c in threaded] == [_key(c) for c in unthreaded]
    kinds = [c.plan.encoding.kind for c in threaded if c.first > m]
    switch = kinds.index("u16")
    assert set(kinds[:switch]) == {"u8"} and set(kinds[switch:]) == {"u16"}  # u8, then u16 to the end
    assert any(c.stop == overflow_at for c in threaded)
    _check_codes(threaded, truth, m)


@pytest.mark.parametrize("overflow", [False, True], ids=["u8", "switching-to-u16"])
def test_a_producer_on_a_tape_gives_the_chunks_of_the_ring(plan, truth, monkeypatch, overflow):
    """A far term's window is read from the tape, and the chunks written there (the engine writes the
    values it proved otherwise before each reset): the same chunks, threaded, as the ring gives."""
    if overflow:
        monkeypatch.setattr(SpeculativeKernel, "fill", _overflowing_at(plan.start + 300_000))
    proof_history = 1 << 15
    thread = ProducerThread(Producer(CKernels(), lambda: None))
    first = plan.start - plan.window

    def reset(plan, position):
        tape = thread.producer.tape
        if tape is None or tape.encoding != plan.encoding:  # the engine's keeper recodes it (tests/test_late_rare)
            tape = Tape(plan.encoding, first, UNTIL - first)
        thread.reset(plan, position, None, tape)
        tape.write(first, truth[first:position])
        thread.run(UNTIL, SIZE, 1, proof_history, ahead=1)

    try:
        taped, m = _script(plan, truth, lambda: _take(thread), reset, lambda: thread.overflow)
    finally:
        thread.close()
    ring, _ = _unthreaded(plan, truth, proof_history)
    # The same codes; after a reset the tape's history reaches further back than the ring's (its window).
    assert [_key(c)[:3] + _key(c)[4:6] for c in taped] == [_key(c)[:3] + _key(c)[4:6] for c in ring]
    for t, r in zip(taped, ring):
        assert t.base <= r.base and np.array_equal(t.history[r.base - t.base :], r.history)
    assert all(c.tape is not None for c in taped) and {c.plan.encoding.kind for c in taped} == (
        {"u8", "u16"} if overflow else {"u8"}
    )
    _check_codes(taped, truth, m)


@pytest.mark.parametrize("far", [False, True], ids=[".6", ".034-with-a-far-term"])
def test_term_reads_are_the_heaps_the_terms_read(plan, far):
    if far:  # .034 under 0x1ff with G(71,722) = 116: its near terms, and the far term's cluster of offsets
        table = RareTable.from_values(parse_game(".034"), c_values(".034", 1 << 16), mask=0x1FF)
        plan = make_plan(table.with_entry(71_722, 116), storage="u16")
    reads = term_reads(plan, 100_000, 100_000 + 5_000)
    assert (len(reads) > 1) == far  # clusters apart: the far term's, the near ones
    heaps = np.zeros(100_000 + 5_000, dtype=bool)
    for term in plan.terms:
        heaps[100_000 - term.offset : 105_000 - term.offset] = True
    merged = np.zeros_like(heaps)
    for start, stop in reads:
        merged[start:stop] = True
    runs = np.count_nonzero(np.diff(np.concatenate([[0], heaps.astype(np.int8)])) == 1)
    assert np.array_equal(merged, heaps) and len(reads) == runs
    assert all(a < b for (_, a), (b, _) in itertools.pairwise(reads))


def test_a_stop_request_ends_the_thread_and_is_raised_by_take(plan, truth):
    stop = StopRequest()
    thread = ProducerThread(Producer(CKernels(), stop.check))
    unthreaded = Producer(CKernels(), lambda: None)
    try:
        for producer in (thread, unthreaded):
            _reset(producer, plan, truth, plan.start)
        thread.run(UNTIL, SIZE, 1, None, ahead=1)
        taken = [_take(thread) for _ in range(2)]
        assert [_key(c) for c in taken] == [_key(unthreaded.produce(UNTIL, SIZE, 1, None)) for _ in range(2)]
        stop.request()
        with pytest.raises(StopRequested):
            for _ in range(UNTIL // SIZE + 2):  # at most the chunk produced ahead comes first
                _take(thread)
        thread._thread.join(timeout=30)
        assert not thread._thread.is_alive()
    finally:
        thread.close()


def test_the_last_chunks_pieces_decide_in_order():
    proven = VerifyResult(PROVEN, options_scanned=5)
    failed = VerifyResult(FAILED, heap=700, true_value=3)
    undecided = VerifyResult(UNDECIDED, heap=400)
    assert _Pieces([_Done((proven, 1.0)), _Done((proven, 2.0))]).result() == (
        VerifyResult(PROVEN, options_scanned=10),
        3.0,
    )
    assert _Pieces([_Done((proven, 1.0)), _Done((failed, 2.0))]).result() == (failed, 3.0)
    assert _Pieces([_Done((undecided, 1.0)), _Done((failed, 2.0))]).result() == (undecided, 1.0)


def _overflowing_at(heap):
    fill = SpeculativeKernel.fill

    def overflowing_fill(self, buffer, first_heap, threads=1, patient=False):
        last = first_heap + len(buffer) - self.plan.window
        if self.plan.encoding.kind == "u8" and first_heap <= heap < last:
            fill(self, buffer[: self.plan.window + heap - first_heap], first_heap, threads, patient)
            raise StorageOverflow(heap, self.plan)
        fill(self, buffer, first_heap, threads, patient)

    return overflowing_fill


def test_runs_with_the_threaded_producer_and_the_last_chunk_split_give_the_digest(monkeypatch):
    """Verifying processes: the producer's thread, the last chunk in one piece per process (the
    tasks cover every heap once), and the same through a switch to 16-bit storage."""
    from octalgen.engine.executors import LocalProcesses

    tasks = []
    submit = LocalProcesses.submit
    monkeypatch.setattr(
        LocalProcesses, "submit", lambda self, fn, *args: tasks.append(args[4:6]) or submit(self, fn, *args)
    )
    until = 41_256 + (1 << 16) + 5 * (1 << 17)  # the kernel's first heap, a first chunk of 2^16, five of 2^17
    truth = fnv1a64(c_values(".6", until))
    assert run_engine(".6", until, workers=2, chunk=1 << 17).statistics.digest == truth
    tasks.sort()
    assert all(b == a_next for (_, b), (a_next, _) in itertools.pairwise(tasks)) and tasks[-1][1] == until
    assert tasks[-2:] == [(until - (1 << 17), until - (1 << 16)), (until - (1 << 16), until)]  # the last in two
    monkeypatch.setattr(SpeculativeKernel, "fill", _overflowing_at(500_000))
    assert run_engine(".6", until, workers=2, chunk=1 << 17).statistics.digest == truth


class _BusyCores(CKernels):
    """The C kernel, as if its threads had kept waiting for each other at every call past ``heap``."""

    def __init__(self, heap):
        super().__init__()
        self.heap = heap

    def __call__(self, plan):
        kernel, verifier = super().__call__(plan)
        return _FallingBack(kernel, self.heap), verifier


class _FallingBack:
    def __init__(self, kernel, heap):
        self.kernel, self.heap = kernel, heap
        self.dtype, self.max_threads = kernel.dtype, kernel.max_threads

    def fill(self, buffer, first_heap, threads=1):
        self.kernel.fill(buffer, first_heap, threads)
        return first_heap if first_heap >= self.heap else None


def test_a_kernel_that_falls_back_to_one_thread_is_said_in_the_summary(truth):
    summary = run_engine(".6", UNTIL, workers=0, chunk=SIZE, kernels=_BusyCores(300_000))
    assert summary.statistics.digest == fnv1a64(truth)
    count, first = summary.fallbacks
    assert count >= 1 and 300_000 <= first < 300_000 + SIZE
    assert f"kernel threads fell back to one thread {count} time" in "\n".join(summary.lines())
    assert summary.to_json()["kernel_fallbacks"] == {"count": count, "first_heap": first}
    assert run_engine(".6", 100_000, workers=0, prover=None).fallbacks is None
